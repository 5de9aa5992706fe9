"""Citations in a response: the markers, the sentences they end, and the claims they cover.

What the citation metrics share (ALCE-style, Gao et al. 2023): the markers are read from the
response (:func:`parse_citations`), each claim of the shared claim extraction is attached to the
sentence it comes from, and the claim-by-chunk verdicts of the shared verdict step
(``Need.CHUNK_SUPPORT``) say whether each cited chunk supports the claim.

Markers read, mapped to the sample's chunks by 1-based position or by ``retrieved_ids``:

- ``[1]``, ``[1, 3]``, ``[1][3]``, ``[1-3]``, ``【1】`` (and ``【1†source】``);
- ``[doc-7]``: an id of ``retrieved_ids`` (any bracketed item with a digit that is not a number
  is read as an id); ``[Source 2]``, ``[Document 3]``, ``[passage #1]``: a position, unless it is
  one of the ids;
- footnotes ``[^1]`` with a footnote section (``[^1]: doc-7`` or ``[^1]: [2]``); a footnote
  without a definition is read by its label (``[^2]`` is chunk 2).

A marker belongs to the sentence it stands in, or to the sentence it follows (``... fact.[2]``).
A marker that names no chunk (out of range, an unknown id, an unreadable item) is kept with its
problem and counts as a citation that supports nothing.

Caps: the first :data:`MAX_MARKERS` markers of a response are read, and the first
:data:`MAX_SENTENCE_CITATIONS` distinct citations of a sentence count; markers beyond them are
removed from the text as the others are, counted, and said in the evidence (``not_read``) and in
the score's reason. A response of thousands of markers costs what one of a few hundred does (it
used to cost memory in the square of its length: a verdict per citation, each carrying its claim).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._score import ClaimVerdict, Evidence
from ..analyses import ClaimList, Need, SampleAnalyses, VerdictList, content_words, split_sentences
from ._base import Metric

__all__ = [
    "MAX_MARKERS",
    "MAX_SENTENCE_CITATIONS",
    "Citation",
    "CitationMetric",
    "CitationTable",
    "Marker",
    "attach",
    "citation_table",
    "parse_citations",
]

_BRACKET = re.compile(r"\[(?!\^)([^\[\]\n]{1,80})\](?!\()|【([^【】\n]{1,80})】")
_FOOTREF = re.compile(r"\[\^([^\]\s]{1,40})\](?!:)")
_FOOTDEF = re.compile(r"^[ \t]*\[\^([^\]\s]{1,40})\]:[ \t]*(.*)$", re.M)
_INT = re.compile(r"^\d+$")
_RANGE = re.compile(r"^(\d+)\s*[-–]\s*(\d+)$")
_IDLIKE = re.compile(r"^[A-Za-z_][\w.:#/ -]{0,60}$")
_MAX_RANGE = 50
MAX_MARKERS = 200
"""Markers read in one response; the rest are removed from the text, counted and said."""
MAX_SENTENCE_CITATIONS = 20
"""Distinct citations counted in one sentence; the rest are counted and said."""
# "[Source 2]", "[Document 3]", "[passage #1]": a position, when no retrieved id is written so
_NAMED = re.compile(r"^(?:source|doc|document|passage|chunk|context|ref|reference)\s*[#:]?\s+(\d+)$|"
                    r"^(?:source|doc|document|passage|chunk|context|ref|reference)\s*#\s*(\d+)$", re.I)


@dataclass(frozen=True)
class Citation:
    """One cited item: ``chunk`` (1-based) when it names a chunk of the sample, else None with
    the ``problem``."""

    text: str  # the item as written: "2", "doc-7", "^1"
    chunk: int | None
    problem: str = ""


@dataclass(frozen=True)
class Marker:
    """One marker as written (``[1, 3]``), where it stands, and what it cites (``read`` False:
    beyond :data:`MAX_MARKERS`, removed from the text but not read)."""

    text: str
    start: int
    citations: tuple[Citation, ...]
    read: bool = True


@dataclass(frozen=True)
class Sentence:
    text: str
    citations: tuple[Citation, ...]  # distinct, in order of appearance
    markers: tuple[str, ...]


@dataclass(frozen=True)
class CitationTable:
    """The response's sentences with their citations, and for each claim the sentence it was
    attached to (None when no sentence shares a content word with it). ``markers_not_read``:
    markers beyond :data:`MAX_MARKERS`; ``citations_not_read``: citations of a sentence beyond
    :data:`MAX_SENTENCE_CITATIONS`."""

    sentences: tuple[Sentence, ...]
    claim_sentence: tuple[int | None, ...]
    markers: tuple[Marker, ...] = field(default=())
    markers_not_read: int = 0
    citations_not_read: int = 0

    @property
    def not_read(self) -> str:
        """What the caps left out, as a clause ('' when nothing)."""
        parts = []
        if self.markers_not_read:
            parts.append(f"{self.markers_not_read:,} marker(s) beyond the first {MAX_MARKERS} of the response")
        if self.citations_not_read:
            parts.append(f"{self.citations_not_read:,} citation(s) beyond {MAX_SENTENCE_CITATIONS} in a sentence")
        return f"{' and '.join(parts)} not read" if parts else ""

    @property
    def n_citations(self) -> int:
        return sum(len(s.citations) for s in self.sentences)


def _resolve_item(item: str, n_chunks: int, ids: Sequence[str] | None) -> list[Citation]:
    item = item.split("†", 1)[0].strip()  # 【3†source】
    if _INT.match(item):
        k = int(item)
        if 1 <= k <= n_chunks:
            return [Citation(item, k)]
        return [Citation(item, None, f"out of range: the sample has {n_chunks} chunks")]
    if (m := _RANGE.match(item)) is not None:
        a, b = int(m.group(1)), int(m.group(2))
        if a < b and b - a < _MAX_RANGE:
            return [c for k in range(a, b + 1) for c in _resolve_item(str(k), n_chunks, ids)]
        return [Citation(item, None, "unreadable range")]
    if ids is not None:
        lowered = [i.lower() for i in ids]
        if item.lower() in lowered:
            return [Citation(item, lowered.index(item.lower()) + 1)]
    if (named := _NAMED.match(item)) is not None:
        k = int(named.group(1) or named.group(2))
        if 1 <= k <= n_chunks:
            return [Citation(item, k)]
        return [Citation(item, None, f"out of range: the sample has {n_chunks} chunks")]
    if _IDLIKE.match(item) and (ids or any(ch.isdigit() for ch in item)):
        why = "no retrieved chunk has this id" if ids else "the sample has no retrieved_ids to match this id"
        return [Citation(item, None, why)]
    return [Citation(item, None, "unreadable citation")]


def _bracket_citations(body: str, n_chunks: int, ids: Sequence[str] | None) -> tuple[Citation, ...] | None:
    """The citations of a bracket's content, or None when it is not a citation marker at all
    (``[sic]``, ``[see below]``): at least one item must be a number, a range or an id."""
    items = [p.strip() for p in re.split(r"[,;]", body)]
    readable = [p for p in items if p and (
        _INT.match(p.split("†", 1)[0].strip()) or _RANGE.match(p)
        or (ids is not None and p.lower() in (i.lower() for i in ids))
        or (_IDLIKE.match(p) and any(ch.isdigit() for ch in p)))]
    if not readable:
        return None
    return tuple(c for p in items for c in (_resolve_item(p, n_chunks, ids) if p else
                                            [Citation("", None, "empty item")]))


def _footnote_citations(label: str, body: str | None, n_chunks: int,
                        ids: Sequence[str] | None) -> tuple[Citation, ...]:
    if body is None:  # no definition: the label itself
        found = _resolve_item(label, n_chunks, ids)
        if found[0].problem == "unreadable citation":
            return (Citation(f"^{label}", None, "footnote without a definition"),)
        return tuple(Citation(f"^{label}", c.chunk, c.problem) for c in found)
    for m in _BRACKET.finditer(body):
        inner = _bracket_citations(m.group(1) or m.group(2), n_chunks, ids)
        if inner is not None:
            return tuple(Citation(f"^{label}", c.chunk, c.problem) for c in inner)
    for token in re.split(r"[\s,;()]+", body):
        token = token.strip(".:")
        if not token:
            continue
        if _INT.match(token) or (ids is not None and token.lower() in (i.lower() for i in ids)):
            c = _resolve_item(token, n_chunks, ids)[0]
            return (Citation(f"^{label}", c.chunk, c.problem),)
    if ids is not None:  # an id anywhere in the definition ("Source: refund-policy#2")
        for k, i in enumerate(ids, start=1):
            if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", body, re.I):
                return (Citation(f"^{label}", k),)
    return (Citation(f"^{label}", None, f"the footnote names no chunk: {body.strip()[:60]!r}"),)


def parse_citations(text: str, n_chunks: int, ids: Sequence[str] | None = None) -> tuple[str, list[Marker]]:
    """The text without its footnote section and markers (for sentence splitting), and the
    markers with their positions in that text."""
    definitions = {m.group(1): m.group(2) for m in _FOOTDEF.finditer(text)}
    body = _FOOTDEF.sub("", text)
    found: list[tuple[int, int, str, tuple[Citation, ...] | None]] = []
    # A bracket is read once to know whether it is a marker at all; beyond MAX_MARKERS its items
    # are not resolved (the ids are not searched), only removed from the text.
    n_read = 0
    for m in _BRACKET.finditer(body):
        cites = _bracket_citations(m.group(1) or m.group(2), n_chunks, ids if n_read < MAX_MARKERS else None)
        if cites is not None:
            found.append((m.start(), m.end(), m.group(0), cites))
            n_read += 1
    for m in _FOOTREF.finditer(body):
        found.append((m.start(), m.end(), m.group(0), None))
    found.sort(key=lambda f: f[0])
    clean: list[str] = []
    markers: list[Marker] = []
    pos = 0
    size = 0
    for start, end, raw, maybe in found:
        read = len(markers) < MAX_MARKERS
        if not read:
            cites = ()
        elif maybe is None:  # a footnote reference
            label = raw[2:-1]
            cites = _footnote_citations(label, definitions.get(label), n_chunks, ids)
        else:
            cites = maybe
        piece = body[pos:start]
        if body[end:end + 1] in (".", ",", ";", ":", "!", "?", ")"):
            piece = piece.rstrip(" \t")  # "fact [1]." reads "fact."
        clean.append(piece)
        size += len(piece)
        markers.append(Marker(raw, size, cites, read))
        after = body[end:end + 1]
        if piece[-1:].isalnum() and after.isalnum():  # "foo[1]bar": keep the words apart
            clean.append(" ")
            size += 1
        pos = end
    clean.append(body[pos:])
    return "".join(clean), markers


def _sentence_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of each sentence of ``text``, found back in the text."""
    spans: list[tuple[int, int, str]] = []
    pos = 0
    for s in split_sentences(text):
        m = re.compile(r"\s+".join(map(re.escape, s.split()))).search(text, pos)
        if m is None:  # cannot happen: split_sentences only collapses white space
            continue
        spans.append((m.start(), m.end(), s))
        pos = m.end()
    return spans


def attach(text: str, claims: Sequence[str], n_chunks: int,
           ids: Sequence[str] | None = None) -> CitationTable:
    """The sentences of ``text`` with their citations, and the sentence of each claim: the one
    sharing the largest share of the claim's content words (the first on a tie). A claim that
    carries markers of its own (a one-sentence response is its own claim) is matched the same
    way, with its markers removed."""
    clean, markers = parse_citations(text, n_chunks, ids)
    spans = _sentence_spans(clean)
    starts = [a for a, _, _ in spans]
    per: list[list[Marker]] = [[] for _ in spans]
    for mk in markers:
        if not spans:
            break
        # the sentence the marker stands in, else the last one ending before it: the spans are in
        # order, so that is the last one starting at or before it (or the one before, when the
        # marker stands where one sentence ends and the next begins)
        idx = max(bisect_right(starts, mk.start) - 1, 0)
        if idx > 0 and spans[idx - 1][1] >= mk.start:
            idx -= 1
        per[idx].append(mk)
    sentences = []
    not_read = 0
    for (_, _, s), mks in zip(spans, per):
        seen: dict[tuple[int | None, str], Citation] = {}
        for mk in mks:
            for c in mk.citations:
                at = (c.chunk, "" if c.chunk is not None else c.text)
                if at in seen:
                    continue
                if len(seen) >= MAX_SENTENCE_CITATIONS:
                    not_read += 1
                    continue
                seen[at] = c
        shown = tuple(mk.text for mk in mks if mk.read)[:MAX_SENTENCE_CITATIONS]
        sentences.append(Sentence(s, tuple(seen.values()), shown))
    words = [set(content_words(s)) for _, _, s in spans]
    claim_sentence: list[int | None] = []
    for claim in claims:
        cw = set(content_words(parse_citations(claim, n_chunks, ids)[0]))
        best, best_share = None, 0.0
        for i, sw in enumerate(words):
            share = len(cw & sw) / len(cw) if cw else 0.0
            if share > best_share:
                best, best_share = i, share
        claim_sentence.append(best)
    unread = sum(not mk.read for mk in markers)
    return CitationTable(tuple(sentences), tuple(claim_sentence), tuple(mk for mk in markers if mk.read),
                         unread, not_read)


@dataclass(frozen=True)
class CitationCheck:
    """Everything both metrics read: per claim its citations with a verdict each, per sentence
    its citations with whether each supports a claim of the sentence."""

    claims: tuple[dict[str, Any], ...]
    citations: tuple[dict[str, Any], ...]
    n_claims: int
    table: CitationTable
    verdicts: tuple[ClaimVerdict, ...] = ()  # one per (claim, citation), and per uncited claim


async def citation_table(ctx: SampleAnalyses) -> tuple[CitationCheck, ClaimList, VerdictList]:
    """The citation check of the sample (memoised), with the claim list and verdict list it
    was built from (for the evidence)."""
    return await ctx.once("citations", lambda: _check(ctx))


async def _check(ctx: SampleAnalyses) -> tuple[CitationCheck, ClaimList, VerdictList]:
    claims = await ctx.response_claims()
    verdicts = await ctx.response_vs_contexts()
    assert verdicts is not None and verdicts.chunk_support is not None
    s = ctx.sample
    n_chunks = len(s.contexts or ())
    table = attach(s.response or "", claims.claims, n_chunks, s.retrieved_ids)
    support = verdicts.chunk_support
    rows: list[dict[str, Any]] = []
    trail: list[ClaimVerdict] = []
    for i, (claim, sent) in enumerate(zip(claims.claims, table.claim_sentence)):
        cites = table.sentences[sent].citations if sent is not None else ()
        trail.extend(_verdict(claim, c, support[i]) for c in cites)
        if not cites:
            where = "no sentence of the response matches it" if sent is None else f"sentence {sent + 1} cites nothing"
            trail.append(ClaimVerdict(claim, False, reason=f"no citation: {where}; {_supporters(support[i])}",
                                      target="no citation"))
        rows.append({
            "claim": claim,
            "sentence": sent + 1 if sent is not None else None,
            "citations": [_row(c, support[i]) for c in cites],
            "supported_by_a_citation": any(c.chunk in support[i] for c in cites if c.chunk is not None),
            "supporting_chunks": sorted(support[i]),
        })
    cited: list[dict[str, Any]] = []
    for j, sent_ in enumerate(table.sentences):
        mine = [i for i, k in enumerate(table.claim_sentence) if k == j]
        for c in sent_.citations:
            ok = c.chunk is not None and any(c.chunk in support[i] for i in mine)
            entry = {"sentence": j + 1, "marker": c.text, "chunk": c.chunk, "supports": ok}
            if c.problem:
                entry["problem"] = c.problem
            elif not mine:
                entry["problem"] = "no claim was attached to this sentence"
            cited.append(entry)
    check = CitationCheck(tuple(rows), tuple(cited), len(claims.claims), table, tuple(trail))
    return check, claims, verdicts


def _supporters(support: frozenset[int]) -> str:
    if not support:
        return "no chunk supports it"
    return f"chunk{'s' if len(support) > 1 else ''} {', '.join(map(str, sorted(support)))} support{'s' if len(support) == 1 else ''} it"


def _verdict(claim: str, c: Citation, support: frozenset[int]) -> ClaimVerdict:
    """The verdict of one citation of a claim, for the trail (target ``chunk:K``)."""
    if c.chunk is None:
        return ClaimVerdict(claim, False, reason=f"cited [{c.text}], which names no chunk ({c.problem})",
                            target=f"citation [{c.text}]")
    ok = c.chunk in support
    return ClaimVerdict(claim, ok, reason=f"cited [{c.text}]; {_supporters(support)}", target=f"chunk:{c.chunk}")


def _row(c: Citation, support: frozenset[int]) -> dict[str, Any]:
    out: dict[str, Any] = {"marker": c.text, "chunk": c.chunk,
                           "supports": c.chunk is not None and c.chunk in support}
    if c.problem:
        out["problem"] = c.problem
    return out


def details(check: CitationCheck) -> dict[str, Any]:
    """The evidence details both metrics record."""
    out: dict[str, Any] = {
        "claims": [dict(r) for r in check.claims],
        "citations": [dict(c) for c in check.citations],
        "sentences": [{"sentence": j + 1, "text": s.text, "markers": list(s.markers)}
                      for j, s in enumerate(check.table.sentences)],
    }
    table = check.table
    if table.markers_not_read or table.citations_not_read:
        out["not_read"] = {"markers": table.markers_not_read, "citations": table.citations_not_read,
                           "max_markers": MAX_MARKERS, "max_sentence_citations": MAX_SENTENCE_CITATIONS}
    return out


class CitationMetric(Metric):
    """What citation_precision and citation_recall share: the fields they read, the analyses
    they use (the response's claims, judged chunk by chunk), their groups, and the citation
    check with the evidence both record."""

    requires = ("response", "contexts")
    needs_judge = True
    needs = frozenset({Need.RESPONSE_VS_CONTEXTS, Need.CHUNK_SUPPORT})
    groups = frozenset({"generation", "reference-free"})

    async def checked(self, ctx: SampleAnalyses) -> tuple[CitationCheck, Evidence]:
        """The sample's citation check (computed once for both metrics) and its evidence."""
        check, claims, verdicts = await citation_table(ctx)
        return check, Evidence(claims=check.verdicts, calls=claims.refs + verdicts.refs, details=details(check))
