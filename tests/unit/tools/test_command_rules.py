"""Bash patterns matched per simple command, and the policy built on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import PermissionRule, PermissionsConfig
from comal.messages import JSONObject
from comal.tools.command_rules import CommandPattern, Match, match, normalize, suggest_pattern
from comal.tools.commands import parse_command
from comal.tools.edits import WriteTool
from comal.tools.files import ReadTool
from comal.tools.permissions import PermissionPolicy, suggest_rules
from comal.tools.shell import BashTool


def first(line: str, pattern: str, *, inclusive: bool = True) -> Match:
    parsed = CommandPattern.parse(pattern)
    assert parsed is not None
    return match(parse_command(line)[-1], parsed, inclusive=inclusive)


@pytest.mark.parametrize(
    "args",
    [("-rf",), ("-fr",), ("-r", "-f"), ("--recursive", "--force"), ("-R", "--force"), ("-f", "-r")],
)
def test_option_spellings_normalize_to_one_set(args: tuple[str, ...]) -> None:
    assert normalize("rm", args).options == frozenset({"r", "f"})


def test_operands_keep_their_order_and_double_dash_ends_options() -> None:
    got = normalize("rm", ("a", "-f", "--", "-b", "c"))
    assert got.options == frozenset({"f"})
    assert got.operands == ("a", "-b", "c")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("rm -rf x", Match.MATCH),
        ("rm -rvf x y", Match.MATCH),
        ("rm -f x", Match.NO_MATCH),
        ("rm -r x", Match.NO_MATCH),
        ("rmdir -rf x", Match.NO_MATCH),
        ('rm -rf "$DIR"', Match.MATCH),
        ("rm $FLAGS x", Match.POSSIBLE),
        ("ls | xargs rm", Match.POSSIBLE),
        ("$PROG x", Match.POSSIBLE),
    ],
)
def test_deny_semantics_are_inclusive(line: str, expected: Match) -> None:
    assert first(line, "rm -rf *") is expected


@pytest.mark.parametrize(
    ("line", "pattern", "expected"),
    [
        ("npm run test", "npm run test:*", Match.MATCH),
        ("npm run test -- --watch", "npm run test:*", Match.MATCH),
        ("npm run build", "npm run test:*", Match.NO_MATCH),
        ("git status", "git status", Match.MATCH),
        ("git status -s", "git status", Match.NO_MATCH),
        ("git status -s", "git status *", Match.MATCH),
        ("pytest -q tests", "pytest*", Match.MATCH),
        ("pytest $ARGS", "pytest *", Match.MATCH),
        ("echo $X", "echo hi", Match.POSSIBLE),
        ("/usr/bin/git status", "git status", Match.MATCH),
    ],
)
def test_allow_semantics_need_the_whole_command_or_a_rest_wildcard(
    line: str, pattern: str, expected: Match
) -> None:
    assert first(line, pattern, inclusive=False) is expected


def test_options_with_a_value_do_not_hide_the_subcommand() -> None:
    assert first("git -C repo -c user.name=x push --force origin", "git push --force *") is (
        Match.MATCH
    )
    assert first("make -C sub clean", "make clean", inclusive=False) is Match.NO_MATCH
    assert first("make -C sub clean", "make clean") is Match.MATCH


def test_a_pattern_that_is_not_a_command_is_none() -> None:
    assert CommandPattern.parse("*") is None
    assert CommandPattern.parse("echo 'open") is None


def policy(*rules: PermissionRule, mode: str = "workspace-write") -> PermissionPolicy:
    return PermissionPolicy(PermissionsConfig(mode=mode, rules=rules), Path("/tmp"))


def decision(p: PermissionPolicy, line: str) -> str:
    return p.decide(BashTool(), {"command": line}).decision


def test_precedence_is_deny_then_ask_then_allow() -> None:
    p = policy(
        PermissionRule("allow", "Bash", "git *"),
        PermissionRule("ask", "Bash", "git push *"),
        PermissionRule("deny", "Bash", "git push --force *"),
    )
    assert decision(p, "git status") == "allow"
    assert decision(p, "git push origin") == "ask"
    assert decision(p, "git push -f origin") == "deny"  # -f is --force for git
    assert decision(p, "git push origin --force") == "deny"


def test_a_line_is_allowed_by_rules_only_when_every_command_is() -> None:
    p = policy(PermissionRule("allow", "Bash", "pytest *"), mode="read-only")
    assert decision(p, "pytest -q") == "allow"
    assert decision(p, "pytest -q && touch x") == "deny"  # the mode decides the rest
    assert decision(p, "pytest $(touch x)") == "deny"


def test_unresolvable_lines_ask_only_when_a_deny_rule_could_apply() -> None:
    guarded = policy(PermissionRule("deny", "Bash", "rm -rf *"))
    assert decision(guarded, 'sh -c "$CMD"') == "ask"
    assert decision(guarded, "ls | xargs grep x") == "allow"  # grep can never be rm
    assert decision(policy(), 'sh -c "$CMD"') == "allow"


async def test_headless_denies_what_would_be_asked() -> None:
    guarded = policy(PermissionRule("deny", "Bash", "rm -rf *"))
    verdict = await guarded.authorize(BashTool(), {"command": "$X -rf /"}, interactive=False)
    assert verdict.decision == "deny"
    assert "could match deny rule Bash(rm -rf *)" in verdict.reason


def test_deny_rules_also_match_the_whole_line_as_text() -> None:
    p = policy(PermissionRule("deny", "*", "*.env"))
    assert decision(p, "cat .env") == "deny"
    everything = policy(PermissionRule("deny", "Bash"))
    assert decision(everything, "X=1") == "deny"  # no simple command, still a Bash call
    assert decision(everything, "") == "deny"


def test_added_rules_apply_at_once() -> None:
    p = policy(mode="read-only")
    assert decision(p, "make test") == "deny"
    p.add_rule(PermissionRule("allow", "Bash", "make test *"))
    assert decision(p, "make test") == "allow"


def test_suggestions_are_prefix_rules_per_program() -> None:
    (cmd,) = parse_command("git status -s")
    assert suggest_pattern(cmd) == "git status *"
    rules = suggest_rules(BashTool(), {"command": "pytest -q tests && git diff --stat"})
    assert [r.pattern for r in rules] == ["pytest *", "git diff *"]
    assert suggest_rules(BashTool(), {"command": "$X y"}) == ()
    assert suggest_rules(ReadTool(), {"path": "/etc/hosts"}) == (
        PermissionRule("allow", "Read", "/etc/hosts"),
    )


def test_writes_to_the_workspace_settings_are_asked(tmp_path: Path) -> None:
    p = PermissionPolicy(PermissionsConfig(), tmp_path)
    write: JSONObject = {
        "path": ".comal/config.toml",
        "content": '[permissions]\nmode = "full-access"\n',
    }
    assert p.decide(WriteTool(), write).decision == "ask"
    assert p.decide(ReadTool(), {"path": ".comal/config.toml"}).decision == "allow"
    assert p.decide(WriteTool(), {"path": "src/.comal", "content": ""}).decision == "allow"
