"""The Chrome plugin: a governed browser task with recovery by observation.

Enabled with `[plugins] enabled = ["chrome"]` or `--plugin chrome`. Settings (`[plugins.chrome]`):

    executable = "/usr/bin/chromium"   # Debian's chromium, driven headless over CDP
    checks = [{ selector = "h1", text = "Hello" }]   # browser checks ChromeFinish runs
    [plugins.chrome.remote]
    command = ["./publish.sh"]         # remote target: prints {url, files, identity}

Tools: ChromePublish (Deploy + Open, intent recorded first), ChromeRecover (known reads),
ChromeAct (clicks and fills; never replayed), ChromeFinish (browser checks, closes the task).
Recovery adapters: ChromePublish (by observation), ChromeRecover (repeat the known reads).
finish_call check: a session that published needs a passing ChromeFinish.
"""

from __future__ import annotations

from comal.errors import ConfigError
from comal.messages import JSONObject, JSONValue
from comal.plugins.chrome._task import TaskStore
from comal.plugins.chrome.publish import ChromePublishTool
from comal.plugins.chrome.reconcile import PublishReconciler, RecoverReconciler
from comal.plugins.chrome.tools import (
    ChromeActTool,
    ChromeFinishTool,
    ChromeRecoverTool,
    GovernedFinish,
)
from comal.tools.plugin import Plugin, PluginContext

DEFAULT_EXECUTABLE = "/usr/bin/chromium"


def _checks(raw: JSONValue) -> list[JSONObject]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise ConfigError("plugins.chrome.checks must be a list of tables")
    return [c for c in raw if isinstance(c, dict)]


def _remote(raw: JSONValue) -> list[str] | None:
    if raw is None:
        return None
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, str):
        return [command]
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return [str(c) for c in command]
    raise ConfigError("plugins.chrome.remote.command must be a command (a list of strings)")


def plugin(ctx: PluginContext) -> Plugin:
    """Build the Chrome plugin for one session."""
    store = TaskStore(ctx.state_dir, ctx.workspace)
    executable = ctx.settings.get("executable", DEFAULT_EXECUTABLE)
    if not isinstance(executable, str):
        raise ConfigError("plugins.chrome.executable must be a path")
    recover = ChromeRecoverTool(store)
    publish = ChromePublishTool(store, executable, _remote(ctx.settings.get("remote")))
    return Plugin(
        name="chrome",
        tools=(
            publish,
            recover,
            ChromeActTool(store),
            ChromeFinishTool(store, _checks(ctx.settings.get("checks"))),
        ),
        reconcilers={
            "ChromePublish": PublishReconciler(store, recover),
            "ChromeRecover": RecoverReconciler(store, recover),
        },
        checks=(GovernedFinish(),),
        description="governed headless Chromium task (publish, recover, finish)",
    )
