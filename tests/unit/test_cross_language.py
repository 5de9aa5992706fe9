"""A question and answer in one language over contexts in another: the claim verdicts leave word
overlap out (a German claim's words are not the English chunk's), the scores that read the
contexts say so, and the run counts the samples."""

from __future__ import annotations

import pytest

import ragsight
from ragsight.analyses._calibrated import WORD_SIGNALS, assess_claim
from ragsight.analyses._text import languages_apart
from ragsight.judge import DEFAULT_MODEL, ScriptedProvider
from ragsight.result import languages_note
from tests.scripted import RagScript

EN_CHUNK = ("The default compression level is -6 (that is, biased towards high compression at expense of "
            "speed). The -9 or --best option indicates the slowest compression method.")
DE_CHUNK = "Die Standardstufe der Kompression ist -6, also eher auf eine hohe Kompression als auf die Geschwindigkeit ausgelegt."
DE_QUESTION = "Welche Kompressionsstufe verwendet gzip standardmäßig?"
DE_RESPONSE = "Standardmäßig verwendet gzip die Stufe 6, die eher auf hohe Kompression ausgelegt ist."
DE_CLAIM = "gzip verwendet standardmäßig die Stufe 6."


def test_languages_apart_needs_each_side_to_show_its_language() -> None:
    assert languages_apart([DE_QUESTION, DE_RESPONSE], [EN_CHUNK]) == ("de", "en")
    assert languages_apart(["What is the default level?", "It is level 6, the default of the tool."],
                           [DE_CHUNK]) == ("en", "de")
    assert languages_apart([DE_QUESTION, DE_RESPONSE], [DE_CHUNK]) is None
    assert languages_apart(["What is the default level?", "It is level 6 by default."], [EN_CHUNK]) is None
    # a short French chunk shows no English: not read as English documents
    assert languages_apart(["Quand l'enregistrement ferme-t-il ?", "Il ferme 45 minutes avant le départ."],
                           ["L'enregistrement ferme 45 minutes avant le départ."]) is None
    # too little text to tell the answer's language: nothing is said
    assert languages_apart(["6?"], [EN_CHUNK]) is None
    assert languages_apart([DE_QUESTION, DE_RESPONSE], []) is None


def test_across_languages_the_word_signals_are_left_out() -> None:
    p_same, sig_same = assess_claim(DE_CLAIM, EN_CHUNK, 0.8)
    p_apart, sig_apart = assess_claim(DE_CLAIM, EN_CHUNK, 0.8, across_languages=True)
    assert sig_same["overlap"] < 0.5 and p_same is not None and p_same < 0.8  # overlap pulls it down
    assert p_apart == pytest.approx(0.8)  # the judge alone (the shipped mean has nothing else)
    assert not set(WORD_SIGNALS) & set(sig_apart) and sig_apart["across_languages"] == 1.0
    assert sig_apart["judge_yes"] == 0.8 and "digits" in sig_apart  # numbers still read
    # the number guard still holds across languages: a number the source lacks caps at the judge
    p_num, sig_num = assess_claim("gzip verwendet standardmäßig die Stufe 7.", EN_CHUNK, 0.3, across_languages=True)
    assert p_num == pytest.approx(0.3) and sig_num["digits"] == 0.0


def qwen(script: RagScript) -> ScriptedProvider:
    """The script answered as the embedded model would be named, so its combination applies."""
    p = script.choice_judge()
    return ScriptedProvider(p.handlers, choice_handlers=p.choice_handlers, model=DEFAULT_MODEL)


def one_claim_script() -> RagScript:
    """The response is one sentence, its own claim (no extraction call)."""
    return RagScript(probabilities={(DE_RESPONSE, "contexts"): 0.8})


def test_a_german_answer_over_english_chunks_is_judged_by_the_judge_and_the_run_says_so() -> None:
    script = one_claim_script()
    rows = [{"id": "de", "question": DE_QUESTION, "contexts": [EN_CHUNK], "response": DE_RESPONSE},
            {"id": "de-de", "question": DE_QUESTION, "contexts": [DE_CHUNK], "response": DE_RESPONSE}]
    result = ragsight.evaluate(rows, ["faithfulness"], judge=qwen(script))
    apart = result.scores["de"]["faithfulness"]
    [claim] = apart.evidence.claims
    assert claim.probability == pytest.approx(0.8) and claim.signals["across_languages"] == 1.0
    assert apart.evidence.details["across_languages"] == {"text": "de", "contexts": "en"}
    same = result.scores["de-de"]["faithfulness"]
    assert "across_languages" not in same.evidence.details
    assert "overlap" in same.evidence.claims[0].signals
    note = languages_note(result)
    assert note is not None and note.startswith("judged across languages: 1 sample (1 de over en")


def test_no_note_when_every_sample_is_in_the_documents_language() -> None:
    script = one_claim_script()
    result = ragsight.evaluate([{"id": "de-de", "question": DE_QUESTION, "contexts": [DE_CHUNK],
                                 "response": DE_RESPONSE}], ["faithfulness"], judge=qwen(script))
    assert languages_note(result) is None
