"""Calls out: what every call to a model server shares, below the judge and the embedder.

``_http`` (the client, headers, keys and their redaction, error mapping), ``_retry`` (the one
retry rule), ``_limiter`` (the adaptive number of calls in flight per provider), ``_budget`` (how
much untrusted text one call may carry, and how the rest is cut), ``_cost`` (the dated price
table, the user's prices, tokens into dollars).
"""

from __future__ import annotations

from ._budget import FENCE_TOKENS, Truncation, fit_for_judge
from ._cost import (
    Price,
    PriceTable,
    describe_cost,
    format_limit,
    format_usd,
    load_prices,
    parse_price_flags,
    price_for,
    prices_from_config,
    stale_note,
)
from ._http import (
    MIN_SECRET_CHARS,
    build_headers,
    clip,
    display_url,
    error_from_response,
    error_from_transport,
    error_text,
    make_client,
    parse_json_body,
    parse_retry_after,
    redact,
    redact_answer,
    resolve_api_key,
    resolve_base_url,
    secrets_of,
    timeout_error,
)
from ._limiter import (
    Limiter,
    LimiterStats,
    Permit,
    call_priority,
    current_priority,
    merge_limiter_stats,
)
from ._retry import (
    OVERLOAD_BUDGET_S,
    Backoff,
    Failure,
    RetryExhaustedError,
    classify,
    may_try_again,
    retry,
)

__all__ = [
    "FENCE_TOKENS",
    "MIN_SECRET_CHARS",
    "OVERLOAD_BUDGET_S",
    "Backoff",
    "Failure",
    "Limiter",
    "LimiterStats",
    "Permit",
    "Price",
    "PriceTable",
    "RetryExhaustedError",
    "Truncation",
    "build_headers",
    "call_priority",
    "classify",
    "clip",
    "current_priority",
    "describe_cost",
    "display_url",
    "error_from_response",
    "error_from_transport",
    "error_text",
    "fit_for_judge",
    "format_limit",
    "format_usd",
    "load_prices",
    "make_client",
    "may_try_again",
    "merge_limiter_stats",
    "parse_json_body",
    "parse_price_flags",
    "parse_retry_after",
    "price_for",
    "prices_from_config",
    "redact",
    "redact_answer",
    "resolve_api_key",
    "resolve_base_url",
    "retry",
    "secrets_of",
    "stale_note",
    "timeout_error",
]
