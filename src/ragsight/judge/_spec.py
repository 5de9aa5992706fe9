"""Which judge a run asks: :func:`make_judge` builds the Judge a name describes."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._catalogue import agreement_notice
from ._judge import Judge
from ._litellm import LITELLM_KINDS, LiteLLMProvider, litellm_model
from ._local import LocalProvider
from ._openai import OpenAIProvider
from ._policy import RetryPolicy
from ._protocol import JudgeProvider

__all__ = ["DEFAULT_NOTICE", "make_judge"]

DEFAULT_NOTICE = "No judge configured. "  # then the embedded judge's agreement line (_catalogue.py)


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

