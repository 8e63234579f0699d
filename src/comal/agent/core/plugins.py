"""Loading plugins: entry points of the group `comal.plugins`, enabled by configuration.

`load_plugins(config, extra)` loads every enabled plugin (configuration `[plugins] enabled`,
then `--plugin NAME`), each isolated: a plugin that is not installed, raises at import or in
its factory, or contributes a tool whose name is already taken is reported as one
`PluginFailure` and left out; the session goes on without it. `record_plugins` appends, at each
open, the `warning` entries of failures (`PLUGIN_UNAVAILABLE`) and one `session.plugins` entry
whose body holds the offered plugin tool specs, so `comal context` counts them for a recorded
session without loading anything.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from comal.config import Config
from comal.errors import LedgerError
from comal.ledger.records import Kind, SessionPlugins, WarningRecord
from comal.ledger.records import fields as f
from comal.ledger.store import Ledger
from comal.messages import JSONObject, JSONValue, ToolSpec, canonical_json
from comal.tools.base import Tool
from comal.tools.plugin import (
    PLUGIN_GROUP,
    FinishCheck,
    Plugin,
    PluginContext,
    Reconciler,
)

PLUGINS_KIND = Kind.SESSION_PLUGINS
PLUGIN_WARNING = "PLUGIN_UNAVAILABLE"


@dataclass(frozen=True, slots=True)
class PluginFailure:
    """An enabled plugin that could not be loaded, and why (one line, no traceback)."""

    name: str
    message: str


@dataclass(frozen=True, slots=True)
class LoadedPlugins:
    """The plugins a process loaded, and the ones that failed."""

    plugins: tuple[Plugin, ...] = ()
    failures: tuple[PluginFailure, ...] = ()

    @property
    def tools(self) -> list[Tool]:
        """Every plugin tool, in load order."""
        return [tool for plugin in self.plugins for tool in plugin.tools]

    @property
    def checks(self) -> tuple[FinishCheck, ...]:
        """Every plugin finish check, in load order."""
        return tuple(check for plugin in self.plugins for check in plugin.checks)

    def reconciler(self, tool_name: str) -> Reconciler | None:
        """The recovery adapter a plugin declared for `tool_name`, or None."""
        for plugin in self.plugins:
            found = plugin.reconcilers.get(tool_name)
            if found is not None:
                return found
        return None

    def owner(self, tool_name: str) -> str | None:
        """The plugin that contributes `tool_name`, or None."""
        for plugin in self.plugins:
            if any(tool.spec.name == tool_name for tool in plugin.tools):
                return plugin.name
        return None


def installed_plugins() -> dict[str, EntryPoint]:
    """Installed entry points of the `comal.plugins` group, by name (sorted)."""
    found = {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}
    return dict(sorted(found.items()))


def enabled_names(config: Config, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Configured plugins, then those named on the command line, without repeats."""
    return tuple(dict.fromkeys([*config.plugins.enabled, *extra]))


def _load_one(ep: EntryPoint, config: Config) -> Plugin:
    factory = ep.load()
    if not callable(factory):
        raise TypeError(f"entry point {ep.value} is not a plugin factory")
    ctx = PluginContext(
        workspace=config.workspace,
        state_dir=config.home / "plugins" / ep.name,
        settings=dict(config.plugins.settings.get(ep.name, {})),
        env=dict(config.env),
    )
    plugin = factory(ctx)
    if not isinstance(plugin, Plugin):
        raise TypeError(f"entry point {ep.value} returned {type(plugin).__name__}, not a Plugin")
    return plugin


def load_plugins(
    config: Config, extra: Sequence[str] = (), *, taken: Sequence[str] = ()
) -> LoadedPlugins:
    """Load the enabled plugins, each on its own; failures are collected, never raised.

    Args:
        config: the configuration (`[plugins]`).
        extra: plugin names from `--plugin`.
        taken: tool names already offered (a plugin may not shadow them).
    """
    installed = installed_plugins()
    names = set(taken)
    loaded: list[Plugin] = []
    failures: list[PluginFailure] = []
    for name in enabled_names(config, extra):
        ep = installed.get(name)
        if ep is None:
            known = ", ".join(installed) or "none"
            failures.append(PluginFailure(name, f"plugin {name!r} is not installed ({known})"))
            continue
        try:
            plugin = _load_one(ep, config)
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code is reported
            message = f"plugin {name!r} failed to load: {type(exc).__name__}: {exc}"
            failures.append(PluginFailure(name, message))
            continue
        clash = [t.spec.name for t in plugin.tools if t.spec.name in names]
        if clash:
            message = f"plugin {name!r} offers tools already offered: {', '.join(clash)}"
            failures.append(PluginFailure(name, message))
            continue
        names.update(t.spec.name for t in plugin.tools)
        loaded.append(plugin)
    return LoadedPlugins(tuple(loaded), tuple(failures))


def _spec_json(spec: ToolSpec) -> JSONObject:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def record_plugins(ledger: Ledger, session_id: str, plugins: LoadedPlugins) -> None:
    """Append the failures' warnings and the `session.plugins` entry (see module docstring)."""
    for failure in plugins.failures:
        ledger.append_record(session_id, WarningRecord(PLUGIN_WARNING, failure.message))
    specs: list[JSONValue] = [_spec_json(tool.spec) for tool in plugins.tools]
    body = canonical_json(specs).encode("ascii")
    loaded: list[JSONObject] = [
        {
            "name": plugin.name,
            "tools": [str(tool.spec.name) for tool in plugin.tools],
            "recovery": [name for name in sorted(plugin.reconcilers)],
            "checks": [check.name for check in plugin.checks],
            "schema_bytes": sum(
                len(canonical_json(_spec_json(t.spec)).encode("ascii")) for t in plugin.tools
            ),
        }
        for plugin in plugins.plugins
    ]
    failed: tuple[JSONObject, ...] = tuple(
        {"name": x.name, "message": x.message} for x in plugins.failures
    )
    ledger.append_record(session_id, SessionPlugins(tuple(loaded), failed), body=body)


def recorded_plugin_specs(ledger: Ledger, session_id: str) -> tuple[ToolSpec, ...]:
    """The plugin tool specs the session's latest process offered (empty when none).

    Raises:
        LedgerError: the recorded body is missing or malformed.
    """
    entries = ledger.entries(session_id, kinds=(PLUGINS_KIND,))
    if not entries:
        return ()
    latest = entries[-1]
    body = ledger.body(latest)
    try:
        raw = json.loads(body or b"")
    except ValueError as exc:
        raise LedgerError(f"{PLUGINS_KIND} entry {latest.id}: body is not JSON: {exc}") from exc
    specs: list[ToolSpec] = []
    for item in raw if isinstance(raw, list) else []:
        name, description = item.get("name"), item.get("description")
        parameters = item.get("parameters")
        if isinstance(name, str) and isinstance(description, str) and isinstance(parameters, dict):
            specs.append(ToolSpec(name, description, parameters))
        else:
            raise LedgerError(f"{PLUGINS_KIND} entry {latest.id}: malformed tool spec")
    return tuple(specs)


def recorded_plugin_owners(ledger: Ledger, session_id: str) -> tuple[tuple[str, str], ...]:
    """(tool, plugin) of each plugin tool the session's latest process offered."""
    entries = ledger.entries(session_id, kinds=(PLUGINS_KIND,))
    loaded = SessionPlugins.from_entry(entries[-1]).loaded if entries else ()
    owners: list[tuple[str, str]] = []
    for item in loaded:
        name, tools = f.text_or_none(item, "name"), f.strings_or_none(item, "tools")
        if name is not None and tools is not None:
            owners += [(tool, name) for tool in tools]
    return tuple(owners)
