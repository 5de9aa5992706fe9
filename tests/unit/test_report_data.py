"""Runs for the report tests: stored runs with exact scores, and real runs with a scripted judge.

``put_run`` writes a run straight into a store with the values a test states, so comparison and
calibration tests can check hand-computed statistics. ``scripted_runs`` evaluates a small RAG
data set (with hostile HTML in one context) through ``aevaluate`` and the scripted judge, so the
report is checked on real evidence. The tests at the bottom pin these builders down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import ragsight
from ragsight import ClaimVerdict, Evidence, Outcome, Sample, Score, Store
from ragsight.result import load_result
from tests.scripted import RagScript

Value = float | str | None  # a number is scored; "failed:why", "skipped:why", "undetermined:why"


def score_of(metric: str, v: Value, evidence: Evidence | None = None) -> Score:
    if isinstance(v, (int, float)):
        return Score.scored(metric, float(v), f"value {v}", evidence)
    assert isinstance(v, str), v
    outcome, _, why = v.partition(":")
    if outcome == "failed":
        return Score.failed(metric, why)
    if outcome == "skipped":
        return Score.skipped(metric, why)
    return Score.undetermined(metric, why)


def put_run(
    store: Store,
    run_id: str,
    values: Mapping[str, Mapping[str, Value]],
    *,
    metadata: Mapping[str, Any] | None = None,
    samples: Sequence[Mapping[str, Any]] | None = None,
    lower: frozenset[str] = frozenset(),
    created_at: float | None = None,
) -> str:
    """Store a run whose metric ``m`` has value ``values[m][sample_id]`` (missing: no score)."""
    ids: list[str] = []
    for per in values.values():
        ids.extend(sid for sid in per if sid not in ids)
    rows = (
        list(samples)
        if samples is not None
        else [{"id": sid, "question": f"q {sid}"} for sid in ids]
    )
    objs = [
        Sample(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in r.items()}) for r in rows
    ]
    metrics = [{"key": k, "name": k, "params": {}, "lower_is_better": k in lower} for k in values]
    store.create_run(
        run_id,
        dataset="test-data",
        judge="scripted:scripted",
        embedder=None,
        metrics=metrics,
        config={},
        metadata=dict(metadata or {}),
        samples=objs,
    )
    for s in objs:
        scores = [score_of(k, per[s.id]) for k, per in values.items() if s.id in per]
        store.save_sample(run_id, s.id, scores, [])
    store.finish_run(run_id, "completed", {"calls": 0})
    if created_at is not None:
        store.conn.execute("UPDATE runs SET created_at=? WHERE id=?", (created_at, run_id))
    return run_id


# ---------------------------------------------------------------------------------------------
# A small RAG data set, judged by a scripted judge

PY_CONTEXT = "Python was invented by Guido van Rossum and published in 1991."
PY_RESPONSE = (
    "Guido van Rossum invented Python in 1991. "
    "It is the most widely used programming language in the world."
)
PY_CLAIMS = [
    "Guido van Rossum invented Python.",
    "Guido van Rossum published Python in 1991.",
    "Python is the most widely used programming language in the world.",
]
PARIS_CONTEXTS = [
    "Lyon is known for its cuisine and its silk.",
    "France is a country in Europe.\n\nParis is the capital and largest city of France. It hosts the Louvre.",
]
PARIS_RESPONSE = "Paris is the capital of France. Paris has 20 million inhabitants."
PARIS_CLAIMS = ["Paris is the capital of France.", "Paris has 20 million inhabitants."]
HOSTILE_CONTEXT = (
    '<script>document.title="pwned"</script> The script element embeds executable '
    'code in a page. <img src=x onerror="document.body.dataset.pwned=1">'
)
HOSTILE_RESPONSE = "The script element embeds executable code. It runs. </details><b>bold</b>"
HOSTILE_CLAIMS = ["The script element embeds executable code in a page."]

RAG_ROWS: list[dict[str, Any]] = [
    {
        "id": "paris",
        "question": "What is the capital of France?",
        "contexts": PARIS_CONTEXTS,
        "response": PARIS_RESPONSE,
        "reference": "Paris is the capital of France.",
        "metadata": {"topic": "geo"},
    },
    {
        "id": "python",
        "question": "Who invented Python?",
        "contexts": [PY_CONTEXT, "Java appeared in 1995."],
        "response": PY_RESPONSE,
        "reference": "Guido van Rossum created Python.",
    },
    {
        "id": "hostile",
        "question": "What does <script> do?",
        "contexts": [HOSTILE_CONTEXT],
        "response": HOSTILE_RESPONSE,
        "reference": "It embeds code.",
    },
    {
        "id": "hello",
        "question": "Say hello",
        "contexts": ["Greetings are polite."],
        "response": "Hello!",
        "reference": "Hello.",
    },
    {
        "id": "nocontext",
        "question": "Who invented Python?",
        "response": PY_RESPONSE,
        "reference": "Guido van Rossum created Python.",
    },
]


def rag_script(variant: str = "A") -> RagScript:
    """The judge's beliefs. Variant B believes fewer claims and ranks Paris's chunks better."""
    s = RagScript()
    s.claims[PARIS_RESPONSE] = PARIS_CLAIMS
    s.claims[PY_RESPONSE] = PY_CLAIMS
    s.claims[HOSTILE_RESPONSE] = HOSTILE_CLAIMS
    s.claims["Hello!"] = []
    s.verdicts[(PARIS_CLAIMS[0], "contexts")] = True
    s.verdicts[(PARIS_CLAIMS[1], "contexts")] = variant == "A"
    s.verdicts[(PY_CLAIMS[0], "contexts")] = True
    s.verdicts[(PY_CLAIMS[1], "contexts")] = variant == "A"
    s.verdicts[(PY_CLAIMS[2], "contexts")] = False
    s.verdicts[(HOSTILE_CLAIMS[0], "contexts")] = True
    s.chunk_relevance["What is the capital of France?"] = (
        [False, True] if variant == "A" else [True, True]
    )
    s.chunk_relevance["Who invented Python?"] = [True, False]
    s.chunk_relevance["What does <script> do?"] = [True]
    s.chunk_relevance["Say hello"] = [False]
    return s


async def scripted_runs(store: Store, variants: Sequence[str] = ("A", "B")) -> list[str]:
    """Evaluate RAG_ROWS once per variant (faithfulness, context_precision) into ``store``."""
    configs = {
        "A": {"chunk_size": 512, "top_k": 3, "model": "llama3.1:8b"},
        "B": {"chunk_size": 1024, "top_k": 5, "model": "llama3.1:8b"},
        "C": {"chunk_size": 2048, "top_k": 10, "model": "deepseek-r1:7b"},
    }
    ids = []
    for v in variants:
        result = await ragsight.aevaluate(RAG_ROWS, ["faithfulness", "context_precision"],
                                          judge=rag_script("B" if v == "C" else v).judge(), store=store,
                                          metadata=configs[v], run_id=f"run-{v}",
                                          options=ragsight.RunOptions(cache=False))  # B must not reuse A's cached verdicts
        ids.append(result.run_id)
    return ids


# ---------------------------------------------------------------------------------------------
# The builders themselves


def test_put_run_stores_exact_values_and_outcomes() -> None:
    with Store(":memory:") as store:
        put_run(
            store,
            "r1",
            {"faithfulness": {"a": 0.5, "b": "failed:timeout", "c": "skipped:no contexts"}},
            metadata={"chunk_size": 512},
        )
        result = load_result(store, "r1")
        s = result.summary["faithfulness"]
        assert s.mean == 0.5
        assert s.counts == {"scored": 1, "undetermined": 0, "failed": 1, "skipped": 1}
        assert store.run("r1").metadata == {"chunk_size": 512}


async def test_scripted_runs_give_the_expected_scores() -> None:
    with Store(":memory:") as store:
        a, b = scripted_runs_ids = await scripted_runs(store)
        assert scripted_runs_ids == ["run-A", "run-B"]
        ra, rb = load_result(store, a), load_result(store, b)
        assert ra.scores["paris"]["faithfulness"].value == 1.0
        assert rb.scores["paris"]["faithfulness"].value == 0.5
        assert ra.scores["python"]["faithfulness"].value == pytest.approx(2 / 3)
        assert ra.scores["hello"]["faithfulness"].outcome is Outcome.UNDETERMINED
        assert ra.scores["nocontext"]["faithfulness"].outcome is Outcome.SKIPPED
        assert ra.scores["paris"]["context_precision"].value == 0.5
        assert rb.scores["paris"]["context_precision"].value == 1.0
        claims = ra.scores["hostile"]["faithfulness"].evidence.claims
        assert len(claims) == 1
        # The remote-style judge's verdict stands; the deterministic signals ride along.
        assert claims[0] == ClaimVerdict(
            HOSTILE_CLAIMS[0], True, None, "scripted verdict for claim 1", "contexts", claims[0].signals
        )
        assert claims[0].signals["n_content"] > 0
        assert 0.0 <= claims[0].signals["overlap"] <= 1.0
        assert 0.0 < claims[0].signals["p_signals"] < 1.0
