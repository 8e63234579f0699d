"""The ledger: the durable, append-only SQLite book every view is derived from."""

from comal.ledger.entry import Entry, SessionInfo
from comal.ledger.locks import LockInfo
from comal.ledger.store import STATUSES, Ledger
from comal.ledger.verify import VerifyReport

__all__ = ["STATUSES", "Entry", "Ledger", "LockInfo", "SessionInfo", "VerifyReport"]
