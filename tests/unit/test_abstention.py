"""Out-of-scope questions get their own treatment: the retrieval metrics that
need a reference end ``skipped`` with that reason, and ``abstention`` scores whether the response
declines when (and only when) the question is out of scope. Exact values and the recorded
evidence: the phrase detector deciding the clear cases, the scripted judge answering the others
as a remote judge (JSON) and as the embedded one (a yes/no probability), and ``method=judge``
asking the judge for every response."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import Dataset, Outcome, ScriptedProvider
from ragsight.metrics import OUT_OF_SCOPE_SKIP
from ragsight.sample import is_out_of_scope
from ragsight.testset import OUT_OF_SCOPE_REFERENCE

DECLINE = "The documents do not say; I cannot answer that."
ANSWER = "Aurora Airways allows one cabin bag of eight kilograms."
CTX = ["Aurora Airways allows one cabin bag.", "It may weigh eight kilograms."]


def generated_oos(qid: str, response: str) -> dict[str, Any]:
    """An out-of-scope row as `ragsight generate` writes it, answered by the system."""
    return {"id": qid, "question": "What is the name of the Aurora Airways mascot?",
            "reference": OUT_OF_SCOPE_REFERENCE, "reference_contexts": [], "relevant_ids": [],
            "contexts": CTX, "retrieved_ids": ["d1", "d2"], "response": response,
            "metadata": {"question_type": "out_of_scope", "style": "plain"}}


def in_scope(qid: str, response: str) -> dict[str, Any]:
    return {"id": qid, "question": "How many cabin bags may I bring?", "reference": "One cabin bag.",
            "reference_contexts": [CTX[0]], "relevant_ids": ["d1"], "contexts": CTX, "retrieved_ids": ["d1", "d2"],
            "response": response, "metadata": {"question_type": "single_hop"}}


ROWS = [generated_oos("oos-declined", DECLINE), generated_oos("oos-answered", ANSWER),
        in_scope("in-declined", DECLINE), in_scope("in-answered", ANSWER)]


def json_judge() -> ScriptedProvider:
    def declines(v: Mapping[str, Any]) -> Any:
        declined = "cannot answer" in v["response"]
        return {"reason": "says it cannot answer" if declined else "gives an answer", "declines": declined}

    def chunk_relevance(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": 1, "relevant": True, "reason": "r"}, {"id": 2, "relevant": False, "reason": "r"}]}

    def verify_claims(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i, "supported": True, "chunks": [1], "reason": "r"}
                             for i, _ in enumerate(v["claim_list"], start=1)]}

    return ScriptedProvider({"declines_json": declines, "chunk_relevance": chunk_relevance,
                             "verify_claims": verify_claims})


def test_method_judge_asks_a_remote_judge_for_every_response() -> None:
    judge = json_judge()
    result = ragsight.evaluate(ROWS, ["abstention(method=judge)"], judge=judge)
    key = "abstention(method=judge)"
    got = {sid: (s[key].value, s[key].reason) for sid, s in result.scores.items()}
    assert got == {
        "oos-declined": (1.0, "declined an out-of-scope question (judge: says it cannot answer)"),
        "oos-answered": (0.0, "answered an out-of-scope question (judge: gives an answer)"),
        "in-declined": (0.0, "declined an in-scope question (judge: says it cannot answer)"),
        "in-answered": (1.0, "answered an in-scope question (judge: gives an answer)"),
    }
    assert result.summary[key].mean == 0.5
    ev = result.scores["oos-answered"][key].evidence
    assert ev.details == {"out_of_scope": True, "scope": "all", "method": "judge", "detector": "none", "matched": [], "quoted": [],
                          "clauses": [["content", "Aurora Airways allows one cabin bag of eight kilograms"]],
                          "p_declines": None, "reason": "gives an answer", "declined": False, "correct": False,
                          "decided_by": "judge"}
    assert [c.prompt_id for c in ev.calls] == ["declines_json"]
    assert len(judge.calls_for("declines_json")) == 4  # one call per sample
    # the question and the response reach the judge fenced as data
    prompt = judge.calls_for("declines_json")[0].messages[-1].content
    assert "<question>" in prompt and "<response>" in prompt


def test_method_judge_with_the_embedded_judge_reads_p_of_no_to_gives_an_answer() -> None:
    # the embedded judge is asked "does the response give an answer?": P(declines) = P(No)
    p_answers = {DECLINE: 0.17, ANSWER: 0.92}
    judge = ScriptedProvider(choice_handlers={"declines": lambda v: next(
        p for text, p in p_answers.items() if text in v["response"])})
    result = ragsight.evaluate(ROWS[:2], ["abstention(method=judge)"], judge=judge)
    declined = result.scores["oos-declined"]["abstention(method=judge)"]
    assert declined.value == 1.0
    assert declined.reason == "declined an out-of-scope question (judge: P(declines)=0.83)"
    assert declined.evidence.details["p_declines"] == pytest.approx(0.83)
    assert [c.prompt_id for c in declined.evidence.calls] == ["declines"]
    answered = result.scores["oos-answered"]["abstention(method=judge)"]
    assert (answered.value, answered.evidence.details["p_declines"]) == (0.0, pytest.approx(0.08))
    prompt = judge.calls_for("declines")[0].messages[-1].content
    assert "Does the response above give an answer to the question" in prompt


# the two responses the sweep example's embedded judge got wrong with prompt v1, and others
DOCS_DO_NOT_SAY = "The documents do not say."
MADE_UP_POLICY = "The company does not allow dogs to bring to the office."
MIXED = "The documents do not say, but most offices allow small dogs on Fridays."
GERMAN = "Die Dokumente enthalten dazu keine Angaben."
SWEDISH = "Dokumenten anger inte det."  # a language the detector does not read
REFERRAL = "I don't know; the People team would be the right people to ask."


def dogs(qid: str, response: str) -> dict[str, Any]:
    return {"id": qid, "question": "What is the company's policy on bringing dogs to the office?",
            "response": response, "metadata": {"question_type": "out_of_scope"}}


def test_the_detector_decides_clean_declines_and_the_judge_the_others() -> None:
    # the embedded judge's P(Yes) to "does it give an answer?"
    p_answers = {MADE_UP_POLICY: 0.81, MIXED: 0.91, SWEDISH: 0.2}
    judge = ScriptedProvider(choice_handlers={"declines": lambda v: next(
        p for text, p in p_answers.items() if text in v["response"])})
    rows = [dogs("plain", DOCS_DO_NOT_SAY), dogs("made-up", MADE_UP_POLICY), dogs("mixed", MIXED),
            dogs("german", GERMAN), dogs("swedish", SWEDISH), dogs("referral", REFERRAL)]
    result = ragsight.evaluate(rows, ["abstention"], judge=judge)
    got = {sid: (s["abstention"].value, s["abstention"].reason) for sid, s in result.scores.items()}
    assert got == {
        "plain": (1.0, 'declined an out-of-scope question (decline phrases: "do not say")'),
        "made-up": (0.0, "answered an out-of-scope question (judge: P(declines)=0.19)"),
        "mixed": (0.0, "answered an out-of-scope question (judge: P(declines)=0.09)"),
        # German, French and Spanish declines are read by the detector too
        "german": (1.0, 'declined an out-of-scope question (decline phrases: "keine Angaben", '
                        '"Dokumente enthalten dazu keine")'),
        "swedish": (1.0, "declined an out-of-scope question (judge: P(declines)=0.80)"),
        "referral": (1.0, """declined an out-of-scope question (decline phrases: "I don't know")"""),
    }
    # the judge was asked three times: no decline phrase, a decline phrase beside an answer, and
    # a response the detector cannot read (Swedish); never for the three clean declines
    assert sorted(r.variables["response"] for r in judge.calls_for("declines")) == sorted(
        [f"<response>\n{t}\n</response>" for t in (MADE_UP_POLICY, MIXED, SWEDISH)])
    ev = {sid: s["abstention"].evidence for sid, s in result.scores.items()}
    assert ev["plain"].details == {
        "out_of_scope": True, "scope": "all", "method": "combined", "detector": "declines",
        "matched": ["documents do not say"], "quoted": ["do not say"],
        "clauses": [["decline", "The documents do not say"]], "p_declines": None, "reason": None, "declined": True, "correct": True, "decided_by": "detector"}
    assert ev["plain"].calls == ()
    assert ev["made-up"].details["detector"] == "none" and ev["made-up"].details["clauses"] == [
        ["content", "The company does not allow dogs to bring to the office"]]
    assert ev["made-up"].details["decided_by"] == "judge"
    assert ev["made-up"].details["p_declines"] == pytest.approx(0.19)
    assert ev["mixed"].details["detector"] == "mixed" and ev["mixed"].details["clauses"] == [
        ["decline", "The documents do not say"], ["content", "most offices allow small dogs on Fridays"]]
    assert ev["mixed"].details["p_declines"] == pytest.approx(0.09)
    assert [c.prompt_id for c in ev["mixed"].calls] == ["declines"]
    assert ev["swedish"].details["detector"] == "not_english" and ev["swedish"].details["decided_by"] == "judge"
    assert ev["german"].details["detector"] == "declines" and ev["german"].details["decided_by"] == "detector"
    assert ev["referral"].details["clauses"] == [["decline", "I don't know"],
                                                 ["referral", "the People team would be the right people to ask"]]


def test_a_remote_judge_decides_the_mixed_case_with_its_reason() -> None:
    judge = ScriptedProvider({"declines_json": lambda v: {"reason": "it guesses a policy", "declines": False}})
    result = ragsight.evaluate([dogs("mixed", MIXED), dogs("plain", DOCS_DO_NOT_SAY)], ["abstention"], judge=judge)
    mixed = result.scores["mixed"]["abstention"]
    assert (mixed.value, mixed.reason) == (0.0, "answered an out-of-scope question (judge: it guesses a policy)")
    assert mixed.evidence.details["reason"] == "it guesses a policy"
    assert len(judge.calls_for("declines_json")) == 1  # the plain decline needed no judge


@pytest.mark.parametrize(("response", "verdict"), [
    ("I cannot find this information in the provided documents.", "declines"),
    ("There is no information about a dress code in the documents.", "declines"),
    ("The handbook covers leave and travel, but says nothing about dogs.", "declines"),
    ("The documents mention the product freeze, but not a Christmas party.", "declines"),
    ("Not stated in the context.", "declines"),
    ("Unknown.", "declines"),
    ("That information is not available to me.", "declines"),
    ("There is no dress code for client meetings.", "none"),
    ("No. Business class is never booked.", "none"),
    ("The company does not provide company cars.", "none"),
    ("The documents say claims are due within 30 days.", "none"),
    ("Leeds staff get 25 days; the documents do not say how many Porto staff get.", "mixed"),
    ("I'm not sure, but I believe it's business casual.", "mixed"),
    ("Les documents ne le précisent pas.", "declines"),
    ("Ich weiß es nicht.", "declines"),
    ("Leider geht aus den Dokumenten nicht hervor, wie lange die Frist ist.", "declines"),
    ("Lo siento, no tengo información sobre eso.", "declines"),
    ("No lo sé.", "declines"),
    # answers with a negative in German, French and Spanish are not declines
    ("Das Frühstück ist nicht enthalten.", "not_english"),
    ("L'assurance ne couvre pas les bagages.", "not_english"),
    ("El billete no incluye equipaje.", "none"),
    ("No se permiten mascotas.", "none"),
    ("Die Dokumente nennen keine Frist, aber üblich sind 20 Tage.", "mixed"),
    ("I documenti non lo specificano.", "declines"),  # Italian is read too
    ("Dokumenten anger inte det.", "not_english"),
    ("   ", "empty"),
])
def test_the_detectors_verdicts(response: str, verdict: str) -> None:
    from ragsight.metrics.abstention import detect_declines

    assert detect_declines(response).verdict == verdict


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ragsight.errors.ConfigError, match="abstention method must be one of combined, judge"):
        ragsight.evaluate(ROWS, ["abstention(method=regex)"], judge=json_judge())


def test_the_scoped_forms_give_the_two_rates() -> None:
    result = ragsight.evaluate(ROWS, ["abstention(scope=out_of_scope)", "abstention(scope=in_scope)"],
                               judge=json_judge())
    oos = result.summary["abstention(scope=out_of_scope)"]
    ins = result.summary["abstention(scope=in_scope)"]
    assert (oos.mean, oos.counts["scored"], oos.counts["skipped"]) == (0.5, 2, 2)
    assert (ins.mean, ins.counts["scored"], ins.counts["skipped"]) == (0.5, 2, 2)
    assert list(oos.skip_reasons) == ["in-scope question (this abstention scores out-of-scope questions only)"]


def test_retrieval_metrics_against_a_reference_skip_out_of_scope_questions() -> None:
    metrics = ["context_precision", "context_recall", "hit_rate", "mrr", "retrieval_accuracy"]
    result = ragsight.evaluate(ROWS, metrics, judge=json_judge())
    for sid in ("oos-declined", "oos-answered"):
        for m in metrics:
            score = result.scores[sid][m]
            assert (score.outcome, score.reason) == (Outcome.SKIPPED, OUT_OF_SCOPE_SKIP), (sid, m)
    for sid in ("in-declined", "in-answered"):
        assert result.scores[sid]["context_precision"].value == 1.0  # relevant chunk first
        assert result.scores[sid]["context_recall"].value == 1.0
        assert result.scores[sid]["hit_rate"].value == 1.0
    assert result.summary["context_recall"].skip_reasons == {OUT_OF_SCOPE_SKIP: 2}
    assert result.summary["context_recall"].mean == 1.0  # never the 0.0 an out-of-scope row used to add


def test_faithfulness_still_scores_out_of_scope_rows() -> None:
    # what the response claims must still be in the contexts, in or out of scope
    result = ragsight.evaluate(ROWS[1:2], ["faithfulness"], judge=json_judge())
    assert result.scores["oos-answered"]["faithfulness"].outcome is Outcome.SCORED


@pytest.mark.parametrize("meta,expected", [
    ({"question_type": "out_of_scope"}, True), ({"question_type": "Out-Of-Scope"}, True),
    ({"answerable": False}, True), ({"answerable": "false"}, True), ({"answerable": "no"}, True),
    ({"answerable": 0}, True), ({"out_of_scope": True}, True), ({"out_of_scope": "yes"}, True),
    ({"answerable": True}, False), ({"answerable": "true"}, False), ({"question_type": "single_hop"}, False),
    ({}, False), ({"answerable": None}, False),
])
def test_the_out_of_scope_rule(meta: dict[str, Any], expected: bool) -> None:
    assert is_out_of_scope(meta) is expected


def test_a_users_answerable_column_marks_rows_out_of_scope(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("id,question,contexts,response,reference,answerable\n"
                    f'a,Who is the mascot?,"[""x""]",{DECLINE},-,false\n'
                    f'b,How many bags?,"[""x""]",{ANSWER},One.,true\n', encoding="utf-8")
    ds = Dataset.load(path)
    assert [s.out_of_scope for s in ds] == [True, False]
    result = ragsight.evaluate(str(path), ["abstention"], judge=json_judge())
    assert [result.scores[s.id]["abstention"].value for s in result.samples] == [1.0, 1.0]


def test_an_unknown_scope_is_refused_before_any_call() -> None:
    with pytest.raises(ragsight.errors.ConfigError, match="abstention scope must be one of all, out_of_scope"):
        ragsight.evaluate(ROWS, ["abstention(scope=everything)"], judge=json_judge())


def test_the_default_selection_adds_abstention_when_the_data_marks_out_of_scope_questions() -> None:
    from ragsight.metrics import resolve_metrics

    samples = Dataset.load(ROWS).samples
    assert [m.key for m in resolve_metrics(None, samples)][-1] == "abstention"
    in_scope_only = Dataset.load(ROWS[2:]).samples
    assert "abstention" not in [m.key for m in resolve_metrics(None, in_scope_only)]
