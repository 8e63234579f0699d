"""The README's deny rule cannot be sidestepped: `comal -p` with a scripted model tries every
shape of `rm -rf` we know of, and only the commands outside the rule actually run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at

pytestmark = pytest.mark.e2e

# Each variant tries to delete its own folder; `{d}` is that folder's name.
DENIED = [
    # The seven variants of the issue.
    "rm -rf {d}",
    "rm -fr {d}",
    "rm -r -f {d}",
    "/bin/rm -rf {d}",
    "true && rm -rf {d}",
    "echo hi; rm -rf {d}",
    "   rm -rf {d}",
    # Option spellings.
    "rm --recursive --force {d}",
    "rm -R -f {d}",
    "rm -rfv {d}",
    "rm {d} -rf",
    "rm -rf -- {d}",
    # Operators, grouping, newlines, background.
    "false || rm -rf {d}",
    "ls | rm -rf {d}",
    "(cd . && rm -rf {d})",
    "{{ rm -rf {d}; }}",
    "echo start\nrm -rf {d}",
    "rm -rf {d} & wait",
    "if true; then rm -rf {d}; fi",
    'for x in {d}; do rm -rf "$x"; done',
    "f() {{ rm -rf {d}; }}; f",
    # Quoting and escapes.
    "\"rm\" -rf '{d}'",
    "r\\m -rf {d}",
    "r''m -rf {d}",
    # Substitutions and here-documents.
    "echo $(rm -rf {d})",
    "echo `rm -rf {d}`",
    "cat <<EOF\n$(rm -rf {d})\nEOF",
    "bash <<'EOF'\nrm -rf {d}\nEOF",
    # Shell strings and eval.
    "bash -c 'rm -rf {d}'",
    'sh -c "rm -r -f {d}"',
    'bash -lc "echo x && rm -rf {d}"',
    'eval "rm -rf {d}"',
    "trap 'rm -rf {d}' EXIT",
    "git -C . status && rm -rf {d}",
    'bash -c "$(echo rm -rf {d})"',
    # Wrappers.
    "env FOO=1 rm -rf {d}",
    "command rm -rf {d}",
    "exec rm -rf {d}",
    "nice -n 5 timeout 10 rm -rf {d}",
    "sudo rm -rf {d}",
    # Programs run with arguments only known at run time.
    "x=rm; $x -rf {d}",
    "echo {d} | xargs rm -rf",
    "find . -maxdepth 1 -name {d} -exec rm -rf {{}} +",
]

ALLOWED = [
    ("rm {d}/keep", False),  # rm without -r -f is not covered by the rule
    ("echo rm -rf {d}", True),  # only an argument of echo
    ("git --version > /dev/null; ls {d}", True),
]


def test_deny_rule_holds_for_every_shape(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    commands: list[tuple[str, Path, bool]] = []
    for i, template in enumerate(DENIED):
        folder = workspace / f"victim{i:02d}"
        commands.append((template.format(d=folder.name), folder, True))
    for i, (template, kept) in enumerate(ALLOWED):
        folder = workspace / f"allowed{i:02d}"
        commands.append((template.format(d=folder.name), folder, kept))
    for _, folder, _ in commands:
        folder.mkdir()
        (folder / "keep").write_text("precious\n")
    calls: list[dict[str, Any]] = [
        {"id": f"c{i}", "name": "Bash", "arguments": {"command": command}}
        for i, (command, _, _) in enumerate(commands)
    ]
    with FakeServer([{"tool_calls": calls}, "Done."]) as server:
        configure(workspace, server, "openai-chat")
        with (workspace / ".comal" / "config.toml").open("a") as fh:
            fh.write('\n[permissions]\ndeny = [{ tool = "Bash", pattern = "rm -rf *" }]\n')
        run = comal("-p", "clean up", cwd=workspace, env_home=home, timeout=120)
    assert run.code == 0, run.stderr
    survivors = [cmd for cmd, folder, kept in commands if kept and (folder / "keep").exists()]
    deleted = [cmd for cmd, folder, kept in commands if kept and not (folder / "keep").exists()]
    assert deleted == []
    assert len(survivors) == len(DENIED) + sum(kept for _, kept in ALLOWED)
    assert not (workspace / "allowed00" / "keep").exists()  # the allowed rm really ran
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        results = {
            e.payload["call_id"]: e.payload["status"]
            for e in ledger.entries(info.id, kinds=("tool.result",))
        }
    statuses = [results[f"c{i}"] for i in range(len(commands))]
    assert statuses[: len(DENIED)] == ["denied"] * len(DENIED)
    assert statuses[len(DENIED) :] == ["ok"] * len(ALLOWED)
    assert len(DENIED) >= 27
