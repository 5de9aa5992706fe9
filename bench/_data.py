"""The bench scripts' data: the metric suites, JSONL files read into rows, the kit's airline
samples copied so that no copy shares a text (or a judge step) with another, and figures written
out as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# the suites the kit's comparisons run: the four core metrics, and those with the other three of
# the ragas baseline
CORE4 = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]
SEVEN = [*CORE4, "factual_correctness", "noise_sensitivity", "context_entity_recall"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One row a non-blank line of ``path`` (UTF-8)."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def marked_copy(row: dict[str, Any], i: int) -> dict[str, Any]:
    """``row`` with " (case i)" in its question, contexts, response and reference."""
    r = dict(row)
    tag = f" (case {i})"
    r["user_input"] = r["user_input"] + tag
    r["retrieved_contexts"] = [c + tag for c in r["retrieved_contexts"]]
    r["response"] = r["response"].rstrip(".") + tag + "."
    r["reference"] = r["reference"].rstrip(".") + tag + "."
    return r


def write_json(path: Path | None, figures: Any, say: bool = False) -> None:
    """Write ``figures`` to ``path`` as indented JSON (nothing when ``path`` is None); with
    ``say``, print where."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1, default=str))
    if say:
        print(f"\nfigures written to {path}")
