"""Aider chat histories (`.aider.chat.history.md`) as Comal sessions.

Aider appends Markdown to one file per repository; every `# aider chat started at …` line
starts a new chat (one session each; chats with no prompt and no reply are left out). Within a
chat, each line is one of:
- `#### text`: the user's prompt (consecutive lines are one prompt); lines answering Aider's own
  confirmation questions (`… (Y)es/(N)o … [Yes]: y`) and in-chat commands that do not talk to
  the model (`/add`, `/run`, … — all but `/ask`, `/code`, `/architect`, `/context`) are
  notices, not prompts;
- `> text`: Aider's own output and notices (banner, `/add` results, lint and test output,
  `Applied edit to …`, `Commit …`, `Running …` and the command's output);
- anything else: the assistant's reply. `<thinking-content-…>` sections are its reasoning.

Tool pairs are recovered where the file shows them, as text actions (the commands are inside
the reply, `plan.TEXT_ACTION_PREFIX`): a reply's SEARCH/REPLACE blocks, and whole-file blocks
for the paths Aider then reports `Applied edit to`, are one `edit` call whose result is the
notices about them; each `Running <command>` notice after a reply is a `shell` call (the reply's
suggested command) whose result is the output that follows it. `Tokens: N sent, M received`
notices give approximate usage (Aider rounds them: `1.9k`).

Not recoverable from the file: the system prompt, the repository map and the file contents
Aider sends with each request, the exact text of the messages Aider adds itself (lint or test
errors sent back, "I added these files"), whether a command's output was sent to the model,
and exact token counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from comal.importers.plan import (
    ParsedSession,
    SessionPlan,
    format_error,
    text_action_id,
)
from comal.messages import JSONObject, JSONValue, Part, ReasoningPart, TextPart, ToolCallPart
from comal.usage import Usage

FORMAT = "aider"
_WIRE = "aider"
CHAT_START = "# aider chat started at "
_CONFIRM = re.compile(r"\? \(Y\)es/\(N\)o.*\]: ?\S*$")
_TOKENS = re.compile(r"Tokens: ([\d.]+)(k?) sent,.*?([\d.]+)(k?) received")
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_RUNNING = re.compile(r"^Running (.+)$")
_THINKING = re.compile(r"<thinking-content-(\w+)>\n?(.*?)\n?</thinking-content-\1>", re.DOTALL)
_FENCE = re.compile(r"^(```|~~~)")
_MODEL_COMMANDS = frozenset({"/ask", "/code", "/architect", "/context"})
"""In-chat commands whose text goes to the model; the others (`/add`, `/run`…) do not."""


@dataclass(slots=True)
class _Block:
    kind: str
    """`prompt`, `notice` or `reply`."""
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def _classify(line: str) -> tuple[str, str]:
    """The kind of one line and its text (Aider ends `>`/`####` lines with two spaces)."""
    if line.startswith("#### ") or line == "####":
        text = line[5:].removesuffix("  ")
        command = text.split(maxsplit=1)[0] if text.startswith("/") else ""
        if _CONFIRM.search(text) or (command and command not in _MODEL_COMMANDS):
            return "notice", text
        return "prompt", text
    if line.startswith("> ") or line == ">":
        return "notice", line[2:].removesuffix("  ")
    return "reply", line


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    for line in lines:
        if not line.strip():
            if blocks and blocks[-1].kind == "reply":
                blocks[-1].lines.append("")
            continue
        kind, text = _classify(line)
        if not blocks or blocks[-1].kind != kind:
            blocks.append(_Block(kind))
        blocks[-1].lines.append(text)
    return blocks


def _tokens(number: str, scale: str) -> int:
    return round(float(number) * (1000 if scale else 1))


def _usage(notice: _Block | None) -> tuple[Usage, JSONValue]:
    if notice is not None:
        for line in notice.lines:
            match = _TOKENS.search(line)
            if match:
                sent = _tokens(match.group(1), match.group(2))
                received = _tokens(match.group(3), match.group(4))
                return Usage(new_input=sent, output=received), {"aider_notice": line}
    return Usage(), None


def _search_replace(text: str) -> list[JSONObject]:
    """The SEARCH/REPLACE blocks of a reply, each with the path written before it."""
    edits: list[JSONObject] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() != "<<<<<<< SEARCH":
            index += 1
            continue
        path = ""
        for back in range(index - 1, -1, -1):
            candidate = lines[back].strip()
            if candidate and not _FENCE.match(candidate):
                path = candidate
                break
        search: list[str] = []
        replace: list[str] = []
        into = search
        index += 1
        while index < len(lines) and lines[index].strip() != ">>>>>>> REPLACE":
            if lines[index].strip() == "=======" and into is search:
                into = replace
            else:
                into.append(lines[index])
            index += 1
        edits.append({"path": path, "search": "\n".join(search), "replace": "\n".join(replace)})
        index += 1
    return edits


def _whole_files(text: str, paths: list[str]) -> list[JSONObject]:
    """Whole-file blocks (`path` line, then a fenced block) for paths Aider says it edited."""
    edits: list[JSONObject] = []
    lines = text.split("\n")
    for number, line in enumerate(lines[:-1]):
        path = line.strip().strip("`*")
        if path not in paths or not _FENCE.match(lines[number + 1].strip()):
            continue
        body: list[str] = []
        for inner in lines[number + 2 :]:
            if _FENCE.match(inner.strip()):
                break
            body.append(inner)
        edits.append({"path": path, "content": "\n".join(body)})
    return edits


def _reply_parts(text: str, model: str) -> list[Part]:
    parts: list[Part] = []
    for match in _THINKING.finditer(text):
        parts.append(ReasoningPart(_WIRE, model, match.group(2)))
    visible = _THINKING.sub("", text).strip("\n")
    if visible:
        parts.append(TextPart(visible))
    return parts


@dataclass(slots=True)
class _Chat:
    path: Path
    started: str
    lines: list[str] = field(default_factory=list)


def _shell_outputs(notice: _Block) -> tuple[list[str], list[tuple[str, str]]]:
    """Notice lines before the first `Running`, and each command with the output after it."""
    before: list[str] = []
    commands: list[tuple[str, list[str]]] = []
    for line in notice.lines:
        match = _RUNNING.match(line)
        if match:
            commands.append((match.group(1), []))
        elif commands:
            commands[-1][1].append(line)
        else:
            before.append(line)
    return before, [(c, "\n".join(out)) for c, out in commands]


def _parse_chat(chat: _Chat, number: int) -> ParsedSession | None:
    plan = SessionPlan(chat.path, _WIRE)
    blocks = _blocks(chat.lines)
    model = ""
    task = ""
    replies = 0
    for index, block in enumerate(blocks):
        if block.kind == "notice":
            for line in block.lines:
                found = _MODEL.match(line)
                if found:
                    model = found.group(1)
            continue
        if block.kind == "prompt":
            task = task or block.text
            plan.user_text(block.text)
            continue
        text = block.text
        if not text.strip():
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        notice = following if following is not None and following.kind == "notice" else None
        usage, usage_raw = _usage(notice)
        parts = _reply_parts(text, model)
        results: list[tuple[str, str]] = []
        if notice is not None:
            before, commands = _shell_outputs(notice)
            applied = [m.group(1) for m in map(_APPLIED.match, before) if m]
            edits = _search_replace(text) + _whole_files(text, applied)
            if edits:
                call_id = text_action_id("aider", index)
                edit_args: JSONObject = {"edits": list[JSONValue](edits)}
                parts.append(ToolCallPart(call_id, "edit", edit_args))
                results.append((call_id, "\n".join(before)))
            for offset, (command, output) in enumerate(commands):
                call_id = text_action_id("aider", index) + f"_{offset}"
                parts.append(ToolCallPart(call_id, "shell", {"command": command}))
                results.append((call_id, output))
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
        plan.assistant(
            tuple(parts),
            model=model,
            finish="tool_calls" if has_calls else "stop",
            usage=usage,
            usage_raw=usage_raw,
        )
        replies += 1
        for call_id, output in results:
            plan.tool_result(call_id, output.encode("utf-8", "surrogateescape"), line=None)
    if not task and not replies:
        return None
    stem = chat.path.name.removesuffix(".md").removesuffix(".aider.chat.history")
    return ParsedSession(
        format=FORMAT,
        path=str(chat.path),
        label=f"{stem}#chat-{number}",
        title=task[:80] or chat.started,
        cwd="",
        model=model,
        system="",
        entries=plan.done(),
        origin_id=chat.started,
    )


def looks_like_aider(head: str) -> bool:
    """Whether the start of a file is an Aider chat history."""
    return any(line.startswith(CHAT_START) for line in head.splitlines()[:50])


def parse(path: Path) -> tuple[ParsedSession, ...]:
    """Parse one `.aider.chat.history.md` into one session per chat that talked to a model.

    Raises:
        ImportFormatError: unreadable, or no `# aider chat started at` line.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    chats: list[_Chat] = []
    for line in text.splitlines():
        if line.startswith(CHAT_START):
            chats.append(_Chat(path, line.removeprefix(CHAT_START).strip()))
        elif chats:
            chats[-1].lines.append(line)
    if not chats:
        raise format_error(path, 1, "not an Aider chat history (no '# aider chat started at')")
    parsed = [_parse_chat(chat, number) for number, chat in enumerate(chats, start=1)]
    sessions = tuple(p for p in parsed if p is not None)
    if not sessions:
        raise format_error(path, None, "no chat in this Aider history has a prompt or a reply")
    return sessions
