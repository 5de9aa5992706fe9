"""Sub-command ``simulate``: simulated users hold conversations with the system under test."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape

from ..dataset import atomic_write
from ..errors import InputError, RagsightError
from ..judge import RetryPolicy, make_judge
from ..run import run_sync
from ..simulate import ENDINGS, SimulationSettings, asimulate, read_scenarios
from ..testset import HttpFields, make_target, parse_headers
from ._common import EXIT_FAILED, EXIT_OK, checked_output, err, out, say, writing_output

__all__ = ["register", "resume_path"]

EPILOG = """examples:
  ragsight simulate scenarios.jsonl --target my_chat:answer --out conversations.jsonl
  ragsight simulate scenarios.jsonl --target http://localhost:8000/chat --answer-field reply --out conv.jsonl
  ragsight simulate scenarios.jsonl --target my_chat:answer --out conv.jsonl --judge openai:gpt-4o-mini
then: ragsight evaluate conversations.jsonl --metrics conversation_completeness,agent_goal_accuracy,faithfulness
scenarios: one JSON object a line with id, scenario (who the user is and what they want),
expected_outcome, and optionally persona, first_message, stop_when; 'ragsight generate DOCS
--types scenario=0.8,scenario_out_of_scope=0.2' writes them from documents. A module:function
target is called as fn(question, history). The user is played by the judge (default: the
embedded model, offline); its steps are cached in the store, so the same scenarios, seed, judge
and answers give the same conversations. An interrupted run keeps its finished conversations in
OUT.partial.jsonl; the same command continues it."""


def register(sub: Any) -> None:
    s = sub.add_parser("simulate", help="simulated users talk with your chat system: conversations to evaluate",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("scenarios", help="the scenarios (.jsonl)")
    s.add_argument("--target", required=True,
                   help="module:function (called with question, history), http(s)://URL or cmd:COMMAND")
    s.add_argument("--out", required=True, help="the conversations (.jsonl), for 'ragsight evaluate'")
    s.add_argument("--max-turns", type=int, default=SimulationSettings.max_turns,
                   help=f"user messages per conversation, at most (default {SimulationSettings.max_turns})")
    s.add_argument("--seed", type=int, default=0, help="seed of the user's sampled messages (default 0)")
    s.add_argument("--temperature", type=float, default=SimulationSettings.temperature,
                   help=f"sampling temperature of the user's messages (default {SimulationSettings.temperature:g}; "
                        "0: greedy)")
    s.add_argument("--judge", help="the model playing the user: local (default, offline), local:NAME, "
                                   "local:PATH.gguf, openai:MODEL, anthropic:MODEL, ...")
    s.add_argument("--base-url", help="OpenAI-compatible base URL for the judge")
    s.add_argument("--judge-timeout", type=float, default=300.0, help="seconds per judge call (default 300)")
    s.add_argument("--store", default=os.environ.get("RAGSIGHT_STORE", "ragsight.db"),
                   help="SQLite file holding the judge cache (default: ./ragsight.db)")
    s.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    s.add_argument("--concurrency", type=int,
                   help="conversations at once (default 1 with the embedded judge, else 4)")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds per call to the target (default 60)")
    s.add_argument("--retries", type=int, default=2, help="retries of a failed call to the target (default 2)")
    s.add_argument("--request-field", default="question", help="HTTP: dotted path of the message in the request")
    s.add_argument("--answer-field", default="answer", help="dotted path of the answer in the reply")
    s.add_argument("--contexts-field", default="contexts", help="dotted path of the contexts list in the reply")
    s.add_argument("--context-text-field", default="text", help="text field of a context object")
    s.add_argument("--context-id-field", default="id", help="id field of a context object")
    s.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                   help="HTTP header; NAME=env:VAR reads the value from the environment; repeatable")
    s.add_argument("--quiet", action="store_true", help="no progress")
    s.set_defaults(func=cmd_simulate)


def resume_path(out_path: str | os.PathLike[str]) -> Path:
    """Where a run writing ``out_path`` keeps its finished conversations until it ends."""
    p = Path(out_path)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return p.with_name(f"{stem}.partial.jsonl")


def _write(rows: Iterable[Mapping[str, Any]], path: str) -> None:
    with writing_output(path, "--out file"), atomic_write(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def cmd_simulate(args: argparse.Namespace) -> int:
    reads = [("the scenarios file", args.scenarios)]
    store = None if args.no_cache else args.store
    # written after the conversations: checked first, and never over the scenarios or the store
    checked_output(args.out, "--out file", store=store, reads=reads)
    partial = resume_path(args.out)
    checked_output(partial, "file of finished conversations", store=store, reads=reads)
    if partial.is_symlink():  # appended to as conversations end: a link would send them elsewhere
        raise InputError(f"the file of finished conversations {partial} is a symbolic link; remove it (or give "
                         "another --out): ragsight appends to that file itself")
    settings = SimulationSettings(max_turns=args.max_turns, seed=args.seed, temperature=args.temperature,
                                  timeout=args.timeout, retries=args.retries, concurrency=args.concurrency)
    scenarios, problems = read_scenarios(args.scenarios)
    for p in problems:
        say(err, f"left out: {p}", markup=False)
    if not scenarios:
        raise InputError(f"{args.scenarios}: no scenario could be used ({len(problems)} row(s) left out, "
                         "listed above)")
    fields = HttpFields(args.request_field, args.answer_field, args.contexts_field, args.context_text_field,
                        args.context_id_field)
    target = make_target(args.target, fields=fields, headers=parse_headers(args.header), timeout=args.timeout,
                         max_connections=settings.concurrency or 4)
    policy = RetryPolicy(call_timeout_s=args.judge_timeout, step_deadline_s=max(300.0, args.judge_timeout * 3))

    def notice(text: str) -> None:
        say(err, text, markup=False)

    from ..store import SQLiteCallCache, Store

    store = None if args.no_cache else Store(args.store)
    show = not args.quiet

    def progress(done: int, total: int, row: Mapping[str, Any]) -> None:
        if show:
            meta = row["metadata"]
            n = meta["simulation"]["user_messages"]
            err.print(f"  {done}/{total} {row['id']}: {meta['ended']} after {n} user message{'' if n == 1 else 's'}",
                      markup=False)

    try:
        judge = make_judge(args.judge, base_url=args.base_url, policy=policy, notice=notice)
        if store is not None:
            judge = judge.for_run(cache=SQLiteCallCache(store))
        # lines counted as bytes: a file cut inside a UTF-8 character (a crash mid-write) still counts
        kept_before = partial.read_bytes().count(b"\n") if partial.is_file() else 0
        if kept_before and show:
            say(err, f"continuing: {partial} holds {kept_before} finished conversation(s) of an earlier run "
                     "(those made with the same scenarios, target, judge and settings are kept)")

        async def go() -> Any:
            try:
                await judge.provider.preflight()
                return await asimulate(scenarios, target, judge, settings, resume_file=partial, progress=progress)
            finally:
                await judge.aclose()

        try:
            result = run_sync(go, sigterm=True)
        except (KeyboardInterrupt, RagsightError):
            if partial.is_file():
                say(err, f"the finished conversations are kept in {partial}; the same command continues the run")
            raise
    finally:
        if store is not None:
            store.close()
    _write(result.rows, args.out)
    partial.unlink(missing_ok=True)
    endings = result.endings
    shown = ", ".join(f"{k} {endings[k]}" for k in ENDINGS if k in endings)
    kept = f", {result.kept} kept from the earlier run" if result.kept else ""
    out.print(f"wrote {len(result.rows)} conversation(s) to {args.out}: {shown}{kept}; {result.seconds:.1f} s",
              markup=False, soft_wrap=True)
    failed = [r for r in result.rows if r["metadata"]["ended"] in ("target_failed", "judge_failed")]
    for r in failed[:10]:
        say(out, f"  [red]{r['metadata']['ended']}[/red] {escape(r['id'])}: {escape(r['metadata']['ended_reason'])}")
    st = result.judge_stats
    out.print(f"judge: {st.get('calls', 0)} calls, {st.get('prompt_tokens', 0):,}+{st.get('completion_tokens', 0):,} "
              f"tokens, {st.get('cache_hits', 0)} cache hits", markup=False)
    if failed and len(failed) == len(result.rows):
        say(err, f"error: no conversation got past a failure ({len(failed)} of {len(result.rows)}); check --target "
                 "and the reasons above.", markup=False)
        return EXIT_FAILED
    out.print(f"next: ragsight evaluate {args.out} --metrics conversation_completeness,agent_goal_accuracy,"
              "faithfulness", markup=False, soft_wrap=True)
    if problems:
        say(err, f"error: {len(problems)} scenario row(s) could not be used and were left out (listed above)",
            markup=False)
        return EXIT_FAILED
    return EXIT_OK
