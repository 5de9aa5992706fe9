"""A diagnosis as lines a person reads: the causes by count with their CI, and for each its kinds
of evidence, its topics and one example with its evidence lines."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._change import DiagnosisChange
from ._model import MEANINGS, UNDIAGNOSED, Diagnosis, Threshold, _clip

__all__ = ["KIND_WORDS", "change_lines", "diagnosis_lines", "threshold_text"]

KIND_WORDS = {
    "missed": "reference claims in no chunk",
    "no_relevant_chunk": "no relevant chunk retrieved",
    "ranked_low": "needed chunk ranked low",
    "missed_id": "relevant ids not retrieved",
    "missed_span": "reference passages not reached",
    "off_reference": "chunks off the reference retrieved",
    "contradicted": "contradicted by the chunks",
    "silent": "the chunks are silent",
    "not_told_apart": "contradicted or silent, not told apart",
    "irrelevant_chunk": "taken from an irrelevant chunk",
    "relevant_chunk": "taken from a relevant chunk",
    "from_chunks": "taken from the chunks (chunk not named)",
    "left_out": "claims the chunks hold, left out",
    "wrong_answer": "wrong short answer, the chunks hold the right one",
    "wrong_decline": "declined though the chunks answer",
    "declined_in_scope": "declined an in-scope question",
    "fair_decline": "declined, the chunks lacking the answer",
    "answered_out_of_scope": "answered an out-of-scope question",
    "missing": "expected calls not made",
    "extra": "unexpected calls",
    "name": "wrong tools called",
    "arguments": "wrong arguments",
    "missing_step": "expected steps not taken",
    "wrong_tool": "wrong tools chosen",
    "invalid_arguments": "arguments invalid against the tool's schema",
    "loop": "repeated or looping calls",
    "unsound_step": "steps judged unsound",
    "bad_recovery": "no sensible recovery after a failed call",
    "failed": "failed",
    "undetermined": "undetermined",
}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _id(text: str) -> str:
    """A sample id on one line as it is, a line break or another control character in it shown
    escaped (\\n), so an id cannot start a line of its own in the output."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


def threshold_text(thresholds: Mapping[str, Threshold]) -> str:
    """'below 0.5: faithfulness, context_recall; above 0: noise_sensitivity'."""
    groups: dict[str, list[str]] = {}
    for key, t in thresholds.items():
        groups.setdefault(t.describe(), []).append(key)
    return "; ".join(f"{how}: {', '.join(keys)}" for how, keys in groups.items()) or "no metric"


def _ci(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    return f"{low:.0f}-{high:.0f}"


def diagnosis_lines(d: Diagnosis, evidence: int = 2) -> list[str]:
    """The text of ``ragsight diagnose RUN``: ``evidence`` lines of the example of each cause."""
    lines = []
    if not d.samples:
        lines.append(f"Run {d.run_id}: none of {_n(d.n_samples, 'sample')} fails (fails when "
                     f"{threshold_text(d.thresholds)}).")
    else:
        lines.append(f"Run {d.run_id}: {len(d.samples)} of {_n(d.n_samples, 'sample')} fail (a metric "
                     f"{threshold_text(d.thresholds)}; or failed, or no value).")
        lines.append("")
        lines.append(f"{'cause':<12} {'samples':>7} {'95% CI':>8} {'share':>6} {'also':>5}")
        for c in d.causes:
            lines.append(f"{c.cause:<12} {c.count:>7} {_ci(c.ci_low, c.ci_high):>8} {c.share:>6.0%} {c.secondary:>5}")
        lines.append("(95% CI: bootstrap over the run's samples; also: samples where the cause is found beside "
                     "another primary cause)")
    for c in d.causes:
        if not c.count:
            continue
        lines.append("")
        lines.append(f"{c.cause} ({_n(c.count, 'sample')}): {MEANINGS[c.cause]}")
        if c.kinds:
            lines.append("  evidence: " + ", ".join(f"{KIND_WORDS.get(k, k)} {n}" for k, n in c.kinds.items()))
        if c.topics and len(d.topics) > 1:
            lines.append("  topics: " + "; ".join(f'"{" ".join(g.words)}" {len(g.samples)} (e.g. {_id(g.example)})'
                                                  for g in c.topics))
        s = d.sample(c.example) if c.example else None
        if s is None:
            continue
        failing = ", ".join(f.describe() for f in s.failing)
        lines.append(f'  e.g. {_id(s.sample_id)} "{_clip(s.question, 90)}" ({failing})')
        if c.cause == UNDIAGNOSED:
            lines += [f"    {_clip(n, 200)}" for n in s.notes[:evidence]]
            continue
        pf = s.primary_finding
        if pf is not None:
            lines += [f"    {item.line()}" + (f" [{item.metric}]" if item.metric else "")
                      for item in pf.evidence[:evidence]]
            more = len(pf.evidence) - evidence
            if more > 0:
                lines.append(f"    ... and {more} more")
    for key, ids in d.passing_unsupported.items():
        lines.append("")
        lines.append(f"Passing with a claim judged unsupported ({key}, {_n(len(ids), 'sample')}): e.g. "
                     f"{', '.join(_id(i) for i in ids[:3])}; a sample fails below {d.thresholds[key].value:g}, the "
                     f"share of its claims supported. Fail them: ragsight diagnose {d.run_id} --threshold "
                     f"{key}=1")
    if d.unmeasured:
        lines.append("")
        lines.append("Not measured in this run:")
        lines += [f"  {u.cause}: {u.hint}" for u in d.unmeasured]
    if d.samples:
        lines.append("")
        lines.append(f"Every sample: ragsight diagnose {d.run_id} --json; its trail: ragsight show {d.run_id} "
                     "--sample ID")
    return lines


def change_lines(c: DiagnosisChange, examples: int = 10) -> list[str]:
    """The text of ``ragsight diagnose RUN_A RUN_B``."""
    lines = [f"Causes from run A ({c.run_a}) to run B ({c.run_b}), on the samples both have:"]
    if c.partial:
        lines.append(f"WARNING: only {c.pairing.shortfall()}. The changes below speak for the "
                     "paired samples only.")
    else:
        lines.append(f"Pairing: {c.describe_pairing()}.")
    lines.append("")
    lines.append(f"{'cause':<12} {'A':>4} {'B':>4} {'fixed':>6} {'new':>4} {'B - A [95% CI]':>18}")
    for x in c.causes:
        ci = "" if x.ci_low is None or x.ci_high is None else f" [{x.ci_low:+.0f}, {x.ci_high:+.0f}]"
        lines.append(f"{x.cause:<12} {x.before:>4} {x.after:>4} {x.fixed:>6} {x.introduced:>4} "
                     f"{x.diff:>+7d}{ci:>11}")
    lines.append("(fixed: primary in A, not found in B; new: primary in B, not found in A; CI of the paired "
                 "permutation test, unadjusted; none shown with too few pairs)")
    lines.append(f"Now passing: {c.now_passing}; now failing: {c.now_failing}.")
    if c.not_judged:
        lines.append("Not judged (a metric one run did not measure; those failures are not counted as fixed "
                     "or new):")
        lines.extend(f"  {x.describe()}" for x in c.not_judged)
    if c.changed:
        lines.append("")
        lines.append("Samples whose cause changed:")
        for s in c.changed[:examples]:
            lines.append(f'  {_id(s.sample_id)}: {s.before} -> {s.after}  "{_clip(s.question, 70)}"')
        if len(c.changed) > examples:
            lines.append(f"  ... and {len(c.changed) - examples} more (--json lists them all)")
    return lines
