"""Sub-command ``show``: a run's summary, one metric on every sample, a sample's evidence trail
(its verdicts, texts and judge calls), or a conversation turn by turn."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.text import Text

from ..analyses import describe_signals
from ..errors import ConfigError, RagsightError
from ..report import compact_table
from ..report import fmt as _fmt
from ..result import EvaluationResult, load_result
from ..store import Store
from ._common import EXIT_OK, close_name, out, shell_command
from ._common import add_store as _add_store
from ._common import open_existing as _open_existing
from ._summary import print_summary

__all__ = ["ELIDE_CHARS", "print_metric_scores", "print_trail", "register"]

ELIDE_CHARS = 300
"""``show --sample`` prints a context (or a long response) up to this many characters; ``--full``
prints it whole."""


def register(sub: Any) -> None:
    sh = sub.add_parser("show", help="show a run's summary, or a sample's evidence trail",
                        epilog="examples:\n  ragsight show last\n  ragsight show last --sample ex-2\n"
                               "  ragsight show 20260101-120000-ab12cd --sample ex-2 --calls\n"
                               "  ragsight show last --conversation support-17",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sh.add_argument("run", help="run id or 'last'")
    sh.add_argument("--sample", help="sample id: print its evidence trail")
    sh.add_argument("--metric", help="only this metric: with --sample its evidence, else its score "
                                     "on every sample, worst first")
    sh.add_argument("--calls", action="store_true", help="also print the judge calls (prompts and raw outputs)")
    sh.add_argument("--full", action="store_true",
                    help=f"with --sample: print every text whole (contexts are cut at {ELIDE_CHARS} characters)")
    sh.add_argument("--conversation", metavar="ID", help="print a conversation turn by turn with each turn's "
                                                           "scores and evidence")
    _add_store(sh)
    sh.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    with _open_existing(args.store) as store:
        result = load_result(store, args.run)
        metric = _run_metric(result, args.metric) if args.metric else None
        if args.conversation and not args.sample:
            from ._conversation import print_conversation

            print_conversation(result, args.conversation, metric, out)
            return EXIT_OK
        if not args.sample:
            if metric is not None:
                print_metric_scores(result, metric)
            else:
                print_summary(result)
            return EXIT_OK
        sample = next((s for s in result.samples if s.id == args.sample), None)
        if sample is None:
            ids = [s.id for s in result.samples]
            raise RagsightError(f"run {result.run_id} has no sample '{args.sample}'"
                                f"{close_name(args.sample, ids)}; its samples: {', '.join(ids[:10])}"
                                + ("..." if len(ids) > 10 else ""))
        print_trail(store, result, sample.id, metric, args.calls, full=args.full)
    return EXIT_OK


def _run_metric(result: EvaluationResult, name: str) -> str:
    """The run's metric called ``name`` (case-insensitive), else a ConfigError with the close
    name and the run's metrics."""
    for key in result.metric_keys:
        if key == name or key.lower() == name.strip().lower():
            return key
    raise ConfigError(f"run {result.run_id} has no metric '{name}'{close_name(name, result.metric_keys)}; "
                      f"its metrics: {', '.join(result.metric_keys)}")


def print_metric_scores(result: EvaluationResult, metric: str, console: Console | None = None) -> None:
    """One metric on every sample of a run: failures first, then scores worst first."""
    c = console or out
    s = result.summary[metric]
    level = result.levels.get(metric, "turn")
    total = sum(1 for x in result.samples if (x.conversation_id is not None and x.turn is None) == (level != "turn"))
    what = "samples" if not result.conversations else ("conversations" if level != "turn" else "samples and turns")
    c.print(f"{metric}{' ↓' if s.lower_is_better else ''} in run {result.run_id}: mean {_fmt(s.mean)} "
            f"over {s.n} scored of {total} {what}; failures first, then worst first",
            markup=False)
    table = compact_table()
    table.expand = True
    table.add_column("sample", overflow="fold", min_width=8)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1)
    order = {"failed": 0, "skipped": 1, "undetermined": 2, "scored": 3}
    rows = []
    for smp in result.samples:
        score = result.scores.get(smp.id, {}).get(metric)
        if score is None:
            continue
        v = score.value
        oriented = (1.0 - v if s.lower_is_better else v) if v is not None else 0.0
        rows.append((order[score.outcome.value], oriented, smp.id, score))
    for _, _, sid, score in sorted(rows, key=lambda r: (r[0], r[1])):
        table.add_row(Text(sid), _fmt(score.value), score.outcome.value, Text(score.reason or ""))
    c.print(table)
    c.print("Evidence of one sample:", markup=False)
    c.print("  " + shell_command(["ragsight", "show", result.run_id, "--sample", "ID", "--metric", metric]),
            soft_wrap=True, markup=False)


def _elided(text: str, full: bool) -> str:
    if full or len(text) <= ELIDE_CHARS:
        return text
    cut = text[:ELIDE_CHARS].rsplit(" ", 1)[0]
    return f"{cut} … ({len(text) - len(cut):,} more characters; --full shows them)"


def print_trail(store: Store, result: EvaluationResult, sample_id: str, metric: str | None, calls: bool,
                full: bool = False) -> None:
    """A sample's evidence: the question, each metric's verdicts, then the texts (contexts and a
    long response cut at ELIDE_CHARS characters unless ``full``), then the judge calls."""
    s = next(x for x in result.samples if x.id == sample_id)
    out.rule(f"sample {s.id}  (run {result.run_id})")
    if s.conversation_id is not None:
        from ._conversation import print_history

        print_history(s, result.run_id, out)
    if s.question:
        out.print(Text.assemble(("question: ", "bold"), s.question))
    _print_scores(result, s.id, metric)
    out.rule("texts")
    if s.response:
        out.print(Text.assemble(("response: ", "bold"), _elided(s.response, full)))
    if s.reference:
        out.print(Text.assemble(("reference: ", "bold"), _elided(s.reference_text or "", full)))
    for i, c in enumerate(s.contexts or (), start=1):
        out.print(Text.assemble((f"context {i}: ", "bold"), _elided(c, full)))
    if calls:
        _print_calls(store, result, s.id)


def _print_scores(result: EvaluationResult, sample_id: str, metric: str | None) -> None:
    for key, score in result.scores.get(sample_id, {}).items():
        if metric and key != metric:
            continue
        out.rule(f"{key}")
        value = "–" if score.value is None else f"{score.value:.3f}"
        out.print(Text.assemble(("value: ", "bold"), value, ("  outcome: ", "bold"), score.outcome.value,
                                ("  reason: ", "bold"), score.reason))
        for cv in score.evidence.claims:
            mark, style = ("✓ supported", "green") if cv.supported else ("✗ not supported", "red")
            prob = f" P={cv.probability:.2f}" if cv.probability is not None else ""
            line = Text.assemble((f"  {mark}", style), (f" [{cv.target}]{prob} ", "dim"), cv.claim)
            out.print(line)
            if cv.reason:
                out.print(Text("      " + cv.reason, style="dim"))
            if cv.signals and (read := describe_signals(cv.signals)):
                out.print(Text("      signals: " + read, style="dim"))
        details = dict(score.evidence.details)
        for name, what in _SET_APART:
            texts = details.pop(name, None)
            if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
                for text in texts:
                    out.print(Text.assemble(("  – ", "yellow"), (f"{what} ", "dim"), text))
            elif texts is not None:
                details[name] = texts
        chunks = details.pop("chunks", None)
        if _is_chunk_list(chunks):  # chunk verdicts (context precision): one line each, like claims
            for c in chunks:
                mark, style = ("✓ relevant", "green") if c["relevant"] else ("✗ not relevant", "red")
                prob = f" P={c['probability']:.2f}" if isinstance(c.get("probability"), float) else ""
                out.print(Text.assemble((f"  {mark}", style), (f" [chunk {c['rank']}]{prob}", "dim")))
                if c.get("reason"):
                    out.print(Text("      " + str(c["reason"]), style="dim"))
        elif chunks is not None:
            details["chunks"] = chunks
        if details:
            out.print(Text("  details: " + json.dumps(details, ensure_ascii=False)[:2000], style="dim"))
        for ref in score.evidence.calls:
            tag = " (cache)" if ref.cached else ""
            out.print(Text(f"  judge step {ref.prompt_id} v{ref.prompt_version}{tag}  key {ref.key[:12]}", style="dim"))


# Claims a metric kept out of its count, each printed on its own line under the claims.
_SET_APART = (
    ("about_the_documents", "set aside, says what the documents do not contain:"),
    ("dropped_claims", "dropped, not in the response's own words:"),
)


def _is_chunk_list(chunks: Any) -> bool:
    return isinstance(chunks, list) and all(
        isinstance(c, dict) and isinstance(c.get("rank"), int) and isinstance(c.get("relevant"), bool)
        for c in chunks)


def _print_calls(store: Store, result: EvaluationResult, sample_id: str) -> None:
    out.rule("judge calls")
    for row in store.judge_calls(result.run_id, sample_id=sample_id):
        out.print(Text(f"{row['prompt_id']} v{row['prompt_version']} attempt {row['attempt']} "
                       f"{row['prompt_tokens']}+{row['completion_tokens']} tok {row['latency_s']:.2f}s"
                       f"{' cached' if row['cached'] else ''}{' ERROR ' + row['error'] if row['error'] else ''}",
                       style="bold"))
        for m in row["messages"]:
            out.print(Text(f"[{m['role']}] {m['content']}", style="dim"))
        out.print(Text(f"[output] {row['raw_output']}"))
