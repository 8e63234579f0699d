"""Count entry kinds written as bare string literals in src/ (read from the AST).

A literal counts when its text is an entry kind (`comal.ledger.records.RECORDS`) and it is
not a docstring nor the `Kind` enum's own definition. A dotted kind (`tool.result`) always
counts; an undotted one (`checkpoint`, `projection`, `warning`) counts only where it stands
for a kind: compared with a `kind`, passed as a `kind`/`kinds` argument or to a reader of
kinds, or held by a name that says `kind`.

    python scripts/kind_strings.py          # the total and the count per file
    python scripts/kind_strings.py --list   # every literal, with its file and line
    python scripts/kind_strings.py --nested # reads of a nested payload's keys as a dict

`--nested` counts, outside `comal/ledger/records`, the keys read as a dict (`x.get("k")`,
`x["k"]`, `f.text(x, "k")`) from a record's nested payload field (`preparation`,
`permission`, `window`, `origin`, `media`): on the field itself, on a name bound to it (or
to a function returning it) in the same function, or on a parameter of that name.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from comal.ledger.records import RECORDS

ROOT = Path(__file__).resolve().parent.parent / "src"
SKIP = {ROOT / "comal" / "ledger" / "records" / "kinds.py"}
KIND_READERS = {"entries", "_of_kinds", "first_entries", "kind_entries", "of_kind"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            found.add(id(body[0].value))
    return found


def _says_kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return "kind" in node.attr.lower()
    if isinstance(node, ast.Name):
        return "kind" in node.id.lower()
    return False


def _kind_context(chain: list[ast.AST]) -> bool:
    """Whether the literal at the end of `chain` (its ancestors, outermost first) is a kind."""
    for node in reversed(chain[:-1]):
        if isinstance(node, ast.Compare):
            if any(_says_kind(side) for side in [node.left, *node.comparators]):
                return True
        elif isinstance(node, ast.keyword) and node.arg in ("kind", "kinds"):
            return True
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in KIND_READERS:
                return True
            # `ledger.append(session_id, kind, payload)`, not a list's append
            if name == "append" and len(node.args) >= 2 and node.args[1] is chain[-1]:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return any(_says_kind(target) for target in targets)
        elif isinstance(node, ast.stmt):
            return False
    return False


def literals(path: Path) -> list[tuple[int, str]]:
    """The bare kind literals of one module: (line, kind)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, chain: list[ast.AST]) -> None:
        chain = [*chain, node]
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in RECORDS
            and id(node) not in docs
            and ("." in node.value or _kind_context(chain))
        ):
            found.append((node.lineno, node.value))
        for child in ast.iter_child_nodes(node):
            walk(child, chain)

    walk(tree, [])
    return found


NESTED = {"preparation", "permission", "window", "origin", "media"}
RECORDS_DIR = ROOT / "comal" / "ledger" / "records"


def _from_nested(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in NESTED:
            return True
        if isinstance(sub, ast.Constant) and sub.value in NESTED and _key_read(node) is not None:
            return True  # `payload.get("preparation")`
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", "") == "_origin":
            return True
    return False


def _key_read(node: ast.AST) -> ast.AST | None:
    """The object whose key `node` reads, when it reads one by a string literal."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.value if isinstance(node.slice.value, str) else None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    func, args = node.func, node.args
    if func.attr == "get" and 1 <= len(args) <= 2:
        key, read = args[0], func.value  # `x.get("k")`
    elif getattr(func.value, "id", "") == "f" and len(args) >= 2:
        key, read = args[1], args[0]  # `f.text(x, "k")` (comal.ledger.records.fields)
    else:
        return None
    return read if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def nested_reads(path: Path) -> list[int]:
    """The lines of one module that read a nested payload's key as a dict."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [
        f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    handed: set[str] = set()  # module functions given a nested payload as their first argument
    for fn in functions:
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.args
                and _from_nested(node.args[0], set())
            ):
                handed.add(node.func.id)
    lines: list[int] = []
    for fn in functions:
        params = fn.args.args
        tainted = {
            a.arg
            for a in params
            if "JSONObject" in ast.unparse(a.annotation or ast.Constant(""))
            and (a.arg in NESTED or (fn.name in handed and a is params[0]))
        }
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if _from_nested(node.value, tainted):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.For) and _from_nested(node.iter, tainted):
                tainted |= {t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            read = _key_read(node)
            if read is not None and _from_nested(read, tainted):
                lines.append(node.lineno)
    return lines


def main_nested(argv: list[str]) -> int:
    per_file: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        if RECORDS_DIR in path.parents or "providers" in path.parts:
            continue
        for line in nested_reads(path):
            shown = path.relative_to(ROOT.parent)
            per_file[str(shown)] += 1
            if "--list" in argv:
                print(f"{shown}:{line}")
    if "--list" not in argv:
        for name, count in per_file.most_common():
            print(f"{count:4d}  {name}")
    print(f"{sum(per_file.values())} nested payload reads in {len(per_file)} modules")
    return 0


def main(argv: list[str]) -> int:
    if "--nested" in argv:
        return main_nested(argv)
    per_file: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        if path in SKIP:
            continue
        for line, kind in literals(path):
            shown = path.relative_to(ROOT.parent)
            per_file[str(shown)] += 1
            if "--list" in argv:
                print(f"{shown}:{line}: {kind}")
    if "--list" not in argv:
        for name, count in per_file.most_common():
            print(f"{count:4d}  {name}")
    print(f"{sum(per_file.values())} bare kind literals in {len(per_file)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
