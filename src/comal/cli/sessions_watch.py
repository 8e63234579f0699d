"""`comal sessions --host H --status S --since T` and `--follow`: a fleet's sessions, filtered
and watched live.

A session's hosts are those its `lock.acquired` and `lock.reclaimed` entries name (host name
and host id: `--host` matches either). `--follow` prints the listing once, then one line per
change of a session (new, more entries, another status) as it happens: on PostgreSQL each
append's notification wakes it (LISTEN/NOTIFY), on SQLite it looks again every half second.
Statuses are shown as `comal sessions` shows them (`session/status.py`: `answered` and
`running`, never the indexed `active`), derived only for sessions whose row changed since the
last look.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from datetime import UTC, datetime

from comal.ids import now_ms
from comal.ledger import Ledger, SessionInfo
from comal.ledger.records import LockAcquired, LockReclaimed
from comal.session import shows_as, with_shown_status

_DURATION = re.compile(r"(\d+)\s*([smhd])")
_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_WAKE_S = 1.0
"""The longest a follower sleeps without a notification (a lost one costs at most this)."""


def since_ms(text: str) -> int:
    """`--since`: a duration back from now (`30m`, `2h`, `1d`) or an ISO date or time (UTC
    unless it says otherwise), as ms UTC.

    Raises:
        argparse.ArgumentTypeError: neither.
    """
    found = _DURATION.fullmatch(text.strip())
    if found:
        return now_ms() - int(found.group(1)) * _UNITS[found.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--since takes a duration (30m, 2h, 1d) or an ISO date, got {text!r}"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def session_hosts(ledger: Ledger) -> dict[str, list[str]]:
    """Each session's hosts (host ids, then names), in the order its processes took it."""
    hosts: dict[str, list[str]] = {}
    for entry in ledger.kind_entries((LockAcquired.KIND, LockReclaimed.KIND)):
        lock = LockAcquired.from_payload(entry.payload)
        names = hosts.setdefault(entry.session_id, [])
        for name in (lock.host_id, lock.host):
            if name and name not in names:
                names.append(name)
    return hosts


def wanted(info: SessionInfo, hosts: dict[str, list[str]], args: argparse.Namespace) -> bool:
    """Whether the session passes `--host`, `--status` and `--since` (`info` with its status
    as shown; `--status active` also takes the indexed name of `answered` and `running`)."""
    if args.host is not None and args.host not in hosts.get(info.id, []):
        return False
    if args.status is not None and not shows_as(info.status, args.status):
        return False
    return args.since is None or info.last_activity_at >= args.since


def _line(info: SessionInfo, short: str, hosts: dict[str, list[str]], what: str) -> str:
    when = datetime.fromtimestamp(info.last_activity_at / 1000, UTC).strftime("%H:%M:%S")
    host = (hosts.get(info.id) or ["-"])[0]
    return (
        f"{when}  {what:<8} {short}  {info.status:<11} {info.entries:>6} entries  host {host}"
        f"  {info.cwd}  {info.title or ''}".rstrip()
    )


async def follow(ledger: Ledger, args: argparse.Namespace) -> int:
    """Print every change of the wanted sessions as it happens, until interrupted (the wait
    runs in a thread, so an interrupt is handled at once)."""
    seen: dict[str, tuple[int, str]] = {}
    first = True
    while True:
        rows = ledger.sessions()
        changed = [info for info in rows if seen.get(info.id, (-1, ""))[0] != info.entries]
        if changed:
            hosts = session_hosts(ledger)
            shorts = ledger.short_ids()
            for info in sorted(changed, key=lambda i: (i.last_activity_at, i.id)):
                info = with_shown_status(ledger, info)
                before = seen.get(info.id)
                seen[info.id] = (info.entries, info.status)
                if not wanted(info, hosts, args):
                    continue
                what = "now" if first else "new" if before is None else "status"
                if before is not None and before[1] == info.status:
                    what = "entries"
                print(_line(info, shorts[info.id], hosts, what), flush=True)
        if first:
            print(f"following {ledger.location} (Ctrl-C stops)", file=sys.stderr, flush=True)
        first = False
        await asyncio.to_thread(ledger.wait_for_change, _WAKE_S)
