"""Sub-commands ``generate`` and ``answer`` (``run`` before; still accepted)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from .._terminal import guard
from ..dataset import atomic_write
from ..embed import make_embedder
from ..errors import ConfigError
from ..judge import RetryPolicy, make_judge
from ..run import run_sync
from ..testset import (
    DEFAULT_STYLES,
    DEFAULT_TYPES,
    REASONS,
    ChunkSettings,
    FilterSettings,
    HttpFields,
    TestsetSettings,
    agenerate,
    arun,
    load_corpus,
    make_target,
    parse_headers,
    read_testset,
)
from ._common import EXIT_FAILED, checked_output, writing_output

__all__ = ["register", "write_jsonl"]

# soft wrap: long paths and questions stay on one line, so they can be copied
err = guard(Console(stderr=True, highlight=False, soft_wrap=True))
out = guard(Console(highlight=False, soft_wrap=True))

GENERATE_EPILOG = """examples:
  ragsight generate docs/ --size 50 --out testset.jsonl
  ragsight generate handbook/ --size 10 --out ts.jsonl --judge openai:gpt-4o-mini --critic openai:gpt-4o
  ragsight generate chunks.jsonl --size 20 --out ts.jsonl --types single_hop=0.5,multi_context=0.5
documents: a folder or files (.txt .md .html .pdf .docx), or pre-chunked .jsonl (id, text, doc_id).
Rejected candidates and their reasons go to OUT.rejected.jsonl. Generator and critic calls are
cached in the store (--store), like judge calls."""

RUN_EPILOG = """examples:
  ragsight answer ts.jsonl --target ragsight.testset.example_target:answer --out eval.jsonl
  ragsight answer ts.jsonl --target my_rag:answer --out eval.jsonl --concurrency 8
  ragsight answer ts.jsonl --target http://localhost:8000/ask --answer-field data.answer \\
      --contexts-field data.chunks --header Authorization=env:MY_TOKEN --out eval.jsonl
  ragsight answer ts.jsonl --target "cmd:python my_rag.py" --out eval.jsonl
then: ragsight evaluate eval.jsonl"""


def _mix_help(default: Mapping[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in default.items())


def register(sub: Any) -> None:
    g = sub.add_parser(
        "generate",
        help="generate a synthetic test set from documents",
        epilog=GENERATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("docs", nargs="+", help="a folder, files, or a pre-chunked .jsonl")
    g.add_argument("--size", type=int, default=10, help="questions wanted (default 10)")
    g.add_argument("--out", required=True, help="the test set to write (.jsonl)")
    g.add_argument(
        "--judge", help="generator: openai:MODEL, local (default), local:NAME or local:PATH.gguf"
    )
    g.add_argument("--critic", help="critic judge (default: the generator)")
    g.add_argument("--base-url", help="OpenAI-compatible base URL for the generator and critic")
    g.add_argument(
        "--embedder",
        default="local",
        help="for near-duplicate removal: local (default), openai:MODEL, or none",
    )
    g.add_argument(
        "--embedder-base-url",
        help="base URL for an openai:MODEL embedder, if not --base-url",
    )
    g.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    g.add_argument("--types", help=f"question-type mix (default {_mix_help(DEFAULT_TYPES)})")
    g.add_argument("--styles", help=f"query-style mix (default {_mix_help(DEFAULT_STYLES)})")
    g.add_argument("--chunk-size", type=int, default=180, help="chunk size (default 180)")
    g.add_argument("--chunk-overlap", type=int, default=30, help="chunk overlap (default 30)")
    g.add_argument("--chunk-unit", choices=["words", "tokens"], default="words")
    g.add_argument(
        "--dedup-threshold",
        type=float,
        default=FilterSettings.dedup_threshold,
        help=f"cosine similarity that makes a duplicate (default {FilterSettings.dedup_threshold})",
    )
    g.add_argument(
        "--max-copied-ngram",
        type=int,
        default=FilterSettings.max_copied_ngram,
        help="words in a row shared with the context that make a question copied "
        f"(default {FilterSettings.max_copied_ngram})",
    )
    g.add_argument(
        "--min-grounding",
        type=float,
        default=FilterSettings.min_grounding,
        help="share of the reference's content words that must occur in its contexts "
        f"(default {FilterSettings.min_grounding})",
    )
    g.add_argument(
        "--max-reference-words",
        type=int,
        default=FilterSettings.max_reference_words,
        help="longer references are rejected as copies of the context "
        f"(default {FilterSettings.max_reference_words})",
    )
    g.add_argument(
        "--attempts",
        type=float,
        default=3.0,
        help="candidates tried per wanted question, at most, per type (default 3)",
    )
    g.add_argument(
        "--store",
        default=os.environ.get("RAGSIGHT_STORE", "ragsight.db"),
        help="SQLite file holding the call cache (default: ./ragsight.db)",
    )
    g.add_argument("--no-cache", action="store_true", help="do not read or write the call cache")
    g.add_argument(
        "--timeout", type=float, default=300.0, help="seconds per model call (default 300)"
    )
    g.set_defaults(func=cmd_generate)

    r = sub.add_parser(
        "answer",
        help="ask the system under test every question of a test set (old name: run)",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("testset", help="the test set (.jsonl) from 'ragsight generate'")
    r.add_argument(
        "--target",
        required=True,
        help="module:function, http(s)://URL (POST JSON) or cmd:COMMAND (JSON on stdin/stdout)",
    )
    r.add_argument(
        "--out", required=True, help="the rows with responses (.jsonl), for 'ragsight evaluate'"
    )
    r.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    r.add_argument("--timeout", type=float, default=60.0, help="seconds per call (default 60)")
    r.add_argument("--retries", type=int, default=2, help="retries of a failed call (default 2)")
    r.add_argument(
        "--request-field",
        default="question",
        help="HTTP: dotted path of the question in the request",
    )
    r.add_argument(
        "--answer-field", default="answer", help="dotted path of the answer in the reply"
    )
    r.add_argument(
        "--contexts-field", default="contexts", help="dotted path of the contexts list in the reply"
    )
    r.add_argument("--context-text-field", default="text", help="text field of a context object")
    r.add_argument("--context-id-field", default="id", help="id field of a context object")
    r.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="HTTP header; NAME=env:VAR reads the value from the environment; repeatable",
    )
    r.add_argument("--quiet", action="store_true", help="no progress")
    r.set_defaults(func=cmd_run)


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write ``rows`` as JSONL atomically (on an error the previous file is intact, no
    temporary file is left); an OSError becomes a one-line error naming the file."""
    with writing_output(path, "--out file"), atomic_write(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def rejected_path(out_path: str) -> str:
    p = Path(out_path)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return str(p.with_name(f"{stem}.rejected.jsonl"))


def cmd_generate(args: argparse.Namespace) -> int:
    from ..store import SQLiteCallCache, Store

    chunking = ChunkSettings(args.chunk_size, args.chunk_overlap, args.chunk_unit)
    filt = FilterSettings(
        max_copied_ngram=args.max_copied_ngram,
        min_grounding=args.min_grounding,
        dedup_threshold=args.dedup_threshold,
        max_reference_words=args.max_reference_words,
    )
    settings = TestsetSettings(
        size=args.size,
        seed=args.seed,
        types=_mix(args.types, DEFAULT_TYPES),
        styles=_mix(args.styles, DEFAULT_STYLES),
        filter=filt,
        attempts=args.attempts,
    )
    # both files are written after paying: checked first, and never over a document or the store
    store_path = None if args.no_cache else args.store
    docs = [("a document", d) for d in args.docs]
    checked_output(args.out, "--out file", store=store_path, reads=docs)
    checked_output(rejected_path(args.out), "file of rejected questions", store=store_path, reads=docs)
    corpus = load_corpus(args.docs, chunking)
    err.print(f"{len(corpus.doc_ids)} document(s), {len(corpus.chunks)} chunk(s)")
    policy = RetryPolicy(call_timeout_s=args.timeout, step_deadline_s=max(300.0, args.timeout * 3))

    def notice(text: str) -> None:
        err.print(text)

    store = None if args.no_cache else Store(args.store)
    embedder: Any = args.embedder
    if isinstance(embedder, str) and embedder.strip().startswith("openai:"):
        # the embedder's server: its own URL, else the generator's (as in 'ragsight evaluate')
        embedder = make_embedder(embedder, base_url=args.embedder_base_url or args.base_url)
    try:
        generator = make_judge(args.judge, base_url=args.base_url, policy=policy, notice=notice)
        critic = (
            make_judge(args.critic, base_url=args.base_url, policy=policy)
            if args.critic and args.critic != args.judge
            else generator
        )
        if store is not None:
            same = critic is generator
            generator = generator.for_run(cache=SQLiteCallCache(store))
            critic = generator if same else critic.for_run(cache=generator.cache)

        def progress(accepted: int, wanted: int, tried: int) -> None:
            err.print(f"  {accepted}/{wanted} accepted after {tried} candidate{'' if tried == 1 else 's'}")

        async def go() -> Any:
            try:
                return await agenerate(
                    corpus, generator, critic, embedder, settings, progress, notice
                )
            finally:
                if not isinstance(embedder, str):
                    await embedder.aclose()
                await generator.aclose()
                if critic is not generator:
                    await critic.aclose()

        result = run_sync(go)
    finally:
        if store is not None:
            store.close()
    write_jsonl(result.rows, args.out)
    rej = rejected_path(args.out)
    write_jsonl(result.rejected, rej)
    for note in result.notes:
        err.print(f"note: {note}")
    rate = result.acceptance_rate or 0.0
    out.print(
        f"wrote {len(result.rows)} question(s) to {args.out} "
        f"({result.candidates} candidates, acceptance {rate:.0%})"
    )
    out.print("by type: " + ", ".join(f"{k}={v}" for k, v in sorted(result.by_type.items())))
    if result.rejected:
        out.print(f"rejected {len(result.rejected)} candidate(s), written to {rej}:")
        for reason, n in result.rejected_by_reason.items():
            out.print(f"  {reason}: {n}  ({REASONS.get(reason, '')})")
    gs, cs = result.generator_stats, result.critic_stats
    spend = _spend(gs) + (f"; critic {_spend(cs)}" if cs else "")
    out.print(f"generator {spend}; {result.seconds:.1f} s")
    if _embedded(generator) and _embedded(critic) and result.rows:
        out.print(
            f"[bold yellow]read every row of {args.out} before you use it:[/bold yellow] the "
            "generator and the critic are the small embedded model, which writes and accepts "
            "wrong references; a stronger --critic (or --judge) catches more"
        )
    if not result.rows:
        err.print(
            f"error: no question passed the filter ({result.candidates} candidates; reasons in "
            f"{rej}); try more documents, --attempts, or a stronger --judge"
        )
        return EXIT_FAILED
    if len(result.rows) < args.size:
        err.print(
            f"[yellow]only {len(result.rows)} of {args.size} questions passed the filter; "
            "try more documents, --attempts, or a stronger --judge[/yellow]"
        )
    return 0


def _embedded(judge: Any) -> bool:
    """Whether a judge is the embedded llama.cpp model (its name starts with ``local:``)."""
    return str(getattr(judge, "name", "")).startswith("local:")


def _spend(st: Mapping[str, Any]) -> str:
    return (
        f"{st.get('calls', 0)} calls, {st.get('prompt_tokens', 0):,}+"
        f"{st.get('completion_tokens', 0):,} tokens, {st.get('cache_hits', 0)} cache hits"
    )


def _mix(text: str | None, default: Mapping[str, float]) -> Mapping[str, float] | str:
    return text if text is not None else dict(default)


def cmd_run(args: argparse.Namespace) -> int:
    # written after every question was asked: checked first, and never over the test set
    checked_output(args.out, "--out file", reads=[("the test set", args.testset)])
    rows = read_testset(args.testset)
    if args.retries < 0:
        raise ConfigError("--retries must be 0 or more")
    fields = HttpFields(
        args.request_field,
        args.answer_field,
        args.contexts_field,
        args.context_text_field,
        args.context_id_field,
    )
    headers = parse_headers(args.header)
    target = make_target(
        args.target,
        fields=fields,
        headers=headers,
        timeout=args.timeout,
        max_connections=args.concurrency,
    )
    show = not args.quiet

    def progress(done: int, total: int) -> None:
        if show and (done == total or done % max(1, total // 10) == 0):
            err.print(f"  {done}/{total} answered")

    result = run_sync(
        lambda: arun(
            rows,
            target,
            concurrency=args.concurrency,
            timeout=args.timeout,
            retries=args.retries,
            progress=progress,
        )
    )
    write_jsonl(result.rows, args.out)
    lat = sorted(r["metadata"]["latency_s"] for r in result.rows if not r["metadata"]["error"])
    median = f", median latency {lat[len(lat) // 2]:.2f} s" if lat else ""
    out.print(
        f"wrote {len(result.rows)} row(s) to {args.out}: {len(result.rows) - result.failed} answered, "
        f"{result.failed} failed{median}; {result.seconds:.1f} s"
    )
    for reason, n in result.errors.items():
        out.print(f"  [red]failed[/red] {n}: {reason}")
    if result.rows and result.failed == len(result.rows):
        err.print(
            f"error: every call to the target failed ({result.failed} of {len(result.rows)}); "
            f"{args.out} holds no response to evaluate. Check --target and the fields above.",
            markup=False,
        )
        return EXIT_FAILED
    out.print(f"next: ragsight evaluate {args.out}")
    return 0
