"""Count the package's layering faults and its largest modules, for any source tree.

    .venv/bin/python bench/layers.py                       # this checkout
    git worktree add --detach /tmp/old 92aeb46              # the tree the architecture review read
    .venv/bin/python bench/layers.py /tmp/old/src/ragsight

Prints the upward (or sideways) imports and the imports of another package's private module, by
the rule and layer list of tests/unit/test_layers.py, and the three longest modules. The layer
list is today's: units of an older tree that it does not name are counted apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.unit.test_layers import imports, violations  # noqa: E402


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "src" / "ragsight"
    bad = violations(imports(root))
    groups = {
        "upward or sideways imports": [b for b in bad if "upward or sideways" in b],
        "imports of another package's private module": [b for b in bad if "private module" in b],
        "imports from units not in today's layer list": [b for b in bad if "not in the layer" in b],
    }
    print(f"source: {root}")
    for title, rows in groups.items():
        print(f"{title}: {len(rows)}")
        for row in rows:
            print(f"    {row}")
    sizes = sorted(((len(p.read_text(encoding='utf-8').splitlines()), p.relative_to(root))
                    for p in root.rglob("*.py")), reverse=True)
    print("longest modules: " + ", ".join(f"{p} {n}" for n, p in sizes[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
