"""The media reserve in the context engine: images in view fit a budget of their own (newest
first), and under pressure old images become references before any other relief."""

from __future__ import annotations

import base64

from comal.context.view.build import IMAGE_TOKENS
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.messages import JSONObject, MediaPart, ToolResultPart, digest_bytes
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import make_engine

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=="
)


def screenshot(builder: SessionBuilder, i: int) -> Entry:
    """One call returning a screenshot, recorded the way the runner records media."""
    _, ids = builder.assistant("", [("ChromeRecover", {"reads": ["screenshot"]})])
    text = f"screenshot {i}".encode()
    payload: JSONObject = {
        "call_id": ids[0],
        "name": "ChromeRecover",
        "status": "ok",
        "is_error": False,
        "exit_code": None,
        "size_bytes": len(text),
        "digest": digest_bytes(text),
        "media": [
            {
                "media_type": "image/png",
                "data_b64": base64.b64encode(PNG).decode(),
                "size_bytes": len(PNG),
                "digest": digest_bytes(PNG),
            }
        ],
    }
    return builder.append("tool.result", payload, body=text)


def images_in(messages: object) -> list[MediaPart]:
    return [
        m
        for message in messages  # type: ignore[attr-defined]
        for part in message.parts
        if isinstance(part, ToolResultPart)
        for m in part.media
    ]


def projections(ledger: Ledger, session_id: str) -> list[Entry]:
    return ledger.entries(session_id, kinds=("projection",))


def test_images_past_the_reserve_become_references_oldest_first(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("look at the page")
    shots = [screenshot(builder, i) for i in range(3)]
    engine = make_engine(
        ledger, builder.session_id, vision=True, media_budget_tokens=2 * IMAGE_TOKENS
    )

    view = engine.prepare()

    assert view.actions == ("media_reserve",)
    (entry,) = projections(ledger, builder.session_id)
    assert entry.payload["media_result_ids"] == [shots[0].id]
    assert entry.payload["result_ids"] == []  # the result's text stays as it was
    assert [m.ref for m in images_in(view.messages)] == [shots[1].id, shots[2].id]
    report = engine.report()
    assert report.media_budget_tokens == 2 * IMAGE_TOKENS
    assert report.media_by_reference == 1
    assert "Media reserve: " in report.render()
    # The decision is recorded: the next prepare keeps the same view and appends nothing.
    assert engine.prepare().messages == view.messages
    assert len(projections(ledger, builder.session_id)) == 1


def test_under_pressure_old_images_become_references_first(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("look at the page")
    shots = [screenshot(builder, i) for i in range(7)]
    # A reserve larger than the window: only pressure can move the images.
    engine = make_engine(ledger, builder.session_id, vision=True, media_budget_tokens=100_000)
    before = engine.view()
    assert before.estimated_tokens > before.threshold_tokens

    view = engine.prepare()

    assert view.actions == ("media_pressure",)
    assert ledger.entries(builder.session_id, kinds=("checkpoint",)) == []
    (entry,) = projections(ledger, builder.session_id)
    assert entry.payload["media_result_ids"] == [s.id for s in shots[:-1]]
    assert [m.ref for m in images_in(view.messages)] == [shots[-1].id]
    assert view.estimated_tokens < view.threshold_tokens


def test_a_model_without_vision_has_nothing_in_the_reserve(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("look at the page")
    for i in range(3):
        screenshot(builder, i)
    engine = make_engine(ledger, builder.session_id, vision=False, media_budget_tokens=0)

    view = engine.prepare()

    assert view.actions == ()
    assert images_in(view.messages) == []
    text = str(view.messages)
    assert text.count("this model has no vision input, so its pixels were not seen") == 3
