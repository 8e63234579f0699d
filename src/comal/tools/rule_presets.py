"""Shipped Bash rule sets, named in the configuration as `{ preset = "NAME" }`.

`deny = [{ preset = "destructive-delete" }, { preset = "push" }]` expands into the Bash rules
below, with the action of the list it is in. Each set names every common program that has
the effect, not only the usual spelling: a rule about `rm -rf` alone lets `rm -r`,
`find -delete` and `unlink` through.

What no pattern can catch: a program that decides at run time what it runs or deletes —
`python -c`, `perl -e`, `awk 'BEGIN{system(…)}'`, `sed 'e …'`, a script file, a copy of `rm`
under another name, `make`, `tar --to-command`, `BASH_ENV`, a git alias written into
`.git/config`. Rules are a guard against mistakes; the Bash sandbox (what a command can reach)
and `comal rewind` (what it changed) are the protection there. `tests/security/
deny_rewrites.py` holds the rewrites tried against these sets, each marked denied, asked or
uncatchable.
"""

from __future__ import annotations

from comal.config import PermissionRule
from comal.errors import ToolError

PRESETS: dict[str, tuple[str, ...]] = {
    "destructive-delete": (
        "rm -r *",  # -rf, -R, --recursive, --rec and any other spelling normalize to r
        "rm -d *",
        "find -delete",
        "unlink *",
        "rmdir *",
        "shred *",
        "git clean -f *",
    ),
    "push": (
        "git push *",
        "git send-pack *",
        "git subtree push *",
        "git svn dcommit *",
    ),
}
"""Preset name -> the Bash patterns it stands for."""


def expand(rules: list[PermissionRule]) -> list[PermissionRule]:
    """Every preset entry replaced by its Bash rules, in place; other rules kept as they are.

    Raises:
        ToolError: a preset name that is not shipped.
    """
    out: list[PermissionRule] = []
    for rule in rules:
        if not rule.preset:
            out.append(rule)
            continue
        patterns = PRESETS.get(rule.preset)
        if patterns is None:
            known = ", ".join(sorted(PRESETS))
            raise ToolError(f"unknown permission preset {rule.preset!r} (known: {known})")
        out.extend(PermissionRule(rule.action, "Bash", p, preset=rule.preset) for p in patterns)
    return out
