"""How much claim extraction the embedded judge still generates with claims from sentences,
and how many one-sentence texts are now split into atomic claims. No model.

    .venv/bin/python bench/sentence_claims_check.py

For each text of each set (the airline bench texts, responses and references; the development
sets of ``../shared/metaeval``: WiCE claims, ExpertQA claims (the answer sentences), the
RAGChecker development pairs' responses and references), by the rules of
``ragsight.analyses._claims``:

- sentences that are their own claim (``split_reason`` is None) and those sent to the judge,
  with the share of words in each (the generated tokens of an extraction follow the words it
  is given, so the words sent are a proxy for the generation left);
- texts extracted whole (not English, or no plain sentence) and texts needing no call at all;
- one-sentence texts that were their own claim before atomic claims and are now split because
  ``compound`` finds two clauses, a list or several numbers in them, by reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

sys.path.insert(0, str(ROOT / "bench"))

import _where  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight.analyses._claims import OWN_CLAIM_WORDS, compound, own_claim, split_reason  # noqa: E402
from ragsight.analyses._text import language, split_sentences, tokens  # noqa: E402


def texts(name: str) -> list[str]:
    if name == "airline":
        return [str(r[k]) for r in read_jsonl(_where.kit() / "airline_20.jsonl") for k in ("response", "reference")]
    if name == "wice":
        return [str(r["answer"]) for r in read_jsonl(_where.metaeval() / "wice_claims_dev.jsonl")]
    if name == "expertqa":
        return [str(r["answer"]) for r in read_jsonl(_where.metaeval() / "expertqa_claims_val.jsonl")]
    if name == "ragchecker":
        out = []
        for r in read_jsonl(_where.metaeval() / "ragchecker_meta_dev.jsonl"):
            out += [str(r["response_1"]), str(r["response_2"]), str(r["reference"])]
        return out
    raise ValueError(name)


def _was_own_claim(text: str) -> bool:
    """own_claim before atomic claims (the same rules without the compound test)."""
    sentences = split_sentences(text)
    return (len(sentences) == 1 and split_reason(sentences[0]) in (None, "a pronoun", "two clauses", "a list",
                                                                   "several numbers")
            and own_claim(text) is None and compound(sentences[0]) is not None
            and 0 < len(tokens(text)) <= OWN_CLAIM_WORDS)


def figures(items: Iterable[str]) -> dict[str, object]:
    n_texts = n_sent = plain_sent = plain_words = all_words = whole = no_call = split_now = 0
    reasons: Counter[str] = Counter()
    split_reasons: Counter[str] = Counter()
    for text in items:
        n_texts += 1
        sentences = split_sentences(text)
        words = [len(tokens(s)) for s in sentences]
        all_words += sum(words)
        if own_claim(text) is not None:
            no_call += 1
            plain_sent += 1
            plain_words += sum(words)
            n_sent += len(sentences)
            continue
        if _was_own_claim(text):
            split_now += 1
            split_reasons[compound(sentences[0]) or "?"] += 1
        marks = [split_reason(s) for s in sentences]
        n_sent += len(sentences)
        if language(text) != "en" or all(m is not None for m in marks):
            whole += 1
            continue
        for m, w in zip(marks, words):
            if m is None:
                plain_sent += 1
                plain_words += w
            else:
                reasons[m] += 1
        if all(m is None for m in marks):
            no_call += 1
    return {"texts": n_texts, "sentences": n_sent, "plain_sentences": plain_sent,
            "plain_word_share": plain_words / all_words if all_words else 0.0,
            "extracted_whole": whole, "no_call": no_call, "one_sentence_now_split": split_now,
            "split_reasons": dict(split_reasons), "reasons": dict(reasons.most_common())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="airline,wice,expertqa,ragchecker")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    out = {name: figures(texts(name)) for name in args.sets.split(",")}
    print("| set | texts | sentences | own claims (no generation) | words sent to the judge | "
          "texts extracted whole | texts with no call | one-sentence texts now split |")
    print("|---|---|---|---|---|---|---|---|")
    for name, f in out.items():
        print(f"| {name} | {f['texts']} | {f['sentences']} | {f['plain_sentences']} | "
              f"{100 * (1 - float(f['plain_word_share'])):.0f}% | {f['extracted_whole']} | {f['no_call']} | "
              f"{f['one_sentence_now_split']} |")
    for name, f in out.items():
        print(f"{name}: sentences sent to the judge, by reason: {f['reasons']}; "
              f"one-sentence texts now split, by reason: {f['split_reasons']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
