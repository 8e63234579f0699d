"""Custom commands, /init and /clear in the TUI."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.providers.scripted import ScriptedProvider
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import AppFactory, send, settle

pytestmark = pytest.mark.tui


async def test_a_custom_command_sends_its_prompt_with_the_arguments(
    make_app: AppFactory, workspace: Path
) -> None:
    folder = workspace / ".comal" / "commands"
    folder.mkdir(parents=True)
    (folder / "fix-issue.md").write_text("---\ndescription: fix\n---\nFix issue #$ARGUMENTS.\n")
    app = make_app(["On it.", "Second."])
    async with app.run_test(size=(100, 40)) as pilot:
        await send(pilot, app, "/fix-issue 123")
        await settle(pilot, app)
        provider = app.start.provider
        assert isinstance(provider, ScriptedProvider)
        (request,) = provider.requests
        assert request.messages[-1].text == "Fix issue #123."

        await send(pilot, app, "/init")
        await pilot.pause()
        assert (workspace / "AGENTS.md").read_text().startswith(f"# {workspace.name}")

        first = app.session
        assert first is not None
        await send(pilot, app, "/clear")
        await pilot.pause()
        cleared = app.session
        assert cleared is None
        assert first.ledger.lock_holder(first.id) is None
        await send(pilot, app, "hello again")
        await settle(pilot, app)
        assert app.session is not None
        assert app.session.id != first.id
        notices = [n.text for n in app.query(NoticeItem)]
    assert not any(n.startswith("✗") for n in notices)
