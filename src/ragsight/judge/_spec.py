"""Which judge a run asks: :class:`JudgeSpec` (a name, a provider or a Judge, with its server,
API version, ceiling of calls in flight and prices), and :func:`make_judge`, which builds the
Judge a name describes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..calls import PriceTable, load_prices
from ..errors import ConfigError
from ._catalogue import agreement_notice
from ._judge import Judge
from ._litellm import LITELLM_KINDS, LiteLLMProvider, litellm_model
from ._local import LocalProvider
from ._openai import OpenAIProvider
from ._policy import RetryPolicy
from ._protocol import JudgeProvider

__all__ = ["DEFAULT_NOTICE", "MAX_CONCURRENCY", "JudgeSpec", "make_judge"]

DEFAULT_NOTICE = "No judge configured. "  # then the embedded judge's agreement line (_catalogue.py)
MAX_CONCURRENCY = 4096
"""The most calls in flight a judge spec may ask for (``--judge-concurrency``): each is a
connection, a task and a slot of the limiter, built before the first call."""


def _say(notice: Any, text: str) -> None:
    if notice is not None:
        notice(text)


def make_judge(spec: Any = None, *, base_url: str | None = None, policy: RetryPolicy | None = None,
               notice: Any = None, max_concurrency: int | None = None,
               api_version: str | None = None) -> Judge:
    """A Judge from a spec: ``"openai:MODEL"``, ``"local"``, ``"local:NAME"``,
    ``"local:PATH.gguf"``, ``"anthropic:MODEL"``, ``"gemini:MODEL"``, ``"bedrock:MODEL"``,
    ``"azure:DEPLOYMENT"``, ``"vertex_ai:MODEL"``, ``"mistral:MODEL"``,
    ``"litellm:PROVIDER/MODEL"`` (those through LiteLLM, ``ragsight[litellm]``), a provider, or a
    Judge (returned as is). None means the embedded judge. ``max_concurrency`` is the
    ceiling of calls in flight to a remote judge (default the provider's, 256 for ``openai:``);
    below it the limit adapts to what the server accepts. ``api_version`` is Azure OpenAI's."""
    if isinstance(spec, Judge):
        return spec
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, JudgeProvider):
            return Judge(spec, policy=policy, max_concurrency=max_concurrency)
        raise ConfigError(f"cannot use {type(spec).__name__} as a judge")
    text = (spec or "local").strip()
    kind, _, rest = text.partition(":")
    if kind in ("openai", "openai-logprobs"):
        if not rest:
            raise ConfigError(f"--judge {kind} needs a model name: {kind}:MODEL, e.g. openai:gpt-4o-mini")
        timeout = policy.call_timeout_s if policy is not None else 60.0
        remote = (OpenAIProvider(rest, base_url=base_url, timeout=timeout, max_concurrency=max_concurrency,
                                 notice=notice, choices=kind == "openai-logprobs")
                  if max_concurrency else OpenAIProvider(rest, base_url=base_url, timeout=timeout, notice=notice,
                                           choices=kind == "openai-logprobs"))
        return Judge(remote, policy=policy)
    if kind in LITELLM_KINDS:
        if not rest or (kind == "litellm" and "/" not in rest):
            example = "litellm:PROVIDER/MODEL" if kind == "litellm" else f"{kind}:MODEL"
            raise ConfigError(f"--judge {kind} needs a model name: {example}")
        timeout = policy.call_timeout_s if policy is not None else 60.0
        return Judge(LiteLLMProvider(litellm_model(kind, rest), api_base=base_url, api_version=api_version,
                                     name=text, timeout=timeout, max_concurrency=max_concurrency or 256),
                     policy=policy)
    if kind == "local":
        provider = LocalProvider(rest or None)  # an unknown name stops here, before the notice
        _say(notice, (DEFAULT_NOTICE if spec is None else "") + agreement_notice(provider.model))
        return Judge(provider, policy=policy)
    raise ConfigError(
        f"unknown judge '{text}'. Use openai:MODEL (with --base-url for vLLM, Ollama, llama.cpp, LiteLLM), "
        "openai-logprobs:MODEL (yes/no verdicts from log-probabilities), "
        "anthropic:MODEL, gemini:MODEL, bedrock:MODEL, azure:DEPLOYMENT, litellm:PROVIDER/MODEL "
        "(pip install 'ragsight[litellm]'), local (the embedded judge), local:qwen2.5-coder-0.5b, "
        "or local:PATH.gguf."
    )


def _checked_price(model: Any, value: Any) -> tuple[Any, ...]:
    """A price of ``JudgeSpec(prices=...)`` as ``--price`` takes one: (input, output[, source])
    dollars per million tokens, each a finite number, 0 or more (a negative or NaN price would
    make every call free and the money limit blind)."""
    where = f"JudgeSpec(prices=...) for {model!r}"
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"JudgeSpec(prices=...): a model name is a non-empty text, not {model!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) not in (2, 3):
        raise ConfigError(f"{where}: a price is (input, output) dollars per million tokens, not {value!r}")
    for x in value[:2]:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ConfigError(f"{where}: a price must be a number of dollars (0 or more), not {x!r}")
    return tuple(value)


@dataclass(frozen=True)
class JudgeSpec:
    """The judge of a run and how to reach it, given whole as ``judge=`` to
    :func:`ragsight.evaluate` (which also takes the bare name, a provider or a Judge).

    ``model``: ``"openai:MODEL"``, ``"openai-logprobs:MODEL"``, ``"local"``, ``"local:NAME"``,
    ``"local:PATH.gguf"``, ``"anthropic:MODEL"``, ``"gemini:MODEL"``, ``"bedrock:MODEL"``,
    ``"azure:DEPLOYMENT"``, ``"litellm:PROVIDER/MODEL"`` (the LiteLLM ones need
    ``ragsight[litellm]``), a provider, or a Judge; None is the embedded judge (for a resume: the
    run's own). ``base_url``: the OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, a
    LiteLLM proxy) or LiteLLM's endpoint (``--base-url``). ``api_version``: Azure OpenAI's
    (``--api-version``). ``concurrency``: the ceiling of calls in flight to a remote judge
    (``--judge-concurrency``; default the provider's, 256 for ``openai:``); below it the limit
    adapts to what the server accepts. ``prices``: model -> (input, output) US dollars per
    million tokens, or (input, output, source), over the shipped price table (``--price``,
    docs/cost.md).

    Example::

        judge = ragsight.JudgeSpec("openai:qwen2.5-7b-instruct", base_url="http://localhost:8000/v1",
                                   concurrency=32)
        result = ragsight.evaluate("data.jsonl", judge=judge)
    """

    model: str | JudgeProvider | Judge | None = None
    base_url: str | None = None
    api_version: str | None = None
    concurrency: int | None = None
    prices: Mapping[str, Sequence[Any]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.model, JudgeSpec):
            raise ConfigError("JudgeSpec(model=...) takes a judge's name, a provider or a Judge, "
                              "not another JudgeSpec")
        c = self.concurrency
        if c is not None and (isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CONCURRENCY):
            raise ConfigError(f"the judge's concurrency (--judge-concurrency) is a whole number from 1 to "
                              f"{MAX_CONCURRENCY}, not {c!r}")
        if self.prices is not None:  # a copy, frozen in its values: (input, output[, source])
            object.__setattr__(self, "prices", {k: _checked_price(k, v) for k, v in self.prices.items()})

    @classmethod
    def of(cls, judge: JudgeSpec | str | JudgeProvider | Judge | None) -> JudgeSpec:
        """``judge`` as a spec: a spec as it is, anything else as its ``model``."""
        return judge if isinstance(judge, JudgeSpec) else cls(judge)

    @property
    def price_table(self) -> PriceTable:
        """The shipped table with this spec's prices (model -> (input, output) dollars per
        million tokens, or (input, output, source)) over it."""
        given = {k: (float(v[0]), float(v[1]), str(v[2]) if len(v) > 2 else "prices=")
                 for k, v in (self.prices or {}).items()}
        return load_prices().with_overrides(given)

    def make(self, *, policy: RetryPolicy | None = None, notice: Any = None) -> Judge:
        """The Judge this spec describes (see :func:`make_judge`); a Judge given as ``model`` is
        returned as it is."""
        return make_judge(self.model, base_url=self.base_url, policy=policy, notice=notice,
                          max_concurrency=self.concurrency, api_version=self.api_version)
