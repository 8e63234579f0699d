"""A small builder of realistic sessions, written straight into a real ledger.

Tests and benchmarks use it to get sessions with user messages, assistant messages with tool
calls, tool results (output bytes as blobs, exactly as the agent records them), provider
requests with usage, and board updates, without running a model:

    sb = SessionBuilder(ledger, model="gpt-4o", window=32_768)
    sb.user("fix the failing test")
    sb.turn("Running the tests.", [("Bash", {"command": "pytest"}, b"1 failed", 1)])
    sb.answer("Done.")

Call ids are deterministic (`call_1`, `call_2`, …) so two builds of the same script give
the same conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    BoardUpdated,
    ProviderRequest,
    Record,
    RecordedPermission,
    RecordedWindow,
    SessionStarted,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
)
from comal.ledger.store import Ledger
from comal.messages import (
    JSONObject,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    digest_bytes,
    message_to_json,
    user_text,
)
from comal.usage import Usage

ToolStep = tuple[str, JSONObject, bytes | str, int | None]
"""(tool name, arguments, output, exit code) of one call in a `turn`."""


class SessionBuilder:
    """Appends entries of one session to a ledger.

    Args:
        ledger: an open ledger.
        model: the session's model.
        window: the window recorded in `session.started`.
        parent_id: make this a child session of `parent_id`.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        model: str = "gpt-4o",
        window: int = 32_768,
        parent_id: str | None = None,
        cwd: str = "/workspace",
    ) -> None:
        self.ledger = ledger
        self.model = model
        self.session_id = ledger.create_session(cwd=cwd, model=model, parent_id=parent_id)
        self._calls = 0
        started = SessionStarted(
            cwd=cwd,
            provider="test",
            wire="openai-chat",
            model=model,
            window=RecordedWindow(window, "test"),
            source="comal",
        )
        ledger.append_record(self.session_id, started)

    @classmethod
    def resume(cls, ledger: Ledger, session_id: str) -> SessionBuilder:
        """A builder appending to a recorded session, as its next run would (call ids go on
        past every id given so far: they start above its entry count)."""
        builder = cls.__new__(cls)
        builder.ledger = ledger
        builder.model = ledger.session(session_id).model
        builder.session_id = session_id
        builder._calls = len(ledger.entries(session_id))
        return builder

    def append(self, kind: str, payload: JSONObject, body: bytes | None = None) -> Entry:
        """Append any entry to the session, as no record would write it (damaged, older or
        newer entries), for the tests of the readers that tolerate them; `write` appends a
        record, as Comal does."""
        return self.ledger.append(self.session_id, kind, payload, body=body)

    def write(self, record: Record, body: bytes | None = None) -> Entry:
        """Append one record to the session."""
        return self.ledger.append_record(self.session_id, record, body=body)

    def user(self, text: str) -> Entry:
        """A `message.user` entry."""
        return self.write(UserMessage(message_to_json(user_text(text))))

    def assistant(
        self,
        text: str = "",
        calls: Sequence[tuple[str, JSONObject]] = (),
        *,
        usage: Usage | None = None,
        request: Entry | None = None,
    ) -> tuple[Entry, list[str]]:
        """A `message.assistant` entry; returns it and the ids given to its calls."""
        parts: list[Part] = [TextPart(text)] if text else []
        ids = []
        for name, arguments in calls:
            self._calls += 1
            ids.append(f"call_{self._calls}")
            parts.append(ToolCallPart(ids[-1], name, arguments))
        reply = AssistantMessage(
            message=message_to_json(Message("assistant", tuple(parts))),
            wire="openai-chat",
            model=self.model,
            finish="tool_calls" if calls else "stop",
            usage=(usage or Usage()).to_json(),
            usage_raw=None,
            request_entry=request.id if request is not None else None,
        )
        return self.write(reply), ids

    def result(
        self,
        call_id: str,
        name: str,
        output: bytes | str,
        *,
        exit_code: int | None = None,
        is_error: bool = False,
        status: str = "ok",
    ) -> Entry:
        """A `tool.result` entry with the output bytes as its body blob."""
        data = output.encode() if isinstance(output, str) else output
        result = ToolResult.for_output(
            call_id,
            name,
            data,
            status="error" if is_error and status == "ok" else status,
            is_error=is_error,
            exit_code=exit_code,
        )
        return self.write(result, body=data)

    def turn(
        self, text: str, steps: Sequence[ToolStep], *, usage: Usage | None = None
    ) -> list[Entry]:
        """An assistant message calling tools, `tool.started` + `tool.result` for each call."""
        _, ids = self.assistant(text, [(n, a) for n, a, _, _ in steps], usage=usage)
        results = []
        for call_id, (name, arguments, output, exit_code) in zip(ids, steps, strict=True):
            allowed = RecordedPermission("allow", "test", "test")
            self.write(ToolStartedRecord(call_id, name, arguments, allowed))
            failed = exit_code not in (None, 0)
            results.append(self.result(call_id, name, output, exit_code=exit_code, is_error=failed))
        return results

    def answer(self, text: str, *, usage: Usage | None = None) -> Entry:
        """A final assistant message without tool calls."""
        return self.assistant(text, usage=usage)[0]

    def request(self, fingerprint: JSONObject, estimated: int, reserve: int = 4_096) -> Entry:
        """A `provider.request` entry (what the agent records before a model call)."""
        return self.write(
            ProviderRequest(
                sha256=digest_bytes(b""),
                size_bytes=0,
                wire="openai-chat",
                model=self.model,
                fingerprint=fingerprint,
                estimated_input_tokens=estimated,
                output_reserve=reserve,
            )
        )

    def board(self, criteria: Sequence[tuple[str, str, str]]) -> Entry:
        """A `board.updated` entry from (id, text, status) triples."""
        items: tuple[JSONObject, ...] = tuple(
            {"id": i, "text": t, "status": s, "check": None} for i, t, s in criteria
        )
        return self.write(BoardUpdated(items))
