"""`@path` mentions in a user message: the file is read and attached, as Claude Code does.

Invariants:
- Each mention that names an existing file in reach is read through the Read tool itself, so
  the permissions of this process apply and the read is an ordinary receipt (`tool.started` +
  `tool.result`, call id `mention_…`): its exact output is evidence the model can page with
  EvidenceRead. The message then carries the text, tagged with that evidence reference.
- An image (`@shot.png`) is attached as an image part of the message, counted in the media
  budget; a model without vision gets a note saying it did not see the pixels.
- A mention that names no file (`@someone`, an e-mail address) stays plain text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from comal.ids import new_id
from comal.ledger.records import Kind, ToolResult
from comal.messages import MediaPart, Message, Part, TextPart, ToolCallPart, render_output_text

if TYPE_CHECKING:  # the session is only read here: features sit below core/
    from comal.agent.core.session import Session

MENTION = re.compile(r"(?<![\w@/])@((?:[\w.~/+-]|\\ )+)")
MAX_MENTIONS = 10


def mentioned_paths(text: str, workspace: Path) -> list[str]:
    """The `@` mentions of `text` that name existing files (as written), in order, once each."""
    found: list[str] = []
    for match in MENTION.finditer(text):
        raw = match.group(1).rstrip(".,;:)")
        given = raw.replace("\\ ", " ")
        path = Path(given).expanduser()
        path = path if path.is_absolute() else workspace / path
        if path.is_file() and given not in found:
            found.append(given)
    return found[:MAX_MENTIONS]


async def mention_message(session: Session, text: str) -> Message:
    """The user message for `text`, with every mentioned file attached."""
    workspace = session.runner.context.workspace
    paths = mentioned_paths(text, workspace)
    if not paths:
        return Message("user", (TextPart(text),))
    parts: list[Part] = [TextPart(text)]
    vision = session.provider.capabilities.vision
    for given in paths:
        call = ToolCallPart(new_id("mention"), "Read", {"path": given})
        await session.run_call(call)
        results = session.ledger.entries(session.id, kinds=(Kind.TOOL_RESULT,))
        result = next(
            e for e in reversed(results) if ToolResult.from_entry(e).call_id == call.call_id
        )
        body = session.ledger.body(result) or b""
        recorded = ToolResult.from_entry(result)
        media = recorded.media
        if recorded.status != "ok":
            parts.append(TextPart(f"[@{given} could not be attached: {render_output_text(body)}]"))
            continue
        if media:
            for item in media:
                kind, data = str(item.media_type), item.data_b64 or ""
                note = f"[@{given}: image {kind}, evidence {result.id}"
                if vision:
                    parts += [TextPart(note + "]"), MediaPart(kind, data, result.id)]
                else:
                    parts.append(
                        TextPart(note + "; this model does not take images: it did not see it]")
                    )
            continue
        parts.append(
            TextPart(
                f'<file path="{given}" evidence="{result.id}">\n{render_output_text(body)}\n</file>'
            )
        )
    return Message("user", tuple(parts))


def complete_mention(word: str, workspace: Path, limit: int = 200) -> tuple[str, list[str]]:
    """Tab completion of an `@path` word: (the completed word, the candidates).

    The word grows to the longest prefix every candidate shares (a directory gets its `/`), as
    a shell completes; hidden entries are offered only when the typed name starts with a dot.
    """
    typed = word[1:]
    folder_text, _, stem = typed.rpartition("/")
    folder = workspace / folder_text if folder_text else workspace
    if not folder.is_dir():
        return word, []
    names = []
    for entry in sorted(folder.iterdir())[:limit]:
        if entry.name.startswith(stem) and (stem.startswith(".") or not entry.name.startswith(".")):
            names.append(entry.name + ("/" if entry.is_dir() else ""))
    if not names:
        return word, []
    common = names[0]
    for name in names[1:]:
        while not name.startswith(common):
            common = common[:-1]
    prefix = f"{folder_text}/" if folder_text else ""
    return "@" + prefix + common, [prefix + n for n in names]
