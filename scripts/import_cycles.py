"""Import circles among Comal's modules (`python scripts/import_cycles.py [src/comal]`).

Every module's imports are read from its source, at any depth (a function's local import
counts: it still ties the two modules together), except those under `if TYPE_CHECKING:`.
Prints each strongly connected group of more than one module, then how many there are.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every `.py` file under the package `root`."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that the file imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets.add(node.module)
            targets.update(f"{node.module}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def main(argv: list[str]) -> int:
    """Print the circles of the package named (default `src/comal`)."""
    root = Path(argv[0] if argv else "src/comal")
    if not (root / "__init__.py").is_file():
        print(f"{root}: not a package", file=sys.stderr)
        return 2
    modules = module_names(root)
    graph = {name: imports_of(path, name, modules) for name, path in modules.items()}
    groups = circles(graph)
    for group in groups:
        print(f"{len(group)}: {' '.join(group)}")
    print(f"{len(groups)} circles")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
