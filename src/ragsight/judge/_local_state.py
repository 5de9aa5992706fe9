"""The embedded judge's reusable state: llama.cpp prefix states kept between calls (a small LRU),
greedy generations given up on and kept for their retries, and the token-level helpers of its
decoding (common prefix, loop detection, prompt-lookup drafts). The rules that keep a prompt's
numbers the same whichever call came before (row groups, minimum batch) are here with the
reasons measured for them."""

from __future__ import annotations

from typing import Any

__all__ = ["_DRAFT_MAX", "_MAX_SUSPENDED", "_MIN_BATCH", "_MIN_RESTORE_GAIN", "_MIN_SAVE_TOKENS", "_ROW_GROUP",
           "_PrefixStates", "_Suspended", "_common_prefix", "_draft", "_looping"]

# Prefix states: restore a saved state when it shares at least this many more tokens with the new
# prompt than the live cache does; save one after a call that evaluated at least this many tokens.
_MIN_RESTORE_GAIN = 32
_MIN_SAVE_TOKENS = 48
_MAX_STATES = 12
_MAX_STATE_BYTES = 512 * 1024 * 1024
# Same prompt, same numbers. llama.cpp's CPU kernels for this model's quantization multiply the
# prompt's rows in groups of 4; a row left over in a partial group goes another way and rounds
# differently (logits up to 0.53 apart on one Qwen2.5 prompt evaluated whole vs split at token
# 157). So a row's KV depends on where its evaluation began, and reusing a prefix of any length
# made a verdict depend on which call came before (concurrency, cache hits, a resume). Every
# evaluation therefore starts at a multiple of _ROW_GROUP, and only rows computed inside a full
# group are reused: the numbers are then those of evaluating the prompt from its start.
_ROW_GROUP = 4
# ... provided each batch of prompt rows holds at least this many: a batch of fewer rows goes
# through other kernels again (measured on the AVX-512 build: a prompt's last logits after a
# cached prefix equal those of a fresh evaluation when the tail evaluated is 8 rows or more, and
# differ by up to 0.5 with a tail of 1-7 rows, so the same prompt sent twice, as a call retried
# after a time-out is, came back with other numbers and at times another greedy reply). So a
# tail is never shorter than this, and a prompt is split into batches of n_batch rows with the
# last batch never shorter than this either.
_MIN_BATCH = 8
# Prompt-lookup drafts: match the last 3 (else 2) tokens, propose up to this many that followed.
_DRAFT_NGRAM = (3, 2)
_DRAFT_MAX = 8
# Abandoned greedy generations kept for their retries (each holds its KV rows: about 30 kB a token).
_MAX_SUSPENDED = 4


def _common_prefix(a: Any, b: Any) -> int:
    """Length of the common prefix of two int arrays."""
    import numpy as np

    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


class _PrefixStates:
    """A small LRU of saved llama.cpp sequence states (KV cache and the tokens behind it)."""

    def __init__(self, max_states: int = _MAX_STATES, max_bytes: int = _MAX_STATE_BYTES) -> None:
        self.max_states = max_states
        self.max_bytes = max_bytes
        # (tokens ndarray, ctypes buffer), most recent last; the tokens are the state's reusable
        # rows only (see _ROW_GROUP), its buffer may hold more, cut off when restored
        self._items: list[tuple[Any, Any]] = []
        self.saves = 0
        self.restores = 0

    def best(self, tokens: Any) -> tuple[int, int]:
        """(index, common prefix length) of the saved state sharing the longest prefix."""
        best_i, best_n = -1, 0
        for i, (toks, _) in enumerate(self._items):
            n = _common_prefix(toks, tokens)
            if n > best_n:
                best_i, best_n = i, n
        return best_i, best_n

    def save(self, llama_cpp: Any, llm: Any, reusable: int) -> None:
        import ctypes

        toks = llm.input_ids[:min(reusable, int(llm.n_tokens))].copy()
        # A saved state that is a prefix of this one is superseded by it.
        self._items = [it for it in self._items if _common_prefix(it[0], toks) < len(it[0])]
        size = int(llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        if int(llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buf, size, 0)) != size:
            return
        self._items.append((toks, buf))
        self.saves += 1
        while self._items and (len(self._items) > self.max_states
                               or sum(len(b) for _, b in self._items) > self.max_bytes):
            self._items.pop(0)

    def restore(self, llama_cpp: Any, llm: Any, i: int) -> bool:
        toks, buf = self._items.pop(i)
        self._items.append((toks, buf))  # most recently used
        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        if int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(buf), 0)) == 0:
            llm._ctx.kv_cache_seq_rm(0, 0, -1)
            llm.n_tokens = 0
            return False
        llm.input_ids[: len(toks)] = toks
        llm.n_tokens = len(toks)
        llm._requires_eval = True
        self.restores += 1
        return True


class _Suspended:
    """A greedy generation stopped because its caller gave up: where it stood, to go on from."""

    def __init__(self, key: tuple[Any, ...], out: list[int], tok: int, next_check: int,
                 n_rows: int, state: Any) -> None:
        self.key = key  # (prompt tokens, grammar, prompt-lookup setting)
        self.out = out  # tokens generated and evaluated (their rows follow the prompt's)
        self.tok = tok  # the next token, chosen and accepted by the grammar, not yet evaluated
        self.next_check = next_check  # when the loop check runs next
        self.n_rows = n_rows  # rows of the saved sequence: the prompt's and out's
        self.state = state  # llama_state_seq_get_data of sequence 0


# A greedy output that ends with three copies of the same block of tokens (12 to 200 tokens
# long) is a loop: a small model repeating its list or sentence would go on to max_tokens.
_LOOP_PERIODS = (12, 200)
_LOOP_COPIES = 3


def _looping(out: list[int]) -> bool:
    """Whether ``out`` ends with _LOOP_COPIES copies of one block of _LOOP_PERIODS tokens."""
    lo, hi = _LOOP_PERIODS
    for p in range(lo, min(hi, len(out) // _LOOP_COPIES) + 1):
        tail = out[-p:]
        if all(out[-(k + 1) * p: -k * p] == tail for k in range(1, _LOOP_COPIES)):
            return True
    return False


def _draft(history: list[int], n_prompt: int, limit: int) -> list[int]:
    """Prompt-lookup draft: the tokens that followed the latest earlier occurrence of the last
    few tokens of ``history`` (searched in the prompt and in the output so far)."""
    if limit <= 0:
        return []
    for n in _DRAFT_NGRAM:
        if len(history) <= n:
            continue
        tail = history[-n:]
        first = tail[0]
        # latest occurrence first: the nearest copy is the likeliest to continue
        for start in range(len(history) - n - 1, -1, -1):
            if history[start] == first and history[start: start + n] == tail:
                follow = history[start + n: start + n + limit]
                if follow:
                    return follow
    return []
