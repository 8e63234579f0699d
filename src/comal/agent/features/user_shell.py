"""`!command`: a shell command the user runs in the workspace, as Claude Code's bash mode.

It runs through the Bash tool with the session's tool context (its workspace, environment,
sandbox and output limit; no permission check: the user asked for it), is recorded as a
`user.shell` entry with its output as the body, and its output is offered to the model with
the user's next message (`offered()`), never sent on its own: it opens no turn.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from comal.ledger.records import UserShell
from comal.tools.base import ToolOutcome, render_outcome
from comal.tools.shell import BashTool

if TYPE_CHECKING:  # the session is only read here: features sit below core/
    from comal.agent.core.session import Session

OFFER_CHARS = 16_000
"""How much of a command's output goes with the next message (the ledger keeps it all)."""


@dataclass(frozen=True, slots=True)
class ShellRun:
    """A finished `!command`: what ran, its outcome, and the id of its ledger entry."""

    command: str
    outcome: ToolOutcome
    entry_id: str

    @property
    def text(self) -> str:
        """The output as the model would see it (exit code appended when not 0)."""
        return render_outcome(self.outcome)


async def run_user_command(s: Session, command: str) -> ShellRun:
    """Run `command` in the session's workspace and record it.

    Args:
        s: the open session.
        command: the command line, without the leading `!`.
    """
    context = dataclasses.replace(s.runner.context, call_id="", on_output=None)
    outcome = await BashTool().run({"command": command}, context, None)
    record = UserShell(command, outcome.exit_code, outcome.is_error, len(outcome.output))
    entry = s.write(record, body=outcome.output)
    return ShellRun(command, outcome, entry.id)


def offered(runs: list[ShellRun], message: str) -> str:
    """The next message with the output of the commands run since the last one before it."""
    if not runs:
        return message
    blocks = []
    for run in runs:
        text = run.text
        if len(text) > OFFER_CHARS:
            text = text[:OFFER_CHARS] + f"\n[… cut: {len(run.text):,} characters in all]"
        blocks.append(f"I ran this command in the workspace:\n$ {run.command}\n{text.rstrip()}")
    return "\n\n".join([*blocks, message])
