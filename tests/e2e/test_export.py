"""`comal export` (md, html, json) and `comal context --timeline`, the HTML checked in Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.browser import ARTIFACTS, console_messages, rendered_dom
from tests.e2e.headless_support import Run, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e


def _ok(run: Run) -> Run:
    assert run.code == 0, run.stderr + run.stdout
    return run


ANSWER = (
    "Done: **all three** calls ran.\n\n| call | result |\n|---|---|\n| `seq` | 4000 lines |\n\n"
    "<script>alert(1)</script> is text, <b onmouseover=alert(2)>so is this</b>,"
    " and [this](javascript:alert(3)) is no link."
)
"""Markdown with raw HTML and an unsafe link: rendered, with the markup escaped."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("export")
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    turns: list[Any] = [
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "Bash",
                    "arguments": {"command": "printf '%s\\n' 'receipt-<b>&-42'"},
                },
                {"id": "c2", "name": "Write", "arguments": {"path": "a.txt", "content": "x\n"}},
                # A long output, so the checkpoint below really shrinks the view.
                {"id": "c3", "name": "Bash", "arguments": {"command": "seq 1 4000"}},
            ],
            "usage": {"input_tokens": 2_000, "cached_tokens": 500, "output_tokens": 40},
        },
        {"text": ANSWER, "usage": {"input_tokens": 2_400}},
    ]
    with FakeServer(turns) as server:
        configure(ws, server, "openai-chat")
        sid = _ok(
            comal("-p", "do it", "--output-format", "stream-json", cwd=ws, env_home=home)
        ).session_id()
    _ok(comal("compact", sid, cwd=ws, env_home=home))
    _ok(comal("rewind", sid, "--to", "1", "--files-only", cwd=ws, env_home=home))
    return ws, home, sid


def test_html_is_self_contained_and_opens_in_chromium_without_console_errors(
    recorded: tuple[Path, Path, str], tmp_path: Path
) -> None:
    ws, home, sid = recorded
    page = tmp_path / "session.html"
    _ok(comal("export", sid, "--format", "html", "-o", str(page), cwd=ws, env_home=home))
    text = page.read_text()
    assert "<details" in text
    # Each call's header names what ran and how it ended; the call id is in its receipt.
    assert (
        "<summary>→ Bash printf &#x27;%s\\n&#x27; &#x27;receipt-&lt;b&gt;&amp;-42&#x27;"
        ' <span class="outcome">· ok · exit 0</span></summary>'
    ) in text
    assert "<summary>→ Write a.txt" in text
    assert "[ok · exit 0 · c1 · " in text
    assert "receipt-&lt;b&gt;&amp;-42\n</pre>" in text  # receipts escaped, never markup
    # The answer is Markdown, rendered; its raw HTML is escaped and the unsafe link not made.
    assert "<p>Done: <strong>all three</strong> calls ran.</p>" in text
    assert "<td><code>seq</code></td>" in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; is text" in text
    assert "&lt;b onmouseover=alert(2)&gt;so is this&lt;/b&gt;" in text
    assert "[this](javascript:alert(3))" in text
    assert "<script>alert" not in text
    assert "◆ checkpoint #1" in text
    assert "◆ rewound to before turn 1 (files)</div>" in text
    assert "conversation: " not in text
    assert '<figure id="timeline"><svg' in text
    # The chart's threshold is the one `comal context` reports.
    report = json.loads(_ok(comal("context", sid, "--json", cwd=ws, env_home=home)).stdout)
    assert f"threshold {report['threshold_tokens']:,}" in text
    assert "<link" not in text
    assert " src=" not in text

    shot = ARTIFACTS / "export-session.png"
    assert console_messages(page, shot) == []
    assert shot.stat().st_size > 10_000
    # As Chromium built the page: the Markdown became elements, the message's markup stayed
    # text (the page's own folding script is its only script element), and no link runs code.
    dom = rendered_dom(page)
    assert dom.count("<script") == 1
    assert "<strong>all three</strong>" in dom
    assert "<table>" in dom
    assert 'href="javascript:' not in dom
    assert "<b onmouseover" not in dom

    # The check can fail: a page whose script throws is reported.
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("document.getElementById('toggle')", "document.nothing()"))
    errors = console_messages(broken, tmp_path / "broken.png")
    assert any("Uncaught TypeError" in line for line in errors)


def test_markdown_and_json(recorded: tuple[Path, Path, str]) -> None:
    ws, home, sid = recorded
    md = _ok(comal("export", sid, "--format", "md", cwd=ws, env_home=home)).stdout
    assert md.startswith(f"# Session {sid}")
    assert " · answered · " in md  # the status people read, not the indexed `active`
    assert "## user" in md
    assert "do it" in md
    assert "**→ Write a.txt** · ok" in md
    assert "> ◆ checkpoint #1" in md
    data = json.loads(_ok(comal("export", sid, "--format", "json", cwd=ws, env_home=home)).stdout)
    with ledger_at(home) as ledger:
        ids = [e.id for e in ledger.entries(sid)]
    assert [e["id"] for e in data["entries"]] == ids
    assert data["session"]["status"] == "active"  # JSON keeps the indexed name
    result = next(e for e in data["entries"] if e["kind"] == "tool.result")
    assert result["body_text"] == "receipt-<b>&-42\n"


def test_the_timeline_as_png_and_svg(recorded: tuple[Path, Path, str], tmp_path: Path) -> None:
    ws, home, sid = recorded
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    _ok(comal("context", sid, "--timeline", str(png), cwd=ws, env_home=home))
    _ok(comal("context", sid, "--timeline", str(svg), cwd=ws, env_home=home))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()
    assert "checkpoint #1" in svg.read_text()
    bad = comal("context", sid, "--timeline", str(tmp_path / "t.gif"), cwd=ws, env_home=home)
    assert bad.code == 2
    assert "png or .svg" in bad.stderr
    assert "Traceback" not in bad.stderr
