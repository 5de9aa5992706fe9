"""The embedded judge: llama.cpp in-process (llama-cpp-python), no key, no network.

Two kinds of call:

- :meth:`LocalJudge.score_choices` reads P(Yes) / P(No) from the next-token logits after the
  prompt: one forward pass, a probability rather than a label. The prompt is evaluated with
  prefix reuse: tokens shared with the previous call (the contexts, put first by our prompts) stay
  in the KV cache and only the differing tail (the claim) is processed.
- :meth:`LocalJudge.complete` generates JSON under a grammar built from the request's schema.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError
from ._protocol import ChoiceScores, Completion, JudgeRequest, Message, ProviderError

__all__ = ["WEAK_MODELS", "LocalJudge"]

# Models whose verdicts were measured to be poor: selecting one warns.
WEAK_MODELS = {
    "qwen2.5-coder-0.5b": "its verdicts are far weaker (worse than chance on a human-labelled set)",
    "smollm2-135m": "it is a plumbing test model, useless as a judge",
}

_MODELS: dict[tuple[str, int], Any] = {}
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


class LocalJudge:
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
        from ._model_files import DEFAULT_MODEL

        self.spec = str(model) if model else DEFAULT_MODEL
        self.model = Path(self.spec).name if self.spec.endswith(".gguf") else self.spec
        self.name = f"local:{self.model}"
        self.n_ctx = n_ctx
        self.context_window: int | None = n_ctx
        self.n_threads = n_threads or max(1, min(os.cpu_count() or 2, 8))
        self.progress = progress
        self._llm: Any = None
        self._lock = threading.Lock()
        self._template: Any = None
        self.tokens_evaluated = 0  # prompt tokens actually processed (after prefix reuse)
        self.tokens_prompted = 0  # prompt tokens sent
        if self.spec in WEAK_MODELS:
            import warnings

            warnings.warn(f"the embedded model {self.spec}: {WEAK_MODELS[self.spec]}. Use it for speed "
                          "tests only; the default qwen2.5-coder-1.5b is far better.", LocalJudgeWarning,
                          stacklevel=2)

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

    def _eval_reusing_prefix(self, llm: Any, tokens: list[int]) -> Any:
        import numpy as np

        llama_cpp = _import_llama()
        n_cached = int(llm.n_tokens)
        cached = llm.input_ids[:n_cached].tolist() if n_cached else []
        prefix = 0
        limit = min(len(cached), len(tokens) - 1)  # always evaluate at least the last token
        while prefix < limit and cached[prefix] == tokens[prefix]:
            prefix += 1
        llm.n_tokens = prefix
        llm.eval(tokens[prefix:])
        self.tokens_evaluated += len(tokens) - prefix
        self.tokens_prompted += len(tokens)
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)

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

    def _complete_sync(self, request: JudgeRequest) -> Completion:
        llm = self._load()
        prompt = self.render(request.messages)
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        max_tokens = min(request.max_tokens, max(16, self.n_ctx - len(tokens)))
        self._check_window(len(tokens), 16)
        kwargs: dict[str, Any] = {}
        structured = "prompt"
        if request.schema is not None:
            from llama_cpp import LlamaGrammar

            kwargs["grammar"] = LlamaGrammar.from_json_schema(json.dumps(request.schema), verbose=False)
            structured = "grammar"
        with self._lock:
            n_before = int(llm.n_tokens)
            cached = llm.input_ids[:n_before].tolist() if n_before else []
            reuse = 0
            while reuse < min(len(cached), len(tokens)) and cached[reuse] == tokens[reuse]:
                reuse += 1
            out = llm.create_completion(
                prompt=tokens, max_tokens=max_tokens, temperature=request.temperature,
                seed=request.seed if request.seed is not None else 0, top_k=1 if request.temperature == 0 else 40,
                stop=["<|im_end|>", "<|endoftext|>"], **kwargs,
            )
        self.tokens_evaluated += len(tokens) - reuse
        self.tokens_prompted += len(tokens)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=choice.get("text") or "",
            prompt_tokens=int(usage.get("prompt_tokens", len(tokens))),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
            model=self.model,
            structured=structured,
        )

    async def complete(self, request: JudgeRequest) -> Completion:
        return await asyncio.to_thread(self._complete_sync, request)

    async def preflight(self) -> None:
        await asyncio.to_thread(self._load)

    async def aclose(self) -> None:
        return None
