"""Hooks in the configuration: Comal's `[hooks]` tables and Claude Code's settings files.

Both shapes become `HookConfig` values; a project's `.claude/settings*.json` that is not trusted
(`config_trust`) contributes none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comal.errors import ConfigError

HOOK_EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")
"""The hook events Comal runs, with Claude Code's names and protocol."""


@dataclass(frozen=True, slots=True)
class HookConfig:
    """One hook command: run on `event` for tools whose name the `matcher` regex matches."""

    event: str
    command: str
    matcher: str = ""
    """A regular expression on the tool name (`Bash`, `Edit|Write`); "" or `*` match all."""
    timeout_s: float = 60.0
    source: str = "config.toml"
    """Where it was configured: `config.toml` or the `.claude/settings*.json` path."""


def _hook(event: str, raw: Mapping[str, Any], matcher: str, source: str) -> HookConfig:
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"a {event} hook in {source} needs a command")
    timeout = raw.get("timeout_s", raw.get("timeout", 60))
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"a {event} hook in {source} has a bad timeout {timeout!r}")
    return HookConfig(event, command, matcher, float(timeout), source)


def toml_hooks(raw: Mapping[str, Any]) -> list[HookConfig]:
    """Hooks from `[hooks]` tables (raises ConfigError for a bad one)."""
    found = []
    for event, tables in dict(raw).items():
        if event not in HOOK_EVENTS:
            raise ConfigError(f"hooks.{event}: unknown event; one of {', '.join(HOOK_EVENTS)}")
        for table in tables if isinstance(tables, list) else [tables]:
            if not isinstance(table, Mapping):
                raise ConfigError(f"hooks.{event} must be a list of tables")
            found.append(_hook(event, table, str(table.get("matcher", "")), "config.toml"))
    return found


def claude_hooks(workspace: Path, untrusted: tuple[Path, ...] = ()) -> list[HookConfig]:
    """Hooks from the workspace's Claude Code settings, in Claude Code's own shape."""
    found = []
    for path in (
        workspace / ".claude" / "settings.json",
        workspace / ".claude" / "settings.local.json",
    ):
        if not path.is_file() or path in untrusted:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read hooks from {path}: {exc}") from exc
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else []:
            if event not in HOOK_EVENTS or not isinstance(groups, list):
                continue  # events Comal does not run are left for Claude Code
            for group in groups:
                if not isinstance(group, dict):
                    continue
                for hook in group.get("hooks") or []:
                    if isinstance(hook, dict) and hook.get("type", "command") == "command":
                        found.append(_hook(event, hook, str(group.get("matcher", "")), str(path)))
    return found
