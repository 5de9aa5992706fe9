"""What a run prints when it is done (``evaluate``, ``show RUN``, ``report``): the summary
table, the overall score and what it leaves out, the judge's spend, every reason for a failure or a
skip, and the command that shows the evidence of the lowest score."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from ..calls import describe_cost
from ..dataset import group_problems
from ..report import compact_table
from ..report import count_noun as _count
from ..report import fmt as _fmt
from ..result import EvaluationResult, languages_note, truncation_note, unsupported_note
from ._common import DEFAULT_STORE, out, say, shell_command

__all__ = ["REASONS_SHOWN", "concurrency_note", "print_evidence_hint", "print_summary"]


def print_evidence_hint(result: EvaluationResult, store: str, console: Console | None = None,
                        metric: str | None = None) -> None:
    """Where the run is saved, and the command that shows the evidence of its lowest score (of
    ``metric`` when given: the metric that failed the gate). The command is printed whole on a
    line of its own (never wrapped by the printer)."""
    c = console or out
    c.print(f"Run {result.run_id} saved in {store}.", soft_wrap=True, markup=False)
    worst = result.worst() if metric is None else _worst_of(result, metric)
    if worst is None:
        return
    sid, metric, value = worst
    cmd = ["ragsight", "show", result.run_id, "--sample", sid]
    if store != DEFAULT_STORE:
        cmd += ["--store", store]
    c.print(f"Evidence of the lowest score ({metric} {value:.3f} on sample {sid}):",
            soft_wrap=True, markup=False)
    c.print(f"  {shell_command(cmd)}", soft_wrap=True, markup=False)


def _worst_of(result: EvaluationResult, metric: str) -> tuple[str, str, float] | None:
    """The sample with the worst score of one metric (the highest of a lower-is-better one)."""
    values = result.scored_values(metric)
    if not values:
        return result.worst()
    lower = result.summary[metric].lower_is_better if metric in result.summary else False
    order = [s.id for s in result.samples if s.id in values]
    sid = (max if lower else min)(order, key=lambda i: values[i])
    return sid, metric, values[sid]


def _ci(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"{low:.3f}–{high:.3f}"


REASONS_SHOWN = 3
"""Distinct failure reasons printed per metric (the rest are counted; 'ragsight show RUN
--metric M' lists every sample)."""


def concurrency_note(stats: dict[str, Any]) -> str | None:
    """One line when the judge refused or dropped calls (HTTP 429/503, time-outs): what the
    limit did about it. None when nothing happened."""
    c = stats.get("concurrency") if stats else None
    if not isinstance(c, dict) or not (c.get("overloads") or c.get("timeouts")):
        return None
    lo, hi, ceiling = c.get("min_limit"), c.get("max_limit"), c.get("ceiling")
    at_once = _count(int(hi), 'call') if lo == hi and hi is not None else f"{lo} to {hi} calls"
    text = (f"judge: {c.get('overloads', 0)} refused as overloaded, {c.get('timeouts', 0)} timed out; "
            f"{at_once} at once (of {ceiling})")
    if c.get("paused_s"):
        text += f", paused {c['paused_s']:.1f} s as asked"
    return text


def print_summary(result: EvaluationResult, console: Console | None = None) -> None:
    """The run's summary, laid out for 80 columns: the table of metrics, the overall score
    with what it leaves out, judge spend, and every reason for a failure or a skip, whole."""
    c = console or out
    table = compact_table(f"run {result.run_id}  ({result.describe_shape()}, {result.status})")
    table.add_column("metric", overflow="fold", min_width=12)
    for col in ("mean", "95% CI", "sd", "scored", "undet.", "failed", "skipped"):
        table.add_column(col, justify="right", no_wrap=True)
    for key, s in result.summary.items():
        arrow = " ↓" if s.lower_is_better else ""
        table.add_row(key + arrow, _fmt(s.mean), _ci(s.ci_low, s.ci_high), _fmt(s.sd),
                      str(s.counts["scored"]), str(s.counts["undetermined"]), str(s.counts["failed"]),
                      str(s.counts["skipped"]))
    c.print(table)
    if result.conversations:
        _print_conversation_summary(result, c)
    ov = result.overall_detail
    if ov.mean is not None and len(result.summary) > 1:
        clamped = f"; clamped to [0, 1]: {', '.join(ov.clamped)}" if ov.clamped else ""
        inverted = any(result.summary[k].lower_is_better for k in ov.entries if k in result.summary)
        c.print(f"overall {ov.mean:.3f}: mean of {len(ov.entries)} metric means"
                f"{' (↓ as 1 - mean)' if inverted else ''}, harmonic mean {_fmt(ov.harmonic)}{clamped}")
    for key, why in ov.left_out.items():
        if len(result.summary) > 1 or key not in result.summary:  # a metric a group chose and the judge refused
            say(c, Text(f"LEFT OUT of the overall: {key}: {why}", style="bold red"))
    st = result.judge_stats
    if st:
        # without a cache, a step asked again in the run is answered from its memory: not a cache hit
        hits = ("repeat answered from memory" if result.config.get("cache") is False else "cache hit")
        c.print(f"judge: {_count(st.get('calls', 0), 'call')}, {_count(st.get('cache_hits', 0), hits)}, "
                f"{st.get('prompt_tokens', 0):,} prompt + {st.get('completion_tokens', 0):,} completion tokens")
        c.print(f"       {_count(st.get('retries', 0), 'retry')}, {_count(st.get('reasks', 0), 're-ask')}, "
                f"{_count(st.get('failed_steps', 0), 'failed step')}")
        note = concurrency_note(st)
        if note is not None:
            c.print(note, markup=False)
        for line in describe_cost(result.cost):
            if line:
                c.print(line, markup=False)
    cut = truncation_note(result)
    if cut is not None:
        say(c, Text(cut, style="yellow"))
    apart = languages_note(result)
    if apart is not None:
        say(c, Text(apart, style="yellow"))
    passing = unsupported_note(result)
    if passing is not None:
        c.print(Text(passing[0], style="bold yellow"))
        c.print(f"  {passing[1]}", soft_wrap=True, markup=False)
    for key, s in result.summary.items():
        for reason, n in s.skip_reasons.items():
            c.print(f"skipped {key} on {_count(n, 'sample')}: {reason}", markup=False)
        shown = sorted(s.fail_reasons.items(), key=lambda kv: -kv[1])
        for reason, n in shown[:REASONS_SHOWN]:
            c.print(Text.assemble(("failed", "red"), f" {key} on {_count(n, 'sample')}: {reason}"))
        if len(shown) > REASONS_SHOWN:
            rest = sum(n for _, n in shown[REASONS_SHOWN:])
            c.print(f"failed {key} on {rest} more sample(s) for {len(shown) - REASONS_SHOWN} other "
                    f"reason(s): ragsight show {result.run_id} --metric {key}", markup=False)
    if result.problems:
        errors = [p for p in result.problems if not p.message.startswith("warning:")]
        if errors:
            c.print(f"[yellow]{len(errors)} input row(s) could not be used and were not evaluated:[/yellow]")
            groups = group_problems(errors)  # one line per kind of problem, with its count
            for g in groups[:20]:
                say(c, f"  {g.line()}", markup=False)
            if len(groups) > 20:
                c.print(f"  ... and {len(groups) - 20} more kinds (ragsight show {result.run_id})")


def _print_conversation_summary(result: EvaluationResult, c: Console) -> None:
    """The turn metrics per conversation: the mean of each conversation's scored turns, then
    the mean over conversations (a long conversation counts once), with the four outcomes."""
    sh = result.shape
    say(c, f"Per conversation ({sh['conversations']}): each one's mean over its scored turns, where the "
        f"table above counts each of the {sh['turns']} assistant turns once:", markup=False)
    table = compact_table(None)
    table.add_column("metric", overflow="fold", min_width=12)
    for col in ("mean", "95% CI", "scored", "undet.", "failed", "skipped"):
        table.add_column(col, justify="right", no_wrap=True)
    for key, s in result.conversation_summary.items():
        if not sum(s.counts.values()):
            continue
        table.add_row(key, _fmt(s.mean), _ci(s.ci_low, s.ci_high), str(s.counts["scored"]),
                      str(s.counts["undetermined"]), str(s.counts["failed"]), str(s.counts["skipped"]))
    c.print(table)
    c.print(f"each conversation: ragsight show {result.run_id} --conversation ID", markup=False)
