"""The data and judge calls of bench/validity.py: the human-labelled sets and their fixed
held-out split, the calls of each probe for one row, and the on-disk cache of the judge's answers
(read back by the judge's own step key)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _where
from _data import read_jsonl
from _providers import JsonlCache

from ragsight.analyses import contexts_block
from ragsight.analyses._signals import best_sentences
from ragsight.judge import Judge, JudgeCall, step_key
from ragsight.prompts import Prompt, fence, load_prompt_file
from ragsight.prompts import load_prompt as _load_packaged


def load_prompt(prompt_id: str) -> Prompt:
    """A packaged prompt, or one of the probes kept in bench/prompts/."""
    local = Path(__file__).resolve().parent / "prompts" / f"{prompt_id}.txt"
    return load_prompt_file(local) if local.exists() else _load_packaged(prompt_id)


METAEVAL = _where.metaeval()
CACHE_DIR = _where.cache("validity")
SETS = {
    "wice": "wice_claims_dev.jsonl",
    "expertqa": "expertqa_claims_val.jsonl",
    "evouna": "evouna_tq.jsonl",
}


# ---- data -----------------------------------------------------------------------------------


def is_heldout(row_id: str) -> bool:
    """The fixed held-out part: about a third of each set, by a hash of the row id."""
    return int(hashlib.sha256(row_id.encode("utf-8")).hexdigest(), 16) % 3 == 0


def load_set(name: str, split: str = "all") -> list[dict[str, Any]]:
    rows = read_jsonl(METAEVAL / SETS[name])
    if name == "expertqa":
        rows = [r for r in rows if r.get("label_supported") is not None]
    if split == "dev":
        rows = [r for r in rows if not is_heldout(r["id"])]
    elif split == "heldout":
        rows = [r for r in rows if is_heldout(r["id"])]
    return rows


def label_of(name: str, row: dict[str, Any]) -> int:
    return int(bool(row["label_correct"] if name == "evouna" else row["label_supported"]))


# ---- the on-disk cache ----------------------------------------------------------------------


def make_judge(cache: JsonlCache, model: str | None = None) -> Judge:
    from ragsight.judge._local import LocalProvider

    provider = LocalProvider(model, progress=False)
    before = [0]

    def sink(call: JudgeCall) -> None:
        if call.cached:
            return
        cache.last_cost = {"latency_s": call.latency_s,
                           "tokens_evaluated": provider.tokens_evaluated - before[0],
                           "at": time.time()}
        before[0] = provider.tokens_evaluated

    return Judge(provider, cache=cache, sink=sink)


# ---- probes: the judge calls made for one row -------------------------------------------------

Call = tuple[str, dict[str, str]]  # (prompt id, values)


def _claim_values(source: str, claim: str) -> dict[str, str]:
    return {"source": source, "claim": fence("claim", claim), "claim_text": claim,
            "target": "contexts"}


def missing_words(claim: str, sources: Sequence[str]) -> list[str]:
    """The claim's content words (as written, in order, once each) that the sources do not
    contain in any form: what the ``missing`` signal counts."""
    from ragsight.analyses._signals import _norm_token, content_words, tokens

    have = set(content_words("\n\n".join(sources)))
    out: list[str] = []
    seen: set[str] = set()
    for tok in tokens(claim):
        n = _norm_token(tok)
        if n is not None and n not in have and n not in seen:
            seen.add(n)
            out.append(tok)
    return out


def probe_calls(name: str, row: dict[str, Any], probe: str) -> list[Call]:
    """The calls of one probe for one row (a probe may make none, e.g. 'answer' on WiCE)."""
    if name in ("wice", "expertqa"):
        claim, contexts = row["answer"], row["contexts"]
        full = contexts_block(contexts)
        if probe == "bare":
            return [("verify_claim", _claim_values(full, claim))]
        if probe in ("details", "extra"):
            return [(f"verify_claim_{probe}", _claim_values(full, claim))]
        if probe == "best":
            return [("verify_claim", _claim_values(contexts_block([" ".join(best_sentences(claim, contexts))]), claim))]
        if probe == "best_details":
            return [("verify_claim_details",
                     _claim_values(contexts_block([" ".join(best_sentences(claim, contexts))]), claim))]
        if probe == "prior":
            return [("verify_claim", _claim_values(contexts_block([""]), claim))]
        if probe == "focus":  # only for claims with words the text lacks; otherwise no call
            missing = missing_words(claim, contexts)
            if not missing:
                return []
            return [("verify_claim_focus", {**_claim_values(full, claim), "missing": ", ".join(missing)})]
        if probe == "fewshot":
            return [("verify_claim_fewshot", _claim_values(full, claim))]
        if probe == "fewshot_prior":
            return [("verify_claim_fewshot", _claim_values(contexts_block([""]), claim))]
        return []
    if name == "evouna":
        aliases = row.get("reference_all") or [row["reference"]]
        values = {"question": fence("question", row["question"]),
                  "reference": fence("reference", " / ".join(aliases)),
                  "response": fence("response", row["answer"])}
        if probe == "answer":
            return [("verify_claim_answer", values)]
        return []
    raise KeyError(name)


def call_keys(judge: Judge, prompt_id: str, values: dict[str, str]) -> tuple[str, str]:
    """The key the Judge itself gives the call (with the provider's identity: its model file),
    and the key calls were cached under before step keys named the provider (the cache's older
    entries: the same model file, the same rendered request)."""
    prompt = load_prompt(prompt_id)
    req = judge.request(prompt, values, max_tokens=1, schema=False)
    key = step_key(judge.model, req, prompt.hash, "choices", ["Yes", "No"], identity=judge.identity)
    basis = {"model": judge.model, "prompt": [req.prompt_id, req.prompt_version, prompt.hash],
             "messages": [[m.role, m.content] for m in req.messages], "schema": req.schema,
             "settings": [req.max_tokens, req.temperature, req.seed], "kind": "choices", "extra": ["Yes", "No"]}
    legacy = hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
    return key, legacy


def _lookup(judge: Judge, cache: JsonlCache, call: Call) -> dict[str, Any] | None:
    key, legacy = call_keys(judge, *call)
    hit = cache.lookup(key)
    return hit if hit is not None else cache.lookup(legacy)


def cached_p(judge: Judge, cache: JsonlCache, call: Call) -> float | None:
    hit = _lookup(judge, cache, call)
    return None if hit is None else float(hit["parsed"]["Yes"])


def cached_cost(judge: Judge, cache: JsonlCache, call: Call) -> dict[str, float] | None:
    hit = _lookup(judge, cache, call)
    if hit is None or "latency_s" not in hit:
        return None
    return {"latency_s": hit["latency_s"], "tokens_evaluated": hit["tokens_evaluated"]}


def order_rows(name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that share a prefix (same contexts / same question) back to back."""
    def h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    # Groups in a random (hash) order, so that any prefix of a run is a random subset.
    if name == "evouna":
        from ragsight.analyses._signals import alias_signals

        # Answers that contain no alias first: there the judge's verdict matters most.
        def contained(r: dict[str, Any]) -> float:
            return alias_signals(r["answer"], r.get("reference_all") or [r["reference"]])["alias_contained"]

        return sorted(rows, key=lambda r: (contained(r), h(r["question"]), r["id"]))
    return sorted(rows, key=lambda r: (h(json.dumps(r["contexts"])), r["id"]))
