"""Property-based tests: loaders round-trip, unknown fields land in metadata, ids are stable and
unique; metric arithmetic stays in range and moves the right way; the truncation policy keeps
within its budget."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ragsight
from ragsight.calls._budget import fit_texts, marker, truncate_text
from ragsight.metrics.context_precision import average_precision_of
from ragsight.metrics.factual_correctness import f_beta
from ragsight.sample import FIELD_ALIASES, Dataset, Sample
from tests.scripted import RagScript

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOWER = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ALIASES = {a.strip().lower() for names in FIELD_ALIASES.values() for a in names}
text = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
ident = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=12).filter(
    lambda s: s.strip() != "")


@st.composite
def records(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(ident, min_size=n, max_size=n, unique=True))
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"id": ids[i]}
        if draw(st.booleans()):
            row["question"] = draw(text)
        if draw(st.booleans()):
            row["contexts"] = draw(st.lists(text, min_size=1, max_size=3))
        if draw(st.booleans()) or len(row) == 1:
            row["response"] = draw(text)
        if draw(st.booleans()):
            # (a reference text that reads as a list literal, '["a" "b"]', is a list of answers by
            # the documented rule, not one text: the CSV writer below would wrap it as one)
            row["reference"] = draw(text.filter(lambda s: not s.strip().startswith("[")))
        rows.append(row)
    return rows


def to_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def to_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    """As a careful writer writes it: lists (and the reference) as JSON arrays in their cells."""
    fields = ["id", "question", "contexts", "response", "reference"]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    for r in rows:
        w.writerow({
            "id": r["id"], "question": r.get("question", ""), "response": r.get("response", ""),
            "contexts": json.dumps(r["contexts"], ensure_ascii=False) if "contexts" in r else "",
            "reference": json.dumps([r["reference"]], ensure_ascii=False) if "reference" in r else "",
        })
    path.write_bytes(buf.getvalue().encode("utf-8"))
    return path


def canonical(sample: Sample) -> dict[str, Any]:
    return sample.to_dict()


@FAST
@given(rows=records())
def test_records_round_trip_through_jsonl_and_csv(rows: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> None:
    d = tmp_path_factory.mktemp("rt")
    direct = Dataset.from_records(rows)
    assert not direct.problems
    from_jsonl = Dataset.load(to_jsonl(rows, d / "d.jsonl"))
    from_csv = Dataset.load(to_csv(rows, d / "d.csv"))
    expected = [canonical(s) for s in direct.samples]
    assert [canonical(s) for s in from_jsonl.samples] == expected
    assert [canonical(s) for s in from_csv.samples] == expected
    assert [s.id for s in direct.samples] == [r["id"].strip() for r in rows]


@FAST
@given(rows=records(), extra=st.dictionaries(
    st.text(min_size=1, max_size=15).filter(lambda k: k.strip().lower() not in ALIASES and k.strip() != ""),
    st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none(), st.lists(st.integers(), max_size=3)),
    min_size=1, max_size=4))
def test_unknown_fields_go_to_metadata(rows: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    rows = [{**r, **extra} for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-miss names warn "did you mean"
        ds = Dataset.from_records(rows)
    assert len(ds.samples) == len(rows)
    for s in ds.samples:
        for k, v in extra.items():
            assert s.metadata[k] == v


@FAST
@given(contents=st.lists(st.tuples(text, text), min_size=1, max_size=8))
def test_content_ids_are_stable_and_unique(contents: list[tuple[str, str]]) -> None:
    rows = [{"question": q, "response": r} for q, r in contents]
    first = Dataset.from_records(rows).ids()
    again = Dataset.from_records([dict(r) for r in rows]).ids()
    assert first == again
    assert len(set(first)) == len(first)
    # an id depends on the row's content, not on its neighbours
    alone = Dataset.from_records(rows[:1]).ids()
    assert alone[0] == first[0]


# -- metric arithmetic ----------------------------------------------------------------------------


def faithfulness_of(verdicts: list[bool]) -> Any:
    response = " ".join(f"Fact {i}." for i in range(len(verdicts)))
    claims = [f"Fact {i} holds." for i in range(len(verdicts))]
    script = RagScript(claims={response: claims})
    for c, ok in zip(claims, verdicts):
        script.verdicts[(c, "contexts")] = ok
    result = ragsight.evaluate([{"id": "x", "contexts": ["ctx"], "response": response}], ["faithfulness"],
                               judge=script.judge())
    return result.scores["x"]["faithfulness"]


@SLOWER
@given(verdicts=st.lists(st.booleans(), min_size=1, max_size=10), data=st.data())
def test_faithfulness_is_in_range_and_rises_with_supported_claims(verdicts: list[bool], data: Any) -> None:
    score = faithfulness_of(verdicts)
    assert 0.0 <= score.value <= 1.0
    assert score.value == pytest.approx(sum(verdicts) / len(verdicts))
    assert len(score.evidence.claims) == len(verdicts)
    unsupported = [i for i, v in enumerate(verdicts) if not v]
    assume(unsupported)
    i = data.draw(st.sampled_from(unsupported))
    better = list(verdicts)
    better[i] = True
    assert faithfulness_of(better).value > score.value


@FAST
@given(relevant=st.lists(st.booleans(), min_size=1, max_size=12), data=st.data())
def test_context_precision_rewards_moving_a_relevant_chunk_up(relevant: list[bool], data: Any) -> None:
    value = average_precision_of(relevant)
    assert 0.0 <= value <= 1.0
    if not any(relevant):
        assert value == 0.0
    if all(relevant):
        assert value == pytest.approx(1.0)
    pairs = [(i, j) for j in range(len(relevant)) for i in range(j) if relevant[j] and not relevant[i]]
    assume(pairs)
    i, j = data.draw(st.sampled_from(pairs))
    moved = list(relevant)
    moved[i], moved[j] = moved[j], moved[i]  # the relevant chunk at j moves up to i
    assert average_precision_of(moved) > value - 1e-12
    assert average_precision_of(moved) > value  # strictly: it now ranks above an irrelevant one


@FAST
@given(tp=st.integers(0, 20), fp=st.integers(0, 20), fn=st.integers(0, 20),
       beta=st.floats(0.1, 5.0, allow_nan=False))
def test_factual_correctness_arithmetic(tp: int, fp: int, fn: int, beta: float) -> None:
    f1 = f_beta(tp, fp, fn, 1.0)
    if tp + fp + fn == 0:
        assert f1 is None
        return
    assert f1 is not None and 0.0 <= f1 <= 1.0
    # F1 is symmetric: swapping the response and the reference swaps FP and FN
    assert f_beta(tp, fn, fp, 1.0) == pytest.approx(f1)
    # and equals TP / (TP + (FP + FN) / 2), as the spec says
    assert f1 == pytest.approx(tp / (tp + 0.5 * (fp + fn)) if tp else 0.0)
    fb = f_beta(tp, fp, fn, beta)
    assert fb is not None and 0.0 <= fb <= 1.0 + 1e-12
    # F-beta swaps into F-(1/beta) when precision and recall trade places
    assert f_beta(tp, fn, fp, 1 / beta) == pytest.approx(fb)


@SLOWER
@given(shared=st.integers(0, 4), only_resp=st.integers(0, 3), only_ref=st.integers(0, 3))
def test_factual_correctness_f1_is_symmetric_end_to_end(shared: int, only_resp: int, only_ref: int) -> None:
    assume(shared + only_resp + only_ref > 0)
    resp_claims = [f"Shared fact {i}." for i in range(shared)] + [f"Response fact {i}." for i in range(only_resp)]
    ref_claims = [f"Shared fact {i}." for i in range(shared)] + [f"Reference fact {i}." for i in range(only_ref)]
    # each text holds its claims' words: a claim the response does not contain is dropped as
    # invented, which would make the two directions differ for a reason of the script
    a, b = " ".join(resp_claims) or "Nothing here.", " ".join(ref_claims) or "Nothing there."
    script = RagScript(claims={a: resp_claims, b: ref_claims})
    for c in set(resp_claims) | set(ref_claims):
        script.verdicts[(c, "reference")] = c.startswith("Shared")
        script.verdicts[(c, "response")] = c.startswith("Shared")
    result = ragsight.evaluate([{"id": "ab", "response": a, "reference": b},
                                {"id": "ba", "response": b, "reference": a}],
                               ["factual_correctness"], judge=script.judge())
    ab = result.scores["ab"]["factual_correctness"]
    ba = result.scores["ba"]["factual_correctness"]
    assert ab.outcome == ba.outcome
    assert ab.value == pytest.approx(ba.value)


# -- the truncation policy ------------------------------------------------------------------------


def count(t: str) -> int:
    return -(-len(t) // 4)


@FAST
@given(sizes=st.lists(st.integers(1, 4000), min_size=1, max_size=6), budget=st.integers(200, 6000))
def test_fit_texts_keeps_within_budget_and_cuts_the_longest_first(sizes: list[int], budget: int) -> None:
    texts = [" ".join(f"w{i}x{k}" for k in range(n)) for i, n in enumerate(sizes)]
    out, notes = fit_texts(texts, budget, count, field="contexts", window=budget + 1000)
    before = [count(t) for t in texts]
    after = [count(t) for t in out]
    if sum(before) <= budget:
        assert out == texts and notes == []
        return
    assert sum(after) <= budget + 16 * len(texts)  # the markers' own few tokens
    cut = {int(n.field.split("[")[1].rstrip("]")) - 1 for n in notes} if len(texts) > 1 else {0}
    for i in range(len(texts)):
        if i in cut:
            assert "[... truncated " in out[i]
            # a cut text was at least as long as every text kept whole
            assert all(before[i] >= before[j] for j in range(len(texts)) if j not in cut)
        else:
            assert out[i] == texts[i]
    for n in notes:
        assert n.tokens > n.kept and n.cut == n.tokens - n.kept


def test_truncate_keeps_head_and_tail_and_says_how_much() -> None:
    words = [f"word{i}" for i in range(4000)]
    text = " ".join(words)
    out, before, kept = truncate_text(text, 400, count)
    assert out.startswith("word0 word1 ")
    assert out.endswith("word3999")
    assert f"[... truncated {before - kept} tokens ...]" in out
    head, tail = out.split(f"\n{marker(before - kept)}\n")
    assert count(head) > 2 * count(tail)  # three quarters head, one quarter tail
    assert kept <= 400


def test_window_defaults_when_the_judge_states_none() -> None:
    from ragsight.calls._budget import DEFAULT_WINDOW, fit_for_judge

    class P:
        context_window: int | None = None

        def count_tokens(self, t: str) -> int:
            return count(t)

    long = "x " * (DEFAULT_WINDOW * 3)
    record: list[Any] = []
    (out,) = fit_for_judge(P(), [long], field="response", output_tokens=100, record=record)
    assert count(out) < DEFAULT_WINDOW
    assert record[0].window == DEFAULT_WINDOW and record[0].field == "response"
    P.context_window = 4096  # the embedded judge's n_ctx
    record.clear()
    (out,) = fit_for_judge(P(), [long], field="response", output_tokens=100, record=record)
    assert count(out) <= 4096 - 100
    assert record[0].window == 4096
