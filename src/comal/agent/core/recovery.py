"""Recovery at open: give every dangling call an explicit result before the next model call.

`recover(session)` runs once when a session is resumed, after its lock is held and before the
first model call. It works only from the ledger:

- A `tool.started` with no `tool.result` gets one now:
  - a denied or invalid call (its receipt says it never ran) → `denied` / `error`;
  - Write/Edit with a durable preparation whose fresh read (with the permissions of *this*
    process) has the intended digest → `postcondition_observed`, with
    `observed.postcondition_observed: true`. The text says what the read shows; it never says
    the original handler returned nor who produced the bytes, and nothing is written again;
  - a plugin tool with a recovery adapter (a `Reconciler`) → what the plugin's fresh
    observation shows: `postcondition_observed` (its intent is observed), `repeated` (only
    known reads, made again) or `uncertain` (blocked, saying what it would need);
  - a finish_call whose `session.finished` is recorded after its start (the process stopped
    between the close and the result) → its result now, read from that entry (`ok`);
  - a read-only tool (Read, Grep, Glob, EvidenceRead, Board, finish_call) changed nothing
    outside this session's ledger, and its ledger effects are idempotent, so it is made again
    now with this process's permissions (`repeated`; a finish_call made again runs its checks
    again, and closes the session only if they pass);
  - anything else — a different file, a denied or failed read, a start without preparation, a
    tool without a recovery adapter (Bash, MCP, plugin tools without one, clicks and fills)
    → `uncertain`, with what was observed.
- A call of a tool that runs child sessions (Task, WorkStepRun, WorkDraft) is *rebuilt*: the
  tool finishes it from the ledger — a finished child's exact receipt is read back, never run
  again; an unfinished child resumes by these same rules; a write already recorded or observed
  is not repeated — and its result is recorded as the call's (`rebuilt`).
- A call of a recorded (complete) response that never started had no effect: it runs now,
  through the normal runner, so this process's permissions decide.
- When an entry of the session no longer hashes to its content hash (or an entry names a
  session that is not recorded: a damaged session id), nothing is acted on: every open call
  is recorded `uncertain`, naming the damaged entries, and a LEDGER_DAMAGED notice says so.
  A damaged entry may be what makes a completed call look open (one flipped bit in a call
  id), so neither running, repeating nor observing is trusted then.
- Uncertain calls are never re-run: recovery hands their (tool, arguments) to the runner's
  insistence guard, which asks the user before an identical re-issue (headless: refuses).
- An incomplete response at the tail (`response.discarded`, or a `provider.request` with no
  reply) is not in the conversation at all, so nothing of it runs.
- A finished session settles its started calls the same way (a child-running call is
  settled, not rebuilt), and nothing else runs.
- An answered session with an open board gets one recorded user message saying so, so
  `--resume UUID -p` continues the plan without a new prompt. Recovering never closes a session
  on its own: only a finish_call the model made, whose checks pass, does.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.agent.core.events import Notice, ToolFinished, ToolStarted
from comal.agent.core.session import Session
from comal.agent.core.tool_runner import call_summary, media_json
from comal.agent.core.toolset import CALL_KINDS
from comal.agent.features.state import board_of, recorded_calls
from comal.ledger.entry import Entry
from comal.ledger.records import Kind, SessionFinished, ToolResult, ToolStartedRecord, UserMessage
from comal.messages import (
    JSONObject,
    MediaPart,
    ToolCallPart,
    message_to_json,
    user_text,
)
from comal.session import FINISHED, OpenCall, last_answer, open_calls, pair
from comal.tools.base import Observation, Preparation, Rebuildable
from comal.tools.board import board_is_open, render_board
from comal.tools.finish import FINISH_NAME
from comal.tools.plugin import Reconciler

CONTINUE_PLAN = (
    "[Comal] This session was resumed after it stopped. The board still has open criteria:\n"
    "{board}\n"
    "Continue with the plan: check what is already done before repeating anything, keep the "
    "board up to date, and call finish_call when the checks pass."
)
"""The recorded message that continues an open plan when resuming without a new prompt."""


@dataclass(frozen=True, slots=True)
class RecoveredCall:
    """What recovery did about one call."""

    call_id: str
    name: str
    status: str
    """`postcondition_observed`, `uncertain`, `denied`, `error`, `rebuilt` (from child
    receipts), `closed` (finish_call, from its recorded close), `repeated` (read-only, made
    again) or `ran` (never started)."""
    detail: str


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """The outcome of `recover`."""

    session_id: str
    calls: tuple[RecoveredCall, ...]
    continuation: str
    """`finished` (nothing to do), `pending_calls`, `open_plan`, `awaiting_reply` (the last
    message is the user's or a tool result), or `answered` (nothing left to continue)."""
    held_uncertain: int
    """Uncertain calls the insistence guard now holds."""
    last_answer: str | None

    @property
    def needs_model_call(self) -> bool:
        """True when resuming without a new prompt should call the model."""
        return self.continuation in ("pending_calls", "open_plan", "awaiting_reply")

    def lines(self) -> list[str]:
        """One human line per recovered call."""
        return [f"{c.name} {c.call_id}: {c.status} — {c.detail}" for c in self.calls]


def preparation_of(started: Entry) -> Preparation | None:
    """The durable preparation a `tool.started` receipt holds, if any."""
    return _preparation(started)


def _preparation(started: Entry) -> Preparation | None:
    raw = ToolStartedRecord.from_entry(started).preparation
    if raw is None:
        return None
    intended = raw.digest_intended
    if intended is None:
        return None
    return Preparation(raw.path, raw.abs_path or raw.path, raw.digest_before, intended)


def _record(
    s: Session,
    call: OpenCall,
    status: str,
    text: str,
    observed: JSONObject | None,
    media: tuple[MediaPart, ...] = (),
) -> None:
    body = text.encode("utf-8")
    result = ToolResult.for_output(
        call.call.call_id,
        call.call.name,
        body,
        status=status,
        is_error=status not in ("postcondition_observed", "repeated"),
        media=media_json(media) if media else None,
        observed=observed,
    )
    s.write(result, body)


async def _reconcile(
    s: Session, call: OpenCall, started: Entry, reconciler: Reconciler
) -> RecoveredCall:
    """Settle a plugin call from the plugin's fresh observation (never a re-run)."""
    name, call_id = call.call.name, call.call.call_id
    history = recorded_calls(s.ledger.entries(s.id, kinds=CALL_KINDS))
    try:
        found = await reconciler.reconcile(started.payload, s.runner.context, history)
    except Exception as exc:  # noqa: BLE001 - a plugin's failure must leave the call uncertain
        detail = f"its recovery adapter failed: {type(exc).__name__}: {exc}"
        text = (
            f"uncertain: the {name} call started and left no result, and {detail}. Not run again."
        )
        _record(s, call, "uncertain", text, {"postcondition_observed": False, "detail": detail})
        return RecoveredCall(call_id, name, "uncertain", detail)
    _record(s, call, found.status, found.text, found.observed, found.media)
    detail = found.text.splitlines()[0] if found.text else found.status
    return RecoveredCall(call_id, name, found.status, detail)


def _observed_json(prep: Preparation, seen: Observation) -> JSONObject:
    return {
        "postcondition_observed": seen.matches_intended,
        "path": prep.path,
        "digest_before": prep.digest_before,
        "digest_intended": prep.digest_intended,
        "current_digest": seen.current_digest,
        "readable": seen.readable,
        "detail": seen.detail,
    }


async def _settle_started(s: Session, call: OpenCall, started: Entry) -> RecoveredCall:
    """Record the result of a call that started and left no result."""
    name, call_id = call.call.name, call.call.call_id
    permission = ToolStartedRecord.from_entry(started).permission
    decision = permission.decision
    if decision and decision != "allow":
        reason = permission.reason
        status = "error" if permission.mode == "validation" else "denied"
        text = f"{reason or 'not allowed'} (the call never ran)"
        _record(s, call, status, text, {"postcondition_observed": False, "detail": text})
        return RecoveredCall(call_id, name, status, text)
    reconciler = s.options.plugins.reconciler(name) if s.runner.registry.get(name) else None
    if reconciler is not None:
        return await _reconcile(s, call, started, reconciler)
    closed = _close_after(s, call, started)
    if closed is not None:
        return closed
    receipt = await s.runner.repeat_read(call.call)
    if receipt is not None:
        detail = f"made again (read-only, its first run changed nothing): {receipt.status}"
        return RecoveredCall(call_id, name, "repeated", detail)
    prep = _preparation(started)
    adapter = s.runner.registry.recovery(name)
    if prep is None or adapter is None:
        if adapter is not None:
            why = "it started without a durable preparation"
        elif s.runner.registry.get(name) is None:
            why = f"this process offers no {name} tool (is the plugin that offers it loaded?)"
        else:
            why = f"{name} has no recovery adapter, so its effects cannot be observed"
        detail = f"no result was recorded before the process stopped, and {why}"
        text = (
            f"uncertain: the {name} call started but {detail}. It is not run again. Look at the "
            "current state before deciding what to do; repeating the identical call needs the "
            "user's permission."
        )
        _record(s, call, "uncertain", text, {"postcondition_observed": False, "detail": detail})
        return RecoveredCall(call_id, name, "uncertain", detail)
    seen = adapter.observe(prep, s.runner.context)
    observed = _observed_json(prep, seen)
    if seen.matches_intended:
        text = (
            f"postcondition_observed: true. No result was recorded for this {name} call before "
            f"the process stopped. A fresh read of {prep.path} shows the intended content "
            f"({prep.digest_intended}); nothing was written again."
        )
        _record(s, call, "postcondition_observed", text, observed)
        return RecoveredCall(call_id, name, "postcondition_observed", seen.detail)
    current = seen.current_digest or ("unreadable" if not seen.readable else "absent")
    text = (
        f"uncertain: no result was recorded for this {name} call before the process stopped, "
        f"and a fresh read of {prep.path} does not show the intended content: {seen.detail} "
        f"(now {current}; intended {prep.digest_intended}; before "
        f"{prep.digest_before or 'absent'}). It is not run again; repeating the identical call "
        "needs the user's permission."
    )
    _record(s, call, "uncertain", text, observed)
    return RecoveredCall(call_id, name, "uncertain", seen.detail)


def _close_after(s: Session, call: OpenCall, started: Entry) -> RecoveredCall | None:
    """A finish_call's result from the `session.finished` it recorded before the process
    stopped; None when it is not one or closed nothing."""
    if call.call.name != FINISH_NAME:
        return None
    closes = s.ledger.entries(s.id, after_seq=started.seq, kinds=(SessionFinished.KIND,))
    if not closes:
        return None
    checks = SessionFinished.from_entry(closes[0]).checks
    text = (
        f"The session was closed (its session.finished entry is recorded, {len(checks)} "
        "checks passed) before the process stopped; this result is recorded now from that "
        "entry, and nothing was run again."
    )
    _record(s, call, "ok", text, {"postcondition_observed": True, "detail": text})
    return RecoveredCall(call.call.call_id, call.call.name, "closed", text)


async def settle_started(s: Session, call: ToolCallPart, started: Entry) -> RecoveredCall:
    """Settle a call that started and left no result (see the module docstring)."""
    return await _settle_started(s, OpenCall(call, started), started)


async def _rebuild(s: Session, call: OpenCall, started: Entry) -> RecoveredCall | None:
    """Finish an allowed call of a rebuildable tool from the ledger; None for other calls."""
    # Typed as object: a Tool is not declared to be Rebuildable, only some are.
    tool: object = s.runner.registry.get(call.call.name)
    allowed = ToolStartedRecord.from_entry(started).permission.decision == "allow"
    if not allowed or not isinstance(tool, Rebuildable):
        return None
    part = call.call
    s.emit(ToolStarted(part.call_id, part.name, call_summary(part)))
    outcome = await tool.rebuild(part.arguments, s.runner.context_for(part))
    receipt = s.runner.record_result(part, outcome)
    s.emit(
        ToolFinished(
            receipt.call_id,
            receipt.name,
            receipt.status,
            receipt.exit_code,
            receipt.size_bytes,
            receipt.preview,
        )
    )
    detail = f"rebuilt from the coordinator's facts and the children's receipts: {receipt.status}"
    return RecoveredCall(part.call_id, part.name, "rebuilt", detail)


def _held_for_damage(s: Session, call: OpenCall, doubts: list[tuple[str, str]]) -> RecoveredCall:
    """An open call of a session whose entries do not all verify: recorded uncertain, never
    run, repeated or observed (a damaged entry may be what makes it look open)."""
    name, call_id = call.call.name, call.call.call_id
    damaged = ", ".join(entry_id for entry_id, _ in doubts)
    detail = (
        f"entries of this session do not verify ({damaged}), so the ledger cannot be trusted to "
        "say whether this call already ran"
    )
    text = (
        f"uncertain: {detail}. It is not run again. Look at the current state before deciding "
        "what to do; `comal verify` lists the damaged entries."
    )
    observed: JSONObject = {
        "postcondition_observed": False,
        "detail": detail,
        "damaged": [entry_id for entry_id, _ in doubts],
    }
    _record(s, call, "uncertain", text, observed)
    return RecoveredCall(call_id, name, "uncertain", detail)


def _hold_uncertain(s: Session, entries: list[Entry]) -> int:
    """Hand every still-uncertain (tool, arguments) to the runner's insistence guard."""
    pairing = pair(entries)
    for entry in entries:
        if entry.kind == Kind.TOOL_STARTED:
            started = ToolStartedRecord.from_entry(entry)
            if started.permission.decision == "allow":
                # A later allowed identical call (confirmed by the user) settles the doubt.
                s.runner.release_uncertain(started.name or "", started.arguments)
        elif entry.kind == Kind.TOOL_RESULT:
            result = ToolResult.from_entry(entry)
            if result.status == "uncertain":
                args = pairing.ran_arguments(entry)
                s.runner.hold_uncertain(result.name or "", args, entry.id)
    return s.runner.held_uncertain


def _continuation(entries: list[Entry], ran_calls: bool) -> str:
    if ran_calls:
        return "pending_calls"
    last = next(
        (
            e
            for e in reversed(entries)
            if e.kind
            in (Kind.MESSAGE_USER, Kind.MESSAGE_SUMMARY, Kind.MESSAGE_ASSISTANT, Kind.TOOL_RESULT)
        ),
        None,
    )
    if last is None:
        return "answered"
    if last.kind != Kind.MESSAGE_ASSISTANT:
        return "awaiting_reply"
    return "open_plan" if board_is_open(board_of(entries)) else "answered"


async def recover(s: Session, *, continue_plan: bool = True) -> RecoveryReport:
    """Settle every dangling call of a resumed session and say how to continue.

    Args:
        s: the open, locked session (its runner carries this process's permissions).
        continue_plan: record the "continue the open plan" message when the session was
            answered with criteria still open (False when the user gives a new message).

    Returns:
        What was recovered and whether a model call should follow.
    """
    finished = s.ledger.session(s.id).status == FINISHED
    entries = s.ledger.entries(s.id)
    done: list[RecoveredCall] = []
    ran = False
    doubts = s.ledger.doubts(entries)
    for _, problem in doubts:
        s.emit(Notice("LEDGER_DAMAGED", f"{problem}: no call is run or repeated on resume"))
    for call in open_calls(entries):
        if doubts:
            done.append(_held_for_damage(s, call, doubts))
            continue
        if call.started is not None:
            # A closed session resumes no child: what it left running is settled, no more.
            rebuilt = None if finished else await _rebuild(s, call, call.started)
            done.append(rebuilt or await _settle_started(s, call, call.started))
            continue
        if finished:
            continue  # a closed session runs nothing new
        # Never started: no effect can have happened, so it runs now like any call.
        part = call.call
        receipt = await s.run_call(part)
        done.append(RecoveredCall(part.call_id, part.name, "ran", f"ran now: {receipt.status}"))
        ran = True
    entries = s.ledger.entries(s.id)
    held = _hold_uncertain(s, entries)
    if s.ledger.session(s.id).status == FINISHED:  # closed before, or by a finish made again
        continuation = "finished"
    else:
        continuation = _continuation(entries, ran or any(c.status != "ran" for c in done))
    if continuation == "open_plan" and continue_plan:
        text = CONTINUE_PLAN.format(board=render_board(board_of(entries)))
        s.write(UserMessage(message_to_json(user_text(text))))
    for item in done:
        s.emit(Notice("RECOVERED", f"{item.name} {item.call_id}: {item.status} — {item.detail}"))
    return RecoveryReport(s.id, tuple(done), continuation, held, last_answer(entries))
