"""`ragsight compare` at small n, from the command line as the docs show it: the interval and the
verdict a person reads must not contradict each other.

The new-user trial compared 14 pairs of which 4 differed: the percentile bootstrap printed a CI
excluding 0 next to p = 0.125 and "no significant difference". The CI now inverts the same
permutation test, so with one comparison (Holm changes nothing) "0 inside the CI" and "no
significant difference" are one statement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragsight.cli import main
from ragsight.store import Store

CI = re.compile(r"\[([+-]\d+\.\d+), ([+-]\d+\.\d+)\]")


def write_run(path: Path, changed: set[int]) -> Path:
    rows = []
    for i in range(14):
        reference = f"The depot on street {i} opens at nine and closes at five."
        rows.append({"id": f"q{i}", "question": f"When does depot {i} open?",
                     "response": "I do not know." if i in changed else reference,
                     "reference": reference})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("n_changed", "significant"), [(3, False), (4, False), (10, True)])
def test_interval_and_verdict_agree_on_14_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n_changed: int, significant: bool
) -> None:
    store = tmp_path / "runs.db"
    for name, changed in (("a", set()), ("b", set(range(n_changed)))):
        assert main(["evaluate", str(write_run(tmp_path / f"{name}.jsonl", changed)),
                     "--metrics", "token_f1", "--store", str(store)]) == 0
    with Store(str(store)) as st:
        run_b, run_a = (r.id for r in st.runs())  # newest first
    capsys.readouterr()

    assert main(["compare", run_a, run_b, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "unadjusted 95% CI" in out
    row = next(line for line in out.splitlines() if re.match(r"\W*token_f1\W+B\W", line))
    assert "14/14" in row
    match = CI.search(row)
    assert match, row
    low, high = float(match[1]), float(match[2])
    verdict = next(line for line in out.splitlines() if "token_f1 ↑ B vs A" in line)
    if significant:
        # 10 of 14 lower, all by 1: p = 2 / 2**10 (exact), and the interval lies below 0.
        assert "A is better (p=0.002)" in verdict, verdict
        assert high < 0, row
    else:
        # 3 or 4 differing pairs: p = 2 / 2**3 or 2 / 2**4; the interval reaches 0.
        p = {3: "0.25", 4: "0.12"}[n_changed]
        assert f"no significant difference (p={p})" in verdict, verdict
        assert low < 0 <= high, row
    assert "Note:" not in out  # nothing that could be read as a contradiction needs explaining


def write_ragas_csv(path: Path, n: int, changed: set[int], order: list[int]) -> Path:
    """n rows as pandas writes a ragas 0.2 EvaluationDataset (``to_pandas().to_csv(index=False)``):
    no id, the contexts a Python list literal; the rows in ``order``."""
    pd = pytest.importorskip("pandas")
    rows = []
    for i in order:
        reference = f"The depot on street {i} opens at nine and closes at five."
        rows.append({"user_input": f"When does the depot on street {i} open?",
                     "retrieved_contexts": [reference],
                     "response": "I do not know." if i in changed else reference,
                     "reference": reference})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def compare_two(tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int) -> str:
    store = tmp_path / "runs.db"
    order = list(range(n))
    a = write_ragas_csv(tmp_path / "a.csv", n, set(), order)
    # The second configuration changes half the answers (all for the worse) and reorders rows.
    b = write_ragas_csv(tmp_path / "b.csv", n, set(range(0, n, 2)), order[::-1])
    for path in (a, b):
        assert main(["evaluate", str(path), "--metrics", "token_f1,exact_match",
                     "--store", str(store)]) == 0
    with Store(str(store)) as st:
        run_b, run_a = (r.id for r in st.runs())  # newest first
    capsys.readouterr()
    assert main(["compare", run_a, run_b, "--store", str(store)]) == 0
    return capsys.readouterr().out


def test_a_comparison_too_small_to_find_anything_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """6 pairs, 2 metrics: the smallest p is 2/2^6 = 0.031, Holm doubles it to 0.062, so no
    verdict could say "better" whatever the answers. The new-user trial read "no significant
    difference" on every metric with nothing telling it that the experiment could not have
    found one."""
    out = compare_two(tmp_path, capsys, 6)
    assert "Pairing: 6 of 6 samples paired" in out  # reordered, id-less rows pair by question
    verdict = next(line for line in out.splitlines() if "token_f1 ↑ B vs A" in line)
    assert "(1.000 → 0.500): no significant difference" in verdict, verdict
    prose = " ".join(out.split())
    assert ("Note: no difference here could have been called significant, whatever the scores: "
            "with 6 pairs the smallest possible p is 2/2^6 = 0.0312, and Holm's adjustment "
            "over 2 comparisons makes it 0.0625, not below 0.05.") in prose, out
    assert "at least 7 paired samples" in prose


def test_a_comparison_that_could_find_a_difference_has_no_such_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = compare_two(tmp_path, capsys, 8)
    assert "Pairing: 8 of 8 samples paired" in out
    assert "could have been called significant" not in out
