"""A separate process working on a ledger, driven by the ledger tests.

Usage: `python ledger_child.py MODE LEDGER SESSION_ID` (LEDGER: a file or a PostgreSQL URL)
- `append`: append entries forever (every seventh with a binary body), printing each seq
  only after its append has returned, i.e. after the commit.
- `hold`: take the session lock, print `held`, and keep it until stdin closes.
- `grab`: take the session lock, print `held`, and exit at once without releasing it.
"""

from __future__ import annotations

import os
import sys

from comal.ledger import Ledger


def main() -> None:
    mode, target, session_id = sys.argv[1], sys.argv[2], sys.argv[3]
    ledger = Ledger.open(target)
    if mode == "append":
        n = 0
        while True:
            n += 1
            body = os.urandom(n % 4096) + b"\xff\xfe" if n % 7 == 0 else None
            entry = ledger.append(session_id, "test.crash", {"n": n, "pid": os.getpid()}, body=body)
            print(entry.seq, flush=True)
    lock = ledger.acquire_lock(session_id)
    print("held", lock.pid, flush=True)
    if mode == "grab":
        # Die holding the lock, as a crashed process would.
        os._exit(0)
    sys.stdin.read()
    ledger.close()


if __name__ == "__main__":
    main()
