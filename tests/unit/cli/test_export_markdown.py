"""Messages in the HTML export: Markdown rendered, raw HTML escaped, unsafe links not made."""

from __future__ import annotations

from pathlib import Path

from comal.cli.export_render import render_markdown, transcript_items
from comal.ledger.records import UserShell
from comal.ledger.store import Ledger


def test_markdown_is_rendered_and_raw_html_and_unsafe_links_are_not() -> None:
    text = (
        "**Fixed** the <script>x()</script> bug; see [docs](javascript:alert(1)) and"
        " [site](https://example.com).\n\n| a |\n|---|\n| 1 |\n\n<div onclick=go()>block</div>"
    )
    assert render_markdown(text) == (
        "<p><strong>Fixed</strong> the &lt;script&gt;x()&lt;/script&gt; bug; see"
        ' [docs](javascript:alert(1)) and <a href="https://example.com">site</a>.</p>\n'
        "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n"
        "</tr>\n</tbody>\n</table>\n<p>&lt;div onclick=go()&gt;block&lt;/div&gt;</p>\n"
    )


def test_a_command_the_user_ran_is_a_note_of_the_transcript(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as ledger:
        sid = ledger.create_session(cwd=str(tmp_path))
        ledger.append_record(sid, UserShell("make test", 2, False, 120), body=b"FAILED\n")
        ledger.append_record(sid, UserShell("sleep 900", None, True, 0))
        items = transcript_items(ledger.entries(sid), {})
    assert [(i.kind, i.text) for i in items] == [
        ("note", "$ make test (run by the user) → exit 2"),
        ("note", "$ sleep 900 (run by the user) → killed"),
    ]
