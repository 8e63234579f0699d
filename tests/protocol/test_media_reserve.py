"""The media reserve on the wire (golden request tails per wire): with a reserve of two images,
a vision model receives the two newest screenshots as pixels and the oldest as a reference with
the sentence that its pixels are not in view; a model without vision receives references only,
each saying its pixels were not seen. The path is real: Read, the ledger, the context engine and
each adapter against the fake server."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from comal.config import ContextConfig
from comal.context.view.build import IMAGE_TOKENS
from comal.ledger.store import Ledger
from comal.testing.fake_server import FakeServer
from tests.protocol.golden import check_golden
from tests.protocol.wiring import WIRES, look, workspace_config

# Three distinct 1x1 PNGs (grey, black, white).
PNGS = [
    base64.b64decode(b64)
    for b64 in (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==",
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==",
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGP4DwABAQEAWk1v8QAAAABJRU5ErkJggg==",
    )
]
RESERVE_SENTENCE = "the media reserve keeps newer images, so its pixels are not in view"
NO_VISION_SENTENCE = "this model has no vision input, so its pixels were not seen"


async def run(tmp_path: Path, wire: str, *, vision: bool) -> tuple[Any, list[Any]]:
    config = workspace_config(tmp_path, ContextConfig(media_budget_tokens=2 * IMAGE_TOKENS))
    workspace = config.workspace
    turns: list[Any] = []
    for i, png in enumerate(PNGS):
        (workspace / f"shot{i}.png").write_bytes(png)
        call = {"id": f"c{i}", "name": "Read", "arguments": {"path": f"shot{i}.png"}}
        turns.append({"tool_calls": [call]})
    turns.append("Three shots seen.")
    with FakeServer(turns) as server, Ledger.open(tmp_path / "ledger.db") as ledger:
        outcome = await look(server, wire, ledger, config, vision=vision)
        assert outcome.answer == "Three shots seen.", outcome
        projections = [
            e.payload for e in ledger.entries(outcome.session_id) if e.kind == "projection"
        ]
        return server.received[-1].body, projections


def tail(wire: str, body: Any) -> Any:
    """Everything after the user's prompt: the calls, results and images."""
    if wire == "openai-chat":
        return body["messages"][2:]
    if wire == "openai-responses":
        return body["input"][1:]
    return body["messages"][1:]


def stable(value: Any) -> Any:
    """`value` with ledger ids (fresh in every run) numbered in order of appearance."""
    text = json.dumps(value)
    seen: dict[str, str] = {}
    for found in re.findall(r"evt_[0-9a-f]+", text):
        seen.setdefault(found, f"evt_{len(seen) + 1}")
    for old, new in seen.items():
        text = text.replace(old, new)
    return json.loads(text)


async def golden_tail(
    tmp_path: Path, wire: str, *, vision: bool, golden: str
) -> tuple[str, list[Any]]:
    """Run the session; the last request's tail (checked against the golden file `GOLDEN_WIRE`)
    as text, and the projections recorded."""
    body, projections = await run(tmp_path, wire, vision=vision)
    request_tail = tail(wire, body)
    check_golden(f"{golden}_{wire.replace('-', '_')}.json", stable(request_tail))
    return str(request_tail), projections


def b64(png: bytes) -> str:
    return base64.b64encode(png).decode()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_vision_model_sees_the_newest_images_within_the_reserve(
    tmp_path: Path, wire: str
) -> None:
    text, projections = await golden_tail(tmp_path, wire, vision=True, golden="media_reserve")
    assert b64(PNGS[0]) not in text  # the oldest: a reference
    assert b64(PNGS[1]) in text
    assert b64(PNGS[2]) in text
    assert text.count(RESERVE_SENTENCE) == 1
    assert [p["reason"] for p in projections] == ["media_reserve"]
    assert len(projections[0]["media_result_ids"]) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_a_model_without_vision_gets_references_and_the_sentence(
    tmp_path: Path, wire: str
) -> None:
    text, projections = await golden_tail(tmp_path, wire, vision=False, golden="media_no_vision")
    assert not any(b64(png) in text for png in PNGS)
    assert text.count(NO_VISION_SENTENCE) == 3
    assert projections == []  # no pixels in view: the reserve has nothing to do
