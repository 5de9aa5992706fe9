"""Short answers: a response graded as a whole against a short-form reference ("Paris", or a
list of aliases), instead of being split into claims.

- embedded judge: P(Yes) of ``verify_claim_answer``, combined with the alias signals by the
  shipped model, and a reason when the explanation mode asks for one;
- remote judge: a JSON yes/no (``verify_claim_answer_json``); the signals are recorded beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._score import ClaimVerdict
from ..calls import fit_for_judge
from ..prompts import fence, load_prompt
from ._calibrated import combine_answer
from ._declines import detect_declines
from ._signals import alias_signals, is_short_reference
from ._types import ShortAnswer, lenient_bool, refs
from ._verdicts import explain

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["grade"]


async def grade(sa: SampleAnalyses) -> ShortAnswer | None:
    s = sa.sample
    if not (sa.settings.short_answers and s.question and s.response is not None
            and is_short_reference(s.references)):
        return None
    if sa.settings.nonanswers and (said := detect_declines(s.response)).verdict == "declines":
        # "I don't know." gives no answer: incorrect, without a judge call (a new-user trial: the
        # 1.5B judge gave "I don't know." P(correct) 0.14)
        verdict = ClaimVerdict(claim=s.response, supported=False, probability=0.0,
                               reason=f"the response declines to answer ({said.quoted()}): it gives no answer",
                               target="reference", signals={"declines": 1.0})
        return ShortAnswer(verdict)
    judge = sa.need_judge()
    aliases = [r for r in s.references if r.strip()]
    question = fence("question", s.question)
    reference = fence("reference", " / ".join(aliases))
    response = fit_for_judge(judge, [s.response], field="response", output_tokens=64,
                             alongside=[question, reference], record=sa.truncations)[0]
    values = {"question": question, "reference": reference, "response": fence("response", response)}
    sig = alias_signals(s.response, aliases)
    thr = sa.settings.support_threshold
    use_cache = sa.settings.use_cache
    if judge.supports_choices:
        async with sa.batch:
            ans = await judge.choose(load_prompt("verify_claim_answer"), values, use_cache=use_cache)
            p_yes = ans.value["Yes"]
            p = combine_answer(p_yes, sig, model=judge.model) if sa.settings.calibrated else p_yes
            signals = {**sig, "judge_yes": p_yes, "p_combined": p}
            reason = (await explain(sa, judge, [s.response], [p], f"{question}\n{reference}"))[0]
        verdict = ClaimVerdict(claim=s.response, supported=p >= thr, probability=p, reason=reason,
                               target="reference", signals=signals)
        return ShortAnswer(verdict, refs(ans))

    def validate(d: dict[str, Any]) -> bool:
        return lenient_bool(d.get("correct"), "'correct'")

    jans = await judge.ask(load_prompt("verify_claim_answer_json"), values, validate,
                           max_tokens=16, use_cache=use_cache)
    signals = {**sig, "p_signals": combine_answer(None, sig)}
    verdict = ClaimVerdict(claim=s.response, supported=jans.value, probability=None,
                           target="reference", signals=signals)
    return ShortAnswer(verdict, refs(jans))
