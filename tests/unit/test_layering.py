"""Lower layers never import higher ones (STYLE.md §3.2), and no module exceeds 800 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "comal"

BASE = {
    *("comal", "comal.messages", "comal.ids", "comal.errors", "comal.usage", "comal.values"),
    *("comal.config", "comal.config_hooks", "comal.config_mcp", "comal.config_trust"),
}
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "ledger": {"base"},
    "providers": {"base"},
    "tools": {"base"},
    "plugins": {"base", "tools"},
    "session": {"base", "ledger", "providers"},
    "context": {"base", "ledger", "session"},
    "evidence": {"base", "ledger", "session", "context"},
    "agent": {"base", "ledger", "providers", "tools", "session", "context", "evidence"},
    "importers": {"base", "ledger", "session", "context"},
    "replay": {"base", "ledger", "providers", "tools", "session", "context", "importers"},
    "testing": {"base", "ledger", "providers", "tools", "session", "context", "evidence", "agent"},
    "tui": {"base", "ledger", "providers", "tools", "session", "context", "evidence", "agent"},
    "cli": {
        "base",
        "ledger",
        "providers",
        "tools",
        "session",
        "context",
        "evidence",
        "agent",
        "importers",
        "replay",
        "testing",
        "tui",
    },
    "main": {"cli"},
}


ROOMS: dict[str, tuple[str, ...]] = {
    "context": ("measure", "view", "relief", ""),
    "agent": ("features", "core", "children", ""),
}
"""The sub-folders of a package, lowest first ("" holds the package's own modules): a module
may import its own room and the rooms before it, never one after it. Imports made for the type
checker alone (`if TYPE_CHECKING:`) do not count: nothing runs them."""

FRONT_DOORS = {"comal.session"}
"""Packages read only through their `__init__` (its `__all__`) from outside."""


def layer_of_module(module: str) -> str:
    if module in BASE:
        return "base"
    if module == "comal.__main__":
        return "main"
    parts = module.split(".")
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def type_checking_nodes(tree: ast.AST) -> set[ast.AST]:
    """The nodes under an `if TYPE_CHECKING:` block."""
    guarded: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for child in node.body:
                guarded.update(ast.walk(child))
    return guarded


def room_of(module: str) -> tuple[str, str] | None:
    """(package, room) of a module of a package with `ROOMS`, else None."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] not in ROOMS:
        return None
    return parts[1], parts[2] if len(parts) > 3 and parts[2] in ROOMS[parts[1]] else ""


def imported_modules(tree: ast.AST, skip: set[ast.AST] | None = None) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if skip and node in skip:
            continue
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    # importlib.import_module("comal.x") counts too: dynamic imports may not hide a layer breach.
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return [m for m in found if m == "comal" or m.startswith("comal.")]


def all_modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    for path in all_modules():
        layer = layer_of_module(module_name(path))
        assert layer in ALLOWED, f"{path} is in no known layer ({layer})"


@pytest.mark.parametrize("path", all_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_respect_layers(path: Path) -> None:
    own = layer_of_module(module_name(path))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for target in imported_modules(tree):
        other = layer_of_module(target)
        if other in (own, "base"):
            continue
        assert other in ALLOWED[own], f"{module_name(path)} ({own}) imports {target} ({other})"


@pytest.mark.parametrize("path", all_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_respect_rooms(path: Path) -> None:
    own = module_name(path)
    room = room_of(own)
    if room is None:
        return
    package, name = room
    order = ROOMS[package]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for target in imported_modules(tree, type_checking_nodes(tree)):
        other = room_of(target)
        if other is None or other[0] != package:
            continue
        assert order.index(other[1]) <= order.index(name), (
            f"{own} ({package}/{name or '.'}) imports {target} ({package}/{other[1] or '.'})"
        )


@pytest.mark.parametrize("path", all_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_front_doors(path: Path) -> None:
    own = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for target in imported_modules(tree):
        for door in FRONT_DOORS:
            inside = own == door or own.startswith(door + ".")
            assert inside or not target.startswith(door + "."), (
                f"{own} imports {target}: read {door} through its front door ({door})"
            )


def test_the_checker_catches_a_breach(tmp_path: Path) -> None:
    tree = ast.parse("from comal.agent.core.loop import run_turn\nimport comal.cli.main\n")
    layers = {layer_of_module(m) for m in imported_modules(tree)}
    assert layers == {"agent", "cli"}
    assert "agent" not in ALLOWED["ledger"]
    assert room_of("comal.context.view.build") == ("context", "view")
    assert room_of("comal.context.engine") == ("context", "")
    assert ROOMS["context"].index("relief") > ROOMS["context"].index("view")
    guarded = ast.parse("if TYPE_CHECKING:\n    from comal.agent.core.session import Session\n")
    assert imported_modules(guarded, type_checking_nodes(guarded)) == []


@pytest.mark.parametrize("path", all_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_size(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= 800, f"{path.relative_to(SRC)} has {lines} lines (hard cap 800)"
