"""A scripted judge that reads texts word for word, and planted samples of every cause of
``ragsight diagnose`` (the unit tests' and the command line test's).

The judge: a text's claims are its sentences ("Hello..." has none); a claim is supported by a
text when the text holds it word for word (case and the final period aside), and by chunk k when
chunk k does; a chunk is relevant when it holds a sentence of the answer; a response declines
when it says "don't know" or "do not say"; a claim with GARBLED in it gets an answer that is not
JSON, so the step fails. So each sample below fails for the one reason it was written for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragsight.judge import ScriptedProvider

OPENED = "The Larkspur library opened in 1987."
BIKES = "The library lends bicycles to members."
STATION = "The old Larkspur station opened in 1990."
BOOKS = "Members may borrow ten books at a time."
SUNDAYS = "The library closes at six on Sundays."
FEES = "Late returns cost one euro a day."

METRICS = ["faithfulness", "context_recall", "context_precision", "factual_correctness", "noise_sensitivity",
           "abstention", "tool_call_accuracy"]

_TAG = re.compile(r"</?[a-z_]+(?:\s[^>]*)?>")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


def _plain(text: str) -> str:
    return " ".join(_TAG.sub(" ", text).split()).lower()


def holds(text: str, claim: str) -> bool:
    return claim.strip().rstrip(".").lower() in _plain(text)


def _extract(v: Mapping[str, Any]) -> Any:
    text = v["raw_text"]
    return {"claims": [] if text.startswith("Hello") else sentences(text)}


def _verify(v: Mapping[str, Any]) -> Any:
    claims = list(v["claim_list"])
    if any("GARBLED" in c for c in claims):
        return "not JSON at all"
    chunks = re.findall(r'<context n="(\d+)">\n(.*?)\n</context>', v["source"], re.S)
    return {"verdicts": [{"id": i, "supported": holds(v["source"], c),
                          "chunks": [int(n) for n, text in chunks if holds(text, c)],
                          "reason": "stated word for word" if holds(v["source"], c) else "not stated"}
                         for i, c in enumerate(claims, start=1)]}


def _relevance(v: Mapping[str, Any]) -> Any:
    answer = sentences(_TAG.sub(" ", v["answer"]))
    return {"verdicts": [{"id": i, "relevant": any(holds(chunk, s) for s in answer), "reason": "scripted"}
                         for i, chunk in enumerate(v["chunk_list"], start=1)]}


def _declines(v: Mapping[str, Any]) -> Any:
    said = any(p in _plain(v["response"]) for p in ("don't know", "do not say"))
    return {"reason": "it says it cannot answer" if said else "it answers", "declines": said}


def provider() -> ScriptedProvider:
    return ScriptedProvider({"extract_claims": _extract, "verify_claims": _verify, "chunk_relevance": _relevance,
                             "declines_json": _declines}, model="diagnose-world")


def row(sid: str, question: str, contexts: list[str], response: str, reference: str | None = None,
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": sid, "question": question, "contexts": contexts, "response": response}
    if reference is not None:
        out["reference"] = reference
    return {**out, **extra}


ROWS = [
    # retrieval: the reference's claim is in no chunk, and no chunk is relevant
    row("r-miss", "Who designed the Larkspur library?", [BIKES, BOOKS], "Ada Moss designed the Larkspur library.",
        "Ada Moss designed the Larkspur library."),
    # retrieval: the chunk that answers is ranked last
    row("r-rank", "When did the Larkspur library open?", [BIKES, BOOKS, OPENED], OPENED, OPENED),
    # unsupported, contradicted: the chunk gives another year
    row("u-contra", "When did the Larkspur library open?", [OPENED, BIKES], "The Larkspur library opened in 1990.",
        OPENED),
    # unsupported, silent: two claims no chunk speaks of
    row("u-silent", "What does the Larkspur library lend?", [BIKES, OPENED],
        f"{BIKES} It also hosts chess nights every Friday. A rooftop cafe serves coffee.", BIKES),
    # noise: the answer repeats the irrelevant chunk's year
    row("n-irr", "When did the Larkspur library open?", [OPENED, STATION], STATION, OPENED),
    # incomplete: the chunks hold four facts, the response gives one
    row("i-left", "What should members of the Larkspur library know?", [BIKES, BOOKS, SUNDAYS, FEES], BIKES,
        f"{BIKES} {BOOKS} {SUNDAYS} {FEES}"),
    # decline: the chunks hold the answer, the response declines
    row("d-wrong", "When did the Larkspur library open?", [OPENED, BIKES], "I don't know; the documents do not say.",
        OPENED),
    # decline: an out-of-scope question answered
    row("d-oos", "Does the Larkspur library rent boats?", [BIKES], "The library rents boats every summer.",
        metadata={"answerable": False}),
    # judge: the verdict step fails
    row("j-fail", "When did the Larkspur library open?", [OPENED], f"GARBLED {OPENED}", OPENED),
    # an out-of-scope question declined: what it should do
    row("d-fine", "Does the Larkspur library rent boats?", [BIKES], "I don't know; the documents do not say.",
        metadata={"answerable": False}),
    # passes everything
    row("ok", "When did the Larkspur library open?", [OPENED, BIKES], OPENED, OPENED),
]

# tool: an agent's turn that booked the wrong day (a conversation of one turn)
TOOL_ROW = {"conversation_id": "t-call", "turns": [
    {"role": "user", "content": "Book a bicycle for Friday."},
    {"role": "assistant", "content": "Your bicycle is booked.",
     "tool_calls": [{"name": "book_bike", "args": {"day": "Saturday"}}],
     "reference_tool_calls": [{"name": "book_bike", "args": {"day": "Friday"}}]}]}

PLANTED = {"r-miss": "retrieval", "r-rank": "retrieval", "u-contra": "unsupported", "u-silent": "unsupported",
           "n-irr": "noise", "i-left": "incomplete", "d-wrong": "decline", "d-oos": "decline", "j-fail": "judge",
           "t-call:0": "tool"}
