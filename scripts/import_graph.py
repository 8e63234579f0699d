"""Print the figures of Comal's import graph: files and lines per folder, the agent modules each
front end reaches, the import circles between modules, and what evidence/ takes from context/.

Run it before and after a refactor (`python scripts/import_graph.py [SRC]`) and compare. It reads
the source with `ast` only: nothing is imported, so it runs on any checkout.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "comal"


def module_name(path: Path, src: Path) -> str:
    """The dotted name of the module at `path` (a package is named by its folder)."""
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, src: Path, known: set[str]) -> set[str]:
    """The Comal modules `path` imports at run time, at any depth (a function's local import
    still ties the two modules together), except under `if TYPE_CHECKING:`. `from a.b import c`
    imports the package `a.b` too, and the module `a.b.c` when there is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = module_name(path, src)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return {m for m in found if m in known and m != own}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def main(src: Path) -> None:
    paths = sorted(src.rglob("*.py"))
    known = {module_name(p, src) for p in paths}
    graph = {module_name(p, src): imports_of(p, src, known) for p in paths}
    packages = {module_name(p, src) for p in paths if p.name == "__init__.py"}

    print("files and lines per folder")
    per_folder: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path in paths:
        folder = str(path.parent.relative_to(src.parent))
        per_folder[folder][0] += 1
        per_folder[folder][1] += path.read_text(encoding="utf-8").count("\n")
    for folder, (files, lines) in sorted(per_folder.items()):
        print(f"  {folder:<32} {files:>4} files {lines:>7} lines")

    print("distinct comal.agent modules imported by")
    for layer in ("cli", "tui", "evidence", "replay", "testing"):
        targets = {
            t
            for m, ts in graph.items()
            if m.startswith(f"comal.{layer}.") or m == f"comal.{layer}"
            for t in ts
            if t.startswith("comal.agent")
        }
        print(f"  {layer:<10} {len(targets):>3}  {' '.join(sorted(targets))}")
    front = {
        t
        for m, ts in graph.items()
        if m.split(".")[1:2] in (["cli"], ["tui"])
        for t in ts
        if t.startswith("comal.agent")
    }
    print(f"  cli+tui    {len(front):>3}")

    found = circles(graph)
    print(f"import circles between modules at run time: {len(found)}")
    for component in found:
        print(f"  ({len(component)}) {' '.join(component)}")

    print('imports between the sub-folders of one package ("." is the package\'s own modules)')
    rooms: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            a, b = module.split("."), target.split(".")
            if len(a) < 3 or len(b) < 3 or a[1] != b[1]:
                continue
            room_a = a[2] if f"comal.{a[1]}.{a[2]}" in packages else "."
            room_b = b[2] if f"comal.{b[1]}.{b[2]}" in packages else "."
            if room_a != room_b:
                rooms[a[1]].add((room_a, room_b))
    for package, edges in sorted(rooms.items()):
        print(f"  {package:<10} {' '.join(f'{x}->{y}' for x, y in sorted(edges))}")

    from_context = sorted(
        {
            t
            for m, ts in graph.items()
            if m.startswith("comal.evidence")
            for t in ts
            if t.startswith("comal.context")
        }
    )
    print(f"modules evidence/ imports from context/: {len(from_context)}")
    for module in from_context:
        print(f"  {module}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else SRC)
