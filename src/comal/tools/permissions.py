"""The permission policy: may this call run, and why.

Order of judgement, first match wins (deny > ask > allow):

1. A matching **deny** rule denies.
2. A matching **ask** rule asks. A Bash line with a part only known at run time that could
   match a deny rule asks too (the most restrictive rule that could apply; headless: denied).
3. A matching **allow** rule allows (an explicit rule is the user's intent: it can permit a
   path outside the workspace or a tool the mode would refuse). A Bash line is allowed by rules
   only when every simple command in it is.
4. The **mode**: `read-only` denies any tool that is not read-only (Bash included);
   `full-access` allows everything; `workspace-write` (the default) allows the rest.
5. **Paths**: outside `full-access`, a path that resolves (symlinks and `..` included) outside
   the workspace and outside `extra_roots` — reads included — needs confirmation (`ask`), and
   so does a write to a protected path (`tools/protected.py`: `.comal/`, `.claude/`,
   `.mcp.json`, the instruction files, `.git/hooks`, `.git/config`: what the next session or
   the next `git` command loads and runs).

`authorize` turns `ask` into a verdict: the interactive hook confirms or declines; headless
mode denies and says so. Rules match the tool name and the tool's `target()` with `fnmatch`;
a call whose target is None only matches the pattern `*`; path targets are matched
resolved. Bash rules match each simple command of the line, parsed with tree-sitter-bash, with
options normalized (`command_rules`); deny and ask rules also match the whole line as text, so
they can only get stricter. Every decision carries a reason string that the loop records in the
receipt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from pathlib import Path

from comal.config import PermissionRule, PermissionsConfig
from comal.errors import PathOutsideWorkspaceError, ToolError
from comal.messages import JSONObject
from comal.tools.base import PermissionDecision, Tool, display_path, resolve_path
from comal.tools.command_rules import CommandPattern, Match, match, suggest_pattern
from comal.tools.commands import SimpleCommand, parse_command
from comal.tools.protected import protected_reason
from comal.tools.rule_presets import expand

AskHook = Callable[[str, JSONObject, str], Awaitable[bool]]
"""`(tool_name, arguments, reason) -> confirmed`; the TUI shows a confirmation prompt."""

HEADLESS_DENIAL = "needs confirmation; headless mode denies it"

_MODES = ("read-only", "workspace-write", "full-access")
_ACTIONS = ("allow", "ask", "deny")

COMMAND_TOOL = "Bash"
"""The tool whose target is a command line, matched per simple command."""


def _describe(rule: PermissionRule) -> str:
    preset = f" of preset {rule.preset}" if rule.preset else ""
    return f"{rule.action} rule {rule.tool}({rule.pattern}){preset}"


def suggest_rules(tool: Tool, arguments: JSONObject) -> tuple[PermissionRule, ...]:
    """The allow rules "always allow this pattern" would add for this call.

    A Bash line gets one prefix rule per program it runs (`git status *`, `pytest *`); a line
    with a part only known at run time gets none, since no pattern could be shown for it.
    Another tool gets a rule for its target as given.
    """
    name = tool.spec.name
    line = arguments.get("command")
    if name == COMMAND_TOOL and isinstance(line, str):
        patterns = [suggest_pattern(c) for c in parse_command(line)]
        if not patterns or any(p is None for p in patterns):
            return ()
        unique = dict.fromkeys(p for p in patterns if p is not None)
        return tuple(PermissionRule("allow", name, p) for p in unique)
    target = tool.target(arguments)
    return (PermissionRule("allow", name, target if target is not None else "*"),)


class PermissionPolicy:
    """Decides whether a tool call may run.

    Args:
        config: mode, rules and extra roots from the configuration.
        workspace: the session's workspace directory.
        ask: the interactive confirmation hook; None when there is nobody to ask.

    Raises:
        ToolError: the mode is unknown, a rule action is not allow, ask or deny, or a preset
            is not shipped.
    """

    def __init__(
        self, config: PermissionsConfig, workspace: Path, ask: AskHook | None = None
    ) -> None:
        if config.mode not in _MODES:
            raise ToolError(f"unknown permission mode {config.mode!r}")
        for rule in config.rules:
            if rule.action not in _ACTIONS:
                raise ToolError(f"permission rule action must be allow, ask or deny: {rule!r}")
        self.config = config
        self.rules: list[PermissionRule] = expand(list(config.rules))
        self._patterns = {r.pattern: CommandPattern.parse(r.pattern) for r in self.rules}
        self.mode = config.mode
        self.workspace = workspace.resolve()
        extra = (resolve_path(self.workspace, root) for root in config.extra_roots)
        self._roots = (self.workspace, *extra)
        self._ask = ask

    def check_path(self, path: str) -> Path:
        """Resolve `path` and require it inside the workspace or an extra root.

        Raises:
            PathOutsideWorkspaceError: the resolved path is outside every allowed root.
        """
        resolved = resolve_path(self.workspace, path)
        if not self._inside(resolved):
            raise PathOutsideWorkspaceError(
                f"{path} resolves to {resolved}, outside the workspace {self.workspace}"
            )
        return resolved

    def add_rule(self, rule: PermissionRule) -> None:
        """Apply one more rule from now on (the TUI's "always allow this pattern")."""
        self.rules.append(rule)
        self._patterns.setdefault(rule.pattern, CommandPattern.parse(rule.pattern))

    def decide(self, tool: Tool, arguments: JSONObject) -> PermissionDecision:
        """The verdict without asking anyone: `allow`, `deny`, or `ask`."""
        name = tool.spec.name
        line = arguments.get("command")
        if name == COMMAND_TOOL and isinstance(line, str):
            ruled = self._decide_command(name, line)
        else:
            ruled = self._decide_target(tool, arguments)
        if ruled is not None:
            return ruled
        if self.mode == "read-only" and not tool.read_only:
            return self._verdict("deny", f"read-only mode does not allow {name}")
        if self.mode == "full-access":
            return self._verdict("allow", "full-access mode allows every call")
        for path in tool.paths(arguments):
            try:
                resolved = self.check_path(path)
            except PathOutsideWorkspaceError as exc:
                return self._verdict("ask", exc.message)
            except ToolError as exc:
                return self._verdict("deny", exc.message)
            protected = None if tool.read_only else protected_reason(self.workspace, resolved)
            if protected is not None:
                return self._verdict("ask", f"{path} is protected: {protected}")
        if tool.read_only:
            return self._verdict("allow", f"{self.mode} mode allows reads inside the workspace")
        return self._verdict("allow", f"{self.mode} mode allows {name} inside the workspace")

    def _decide_target(self, tool: Tool, arguments: JSONObject) -> PermissionDecision | None:
        name = tool.spec.name
        deny_forms, allow_forms = self._target_forms(tool, arguments)
        for rule in self._rules("deny", name):
            if self._matches(rule, name, deny_forms):
                return self._verdict("deny", f"denied by {_describe(rule)}")
        for rule in self._rules("ask", name):
            if self._matches(rule, name, deny_forms):
                return self._verdict("ask", f"asked by {_describe(rule)}")
        for rule in self._rules("allow", name):
            if self._matches(rule, name, allow_forms):
                return self._verdict("allow", f"allowed by {_describe(rule)}")
        return None

    def _decide_command(self, name: str, line: str) -> PermissionDecision | None:
        """Rules for a command line, judged on each simple command it runs."""
        commands = parse_command(line)
        doubt: tuple[PermissionRule, SimpleCommand] | None = None
        text = line.strip()
        for rule in self._rules("deny", name):
            for command in commands:
                found = self._command_match(rule, command)
                if found is Match.MATCH:
                    return self._verdict("deny", f"denied by {_describe(rule)}: {command.text}")
                if found is Match.POSSIBLE and doubt is None:
                    doubt = (rule, command)
            if fnmatchcase(text, rule.pattern):
                return self._verdict("deny", f"denied by {_describe(rule)}")
        if doubt is not None:
            rule, command = doubt
            why = command.reason or "part of it is only known at run time"
            return self._verdict("ask", f"{command.text} could match {_describe(rule)} ({why})")
        for rule in self._rules("ask", name):
            for command in commands:
                if self._command_match(rule, command) is not Match.NO_MATCH:
                    return self._verdict("ask", f"asked by {_describe(rule)}: {command.text}")
            if fnmatchcase(text, rule.pattern):
                return self._verdict("ask", f"asked by {_describe(rule)}")
        allow = self._rules("allow", name)
        covering = [self._allowing(allow, c) for c in commands]
        if not commands or any(rule is None for rule in covering):
            return None
        used = ", ".join(dict.fromkeys(_describe(r) for r in covering if r is not None))
        return self._verdict("allow", f"allowed by {used}")

    def _allowing(
        self, rules: list[PermissionRule], command: SimpleCommand
    ) -> PermissionRule | None:
        """The first allow rule that covers the whole simple command, if any."""
        for rule in rules:
            pattern = self._patterns.get(rule.pattern)
            if pattern is None:
                if rule.pattern == "*":
                    return rule
            elif match(command, pattern, inclusive=False) is Match.MATCH:
                return rule
        return None

    def _command_match(self, rule: PermissionRule, command: SimpleCommand) -> Match:
        """Deny/ask matching of one simple command (the whole line is matched as text first)."""
        pattern = self._patterns.get(rule.pattern)
        if pattern is None:
            return Match.NO_MATCH
        return match(command, pattern, inclusive=True)

    def _rules(self, action: str, name: str) -> list[PermissionRule]:
        return [r for r in self.rules if r.action == action and fnmatchcase(name, r.tool)]

    async def authorize(
        self, tool: Tool, arguments: JSONObject, *, interactive: bool
    ) -> PermissionDecision:
        """The final verdict: `ask` is confirmed by the hook, or denied when headless."""
        decision = self.decide(tool, arguments)
        if decision.decision != "ask":
            return decision
        if not interactive:
            return self._verdict("deny", f"{HEADLESS_DENIAL} ({decision.reason})")
        if self._ask is None:
            return self._verdict(
                "deny", f"needs confirmation; no confirmation hook ({decision.reason})"
            )
        if await self._ask(tool.spec.name, arguments, decision.reason):
            return self._verdict("allow", f"confirmed by the user ({decision.reason})")
        return self._verdict("deny", f"declined by the user ({decision.reason})")

    def _verdict(self, decision: str, reason: str) -> PermissionDecision:
        if decision == "allow":
            return PermissionDecision("allow", self.mode, reason)
        if decision == "deny":
            return PermissionDecision("deny", self.mode, reason)
        return PermissionDecision("ask", self.mode, reason)

    def _inside(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self._roots)

    def _target_forms(
        self, tool: Tool, arguments: JSONObject
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The strings deny rules and allow rules are matched against.

        A path target is matched in its resolved forms (workspace-relative when inside, and
        absolute), so `docs/../../etc/passwd` cannot slip through an allow rule for `docs/*`.
        Deny rules also see the path as given, so they can only get stricter.
        """
        target = tool.target(arguments)
        if target is None:
            return (), ()
        if target not in tool.paths(arguments):
            return (target,), (target,)
        try:
            resolved = resolve_path(self.workspace, target)
        except ToolError:
            return (target,), ()
        forms = (display_path(self.workspace, resolved), str(resolved))
        return (target, *forms), forms

    @staticmethod
    def _matches(rule: PermissionRule, name: str, forms: tuple[str, ...]) -> bool:
        if not fnmatchcase(name, rule.tool):
            return False
        if rule.pattern == "*":
            return True
        return any(fnmatchcase(form, rule.pattern) for form in forms)
