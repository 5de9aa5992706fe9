"""Do faithfulness and answer relevancy agree across languages? The same 10 airline samples in
English, German, French, Spanish, Chinese and Japanese (``bench/multilingual_set.jsonl``,
written and translated by hand for this bench; three samples have one unsupported sentence in
every language), scored per language and compared with the English scores of the same sample.

    .venv/bin/python bench/multilingual.py                    # deterministic parts (no model)
    .venv/bin/python bench/multilingual.py --judge local --n 3   # and the embedded judge, 3 samples/language

Deterministic parts (always): faithfulness by the evidence lookup alone, each response
sentence a claim, supported when the shipped signals-only model (word overlap, numbers, names:
``ragsight.analyses._calibrated.combine`` without a judge probability) gives P >= 0.5; and the
embedding half of answer relevancy, the cosine of the question and the response with the
multilingual e5-small embedder (``local``; skipped when it is not installed). Each is printed
twice: with the per-language rules, and with the English-only rules of the previous release
(``--english-rules`` is how that column is made: the language detector forced to English).

With ``--judge local``: ``ragsight.evaluate`` on the first N samples of each language with the
embedded judge (faithfulness: claims extracted and verified, verdicts mixed with word overlap;
answer_relevancy: questions generated back from the response, embedded).

The margin: a language agrees with English when the mean absolute difference per sample is at
most 0.15 and the language's mean is within 0.1 of the English mean.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _data import read_jsonl  # noqa: E402

from ragsight.analyses import _signals  # noqa: E402
from ragsight.analyses._calibrated import combine  # noqa: E402
from ragsight.analyses._signals import compute_signals  # noqa: E402
from ragsight.analyses._text import split_sentences  # noqa: E402

SET = ROOT / "bench" / "multilingual_set.jsonl"
MARGIN_SAMPLE = 0.15
MARGIN_MEAN = 0.10


def overlap(row: Mapping[str, Any]) -> float:
    """The mean share of a response sentence's content words found in the contexts: the value
    the embedded judge's verdict mixes with its P(Yes)."""
    return statistics.fmean(compute_signals(c, row["contexts"])["overlap"] for c in split_sentences(row["response"]))


def faithfulness_signals(row: Mapping[str, Any]) -> float:
    claims = split_sentences(row["response"])
    supported = [combine(None, compute_signals(c, row["contexts"])) >= 0.5 for c in claims]
    return sum(supported) / len(supported)


@contextmanager
def english_rules() -> Any:
    """The previous release's reading: every text by the English rules."""
    saved = _signals.language
    _signals.language = lambda text: "en"  # type: ignore[assignment]
    _signals._profile.cache_clear()
    try:
        yield
    finally:
        _signals.language = saved
        _signals._profile.cache_clear()


def cosines(rows: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    try:
        from ragsight.embed import make_embedder

        emb = make_embedder("local")
    except Exception as exc:  # the local embedder is an extra
        print(f"(answer relevancy's embedding half skipped: {exc})")
        return None

    async def run() -> dict[str, float]:
        q = await emb.embed([r["question"] for r in rows], kind="query")
        a = await emb.embed([r["response"] for r in rows], kind="query")
        await emb.aclose()
        return {r["id"]: float(q[i] @ a[i]) for i, r in enumerate(rows)}

    return asyncio.run(run())


def compare(name: str, values: Mapping[str, float], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per language: mean, mean |diff| against the same sample in English, max |diff|, agrees."""
    by_lang: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r["id"] in values:
            by_lang[r["lang"]][r["group"]] = values[r["id"]]
    en = by_lang.get("en", {})
    out = [f"{name}", f"  {'lang':<5}{'mean':>7}{'mean |d|':>10}{'max |d|':>9}  agrees with English"]
    for lang, vals in by_lang.items():
        groups = [g for g in vals if g in en]
        diffs = [abs(vals[g] - en[g]) for g in groups]
        mean = statistics.fmean(vals.values())
        if lang == "en":
            out.append(f"  {lang:<5}{mean:>7.3f}{'':>10}{'':>9}  (reference)")
            continue
        md, mx = statistics.fmean(diffs), max(diffs)
        ok = md <= MARGIN_SAMPLE and abs(mean - statistics.fmean(en[g] for g in groups)) <= MARGIN_MEAN
        out.append(f"  {lang:<5}{mean:>7.3f}{md:>10.3f}{mx:>9.3f}  {'yes' if ok else 'NO'}")
    return out


def judged(rows: Sequence[Mapping[str, Any]], judge: str, n: int) -> dict[str, dict[str, float]]:
    import ragsight

    groups = sorted({r["group"] for r in rows})[:n]
    chosen = [dict(r) for r in rows if r["group"] in groups]
    for r in chosen:
        r.pop("group"), r.pop("lang")
    result = ragsight.evaluate(chosen, ["faithfulness", "answer_relevancy"], judge=judge, embedder="local",
                               options=ragsight.RunOptions(show_progress=False))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for sid, per in result.scores.items():
        for metric, score in per.items():
            if score.value is not None:
                out[metric][sid] = score.value
            else:  # said, never dropped: a language without a value is shown with the reason
                print(f"  {sid} {metric}: {score.outcome.value} ({score.reason})")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", help="also score with this judge, e.g. local (the embedded one)")
    ap.add_argument("--n", type=int, default=3, help="samples per language for --judge (default 3)")
    args = ap.parse_args(argv)
    rows = read_jsonl(SET)
    langs = sorted({r["lang"] for r in rows}, key=lambda x: (x != "en", x))
    print(f"{len(rows)} samples: {len(rows) // len(langs)} airline samples in {', '.join(langs)} ({SET.name})")
    print(f"agreement: mean |difference| per sample <= {MARGIN_SAMPLE} and language mean within "
          f"{MARGIN_MEAN} of English\n")
    now = {r["id"]: faithfulness_signals(r) for r in rows}
    words = {r["id"]: overlap(r) for r in rows}
    with english_rules():
        before = {r["id"]: faithfulness_signals(r) for r in rows}
        words_before = {r["id"]: overlap(r) for r in rows}
    report: list[str] = []
    report += compare("faithfulness, evidence lookup alone (deterministic), per-language rules", now, rows)
    report += compare("faithfulness, evidence lookup alone, English-only rules (previous release)", before, rows)
    report += compare("word overlap of the response sentences (enters the embedded verdict), per-language rules",
                      words, rows)
    report += compare("word overlap, English-only rules (previous release)", words_before, rows)
    cos = cosines(rows)
    if cos is not None:
        report += compare("answer relevancy, embedding half: cosine(question, response), e5-small", cos, rows)
    for line in report:
        print(line)
    if args.judge:
        scores = judged(rows, args.judge, args.n)
        for metric, values in scores.items():
            for line in compare(f"{metric} with judge {args.judge} ({args.n} samples per language)", values, rows):
                print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
