"""The embedded judge: llama.cpp in-process (llama-cpp-python), no key, no network.

Two kinds of call:

- :meth:`LocalProvider.score_choices` reads P(Yes) / P(No) from the next-token logits after the
  prompt: one forward pass, a probability rather than a label. The prompt is evaluated with
  prefix reuse: tokens shared with the previous call (the contexts, put first by our prompts) stay
  in the KV cache and only the differing tail (the claim) is processed.
- :meth:`LocalProvider.complete` generates JSON under a grammar built from the request's schema.
  At temperature 0 it decodes greedily itself: the grammar is checked on the greedy token alone
  and applied to the whole vocabulary only when it rejects that token, which gives the greedy
  output under the grammar. An output that ends with three copies of one block of tokens is a
  loop (a small model repeating its list): it is stopped there and returned as cut off, and the
  Judge closes a repeating list (judge/_parse.py) or asks again. Prompt-lookup drafts (the tokens
  that followed the latest n-gram of the output in the prompt, checked in one batch) are built
  but off by default: checked in a batch, a token's logits differ from a one-token pass, and
  some replies change (figures at ``prompt_lookup`` below).

A greedy generation given up on by its caller (a time-out on a busy machine) keeps its state: the
tokens generated so far and their KV cache, saved once the thread stops. When the call is sent
again (same prompt, grammar and settings), it goes on from there instead of starting over, and
gives the reply an uninterrupted call gives (the same rows, computed the same way).

llama.cpp keeps the KV cache of the last prompt only. A few saved cache states (a small LRU) keep
the long prefixes of earlier prompts too, so calls of different kinds can alternate without
re-evaluating each other's prefixes (e.g. the contexts shared by claim verdicts, chunk relevance
and explanations, or the instruction shared by the two claim extractions of a sample).

Calls run one at a time in a worker thread (the model is not re-entrant), so the event loop is
never blocked. A model is loaded once per process and path, on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MissingExtraError
from ._local_state import (
    _DRAFT_MAX,
    _MAX_SUSPENDED,
    _MIN_BATCH,
    _MIN_RESTORE_GAIN,
    _MIN_SAVE_TOKENS,
    _ROW_GROUP,
    _common_prefix,
    _draft,
    _looping,
    _PrefixStates,
    _Suspended,
)
from ._protocol import ChoiceScores, Completion, JudgeRequest, Message, ProviderError

__all__ = ["WEAK_MODELS", "LocalProvider"]

# Models whose verdicts were measured to be poor: selecting one warns.
WEAK_MODELS = {
    "qwen2.5-coder-0.5b": "its verdicts are far weaker (worse than chance on a human-labelled set)",
    "smollm2-135m": "it is a plumbing test model, useless as a judge",
}

_MODELS: dict[tuple[str, int], Any] = {}
_MODEL_LOCKS: dict[tuple[str, int], threading.Lock] = {}  # one call at a time per loaded model
_LOAD_LOCK = threading.Lock()

@atexit.register
def _close_models() -> None:
    # Free the models while the interpreter is intact; llama-cpp-python's __del__ fails noisily
    # when it runs during interpreter shutdown.
    while _MODELS:
        _, llm = _MODELS.popitem()
        with contextlib.suppress(Exception):
            llm.close()

_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class LocalJudgeWarning(UserWarning):
    """The chosen embedded model is known to judge poorly."""


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingExtraError("the embedded judge", "local", "llama_cpp") from exc
    return llama_cpp


def _threads_from_env() -> int | None:
    """``RAGSIGHT_THREADS``: the CPU threads of the embedded judge (default: the cores, up to 8).
    One thread per process is the fastest way to run several evaluations on one small machine:
    llama.cpp's threads spin while they wait, so two processes of two threads on two cores crawl."""
    raw = os.environ.get("RAGSIGHT_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 256:
        raise ConfigError(f"RAGSIGHT_THREADS must be a whole number from 1 to 256, not {raw!r}")
    return int(raw)


class LocalProvider:
    """A judge running a GGUF model in-process.

    ``model``: a registered name (``qwen2.5-coder-1.5b``, the default; ``qwen2.5-coder-0.5b``;
    ``smollm2-135m``) or the path of any GGUF file (e.g. a 7B-8B instruct model).
    """

    supports_choices = True
    max_concurrency = 1

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        progress: bool = True,
    ) -> None:
        from ._model_files import DEFAULT_MODEL, _spec

        self.spec = str(model) if model else DEFAULT_MODEL
        if not self.spec.endswith(".gguf"):
            _spec(self.spec)  # an unknown name stops here (with the nearest one), not at first use
        self.model = Path(self.spec).name if self.spec.endswith(".gguf") else self.spec
        self.name = f"local:{self.model}"
        self.n_ctx = n_ctx
        self.context_window: int | None = n_ctx
        self.n_threads = n_threads or _threads_from_env() or max(1, min(os.cpu_count() or 2, 8))
        self.progress = progress
        self._llm: Any = None
        self._lock = threading.Lock()  # replaced by the loaded model's lock
        self._template: Any = None
        self._states = _PrefixStates()
        # Prompt-lookup drafts in greedy decoding: off by default, as they change replies. A batch
        # of 2 or more rows goes through other kernels than a one-token pass (logits up to 0.6
        # apart on the AVX-512 build), so the greedy path can diverge: on the 15 generations of 3
        # airline samples x 4 metrics, drafts of up to 8 tokens made 358 passes instead of 795
        # (48% of drafts kept) and generated in 46 s instead of 66 s, but 4 of the 15 replies
        # differed (drafts of up to 2: 474 passes, 50 s, 1 differed).
        self.prompt_lookup = False
        self.tokens_evaluated = 0  # prompt tokens actually processed (after prefix reuse)
        self.calls_abandoned = 0  # generations stopped early because the caller gave up (timeout)
        self.tokens_prompted = 0  # prompt tokens sent
        self.tokens_generated = 0  # output tokens of complete()
        self.decode_passes = 0  # forward passes spent generating them
        self.tokens_drafted = 0  # prompt-lookup draft tokens evaluated in those passes
        self.drafts_accepted = 0  # ... of which the greedy decoding kept
        self.loops_stopped = 0  # greedy outputs stopped early because they repeated themselves
        self.generations_resumed = 0  # abandoned greedy generations taken up again by their retry
        # for the speeds kept at the end (aclose): prompt tokens evaluated by _eval_tail and the
        # seconds it took; tokens of greedy generation and the seconds it took (sampled aside)
        self.tokens_timed_prompt = 0
        self.seconds_prompt = 0.0
        self.tokens_timed_generated = 0
        self.seconds_generating = 0.0
        self._suspended: list[_Suspended] = []  # most recent last, at most _MAX_SUSPENDED
        if self.spec in WEAK_MODELS:
            import warnings

            warnings.warn(f"the embedded model {self.spec}: {WEAK_MODELS[self.spec]}. Use it for speed "
                          "tests only; the default qwen2.5-coder-1.5b is far better.", LocalJudgeWarning,
                          stacklevel=2)

    @property
    def identity(self) -> dict[str, Any]:
        """What the cache key holds of this judge: a registered model by the sha256 its file is
        verified against; a GGUF path by its absolute path, size and modification time (a file
        replaced by another quantization at the same path is another judge)."""
        from ._model_files import MODELS

        spec = MODELS.get(self.spec)
        if spec is not None:
            return {"provider": "local", "model": spec.name, "sha256": spec.sha256}
        path = Path(self.spec).expanduser().resolve()
        try:
            st = path.stat()
            file: dict[str, Any] = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        except OSError:
            file = {"path": str(path)}
        return {"provider": "local", "model": self.model, "file": file}

    # ---- loading --------------------------------------------------------------------------------

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        llama_cpp = _import_llama()
        from ._model_files import resolve_model

        path = resolve_model(self.spec, progress=self.progress)
        key = (str(path), self.n_ctx)
        with _LOAD_LOCK:
            llm = _MODELS.get(key)
            if llm is None:
                llm = llama_cpp.Llama(
                    model_path=str(path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                    n_threads_batch=self.n_threads, n_batch=512, verbose=False, seed=0,
                )
                _MODELS[key] = llm
            self._lock = _MODEL_LOCKS.setdefault(key, threading.Lock())
        self._llm = llm
        return llm

    def _formatter(self, llm: Any) -> Any:
        if self._template is None:
            import jinja2
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            source = llm.metadata.get("tokenizer.chat_template") or _CHATML
            env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True,
                                                lstrip_blocks=True)
            self._template = env.from_string(source)
        return self._template

    def render(self, messages: Sequence[Message]) -> str:
        llm = self._load()
        tpl = self._formatter(llm)
        return str(tpl.render(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True, bos_token="", eos_token="",
        ))

    def count_tokens(self, text: str) -> int:
        llm = self._load()
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    # ---- choices --------------------------------------------------------------------------------

    def _reuse_prefix(self, llm: Any, tokens: list[int]) -> int:
        """Keep the longest cached prefix of ``tokens`` (the live KV cache, or a saved state when
        that shares clearly more) and return its length; at least the last token stays to be
        evaluated, so the logits are fresh. The prefix kept is a multiple of _ROW_GROUP made of
        reusable rows only, so what is evaluated next gives the numbers a fresh evaluation of
        ``tokens`` gives, whatever came before."""
        # the leading rows of the live KV cache computed in full groups (kept on the model, which
        # every provider of this process loading the same file shares)
        n_cached = min(int(llm.n_tokens), getattr(llm, "_ragsight_reusable", 0))
        prefix = _common_prefix(llm.input_ids[:n_cached], tokens) if n_cached else 0
        i, n_saved = self._states.best(tokens)
        if i >= 0 and n_saved - prefix >= _MIN_RESTORE_GAIN and self._states.restore(_import_llama(), llm, i):
            prefix = n_saved
        elif i >= 0 and n_saved - prefix >= _MIN_RESTORE_GAIN:
            prefix = 0  # the restore failed and cleared the cache
        prefix = max(0, min(prefix, len(tokens) - _MIN_BATCH, int(llm.n_tokens)))
        prefix -= prefix % _ROW_GROUP
        # the rows evaluated next are reusable up to the last full group of the prompt
        llm._ragsight_reusable = len(tokens) - len(tokens) % _ROW_GROUP if len(tokens) >= _MIN_BATCH else 0
        llm.n_tokens = prefix
        llm._ctx.kv_cache_seq_rm(0, prefix, -1)
        llm._requires_eval = True
        return prefix

    def _eval_tail(self, llm: Any, tokens: list[int], prefix: int) -> None:
        """Evaluate ``tokens[prefix:]`` after the kept prefix, in batches of at most n_batch rows
        whose last holds at least _MIN_BATCH rows (the one before it gives up _MIN_BATCH rows
        when needed), each starting at a multiple of _ROW_GROUP: the rows get the numbers of a
        fresh evaluation whatever the prefix kept."""
        t0 = time.perf_counter()
        step = max(_MIN_BATCH, int(llm.n_batch) - int(llm.n_batch) % _ROW_GROUP)
        start, end = prefix, len(tokens)
        while start < end:
            stop = min(end, start + step)
            if 0 < end - stop < _MIN_BATCH:
                stop -= _MIN_BATCH
            llm.eval(tokens[start:stop])
            start = stop
        self.seconds_prompt += time.perf_counter() - t0
        self.tokens_timed_prompt += len(tokens) - prefix

    def _eval_reusing_prefix(self, llm: Any, tokens: list[int]) -> Any:
        import numpy as np

        llama_cpp = _import_llama()
        prefix = self._reuse_prefix(llm, tokens)
        self._eval_tail(llm, tokens, prefix)
        self._count_prompt(llm, len(tokens), prefix)
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)

    def _count_prompt(self, llm: Any, n_tokens: int, prefix: int) -> None:
        self.tokens_evaluated += n_tokens - prefix
        self.tokens_prompted += n_tokens
        if n_tokens - prefix >= _MIN_SAVE_TOKENS:
            self._states.save(_import_llama(), llm, llm._ragsight_reusable)

    def _choice_token_ids(self, llm: Any, choice: str) -> list[int]:
        ids: set[int] = set()
        for variant in (choice, " " + choice, choice.lower(), choice.capitalize(), choice.upper()):
            toks = llm.tokenize(variant.encode("utf-8"), add_bos=False, special=False)
            if toks:
                ids.add(toks[0])
        return sorted(ids)

    def _score_choices_sync(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        import numpy as np

        llm = self._load()
        prompt = self.render(request.messages)
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        self._check_window(len(tokens), 1)
        with self._lock:
            logits = self._eval_reusing_prefix(llm, tokens)
        m = float(logits.max())
        log_z = m + math.log(float(np.exp(logits - m).sum()))
        raw: dict[str, float] = {}
        for c in choices:
            ids = self._choice_token_ids(llm, c)
            vals = logits[ids] - log_z
            mm = float(vals.max())
            raw[c] = mm + math.log(float(np.exp(vals - mm).sum()))
        top = max(raw.values())
        denom = sum(math.exp(v - top) for v in raw.values())
        probs = {c: math.exp(v - top) / denom for c, v in raw.items()}
        return ChoiceScores(probs=probs, prompt_tokens=len(tokens), raw_logprobs=raw)

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        return await asyncio.to_thread(self._score_choices_sync, request, choices)

    # ---- JSON generation ------------------------------------------------------------------------

    def _check_window(self, n_prompt: int, n_out: int) -> None:
        if n_prompt + n_out > self.n_ctx:
            raise ProviderError(
                f"the prompt ({n_prompt} tokens) and reply ({n_out}) exceed the embedded judge's "
                f"window of {self.n_ctx} tokens", retryable=False,
            )

    def _complete_sync(self, request: JudgeRequest, cancel: threading.Event | None = None) -> Completion:
        llm = self._load()
        prompt = self.render(request.messages)
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        max_tokens = min(request.max_tokens, max(16, self.n_ctx - len(tokens)))
        self._check_window(len(tokens), 16)
        gbnf = None
        structured = "prompt"
        if request.schema is not None:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            gbnf = json_schema_to_gbnf(json.dumps(request.schema))
            structured = "grammar"
        with self._lock:
            if cancel is not None and cancel.is_set():  # given up on while waiting for the model
                raise self._abandoned("before it started")
            if request.temperature == 0:
                out_tokens, finish = self._greedy(llm, tokens, max_tokens, gbnf, cancel)
                text = llm.detokenize(out_tokens).decode("utf-8", errors="replace")
                n_out = len(out_tokens)
            else:
                text, n_out, finish = self._sampled(llm, tokens, max_tokens, gbnf, request, cancel)
        return Completion(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=n_out,
            finish_reason=finish,
            model=self.model,
            structured=structured,
        )

    def _sampled(self, llm: Any, tokens: list[int], max_tokens: int, gbnf: str | None,
                 request: JudgeRequest, cancel: threading.Event | None = None) -> tuple[str, int, str]:
        from llama_cpp import LlamaGrammar, StoppingCriteriaList

        prefix = self._reuse_prefix(llm, tokens)
        kwargs: dict[str, Any] = {"grammar": LlamaGrammar.from_string(gbnf, verbose=False)} if gbnf else {}
        out = llm.create_completion(
            prompt=tokens, max_tokens=max_tokens, temperature=request.temperature,
            seed=request.seed if request.seed is not None else 0, top_k=40,
            stop=["<|im_end|>", "<|endoftext|>"],
            stopping_criteria=StoppingCriteriaList([lambda _ids, _logits: cancel is not None and cancel.is_set()]),
            **kwargs,
        )
        if cancel is not None and cancel.is_set():
            raise self._abandoned("generation stopped")
        self._count_prompt(llm, len(tokens), prefix)
        choice = out["choices"][0]
        n_out = int((out.get("usage") or {}).get("completion_tokens", 0))
        self.tokens_generated += n_out
        self.decode_passes += n_out
        return choice.get("text") or "", n_out, choice.get("finish_reason") or "stop"

    def _abandoned(self, when: str) -> ProviderError:
        self.calls_abandoned += 1
        return ProviderError(f"the call was abandoned by its caller (timed out): {when}", retryable=False)

    def _greedy(self, llm: Any, tokens: list[int], max_tokens: int, gbnf: str | None,
                cancel: threading.Event | None = None) -> tuple[list[int], str]:
        """Greedy decoding under the grammar, with prompt-lookup drafts checked in one batch.

        Each step takes the argmax of the logits; the grammar is asked about that one token and
        applied to the whole vocabulary only when it rejects it, which gives the same token as
        applying it first. Draft tokens are kept while they equal the greedy choice; the KV cache
        is cut after the last kept one. ``cancel`` (set when the caller gave up on the call, e.g.
        on a timeout) stops the generation at the next step, so an abandoned call does not hold
        the model for the rest of its ``max_tokens``.
        """
        import ctypes

        import numpy as np

        llama_cpp = _import_llama()
        ctx = llm._ctx.ctx
        vocab = llm._model.vocab
        n_vocab = llm.n_vocab()
        key = (tuple(tokens), gbnf, self.prompt_lookup)
        resumed = self._resume(llm, key, max_tokens)
        if resumed is None:
            prefix = self._reuse_prefix(llm, tokens)
            self._eval_tail(llm, tokens, prefix)
            self._count_prompt(llm, len(tokens), prefix)
        else:
            self.tokens_prompted += len(tokens)
        grammar = None
        if gbnf is not None:
            grammar = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
            if not grammar:
                raise ProviderError("the JSON grammar for the embedded judge did not compile", retryable=False)
            if resumed is not None:
                for t in (*resumed.out, resumed.tok):
                    llama_cpp.llama_sampler_accept(grammar, t)
        one = (llama_cpp.llama_token_data * 1)()
        one_arr = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        full: Any = None

        def pick(idx: int) -> int:
            nonlocal full
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, idx), shape=(n_vocab,))
            tok = int(np.argmax(logits))
            if grammar is None:
                return tok
            one[0].id, one[0].logit, one[0].p = tok, float(logits[tok]), 0.0
            one_arr.size, one_arr.selected, one_arr.sorted = 1, -1, False
            llama_cpp.llama_sampler_apply(grammar, ctypes.byref(one_arr))
            if not math.isfinite(one[0].logit):
                if full is None:
                    full = np.zeros(n_vocab, dtype=[("id", np.intc), ("logit", np.single), ("p", np.single)])
                    full["id"] = np.arange(n_vocab, dtype=np.intc)
                full["logit"] = logits
                full["p"] = 0.0
                arr = llama_cpp.llama_token_data_array(
                    data=full.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)),
                    size=n_vocab, selected=-1, sorted=False)
                llama_cpp.llama_sampler_apply(grammar, ctypes.byref(arr))
                tok = int(np.argmax(full["logit"]))
            llama_cpp.llama_sampler_accept(grammar, tok)
            return tok

        def stops(tok: int) -> bool:
            return bool(llama_cpp.llama_vocab_is_eog(vocab, tok))

        t_gen = time.perf_counter()
        out: list[int] = list(resumed.out) if resumed is not None else []
        n_resumed = len(out)
        history = [*tokens, *out]
        finish = "length"
        next_check = resumed.next_check if resumed is not None else 4
        try:
            if resumed is not None:
                tok = resumed.tok
            else:
                tok = pick(-1)
                self.decode_passes += 1
            while True:
                if cancel is not None and cancel.is_set():
                    self._suspend(llm, key, out, tok, next_check)
                    raise self._abandoned("generation stopped")
                if stops(tok):
                    finish = "stop"
                    break
                out.append(tok)
                history.append(tok)
                if len(out) >= max_tokens or int(llm.n_tokens) + 1 >= self.n_ctx:
                    break
                if len(out) >= next_check:  # every 4 tokens, drafts included
                    next_check = len(out) + 4
                    if _looping(out):
                        # stopped early, as repeating itself: the Judge closes a repeating list
                        # (judge/_parse.py) or asks again, once
                        self.loops_stopped += 1
                        finish = "repeat"
                        break
                room = min(max_tokens - len(out), self.n_ctx - int(llm.n_tokens) - 2)
                draft = _draft(history, len(tokens), min(_DRAFT_MAX, room)) if self.prompt_lookup else []
                batch = [tok, *draft]
                n_past = int(llm.n_tokens)
                llm._ctx.kv_cache_seq_rm(0, n_past, -1)
                llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
                llm._ctx.decode(llm._batch)
                llm.input_ids[n_past: n_past + len(batch)] = batch
                llm.n_tokens = n_past + len(batch)
                self.decode_passes += 1
                self.tokens_drafted += len(draft)
                kept = 0
                done = False
                for i in range(len(batch)):
                    tok = pick(i)
                    if i < len(draft) and tok == draft[i] and not stops(tok):
                        kept += 1
                        out.append(tok)
                        history.append(tok)
                        if len(out) >= max_tokens:
                            done = True
                            break
                        continue
                    break
                self.drafts_accepted += kept
                llm.n_tokens = n_past + 1 + kept
                llm._ctx.kv_cache_seq_rm(0, llm.n_tokens, -1)
                if done:
                    break
        finally:
            if grammar is not None:
                llama_cpp.llama_sampler_free(grammar)
            llm._requires_eval = True
            self.seconds_generating += time.perf_counter() - t_gen
            self.tokens_timed_generated += len(out) - n_resumed
        self.tokens_generated += len(out)
        return out, finish

    def _suspend(self, llm: Any, key: tuple[Any, ...], out: list[int], tok: int, next_check: int) -> None:
        """Keep an abandoned greedy generation (the KV rows of its prompt and output) for its retry."""
        import ctypes

        llama_cpp = _import_llama()
        self._suspended = [held for held in self._suspended if held.key != key]
        size = int(llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        if int(llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buf, size, 0)) == size:
            self._suspended.append(_Suspended(key, list(out), tok, next_check, int(llm.n_tokens), buf))
            del self._suspended[:-_MAX_SUSPENDED]

    def _resume(self, llm: Any, key: tuple[Any, ...], max_tokens: int) -> _Suspended | None:
        """The suspended generation of this very request, its rows restored into the KV cache, or
        None (nothing suspended for it, or the restore failed: then the cache is empty)."""
        # the others are kept: other calls (other abandoned ones too) may come between an
        # abandoned call and its retry
        found = [held for held in self._suspended if held.key == key]
        if not found:
            return None
        held = found[0]
        self._suspended.remove(held)
        if len(held.out) >= max_tokens:
            return None
        llama_cpp = _import_llama()
        tokens = key[0]
        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        if int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, held.state, len(held.state), 0)) == 0:
            llm._ctx.kv_cache_seq_rm(0, 0, -1)
            llm.n_tokens = 0
            llm._ragsight_reusable = 0
            return None
        llm.input_ids[: held.n_rows] = [*tokens, *held.out]
        llm.n_tokens = held.n_rows
        # the prompt's full groups are reusable, as after evaluating it (see _reuse_prefix)
        llm._ragsight_reusable = len(tokens) - len(tokens) % _ROW_GROUP if len(tokens) >= _MIN_BATCH else 0
        self.generations_resumed += 1
        return held

    async def complete(self, request: JudgeRequest) -> Completion:
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self._complete_sync, request, cancel)
        except asyncio.CancelledError:
            cancel.set()  # the thread cannot be killed; tell it to stop generating
            raise

    async def preflight(self) -> None:
        await asyncio.to_thread(self._load)

    async def aclose(self) -> None:
        """Keep the speeds this provider measured (prompt tokens evaluated and tokens generated per
        second) for the dry run's time estimate, when it did enough work to tell."""
        from ._estimate import record_local_speed

        record_local_speed(self.model, self.n_threads, self.tokens_timed_prompt, self.seconds_prompt,
                           self.tokens_timed_generated, self.seconds_generating)
