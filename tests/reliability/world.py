"""A judge world for FakeOpenAIServer: schema-valid answers to ragsight's prompts, computed from
the request, with a seeded chance of a fault.

The world is deterministic, so a run under faults can be compared value by value with a clean run:

- ``extract_claims``: the claims are the sentences of the fenced text;
- ``verify_claims``: a claim is supported when every content word of it appears in the text it is
  checked against (and supported by chunk k when it appears in chunk k);
- ``chunk_relevance``: a chunk is relevant when it shares two content words with the answer;
- ``generate_questions``: N distinct questions built from the response's words;
- ``label_sentences``: a sentence is relevant when it shares a content word with the question;
- ``extract_entities``: capitalised words; ``explain_verdict``: a fixed reason.

Counts come from the request's JSON schema (``minItems``), as a grammar-constrained judge would
give them. A fault is drawn per request from ``(seed, request body, how often this exact body was
seen)``: the draw does not depend on the order in which concurrent requests arrive, and a
transport retry of the same body gets a fresh draw.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import RecordedRequest, Reply, embedding_for

__all__ = [
    "ALL_FAULTS",
    "ANSWER_FAULTS",
    "CONTENT_FAULTS",
    "EMBEDDING_FAULTS",
    "FAULT_KINDS",
    "TRANSPORT_FAULTS",
    "JudgeWorld",
    "b64_vector",
    "make_samples",
]

CONTENT_FAULTS = ("malformed", "truncated_length", "truncated_stop", "prose", "wrong_count")
TRANSPORT_FAULTS = (
    "http429_retry_after", "http429", "http500", "http502", "http503", "reset", "hang", "trickle",
)
FAULT_KINDS = CONTENT_FAULTS + TRANSPORT_FAULTS
# Faults of the second reliability pass. Judge answers: "echo_key" is a good answer
# that carries the request's API key in its content and its "model" field (a careless proxy);
# "huge" is an answer larger than the provider reads (``huge_bytes``, a server that ignores
# max_tokens). Embedding answers: NaN values (bare NaN tokens, as Python's json writes them),
# base64 float32 holding an infinity, an all-zero vector, values beyond float32.
ANSWER_FAULTS = ("echo_key", "huge")
EMBEDDING_FAULTS = ("emb_nan", "emb_inf_base64", "emb_zero", "emb_overflow")
ALL_FAULTS = FAULT_KINDS + ANSWER_FAULTS + EMBEDDING_FAULTS

_STOP_WORDS = (
    "the a an and or of to in on at by for with from is are was were be been has have had it its "
    "this that these those as not no than then also which who whom what when where why how does did "
    "do can will would should could may might into over under about after before"
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def block(text: str, tag: str) -> str | None:
    """The body of the first ``<tag ...>`` ... ``</tag>`` block in ``text``."""
    m = re.search(rf"<{tag}(?:\s[^>]*)?>\n?(.*?)\n?</{tag}>", text, re.S)
    return m.group(1) if m else None


def blocks(text: str, tag: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"<{tag}(?:\s[^>]*)?>\n?(.*?)\n?</{tag}>", text, re.S)]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(" ".join(text.split())) if s.strip()]


def numbered_items(body: str) -> list[str]:
    return [re.sub(r"^\d+\.\s*", "", ln).strip() for ln in body.splitlines() if ln.strip()]


@dataclass
class JudgeWorld:
    """A FakeOpenAIServer handler. ``fault_rate`` of the judge requests (preflight excluded) get
    a fault drawn from ``faults``; ``latency`` seconds are slept before each answer."""

    fault_rate: float = 0.0
    faults: Sequence[str] = FAULT_KINDS
    seed: int = 0
    latency: float = 0.0
    trickle_interval: float = 0.05
    huge_bytes: int = 9 * 1024 * 1024  # just over the provider's 8 MiB cap
    # all-positive vectors: cosine similarities in (0, 1], like real text embedders give for
    # related texts (the server's default vectors have cosines around 0, often negative)
    positive_embeddings: bool = True
    injected: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    # every judge request answered: (its messages as JSON, the fault injected or None)
    log: list[tuple[str, str | None]] = field(default_factory=list)
    _seen: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the handler ------------------------------------------------------------------------------

    def __call__(self, request: RecordedRequest) -> Reply | None:
        body = request.json if isinstance(request.json, dict) else {}
        if request.path.endswith("/embeddings"):
            kinds = [k for k in self.faults if k in EMBEDDING_FAULTS]
            fault = self._draw(request.body, "embeddings", False, kinds) if kinds else None
            if fault is not None:
                with self._lock:
                    self.injected[fault] += 1
                return embeddings_reply(body, fault)
            if self.positive_embeddings:
                return embeddings_reply(body)
        if not request.path.endswith("/chat/completions"):
            return None  # model lists: the server's default
        if self.latency:
            time.sleep(self.latency)
        prompt_id = prompt_id_of(body)
        if prompt_id is None:
            return Reply.chat("pong")  # the preflight ping
        answer, count = self.answer(prompt_id, body)
        text = json.dumps(answer)
        kinds = [k for k in self.faults if k not in EMBEDDING_FAULTS]
        fault = self._draw(request.body, prompt_id, count is not None, kinds)
        with self._lock:
            self.answered[prompt_id] += 1
            self.log.append((json.dumps(body.get("messages")), fault))
            if fault is not None:
                self.injected[fault] += 1
        if fault is None:
            return Reply.chat(text)
        if fault == "echo_key":
            key = (request.headers.get("authorization", "").removeprefix("Bearer ")
                   or request.headers.get("api-key", ""))
            echoed = {**answer, "debug": f"request had Authorization: Bearer {key} (key {key})"}
            return Reply.chat(json.dumps(echoed), model=f"m-served-for-{key}")
        return self.faulty(fault, text, answer)

    def _draw(self, raw: bytes, prompt_id: str, has_count: bool,
              faults: Sequence[str] | None = None) -> str | None:
        if self.fault_rate <= 0:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            n = self._seen[digest]
            self._seen[digest] += 1
        rng = random.Random(f"{self.seed}:{digest}:{n}")
        if rng.random() >= self.fault_rate:
            return None
        pool = self.faults if faults is None else faults
        kinds = [k for k in pool if k != "wrong_count" or has_count]
        return rng.choice(kinds) if kinds else None

    def faulty(self, fault: str, text: str, answer: dict[str, Any]) -> Reply:
        if fault == "malformed":
            return Reply.chat(text[:-1] + ",}")  # a trailing comma: not JSON
        if fault == "truncated_length":
            return Reply.chat(text[: max(2, len(text) // 2)], finish_reason="length")
        if fault == "truncated_stop":
            return Reply.chat(cut_after_first_item(text), finish_reason="stop")
        if fault == "prose":
            return Reply.chat("I'm sorry, but I can't evaluate this text. Please try again later.")
        if fault == "wrong_count":
            key = next(k for k, v in answer.items() if isinstance(v, list))
            items = list(answer[key])
            wrong = items[:-1] if len(items) > 1 else [*items, items[0]]
            return Reply.chat(json.dumps({**answer, key: wrong}))
        if fault == "http429_retry_after":
            return Reply.error(429, "Rate limit reached", code="rate_limit_exceeded",
                               headers={"Retry-After": "1"})
        if fault == "http429":
            return Reply.error(429, "Rate limit reached", code="rate_limit_exceeded")
        if fault.startswith("http5"):
            return Reply.error(int(fault[4:]), "upstream trouble")
        if fault == "reset":
            return Reply.reset()
        if fault == "hang":
            return Reply.hang()
        if fault == "trickle":
            return Reply.trickle(Reply.chat(text), interval=self.trickle_interval)
        if fault == "huge":
            return Reply.huge(self.huge_bytes)
        raise ValueError(f"unknown fault {fault!r}")

    # -- the world's answers ----------------------------------------------------------------------

    def answer(self, prompt_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        messages = body.get("messages") or []
        # the first user message is the rendered prompt; re-asks append to it
        user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        count = schema_count(body)
        if prompt_id == "extract_claims":
            text = block(user, "response") or block(user, "reference") or ""
            return {"claims": sentences(text)}, None
        if prompt_id == "extract_claims_part":  # the sentences asked about, each its own claim
            return {"claims": sentences(block(user, "sentences") or "")}, None
        if prompt_id == "verify_claims":
            claims = numbered_items(block(user, "claims") or "")
            n = count if count is not None else len(claims)
            chunks = blocks(user, "context")
            source = user.split("<claims>")[0]
            verdicts = []
            for i in range(n):
                claim = claims[i] if i < len(claims) else ""
                words = content_words(claim)
                ok = bool(words) and words <= content_words(source)
                where = [k for k, c in enumerate(chunks, 1) if words and words <= content_words(c)]
                verdicts.append({"id": i + 1, "supported": ok, "chunks": where,
                                 "reason": "all of it is stated" if ok else "not stated"})
            return {"verdicts": verdicts}, n
        if prompt_id == "verify_claims_conversation":  # the contexts, read with the conversation
            claims = numbered_items(block(user, "claims") or "")
            n = count if count is not None else len(claims)
            source = content_words(user.split("<claims>")[0])
            verdicts = [{"id": i + 1, "supported": bool(w := content_words(claims[i] if i < len(claims) else ""))
                         and w <= source, "message": 0, "reason": "read in the conversation"}
                        for i in range(n)]
            return {"verdicts": verdicts}, n
        if prompt_id == "standalone_question":  # the follow-up rewritten to stand alone: as asked
            asked = (block(user, "conversation") or "").rsplit("[this turn] user:", 1)[-1].strip()
            return {"question": asked or "the question"}, None
        if prompt_id == "declines_json":  # abstention: a response the detector left to the judge
            response = (block(user, "response") or "").lower()
            said = any(p in response for p in ("do not say", "don't know", "cannot answer"))
            return {"reason": "it says it cannot answer" if said else "it answers", "declines": said}, None
        if prompt_id == "chunk_relevance":
            chunks = blocks(user, "chunk")
            answer_text = block(user, "reference") or block(user, "response") or ""
            want = content_words(answer_text)
            n = count if count is not None else len(chunks)
            out = []
            for i in range(n):
                chunk = chunks[i] if i < len(chunks) else ""
                rel = len(content_words(chunk) & want) >= 2
                out.append({"id": i + 1, "relevant": rel, "reason": "shares facts" if rel else "off topic"})
            return {"verdicts": out}, n
        if prompt_id == "generate_questions":
            n = count or 3
            response = block(user, "response") or ""
            topics = sorted(content_words(response)) or ["this"]
            qs = [f"What does the answer say about {topics[i % len(topics)]} ({i + 1})?" for i in range(n)]
            return {"noncommittal": "don't know" in response.lower(), "questions": qs}, n
        if prompt_id == "label_sentences":
            question = content_words(block(user, "question") or "")
            sents = numbered_items(block(user, "sentences") or "")
            n = count if count is not None else len(sents)
            labels = [
                {"id": i + 1, "relevant": bool(content_words(sents[i] if i < len(sents) else "") & question)}
                for i in range(n)
            ]
            return {"verdicts": labels}, n
        if prompt_id == "extract_entities":
            text = block(user, "text") or ""
            ents = list(dict.fromkeys(re.findall(r"\b[A-Z][a-z]+\b", text)))
            return {"entities": ents}, None
        if prompt_id == "explain_verdict":
            return {"reason": "The text says so."}, None
        if prompt_id == "verify_claim_answer_json":
            response = content_words(block(user, "response") or "")
            aliases = [content_words(a) for a in (block(user, "reference") or "").split(" / ")]
            return {"correct": any(a and a <= response for a in aliases)}, None
        raise AssertionError(f"the judge world has no answer for prompt {prompt_id!r}")


def b64_vector(values: Sequence[float]) -> str:
    """``values`` as OpenAI's ``encoding_format=base64`` sends them: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def embeddings_reply(body: dict[str, Any], fault: str | None = None) -> Reply:
    """Positive vectors for the request's texts; with ``fault``, the last text's vector broken
    in that way (see EMBEDDING_FAULTS)."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    rows: list[dict[str, Any]] = [
        {"object": "embedding", "index": i, "embedding": [abs(x) for x in embedding_for(t, 8)]}
        for i, t in enumerate(texts)]
    if fault is not None and rows:
        last = rows[-1]
        vec = list(last["embedding"])
        if fault == "emb_nan":
            last["embedding"] = [float("nan"), *vec[1:]]
        elif fault == "emb_inf_base64":
            last["embedding"] = b64_vector([float("inf"), *vec[1:]])
        elif fault == "emb_zero":
            last["embedding"] = [0.0] * len(vec)
        elif fault == "emb_overflow":
            last["embedding"] = [1e39, *vec[1:]]
        else:
            raise ValueError(f"unknown embedding fault {fault!r}")
    # json.dumps writes NaN as a bare token, as careless servers do
    return Reply.raw(json.dumps({"object": "list", "data": rows, "model": body.get("model", "e"),
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
                     content_type="application/json")


def prompt_id_of(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return str(fmt["json_schema"].get("name"))
    return None


def schema_count(body: dict[str, Any]) -> int | None:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or {}
    for prop in (schema.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "array" and "minItems" in prop:
            return int(prop["minItems"])
    return None


def cut_after_first_item(text: str) -> str:
    """The reply cut just after its first complete list item: the tempting case for a "repair"
    that closes the brackets and reads a shorter list."""
    start = text.find("[")
    if start < 0:
        return text[: len(text) // 2]
    depth = 0
    in_str = esc = False
    for i in range(start + 1, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                if depth == 0:
                    return text[: i + 1]
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[: i + 1]
    return text[: len(text) // 2]


# -- a synthetic data set in the world's terms ------------------------------------------------------

_TOPICS = ["Aurora", "Borealis", "Cobalt", "Dunmore", "Everly", "Falcon", "Granite", "Harbor",
           "Ivory", "Juniper", "Kestrel", "Lumen", "Meridian", "Nimbus", "Orchid", "Pinnacle"]
_FACTS = [
    "{t} Airways flies daily from Lisbon to Oslo.",
    "{t} Airways allows one cabin bag weighing eight kilograms.",
    "{t} Airways charges forty euros for a second checked bag.",
    "{t} Airways opens online check-in thirty hours before departure.",
    "{t} Airways serves free coffee on morning flights.",
    "{t} Airways refunds cancelled tickets within fourteen days.",
    "{t} Airways lets children under two travel on a parent's lap.",
    "{t} Airways requires pets to travel in a ventilated carrier.",
    "{t} Airways was founded in Porto in nineteen ninety-eight.",
]
_INVENTED = [
    "{t} Airways offers free champagne to every passenger.",
    "{t} Airways flies nonstop to Sydney every Tuesday.",
    "{t} Airways gives double miles on weekend bookings.",
]


def make_samples(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` samples: three chunks of three facts each, a response mixing stated and invented facts,
    a reference of two or three facts. Every metric of the core set has work to do."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = _TOPICS[i % len(_TOPICS)] + ("" if i < len(_TOPICS) else str(i // len(_TOPICS)))
        facts = [f.format(t=t) for f in _FACTS]
        rng.shuffle(facts)
        chunks = [" ".join(facts[k * 3:(k + 1) * 3]) for k in range(3)]
        stated = rng.sample(facts, rng.randint(1, 3))
        invented = [f.format(t=t) for f in rng.sample(_INVENTED, rng.randint(0, 2))]
        response = " ".join(stated + invented)
        reference_facts = rng.sample(facts[:6], 2) + ([rng.choice(_INVENTED).format(t=t)] if i % 3 == 0 else [])
        out.append({
            "id": f"s{i:03d}",
            "question": f"What are the baggage and ticket rules of {t} Airways?",
            "contexts": chunks,
            "response": response,
            "reference": " ".join(reference_facts),
        })
    return out
