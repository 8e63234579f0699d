"""Plugins loaded from real entry points (a dist-info on sys.path): a plugin that raises at
import is reported once and the session goes on; plugin schemas have their own /context row; a
plugin tool without a recovery adapter stays uncertain on resume and is never re-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from comal.agent.core.plugins import PLUGIN_WARNING, load_plugins, recorded_plugin_specs
from comal.agent.core.recovery import recover
from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.agent.turns import run_headless
from comal.cli.cmd_context import recorded_engine
from comal.config import Config, PluginsConfig, ProviderConfig
from comal.ledger.store import Ledger
from comal.providers.factory import make_provider
from comal.testing.fake_server import FakeServer

BAD = "raise RuntimeError('boom at import')\n"

ECHO = textwrap.dedent(
    """
    from pathlib import Path
    from comal.messages import ToolSpec
    from comal.tools.base import NoPreparation, ToolOutcome
    from comal.tools.plugin import Plugin

    RUNS = Path(__file__).with_name("echo-runs.txt")

    class Stamp(NoPreparation):
        spec = ToolSpec("Stamp", "Append a stamp to a file (slowly).", {
            "type": "object", "properties": {"text": {"type": "string"}},
            "required": ["text"], "additionalProperties": False})
        read_only = False

        def target(self, arguments):
            return None

        def paths(self, arguments):
            return ()

        async def run(self, arguments, ctx, preparation):
            with RUNS.open("a") as f:
                f.write(arguments["text"] + "\\n")
            if arguments["text"] == "die":
                raise SystemExit(137)  # the process ends mid-call: no result is recorded
            return ToolOutcome(b"stamped")

    def plugin(ctx):
        return Plugin(name="echo", tools=(Stamp(),))
    """
)


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site-packages"
    info = root / "comal_test_plugins-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: comal-test-plugins\nVersion: 0.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[comal.plugins]\nbad = comal_bad_plugin:plugin\necho = comal_echo_plugin:plugin\n"
    )
    (root / "comal_bad_plugin.py").write_text(BAD)
    (root / "comal_echo_plugin.py").write_text(ECHO)
    monkeypatch.syspath_prepend(str(root))
    # Each test imports the plugin modules afresh from its own directory.
    for name in ("comal_bad_plugin", "comal_echo_plugin"):
        sys.modules.pop(name, None)
    yield root
    for name in ("comal_bad_plugin", "comal_echo_plugin"):
        sys.modules.pop(name, None)


def config_for(tmp_path: Path, *enabled: str) -> Config:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Config(
        home=tmp_path / "home",
        config_dir=tmp_path / "config",
        workspace=workspace,
        env=dict(os.environ),
        plugins=PluginsConfig(tuple(enabled)),
    )


def test_a_plugin_that_raises_at_import_is_reported_and_the_others_load(
    tmp_path: Path, plugin_path: Path
) -> None:
    loaded = load_plugins(config_for(tmp_path, "bad", "echo", "missing"))
    assert [p.name for p in loaded.plugins] == ["echo"]
    messages = {f.name: f.message for f in loaded.failures}
    assert messages["bad"] == "plugin 'bad' failed to load: RuntimeError: boom at import"
    assert "is not installed" in messages["missing"]


def turns(*items: Any) -> list[Any]:
    return list(items)


def stamp(call_id: str, text: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "Stamp", "arguments": {"text": text}}]}


async def test_the_session_goes_on_without_the_failed_plugin(
    tmp_path: Path, plugin_path: Path
) -> None:
    config = config_for(tmp_path, "bad", "echo")
    with (
        FakeServer(turns(stamp("c1", "one"), "stamped once")) as server,
        Ledger.open(tmp_path / "ledger.db") as ledger,
    ):
        cfg = ProviderConfig("fake", "openai-chat", server.openai_base_url, model="fake-model")
        async with httpx2.AsyncClient() as client:
            provider = make_provider(cfg, client=client, api_key="k", context_window_override=None)
            options = SessionOptions(plugins=load_plugins(config))
            outcome = await run_headless(
                ledger, config, provider, standard_tools(), options, prompt="stamp"
            )
        entries = ledger.entries(outcome.session_id)
        warnings = [e.payload for e in entries if e.kind == "warning"]
        assert warnings == [
            {
                "code": PLUGIN_WARNING,
                "message": "plugin 'bad' failed to load: RuntimeError: boom at import",
            }
        ]
        assert outcome.answer == "stamped once"
        sent: Any = server.received[0].body
        assert "Stamp" in [t["function"]["name"] for t in sent["tools"]]
        # The plugin's schemas are their own row in the recorded session's report.
        report = recorded_engine(ledger, outcome.session_id, config).report()
        rows = {r.name: r.tokens for r in report.rows}
        assert rows["Plugin tools"] > 0
        assert report.plugins == (("echo", rows["Plugin tools"]),)
        assert "Plugins loaded: echo (~" in report.render()
        assert [s.name for s in recorded_plugin_specs(ledger, outcome.session_id)] == ["Stamp"]
    assert (plugin_path / "echo-runs.txt").read_text() == "one\n"


async def test_a_plugin_call_without_recovery_adapter_stays_uncertain_and_is_not_rerun(
    tmp_path: Path, plugin_path: Path
) -> None:
    config = config_for(tmp_path, "echo")
    script = turns(stamp("c1", "die"), stamp("c2", "die"), "left as it is")
    with FakeServer(script) as server, Ledger.open(tmp_path / "ledger.db") as ledger:
        cfg = ProviderConfig("fake", "openai-chat", server.openai_base_url, model="fake-model")
        async with httpx2.AsyncClient() as client:
            provider = make_provider(cfg, client=client, api_key="k", context_window_override=None)
            options = SessionOptions(plugins=load_plugins(config))
            with pytest.raises(SystemExit):
                await run_headless(ledger, config, provider, standard_tools(), options, prompt="go")
            sid = ledger.latest_session(str(config.workspace))
            assert sid is not None
            assert [e.kind for e in ledger.entries(sid)][-1] == "tool.started"  # an orphan
            options = SessionOptions(plugins=load_plugins(config))
            session = open_session(
                ledger, config, provider, standard_tools(), options, session_id=sid
            )
            report = await recover(session)
            assert [(c.name, c.status) for c in report.calls] == [("Stamp", "uncertain")]
            assert "Stamp has no recovery adapter" in report.calls[0].detail
            assert report.held_uncertain == 1
            ledger.release_lock(sid)
            # The model asks for the identical call again: headless refuses it.
            outcome = await run_headless(
                ledger, config, provider, standard_tools(), options, prompt=None, session_id=sid
            )
        results = [e.payload for e in ledger.entries(sid) if e.kind == "tool.result"]
    assert [r["status"] for r in results] == ["uncertain", "denied"]
    assert outcome.answer == "left as it is"
    assert (plugin_path / "echo-runs.txt").read_text() == "die\n"  # ran once, never again


def test_comal_plugins_lists_installed_enabled_and_failed(
    tmp_path: Path, plugin_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".comal").mkdir(parents=True)
    (workspace / ".comal" / "config.toml").write_text('[plugins]\nenabled = ["bad"]\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_path), env.get("PYTHONPATH", "")])
    env["COMAL_HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run(
        [sys.executable, "-m", "comal", "plugins", "--plugin", "echo", "--json"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)["plugins"]}
    assert rows["bad"]["enabled"] is True
    assert rows["bad"]["loaded"] is False
    assert rows["bad"]["error"] == "plugin 'bad' failed to load: RuntimeError: boom at import"
    assert rows["echo"]["loaded"] is True
    assert rows["echo"]["tools"] == ["Stamp"]
    assert rows["echo"]["schema_tokens"] > 0
    assert rows["chrome"]["enabled"] is False  # installed with Comal, not enabled here
    assert rows["chrome"]["entry_point"] == "comal.plugins.chrome:plugin"
