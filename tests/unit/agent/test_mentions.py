"""`@file` mentions: read through Read (a receipt and an evidence reference), images as media."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.agent.features.mentions import mentioned_paths
from comal.agent.turns import run_session
from comal.config import load_config
from comal.evidence.read import read_evidence
from comal.ledger.store import Ledger
from comal.messages import MediaPart, TextPart
from comal.providers.base import Capabilities
from comal.providers.scripted import ScriptedProvider

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "notes.md").write_text("remember: port 8443\n")
    (ws / "shot.png").write_bytes(PNG)
    return ws


def test_only_existing_files_are_mentions(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    text = "see @docs/notes.md, @shot.png and @nobody; mail a@b.com; @docs/notes.md again"
    assert mentioned_paths(text, ws) == ["docs/notes.md", "shot.png"]


async def _run(tmp_path: Path, vision: bool) -> tuple[ScriptedProvider, Ledger, str]:
    ws = _workspace(tmp_path)
    env = {"COMAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    config = load_config(env=env, cwd=ws)
    caps = Capabilities(45_000, 8_192, "fallback", vision=vision)
    provider = ScriptedProvider(["ok"], capabilities=caps)
    ledger = Ledger.open(config.ledger_path)
    session = open_session(ledger, config, provider, standard_tools(), SessionOptions())
    await run_session(session, "check @docs/notes.md and @shot.png")
    if vision:
        rows = {r.name: r.tokens for r in session.engine.report().rows}
        assert rows["Media"] > 0  # the image counts in the media row of the budget
    return provider, ledger, session.id


async def test_a_text_file_is_attached_with_its_evidence_reference(tmp_path: Path) -> None:
    provider, ledger, sid = await _run(tmp_path, vision=True)
    (request,) = provider.requests
    parts = request.messages[-1].parts
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    assert texts[0] == "check @docs/notes.md and @shot.png"
    attached = next(t for t in texts if t.startswith('<file path="docs/notes.md"'))
    assert "remember: port 8443" in attached
    ref = attached.split('evidence="')[1].split('"')[0]
    page = read_evidence(ledger, sid, ref)
    assert "remember: port 8443" in json.dumps(page.to_json())
    (image,) = [p for p in parts if isinstance(p, MediaPart)]
    assert image.media_type == "image/png"
    assert base64.b64decode(image.data_b64) == PNG
    results = ledger.entries(sid, kinds=("tool.result",))
    assert [r.payload["name"] for r in results] == ["Read", "Read"]
    ledger.close()


async def test_a_model_without_vision_is_told_it_did_not_see_the_image(tmp_path: Path) -> None:
    provider, ledger, _ = await _run(tmp_path, vision=False)
    parts = provider.requests[0].messages[-1].parts
    assert not any(isinstance(p, MediaPart) for p in parts)
    assert any(isinstance(p, TextPart) and "did not see it" in p.text for p in parts)
    ledger.close()
