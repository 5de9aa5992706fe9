"""The IR metrics reproduce trec_eval's reference outputs on its own test files, to 4 decimals.

Fixtures (tests/fixtures/trec_eval, see NOTICE there): ``qrels.test`` (graded judgements),
``results.test`` (one run, 3 queries x 500 docs), ``out.test.aq`` (``trec_eval -a -q``, per
query) and ``out.test.a`` (``trec_eval -a``, averaged over queries).

trec_eval ranks each query's results by score descending, ties by doc id descending (not by the
rank column), counts a doc relevant when its grade is >= 1, and evaluates every returned doc
(``num_ret`` is 500 per query: its ``-M`` limit does not cut this run).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from ragsight.metrics._ir import (
    average_precision,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "trec_eval"
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
SUCCESS_CUTOFFS = (1, 5, 10)
_CHECKED = re.compile(r"recip_rank|map|(?:P|recall|ndcg_cut|map_cut|success)_\d+")
_AT_K = re.compile(r"(P|recall|ndcg_cut|map_cut|success)_(\d+)")


@cache
def qrels() -> dict[str, dict[str, float]]:
    """query id -> doc id -> grade."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (FIXTURES / "qrels.test").read_text().splitlines():
        qid, _, doc_id, grade = line.split()
        out[qid][doc_id] = float(grade)
    return dict(out)


@cache
def ranked() -> dict[str, list[str]]:
    """query id -> doc ids in trec_eval's order: score descending, ties by doc id descending."""
    scored: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for line in (FIXTURES / "results.test").read_text().splitlines():
        qid, _, doc_id, _rank, score, _run = line.split()
        scored[qid].append((float(score), doc_id))
    return {qid: [doc for _, doc in sorted(pairs, reverse=True)] for qid, pairs in scored.items()}


@cache
def expected(name: str) -> dict[tuple[str, str], str]:
    """(measure, query id or 'all') -> the value as trec_eval printed it."""
    out: dict[tuple[str, str], str] = {}
    for line in (FIXTURES / name).read_text().splitlines():
        measure, qid, value = line.split()
        out[(measure, qid)] = value
    return out


def evaluated_queries() -> list[str]:
    """trec_eval evaluates the queries that have both results and judgements."""
    return sorted(set(ranked()) & set(qrels()))


def compute(measure: str, qid: str) -> float:
    """Our value of a trec_eval measure for one query."""
    docs, grades = ranked()[qid], qrels()[qid]
    value: float | None
    if measure == "recip_rank":
        value = reciprocal_rank(docs, grades)
    elif measure == "map":
        value = average_precision(docs, grades)
    else:
        match = _AT_K.fullmatch(measure)
        assert match is not None, measure
        family, k = match.group(1), int(match.group(2))
        if family == "P":
            value = precision_at_k(docs, grades, k)
        elif family == "recall":
            value = recall_at_k(docs, grades, k)
        elif family == "ndcg_cut":
            value = ndcg_at_k(docs, grades, k)
        elif family == "map_cut":
            value = average_precision(docs, grades, k)
        else:
            value = hit_rate_at_k(docs, grades, k)
    assert value is not None, f"{measure} undetermined for query {qid}"
    return value


def _checked(name: str, per_query: bool) -> list[tuple[str, str]]:
    return sorted(
        (measure, qid)
        for measure, qid in expected(name)
        if _CHECKED.fullmatch(measure) and (qid != "all") == per_query
    )


PER_QUERY = _checked("out.test.aq", per_query=True)
AVERAGED = _checked("out.test.a", per_query=False)


def test_the_fixtures_hold_every_checked_measure() -> None:
    wanted = {"recip_rank", "map"}
    for family in ("P", "recall", "ndcg_cut", "map_cut"):
        wanted |= {f"{family}_{k}" for k in CUTOFFS}
    wanted |= {f"success_{k}" for k in SUCCESS_CUTOFFS}
    assert evaluated_queries() == ["301", "302", "303"]
    assert {(m, q) for m in wanted for q in evaluated_queries()} == set(PER_QUERY)
    assert {(m, "all") for m in wanted} == set(AVERAGED)


@pytest.mark.parametrize(("measure", "qid"), PER_QUERY, ids=[f"{q}-{m}" for m, q in PER_QUERY])
def test_per_query_value_matches_trec_eval(measure: str, qid: str) -> None:
    assert f"{compute(measure, qid):.4f}" == expected("out.test.aq")[(measure, qid)]


@pytest.mark.parametrize("measure", [m for m, _ in AVERAGED])
def test_mean_over_queries_matches_trec_eval(measure: str) -> None:
    queries = evaluated_queries()
    assert int(expected("out.test.a")[("num_q", "all")]) == len(queries)
    mean = sum(compute(measure, qid) for qid in queries) / len(queries)
    assert f"{mean:.4f}" == expected("out.test.a")[(measure, "all")]


@pytest.mark.parametrize("qid", ["301", "302", "303"])
def test_every_returned_doc_is_evaluated(qid: str) -> None:
    # num_ret equals the whole list: trec_eval's -M limit does not truncate this run, so map and
    # recip_rank are computed over all 500 docs, as ours are.
    out = expected("out.test.aq")
    assert int(out[("num_ret", qid)]) == len(ranked()[qid]) == 500
    grades = qrels()[qid]
    num_rel = sum(1 for g in grades.values() if g >= 1)
    assert int(out[("num_rel", qid)]) == num_rel
    recall_all = recall_at_k(ranked()[qid], grades, len(ranked()[qid]))
    assert recall_all is not None
    assert round(recall_all * num_rel) == int(out[("num_rel_ret", qid)])


@pytest.mark.parametrize("qid", ["301", "302", "303"])
def test_ranking_order_matches_trec_eval_relstring(qid: str) -> None:
    # relstring: the grade of each of the top 10 docs ('-' when not judged); it pins the order.
    # (The run has tied scores, but on this run neither tie rule changes a checked value.)
    grades = qrels()[qid]
    top = ranked()[qid][:10]
    got = "".join(str(int(grades[d])) if d in grades else "-" for d in top)
    assert f"'{got}'" == expected("out.test.aq")[("relstring", qid)]
