"""The offline scripted model behind `comal demo` — clearly a script, not a language model.

It follows a fixed plan for the sample project (plan on the board, look around, read, run the
failing tests, produce a large report, search it through EvidenceRead, fix the bug, re-run,
close through finish_call, which runs the board's checks). Its only "intelligence" is reading
the request it receives: which step it reached, and the exact reference the context engine put
in a large result (its `evt_…` id) or in a checkpoint's work state (its ordinal, `E5`). It
reports no token usage (unknown), so every figure the demo shows is Comal's own estimate,
marked `~`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

from comal.messages import (
    Finish,
    JSONObject,
    JSONValue,
    Message,
    ToolCallPart,
    message_to_json,
)
from comal.providers.base import (
    Capabilities,
    Completed,
    EncodedRequest,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCallDone,
    WireApi,
    encode_request,
)

DEMO_MODEL = "comal-demo-script"
_REF = re.compile(r"\bevt_[0-9a-f]{32}\b|(?<=· )E[1-9][0-9]*\b")
"""An exact reference: a full id (a preview or reference stub), or an ordinal where a
checkpoint's work state ends a line with one (`… → exit 0 · E5`)."""
_STEP = re.compile(r"\bdemo_(\d+)_\d+\b")

FIX_OLD = "    return ordered[middle]\n"
FIX_NEW = (
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[middle - 1] + ordered[middle]) / 2\n"
    "    return ordered[middle]\n"
)


PLAN_IDS = ("bug", "fix", "report")
PLAN: list[JSONValue] = [
    {"id": "bug", "text": "find why the tests fail", "status": "in_progress"},
    {
        "id": "fix",
        "text": "fix the bug; all tests pass",
        "status": "pending",
        "check": "python -m unittest -q",
    },
    {"id": "report", "text": "name the low-stock item from the report", "status": "pending"},
]
FINAL_ANSWER = (
    "Fixed `median` in inventory/stats.py: an even-length list now returns the mean of the two "
    "middle values. All 4 tests pass. The stock report's low-stock item is item-0113."
)


_DONE_IN_CHECKPOINT = (
    # What a checkpoint's work state shows once each step has run
    # (see `context/relief/workstate.py`).
    (0, re.compile(r"^- \[\w+\] bug: ", re.M)),
    (1, re.compile(r"^- inventory/stats\.py: read ", re.M)),
    (2, re.compile(r"^- \$ python -m unittest -v 2>&1 → exit 1 ", re.M)),
    (3, re.compile(r"^- \$ python tools/report\.py → exit 0 · (E[1-9][0-9]*)$", re.M)),
    (5, re.compile(r"^- inventory/stats\.py: edited ", re.M)),
    (6, re.compile(r"^- \$ python -m unittest -v 2>&1 → exit 0 ", re.M)),
)


def _next_step(messages: tuple[Message, ...]) -> tuple[int, str]:
    """The plan step to play next, and the text where the report's reference may be found.

    The step is one past the highest step the request shows done: a `demo_<step>_…` call id in
    the conversation, or, once a checkpoint replaced those turns, the step's trace in the
    checkpoint's work state (board, files, recent commands). The plan thus survives the context
    engine's projections and checkpoints only through what they actually keep, exactly as a
    real model's memory would have to.
    """
    seen = -1
    latest = ""
    for message in messages:
        texts = [message.text, *(r.content for r in message.tool_results)]
        texts.extend(call.call_id for call in message.tool_calls)
        for text in texts:
            for match in _STEP.finditer(text):
                seen = max(seen, int(match.group(1)))
            for step, pattern in _DONE_IN_CHECKPOINT:
                found = pattern.search(text)
                if found is not None and step >= seen:
                    seen = step
                    latest = found.group(0)
        if message.tool_results:
            latest = "\n".join(r.content for r in message.tool_results)
    return seen + 1, latest


def _call(step: int, index: int, name: str, arguments: JSONObject) -> ToolCallPart:
    return ToolCallPart(f"demo_{step}_{index}", name, arguments)


class DemoModel:
    """A `Provider` that plays the demo plan against whatever request it receives."""

    name = "demo"
    wire = WireApi.OPENAI_CHAT
    model = DEMO_MODEL

    def __init__(self, context_window: int) -> None:
        self.capabilities = Capabilities(
            context_window=context_window,
            max_output_tokens=4_096,
            window_source="explicit",
            window_note="demo: deliberately small window",
        )

    def encode(self, request: ModelRequest) -> bytes:
        """A stable JSON rendering of the request (the demo has no wire to speak)."""
        body = {
            "model": request.model,
            "system": request.system,
            "messages": [message_to_json(m) for m in request.messages],
            "tools": [t.name for t in request.tools],
            "max_output_tokens": request.max_output_tokens,
        }
        return json.dumps(body, sort_keys=True).encode()

    def _plan(self, request: ModelRequest) -> tuple[str, tuple[ToolCallPart, ...]]:
        step, previous = _next_step(request.messages)
        if step == 0:
            return "I'll plan this as small criteria, then look at the project layout.", (
                _call(step, 0, "Board", {"set": PLAN}),
                _call(step, 1, "Glob", {"pattern": "**/*.py"}),
                _call(step, 2, "Read", {"path": "README.md"}),
            )
        if step == 1:
            return "Reading the statistics module.", (
                _call(step, 0, "Read", {"path": "inventory/stats.py"}),
            )
        if step == 2:
            return "Running the test suite to see what fails.", (
                _call(step, 0, "Bash", {"command": "python -m unittest -v 2>&1"}),
            )
        if step == 3:
            return "The even-length median is wrong. Checking the stock report too.", (
                _call(step, 0, "Bash", {"command": "python tools/report.py"}),
            )
        if step == 4:
            match = _REF.search(previous)
            if match is not None:
                return "The report is large; searching it by reference instead of re-running.", (
                    _call(step, 0, "EvidenceRead", {"ref": match.group(0), "search": "TOTAL"}),
                )
            step = 5
        if step == 5:
            return "Fixing median for even-length lists.", (
                _call(
                    step,
                    0,
                    "Edit",
                    {
                        "path": "inventory/stats.py",
                        "edits": [{"old_string": FIX_OLD, "new_string": FIX_NEW}],
                    },
                ),
            )
        if step == 6:
            return "Re-running the tests.", (
                _call(step, 0, "Bash", {"command": "python -m unittest -v 2>&1"}),
            )
        if step == 7:
            done: list[JSONValue] = [{"id": key, "status": "done"} for key in PLAN_IDS]
            return "All criteria hold; closing the task through finish_call.", (
                _call(step, 0, "Board", {"update": done}),
                _call(step, 1, "finish_call", {"answer": FINAL_ANSWER}),
            )
        return FINAL_ANSWER, ()

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Encode the request and `send` it."""
        return self.send(encode_request(self, request))

    async def send(self, encoded: EncodedRequest) -> AsyncIterator[ProviderEvent]:
        """Yield the next planned step as streamed text plus complete tool calls."""
        text, calls = self._plan(encoded.request)
        for word in re.findall(r"\S+\s*", text):
            yield TextDelta(word)
        for call in calls:
            yield ToolCallDone(call)
        yield Completed(Finish.TOOL_CALLS if calls else Finish.STOP, "scripted")
