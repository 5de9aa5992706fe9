"""What the decline detector reads as a decline, before and after a change: the phrases of the
earlier sets, a set written apart from the rules, and real claims that must never be read as one.

    python bench/decline_check.py                      # the detector of this checkout
    python bench/decline_check.py --before c7636e1     # and the detector of that commit, side by side
    python bench/decline_check.py --show               # and every row the detector gets wrong

No model: the detector (``ragsight.analyses.detect_declines``) is a pure function of the text, and
abstention, faithfulness, claim extraction and diagnose all read it. A detector of another commit
is loaded from ``src/ragsight/analyses/_declines.py`` at that commit (it imports the standard
library only).

What a row should be read as, by its label:

- ``decline`` (a pure decline: no answer to any part of the question): ``declines``, so
  faithfulness is undetermined with no judge call and abstention needs no judge;
- ``partial`` (a decline clause beside a statement about the subject, a hedge, an answer after a
  decline, a caveat after an answer): ``mixed``, so the decline clause is set aside and the rest
  judged;
- ``hedged`` (an answer with "probably", "I'm not certain"): anything but ``declines``;
- ``answer`` (no decline phrase: plain and negative answers, "X is not supported in WAL mode"):
  ``none`` (or ``not_english``); ``declines`` or ``mixed`` sets a claim aside unjudged, the worse
  error.

Sets (labels written with the rows, before any detector output was seen on them):

- ``earlier``: ``bench/abstention_{dev,heldout,final,confirm}.jsonl`` (declines 1 -> decline;
  answer_partial, answer_after_decline, answer_caveat -> partial; answer_hedged -> hedged; other
  answers -> answer) and
  ``bench/nonanswer_set.jsonl`` (nonanswer -> decline, answer -> answer); the detector was
  written against most of them: development figures;
- ``apart``: ``bench/decline_set.jsonl``, 81 rows written for this check before the rules it
  measures were changed (English, German, French, Spanish; SQLite support questions): the
  revised rules were written against it, so it is development data too;
- ``confirm``: ``bench/decline_confirm.jsonl``, written after the revised rules were frozen: the
  figures to quote;
- ``claims``: real claims that no decline rule may set aside, from the human-labelled development
  sets (WiCE claims, ExpertQA claim sentences; ``$RAGSIGHT_METAEVAL``, skipped when absent): how
  many the detector reads as a decline (``declines`` or ``mixed``); and the sentences of those
  sets' retrieved documents it reads as a pure decline (a quoted person's "I have no idea" is one;
  a statement of fact read so is a false positive).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _data import read_jsonl
from _where import metaeval

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
PARTIAL_KINDS = {"answer_partial", "answer_after_decline", "answer_caveat"}

Detector = Callable[[str], Any]


def _labelled(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path)
    out = []
    for r in rows:
        if "declines" in r:  # the abstention sets
            label = ("decline" if r["declines"] else "partial" if r["kind"] in PARTIAL_KINDS
                     else "hedged" if r["kind"] == "answer_hedged" else "answer")
        elif r.get("label") in ("nonanswer", "answer") and "contexts" in r:  # the non-answer set
            label = "decline" if r["label"] == "nonanswer" else "answer"
        else:
            label = r["label"]
        out.append({"id": r["id"], "response": r["response"], "label": label, "lang": r.get("lang", "en")})
    return out


def sets() -> dict[str, list[dict[str, Any]]]:
    earlier = [row for name in ("abstention_dev", "abstention_heldout", "abstention_final", "abstention_confirm",
                                "nonanswer_set") for row in _labelled(BENCH / f"{name}.jsonl")]
    out = {"earlier": earlier, "apart": _labelled(BENCH / "decline_set.jsonl")}
    if (BENCH / "decline_confirm.jsonl").exists():
        out["confirm"] = _labelled(BENCH / "decline_confirm.jsonl")
    return out


def claims() -> list[str]:
    """Real claims from the development sets, one a row (none when the sets are absent)."""
    out: list[str] = []
    for name in ("wice_claims_dev.jsonl", "expertqa_claims_val.jsonl"):
        path = metaeval() / name
        if path.exists():
            out += [str(r["answer"]) for r in read_jsonl(path) if r.get("answer")]
    return out


def document_sentences() -> list[str]:
    """The sentences of the development sets' retrieved documents (none when absent): text that
    states things, where a pure decline can only be a quoted person ("I don't know how ...")."""
    out: list[str] = []
    for name in ("wice_claims_dev.jsonl", "expertqa_claims_val.jsonl", "mtrag_meta_dev.jsonl"):
        path = metaeval() / name
        if path.exists():
            for r in read_jsonl(path):
                for chunk in r.get("contexts") or ():
                    out += [s for s in re.split(r"(?<=[.!?])\s+", str(chunk)) if 20 < len(s) < 400]
    return list(dict.fromkeys(out))


def detector_at(commit: str | None) -> Detector:
    """``detect_declines`` of this checkout, or of ``commit``'s ``_declines.py``."""
    if commit is None:
        from ragsight.analyses import detect_declines
        return detect_declines  # type: ignore[no-any-return]
    src = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:src/ragsight/analyses/_declines.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"declines_{commit[:8]}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.detect_declines  # type: ignore[no-any-return]


def right(label: str, verdict: str) -> bool:
    if label == "decline":
        return verdict == "declines"
    if label == "partial":
        return verdict == "mixed"
    if label == "hedged":  # "probably 20 days, but I'm not certain": the hedge may be set aside, never the answer
        return verdict != "declines"
    return verdict in ("none", "not_english")


def table(rows: list[dict[str, Any]], detect: Detector) -> dict[tuple[str, str], tuple[int, int]]:
    """(label, language) -> (rows read right, rows); language "all" for the label's total."""
    ok: Counter[tuple[str, str]] = Counter()
    n: Counter[tuple[str, str]] = Counter()
    for r in rows:
        hit = right(r["label"], detect(r["response"]).verdict)
        lang = r["lang"] if r["lang"] in ("en", "de", "fr", "es") else "other"
        for key in ((r["label"], lang), (r["label"], "all")):
            n[key] += 1
            ok[key] += hit
    return {k: (ok[k], n[k]) for k in n}


WHAT = {"decline": "declines read as declines", "partial": "partial declines read as mixed",
        "hedged": "hedged answers not read as declines", "answer": "answers read as answers"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="a commit whose detector is shown beside this checkout's")
    ap.add_argument("--show", action="store_true", help="print every row this checkout's detector gets wrong")
    args = ap.parse_args()
    detectors = {"after": detector_at(None)}
    if args.before:
        detectors = {f"before ({args.before[:8]})": detector_at(args.before), **detectors}
    names = list(detectors)
    print("decline detector (no model); each cell: rows read right / rows\n")
    print(f"{'set':8} {'what':37} {'lang':5} " + " ".join(f"{n:>20}" for n in names))
    for set_name, rows in sets().items():
        tables = [table(rows, d) for d in detectors.values()]
        for label in ("decline", "partial", "hedged", "answer"):
            for lang in ("en", "de", "fr", "es", "other", "all"):
                if (label, lang) not in tables[0]:
                    continue
                cells = [f"{t[(label, lang)][0]:d} / {t[(label, lang)][1]:d}" for t in tables]
                print(f"{set_name:8} {WHAT[label]:37} {lang:5} " + " ".join(f"{c:>20}" for c in cells))
        if args.show:
            for r in rows:
                v = detectors["after"](r["response"])
                if not right(r["label"], v.verdict):
                    print(f"    {r['id']} [{r['label']} -> {v.verdict}] {r['response']}")
    real = claims()
    if real:
        print(f"\nreal claims read as a decline (declines or mixed: a claim set aside unjudged), of {len(real)}:")
        for name, d in detectors.items():
            bad = [c for c in real if d(c).verdict in ("declines", "mixed")]
            print(f"  {name:20} {len(bad)}")
            if args.show and name == "after":
                for c in bad:
                    print(f"    {c}")
        docs = document_sentences()
        print(f"\nsentences of retrieved documents read as a pure decline, of {len(docs)}:")
        for name, d in detectors.items():
            print(f"  {name:20} {sum(d(x).verdict == 'declines' for x in docs)}")
    else:
        print("\n(real claims: the development sets are not here; set $RAGSIGHT_METAEVAL)")


if __name__ == "__main__":
    main()
