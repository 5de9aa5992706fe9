"""Several sequences decoded in one pass by the embedded judge's llama.cpp: the cost of a
generated token by the number of sequences a pass, and whether a sequence's logits depend on the
sequences decoded beside it.

    .venv/bin/python bench/batch_decode.py

Claim-extraction-like prompts are made from the shared kit's airline samples
(``../shared/bench/airline_20.jsonl``); each is read into its own sequence of one llama.cpp
context (unified KV cache, 16 sequences), then every pass decodes the next greedy token of each.
Printed: the median seconds of 8 passes with 1, 2, 4, 8 and 16 sequences; then sequence 0's
logits over 6 passes when decoded alone, beside prompts 1-15, beside prompts 4-18, and beside
1-15 again, compared bitwise. The timing wants a quiet machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _where
from _data import read_jsonl

SEQUENCES = 16


def main() -> None:
    import llama_cpp
    from llama_cpp import _internals as internals

    from ragsight.judge._local import LocalProvider

    provider = LocalProvider(progress=False)
    llm = provider._load()
    prompts = []
    for r in read_jsonl(_where.kit() / "airline_20.jsonl")[:20]:
        text = ("<|im_start|>system\nYou split a response into short factual claims.<|im_end|>\n"
                f"<|im_start|>user\nQuestion: {r['user_input']}\nResponse: {r['response']}\n"
                "List each claim on its own line.<|im_end|>\n<|im_start|>assistant\n")
        prompts.append(llm.tokenize(text.encode(), add_bos=False, special=True))
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 8192, 512, 512
    params.n_seq_max = SEQUENCES
    params.n_threads = params.n_threads_batch = provider.n_threads
    params.kv_unified = True
    ctx = internals.LlamaContext(model=llm._model, params=params, verbose=False)
    batch = internals.LlamaBatch(n_tokens=512, embd=0, n_seq_max=SEQUENCES, verbose=False)
    n_vocab = llm.n_vocab()

    def logits(i: int) -> Any:
        ptr = llama_cpp.llama_get_logits_ith(ctx.ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()

    def prefill(seqs: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx.ctx), True)
        state = {}
        for sid, pi in seqs:
            batch.reset()
            batch.add_sequence(prompts[pi], sid, False)
            ctx.decode(batch)
            state[sid] = (int(np.argmax(logits(len(prompts[pi]) - 1))), len(prompts[pi]))
        return state

    def step(state: dict[int, tuple[int, int]], ids: list[int]) -> tuple[float, dict[int, Any]]:
        batch.reset()
        for j, sid in enumerate(ids):
            tok, pos = state[sid]
            b = batch.batch
            b.token[j], b.pos[j], b.n_seq_id[j], b.logits[j] = tok, pos, 1, True
            b.seq_id[j][0] = sid
        batch.batch.n_tokens = len(ids)
        t0 = time.perf_counter()
        ctx.decode(batch)
        took = time.perf_counter() - t0
        out = {}
        for j, sid in enumerate(ids):
            out[sid] = logits(j)
            state[sid] = (int(np.argmax(out[sid])), state[sid][1] + 1)
        return took, out

    print(f"{provider.n_threads} threads")
    for n in (1, 2, 4, 8, 16):
        state = prefill([(s, s) for s in range(n)])
        per_pass = float(np.median([step(state, list(range(n)))[0] for _ in range(8)]))
        print(f"{n:2d} sequences a pass: {per_pass * 1000:.0f} ms a pass, {per_pass / n * 1000:.0f} ms a token")

    def first_sequence(companions: list[int]) -> Any:
        seqs = [(0, 0)] + [(k + 1, pi) for k, pi in enumerate(companions)]
        state = prefill(seqs)
        return np.array([step(state, [s for s, _ in seqs])[1][0] for _ in range(6)])

    alone = first_sequence([])
    beside = first_sequence(list(range(1, 16)))
    others = first_sequence(list(range(4, 19)))
    again = first_sequence(list(range(1, 16)))
    print(f"16 a pass, other companions: identical {bool((beside == others).all())} "
          f"(largest difference {float(np.abs(beside - others).max()):.3g})")
    print(f"16 a pass, the same companions again: identical {bool((beside == again).all())}")
    print(f"alone against 16 a pass: identical {bool((alone == beside).all())} "
          f"(largest difference {float(np.abs(alone - beside).max()):.3g}; same greedy tokens "
          f"{bool((alone.argmax(1) == beside.argmax(1)).all())})")


if __name__ == "__main__":
    main()
