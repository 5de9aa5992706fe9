"""faithfulness = supported response claims / all response claims, against the joined contexts.

``form``: ``count`` counts the claims judged supported; ``expected`` sums P(supported), so the
score is the mean P(supported) of the claims (the expected share); ``auto`` (default) is
``expected`` when every verdict has a probability (the embedded judge), else ``count``.

A turn of a conversation (a sample with a ``history``) is judged in its conversation
(:meth:`Faithfulness.in_conversation`): a claim is supported when the contexts support it with
its references read through the earlier turns, and the evidence names the earlier message that
resolved it; a claim that only restates what the user said is neither supported nor a
hallucination: it is left out of the count and marked ``target="user"`` in the trail.
"""

from __future__ import annotations

from typing import Any

from .._score import Evidence, Score
from ..analyses import Need, SampleAnalyses
from ._base import Metric
from ._support import check_form, resolve_form, supported_count

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
        if ctx.sample.has("history"):
            return await self.in_conversation(ctx)
        claims = await ctx.response_claims()
        verdicts = await ctx.response_vs_contexts()
        assert verdicts is not None
        form = resolve_form(self.form, verdicts.verdicts)
        n = len(verdicts.verdicts)
        n_ok = sum(v.supported for v in verdicts.verdicts)
        details: dict[str, Any] = {"form": form, "supported": n_ok, "claims": n}
        if form == "expected":
            details["expected_supported"] = supported_count(verdicts.verdicts, form)
        ev = Evidence(claims=verdicts.verdicts, calls=claims.refs + verdicts.refs, details=details)
        if not claims.claims:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        if form == "expected":
            expected = details["expected_supported"]
            return Score.scored(self.key, expected / n,
                                f"mean P(supported) of {n} claims against the contexts "
                                f"(expected {expected:.2f} supported; {n_ok} at or above the threshold)", ev)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} claims supported by the contexts", ev)

    async def in_conversation(self, ctx: SampleAnalyses) -> Score:
        """Faithfulness of a conversation turn: claims read in the conversation, restatements of
        the user left out of the count (module docstring)."""
        claims = await ctx.response_claims()
        judged = await ctx.response_in_conversation()
        counted = [v for v in judged.verdicts if v.target != "user"]
        restated = len(judged.verdicts) - len(counted)
        form = resolve_form(self.form, counted)
        n = len(counted)
        n_ok = sum(v.supported for v in counted)
        details: dict[str, Any] = {
            "form": form, "supported": n_ok, "claims": n, "restates_user": restated,
            "through_conversation": sum(v.target == "contexts+conversation" for v in counted),
            "resolved": [r.to_dict() for r in judged.resolutions],
            "history_messages_shown": judged.messages_shown,
        }
        if form == "expected":
            details["expected_supported"] = supported_count(counted, form)
        ev = Evidence(claims=judged.verdicts, calls=claims.refs + judged.refs, details=details)
        if not claims.claims:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        if not counted:
            return Score.undetermined(
                self.key, f"the response only restates what the user said ({restated} claims)", ev)
        note = f"; {restated} restating the user not counted" if restated else ""
        if form == "expected":
            expected = details["expected_supported"]
            return Score.scored(self.key, expected / n,
                                f"mean P(supported) of {n} claims against the contexts, read with the "
                                f"earlier turns (expected {expected:.2f} supported{note})", ev)
        return Score.scored(self.key, n_ok / n,
                            f"{n_ok} of {n} claims supported by the contexts, read with the earlier turns{note}", ev)
