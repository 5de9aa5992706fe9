"""The package's layering, checked on the source: every import points down the stack, and another
package is imported only through its ``__init__``.

The layer list below is the one place the rule is written (docs/architecture.md draws it). A
module may import from its own layer's other units only where ``SIDEWAYS`` allows it, and from any
lower layer. An import of ``ragsight.x._y`` from outside package ``x`` is a private reach.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ragsight"

# Highest first. A unit is a package (folder) or a top-level module of ragsight.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("view",),
    ("monitor",),
    ("sweep",),
    ("simulate",),
    ("report", "diagnosis", "testset", "pipeline", "integrations", "testing", "pytest_plugin"),
    ("run",),
    ("engine",),
    ("result",),
    ("metrics",),
    ("analyses",),
    ("store",),
    ("judge",),
    ("embed",),
    ("sample", "conversation"),
    ("dataset", "calls", "_score", "_stats", "prompts", "_version", "errors", "_terminal"),
)
# Units of one layer that may import each other, as (importer, imported).
SIDEWAYS = {("report", "testset"), ("report", "diagnosis"), ("pipeline", "testset"), ("testing", "report"),
            ("dataset", "_score"), ("dataset", "errors"), ("calls", "errors"), ("calls", "prompts"),
            ("prompts", "errors"), ("_score", "errors")}
# The package's own __init__ sits on top: it only re-exports.
TOP = "__init__"


def _rank() -> dict[str, int]:
    return {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def _unit_of(module: str) -> str:
    """'ragsight.judge._judge' -> 'judge'; 'ragsight.run._evaluate' -> '_evaluate'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else TOP


def _resolve(root: Path, importer: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute module names an ImportFrom refers to (a name may itself be a submodule)."""
    if node.level == 0:
        base = node.module or ""
    else:
        parts = importer.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    if node.module is None:  # from . import x, y: a submodule, or a name of the package
        folder = root.parent.joinpath(*base.split("."))
        return [f"{base}.{a.name}" if (folder / a.name).is_dir() or (folder / f"{a.name}.py").exists()
                else base for a in node.names]
    return [base]


def imports(root: Path = SRC) -> list[tuple[str, str, int]]:
    """(importing module, imported ragsight module, line) for every import of the package."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(root, module, is_package, node)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found += [(module, t, node.lineno) for t in targets if t.split(".")[0] == "ragsight"]
    return found


def violations(found: list[tuple[str, str, int]]) -> list[str]:
    rank = _rank()
    bad = []
    for importer, target, line in found:
        a, b = _unit_of(importer), _unit_of(target)
        # The package's __init__ re-exports; `from .. import __version__` reads the top.
        if a == b or TOP in (a, b):
            continue
        where = f"{importer}:{line} imports {target}"
        if a not in rank or b not in rank:
            bad.append(f"{where}: unit not in the layer list ({a if a not in rank else b})")
            continue
        if rank[b] < rank[a] or (rank[b] == rank[a] and (a, b) not in SIDEWAYS):
            bad.append(f"{where}: upward or sideways import ({a} -> {b})")
        # A private module of another package: ragsight.<pkg>._x
        parts = target.split(".")
        if len(parts) > 2 and parts[2].startswith("_") and (SRC / parts[1]).is_dir():
            bad.append(f"{where}: private module of another package")
    return bad


def test_every_import_points_down_through_init() -> None:
    bad = violations(imports())
    assert not bad, "layering broken:\n" + "\n".join(bad)


def test_every_unit_is_in_the_layer_list() -> None:
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    units.discard(TOP)
    missing = units - set(_rank())
    assert not missing, f"add these to LAYERS in tests/unit/test_layers.py: {sorted(missing)}"


@pytest.mark.parametrize(
    ("file", "source", "expected"),
    [
        # judge sits below metrics: a judge module importing metrics runs up the stack
        ("judge/_bad.py", "from ..metrics import Metric\n", "upward or sideways import (judge -> metrics)"),
        # a metric reaching into the judge's private module
        ("metrics/_bad.py", "from ..judge._judge import Judge\n", "private module of another package"),
        # the old report -> cli arrow
        ("report/_bad.py", "from ..cli import out\n", "upward or sideways import (report -> cli)"),
        # a lower layer importing the orchestrator
        ("_bad.py", "from .run import evaluate\n", "unit not in the layer list (_bad)"),
        ("store/_bad.py", "from ..run import evaluate\n", "upward or sideways import (store -> run)"),
    ],
)
def test_the_check_fails_on_a_deliberately_bad_import(
    tmp_path: Path, file: str, source: str, expected: str
) -> None:
    # A copy of the package with one bad module added: the same check must name it.
    root = tmp_path / "ragsight"
    for path in SRC.rglob("*.py"):
        dest = root / path.relative_to(SRC)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (root / file).write_text(source, encoding="utf-8")
    bad = violations(imports(root))
    assert any(expected in b for b in bad), bad
    clean = violations(imports(SRC))
    assert not clean
