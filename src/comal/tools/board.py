"""The board: the session's plan as small criteria with statuses, set and updated by the model.

A criterion has an id, a text, a status (`pending`, `in_progress`, `done`, `blocked`) and an
optional `check` command that `finish_call` runs before the session may close. Every change is
appended as one `board.updated` entry holding the whole board, so the board at any point is the
latest such entry — a pure function of the ledger, carried into checkpoints and shown by
`/state`.

Tools may not import the ledger: the board reaches it through a `BoardStore` injected by the
agent. Invariants: ids are unique within a board; a call that would break a rule (unknown id,
bad status, duplicate id) records nothing and returns an error outcome naming the problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from comal.errors import ToolError
from comal.messages import JSONObject, JSONValue, ToolSpec
from comal.tools.base import (
    NoPreparation,
    Preparation,
    ToolContext,
    ToolOutcome,
    error_outcome,
    text_outcome,
)

STATUSES = ("pending", "in_progress", "done", "blocked")
"""The statuses a criterion can have."""

OPEN_STATUSES = frozenset({"pending", "in_progress"})
"""Statuses that leave the plan open: a board with one of them is unfinished."""

_CRITERION_PROPERTIES: JSONObject = {
    "id": {"type": "string", "description": "Short stable id, e.g. `1` or `tests`."},
    "text": {"type": "string", "description": "One small, verifiable criterion."},
    "status": {"type": "string", "enum": list(STATUSES)},
    "check": {
        "type": "string",
        "description": "Optional shell command that exits 0 when the criterion holds; "
        "finish_call runs it.",
    },
}

BOARD_SPEC = ToolSpec(
    name="Board",
    description=(
        "Keep the plan as small, verifiable criteria with statuses (pending, in_progress, "
        "done, blocked). `set` replaces the whole board; `update` changes criteria by id (a "
        "new id with a text is added). Attach a `check` command to a criterion when a command "
        "can prove it; finish_call runs every check. Update the board as each stage is "
        "verified: it survives interruptions and checkpoints."
    ),
    parameters={
        "type": "object",
        "properties": {
            "set": {
                "type": "array",
                "description": "The new board (replaces the current one).",
                "items": {
                    "type": "object",
                    "properties": _CRITERION_PROPERTIES,
                    "required": ["text"],
                    "additionalProperties": False,
                },
            },
            "update": {
                "type": "array",
                "description": "Changes to criteria, by id.",
                "items": {
                    "type": "object",
                    "properties": _CRITERION_PROPERTIES,
                    "required": ["id"],
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class Criterion:
    """One criterion of the board."""

    id: str
    text: str
    status: str = "pending"
    check: str | None = None
    """A shell command that exits 0 when the criterion holds (run by finish_call)."""

    @property
    def open(self) -> bool:
        """True while the criterion is pending or in progress."""
        return self.status in OPEN_STATUSES


class BoardStore(Protocol):
    """Where the board lives (the agent backs it with the ledger)."""

    def board(self) -> tuple[Criterion, ...]:
        """The current board (empty when none was set)."""
        ...

    def record_board(self, criteria: tuple[Criterion, ...]) -> None:
        """Append the whole new board durably."""
        ...


def criteria_to_json(criteria: Sequence[Criterion]) -> list[JSONObject]:
    """The `criteria` payload of a `board.updated` entry."""
    return [{"id": c.id, "text": c.text, "status": c.status, "check": c.check} for c in criteria]


def criteria_from_json(value: JSONValue) -> tuple[Criterion, ...]:
    """Criteria from a `board.updated` payload; malformed items are skipped."""
    if not isinstance(value, list):
        return ()
    out: list[Criterion] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        ident, text, status = item.get("id"), item.get("text"), item.get("status")
        check = item.get("check")
        if not isinstance(ident, str) or not isinstance(text, str):
            continue
        out.append(
            Criterion(
                ident,
                text,
                status if isinstance(status, str) and status in STATUSES else "pending",
                check if isinstance(check, str) and check else None,
            )
        )
    return tuple(out)


def board_is_open(criteria: Sequence[Criterion]) -> bool:
    """True when some criterion is still pending or in progress."""
    return any(c.open for c in criteria)


def render_board(criteria: Sequence[Criterion]) -> str:
    """The board as text, one criterion per line."""
    if not criteria:
        return "(the board is empty)"
    lines = []
    for c in criteria:
        check = f"  (check: {c.check})" if c.check else ""
        lines.append(f"[{c.status}] {c.id}: {c.text}{check}")
    return "\n".join(lines)


def _status(raw: JSONObject, where: str, default: str | None) -> str | None:
    value = raw.get("status", default)
    if value is None:
        return None
    if not isinstance(value, str) or value not in STATUSES:
        raise ToolError(f"{where}: status must be one of {', '.join(STATUSES)}, got {value!r}")
    return value


def _text(raw: JSONObject, key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"{where}: {key} must be a string")
    return value.strip()


def _items(arguments: JSONObject, key: str) -> list[JSONObject]:
    value = arguments.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ToolError(f"{key} must be a list of objects")
    return [v for v in value if isinstance(v, dict)]


def apply_set(items: Sequence[JSONObject]) -> list[Criterion]:
    """A new board from `set` items (ids default to their position, status to pending).

    Raises:
        ToolError: an empty text, a bad status, or a duplicate id.
    """
    board: list[Criterion] = []
    for number, raw in enumerate(items, start=1):
        where = f"set[{number - 1}]"
        ident = _text(raw, "id", where) or str(number)
        text = _text(raw, "text", where)
        if not text:
            raise ToolError(f"{where}: text is required and may not be empty")
        if any(c.id == ident for c in board):
            raise ToolError(f"{where}: id {ident!r} is used twice")
        status = _status(raw, where, "pending") or "pending"
        board.append(Criterion(ident, text, status, _text(raw, "check", where) or None))
    return board


def apply_update(board: list[Criterion], items: Sequence[JSONObject]) -> list[Criterion]:
    """`board` with `update` items applied in order.

    Raises:
        ToolError: an unknown id without a text, an empty text, or a bad status.
    """
    out = list(board)
    for number, raw in enumerate(items):
        where = f"update[{number}]"
        ident = _text(raw, "id", where)
        if not ident:
            raise ToolError(f"{where}: id is required")
        text = _text(raw, "text", where)
        if text == "":
            raise ToolError(f"{where}: text may not be empty")
        status = _status(raw, where, None)
        check = _text(raw, "check", where)
        index = next((i for i, c in enumerate(out) if c.id == ident), None)
        if index is None:
            if text is None:
                known = ", ".join(c.id for c in out) or "none"
                raise ToolError(f"{where}: no criterion {ident!r} (ids: {known}); give a text")
            out.append(Criterion(ident, text, status or "pending", check or None))
            continue
        current = out[index]
        out[index] = replace(
            current,
            text=text if text is not None else current.text,
            status=status or current.status,
            check=(check or None) if check is not None else current.check,
        )
    return out


class BoardTool(NoPreparation):
    """The `Board` tool.

    Args:
        store: where the board is read from and appended to.
    """

    spec = BOARD_SPEC
    read_only = True
    """It changes the plan, never the workspace: allowed in read-only mode too."""

    def __init__(self, store: BoardStore) -> None:
        self.store = store

    def target(self, arguments: JSONObject) -> str | None:  # noqa: ARG002
        """No path or command to match rules on."""
        return None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002
        """The board touches no files."""
        return ()

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,  # noqa: ARG002
        preparation: Preparation | None,  # noqa: ARG002
    ) -> ToolOutcome:
        """Apply `set` then `update`, record the new board, return it as text."""
        try:
            set_items = _items(arguments, "set")
            update_items = _items(arguments, "update")
            if "set" not in arguments and not update_items:
                raise ToolError("give `set` (a new board) or `update` (changes by id)")
            board = apply_set(set_items) if "set" in arguments else list(self.store.board())
            board = apply_update(board, update_items)
        except ToolError as exc:
            return error_outcome(f"board not changed: {exc.message}")
        criteria = tuple(board)
        self.store.record_board(criteria)
        open_count = sum(1 for c in criteria if c.open)
        head = f"Board updated: {len(criteria)} criteria, {open_count} open."
        return text_outcome(f"{head}\n{render_board(criteria)}")
