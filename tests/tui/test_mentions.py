"""`@file` completion in the prompt: Tab completes a path from the workspace, as a shell does."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.providers.scripted import ScriptedProvider
from comal.tui.widgets.prompt import PromptArea
from tests.tui.conftest import AppFactory, settle

pytestmark = pytest.mark.tui


async def test_tab_completes_a_mention_and_the_file_is_attached(
    make_app: AppFactory, workspace: Path
) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "notes.md").write_text("the port is 8443\n")
    (workspace / "docs" / "news.md").write_text("x\n")
    app = make_app(["ok"])
    async with app.run_test(size=(100, 40)) as pilot:
        prompt = app.query_one(PromptArea)
        prompt.insert("read @do")
        await pilot.press("tab")
        assert prompt.text == "read @docs/"
        prompt.insert("n")
        await pilot.press("tab")
        assert prompt.text == "read @docs/n"  # notes.md and news.md share only "n"
        assert prompt.candidates == ["docs/news.md", "docs/notes.md"]
        prompt.insert("o")
        await pilot.press("tab")
        assert prompt.text == "read @docs/notes.md"
        prompt.clear()
        prompt.insert("read @docs/notes.md")
        await pilot.press("enter")
        await settle(pilot, app)
        provider = app.start.provider
        assert isinstance(provider, ScriptedProvider)
        (request,) = provider.requests
    assert "the port is 8443" in str(request.messages[-1].parts)
