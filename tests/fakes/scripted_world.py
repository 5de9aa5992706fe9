"""A scripted judge for any data (the viewer's tests and its bench store): claims are the text's
sentences, a verdict and a chunk's relevance follow a hash of the claim (chunk) and its target, so
the same data always gets the same scores, with a spread of values and no network."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ragsight.judge import ScriptedProvider

METRICS = ["faithfulness", "context_precision", "context_recall"]


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if len(s.strip()) > 3]


def extract_claims(v: Mapping[str, Any]) -> Any:
    return {"claims": _sentences(v["raw_text"])}


def extract_claims_part(v: Mapping[str, Any]) -> Any:
    return {"claims": _sentences(v["raw_sentences"])}


def verify_claims(v: Mapping[str, Any], salt: str = "") -> Any:
    return {"verdicts": [
        {"id": i, "supported": _h(c, v["target"], salt) % 4 != 0, "chunks": [1],
         "reason": f"scripted verdict {i}"}
        for i, c in enumerate(v["claim_list"], start=1)
    ]}


def chunk_relevance(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [{"id": i, "relevant": _h(c, v["against"]) % 3 != 0, "reason": "scripted"}
                         for i, c in enumerate(v["chunk_list"], start=1)]}


def provider(salt: str = "") -> ScriptedProvider:
    """The judge; another ``salt`` gives other verdicts on the same claims (a second "judge")."""
    return ScriptedProvider({"extract_claims": extract_claims, "extract_claims_part": extract_claims_part,
                             "verify_claims": lambda v: verify_claims(v, salt),
                             "chunk_relevance": chunk_relevance}, model="scripted-world" + (f"-{salt}" if salt else ""),
                            max_concurrency=64)
