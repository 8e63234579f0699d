"""A separate process working on a ledger, driven by the ledger tests.

Usage: `python ledger_child.py MODE LEDGER SESSION_ID` (LEDGER: a file or a PostgreSQL URL;
`COMAL_HOST_ID` and `COMAL_LEASE_S` in the environment simulate another host and a short lease)
- `append`: append entries forever (every seventh with a binary body), printing each seq
  only after its append has returned, i.e. after the commit.
- `hold`: take the session lock, print `held`, and keep it until stdin closes.
- `grab`: take the session lock, print `held`, and exit at once without releasing it.
- `try`: try to take the session lock: print `held PID` and keep it until stdin closes, or
  print `refused` and exit.
- `write`: take the lock, print `held`, then append one entry per line read from stdin,
  answering `ok SEQ`, or `refused` once the lease was taken over.
"""

from __future__ import annotations

import os
import sys

from comal.errors import SessionLockedError
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
    try:
        lock = ledger.acquire_lock(session_id)
    except SessionLockedError:
        print("refused", flush=True)
        return
    print("held", lock.pid, flush=True)
    if mode == "grab":
        # Die holding the lock, as a crashed process would.
        os._exit(0)
    if mode == "write":
        for line in sys.stdin:
            try:
                entry = ledger.append(session_id, "message.user", {"text": line.strip()})
            except SessionLockedError:
                print("refused", flush=True)
                continue
            print("ok", entry.seq, flush=True)
    sys.stdin.read()
    ledger.close()


if __name__ == "__main__":
    main()
