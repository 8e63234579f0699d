"""The measured anchor holds only while the request conditions do: each case the spec names
(model, effort, tool catalog, configuration, checkpoint) invalidates it, on a real session."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from comal.agent.core.session import Session, SessionOptions, open_session, reconfigure
from comal.agent.core.toolset import standard_tools
from comal.agent.turns import run_session
from comal.config import Config, load_config
from comal.ledger.store import Ledger
from comal.messages import ReasoningPart
from comal.providers import openai_chat
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.usage import Usage

MEASURED = Usage(new_input=900, cache_read=100, output=20)


def _config(tmp_path: Path) -> Config:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {"COMAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return load_config(env=env, cwd=ws)


def _turns(n: int) -> list[ScriptedTurn]:
    return [
        ScriptedTurn(text=f"answer {i}", reasoning=f"private plan {i}", usage=MEASURED)
        for i in range(n)
    ]


def _measured(session: Session) -> bool:
    return session.engine.report().used_measured


async def _session(
    tmp_path: Path, ledger: Ledger, config: Config, **options: object
) -> tuple[Session, ScriptedProvider]:
    provider = ScriptedProvider(_turns(4), model="model-a")
    session = open_session(ledger, config, provider, standard_tools(), SessionOptions(**options))  # type: ignore[arg-type]
    await run_session(session, "hello")
    assert _measured(session)
    return session, provider


async def test_effort_and_model_changes_invalidate_and_the_same_conditions_restore(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    with Ledger.open(config.ledger_path) as ledger:
        session, _provider = await _session(tmp_path, ledger, config)

        reconfigure(session, config, effort="high", keep_effort=False)
        assert not _measured(session)
        reconfigure(session, config, effort=None, keep_effort=False)
        assert _measured(session)  # the recorded request was made under these conditions

        other = ScriptedProvider(_turns(2), model="model-b")
        entry = reconfigure(session, config, provider=other)
        assert entry.kind == "session.configured"
        assert entry.payload["model"] == "model-b"
        assert not _measured(session)

        await run_session(session, "and now?")
        (request,) = other.requests
        assert request.model == "model-b"
        # The first model's reasoning stays in the view but never reaches the other model.
        assert any(isinstance(p, ReasoningPart) for m in request.messages for p in m.parts)
        assert "private plan 0" not in json.dumps(openai_chat.encode_request(request))
        assert _measured(session)  # measured again, under model-b


async def test_a_checkpoint_invalidates(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with Ledger.open(config.ledger_path) as ledger:
        session, _ = await _session(tmp_path, ledger, config)
        # A short session: a person's /compact would be refused as not smaller, so the
        # checkpoint is the one a provider's context-length refusal derives.
        session.engine.compact(by="context_window_exceeded")
        assert not _measured(session)


async def test_another_tool_catalog_or_configuration_invalidates(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with Ledger.open(config.ledger_path) as ledger:
        session, provider = await _session(tmp_path, ledger, config)
        ledger.release_lock(session.id)

        fewer = [t for t in standard_tools() if t.spec.name != "Grep"]
        same = open_session(
            ledger, config, provider, standard_tools(), SessionOptions(), session_id=session.id
        )
        assert _measured(same)
        catalog = open_session(
            ledger, config, provider, fewer, SessionOptions(), session_id=session.id
        )
        assert not _measured(catalog)

        stricter = dataclasses.replace(
            config, context=dataclasses.replace(config.context, threshold_ratio=0.5)
        )
        configured = open_session(
            ledger, stricter, provider, standard_tools(), SessionOptions(), session_id=session.id
        )
        assert not _measured(configured)
