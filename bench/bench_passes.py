"""What one llama.cpp forward pass costs on this CPU, by the number of tokens in it.

    .venv/bin/python bench/bench_passes.py                 # both parts, about 3 minutes
    .venv/bin/python bench/bench_passes.py --part passes   # only the pass-cost curve

Why it matters: generation makes one pass per token, prompt-lookup drafts and parallel
generation put a few tokens in each pass, and the verdict tails of the embedded judge are passes
of about 30 tokens after a cached prefix. Whether any of these tricks can pay depends on how the
cost of a pass grows with its tokens, which this script measures with the default judge model
(Qwen2.5-Coder-1.5B, as loaded by ragsight) and synthetic tokens (the content of the tokens does
not change the arithmetic):

- ``passes``: after a 600-token prefix, passes of k tokens, each token in a sequence of its own
  (as in parallel generation) with logits for every token (generation needs them), median of
  ``--reps`` passes; and the same in one sequence without logits (as a prompt is read).
- ``tails``: 17 tails of 33 tokens after a 600-token prefix (a sample's claim verdicts and
  priors), evaluated one after another in a one-sequence context, and all in one batch, each tail
  in its own sequence of a 17-sequence context with a unified KV cache.

Reads nothing from ``../shared``. Times depend on the machine's load: run it on a quiet machine
and compare only figures printed by the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

PREFIX = 600


def make_llm(path: str, n_seq: int) -> Any:
    import llama_cpp
    from llama_cpp import _internals

    llm = llama_cpp.Llama(model_path=path, n_ctx=4096, n_threads=2, n_threads_batch=2, n_batch=1024,
                          n_ubatch=1024, verbose=False, seed=0)
    if n_seq > 1:  # llama-cpp-python makes one-sequence contexts; replace it (as a prototype would)
        params = llm.context_params
        params.n_seq_max = n_seq
        params.kv_unified = True
        ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        old, llm._ctx = llm._ctx, ctx
        old.close()
    return llm


def decode(llm: Any, items: list[tuple[int, int, int, bool]]) -> float:
    """One llama_decode of (token, position, sequence, logits?) items; its wall time."""
    b = llm._batch.batch
    for j, (tok, pos, seq, logits) in enumerate(items):
        b.token[j], b.pos[j], b.n_seq_id[j], b.logits[j] = tok, pos, 1, logits
        b.seq_id[j][0] = seq
    b.n_tokens = len(items)
    t0 = time.perf_counter()
    llm._ctx.decode(llm._batch)
    return time.perf_counter() - t0


def prefix(llm: Any, tokens: list[int]) -> float:
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    return decode(llm, [(t, i, 0, i == len(tokens) - 1) for i, t in enumerate(tokens)])


def part_passes(path: str, tokens: list[int], reps: int) -> None:
    sizes = (1, 2, 3, 4, 8, 16, 32)
    llm = make_llm(path, max(sizes))
    print(f"prefix of {PREFIX} tokens: {prefix(llm, tokens):.2f} s")
    for n in range(1, max(sizes)):
        llm._ctx.kv_cache_seq_cp(0, n, 0, PREFIX)
    print("| tokens in the pass | k sequences, logits for all: ms | ms per token | one sequence, no logits: ms | ms per token |")
    print("|---|---|---|---|---|")
    for k in sizes:
        par, one = [], []
        for _ in range(reps):
            par.append(decode(llm, [(1000 + j, PREFIX, j, True) for j in range(k)]))
            for s in range(k):
                llm._ctx.kv_cache_seq_rm(s, PREFIX, -1)
            one.append(decode(llm, [(1000 + j, PREFIX + j, 0, j == k - 1) for j in range(k)]))
            llm._ctx.kv_cache_seq_rm(0, PREFIX, -1)
        a, b = 1000 * statistics.median(par), 1000 * statistics.median(one)
        print(f"| {k} | {a:.0f} | {a / k:.1f} | {b:.0f} | {b / k:.1f} |", flush=True)


def part_tails(path: str, tokens: list[int], tails: list[list[int]], reps: int) -> None:
    one_seq = make_llm(path, 1)
    t_prefix = prefix(one_seq, tokens)
    n_tail = sum(len(t) for t in tails)
    seq_times = []
    for _ in range(reps):
        t = 0.0
        for tail in tails:
            t += decode(one_seq, [(tok, PREFIX + i, 0, i == len(tail) - 1) for i, tok in enumerate(tail)])
            one_seq._ctx.kv_cache_seq_rm(0, PREFIX, -1)
        seq_times.append(t)
    del one_seq
    multi = make_llm(path, len(tails))
    prefix(multi, tokens)
    batch_times = []
    for _ in range(reps):
        for s in range(1, len(tails)):
            multi._ctx.kv_cache_seq_cp(0, s, 0, PREFIX)
        batch_times.append(decode(multi, [(tok, PREFIX + i, s, i == len(tail) - 1)
                                          for s, tail in enumerate(tails) for i, tok in enumerate(tail)]))
        for s in range(len(tails)):
            multi._ctx.kv_cache_seq_rm(s, PREFIX if s == 0 else -1, -1)
    a, b = statistics.median(seq_times), statistics.median(batch_times)
    print(f"prefix of {PREFIX} tokens: {t_prefix:.2f} s ({1000 * t_prefix / PREFIX:.1f} ms per token)")
    print(f"{len(tails)} tails, {n_tail} tokens: one after another {a:.2f} s ({1000 * a / n_tail:.1f} ms per token); "
          f"in one batch {b:.2f} s ({1000 * b / n_tail:.1f} ms per token); median of {reps}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["passes", "tails", "all"], default="all")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import random

    from ragsight.judge._model_files import resolve_model

    path = str(resolve_model("qwen2.5-coder-1.5b", progress=False))
    rng = random.Random(0)
    tokens = [rng.randrange(1000, 20000) for _ in range(PREFIX)]
    tails = [[rng.randrange(1000, 20000) for _ in range(33)] for _ in range(17)]
    if args.part in ("passes", "all"):
        part_passes(path, tokens, args.reps)
    if args.part in ("tails", "all"):
        part_tails(path, tokens, tails, max(2, args.reps // 4))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
