"""Atomic claims: a compound sentence is never one claim. Claims from sentences (opt-in): a
plain sentence is its own claim, only compound or pronoun sentences go to the judge. One
generated question for the embedded judge."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from ragsight.analyses._claims import compound, own_claim, split_reason
from ragsight.judge import ScriptedProvider
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

CONTEXT = ("gzip is a compression program written by Jean-loup Gailly and Mark Adler. "
           "It uses the DEFLATE algorithm, which combines LZ77 and Huffman coding.")
PLAIN_1 = "The gzip program compresses files."
COMPOUND = "gzip uses LZ77 and was written by Microsoft."
PLAIN_2 = "Jean-loup Gailly wrote gzip with Mark Adler."
HALVES = ["gzip uses LZ77.", "gzip was written by Microsoft."]


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        (PLAIN_1, None),
        ("The Tokyo route was launched in 2023.", None),
        (COMPOUND, "two clauses"),
        ("Light fares earn 4 points per euro, Flex fares 6, Business fares 10.", "a list"),
        ("The fleet has 64 aircraft with an average age of 7.8 years.", "several numbers"),
        ("It started with one leased turboprop.", "a pronoun"),
        ("The airline said its fleet is young.", "a pronoun"),
        ("This includes roughly 780 pilots.", "a pronoun"),
        ("When was gzip written?", "a question"),
        ("I think gzip uses LZ77.", "first or second person"),
        ("Yes, it is.", "too few content words"),
        ("gzip " + "compresses " * 25 + "files.", "too long"),
    ],
)
def test_why_a_sentence_is_not_its_own_claim(sentence: str, reason: str | None) -> None:
    assert split_reason(sentence) == reason


def test_a_thousands_separator_is_not_a_list_and_a_number_in_a_name_is_not_a_second_fact() -> None:
    assert compound("Aurora Skyways employs 4,200 people in total.") is None
    assert compound("Passenger 1 may bring three cabin bags on board.") is None
    assert compound("It flies a Boeing 787 four times per week.") is None
    assert compound("In 2023 the route opened with 4 flights.") == "several numbers"
    assert compound("Jean-loup Gailly and Mark Adler wrote gzip.") is None  # names joined, one clause


def test_a_one_sentence_compound_text_is_not_its_own_claim() -> None:
    # before atomic claims, this one short sentence was its own claim, one verdict for two facts
    assert own_claim(COMPOUND) is None
    assert own_claim(PLAIN_1) == PLAIN_1


def script() -> RagScript:
    s = RagScript()
    s.parts[COMPOUND] = HALVES
    for claim, ok in [(PLAIN_1, True), (PLAIN_2, True), (HALVES[0], True), (HALVES[1], False)]:
        s.verdicts[(claim, "contexts")] = ok
    return s


def test_only_the_compound_sentence_goes_to_the_judge_and_each_half_gets_its_verdict() -> None:
    judge = script().choice_judge()
    response = f"{COMPOUND} {PLAIN_2} {PLAIN_1}"
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": response}], ["faithfulness"],
                            judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(sentence_claims=True)))
    score = res.scores["s"]["faithfulness"]
    assert score.outcome is Outcome.SCORED
    # the judge's claims take the place of the sentence they come from
    assert [v.claim for v in score.evidence.claims] == [*HALVES, PLAIN_2, PLAIN_1]
    assert [v.supported for v in score.evidence.claims] == [True, False, True, True]
    assert score.value == pytest.approx(3 / 4)  # 3 of 4 judged supported
    assert score.evidence.details["mean_p"] == pytest.approx((0.9 + 0.1 + 0.9 + 0.9) / 4)  # the scripted P(Yes)
    assert judge.calls_for("extract_claims") == []
    (part,) = judge.calls_for("extract_claims_part")
    assert part.variables["raw_sentences"] == COMPOUND
    assert part.variables["raw_text"] == response  # the whole text, to resolve pronouns
    assert "extract_claims_part" in [c.prompt_id for c in score.evidence.calls]


def test_a_text_of_plain_sentences_needs_no_extraction_call() -> None:
    judge = script().choice_judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": f"{PLAIN_1} {PLAIN_2}"}],
                            ["faithfulness"], judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(sentence_claims=True)))
    score = res.scores["s"]["faithfulness"]
    assert [v.claim for v in score.evidence.claims] == [PLAIN_1, PLAIN_2]
    assert [v.supported for v in score.evidence.claims] == [True, True]
    assert judge.calls_for("extract_claims") == [] and judge.calls_for("extract_claims_part") == []


def test_a_text_with_no_plain_sentence_is_extracted_whole() -> None:
    s = script()
    text = f"{COMPOUND} It was released in 1992."
    s.claims[text] = [*HALVES, "gzip was released in 1992."]
    s.verdicts[("gzip was released in 1992.", "contexts")] = False
    judge = s.choice_judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": text}], ["faithfulness"],
                            judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(sentence_claims=True)))
    assert [v.supported for v in res.scores["s"]["faithfulness"].evidence.claims] == [True, False, False]
    assert len(judge.calls_for("extract_claims")) == 1 and judge.calls_for("extract_claims_part") == []


def test_a_text_not_in_english_is_extracted_whole() -> None:
    s = script()
    text = "gzip ist ein Programm zur Kompression. Es wurde von Jean-loup Gailly und Mark Adler geschrieben."
    s.claims[text] = ["gzip ist ein Programm zur Kompression."]
    s.verdicts[("gzip ist ein Programm zur Kompression.", "contexts")] = True
    judge = s.choice_judge()
    ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": text}], ["faithfulness"], judge=judge,
                      options=ragsight.RunOptions(settings=AnalysisSettings(sentence_claims=True)))
    assert len(judge.calls_for("extract_claims")) == 1 and judge.calls_for("extract_claims_part") == []


def test_an_invented_claim_from_the_split_is_dropped_and_listed() -> None:
    s = script()
    s.parts[COMPOUND] = [*HALVES, "bzip2 is faster than xz."]
    judge = s.choice_judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": f"{COMPOUND} {PLAIN_1}"}],
                            ["faithfulness"], judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(sentence_claims=True)))
    score = res.scores["s"]["faithfulness"]
    assert [v.claim for v in score.evidence.claims] == [*HALVES, PLAIN_1]
    assert score.evidence.details["dropped_claims"] == ["bzip2 is faster than xz."]


def embedded(provider: ScriptedProvider) -> ScriptedProvider:
    provider.name = "local:scripted"  # what the embedded judge's provider is called
    return provider


def test_claims_from_sentences_are_off_by_default_for_every_judge() -> None:
    response = f"{PLAIN_1} {PLAIN_2}"
    s = script()
    s.claims[response] = [PLAIN_1, PLAIN_2]
    row = {"id": "s", "contexts": [CONTEXT], "response": response}
    for judge in (s.judge(), s.choice_judge(), embedded(s.choice_judge())):
        ragsight.evaluate([row], ["faithfulness"], judge=judge)
        assert len(judge.calls_for("extract_claims")) == 1, judge.name
        assert judge.calls_for("extract_claims_part") == []


@pytest.mark.parametrize(("local", "asked"), [(True, 1), (False, 3)])
def test_answer_relevancy_asks_the_embedded_judge_for_one_question(local: bool, asked: int) -> None:
    s = script()
    qs = ["Who wrote gzip?", "What is gzip?", "Which algorithm does gzip use?"][:asked]
    s.questions[PLAIN_1] = (qs, False)
    s.addresses[("What is gzip?", PLAIN_1)] = 0.9
    judge = embedded(s.choice_judge()) if local else s.choice_judge()
    res = ragsight.evaluate([{"id": "s", "question": "What is gzip?", "response": PLAIN_1}], ["answer_relevancy"],
                            judge=judge, embedder=TableEmbedder())
    score = res.scores["s"]["answer_relevancy"]
    assert score.outcome is Outcome.SCORED
    assert score.evidence.details["asked"] == asked
    assert [q["question"] for q in score.evidence.details["questions"]] == qs
    # the reason a person reads speaks in the right number
    said = "; similarity of 1 generated question " if asked == 1 else "; mean similarity of 3 generated questions "
    assert score.reason.startswith("responds to the question (judge P 0.90)") and said in score.reason
    (req,) = judge.calls_for("generate_questions")
    assert req.variables["n"] == str(asked)


def test_one_question_is_asked_for_as_one_and_a_string_of_several_is_cut_to_the_first() -> None:
    # The 1.5B judge, asked for "1 different questions", wrote one string of five to ten
    # questions; the prompt now asks for "one question ... asking one thing", and a string that
    # still holds several keeps its first.
    s = script()
    s.questions[PLAIN_1] = (["What does gzip do? Who wrote it? When?"], False)
    s.addresses[("What does gzip do?", PLAIN_1)] = 0.9
    judge = embedded(s.choice_judge())
    res = ragsight.evaluate([{"id": "s", "question": "What does gzip do?", "response": PLAIN_1}],
                            ["answer_relevancy"], judge=judge, embedder=TableEmbedder())
    score = res.scores["s"]["answer_relevancy"]
    assert [q["question"] for q in score.evidence.details["questions"]] == ["What does gzip do?"]
    (req,) = judge.calls_for("generate_questions")
    text = "\n".join(m.content for m in req.messages)
    assert "Write one question that the answer above responds to, asking one thing," in text
    assert '"questions": ["..."]}' in text and "1 different questions" not in text
    # a remote judge is asked for three, in the words it always had
    s2 = script()
    s2.questions[PLAIN_1] = (["Q1?", "Q2?", "Q3?"], False)
    s2.addresses[("What does gzip do?", PLAIN_1)] = 0.9
    remote = s2.choice_judge()
    ragsight.evaluate([{"id": "s", "question": "What does gzip do?", "response": PLAIN_1}],
                      ["answer_relevancy"], judge=remote, embedder=TableEmbedder())
    (req,) = remote.calls_for("generate_questions")
    text = "\n".join(m.content for m in req.messages)
    assert "Write 3 different questions that the answer above responds to, each one complete" in text
