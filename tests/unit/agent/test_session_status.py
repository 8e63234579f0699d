"""A session's status is derived from its entries; the row is only an index. With a stale row —
`active` after a `session.finished` whose row update never came, and `active` for a session
whose process died mid-turn and holds no lock — every reader shows the derived status:
`comal sessions`, `comal state` (`/state`), `--continue` and resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from comal.agent.features.state import render_state, session_state
from comal.agent.turns import resume_session, run_session
from comal.cli.main import main
from comal.config import load_config
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart, message_to_json, user_text
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.session import derive, session_status
from tests.unit.agent.session_support import opened

ANSWER = "greeting.txt says hello"


def finished_with_a_stale_row(ledger: Ledger, workspace: Path) -> str:
    """A session closed by finish_call, then the row a SIGKILL right after `session.finished`
    leaves: the entry is there, the row still says `active`."""
    finish = ToolCallPart("c1", "finish_call", {"answer": ANSWER})
    session = opened(ledger, workspace, ScriptedProvider([ScriptedTurn(tool_calls=(finish,))]))
    outcome = asyncio.run(run_session(session, "finish"))
    assert outcome.status == "finished"
    ledger.release_lock(session.id)
    ledger.set_status(session.id, "active")
    return session.id


def crashed_mid_turn(ledger: Ledger, workspace: Path) -> str:
    """A session whose process took it, recorded the user's message and died before the model
    answered: the row says `active` and no live process holds the lock."""
    session = opened(ledger, workspace, ScriptedProvider([]))
    session.ledger.append(
        session.id, "message.user", {"message": message_to_json(user_text("explain the code"))}
    )
    ledger.release_lock(session.id)
    return session.id


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_lifecycle_entries_decide_the_status() -> None:
    with Ledger.open(load_config().ledger_path) as ledger:
        sid = ledger.create_session(cwd="/w", model="m")
        ledger.acquire_lock(sid)
        assert derive(ledger.entries(sid)).status(running=False) == "active"
        ledger.append(sid, "message.user", {"message": message_to_json(user_text("go"))})
        assert derive(ledger.entries(sid)).status(running=True) == "active"
        assert derive(ledger.entries(sid)).status(running=False) == "interrupted"
        ledger.append(sid, "warning", {"code": "NETWORK", "message": "down", "turn": "failed"})
        assert derive(ledger.entries(sid)).status(running=False) == "failed"
        ledger.append(sid, "message.user", {"message": message_to_json(user_text("again"))})
        ledger.append(sid, "session.finished", {"answer": "done", "checks": []})
        assert derive(ledger.entries(sid)).status(running=False) == "finished"
        # A failed follow-up leaves the earlier answer and its status standing.
        ledger.append(sid, "message.user", {"message": message_to_json(user_text("more"))})
        ledger.append(sid, "warning", {"code": "NETWORK", "message": "down", "turn": "failed"})
        assert derive(ledger.entries(sid)).status(running=False) == "finished"
        # A new message reopens it; a warning of another kind does not end the turn.
        ledger.append(sid, "message.user", {"message": message_to_json(user_text("and?"))})
        ledger.append(sid, "warning", {"code": "MCP_NOTICE", "message": "stray output"})
        assert derive(ledger.entries(sid)).status(running=False) == "interrupted"
        ledger.release_lock(sid)
        assert session_status(ledger, sid) == "interrupted"


def test_every_reader_shows_the_derived_status_of_stale_rows(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Ledger.open(load_config().ledger_path) as ledger:
        finished = finished_with_a_stale_row(ledger, workspace)
        crashed = crashed_mid_turn(ledger, workspace)
        rows = {sid: ledger.session(sid).status for sid in (finished, crashed)}
        assert rows == {finished: "active", crashed: "active"}
        assert ledger.lock_holder(finished) is None
        assert ledger.lock_holder(crashed) is None
        # `/state` in the TUI reads the same state `comal state` prints.
        state = session_state(ledger, finished)
        assert state.status == "finished"
        assert state.final_answer == ANSWER
        assert render_state(state).splitlines()[0].endswith("· finished")
        assert session_state(ledger, crashed).status == "interrupted"

    code, out, err = cli(capsys, "sessions", "--json")
    assert code == 0, err
    listed = {row["id"]: row["status"] for row in json.loads(out)}
    assert listed == {finished: "finished", crashed: "interrupted"}
    code, out, err = cli(capsys, "sessions")
    assert code == 0, err
    by_short = {line.split()[0]: line.split()[2] for line in out.splitlines()[1:]}
    with Ledger.open(load_config().ledger_path) as ledger:
        shorts = {ledger.short_id(finished): "finished", ledger.short_id(crashed): "interrupted"}
    assert by_short == shorts
    for sid, status in ((finished, "finished"), (crashed, "interrupted")):
        code, out, err = cli(capsys, "state", sid, "--json")
        assert code == 0, err
        assert json.loads(out)["status"] == status
        code, out, err = cli(capsys, "show", sid)
        assert code == 0, err
        assert out.splitlines()[0].split(" · ")[1] == status
    # Reading changed nothing: the rows are an index, written only by a holder of the session.
    with Ledger.open(load_config().ledger_path) as ledger:
        assert {sid: ledger.session(sid).status for sid in (finished, crashed)} == rows


def test_continue_and_resume_read_the_derived_status(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Ledger.open(load_config().ledger_path) as ledger:
        finished = finished_with_a_stale_row(ledger, workspace)

    # `--continue` without a message: the finished session's answer, no provider needed (none
    # is configured here), and its index follows the entries again.
    code, out, err = cli(capsys, "--continue", "-p", "--output-format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["session_id"], shown["status"], shown["answer"]) == (finished, "finished", ANSWER)

    with Ledger.open(load_config().ledger_path) as ledger:
        assert ledger.session(finished).status == "finished"
        ledger.set_status(finished, "active")  # stale again
        crashed = crashed_mid_turn(ledger, workspace)

        # Resume of the finished one: its answer and no model call (the script has none).
        session = opened(ledger, workspace, ScriptedProvider([]), session_id=finished)
        outcome = asyncio.run(resume_session(session, None))
        assert (outcome.status, outcome.answer) == ("finished", ANSWER)
        assert ledger.session(finished).status == "finished"
        ledger.release_lock(finished)

        # Resume of the crashed one: opened, it is indexed `interrupted`; the unanswered
        # message gets its answer and the session is active again.
        provider = ScriptedProvider(["It adds two numbers."])
        session = opened(ledger, workspace, provider, session_id=crashed)
        assert ledger.session(crashed).status == "interrupted"
        outcome = asyncio.run(resume_session(session, None))
        assert (outcome.status, outcome.answer) == ("answered", "It adds two numbers.")
        assert len(provider.requests) == 1
        ledger.release_lock(crashed)
        assert ledger.session(crashed).status == session_status(ledger, crashed) == "active"
