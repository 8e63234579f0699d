"""Fixtures for the Pilot tests: a real ledger in a tmp home, a tmp workspace, and a way to
build `ComalApp` over a `ScriptedProvider` with the standard tools."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from textual.pilot import Pilot

from comal.agent.core.toolset import standard_tools
from comal.config import load_config
from comal.errors import ComalError
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.tui.app import ComalApp, SessionStart
from comal.tui.widgets.confirm import ConfirmScreen
from comal.tui.widgets.prompt import PromptArea
from comal.tui.widgets.transcript import ToolItem

Turns = Sequence[ScriptedTurn | ComalError | str]
AppFactory = Callable[..., ComalApp]


@pytest.fixture
def ledger(workspace: Path) -> Iterator[Ledger]:
    with Ledger.open(load_config(cwd=workspace).ledger_path) as opened:
        yield opened


@pytest.fixture
def make_app(workspace: Path, ledger: Ledger) -> AppFactory:
    def build(turns: Turns, session_id: str | None = None) -> ComalApp:
        config = load_config(cwd=workspace)
        start = SessionStart(
            ledger, config, ScriptedProvider(turns), standard_tools(), session_id=session_id
        )
        return ComalApp(start)

    return build


async def send(pilot: Pilot[int], app: ComalApp, text: str) -> None:
    """Type `text` into the prompt as pasted text, then press Enter."""
    app.query_one(PromptArea).insert(text)
    await pilot.press("enter")


async def settle(pilot: Pilot[int], app: ComalApp, timeout_s: float = 10.0) -> None:
    """Wait until no turn runs and the app has processed the end of the last one."""
    waited = 0.0
    while waited < timeout_s:
        await pilot.pause(0.02)
        waited += 0.02
        if app.turn is None:
            await pilot.pause()
            return
    raise AssertionError(f"the turn did not end within {timeout_s}s")


GATE_COMMAND = "while [ ! -f gate ]; do sleep 0.02; done; echo through"
"""A Bash command that blocks until the test creates `gate` in the workspace."""


def gated_call() -> ToolCallPart:
    """A Bash call (`call_1`) running GATE_COMMAND: it stays in flight until `gate` exists."""
    return ToolCallPart("call_1", "Bash", {"command": GATE_COMMAND})


def gated_turns() -> list[ScriptedTurn | str]:
    """A turn held in `gated_call` until the test creates `gate`, then its answer."""
    return [ScriptedTurn(text="Working.", tool_calls=(gated_call(),)), "Finished."]


async def until(pilot: Pilot[int], predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until `predicate()` holds."""
    waited = 0.0
    while not predicate():
        if waited >= timeout_s:
            raise AssertionError(f"condition not reached within {timeout_s}s")
        await pilot.pause(0.02)
        waited += 0.02


def running_tools(app: ComalApp) -> list[ToolItem]:
    """Tool items still waiting for their receipt."""
    return [t for t in app.query(ToolItem) if t.status is None]


def session_id(app: ComalApp) -> str:
    """The id of the app's session (which must have started)."""
    assert app.session is not None
    return app.session.id


async def send_while_running(pilot: Pilot[int], app: ComalApp, prompt: str, then: str) -> None:
    """Send `prompt`, wait until one of its tool calls runs, then send `then` during it."""
    await send(pilot, app, prompt)
    await until(pilot, lambda: bool(running_tools(app)))
    await send(pilot, app, then)


async def command_after_a_turn(pilot: Pilot[int], app: ComalApp, command: str) -> None:
    """Say `hello`, wait for the answer, then give the slash `command`."""
    await send(pilot, app, "hello")
    await settle(pilot, app)
    await send(pilot, app, command)
    await pilot.pause()


async def compact_during_call(pilot: Pilot[int], app: ComalApp) -> str:
    """Start the `gated_turns` work and ask `/compact` while its call runs; the session id."""
    await send_while_running(pilot, app, "do the slow thing", "/compact")
    return session_id(app)


async def permission_prompt(pilot: Pilot[int], app: ComalApp, prompt: str) -> ConfirmScreen:
    """Send `prompt` and wait for the permission prompt it leads to."""
    await send(pilot, app, prompt)
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    return screen


def reading_turns(workspace: Path, count: int = 6, lines: int = 60) -> list[ScriptedTurn]:
    """Model calls that each Read a long file of the workspace, one per call: history that a
    checkpoint replaces, so that `/compact` makes the view smaller (else it is refused)."""
    turns = []
    for i in range(count):
        body = "".join(f"def handler_{i}_{k}(x):\n    return x * {k}\n" for k in range(lines))
        (workspace / f"part{i}.py").write_text(body)
        read = ToolCallPart(f"read_{i}", "Read", {"path": f"part{i}.py"})
        turns.append(ScriptedTurn(text=f"Reading part {i}.", tool_calls=(read,)))
    return turns
