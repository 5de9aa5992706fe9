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

Every cut is recorded twice: in the prompt (the marker, stored with the judge call) and as a
:class:`Truncation` appended to the caller's record (per sample, in the analyses).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_WINDOW",
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
MIN_KEEP = 32  # never cut a text below this many tokens (then the call itself may overflow)
_MARKER_TOKENS = 12  # room left for the marker itself

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Truncation:
    """One cut: ``field`` names the text (``contexts[3]``, ``response``), ``tokens`` its length
    before and ``kept`` after (both as the judge counts tokens), ``window`` the window assumed."""

    field: str
    tokens: int
    kept: int
    window: int

    @property
    def cut(self) -> int:
        return self.tokens - self.kept

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "tokens": self.tokens, "kept": self.kept,
                "cut": self.cut, "window": self.window}


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


def fit_texts(
    texts: Sequence[str], budget: int, count: Counter, *, field: str | Sequence[str], window: int,
) -> tuple[list[str], list[Truncation]]:
    """Cut ``texts`` so that together they take at most ``budget`` tokens, longest first.

    ``field`` names them in the records: one name per text, or one name for all (then one text is
    ``field`` and several are ``field[i]``, 1-based as the prompts number chunks).
    """
    items = list(texts)
    if not items:
        return items, []
    budget = max(budget, MIN_KEEP * len(items))
    if sum(_byte_len(t) for t in items) <= budget:
        return items, []
    sizes = [_count(count, t) for t in items]
    if sum(sizes) <= budget:
        return items, []
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
    notes: list[Truncation] = []
    for i, (text, size) in enumerate(zip(items, sizes), start=1):
        if size <= cap:
            out.append(text)
            continue
        new, before, kept = truncate_text(text, cap, count)
        out.append(new)
        if not isinstance(field, str):
            name = field[i - 1]
        else:
            name = field if len(items) == 1 else f"{field}[{i}]"
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
) -> list[str]:
    """``texts`` cut to fit one call of ``judge`` (a Judge or a provider; None: unchanged).

    The budget is the judge's window less ``output_tokens`` (the reply's max_tokens), the template
    allowance and the ``alongside`` texts that go into the same call uncut. ``output_per_token``
    reserves reply tokens in proportion to the kept text (a reply that labels each sentence).
    Cuts are appended to ``record``.
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
    out, notes = fit_texts(texts, budget, count, field=field, window=window)
    if record is not None:
        record.extend(notes)
    return out
