"""Non-answers and declines: no claim the response does not make enters the evidence,
a decline has no faithfulness and zero answer relevancy, and abstention still judges whether
declining was right. Every judge answer comes from a scripted world."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from ragsight.report import render_report
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

QUESTION = "What does gzip -l show?"
CONTEXTS = ["The command gzip -l lists the compressed size, the uncompressed size and the ratio of each file."]
INVENTED = "gzip -l lists the number of compressed files in the archive."


def row(sid: str, response: str, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "question": QUESTION, "contexts": CONTEXTS, "response": response, **extra}


@pytest.mark.parametrize("response", [
    "I don't know.",
    "Sorry, I cannot answer that question.",
    "The documents do not say what gzip -l shows.",
    "Die Dokumente enthalten keine Angaben dazu.",
    "Je ne sais pas.",
    "Lo siento, no tengo información sobre eso.",
])
def test_a_decline_has_no_faithfulness_and_no_judge_call(response: str) -> None:
    judge = RagScript().judge()  # any judge call would raise: the script holds nothing
    result = ragsight.evaluate([row("d", response)], ["faithfulness"], judge=judge)
    score = result.scores["d"]["faithfulness"]
    assert score.outcome is Outcome.UNDETERMINED, score.reason
    assert score.reason.startswith("the response declines to answer (\"")
    assert score.reason.endswith("): no factual claim about the subject")
    assert score.evidence.claims == () and judge.requests == []
    assert result.summary["faithfulness"].counts["undetermined"] == 1


def test_an_invented_claim_is_asked_again_then_dropped_and_recorded() -> None:
    # the trial's case: a non-answer the detector does not read, and a claim about gzip from nowhere
    response = "That is hard to say."
    script = RagScript(claims={response: [INVENTED]}, recheck={response: [INVENTED]})
    judge = script.judge()
    result = ragsight.evaluate([row("h", response)], ["faithfulness"], judge=judge)
    score = result.scores["h"]["faithfulness"]
    assert score.outcome is Outcome.UNDETERMINED
    assert score.reason == "the response makes no factual claims"
    assert score.evidence.details["dropped_claims"] == [INVENTED]
    assert score.evidence.claims == ()
    assert [c.prompt_id for c in score.evidence.calls] == ["extract_claims", "extract_claims_recheck"]
    asked_again = judge.calls_for("extract_claims_recheck")[0].messages[-1].content
    assert f"- {INVENTED}" in asked_again  # the re-ask names the claim that was not found


def test_a_translated_short_answer_is_not_its_claim_its_own_words_are() -> None:
    # a new-user sweep: the embedded judge gave "25 Tage" for the answer "25 days"; the number
    # alone made it look like the response's own words, and its verdict read German against English
    response = "25 days"
    script = RagScript(claims={response: ["25 Tage"]}, recheck={response: ["25 Tage"]})
    script.verdicts[("25 days", "contexts")] = True
    result = ragsight.evaluate([row("t", response)], ["faithfulness"], judge=script.judge())
    score = result.scores["t"]["faithfulness"]
    assert [v.claim for v in score.evidence.claims] == ["25 days"]
    assert score.value == 1.0 and score.evidence.details["dropped_claims"] == ["25 Tage"]


def test_the_re_ask_keeps_the_claims_found_in_the_response() -> None:
    response = "It shows the ratio. Also other things."
    good = "gzip -l shows the ratio."
    script = RagScript(claims={response: [good, INVENTED]}, recheck={response: [good]})
    script.verdicts[(good, "contexts")] = True
    result = ragsight.evaluate([row("r", response)], ["faithfulness"], judge=script.judge())
    score = result.scores["r"]["faithfulness"]
    assert score.value == 1.0 and [v.claim for v in score.evidence.claims] == [good]
    assert score.evidence.details["dropped_claims"] == [INVENTED]


def test_claims_made_of_the_response_words_need_no_re_ask() -> None:
    response = "It shows the compressed size. And the uncompressed size."
    claims = ["gzip -l shows the compressed size.", "gzip -l shows the uncompressed size."]
    script = RagScript(claims={response: claims})  # no recheck in the script: a re-ask would raise
    for c in claims:
        script.verdicts[(c, "contexts")] = True
    result = ragsight.evaluate([row("g", response)], ["faithfulness"], judge=script.judge())
    score = result.scores["g"]["faithfulness"]
    assert score.value == 1.0 and "dropped_claims" not in score.evidence.details


def test_a_claim_about_the_documents_is_set_aside_not_judged_unsupported() -> None:
    response = "The documents do not say how many files it lists. It shows the ratio of each file."
    about = "The documents do not say how many files it lists."  # the decline as written
    fact = "gzip -l shows the ratio of each file."
    # the judge is given the content alone, never the decline
    script = RagScript(claims={"It shows the ratio of each file.": [fact]})
    script.verdicts[(about, "contexts")] = False
    script.verdicts[(fact, "contexts")] = True
    judge = script.judge()
    result = ragsight.evaluate([row("m", response)], ["faithfulness"], judge=judge)
    score = result.scores["m"]["faithfulness"]
    assert score.value == 1.0  # the claim about the documents does not count against it
    assert score.evidence.details["about_the_documents"] == [about]
    assert [v.claim for v in score.evidence.claims] == [fact]
    assert all("do not say" not in m.content for r in judge.calls_for("extract_claims") for m in r.messages)


def test_the_judge_never_sees_a_decline_it_could_rewrite_into_a_fact() -> None:
    """A fresh new-user trial (ssh-keygen page): the 1.5B judge turned "The documents do not
    mention uploading keys to GitHub; ssh-keygen only generates, manages and converts
    authentication keys." into one claim, "ssh-keygen does not upload keys to GitHub; it only
    ...", which read as a statement about ssh-keygen and was judged against the page. Now the
    decline is kept as written and set aside; the judge extracts from the content alone."""
    response = ("The documents do not mention uploading keys to GitHub; ssh-keygen only generates, "
                "manages and converts authentication keys.")
    content = "ssh-keygen only generates, manages and converts authentication keys."
    rewritten = "ssh-keygen does not upload keys to GitHub; it only generates, manages and converts keys."
    decline = "The documents do not mention uploading keys to GitHub."
    script = RagScript(claims={response: [rewritten], content: [content]})
    script.verdicts[(rewritten, "contexts")] = False
    script.verdicts[(decline, "contexts")] = False
    script.verdicts[(content, "contexts")] = True
    sample = {"id": "k", "question": "Can ssh-keygen upload my public key to GitHub?",
              "contexts": ["ssh-keygen generates, manages and converts authentication keys for ssh."],
              "response": response}
    result = ragsight.evaluate([sample], ["faithfulness"], judge=script.judge())
    score = result.scores["k"]["faithfulness"]
    assert (score.outcome, score.value) == (Outcome.SCORED, 1.0), score.reason
    assert [v.claim for v in score.evidence.claims] == [content]
    assert score.evidence.details["about_the_documents"] == [decline]


@pytest.mark.parametrize("embedded", [False, True])
def test_a_claim_that_joins_a_decline_to_a_fact_is_judged_in_two_parts(embedded: bool) -> None:
    """A new-user trial: "The documents do not say anything about a minimum password length; chage
    only sets password ageing and expiry." came back from the judge as one claim, P 0.32: the true
    half judged with the other. The decline is set aside, the fact checked on its own."""
    response = "The documents do not say how many files it lists; gzip -l shows the ratio of each file."
    fact = "gzip -l shows the ratio of each file."
    script = RagScript(claims={response: [response]})
    script.verdicts[(response, "contexts")] = False
    script.verdicts[("The documents do not say how many files it lists.", "contexts")] = False
    script.verdicts[(fact, "contexts")] = True
    judge = script.choice_judge() if embedded else script.judge()
    result = ragsight.evaluate([row("m", response)], ["faithfulness"], judge=judge)
    score = result.scores["m"]["faithfulness"]
    assert [v.claim for v in score.evidence.claims] == [fact]
    assert score.evidence.details["about_the_documents"] == ["The documents do not say how many files it lists."]
    assert score.value is not None and score.value > 0.5


def test_answer_relevancy_is_zero_for_a_decline_without_asking_the_judge() -> None:
    judge = RagScript().judge()
    result = ragsight.evaluate([row("d", "I don't know."), row("g", "Ich weiß es nicht.")],
                               ["answer_relevancy"], judge=judge, embedder=TableEmbedder())
    for sid in ("d", "g"):
        score = result.scores[sid]["answer_relevancy"]
        assert (score.outcome, score.value) == (Outcome.SCORED, 0.0)
        assert score.reason.startswith('the response is noncommittal: it declines ("')
        assert score.evidence.details["noncommittal"] is True
    assert judge.requests == []


def test_answer_relevancy_still_zeroes_what_the_judge_calls_noncommittal() -> None:
    response = "That is hard to say."
    script = RagScript(questions={response: (["What is hard?"] * 3, True)})
    result = ragsight.evaluate([row("h", response)], ["answer_relevancy"], judge=script.judge(),
                               embedder=TableEmbedder())
    assert result.scores["h"]["answer_relevancy"].value == 0.0


def test_abstention_still_judges_whether_declining_was_right() -> None:
    rows = [row("oos", "I don't know.", metadata={"question_type": "out_of_scope"}),
            row("in", "I don't know.")]
    result = ragsight.evaluate(rows, ["abstention", "faithfulness"], judge=RagScript().judge())
    assert result.scores["oos"]["abstention"].value == 1.0  # a correct decline
    assert result.scores["in"]["abstention"].value == 0.0  # a wrong decline
    assert all(result.scores[s]["faithfulness"].outcome is Outcome.UNDETERMINED for s in ("oos", "in"))


def test_a_correct_decline_is_not_among_the_worst_faithfulness_samples() -> None:
    good = "gzip -l lists the compressed size of each file."
    bad = "gzip -l deletes every file it reads."
    script = RagScript()
    script.verdicts[(good, "contexts")] = True
    script.verdicts[(bad, "contexts")] = False
    rows = [row("decline", "The documents do not say.", metadata={"question_type": "out_of_scope"}),
            row("good", good), row("bad", bad)]
    result = ragsight.evaluate(rows, ["faithfulness"], judge=script.judge())
    assert result.worst() == ("bad", "faithfulness", 0.0)
    page = render_report([result])
    worst_table = page.split("<h3>Worst samples</h3>", 1)[1].split("</table>", 1)[0]
    assert "bad" in worst_table and "decline" not in worst_table


def test_nonanswers_off_keeps_the_behaviour_before() -> None:
    # the before/after bench compares with this setting; it must really give the old result
    response = "That is hard to say."
    script = RagScript(claims={response: [INVENTED], "I don't know.": [INVENTED]})
    script.verdicts[(INVENTED, "contexts")] = False
    result = ragsight.evaluate([row("h", response), row("d", "I don't know.")], ["faithfulness"],
                               judge=script.judge(),
                               options=ragsight.RunOptions(settings=AnalysisSettings(nonanswers=False)))
    for sid in ("h", "d"):
        score = result.scores[sid]["faithfulness"]
        assert score.value == 0.0 and [v.claim for v in score.evidence.claims] == [INVENTED]


@pytest.mark.parametrize("embedded", [False, True])
def test_a_decline_graded_against_a_short_reference_is_incorrect_without_a_judge_call(embedded: bool) -> None:
    """A new-user trial: "I don't know." against the short reference "3072 bits" got
    factual_correctness 0.14 from the embedded judge; docs/metrics.md says 0."""
    script = RagScript()
    judge = script.choice_judge() if embedded else script.judge()
    rows = [{"id": "idk", "question": "What is the default RSA key size?", "response": "I don't know.",
             "reference": "3072 bits"},
            {"id": "nd", "question": "What is the default RSA key size?",
             "response": "The documents do not mention the default key size.", "reference": "3072 bits"}]
    result = ragsight.evaluate(rows, ["factual_correctness"], judge=judge)
    for sid in ("idk", "nd"):
        score = result.scores[sid]["factual_correctness"]
        assert score.outcome == Outcome.SCORED and score.value == 0.0, (sid, score.reason)
        assert score.evidence.claims[0].reason.startswith("the response declines to answer")
    assert judge.requests == []


def test_reference_claims_written_in_another_language_give_way_to_the_references_sentences() -> None:
    """A new-user trial: the 1.5B judge wrote an English reference's claims in German, and
    context recall was 0 against a chunk holding the reference word for word."""
    reference = "For RSA keys the default is 3072 bits. The minimum size is 1024 bits."
    german = ["Die Standardgröße für RSA-Schlüssel ist 3072 Bits.", "Die minimale Größe für RSA-Schlüssel ist 1024 Bits."]
    sentences = ["For RSA keys the default is 3072 bits.", "The minimum size is 1024 bits."]
    script = RagScript(claims={reference: german})
    for c in sentences:
        script.verdicts[(c, "contexts")] = True
    for c in german:
        script.verdicts[(c, "contexts")] = False
    rowd = {"id": "rsa", "question": "What sizes do RSA keys take?", "reference": reference,
            "contexts": ["For RSA keys the default is 3072 bits and the minimum size is 1024 bits."]}
    score = ragsight.evaluate([rowd], ["context_recall"], judge=script.judge()).scores["rsa"]["context_recall"]
    assert [v.claim for v in score.evidence.claims] == sentences
    assert score.value == 1.0


def test_the_evidence_of_a_decline_quotes_the_words_not_only_the_pattern_names() -> None:
    # a new-user trial: `matched` listed "documents do not say", a name, where the response said
    # "do not mention"; the evidence now holds the words as written beside the names
    response = "The documents do not mention what gzip -l shows."
    rows = [row("d", response, metadata={"question_type": "out_of_scope"})]
    result = ragsight.evaluate(rows, ["faithfulness", "abstention"], judge=RagScript().judge())
    for metric in ("faithfulness", "abstention"):
        details = result.scores["d"][metric].evidence.details
        assert details["quoted"] and all(q in response for q in details["quoted"]), details
        assert "do not mention" in " ".join(details["quoted"])


def test_a_reference_that_declines_has_no_claims_and_no_judge_call() -> None:
    """A new-user trial: the judge looped on the out-of-scope reference "The documents do not
    say." (four calls, 111 s) and faithfulness failed with it."""
    fact = "gzip -l shows the ratio of each file."
    script = RagScript()  # it holds no claims for the reference: asking for them would fail
    script.verdicts[(fact, "contexts")] = True
    judge = script.judge()
    rows = [row("oos", fact, reference="The documents do not say.", metadata={"question_type": "out_of_scope"}),
            row("in", fact, reference="The documents do not say.")]
    result = ragsight.evaluate(rows, ["faithfulness", "context_recall"], judge=judge)
    for sid in ("oos", "in"):
        assert result.scores[sid]["faithfulness"].value == 1.0
    assert result.scores["oos"]["context_recall"].outcome is Outcome.SKIPPED
    assert result.scores["in"]["context_recall"].outcome is Outcome.UNDETERMINED
    assert all("do not say" not in m.content for r in judge.calls_for("extract_claims") for m in r.messages)


def test_a_failed_reference_extraction_fails_context_recall_only() -> None:
    fact = "gzip -l shows the ratio of each file."
    script = RagScript()  # no claims for the reference: its extraction fails
    script.verdicts[(fact, "contexts")] = True
    result = ragsight.evaluate([row("r", fact, reference="gzip -l prints sizes and the ratio.")],
                               ["faithfulness", "context_recall"], judge=script.judge())
    assert result.scores["r"]["faithfulness"].value == 1.0  # before: failed with the reference
    recall = result.scores["r"]["context_recall"]
    assert recall.outcome is Outcome.FAILED and "script has no claims" in recall.reason


def test_a_response_that_declines_is_not_sent_for_claims_by_the_correctness_metrics() -> None:
    # a trial: "Sorry, I cannot help with that." went to extraction for factual_correctness, the
    # judge invented a claim, the re-ask dropped it: two calls for nothing
    reference = "gzip -l prints the compressed size, the uncompressed size and the ratio of each file."
    script = RagScript(claims={reference: ["gzip -l prints the ratio of each file."]})
    script.verdicts[("gzip -l prints the ratio of each file.", "response")] = False
    script.verdicts[("gzip -l prints the ratio of each file.", "reference")] = True  # the reference's own
    judge = script.judge()
    result = ragsight.evaluate([row("s", "Sorry, I cannot help with that.", reference=reference)],
                               ["factual_correctness"], judge=judge)
    score = result.scores["s"]["factual_correctness"]
    assert (score.outcome, score.value) == (Outcome.SCORED, 0.0), score.reason
    assert all("cannot help" not in m.content for r in judge.calls_for("extract_claims") for m in r.messages)


def test_an_invented_fact_added_to_a_sentence_reference_costs_precision() -> None:
    """A new-user trial: the reference "-F is the same as --follow=name --retry." (7 words) was
    graded as a short answer, whole; the response that added an invented fact got 0.96."""
    reference = "-F is the same as --follow=name --retry."
    response = ("tail -F is the same as --follow=name --retry, and it stops following after 60 seconds "
                "without new data.")
    true_half = "tail -F is the same as --follow=name --retry."
    invented = "tail -F stops following after 60 seconds without new data."
    script = RagScript(claims={response: [true_half, invented], reference: [reference]})
    script.verdicts[(true_half, "reference")] = True
    script.verdicts[(invented, "reference")] = False
    script.verdicts[(reference, "response")] = True
    result = ragsight.evaluate([{"id": "f", "question": "What does tail -F do?", "response": response,
                                 "reference": reference}], ["factual_correctness"], judge=script.judge())
    score = result.scores["f"]["factual_correctness"]
    assert score.value == pytest.approx(2 / 3), score.reason  # precision 1/2, recall 1
    assert [v.claim for v in score.evidence.claims if not v.supported] == [invented]


def test_what_a_person_reads_one_line_per_claim_and_singular_nouns() -> None:
    # a new-user trial: a judge's "\n" inside a claim broke the line `show` printed, and context
    # recall read "1 of 1 reference claims found"
    reference = "gzip -l prints the ratio of each file."
    script = RagScript(claims={reference: ["gzip -l prints the ratio\nof each\tfile."]})
    script.verdicts[("gzip -l prints the ratio of each file.", "contexts")] = True
    result = ragsight.evaluate([row("r", "x", reference=reference)], ["context_recall"], judge=script.judge())
    score = result.scores["r"]["context_recall"]
    assert score.reason == "1 of 1 reference claim found in the contexts"
    assert [v.claim for v in score.evidence.claims] == ["gzip -l prints the ratio of each file."]


def test_a_decline_in_french_is_quoted_as_written_with_its_accents() -> None:
    # a new-user trial: the reason quoted "ne precisent pas" where the response said "ne précisent pas"
    response = "Les documents ne précisent pas quelle option a été ajoutée dans la version 8.2."
    result = ragsight.evaluate([row("fr", response, metadata={"question_type": "out_of_scope"})],
                               ["faithfulness", "abstention"], judge=RagScript().judge())
    assert '("ne précisent pas")' in result.scores["fr"]["faithfulness"].reason
    details = result.scores["fr"]["abstention"].evidence.details
    assert details["quoted"] == ["ne précisent pas"]
    assert details["clauses"] == [["decline", response.rstrip(".")]]


def test_the_reports_judge_line_counts_in_the_singular_for_one() -> None:
    # a new-user trial's report read "0 retries, 1 failed steps"
    import re

    fact = "gzip -l shows the ratio of each file."
    script = RagScript()
    script.verdicts[(fact, "contexts")] = True
    result = ragsight.evaluate([row("a", fact)], ["faithfulness"], judge=script.judge())
    result.judge_stats.update(calls=1, cache_hits=2, retries=1, failed_steps=1)
    page = render_report([result])
    assert re.search(r"judge: 1 call, .*, 2 cache hits, 1 retry, 1 failed step</p>", page), page[:3000]
    assert "<title>1 sample in" in page and "sample(s)" not in page  # the histogram's bar
