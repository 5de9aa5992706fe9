"""faithfulness = supported response claims / all response claims, against the joined contexts.

``form``: ``auto`` (default) and ``count`` give the share of claims judged supported, each
verdict taken at its threshold (the embedded judge: P(supported) >= 0.5), as ragas, DeepEval and
RAGChecker define it; the expected number of supported claims and the mean P(supported) are in
the evidence (``expected_supported``, ``mean_p``) with every claim's P. ``expected`` sums
P(supported) instead, so the score is the mean P(supported) of the claims (the expected share).

A response that declines ("I don't know", "The documents do not say ...", in English, German,
French or Spanish, by the abstention metric's phrase detector) makes no factual claim about the
subject: ``undetermined``, with no judge call. In a response that answers, a claim that only says
what the documents do not contain is set aside (listed in the evidence), not judged unsupported.

A turn of a conversation (a sample with a ``history``) is judged in its conversation
(:meth:`Faithfulness.in_conversation`): a claim is supported when the contexts support it with
its references read through the earlier turns, and the evidence names the earlier message that
resolved it; a claim that only restates what the user said is neither supported nor a
hallucination: it is left out of the count and marked ``target="user"`` in the trail. A claim
that only says what the documents do not contain is set aside there too, as in a single turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._score import ClaimVerdict, Evidence, Score
from ..analyses import Need, SampleAnalyses
from ._base import Metric
from ._support import check_form, expected_details, resolve_form, supported_count
from .abstention import detect_declines

__all__ = ["Faithfulness"]


class Faithfulness(Metric):
    name = "faithfulness"
    requires = ("response", "contexts")
    needs_judge = True
    needs = frozenset({Need.RESPONSE_VS_CONTEXTS})
    groups = frozenset({"generation", "reference-free"})
    core = True

    def __init__(self, key: str | None = None, form: str = "auto") -> None:
        super().__init__(key)
        self.form = check_form(self.name, form)

    def params(self) -> dict[str, Any]:
        return {"form": self.form}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        if (declined := self._declined(ctx)) is not None:
            return declined
        if ctx.sample.has("history"):
            return await self.in_conversation(ctx)
        claims = await ctx.response_claims()
        all_verdicts = await ctx.response_vs_contexts()
        assert all_verdicts is not None
        judged, set_aside = _about_the_subject(ctx, all_verdicts.verdicts)
        form = resolve_form(self.form, judged)
        n = len(judged)
        n_ok = sum(v.supported for v in judged)
        details: dict[str, Any] = {"form": form, "supported": n_ok, "claims": n, **expected_details(judged)}
        if form == "expected":
            details["expected_supported"] = supported_count(judged, form)
        if claims.dropped:
            details["dropped_claims"] = list(claims.dropped)
        if set_aside:
            details["about_the_documents"] = [v.claim for v in set_aside]
        ev = Evidence(claims=judged, calls=claims.refs + all_verdicts.refs, details=details)
        if not claims.claims:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        if not judged:
            return Score.undetermined(self.key, "the response only says what the documents do not contain", ev)
        if form == "expected":
            expected = details["expected_supported"]
            return Score.scored(self.key, expected / n,
                                f"mean P(supported) of {n} claim{'s' if n != 1 else ''} against the contexts "
                                f"(expected {expected:.2f} supported; {n_ok} at or above the threshold)", ev)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} claim{'s' if n != 1 else ''} supported by the "
                            f"contexts{_mean_note(details)}", ev)

    async def in_conversation(self, ctx: SampleAnalyses) -> Score:
        """Faithfulness of a conversation turn: claims read in the conversation, restatements of
        the user left out of the count (module docstring)."""
        claims = await ctx.response_claims()
        judged = await ctx.response_in_conversation()
        kept, set_aside = _about_the_subject(ctx, judged.verdicts)
        counted = [v for v in kept if v.target != "user"]
        restated = len(kept) - len(counted)
        form = resolve_form(self.form, counted)
        n = len(counted)
        n_ok = sum(v.supported for v in counted)
        details: dict[str, Any] = {
            "form": form, "supported": n_ok, "claims": n, "restates_user": restated,
            "through_conversation": sum(v.target == "contexts+conversation" for v in counted),
            "resolved": [r.to_dict() for r in judged.resolutions],
            "history_messages_shown": judged.messages_shown, **expected_details(counted),
        }
        inherited = (ctx.sample.metadata or {}).get("contexts_inherited_from_turn")
        if inherited is not None:  # the turn had no evidence of its own: an earlier turn's, still in view
            details["contexts_inherited_from_turn"] = inherited
        if form == "expected":
            details["expected_supported"] = supported_count(counted, form)
        if claims.dropped:
            details["dropped_claims"] = list(claims.dropped)
        if set_aside:
            details["about_the_documents"] = [v.claim for v in set_aside]
        ev = Evidence(claims=kept, calls=claims.refs + judged.refs, details=details)
        if not claims.claims:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        if not counted:
            return Score.undetermined(self.key, _nothing_counted(restated, len(set_aside)), ev)
        note = f"; {restated} restating the user not counted" if restated else ""
        if form == "expected":
            expected = details["expected_supported"]
            return Score.scored(self.key, expected / n,
                                f"mean P(supported) of {n} claims against the contexts, read with the "
                                f"earlier turns (expected {expected:.2f} supported{note})", ev)
        return Score.scored(self.key, n_ok / n,
                            f"{n_ok} of {n} claims supported by the contexts, read with the earlier turns{note}"
                            f"{_mean_note(details)}", ev)

    def _declined(self, ctx: SampleAnalyses) -> Score | None:
        """``undetermined`` for a response that declines (no judge call), else None."""
        if not ctx.settings.nonanswers:
            return None
        signals = detect_declines(ctx.sample.response or "")
        if signals.verdict != "declines":
            return None
        details = {"declines": True, "matched": list(signals.matched), "quoted": list(signals.quotes)}
        return Score.undetermined(
            self.key, f"the response declines to answer ({signals.quoted()}): "
            "no factual claim about the subject", Evidence(details=details))


def _mean_note(details: dict[str, Any]) -> str:
    """"; mean P(supported) 0.62" when the verdicts have probabilities, else ""."""
    return f"; mean P(supported) {details['mean_p']:.2f}" if "mean_p" in details else ""


def _nothing_counted(restated: int, about_the_documents: int) -> str:
    """Why a conversation turn has no claim to count."""
    parts = []
    if restated:
        parts.append(f"restates what the user said ({restated} claim{'s' if restated != 1 else ''})")
    if about_the_documents:
        parts.append("says what the documents do not contain" if not restated else
                     f"says what the documents do not contain ({about_the_documents} claim"
                     f"{'s' if about_the_documents != 1 else ''})")
    return "the response only " + " and ".join(parts)


def _about_the_subject(ctx: SampleAnalyses, verdicts: Sequence[ClaimVerdict]
                       ) -> tuple[tuple[ClaimVerdict, ...], tuple[ClaimVerdict, ...]]:
    """(claims about the subject, claims that only say what the documents do not contain)."""
    if not ctx.settings.nonanswers:
        return tuple(verdicts), ()
    about = [detect_declines(v.claim).verdict == "declines" for v in verdicts]
    return (tuple(v for v, a in zip(verdicts, about) if not a), tuple(v for v, a in zip(verdicts, about) if a))
