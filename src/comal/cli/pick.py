"""`comal --resume` without an id: pick one of this directory's sessions, latest first.

On a terminal the TUI shows a selection screen (`comal.tui.picker`); headless, the sessions are
listed on stderr, numbered, and the answer is read from stdin. When stdin is no terminal there
is no one to ask: the run is refused with the list, so the id can be given.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from comal.errors import ConfigError, UnknownSessionError
from comal.ids import now_ms
from comal.ledger import Ledger
from comal.ledger.records import Kind

PICK_LIMIT = 20
"""How many of the directory's sessions the picker offers."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One session offered: its id and the line that shows it."""

    session_id: str
    label: str


def choices(ledger: Ledger, cwd: str, limit: int = PICK_LIMIT) -> list[Choice]:
    """The top-level sessions recorded in `cwd`, latest activity first.

    Raises:
        UnknownSessionError: none is recorded there.
    """
    from comal.cli.cmd_sessions import age, first_ask
    from comal.session import shown_status

    infos = [i for i in ledger.sessions() if i.cwd == cwd and i.parent_id is None]
    infos.sort(key=lambda i: i.last_activity_at, reverse=True)
    if not infos:
        raise UnknownSessionError(
            f"no session recorded in {cwd} to resume (`comal sessions --all` lists them all)"
        )
    shorts = ledger.short_ids()
    asks = ledger.first_entries(Kind.MESSAGE_USER)
    now = now_ms()
    out: list[Choice] = []
    for info in infos[:limit]:
        title = info.title or first_ask(asks.get(info.id)) or "-"
        status = shown_status(ledger, info)
        label = f"{shorts[info.id]}  {age(info.last_activity_at, now):>4}  {status:<11}  {title}"
        out.append(Choice(info.id, label))
    return out


def _numbered(offered: list[Choice]) -> str:
    return "\n".join(f"{n:>3}. {c.label}" for n, c in enumerate(offered, 1))


def pick_headless(
    offered: list[Choice], stdin: TextIO | None = None, stderr: TextIO | None = None
) -> str:
    """Ask on stderr which session to resume, reading the number from stdin.

    Raises:
        ConfigError: stdin is not a terminal (the message lists the sessions), or the answer
            names none of them.
    """
    stdin = sys.stdin if stdin is None else stdin
    stderr = sys.stderr if stderr is None else stderr
    if stdin is None or stdin.closed or not stdin.isatty():
        raise ConfigError(
            "--resume needs a session id when stdin is not a terminal; this directory's"
            f" sessions, latest first:\n{_numbered(offered)}"
        )
    stderr.write(f"{_numbered(offered)}\nresume which session? [1-{len(offered)}] ")
    stderr.flush()
    answer = stdin.readline().strip()
    if answer.isdigit() and 1 <= int(answer) <= len(offered):
        return offered[int(answer) - 1].session_id
    matches = [c for c in offered if answer and c.label.startswith(answer)]
    if len(matches) == 1:
        return matches[0].session_id
    raise ConfigError(f"no session numbered {answer!r}: give 1 to {len(offered)}")
