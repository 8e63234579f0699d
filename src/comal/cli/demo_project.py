"""The small sample project `comal demo` works on, shipped as text so it installs with the package.

A tiny inventory package with a real bug (`median` of an even-length list), stdlib unittest
tests that catch it, and a report script whose output is large on purpose (so the context
engine's large-output references show up in the demo).
"""

from __future__ import annotations

from pathlib import Path

FILES: dict[str, str] = {
    "README.md": """\
# inventory

Small stock statistics. Run the tests with `python -m unittest -v`.
""",
    "inventory/__init__.py": '''\
"""Stock statistics."""
''',
    "inventory/stats.py": '''\
"""Summary statistics over stock levels."""


def mean(values: list[float]) -> float:
    """Arithmetic mean; raises ValueError on an empty list."""
    if not values:
        raise ValueError("mean of empty list")
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """Middle value of the sorted list."""
    if not values:
        raise ValueError("median of empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def restock_needed(levels: dict[str, int], threshold: int) -> list[str]:
    """Items whose level is below the threshold, sorted by name."""
    return sorted(name for name, level in levels.items() if level < threshold)
''',
    "tests/__init__.py": "",
    "tests/test_stats.py": """\
import unittest

from inventory.stats import mean, median, restock_needed


class StatsTest(unittest.TestCase):
    def test_mean(self) -> None:
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_odd(self) -> None:
        self.assertEqual(median([5, 1, 3]), 3)

    def test_median_even(self) -> None:
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_restock(self) -> None:
        self.assertEqual(restock_needed({"bolt": 3, "nut": 40, "gear": 1}, 5), ["bolt", "gear"])


if __name__ == "__main__":
    unittest.main()
""",
    "tools/report.py": '''\
"""Print a long stock report (one line per item and warehouse)."""

WAREHOUSES = ["north", "south", "east", "west"]

for item in range(400):
    for house in WAREHOUSES:
        level = (item * 37 + len(house) * 11) % 97
        print(f"item-{item:04d} {house:>5} level={level:3d} reorder={'yes' if level < 9 else 'no'}")
print("TOTAL items=400 warehouses=4 low_stock_item=item-0113")
''',
}


def write_project(root: Path) -> None:
    """Write the sample project under `root`."""
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
