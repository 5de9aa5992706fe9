"""Does answer relevancy write its questions in the language of the answer? The questions the
judge generates back from a response are embedded and compared with the user's question, and
they are shown to whoever reads the evidence; a question in another language is a wrong trail
(and, with an English-only embedder, a wrong score).

    .venv/bin/python bench/question_language.py --n 4              # 4 samples per language
    .venv/bin/python bench/question_language.py --n 4 --langs en,de,fr

Rows: ``bench/multilingual_set.jsonl`` (airline samples written in English and translated by
hand), the first N groups in each language asked for. ``ragsight.evaluate`` computes
answer_relevancy with the embedded judge (``--judge``, default ``local``), the cache off, and
every generated question's language is read with ragsight's own detector
(``ragsight.analyses._text.language``; it reads a short German or Dutch sentence with few function
words as English, so those languages are undercounted: the questions are printed to check by eye).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _data import read_jsonl  # noqa: E402

from ragsight.analyses._text import language  # noqa: E402

SET = ROOT / "bench" / "multilingual_set.jsonl"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="local", help="the judge (default: the embedded one)")
    ap.add_argument("--n", type=int, default=4, help="samples per language (default 4)")
    ap.add_argument("--langs", default="en,fr", help="languages of the set to use (default en,fr)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per judge call (default 120; raise it on a busy machine)")
    args = ap.parse_args(argv)

    import ragsight
    from ragsight.judge import RetryPolicy

    rows = read_jsonl(SET)
    wanted = args.langs.split(",")
    groups = sorted({r["group"] for r in rows})[: args.n]
    chosen = [r for r in rows if r["group"] in groups and r["lang"] in wanted]
    lang_of = {r["id"]: r["lang"] for r in chosen}
    data = [{k: v for k, v in r.items() if k not in ("group", "lang")} for r in chosen]
    result = ragsight.evaluate(data, ["answer_relevancy"], judge=args.judge,
                               options=ragsight.RunOptions(cache=False, policy=RetryPolicy(call_timeout_s=args.timeout, step_deadline_s=2 * args.timeout), show_progress=False))
    same: Counter[str] = Counter()
    total: Counter[str] = Counter()
    seen: Counter[tuple[str, str]] = Counter()
    for sid, per in sorted(result.scores.items()):
        score = per["answer_relevancy"]
        want = lang_of[sid]
        questions = [q["question"] for q in score.evidence.details.get("questions", [])]
        if not questions:
            print(f"{sid}: no questions ({score.outcome.value}: {score.reason})")
            continue
        value = "-" if score.value is None else f"{score.value:.3f}"
        print(f"{sid} ({want}) answer_relevancy {value}")
        for q in questions:
            got = language(q)
            total[want] += 1
            same[want] += got == want
            seen[(want, got)] += 1
            print(f"    [{got}] {q}")
    print()
    print("questions in the answer's language, per language of the answer:")
    for lang in wanted:
        if total[lang]:
            others = ", ".join(f"{g} {k}" for (w, g), k in sorted(seen.items()) if w == lang and g != lang)
            print(f"  {lang}: {same[lang]} of {total[lang]}" + (f"  (others: {others})" if others else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
