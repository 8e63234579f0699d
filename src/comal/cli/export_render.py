"""A session's transcript as Markdown, self-contained HTML or JSON (`comal export`).

The transcript is the session's history (a fork's starts with its parent's): asks, answers,
tool calls with their receipts, and context events (projections, checkpoints, rewinds, peer
summaries) marked as such. The HTML is one file with no outside resource: inline style, the
context timeline as inline SVG, tool calls folded in `<details>` under a header naming what ran
(`Bash pytest -q · ok · exit 0`, the call id inside), and a small script for folding them all
at once. Messages are rendered as Markdown (CommonMark with tables and strikethrough, by
markdown-it-py) with raw HTML turned off: a `<script>` in a message is shown as text, and links
with `javascript:` and other unsafe schemes are not made links.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

from comal.agent.core.tool_runner import call_summary
from comal.ledger.entry import Entry, SessionInfo
from comal.ledger.records import (
    AssistantMessage,
    CheckpointRecord,
    HookRun,
    Kind,
    ProjectionRecord,
    SessionForked,
    SessionRewound,
    SummaryMessage,
    ToolResult,
    UserMessage,
    UserShell,
    record_of,
)
from comal.messages import (
    JSONValue,
    ReasoningPart,
    TextPart,
    message_from_json,
    render_output_text,
)
from comal.session import pair

RESULT_CHARS = 6_000
"""A receipt's text shown in Markdown/HTML (the JSON export has every byte)."""
EVENT_KINDS = (
    Kind.PROJECTION,
    Kind.CHECKPOINT,
    Kind.SESSION_REWOUND,
    Kind.SESSION_FORKED,
    Kind.MESSAGE_SUMMARY,
)


@dataclass(frozen=True, slots=True)
class Item:
    """One row of the transcript."""

    kind: str
    """`user`, `assistant`, `call`, `event` or `note`."""
    title: str
    text: str
    detail: str = ""
    """The receipt of a call."""
    error: bool = False
    outcome: str = ""
    """A call's status as its header shows it (`ok · exit 0`), "" before its result."""


def _short(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    return (
        text[:RESULT_CHARS]
        + f"\n… {len(text) - RESULT_CHARS:,} more characters (comal export --format json)"
    )


def _n(tokens: int | None) -> str:
    return "?" if tokens is None else f"{tokens:,}"


def _event(entry: Entry) -> str:
    """The line of one of `EVENT_KINDS` (anything else reads as a peer's summary)."""
    match record_of(entry):
        case ProjectionRecord(result_ids=ids, before_tokens=before, after_tokens=after):
            return (
                f"projection: {len(ids)} old results become exact references"
                f" (~{_n(before)} → ~{_n(after)} tokens)"
            )
        case CheckpointRecord(number=number, title=title, before_tokens=before, after_tokens=after):
            return f"checkpoint #{number} {title} (~{_n(before)} → ~{_n(after)} tokens)"
        case SessionRewound() as rewound:
            what = [
                name
                for name, done in (
                    ("the conversation", rewound.conversation),
                    ("files", rewound.files_restored),
                )
                if done
            ]
            return f"rewound to {rewound.to}" + (f" ({' and '.join(what)})" if what else "")
        case SessionForked(parent=parent, through_entry=through):
            return f"forked from {parent} after entry {through}"
        case _:
            summary = SummaryMessage.from_entry(entry)
            return f"peer compaction summary ({len(summary.text):,} characters)"


def transcript_items(entries: Sequence[Entry], bodies: dict[str, bytes | None]) -> list[Item]:
    """The rows of a transcript, in order."""
    items: list[Item] = []
    pairing = pair(entries)
    calls: dict[tuple[str, int], int] = {}
    """Item index of each call, by (message entry id, position among its calls)."""
    for entry in entries:
        if entry.kind in (Kind.MESSAGE_USER, Kind.MESSAGE_ASSISTANT):
            reply = (
                AssistantMessage.from_entry(entry) if entry.kind == Kind.MESSAGE_ASSISTANT else None
            )
            raw = UserMessage.from_entry(entry).message if reply is None else reply.message
            if raw is None:
                continue
            message = message_from_json(raw)
            texts = [part.text for part in message.parts if isinstance(part, TextPart)]
            if (
                entry.kind == Kind.MESSAGE_USER
                and any(not isinstance(part, TextPart) for part in message.parts)
                and not texts
            ):
                continue  # tool results travel as user messages; their receipts are shown
            reasoning = sum(1 for part in message.parts if isinstance(part, ReasoningPart))
            title = "user" if reply is None else f"assistant · {reply.model}"
            if reasoning:
                title += f" · {reasoning} reasoning block(s)"
            if texts:
                items.append(Item(entry.kind.split(".")[1], title, "\n".join(texts)))
            for position, part in enumerate(message.tool_calls):
                arguments = json.dumps(part.arguments, ensure_ascii=False, indent=1)
                calls[entry.id, position] = len(items)
                items.append(Item("call", call_summary(part), arguments))
        elif entry.kind == Kind.TOOL_RESULT:
            body = bodies.get(entry.id)
            text = _short(render_output_text(body)) if body is not None else ""
            result = ToolResult.from_entry(entry)
            exit_code = result.exit_code
            head = str(result.status) + ("" if exit_code is None else f" · exit {exit_code}")
            detail = f"[{head} · {result.call_id} · {entry.id}]\n{text}"
            site = pairing.site_of(entry)
            where = (site.message.id, site.position) if site and site.message else None
            index = calls.get(where) if where is not None else None
            if index is not None:
                call = items[index]
                items[index] = Item(call.kind, call.title, call.text, detail, result.is_error, head)
            else:
                name = result.name or "call"
                items.append(Item("call", name, "", detail, result.is_error, head))
        elif entry.kind in EVENT_KINDS:
            items.append(Item("event", entry.kind, _event(entry)))
        elif entry.kind == Kind.USER_SHELL:
            ran = UserShell.from_entry(entry)
            ended = "killed" if ran.exit_code is None else f"exit {ran.exit_code}"
            items.append(Item("note", "shell", f"$ {ran.command} (run by the user) → {ended}"))
        elif entry.kind == Kind.HOOK_RUN:
            hook = HookRun.from_entry(entry)
            items.append(
                Item("note", f"hook {hook.event}", f"{hook.command} → exit {hook.exit_code}")
            )
    return items


def to_markdown(info: SessionInfo, items: Sequence[Item], cost_line: str) -> str:
    """The transcript as Markdown."""
    lines = [
        f"# Session {info.id}",
        "",
        f"{info.cwd} · model {info.model or '-'} · {info.status} · {cost_line}",
        "",
    ]
    fence = "````"
    for item in items:
        if item.kind in ("user", "assistant"):
            lines += [f"## {item.title}", "", item.text, ""]
        elif item.kind == "call":
            outcome = f" · {item.outcome}" if item.outcome else ""
            lines += [f"**→ {item.title}**{outcome}", "", fence + "json", item.text, fence, ""]
            if item.detail:
                lines += [fence, item.detail, fence, ""]
        else:
            lines += [f"> ◆ {item.text}", ""]
    return "\n".join(lines)


_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;
color:#222}
header{border-bottom:1px solid #ccc;margin-bottom:1rem}
.user{background:#eef4fb;border-left:4px solid #4a78b5;padding:.5rem 1rem;margin:1rem 0}
.assistant{background:#f7f7f7;border-left:4px solid #888;padding:.5rem 1rem;margin:1rem 0}
.event{background:#f3eefa;border-left:4px solid #6a4c93;padding:.3rem 1rem;margin:.8rem 0;
font-weight:600}
.note{color:#666;font-size:.9em;margin:.3rem 0}
details{margin:.4rem 0 .4rem 1rem;border:1px solid #ddd;border-radius:4px;padding:.2rem .6rem}
details.error summary{color:#b00020}
summary{cursor:pointer;font-family:ui-monospace,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:#fafafa;padding:.5rem;margin:.3rem 0}
h2{font-size:.85rem;text-transform:uppercase;color:#555;margin:0}
.md pre,.md code{font-family:ui-monospace,monospace;font-size:.9em;background:#eee}
.md pre{padding:.5rem;overflow-x:auto}
.md table{border-collapse:collapse}.md td,.md th{border:1px solid #ccc;padding:.2rem .5rem}
summary .outcome{color:#666}
figure{margin:1rem 0;overflow-x:auto}
figure svg{max-width:100%;height:auto}
"""

_SCRIPT = """
document.getElementById('toggle').addEventListener('click', function () {
  var all = document.querySelectorAll('details');
  var open = Array.prototype.some.call(all, function (d) { return !d.open; });
  all.forEach(function (d) { d.open = open; });
  this.textContent = open ? 'fold every call' : 'unfold every call';
});
"""


@cache
def _markdown() -> MarkdownIt:
    """The parser, built on first use (the CLI starts without it). Raw HTML off: any markup in
    a message is escaped, never passed through."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def render_markdown(text: str) -> str:
    """A message's Markdown as HTML, with every piece of raw HTML in it escaped."""
    rendered: str = _markdown().render(text)
    return rendered


def to_html(info: SessionInfo, items: Sequence[Item], cost_line: str, svg: str | None) -> str:
    """The transcript as one self-contained HTML page."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Comal session {e(info.id)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<header><h1>Session {e(info.id)}</h1>",
        f"<p>{e(info.cwd)} · model {e(info.model or '-')} · {e(info.status)} · {e(cost_line)}</p>",
        '<button id="toggle" type="button">unfold every call</button></header>',
    ]
    if svg:
        parts.append(
            f'<figure id="timeline">{svg}<figcaption>context timeline</figcaption></figure>'
        )
    for item in items:
        if item.kind in ("user", "assistant"):
            parts.append(
                f'<section class="{item.kind}"><h2>{e(item.title)}</h2>'
                f'<div class="md">{render_markdown(item.text)}</div></section>'
            )
        elif item.kind == "call":
            css = ' class="error"' if item.error else ""
            outcome = f' <span class="outcome">· {e(item.outcome)}</span>' if item.outcome else ""
            parts.append(
                f"<details{css}><summary>→ {e(item.title)}{outcome}</summary>"
                f"<pre>{e(item.text)}</pre><pre>{e(item.detail)}</pre></details>"
            )
        else:
            parts.append(f'<div class="{item.kind}">◆ {e(item.text)}</div>')
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"


def to_json(info_json: JSONValue, entries: Sequence[Entry], bodies: dict[str, bytes | None]) -> str:
    """Every entry of the history, with each body as text."""
    return (
        json.dumps(
            {
                "session": info_json,
                "entries": [
                    {
                        "seq": entry.seq,
                        "id": entry.id,
                        "session_id": entry.session_id,
                        "kind": entry.kind,
                        "created_at": entry.created_at,
                        "content_hash": entry.content_hash,
                        "payload": entry.payload,
                        "body_text": None
                        if bodies.get(entry.id) is None
                        else render_output_text(bodies[entry.id] or b""),
                    }
                    for entry in entries
                ],
            },
            ensure_ascii=False,
            indent=2,
        )
        + "\n"
    )
