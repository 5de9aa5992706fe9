"""Answer relevancy's analyses: N questions the response answers and whether it is noncommittal
(one JSON step for every judge), and, for a judge with yes/no probabilities, whether the response
responds to the question at all (``answer_addresses_choice``, P(Yes); a reason asked with
``answer_addresses`` for a No)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..calls import fit_for_judge
from ..errors import OutputError
from ..judge import Answer, JudgeFailedError, JudgeRejectedError
from ..prompts import fence, load_prompt
from ._calibrated import scale_addresses
from ._text import LANGUAGE_NAMES, evident_language
from ._types import AddressVerdict, GeneratedQuestions, lenient_bool, list_of_str, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["addresses", "generate", "question_language"]


def question_language(response: str) -> str:
    """The language the questions are to be written in, as the prompt says it: the response's
    language by name when the text shows it ("English"), else "the same language as the answer".
    A small judge asked for "the language of the answer (a French answer gets French
    questions)" wrote French questions for English answers."""
    lang = evident_language(response)
    return LANGUAGE_NAMES[lang] if lang else "the same language as the answer"


def question_wording(n: int) -> dict[str, str]:
    """How the prompt asks for ``n`` questions. Asked for "1 different questions", a small judge
    wrote one string of five to ten questions (a hundred tokens, and a similarity to the
    question of all of them); one question is asked for as such, to ask one thing."""
    if n == 1:
        return {"wanted": "one question", "each": "asking one thing,", "example": '["..."]'}
    return {"wanted": f"{n} different questions", "each": "each one", "example": '["...", "..."]'}


def first_question(text: str) -> str:
    """A generated question cut after its first question mark when more follow ("What is X? What
    is Y?" is two questions in one string: the first is kept)."""
    text = text.strip()
    mark = text.find("?")
    if mark != -1 and "?" in text[mark + 1:]:
        return text[:mark + 1]
    return text


async def generate(sa: SampleAnalyses) -> GeneratedQuestions:
    judge = sa.need_judge()
    n = sa.n_questions

    def validate(d: dict[str, Any]) -> tuple[list[str], bool]:
        questions = list_of_str(d, "questions")
        if len(questions) != n:
            raise OutputError(f"expected exactly {n} questions, got {len(questions)}")
        # Repeats are dropped (the mean is over distinct questions, recorded in the evidence);
        # only a reply with no usable question is re-asked.
        distinct = list(dict.fromkeys(first_question(q) for q in questions))
        return distinct, lenient_bool(d.get("noncommittal"), '"noncommittal"')

    response = fit_for_judge(judge, [sa.sample.response or ""], field="response",
                             output_tokens=80 + 50 * n, record=sa.truncations)[0]
    ans = await judge.ask(
        load_prompt("generate_questions"),
        {"response": fence("response", response), "n": str(n), **question_wording(n),
         "language": question_language(sa.sample.response or ""),
         "response_text": sa.sample.response or ""},
        validate, count=n, max_tokens=80 + 50 * n, use_cache=sa.settings.use_cache,
    )
    qs, noncommittal = ans.value
    return GeneratedQuestions(tuple(qs), noncommittal, refs(ans))


async def addresses(sa: SampleAnalyses, question: str) -> AddressVerdict:
    """Whether the response responds to ``question`` (the user's question, or a turn's question
    rewritten to stand alone): the embedded judge's P(Yes), read from one yes/no call with the
    question first and the response last, on its model's shipped scale (``scale_addresses``;
    the bare P with ``calibrated=False``), the verdict at the run's threshold; a short reason
    asked for a No (or for every verdict with explain="all"). Only for a judge with yes/no
    probabilities."""
    judge = sa.need_judge()
    thr = sa.settings.support_threshold
    q_text = fence("question", question)
    response = fit_for_judge(judge, [sa.sample.response or ""], field="response", output_tokens=64,
                             alongside=[q_text], record=sa.truncations)[0]
    r_text = fence("response", response)
    async with sa.batch:
        ans = await judge.choose(load_prompt("answer_addresses_choice"),
                                 {"question": q_text, "response": r_text, "question_text": question,
                                  "response_text": sa.sample.response or ""},
                                 use_cache=sa.settings.use_cache)
    judge_p = float(ans.value["Yes"])
    # the embedded judge's P runs low (correct answers 0.35-0.59): read on its shipped scale
    p = scale_addresses(judge_p, model=judge.model) if sa.settings.calibrated else judge_p
    ok = p >= thr
    answers: list[Answer[Any]] = [ans]
    reason = ""
    if (not ok and sa.settings.explain != "none") or sa.settings.explain == "all":

        def validate(d: dict[str, Any]) -> str:
            why = d.get("reason")
            if not isinstance(why, str):
                raise OutputError('"reason" must be a string')
            return why.strip()

        try:
            why = await judge.ask(load_prompt("answer_addresses"),
                                  {"question": q_text, "response": r_text,
                                   "verdict": "to respond" if ok else "not to respond",
                                   "question_text": question, "response_text": sa.sample.response or ""},
                                  validate, max_tokens=64, use_cache=sa.settings.use_cache)
            answers.append(why)
            reason = why.value
        except JudgeRejectedError:
            raise  # a rejected key stops the run; it is not a missing courtesy
        except JudgeFailedError:
            reason = ""  # a reason is a courtesy; the verdict stands without it
    return AddressVerdict(question, p, ok, reason, refs(*answers), judge_p)
