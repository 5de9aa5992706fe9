"""The judge cache's keys: what of a provider changes its answers (:func:`provider_identity`)
and the key of one step (:func:`step_key`). A change here changes every key, and a store's cached
answers are then asked again: the tests of cache keys and resume hold them still."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..calls import display_url
from ._protocol import JudgeRequest

__all__ = ["provider_identity", "step_key"]


def provider_identity(provider: Any) -> dict[str, Any]:
    """What of a provider changes its answers, for the cache key and the run's record: the
    provider's own ``identity`` mapping when it has one (the embedded judge: its model file; a
    wrapping provider: its inner one's), else its name, model, server (``base_url`` or
    ``api_base``, without user info or query) and ``api_version``."""
    own = getattr(provider, "identity", None)
    if callable(own):
        own = own()
    if isinstance(own, Mapping):
        return {str(k): v for k, v in own.items()}
    ident: dict[str, Any] = {"provider": provider.name, "model": provider.model}
    for attr in ("base_url", "api_base"):  # OpenAI-compatible servers; LiteLLM's endpoint
        base = getattr(provider, attr, None)
        if isinstance(base, str) and base:
            ident["base_url"] = display_url(base)
            break
    version = getattr(provider, "api_version", None)
    if isinstance(version, str) and version:
        ident["api_version"] = version
    return ident


def step_key(
    judge_model: str, request: JudgeRequest, prompt_hash: str, kind: str, extra: Any = None,
    identity: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one judge step: the provider's identity (server, model, model file:
    :func:`provider_identity`), the prompt and its hash, the rendered messages, the output
    schema, the sampling settings and the kind of step. Two servers that serve different models
    under one name therefore never share an answer."""
    basis = {
        "model": judge_model,
        "provider": dict(identity) if identity is not None else None,
        "prompt": [request.prompt_id, request.prompt_version, prompt_hash],
        "messages": [[m.role, m.content] for m in request.messages],
        "schema": request.schema,
        "settings": [request.max_tokens, request.temperature, request.seed],
        "kind": kind,
        "extra": extra,
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
