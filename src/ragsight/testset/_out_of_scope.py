"""The ``out_of_scope`` question kind: one chunk as the topic; the documents do not answer the
question, and the reference says so. The critic reads the chunks most related to the question
(:func:`related_chunks`) and rejects a question they do answer.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ._chunk import Chunk
from ._filter import content_tokens
from ._ingest import Corpus
from ._kind import Generated, Outcome, QuestionKind

__all__ = ["OUT_OF_SCOPE", "OUT_OF_SCOPE_REFERENCE", "OutOfScope", "related_chunks"]

OUT_OF_SCOPE_REFERENCE = "The documents do not contain the answer to this question."


def related_chunks(corpus: Corpus, question: str, anchor: str | None, k: int = 6) -> list[Chunk]:
    """The ``k`` chunks sharing the most idf-weighted content words with ``question`` (the anchor
    chunk first when given). What the out-of-scope critic sees of the corpus."""
    chunks = list(corpus.chunks)
    toks = [set(content_tokens(c.text)) for c in chunks]
    df: Counter[str] = Counter()
    for t in toks:
        df.update(t)
    q = set(content_tokens(question))
    n = len(chunks)
    scored = sorted(
        ((sum(math.log(1 + n / df[w]) for w in q & t), -i) for i, t in enumerate(toks)),
        reverse=True,
    )
    order = [chunks[-i] for _, i in scored]
    picked = [c for c in order if c.id == anchor][:1]
    for c in order:
        if len(picked) >= k:
            break
        if c.id != anchor:
            picked.append(c)
    return picked


@dataclass(frozen=True)
class OutOfScope(QuestionKind):
    """A question on a chunk's topic that no document answers."""

    def take(self, out: Outcome, gen: Generated, chunks: tuple[Chunk, ...]) -> None:
        out.reference = OUT_OF_SCOPE_REFERENCE
        out.details["missing"] = gen.missing

    def critic_view(
        self, corpus: Corpus, out: Outcome, chunks: tuple[Chunk, ...], sample: int
    ) -> tuple[list[str], str]:
        shown = related_chunks(corpus, out.question, out.spec.chunk_ids[0], sample)
        out.details["critic_chunks"] = [c.id for c in shown]
        return [c.text for c in shown], "testset_critique_oos"


OUT_OF_SCOPE = OutOfScope("out_of_scope")
