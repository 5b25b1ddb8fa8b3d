"""Print lines of code per folder of the ember package (a size signal, tinygrad-style).

    python tools/loc.py
"""

from __future__ import annotations

import os
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ember")


def count_lines(path: str) -> int:
    """Non-blank lines of a Python file."""
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def main() -> None:
    per_folder = defaultdict(int)
    biggest = []
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                n = count_lines(path)
                per_folder[os.path.relpath(folder, os.path.dirname(ROOT))] += n
                biggest.append((n, os.path.relpath(path, os.path.dirname(ROOT))))
    total = sum(per_folder.values())
    for folder in sorted(per_folder):
        print(f"{per_folder[folder]:7d}  {folder}")
    print(f"{total:7d}  total")
    print("\nlargest files:")
    for n, path in sorted(biggest, reverse=True)[:8]:
        print(f"{n:7d}  {path}")


if __name__ == "__main__":
    main()
