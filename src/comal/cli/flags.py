"""The top-level flags: `comal [TASK]`, `-p`, `-c`, `-r [ID]`, the model and permission flags.

Kept apart from the runner (`cmd_run.py`) so that `comal --help` and every subcommand build
their parser without importing the agent. Where Claude Code or Codex has a flag with the same
meaning, Comal accepts its spelling too (documented in the README):

- `--model`/`-m`; `--cd`/`-C` for `--cwd` (Codex);
- `--allowedTools`/`--allowed-tools` and `--disallowedTools`/`--disallowed-tools`: permission
  rules, `Bash(git diff:*)` or a tool name, added as `allow` / `deny` rules (Claude Code);
- `--append-system-prompt TEXT` (Claude Code);
- `--permission-mode` takes ours (`read-only`, `workspace-write`, `full-access`) and Claude
  Code's (`plan` → read-only, `acceptEdits` → workspace-write, `bypassPermissions` →
  full-access, `default` → the configured mode); `--sandbox`/`-s` takes Codex's
  (`danger-full-access` → full-access); `--dangerously-skip-permissions` is full-access.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from comal.config import PermissionRule

OUTPUT_FORMATS = ("text", "json", "stream-json")
EFFORTS = ("low", "medium", "high")
"""`comal.config.EFFORTS`, repeated so that parsing flags does not load the configuration."""

PERMISSION_MODES: dict[str, str | None] = {
    "read-only": "read-only",
    "workspace-write": "workspace-write",
    "full-access": "full-access",
    "danger-full-access": "full-access",
    "plan": "read-only",
    "acceptEdits": "workspace-write",
    "bypassPermissions": "full-access",
    "default": None,
}
"""Every accepted `--permission-mode`/`--sandbox` name → Comal's mode (None: as configured)."""

_RULE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def permission_mode(raw: str) -> str | None:
    """Comal's mode for a `--permission-mode` name (argparse type)."""
    if raw not in PERMISSION_MODES:
        names = ", ".join(PERMISSION_MODES)
        raise argparse.ArgumentTypeError(f"unknown permission mode {raw!r} (one of: {names})")
    return PERMISSION_MODES[raw] or ""


def tool_rules(action: str, values: list[str]) -> tuple[PermissionRule, ...]:
    """Permission rules from `--allowedTools`-style values.

    Each value holds rules separated by commas or spaces outside parentheses: `Read`,
    `Bash(git diff:*)`, `"Bash(npm test) Edit"`. A rule without parentheses covers every call
    of the tool; `Bash(x)` matches commands as a `pattern = "x"` rule does.

    Raises:
        argparse.ArgumentTypeError: a rule that is not `Tool` or `Tool(pattern)`.
    """
    from comal.config import PermissionRule

    rules: list[PermissionRule] = []
    for value in values:
        for item in _split_rules(value):
            found = _RULE.match(item)
            if found is None:
                raise argparse.ArgumentTypeError(
                    f"cannot read the tool rule {item!r}: write Tool or Tool(pattern),"
                    ' e.g. "Bash(git diff:*)"'
                )
            pattern = (found.group(2) or "").strip() or "*"
            rules.append(PermissionRule(action, found.group(1), pattern))
    return tuple(rules)


def _split_rules(value: str) -> list[str]:
    """`"Read, Bash(git log:*) Edit"` → `["Read", "Bash(git log:*)", "Edit"]`."""
    items: list[str] = []
    depth, current = 0, ""
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            if current.strip():
                items.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        items.append(current.strip())
    return items


def _at_least_one(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def register_top_level(parser: argparse.ArgumentParser, *, task: bool) -> None:
    """Add the run flags to the top-level parser (and the `TASK` positional when `task`)."""
    if task:
        parser.add_argument(
            "task",
            nargs="?",
            metavar="TASK",
            help="open the TUI with TASK as the first message (off a terminal: run it as -p does)",
        )
    group = parser.add_argument_group("run")
    group.add_argument(
        "-p",
        "--print",
        dest="prompt",
        nargs="?",
        const="",
        default=None,
        metavar="TASK",
        help=(
            "run TASK without the TUI and print the final answer; piped stdin is appended to"
            " TASK (or is the task when TASK is omitted)"
        ),
    )
    group.add_argument(
        "-r",
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue a recorded session (short id, id or prefix); without ID, pick one of"
        " this directory's sessions",
    )
    group.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of the current directory",
    )
    group.add_argument(
        "-m", "--model", help="model name (overrides the provider's configured model)"
    )
    group.add_argument("--provider", help="provider name from config.toml")
    group.add_argument("--context-window", type=int, metavar="N", help="cap the context window")
    group.add_argument("--max-output-tokens", type=int, metavar="N", help="cap the output reserve")
    group.add_argument(
        "--max-turns", type=_at_least_one, metavar="N", help="model calls allowed per turn (≥ 1)"
    )
    group.add_argument(
        "--effort",
        choices=EFFORTS,
        help="reasoning effort (overrides the provider's reasoning_effort)",
    )
    group.add_argument(
        "-C", "--cwd", "--cd", type=Path, help="workspace directory (default: current)"
    )
    group.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="text", help="text, json or stream-json"
    )
    group.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        default=[],
        metavar="NAME",
        help="load plugin NAME (repeatable; added to [plugins] enabled)",
    )
    group.add_argument(
        "--verbose",
        action="store_true",
        help="text mode: show every progress line and the model's commentary on stderr",
    )
    _permission_flags(group)


def _permission_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--permission-mode",
        "--sandbox",
        "-s",
        type=permission_mode,
        metavar="MODE",
        help="override permissions.mode: read-only, workspace-write, full-access (also"
        " plan, acceptEdits, bypassPermissions, default, danger-full-access)",
    )
    group.add_argument(
        "--dangerously-skip-permissions",
        dest="permission_mode",
        action="store_const",
        const="full-access",
        help="the same as --permission-mode full-access",
    )
    for flag, dest, action in (
        ("--allowedTools", "allowed_tools", "allow"),
        ("--disallowedTools", "disallowed_tools", "deny"),
    ):
        dashed = re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), flag)
        group.add_argument(
            flag,
            dashed,
            dest=dest,
            action="append",
            default=[],
            metavar="RULES",
            help=f'{action} rules for this run: Tool or Tool(pattern), e.g. "Bash(git diff:*)"'
            " (repeatable; commas or spaces between rules)",
        )
    group.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="text added at the end of the system prompt for this run",
    )
