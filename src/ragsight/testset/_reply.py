"""A target's reply and its failures: :class:`TargetReply`, :class:`TargetError`, and reading a
reply (a mapping at dotted paths, or an object with attributes) into its answer, contexts, their
ids and document spans. Every kind of target (``_target_*.py``) answers with these.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..calls import MIN_SECRET_CHARS
from ..errors import ConfigError

__all__ = [
    "Target",
    "TargetError",
    "TargetReply",
    "env_secrets",
    "get_path",
    "reply_from",
    "set_path",
]


class TargetError(Exception):
    """One call to the target failed. ``retryable``: a later attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class TargetReply:
    answer: str
    contexts: tuple[str, ...] | None
    context_ids: tuple[str, ...] | None
    model: str | None = None
    # per context: {"doc_id", "start", "end"} when the target said where the chunk comes from
    context_spans: tuple[dict[str, Any] | None, ...] | None = None


Target = Callable[[str], Awaitable[TargetReply]]

_MISSING = object()


def get_path(data: Any, path: str) -> Any:
    """The value at a dotted path (``data.answer``, ``choices.0.text``); ``_MISSING`` if absent."""
    cur = data
    for part in path.split(".") if path else []:
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif (
            isinstance(cur, list)
            and part.lstrip("-").isdigit()
            and -len(cur) <= int(part) < len(cur)
        ):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur = data
    for part in parts[:-1]:
        nxt = cur.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"--request-field {path}: '{part}' is already a value, not an object")
        cur = nxt
    cur[parts[-1]] = value


def _span(get: Callable[[str], Any], where: str) -> dict[str, Any] | None:
    """A context's document span, when it names one: doc_id and integer start <= end."""
    doc, start, end = get("doc_id"), get("start"), get("end")
    if doc is None and start is None and end is None:
        return None
    if (
        doc is None
        or isinstance(start, bool)
        or isinstance(end, bool)
        or not isinstance(start, int)
        or not isinstance(end, int)
        or not 0 <= start <= end
    ):
        raise TargetError(
            f"{where}: a context's span needs doc_id and integer start <= end (character "
            f"offsets), got doc_id={doc!r}, start={start!r}, end={end!r}",
            retryable=False,
        )
    return {"doc_id": str(doc), "start": start, "end": end}


def _context_item(
    item: Any, text_field: str, id_field: str, where: str
) -> tuple[str, str | None, dict[str, Any] | None]:
    if isinstance(item, str):
        return item, None, None
    if isinstance(item, Mapping):
        text = get_path(item, text_field)
        if not isinstance(text, str):
            raise TargetError(
                f"{where}: a context has no text string at '{text_field}'", retryable=False
            )
        cid = get_path(item, id_field)
        return (
            text,
            (None if cid is _MISSING or cid is None else str(cid)),
            _span(item.get, where),
        )
    text = getattr(item, "text", None)
    if isinstance(text, str):
        cid = getattr(item, "id", None)
        return (
            text,
            None if cid is None else str(cid),
            _span(lambda name: getattr(item, name, None), where),
        )
    raise TargetError(
        f"{where}: a context is {type(item).__name__}, not text or an object with text",
        retryable=False,
    )


def reply_from(
    data: Any,
    *,
    answer_field: str = "answer",
    contexts_field: str = "contexts",
    context_text_field: str = "text",
    context_id_field: str = "id",
    where: str = "target",
) -> TargetReply:
    """Read a reply: a mapping (dotted paths) or an object with attributes."""
    if isinstance(data, Mapping):
        answer = get_path(data, answer_field)
        if answer is _MISSING and answer_field == "answer":
            answer = get_path(data, "response")
        contexts = get_path(data, contexts_field)
        model = data.get("model")
    else:
        answer = getattr(data, answer_field, _MISSING)
        contexts = getattr(data, contexts_field, _MISSING)
        model = getattr(data, "model", None)
    if answer is _MISSING:
        raise TargetError(f"{where}: the reply has no answer at '{answer_field}'", retryable=False)
    if not isinstance(answer, str):
        raise TargetError(
            f"{where}: the answer at '{answer_field}' is {type(answer).__name__}, not text",
            retryable=False,
        )
    if contexts is _MISSING or contexts is None:
        return TargetReply(answer, None, None, model if isinstance(model, str) else None)
    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, Sequence):
        raise TargetError(
            f"{where}: the contexts at '{contexts_field}' are not a list", retryable=False
        )
    items = [_context_item(c, context_text_field, context_id_field, where) for c in contexts]
    texts = tuple(t for t, _, _ in items)
    ids = tuple(i for _, i, _ in items)
    spans = tuple(sp for _, _, sp in items)
    all_ids = tuple(i for i in ids if i is not None)
    return TargetReply(
        answer,
        texts,
        all_ids if len(all_ids) == len(ids) and ids else None,
        model if isinstance(model, str) else None,
        spans if any(sp is not None for sp in spans) else None,
    )


_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def env_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of environment variables named like credentials (``*KEY*``, ``*TOKEN*``,
    ``*SECRET*``, ``*PASSWORD*``), at least 8 characters long: what a target's error output
    must not carry into the store, reports and exports."""
    env = os.environ if environ is None else environ
    return tuple(v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= MIN_SECRET_CHARS)
