"""Claude Code transcripts (`~/.claude/projects/<proj>/<uuid>.jsonl`) as Comal sessions.

One JSON record per line: `user`, `assistant`, `system` and `summary`. Mapping:
- one API response is split over several `assistant` records sharing `message.id`; they are
  grouped back into one `message.assistant` (text, thinking, tool_use blocks in order), with the
  usage of the group's last record;
- `tool_result` blocks become `tool.result` entries with the exact text as body; image blocks
  become media (of the user message, or of the result they belong to); text typed while a
  response's parallel calls run is recorded (2.x) with the first result, before the others:
  it becomes the user message after the last of them, as the model received it;
- a line holding two records (`{…}{…}`, a lost newline) is read as both, in order;
- `isSidechain` records (1.x Task sub-agents) form separate conversations, one child session
  per chain root (`parentUuid` null), linked to the `Task` call whose prompt is the chain's
  first ask, verbatim;
- `isCompactSummary` user records (the peer's auto-compaction) and `summary` records (its
  session titles) are kept as `message.summary`; `system` notices become `warning` entries.

Claude Code 2.x adds bookkeeping records (`file-history-snapshot`, often the first line,
`progress`, `queue-operation`): they are not conversation and are skipped (they never split a
response). Its sub-agents live beside the transcript, in `<session>/subagents/agent-<id>.jsonl`:
each becomes a child session linked to the parent's `Task` call whose result names it
(`agentId: <id>`), or whose `agent_progress` records carry it (`data.agentId`, with the call as
`parentToolUseID`: the link when the file ends before the result). `agent-acompact-*` files are
Claude Code's own compaction calls: children too, marked `compaction` (the replay leaves them
out, as it leaves out the peer's summaries).

A transcript that ends while a sub-agent runs (the peer stopped mid-`Task`) leaves that call
open with its `tool.started` receipt, as a Comal coordinator stopped mid-call does, instead of
closing it as `uncertain`: the sub-agent's own transcript, imported as the child, is the record
of its work, so resuming rebuilds the call from the child — an answered child's receipt is read
from its answer, an unfinished child resumes like any session — and never runs it again.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

from comal.importers.plan import (
    ParsedSession,
    SessionPlan,
    as_json,
    format_error,
    read_jsonl,
    recorded_ms,
    usage_anthropic,
)
from comal.messages import (
    JSONObject,
    MediaPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)

FORMAT = "claude-code"
_WIRE = "anthropic-messages"
_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
_TITLE_CHARS = 80
_CONVERSATION = frozenset({"user", "assistant", "system", "summary"})
"""Record types that belong to the conversation; others (2.x bookkeeping) are skipped."""
_AGENT_ID = re.compile(r"agentId: ([A-Za-z0-9_-]+)")
_DELEGATION = "Task"
"""The peer's sub-agent tool: its `prompt` is the sub-agent's first ask."""
_COMPACTION_AGENT = "acompact-"


def _media(block: dict[str, Any], path: Path, line: int) -> MediaPart:
    source = block.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("data"), str):
        raise format_error(path, line, "image block without base64 source data")
    data = source["data"]
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise format_error(path, line, "image block with invalid base64 data") from exc
    return MediaPart(str(source.get("media_type") or "application/octet-stream"), data)


def _result_content(content: object, path: Path, line: int) -> tuple[str, tuple[MediaPart, ...]]:
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise format_error(path, line, "tool_result content must be a string or a list")
    texts: list[str] = []
    media: list[MediaPart] = []
    for block in content:
        if not isinstance(block, dict):
            raise format_error(path, line, "tool_result content block must be an object")
        if block.get("type") == "image":
            media.append(_media(block, path, line))
        else:
            texts.append(str(block.get("text", "")))
    return "\n".join(texts), tuple(media)


class _Conversation:
    """Feeds one chain of records into a `SessionPlan`, grouping responses by `message.id`."""

    def __init__(self, path: Path) -> None:
        self.plan = SessionPlan(path, _WIRE)
        self.path = path
        self.model = ""
        self.first_text = ""
        self.agent_calls: dict[str, str] = {}
        """Sub-agent id → the call whose result names it (`agentId: …`)."""
        self.task_prompts: list[tuple[str, str]] = []
        """(call id, prompt) of every `Task` call, in order."""
        self._group: list[tuple[int, dict[str, Any]]] = []
        self._held: list[tuple[int, dict[str, Any]]] = []
        """Results (and notices) recorded between the blocks of the open response."""
        self._typed: list[Part] = []
        """What the person typed while the last response's calls still ran (`_user`)."""
        self._answered_before = False
        """Whether a response of this file has been read: before one, a result answers a call
        made in the earlier session this file continues (`_user`)."""

    def _deliver_typed(self) -> None:
        """The text typed while calls ran, as the user message that follows their results."""
        typed, self._typed = tuple(self._typed), []
        self.plan.user(typed)

    def _flush(self) -> None:
        if not self._group:
            return
        self._deliver_typed()
        parts: list[Part] = []
        last = self._group[-1][1]["message"]
        model = str(last.get("model") or "")
        for line, record in self._group:
            for block in record["message"].get("content") or []:
                if not isinstance(block, dict):
                    raise format_error(self.path, line, "content block must be an object")
                parts.extend(self._assistant_part(block, model, line))
        # The response is recorded when its last block is.
        stamps = [t for _, r in self._group if (t := recorded_ms(r.get("timestamp"))) is not None]
        self.plan.at_ms = max(stamps, default=None)
        self._group = []
        held, self._held = self._held, []
        self.model = self.model or model
        calls = any(isinstance(p, ToolCallPart) for p in parts)
        raw_stop = last.get("stop_reason")
        finish = _FINISH.get(str(raw_stop), "tool_calls" if calls else "stop")
        usage_raw = last.get("usage")
        self.plan.assistant(
            tuple(parts),
            model=model,
            finish=finish,
            usage=usage_anthropic(usage_raw),
            usage_raw=as_json(usage_raw) if usage_raw is not None else None,
        )
        self._answered_before = True
        for line, record in held:
            self._record(line, record)

    def _holds(self, record: dict[str, Any]) -> bool:
        """Whether a record can wait for the open response's remaining blocks.

        Claude Code 2.x runs a response's tool calls as they stream: a call's result (and hook
        notices) can be recorded before the response's next block. Such records are held and
        written after the whole response, so the response stays one message.
        """
        if not self._group:
            return False
        if record.get("type") == "system":
            return True
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if record.get("type") != "user" or not isinstance(content, list) or not content:
            return False
        return all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)

    def _assistant_part(self, block: dict[str, Any], model: str, line: int) -> list[Part]:
        kind = block.get("type")
        if kind == "text":
            return [TextPart(str(block.get("text", "")))]
        if kind == "thinking":
            return [
                ReasoningPart(
                    _WIRE, model, str(block.get("thinking", "")), signature=block.get("signature")
                )
            ]
        if kind == "redacted_thinking":
            return [ReasoningPart(_WIRE, model, redacted_data=str(block.get("data", "")))]
        if kind in ("tool_use", "server_tool_use"):
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise format_error(self.path, line, "tool_use block without id or name")
            arguments = block.get("input")
            args: JSONObject = arguments if isinstance(arguments, dict) else {}
            prompt = args.get("prompt")
            if name == _DELEGATION and isinstance(prompt, str):
                self.task_prompts.append((call_id, prompt))
            return [ToolCallPart(call_id, name, args)]
        return []

    def feed(self, line: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind not in _CONVERSATION:
            return
        message = record.get("message")
        if kind == "assistant":
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                raise format_error(self.path, line, "assistant record without message.id")
            if self._group and self._group[-1][1]["message"]["id"] != message["id"]:
                self._flush()
            self._group.append((line, record))
            return
        if self._holds(record):
            self._held.append((line, record))
            return
        self._flush()
        self._record(line, record)

    def _record(self, line: int, record: dict[str, Any]) -> None:
        self.plan.at_ms = recorded_ms(record.get("timestamp"))
        kind = record.get("type")
        message = record.get("message")
        if kind != "system" and not _only_results(message):
            self._deliver_typed()
        if kind == "summary":
            self.plan.summary(str(record.get("summary", "")), "claude-code:summary")
        elif kind == "system":
            self.plan.warning("IMPORTED_NOTICE", str(record.get("content", "")))
        elif kind == "user":
            if not isinstance(message, dict):
                raise format_error(self.path, line, "user record without message")
            self._user(line, record, message.get("content"))

    def _user(self, line: int, record: dict[str, Any], content: object) -> None:
        if record.get("isCompactSummary"):
            text = content if isinstance(content, str) else json.dumps(content)
            self.plan.summary(text, "claude-code:compact")
            return
        if isinstance(content, str):
            self.first_text = self.first_text or content
            self.plan.user_text(content)
            return
        if not isinstance(content, list):
            raise format_error(self.path, line, "user content must be a string or a list")
        parts: list[Part] = []
        for block in content:
            if not isinstance(block, dict):
                raise format_error(self.path, line, "content block must be an object")
            if block.get("type") == "tool_result":
                text, media = _result_content(block.get("content"), self.path, line)
                call_id = str(block.get("tool_use_id"))
                if not self._answered_before and not self.plan.has_pending(call_id):
                    # A file that continues an earlier session can open with the result of a
                    # call that session made: the call is not here, so its result is what the
                    # person's turn said, kept as text.
                    parts.append(
                        TextPart(f"[result of {call_id}, a call made before this file]\n{text}")
                    )
                    continue
                for agent in _AGENT_ID.findall(text):
                    self.agent_calls.setdefault(agent, str(block.get("tool_use_id")))
                self.plan.tool_result(
                    call_id,
                    text.encode("utf-8", "surrogateescape"),
                    line=line,
                    is_error=bool(block.get("is_error")),
                    media=media,
                )
            elif block.get("type") == "image":
                parts.append(_media(block, self.path, line))
            elif block.get("type") == "text":
                parts.append(TextPart(str(block.get("text", ""))))
        if parts:
            self.first_text = self.first_text or "".join(
                p.text for p in parts if isinstance(p, TextPart)
            )
            # Claude Code 2.x records a message typed while parallel calls run with the first
            # result, before the others: it reaches the model after all of them, so it waits
            # for them here (a user message now would close the calls still running).
            self._typed.extend(parts)
        if not self.plan.unanswered():
            self._deliver_typed()

    def finish(self) -> None:
        self._flush()
        self._deliver_typed()


def _only_results(message: object) -> bool:
    """Whether a record's message holds tool results and nothing else."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not content:
        return False
    return all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _root(record: dict[str, Any], by_uuid: dict[str, dict[str, Any]]) -> str:
    seen: set[str] = set()
    node = record
    while True:
        parent = node.get("parentUuid")
        if not isinstance(parent, str) or parent not in by_uuid or parent in seen:
            return str(node.get("uuid", ""))
        seen.add(parent)
        node = by_uuid[parent]


def subagent_files(path: Path) -> list[Path]:
    """The 2.x sub-agent transcripts of the session in `path` (`<stem>/subagents/agent-*.jsonl`)."""
    folder = path.parent / path.stem / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


def parent_session_file(path: Path) -> Path | None:
    """For a 2.x sub-agent transcript beside its parent session's file: that file."""
    if path.parent.name != "subagents" or not path.name.startswith("agent-"):
        return None
    folder = path.parent.parent
    parent = folder.parent / f"{folder.name}.jsonl"
    return parent if parent.is_file() else None


def is_subagent_file(path: Path) -> bool:
    """Whether `path` is a 2.x sub-agent transcript read with its parent session's file."""
    return parent_session_file(path) is not None


def _progress_link(record: dict[str, Any]) -> tuple[str, str] | None:
    """(sub-agent id, parent call id) of an `agent_progress` record, if it is one."""
    data = record.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    agent, call = data.get("agentId"), record.get("parentToolUseID")
    if not isinstance(agent, str) or not isinstance(call, str) or not agent or not call:
        return None
    return agent, call


def _running(main: _Conversation, files: list[Path]) -> dict[str, str]:
    """Calls whose sub-agent transcript is imported as their child, by call id → file name
    (`SessionPlan.done` keeps those still unanswered at the end open)."""
    found = {path.stem.removeprefix("agent-"): path.name for path in files}
    return {
        call: found[agent]
        for agent, call in main.agent_calls.items()
        if agent in found and not agent.startswith(_COMPACTION_AGENT)
    }


def _sidechain_calls(main: _Conversation, chains: list[_Conversation]) -> list[str | None]:
    """For each sidechain (in order), the `Task` call whose prompt is its first ask, verbatim;
    each call links one chain at most (None: no such call)."""
    free = list(main.task_prompts)
    links: list[str | None] = []
    for chain in chains:
        found = next((i for i, (_, prompt) in enumerate(free) if prompt == chain.first_text), None)
        links.append(None if found is None else free.pop(found)[0])
    return links


def _subagent(path: Path, main: _Conversation, cwd: str) -> ParsedSession:
    """One sub-agent file as a child session: the whole file is its conversation."""
    agent = path.stem.removeprefix("agent-")
    chain = _Conversation(path)
    for line, record in read_jsonl(path):
        chain.feed(line, record)
    chain.finish()
    call = main.agent_calls.get(agent)
    compaction = agent.startswith(_COMPACTION_AGENT)
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=f"{path.parent.parent.name}#agent-{agent}",
        title=chain.first_text[:_TITLE_CHARS],
        cwd=cwd,
        model=chain.model,
        system="",
        entries=chain.plan.done(),
        origin_id=agent,
        parent_call_id=call,
        compaction=compaction,
    )


def parse(path: Path) -> ParsedSession:
    """Parse one Claude Code transcript.

    Raises:
        ImportFormatError: a line that is not a JSON object, a record missing required fields,
            or a tool result for an unknown call (names the file and line).
    """
    records = read_jsonl(path)
    for line, record in records:
        if not isinstance(record.get("type"), str):
            raise format_error(path, line, "record without a 'type'")
    by_uuid = {str(r["uuid"]): r for _, r in records if isinstance(r.get("uuid"), str)}
    main = _Conversation(path)
    chains: dict[str, _Conversation] = {}
    titles: list[str] = []
    cwd = ""
    origin = None
    for line, record in records:
        cwd = cwd or str(record.get("cwd") or "")
        origin = origin or record.get("sessionId")
        if record["type"] == "summary":
            titles.append(str(record.get("summary", "")))
        link = _progress_link(record) if not record.get("isSidechain") else None
        if link is not None:
            main.agent_calls.setdefault(*link)
        if record["type"] not in _CONVERSATION:
            continue
        if record.get("isSidechain"):
            root = _root(record, by_uuid)
            chains.setdefault(root, _Conversation(path)).feed(line, record)
        else:
            main.feed(line, record)
    main.finish()
    files = subagent_files(path)
    children = [_subagent(file, main, cwd) for file in files]
    running = _running(main, files)
    sidechains = list(chains.values())
    links = _sidechain_calls(main, sidechains)
    for number, (chain, call) in enumerate(zip(sidechains, links, strict=True), start=1):
        chain.finish()
        label = f"{path.stem}#sidechain-{number}"
        if call is not None:
            running.setdefault(call, f"{path.name} (sidechain {number})")
        children.append(
            ParsedSession(
                format=FORMAT,
                path=str(path),
                label=label,
                title=chain.first_text[:_TITLE_CHARS],
                cwd=cwd,
                model=chain.model,
                system="",
                entries=chain.plan.done(),
                parent_call_id=call,
            )
        )
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=path.stem,
        title=(titles[-1] if titles else main.first_text)[:_TITLE_CHARS],
        cwd=cwd,
        model=main.model,
        system="",
        entries=main.plan.done(running),
        children=tuple(children),
        origin_id=str(origin) if origin else None,
    )
