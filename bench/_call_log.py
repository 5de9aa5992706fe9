"""The request log of bench/bench_vs_ragas.py's mock server, read the same way for both tools:
which judge step each call is, the claims it extracted (and from which sample's text), the
verdicts it gave, the schema tokens sent beside the prompt, and the calls made one after another
per sample."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _msg_text(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def _squash(s: str) -> str:
    return " ".join(s.split())


class Classifier:
    """Reads the mock's request log: per call, which step it is, how many claims it extracted
    (and from which text), how many verdicts it gave. Works for both tools' prompts."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.resp = [_squash(r["response"]) for r in rows]
        self.ref = [_squash(r["reference"]) for r in rows]
        # sample finder: distinctive prefixes of each sample's texts
        self.keys: list[list[str]] = []
        for r in rows:
            ks = [r["user_input"], r["response"], r["reference"], *r["retrieved_contexts"]]
            self.keys.append([_squash(k)[:50] for k in ks])

    def sample_of(self, text: str) -> int | None:
        t = _squash(text)
        t2 = _squash(t.replace('\\"', '"'))
        best, best_hits = None, 0
        for i, ks in enumerate(self.keys):
            hits = sum(1 for k in ks if k in t or k in t2)
            if hits > best_hits:
                best, best_hits = i, hits
        return best

    def source_of(self, claims: list[str], i: int | None) -> str:
        if i is None or not claims:
            return "?"
        first = _squash(claims[0])
        if first in self.resp[i]:
            return "response"
        if first in self.ref[i]:
            return "reference"
        return "?"

    def classify(self, rec: dict[str, Any]) -> dict[str, Any]:
        msgs = rec.get("messages") or []
        user = "\n".join(_msg_text(m) for m in msgs if m.get("role") == "user")
        all_text = "\n".join(_msg_text(m) for m in msgs)
        out = _json((rec.get("outputs") or [None])[0])
        broken = any(rec.get("broken") or [])
        info: dict[str, Any] = {"step": "other", "claims": 0, "source": None, "verdicts": 0,
                                "chunk_verdicts": 0, "broken": broken, "sample": self.sample_of(user),
                                "t0": rec.get("t0"), "t1": rec.get("t1"), "reask": False,
                                "prompt_tokens": rec.get("prompt_tokens", 0)}
        roles = rec.get("roles") or []
        # a re-ask / repair: ragsight appends the bad reply and a complaint; ragas runs a
        # "fix output format" prompt
        if roles.count("assistant") >= 1 or "could not be used" in user:
            info["reask"] = True
        if user.strip() == "ping":
            info["step"] = "preflight"
            return info
        low = all_text.lower()
        if "output string did not satisfy" in low or "fix the output" in low or "fixoutputformat" in low:
            info["step"] = "repair"
            info["reask"] = True
            return info
        if not isinstance(out, dict):
            info["step"] = "unparsed"
            return info
        keys = set(out)
        if "claims" in keys and isinstance(out["claims"], list) and all(isinstance(c, str) for c in out["claims"]):
            info.update(step="extract_claims", claims=len(out["claims"]),
                        source=self.source_of(out["claims"], info["sample"]))
        elif "statements" in keys and isinstance(out["statements"], list) and out["statements"] \
                and all(isinstance(c, str) for c in out["statements"]):
            info.update(step="extract_claims", claims=len(out["statements"]),
                        source=self.source_of(out["statements"], info["sample"]))
        elif "statements" in keys and isinstance(out["statements"], list):
            info.update(step="verify_claims", verdicts=len(out["statements"]))
        elif "classifications" in keys:
            cl = out["classifications"] if isinstance(out["classifications"], list) else []
            stm = [c.get("statement", "") for c in cl if isinstance(c, dict)]
            info.update(step="extract+verify (context recall)", claims=len(cl), verdicts=len(cl),
                        source=self.source_of(stm, info["sample"]))
        elif "verdicts" in keys and isinstance(out["verdicts"], list):
            items = [v for v in out["verdicts"] if isinstance(v, dict)]
            if items and "relevant" in items[0]:
                info.update(step="chunk_relevance", chunk_verdicts=len(items))
            else:
                info.update(step="verify_claims", verdicts=len(items))
        elif "verdict" in keys:
            info.update(step="chunk_relevance", chunk_verdicts=1)
        elif "entities" in keys:
            info.update(step="extract_entities")
        elif "question" in keys or "questions" in keys:
            info.update(step="generate_questions")
        return info

    def summarise(self, log: list[dict[str, Any]], n: int) -> dict[str, Any]:
        chats = [r for r in log if r.get("kind") == "chat"]
        infos = [self.classify(r) for r in chats]
        # steps: calls that are neither re-asks/repairs nor the preflight ping
        real = [i for i in infos if i["step"] != "preflight"]
        first = [i for i in real if not i["reask"]]
        ok = [i for i in first if not i["broken"]]
        steps = Counter(i["step"] for i in first)
        claims_resp = sum(i["claims"] for i in ok if i["source"] == "response")
        claims_ref = sum(i["claims"] for i in ok if i["source"] == "reference")
        claims_unknown = sum(i["claims"] for i in ok if i["source"] not in ("response", "reference"))
        extr_resp = sum(1 for i in first if i["claims"] and i["source"] == "response")
        extr_ref = sum(1 for i in first if i["claims"] and i["source"] == "reference")
        verdicts = sum(i["verdicts"] for i in ok)
        chunk_verdicts = sum(i["chunk_verdicts"] for i in ok)
        per_sample: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for i in real:
            if i["sample"] is not None:
                per_sample[i["sample"]].append(i)
        return {
            "steps_per_sample": len(first) / n,
            "calls_per_sample_log": len(real) / n,
            "steps_by_kind": {k: v / n for k, v in sorted(steps.items())},
            "claims_response_per_sample": claims_resp / n,
            "claims_reference_per_sample": claims_ref / n,
            "claims_unattributed_per_sample": claims_unknown / n,
            "response_decompositions_per_sample": extr_resp / n,
            "reference_decompositions_per_sample": extr_ref / n,
            "claim_verdicts_per_sample": verdicts / n,
            "chunk_verdicts_per_sample": chunk_verdicts / n,
            "reasks_per_sample": sum(1 for i in real if i["reask"]) / n,
            "preflight_calls": sum(1 for i in infos if i["step"] == "preflight"),
            "unmatched_calls": sum(1 for i in real if i["sample"] is None),
            "_per_sample": per_sample,
        }


def schema_tokens(log: list[dict[str, Any]], python: Path, tiktoken_dir: str) -> int | None:
    """Tokens (cl100k_base) of the JSON schemas sent in ``response_format``, which the mock does
    not count as prompt tokens (ragas writes its schema into the prompt text, where it is counted).
    Counted with tiktoken in the ragas environment (ragsight's does not need tiktoken)."""
    texts = [json.dumps(r["response_format"]["json_schema"]["schema"]) for r in log
             if r.get("kind") == "chat" and isinstance(r.get("response_format"), dict)
             and r["response_format"].get("type") == "json_schema"]
    if not texts:
        return 0
    code = ("import json,sys,tiktoken;e=tiktoken.get_encoding('cl100k_base');"
            "print(sum(len(e.encode(t)) for t in json.load(sys.stdin)))")
    try:
        p = subprocess.run([str(python), "-c", code], input=json.dumps(texts), capture_output=True, text=True,
                           env=dict(os.environ, TIKTOKEN_CACHE_DIR=tiktoken_dir), timeout=120)
        return int(p.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def critical_path(per_sample: dict[int, list[dict[str, Any]]], latency_s: float) -> dict[str, float]:
    """Longest chain of calls per sample where each starts after the previous one ended
    (sequential round trips), and the sample's span from first start to last end."""
    chains, spans = [], []
    for calls in per_sample.values():
        calls = sorted(calls, key=lambda c: c["t0"])
        best: list[int] = []
        for k, c in enumerate(calls):
            prev = [best[j] for j in range(k) if calls[j]["t1"] <= c["t0"] + 1e-3]
            best.append(1 + max(prev, default=0))
        chains.append(max(best, default=0))
        spans.append(max(c["t1"] for c in calls) - min(c["t0"] for c in calls))
    return {"chain_mean": statistics.mean(chains) if chains else 0.0,
            "chain_max": max(chains, default=0),
            "span_mean_s": statistics.mean(spans) if spans else 0.0}
