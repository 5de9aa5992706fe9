"""The truncation policy: how much untrusted text one judge call may carry, and how text that does
not fit is cut.

The budget of a call is the judge's context window, less the reply's ``max_tokens``, less
:data:`TEMPLATE_ALLOWANCE` tokens for the prompt template, less the other fenced texts of the same
call (the claims, the question). The window is ``provider.context_window``: the embedded judge's
``n_ctx`` (4,096 by default), or what was configured. An OpenAI-compatible server does not say
its window, so when none is configured the window is taken as :data:`DEFAULT_WINDOW` (32,768
tokens): generous for current API models (128k) and for 7-8B models served by vLLM (32k). A server
with a smaller window (Ollama defaults to 2,048-4,096 and cuts silently) must be given its window
(``OpenAIProvider(..., context_window=N)``); otherwise the server's own error or truncation applies.

When the texts of a call do not fit, the longest are cut first: every text longer than a common cap
is cut to that cap and shorter texts stay whole (a 100k-token chunk is cut; the short chunks beside
it are not). A cut text keeps its beginning (three quarters of the kept tokens) and its end (one
quarter): the middle is replaced by the marker ``[... truncated N tokens ...]``, so the judge, and
anyone reading the stored prompt, sees where and how much was cut. Cuts fall on whitespace.

The budget bounds the whole prompt, not only the long texts: each fenced text also costs its tags
(:data:`FENCE_TOKENS`), a reply that answers per text costs tokens per text (``output_per_item``),
and no text is cut below :data:`MIN_KEEP` tokens. When even that cannot fit (10,000 short chunks
against a 32,768-token window), the last texts of the list (the lowest-ranked chunks) are
dropped whole, as few as needed, and the drop is recorded like a cut: ``contexts[971..10000]``
with ``dropped`` texts and their tokens. Callers that judge each text (chunk relevance) then
judge the kept ones only, and the evidence says which were left out.

Every cut is recorded twice: in the prompt (the marker, stored with the judge call) and as a
:class:`Truncation` appended to the caller's record (per sample, in the analyses).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_WINDOW",
    "FENCE_TOKENS",
    "HEAD_SHARE",
    "TEMPLATE_ALLOWANCE",
    "Truncation",
    "fit_for_judge",
    "fit_texts",
    "marker",
    "truncate_text",
    "window_of",
]

DEFAULT_WINDOW = 32_768
TEMPLATE_ALLOWANCE = 512
HEAD_SHARE = 0.75
MIN_KEEP = 32  # never cut a text below this many tokens (texts are dropped whole instead)
_MARKER_TOKENS = 12  # room left for the marker itself
FENCE_TOKENS = 12  # the tags around one numbered fenced text: <context n="123"> ... </context>

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Truncation:
    """One cut: ``field`` names the text (``contexts[3]``, ``response``), ``tokens`` its length
    before and ``kept`` after (both as the judge counts tokens), ``window`` the window assumed.
    A drop of whole texts is one record too: ``field`` names the range (``contexts[971..10000]``),
    ``dropped`` how many texts, ``tokens`` their length, ``kept`` 0."""

    field: str
    tokens: int
    kept: int
    window: int
    dropped: int = 0

    @property
    def cut(self) -> int:
        return self.tokens - self.kept

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "tokens": self.tokens, "kept": self.kept,
                               "cut": self.cut, "window": self.window}
        if self.dropped:
            out["dropped"] = self.dropped
        return out


def marker(n_tokens: int) -> str:
    """The text put where ``n_tokens`` tokens were cut out."""
    return f"[... truncated {n_tokens} tokens ...]"


def window_of(provider: Any) -> int:
    """The context window assumed for ``provider``: its ``context_window``, else DEFAULT_WINDOW."""
    window = getattr(provider, "context_window", None)
    return int(window) if isinstance(window, int) and window > 0 else DEFAULT_WINDOW


def _byte_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _count(count: Counter, text: str) -> int:
    # A byte-level tokenizer never makes more tokens than bytes: short texts are not counted.
    return 0 if not text else count(text)


def _snap_end(text: str, pos: int) -> int:
    """``pos`` moved back to the last whitespace before it (when one is near)."""
    if pos >= len(text):
        return len(text)
    cut = text.rfind(" ", max(0, pos - 200), pos)
    nl = text.rfind("\n", max(0, pos - 200), pos)
    best = max(cut, nl)
    return best if best > 0 else pos


def _snap_start(text: str, pos: int) -> int:
    """``pos`` moved forward to just after the next whitespace (when one is near)."""
    if pos <= 0:
        return 0
    window = text[pos : pos + 200]
    for i, ch in enumerate(window):
        if ch.isspace():
            return pos + i + 1
    return pos


def truncate_text(text: str, keep: int, count: Counter) -> tuple[str, int, int]:
    """``text`` cut to about ``keep`` tokens: (new text, tokens before, tokens kept).

    The head keeps HEAD_SHARE of the tokens, the tail the rest, the marker stands between them.
    Texts that already fit are returned unchanged.
    """
    total = _count(count, text)
    keep = max(MIN_KEEP, keep)
    if total <= keep:
        return text, total, total
    keep -= _MARKER_TOKENS
    chars_per_token = len(text) / max(1, total)
    target = keep
    for _ in range(8):
        head_chars = int(target * HEAD_SHARE * chars_per_token)
        tail_chars = int(target * (1 - HEAD_SHARE) * chars_per_token)
        head_end = _snap_end(text, head_chars)
        tail_start = _snap_start(text, max(head_end, len(text) - tail_chars))
        head = text[:head_end].rstrip()
        tail = text[tail_start:].lstrip() if tail_start < len(text) else ""
        kept_tokens = _count(count, head) + _count(count, tail)
        if kept_tokens <= keep or target <= MIN_KEEP // 2:
            cut_tokens = max(0, total - kept_tokens)
            parts = [head, marker(cut_tokens)] + ([tail] if tail else [])
            return "\n".join(parts), total, kept_tokens
        target = max(MIN_KEEP // 2, int(target * keep / kept_tokens * 0.95))
    raise AssertionError("unreachable")  # pragma: no cover


def _names(field: str | Sequence[str], n: int) -> list[str]:
    if not isinstance(field, str):
        return list(field)
    return [field] if n == 1 else [f"{field}[{i}]" for i in range(1, n + 1)]


def _range_name(names: Sequence[str], first: int, last: int) -> str:
    """``contexts[971..10000]`` for names[first..last] of the form ``contexts[k]``."""
    a, b = names[first], names[last]
    if first == last:
        return a
    if a.endswith("]") and "[" in a and b.endswith("]") and a.split("[")[0] == b.split("[")[0]:
        return f"{a[:-1]}..{b.split('[')[-1]}"
    return f"{a}..{b}"


def fit_texts(
    texts: Sequence[str], budget: int, count: Counter, *, field: str | Sequence[str], window: int,
    per_item: int = 0, keep_first: int = 0, drop: bool = False,
) -> tuple[list[str], list[Truncation]]:
    """Cut ``texts`` so that together they take at most ``budget`` tokens, longest first.

    ``field`` names them in the records: one name per text, or one name for all (then one text is
    ``field`` and several are ``field[i]``, 1-based as the prompts number chunks). ``per_item``
    tokens are charged for each text after the first ``keep_first`` (its fence tags, its part of
    the reply). With ``drop``, when the texts cannot fit even at :data:`MIN_KEEP` tokens each,
    the last ones are dropped whole (never the first ``keep_first``) and the result is shorter;
    without it, every text keeps at least MIN_KEEP tokens whatever the budget.
    """
    items = list(texts)
    if not items:
        return items, []
    names = _names(field, len(items))
    notes: list[Truncation] = []
    if not drop:
        budget = max(budget, MIN_KEEP * len(items))
    extra = max(0, len(items) - keep_first) * per_item
    if sum(_byte_len(t) for t in items) + extra <= budget:
        return items, []
    sizes = [_count(count, t) for t in items]
    if sum(sizes) + extra <= budget:
        return items, []
    if drop:
        # the longest prefix whose texts fit at MIN_KEEP tokens each (with their per-item cost)
        need = 0
        kept_n = 0
        for i, size in enumerate(sizes):
            cost = min(size, MIN_KEEP) + (per_item if i >= keep_first else 0)
            if need + cost > budget and i >= keep_first:
                break
            need += cost
            kept_n = i + 1
        if kept_n < len(items):
            notes.append(Truncation(_range_name(names, kept_n, len(items) - 1), sum(sizes[kept_n:]), 0,
                                    window, dropped=len(items) - kept_n))
            items, sizes, names = items[:kept_n], sizes[:kept_n], names[:kept_n]
        budget = max(0, budget - max(0, len(items) - keep_first) * per_item)
        if sum(sizes) <= budget:
            return items, notes
        budget = max(budget, MIN_KEEP * len(items))
    else:
        budget = max(MIN_KEEP * len(items), budget - extra)
    # water-filling: the largest cap such that sum(min(size, cap)) <= budget
    order = sorted(sizes)
    remaining = budget
    cap = order[-1]
    for i, size in enumerate(order):
        share = remaining // (len(order) - i)
        if size <= share:
            remaining -= size
            continue
        cap = share
        break
    out: list[str] = []
    for text, size, name in zip(items, sizes, names):
        if size <= cap:
            out.append(text)
            continue
        new, before, kept = truncate_text(text, cap, count)
        out.append(new)
        notes.append(Truncation(name, before, kept, window))
    return out, notes


def fit_for_judge(
    judge: Any,
    texts: Sequence[str],
    *,
    field: str | Sequence[str],
    output_tokens: int,
    alongside: Sequence[str] = (),
    output_per_token: float = 0.0,
    record: MutableSequence[Truncation] | None = None,
    per_item: int = 0,
    keep_first: int = 0,
    drop: bool = False,
) -> list[str]:
    """``texts`` cut to fit one call of ``judge`` (a Judge or a provider; None: unchanged).

    The budget is the judge's window less ``output_tokens`` (the reply's max_tokens), the template
    allowance and the ``alongside`` texts that go into the same call uncut. ``output_per_token``
    reserves reply tokens in proportion to the kept text (a reply that labels each sentence).
    ``per_item``, ``keep_first`` and ``drop`` are those of :func:`fit_texts`: a list of chunks
    passes its fence tags and reply tokens per chunk, and ``drop=True`` so that the lowest-ranked
    chunks are left out when not even a short piece of each fits. Cuts and drops are appended to
    ``record``.
    """
    if judge is None or not texts:
        return list(texts)
    provider = getattr(judge, "provider", judge)
    window = window_of(provider)
    count: Counter = provider.count_tokens
    fixed = TEMPLATE_ALLOWANCE + max(0, output_tokens)
    fixed += sum(_count(count, t) for t in alongside if _byte_len(t) > 64) + sum(
        _byte_len(t) for t in alongside if _byte_len(t) <= 64
    )
    budget = int((window - fixed) / (1.0 + max(0.0, output_per_token)))
    out, notes = fit_texts(texts, budget, count, field=field, window=window, per_item=per_item,
                           keep_first=keep_first, drop=drop)
    if record is not None:
        record.extend(notes)
    return out
