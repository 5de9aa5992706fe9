"""ragsight.diagnose: the planted samples of tests/diagnose_world.py, each failing for one reason,
are given that reason as their primary cause, with the exact claims, chunks and calls that show
it; the counts, CIs, topics, thresholds, missing metrics and the change between two runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ragsight
from ragsight import EvaluationResult, Store
from ragsight.diagnosis import (
    CAUSES,
    UNDIAGNOSED,
    Diagnosis,
    EvidenceItem,
    UnpairedRunsError,
    change_lines,
    cluster,
    diagnose,
    diagnose_change,
    diagnosis_lines,
    name_topics,
    parse_thresholds,
)
from ragsight.errors import ConfigError
from ragsight.result import load_result
from tests.diagnose_world import (
    BIKES,
    BOOKS,
    FEES,
    METRICS,
    OPENED,
    PLANTED,
    ROWS,
    STATION,
    SUNDAYS,
    TOOL_ROW,
    provider,
    row,
)
from tests.fakes.embedder import TableEmbedder


def evaluate(rows: list[dict[str, Any]], metrics: list[str] = METRICS, store: str = ":memory:") -> EvaluationResult:
    return ragsight.evaluate(rows, metrics, judge=provider(), store=store,
                             options=ragsight.RunOptions(show_progress=False))


@pytest.fixture(scope="module")
def result() -> EvaluationResult:
    return evaluate([*ROWS, TOOL_ROW])


@pytest.fixture(scope="module")
def diagnosis(result: EvaluationResult) -> Diagnosis:
    return diagnose(result, topics=False)


def items(d: Diagnosis, sid: str, cause: str | None = None) -> list[tuple[Any, ...]]:
    s = d.sample(sid)
    assert s is not None, f"{sid} is not diagnosed"
    f = next(f for f in s.findings if f.cause == (cause or s.primary))
    return [(i.kind, i.text, i.metric, i.chunk, i.quote) for i in f.evidence]


def test_every_planted_sample_gets_its_cause_as_primary(diagnosis: Diagnosis) -> None:
    got = {s.sample_id: s.primary for s in diagnosis.samples}
    assert got == PLANTED  # and "ok", "d-fine" (an out-of-scope question declined) fail nothing
    assert diagnosis.n_samples == len(ROWS) + 1  # the tool turn (its conversation has no metric of its level)


def test_retrieval_names_the_missed_claim_and_the_irrelevant_chunks(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "r-miss") == [
        ("missed", "Ada Moss designed the Larkspur library.", "context_recall", None, ""),
        ("no_relevant_chunk", "2", "context_precision", None, "")]
    s = diagnosis.sample("r-miss")
    assert s is not None and s.causes == ("retrieval", "unsupported")
    [silent] = s.findings[1].evidence
    assert (silent.kind, silent.note) == ("silent", "the reference agrees: knowledge from outside the chunks")
    # both are strong (context_recall 0, faithfulness 0): the one with more evidence is primary
    assert [(f.explains, f.strong) for f in s.findings] == [(("context_recall", "context_precision"), True),
                                                           (("faithfulness",), True)]


def test_retrieval_names_the_needed_chunk_ranked_low(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "r-rank") == [("ranked_low", OPENED, "context_precision", 3, "")]
    s = diagnosis.sample("r-rank")
    assert s is not None and s.findings[0].evidence[0].note == "rank 3 of 3"
    assert s.findings[0].evidence[0].line() == f"the first relevant chunk ranks low: {OPENED} (rank 3 of 3)"


def test_unsupported_tells_contradicted_from_silent(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "u-contra") == [
        ("contradicted", "The Larkspur library opened in 1990.", "faithfulness", 1, OPENED)]
    assert items(diagnosis, "u-contra", "incomplete") == [("left_out", OPENED, "factual_correctness", None, "")]
    assert items(diagnosis, "u-silent") == [
        ("silent", "It also hosts chess nights every Friday.", "faithfulness", None, ""),
        ("silent", "A rooftop cafe serves coffee.", "faithfulness", None, "")]
    contra = diagnosis.sample("u-contra")
    assert contra is not None
    assert contra.findings[0].evidence[0].line() == (
        f'"The Larkspur library opened in 1990." - the chunks say otherwise: "{OPENED}" (chunk 1)')


def test_noise_names_the_irrelevant_chunk_it_came_from(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "n-irr") == [("irrelevant_chunk", STATION, "noise_sensitivity", 2, STATION)]
    s = diagnosis.sample("n-irr")
    assert s is not None and s.causes == ("noise", "incomplete")


def test_incomplete_lists_what_the_chunks_hold_and_the_response_leaves_out(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "i-left") == [("left_out", c, "factual_correctness", None, "")
                                          for c in (BOOKS, SUNDAYS, FEES)]


def test_decline_where_the_chunks_answer_and_an_answer_out_of_scope(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "d-wrong") == [("wrong_decline", OPENED, "context_recall", None, "")]
    s = diagnosis.sample("d-wrong")
    assert s is not None
    assert s.findings[0].evidence[0].note == "seen by abstention: decline phrases \"I don't know\", \"do not say\""
    # faithfulness has no value because the response declines: the decline explains it, not the judge
    assert "judge" not in s.causes
    assert s.failing[0].describe() == "faithfulness undetermined by a decline"
    assert items(diagnosis, "d-oos") == [
        ("answered_out_of_scope", "The library rents boats every summer.", "abstention", None, "")]


def test_tool_names_the_call_and_argument_that_differ(diagnosis: Diagnosis) -> None:
    assert items(diagnosis, "t-call:0") == [
        ("arguments", 'call book_bike(day="Saturday") differs from the expected book_bike(day="Friday") in day',
         "tool_call_accuracy", None, "")]


def test_judge_lists_the_steps_that_failed(diagnosis: Diagnosis) -> None:
    got = items(diagnosis, "j-fail")
    assert [(k, m) for k, _, m, _, _ in got] == [("failed", "faithfulness"), ("failed", "context_recall"),
                                                ("failed", "factual_correctness"), ("failed", "noise_sensitivity")]
    assert got[0][1].startswith("faithfulness failed: judge step verify_claims failed")


def test_counts_have_seeded_bootstrap_cis_and_are_ordered_by_count(result: EvaluationResult,
                                                                   diagnosis: Diagnosis) -> None:
    counts = {c.cause: c.count for c in diagnosis.causes}
    assert counts == {"retrieval": 2, "unsupported": 2, "decline": 2, "noise": 1, "incomplete": 1, "tool": 1,
                      "judge": 1}
    assert [c.count for c in diagnosis.causes] == sorted((c.count for c in diagnosis.causes), reverse=True)
    assert [c.cause for c in diagnosis.causes][:3] == ["decline", "retrieval", "unsupported"]  # ties: upstream first
    n = diagnosis.n_samples
    for c in diagnosis.causes:
        assert c.ci_low is not None and c.ci_high is not None
        assert 0 <= c.ci_low <= c.count <= c.ci_high <= n
    assert diagnosis.cause("incomplete") is not None and diagnosis.cause("incomplete").secondary == 3  # type: ignore[union-attr]
    again = diagnose(result, topics=False)
    assert again.to_dict() == diagnosis.to_dict()  # seeded: the same numbers every time
    other = diagnose(result, topics=False, seed=7)
    assert [c.count for c in other.causes] == [c.count for c in diagnosis.causes]


def test_thresholds_change_what_fails_and_are_checked(result: EvaluationResult) -> None:
    loose = diagnose(result, topics=False, thresholds={"context_precision": 0.2})
    assert loose.sample("r-rank") is None  # 0.33 passes at 0.2
    assert loose.thresholds["context_precision"].default is False
    strict = diagnose(result, topics=False, thresholds={"faithfulness": 1.0})
    assert strict.sample("ok") is None and strict.thresholds["faithfulness"].describe() == "below 1"
    assert parse_thresholds(["factual_correctness(mode=recall)=0.6", "faithfulness=0.8"]) == {
        "factual_correctness(mode=recall)": 0.6, "faithfulness": 0.8}
    with pytest.raises(ConfigError, match="has no metric 'faithfullness' \\(did you mean 'faithfulness'\\?\\)"):
        diagnose(result, topics=False, thresholds={"faithfullness": 0.5})
    with pytest.raises(ConfigError, match="between 0 and 1"):
        diagnose(result, topics=False, thresholds={"faithfulness": 80})
    with pytest.raises(ConfigError, match="METRIC=VALUE"):
        parse_thresholds(["faithfulness"])


def test_what_the_run_lacks_is_named_instead_of_guessed() -> None:
    run = evaluate([r for r in ROWS if r["id"] in ("i-left", "u-contra")], ["factual_correctness"])
    d = diagnose(run, topics=False)
    assert {s.sample_id: s.primary for s in d.samples} == {"u-contra": UNDIAGNOSED, "i-left": UNDIAGNOSED}
    s = d.sample("i-left")
    assert s is not None and "context_recall" in s.needs
    assert s.notes[0] == ("3 reference claims left out of the response: run context_recall to tell retrieval "
                          "misses from incomplete answers")
    assert {u.cause for u in d.unmeasured} == {"retrieval", "unsupported", "noise", "incomplete", "decline"}
    hints = {u.cause: u.hint for u in d.unmeasured}
    assert hints["noise"] == "run noise_sensitivity to find wrong claims taken from irrelevant chunks"
    text = "\n".join(diagnosis_lines(d))
    assert "undiagnosed (2 samples)" in text and "Not measured in this run:" in text


def test_noise_without_noise_sensitivity_says_the_chunk_is_not_named() -> None:
    run = evaluate([r for r in ROWS if r["id"] == "n-irr"], ["faithfulness", "factual_correctness"])
    [s] = diagnose(run, topics=False).samples
    assert s.primary == "noise"
    assert [(i.kind, i.text) for i in s.findings[0].evidence] == [("from_chunks", STATION)]
    assert "run noise_sensitivity to name the chunk a wrong claim came from" in s.notes


def test_a_lazy_result_read_from_the_store_is_diagnosed_alike(tmp_path: Path, diagnosis: Diagnosis) -> None:
    path = str(tmp_path / "runs.db")
    run = evaluate([*ROWS, TOOL_ROW], store=path)
    with Store(path) as store:
        lazy = load_result(store, run.run_id, lazy=True)
        assert lazy.lazy
        d = diagnose(lazy, topics=False)
    assert {s.sample_id: (s.primary, s.findings[0].evidence) for s in d.samples} == {
        s.sample_id: (s.primary, s.findings[0].evidence) for s in diagnosis.samples}


def test_topics_group_the_failing_questions_and_name_them() -> None:
    texts = ["How do I return a bicycle?", "Can I return a bicycle late?", "What does a bicycle return cost?",
             "When does the library open?", "Is the library open on Sunday?", "What are the library opening hours?"]
    vectors = np.array([[1.0, 0.1], [0.9, 0.2], [1.0, 0.0], [0.1, 1.0], [0.0, 0.9], [0.2, 1.0]])
    labels = cluster(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), 2)
    assert labels == [0, 0, 0, 1, 1, 1]
    assert name_topics(texts, labels) == [("bicycle", "return", "cost"), ("library", "open", "hours")]


def test_topics_of_a_run_cover_every_failing_sample(result: EvaluationResult) -> None:
    d = diagnose(result, embedder="words")
    assert d.topic_method.startswith("words")
    assert sorted(s for t in d.topics for s in t.samples) == sorted(s.sample_id for s in d.samples)
    for c in d.causes:
        assert sum(len(g.samples) for g in c.topics) == c.count
        assert all(g.example in g.samples for g in c.topics)
    assert diagnose(result, embedder="words").to_dict() == d.to_dict()
    table = TableEmbedder(dim=8)  # an embedder given: its vectors group the questions
    with_table = diagnose(result, embedder=table)
    assert with_table.topic_method == "embeddings (test:table)" and table.calls


def test_the_change_between_two_runs_is_paired_by_sample() -> None:
    before = evaluate(ROWS)
    fixed = {"r-rank": row("r-rank", "When did the Larkspur library open?", [OPENED, BIKES, BOOKS], OPENED, OPENED),
             "u-contra": row("u-contra", "When did the Larkspur library open?", [OPENED, BIKES], OPENED, OPENED),
             "ok": row("ok", "When did the Larkspur library open?", [OPENED, BIKES],
                       "The Larkspur library opened in 1990.", OPENED)}
    after = evaluate([fixed.get(r["id"], r) for r in ROWS])
    change = diagnose_change(diagnose(before, topics=False), diagnose(after, topics=False))
    assert not change.partial and change.paired == len(ROWS)
    by = {c.cause: c for c in change.causes}
    assert (by["retrieval"].before, by["retrieval"].after, by["retrieval"].fixed, by["retrieval"].introduced) \
        == (2, 1, 1, 0)
    assert (by["unsupported"].before, by["unsupported"].after, by["unsupported"].fixed,
            by["unsupported"].introduced) == (2, 2, 1, 1)
    assert {(s.sample_id, s.before, s.after) for s in change.changed} == {
        ("r-rank", "retrieval", "passing"), ("u-contra", "unsupported", "passing"), ("ok", "passing", "unsupported")}
    assert (change.now_passing, change.now_failing) == (2, 1)
    r = by["retrieval"]  # one sample of eleven changed: no evidence of a change, by the paired test
    assert r.p_value == 1.0 and r.ci_low is not None and r.ci_high is not None and r.ci_low <= r.diff <= r.ci_high
    text = "\n".join(change_lines(change))
    assert "Pairing: 11 of 11 samples paired" in text and "r-rank: retrieval -> passing" in text


def test_poor_pairing_is_refused_unless_asked_for(result: EvaluationResult) -> None:
    few = evaluate([r for r in ROWS if r["id"] in ("r-miss", "ok")])
    a, b = diagnose(result, topics=False), diagnose(few, topics=False)
    # each level on its own, the worst first: the conversation and its turn pair not at all
    with pytest.raises(UnpairedRunsError, match="share too few turns, conversations and samples to compare"):
        diagnose_change(a, b)
    change = diagnose_change(a, b, allow_poor_pairing=True)
    assert change.poor and change.paired == 2 and change.share == 0.0
    assert change_lines(change)[1].startswith(
        "WARNING: only 0 of 1 turn (0%), 0 of 1 conversation (0%), 2 of 11 samples (18%) paired")
    assert [(lv["unit"], lv["paired"], lv["share"]) for lv in change.to_dict()["pairing"]["levels"]] == [
        ("sample", 2, 2 / 11), ("turn", 0, 0.0), ("conversation", 0, 0.0)]


def test_text_and_json_forms(diagnosis: Diagnosis) -> None:
    lines = diagnosis_lines(diagnosis)
    assert lines[0].startswith(f"Run {diagnosis.run_id}: 10 of 12 samples fail (a metric below 0.5: faithfulness")
    text = "\n".join(lines)
    assert '  e.g. r-miss "Who designed the Larkspur library?"' in text
    assert '    reference claim in no retrieved chunk: "Ada Moss designed the Larkspur library." [context_recall]' \
        in text
    d = json.loads(json.dumps(diagnosis.to_dict(), allow_nan=False))
    assert list(d) == ["format", "run_id", "samples", "failing", "thresholds", "causes", "not_measured", "topics",
                       "by_sample", "passing_with_unsupported_claims", "seed"]
    assert list(d["causes"][0]) == ["cause", "meaning", "count", "ci95", "share", "secondary", "kinds", "example",
                                    "topics"]
    sample = next(s for s in d["by_sample"] if s["id"] == "u-contra")
    assert list(sample) == ["id", "question", "failing", "primary", "findings", "needs", "notes", "topic"]
    assert [f["role"] for f in sample["findings"]] == ["primary", "secondary"]
    assert list(sample["findings"][0]["evidence"][0]) == ["kind", "text", "metric", "chunk", "quote", "note", "line"]
    assert set(CAUSES) >= {c["cause"] for c in d["causes"]}


def test_an_evidence_item_reads_as_one_line() -> None:
    item = EvidenceItem("contradicted", "The hall opened in 1990.", "faithfulness", 2, "The hall opened in 1987.")
    assert item.line() == '"The hall opened in 1990." - the chunks say otherwise: "The hall opened in 1987." (chunk 2)'
    assert EvidenceItem("silent", "x " * 200, "faithfulness").line().endswith('…" - no chunk states it')


def test_the_html_report_has_a_why_it_fails_section(result: EvaluationResult) -> None:
    from ragsight.report import render_report

    page = render_report([result], generated_at="now")
    assert page.count("<h3>Why it fails</h3>") == 1
    index = next(i for i, s in enumerate(result.samples) if s.id == "r-miss")
    section = page.split("<h3>Why it fails</h3>", 1)[1].split("<h3>", 1)[0]
    assert f'<a href="#r1-s{index}">r-miss</a>' in section
    assert "reference claim in no retrieved chunk: &quot;Ada Moss designed the Larkspur library.&quot;" in section
    assert section.index("<b>decline</b>") < section.index("<b>noise</b>")  # by count


def test_the_sweep_report_counts_causes_per_configuration(result: EvaluationResult) -> None:
    from types import SimpleNamespace

    from rich.console import Console

    from ragsight.sweep._causes import causes_html, config_causes, print_causes

    causes = config_causes([result, evaluate([r for r in ROWS if r["id"] in ("ok", "r-miss")])])
    assert causes == ({"decline": 2, "retrieval": 2, "unsupported": 2, "tool": 1, "noise": 1, "incomplete": 1,
                       "judge": 1}, {"retrieval": 1})
    rep: Any = SimpleNamespace(configs=[SimpleNamespace(short="C1", label="top_k=3"),
                                        SimpleNamespace(short="C2", label="top_k=5")], causes=causes)
    console = Console(width=80, record=True)
    print_causes(console, rep)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Why questions fail" in text and "C2" in text
    assert "<table id='causes'>" in causes_html(rep)


def test_span_metrics_alone_show_a_retrieval_miss_without_a_judge() -> None:
    # what the sweep runs on every question: document spans, no judge
    handbook = "Refunds take 14 days. Bikes travel free on Sundays. Pets need a ticket."
    rows = [
        {"id": "missed", "question": "How long do refunds take?", "response": "A week.",
         "contexts": ["Pets need a ticket."], "reference_contexts": ["Refunds take 14 days."],
         "metadata": {"reference_spans": [{"doc_id": "h", "start": 0, "end": 21}],
                      "retrieved_spans": [{"doc_id": "h", "start": 51, "end": 70}]}},
        {"id": "low", "question": "Do bikes travel free?", "response": "On Sundays.",
         "contexts": ["Pets need a ticket.", "Bikes travel free on Sundays."],
         "metadata": {"reference_spans": [{"doc_id": "h", "start": 22, "end": 50}],
                      "retrieved_spans": [{"doc_id": "h", "start": 51, "end": 70},
                                          {"doc_id": "h", "start": 22, "end": 50}]}},
    ]
    assert handbook[0:21] == "Refunds take 14 days." and handbook[22:50].startswith("Bikes")
    run = ragsight.evaluate(rows, ["span_recall", "span_mrr"], judge="scripted",
                            options=ragsight.RunOptions(show_progress=False))
    d = diagnose(run, topics=False, thresholds={"span_mrr": 0.75})
    assert {s.sample_id: s.primary for s in d.samples} == {"missed": "retrieval", "low": "retrieval"}
    assert items(d, "missed")[0][:3] == ("missed_span", "Refunds take 14 days. (h characters 0-21)",
                                         "span_recall")
    kind, text, metric, chunk, _ = items(d, "low")[0]
    assert (kind, text, metric, chunk) == ("ranked_low", "Bikes travel free on Sundays.", "span_mrr", 2)
    assert "retrieval" not in {u.cause for u in d.unmeasured}


def test_span_precision_fails_only_when_asked_and_then_names_the_chunks_off_the_reference() -> None:
    row = {"id": "wide", "question": "Do bikes travel free?", "response": "On Sundays.",
           "contexts": ["Bikes travel free on Sundays.", "Pets need a ticket.", "Refunds take 14 days.",
                        "Seats can be booked."],
           "metadata": {"reference_spans": [{"doc_id": "h", "start": 22, "end": 50}],
                        "retrieved_spans": [{"doc_id": "h", "start": 22, "end": 50},
                                            {"doc_id": "h", "start": 51, "end": 70},
                                            {"doc_id": "h", "start": 0, "end": 21},
                                            {"doc_id": "h", "start": 71, "end": 90}]}}
    run = ragsight.evaluate([row], ["span_precision", "span_recall"], judge="scripted",
                            options=ragsight.RunOptions(show_progress=False))
    assert diagnose(run, topics=False).samples == ()  # right answer from its first chunk: not a failure
    d = diagnose(run, topics=False, thresholds={"span_precision": 0.5})
    assert [(k, t, c) for k, t, _, c, _ in items(d, "wide")] == [
        ("off_reference", "Pets need a ticket.", 2), ("off_reference", "Refunds take 14 days.", 3),
        ("off_reference", "Seats can be booked.", 4)]
