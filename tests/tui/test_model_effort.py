"""`/effort` and `/model` in the TUI: shown, changed from the next call on, and recorded."""

from __future__ import annotations

import dataclasses

import pytest

from comal.providers.base import Provider
from comal.providers.scripted import ScriptedProvider
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import AppFactory, command_after_a_turn, send, settle

pytestmark = pytest.mark.tui


async def test_effort_then_model_apply_to_the_next_call(make_app: AppFactory) -> None:
    app = make_app(["first"])
    other = ScriptedProvider(["second"], model="model-b")

    async def switch(model: str) -> Provider:
        assert model == "model-b"
        return other

    app.start = dataclasses.replace(app.start, switch_model=switch)
    async with app.run_test(size=(100, 40)) as pilot:
        await command_after_a_turn(pilot, app, "/effort high")
        await send(pilot, app, "/model model-b")
        await pilot.pause(0.2)
        await send(pilot, app, "/effort")
        await pilot.pause(0.2)
        await send(pilot, app, "again")
        await settle(pilot, app)
        notices = [n.text for n in app.query(NoticeItem)]
        assert app.session is not None
        configured = app.session.ledger.entries(app.session.id, kinds=("session.configured",))
    assert [(e.payload["model"], e.payload["effort"]) for e in configured] == [
        ("scripted-model", "high"),
        ("model-b", "high"),
    ]
    (request,) = other.requests
    assert request.model == "model-b"
    assert request.reasoning_effort == "high"
    assert "effort: high" in notices


async def test_model_lists_the_servers_models_and_refuses_one_it_does_not_list(
    make_app: AppFactory,
) -> None:
    app = make_app(["first"])
    switched: list[str] = []

    async def switch(model: str) -> Provider:
        switched.append(model)
        return ScriptedProvider(["second"], model=model)

    async def served() -> tuple[str, ...] | None:
        return ("qwen2.5-coder-7b", "llama-3.2-3b")

    app.start = dataclasses.replace(app.start, switch_model=switch, list_models=served)
    async with app.run_test(size=(100, 40)) as pilot:
        await command_after_a_turn(pilot, app, "/model")
        await pilot.pause(0.2)
        await send(pilot, app, "/model qwen2.5-coder-8b")
        await pilot.pause(0.2)
        await send(pilot, app, "/model llama-3.2-3b")
        await pilot.pause(0.2)
        notices = [n.text for n in app.query(NoticeItem)]
    assert (
        "model: scripted-model\nthe server offers: qwen2.5-coder-7b, llama-3.2-3b\n"
        "/model NAME switches from the next call on"
    ) in notices
    assert (
        "✗ the server does not list model 'qwen2.5-coder-8b' (it offers qwen2.5-coder-7b,"
        " llama-3.2-3b); did you mean 'qwen2.5-coder-7b'?"
    ) in notices
    assert switched == ["llama-3.2-3b"]
