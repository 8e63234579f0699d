"""The tools a session offers: the native file/shell/search tools plus the session-bound ones.

Session-bound tools (EvidenceRead, the board, finish_call) need the ledger and the session id,
which tools may not import; they receive small reader/recorder objects built here.
"""

from __future__ import annotations

from comal.agent.features.state import board_of, recorded_calls
from comal.evidence.read import LedgerEvidenceReader
from comal.ledger.records import BoardUpdated, Kind, SessionFinished
from comal.ledger.store import Ledger
from comal.messages import JSONObject
from comal.session import PAIRING_KINDS, index_status
from comal.tools.base import Tool
from comal.tools.board import BoardTool, Criterion, criteria_to_json
from comal.tools.evidence import EvidenceReadTool
from comal.tools.finish import CheckRun, FinishTool
from comal.tools.native import default_tools
from comal.tools.plugin import FinishCheck, RecordedCall

CALL_KINDS = PAIRING_KINDS
"""What `recorded_calls` reads: calls, their receipts and results (paired by `pairing`)."""


def standard_tools() -> list[Tool]:
    """Read, Write, Edit, Bash, Glob and Grep."""
    return default_tools()


class LedgerBook:
    """The board and the session's close, backed by the ledger (a `BoardStore` and a
    `FinishStore`).

    Args:
        ledger: the open ledger.
        session_id: the session the tools belong to.
    """

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id

    def board(self) -> tuple[Criterion, ...]:
        """The board as of the latest `board.updated` entry."""
        return board_of(self.ledger.entries(self.session_id, kinds=(Kind.BOARD_UPDATED,)))

    def record_board(self, criteria: tuple[Criterion, ...]) -> None:
        """Append a `board.updated` entry holding the whole board."""
        record = BoardUpdated(tuple(criteria_to_json(criteria)))
        self.ledger.append_record(self.session_id, record)

    def calls(self) -> tuple[RecordedCall, ...]:
        """Every call of the session with a result, in order."""
        return recorded_calls(self.ledger.entries(self.session_id, kinds=CALL_KINDS))

    def record_finish(self, answer: str, checks: tuple[CheckRun, ...]) -> None:
        """Append `session.finished`, then index the status it derives (`finished`).

        The entry comes first: a crash between the two leaves the entry, from which the status
        is derived anyway (the row is an index of the data, never the reverse).
        """
        runs: tuple[JSONObject, ...] = tuple(
            {"command": c.command, "exit_code": c.exit_code, "passed": c.passed} for c in checks
        )
        self.ledger.append_record(self.session_id, SessionFinished(answer, runs))
        index_status(self.ledger, self.session_id, running=False)


def session_tools(
    ledger: Ledger,
    session_id: str,
    checks: tuple[str, ...],
    plugin_checks: tuple[FinishCheck, ...] = (),
    *,
    child: bool = False,
) -> list[Tool]:
    """The EvidenceRead, Board and finish_call tools bound to one session.

    Args:
        ledger: the open ledger.
        session_id: the session.
        checks: the configured check commands finish_call runs (`Config.checks`).
        plugin_checks: the loaded plugins' finish checks (run after `checks`).
        child: a child session gets EvidenceRead only: its coordinator keeps the board and
            closes the task; the child's last answer is its receipt.
    """
    evidence = EvidenceReadTool(LedgerEvidenceReader(ledger, session_id))
    if child:
        return [evidence]
    book = LedgerBook(ledger, session_id)
    return [
        evidence,
        BoardTool(book),
        FinishTool(book, checks, plugin_checks=plugin_checks),
    ]
