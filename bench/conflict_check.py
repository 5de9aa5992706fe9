"""The conflict guard of the embedded judge's claim verdicts, on a contradiction set written apart
from the rule.

The guard (``analyses/_conflict.py``, applied in ``analyses/_calibrated.py``): when the source
sentence closest to a claim holds at least half of its content words and has another number, a
negation the claim lacks (or the reverse), or the opposite of one of its words, the combination of
the judge's P(Yes) and word overlap is at most the judge's own P(Yes). A new user's "A plain BEGIN
starts an IMMEDIATE transaction" (judge 0.44) had been accepted at 0.68 on its words.

``bench/conflict_set.jsonl``: claims against passages of Debian's manual pages, each labelled
``contradicted`` (the passage says otherwise) or ``supported`` (a paraphrase, some with a
negation on both sides). Part ``dev`` (30 claims: bzip2, flock, du, comm, fmt) was written after
the first version of the rule; the rule's own output on it (no judge) showed negations of another
clause read as contradictions, and the rule was narrowed to the clause that matches the claim
before any judge call. Part ``confirm`` (19 claims: fold, expand, column, chrt) was written after
that, with the rule frozen. Each claim is asked of the embedded judge once (P(Yes), prompt ``verify_claim``,
cached on disk under ``$RAGSIGHT_VALIDITY_CACHE``), then combined with and without the guard.

    .venv/bin/python bench/conflict_check.py          # the judge calls (cached), then the figures
    .venv/bin/python bench/conflict_check.py --candidates   # the narrower rules and the choice

``--candidates``: the candidate rules named before their figures (docs/validity.md, "A narrower
rule"), each a subset of the first rule's touches, so read from the judge outputs on disk: the
contradiction set's ``dev`` fixes each keeps, and its made right / made wrong on the labelled
development claims; then the one the rule named before picks. The ``confirm`` part is not read
there (it is read once, for the shipped rule, by the run without the flag).

Printed: how many claims of each label the combination accepts (P >= 0.5) without and with the
guard, which the guard flips, and the claims the rule sees (its ``says_otherwise`` kind). Then,
on the human-labelled development claims (WiCE, ExpertQA; development split), the claims the
rule touches, with the judge's P(Yes) of the ``bare`` probe of ``bench/validity.py`` (the same
cache): at 0.5 only touched claims can change, so made right / made wrong is the whole change
in accuracy there.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import validity  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight.analyses import ConflictRule, _conflict, contexts_block  # noqa: E402
from ragsight.analyses._calibrated import assess_claim, combine  # noqa: E402
from ragsight.analyses._signals import compute_signals, unfence  # noqa: E402
from ragsight.judge import Judge, RetryPolicy  # noqa: E402
from ragsight.prompts import fence  # noqa: E402

DATA = HERE / "conflict_set.jsonl"
LABELLED = ("wice", "expertqa")
WIDEST = ConflictRule()  # the first rule: every candidate fires on a subset of what it fires on
# The candidates named before their figures (docs/validity.md#conflict-guard-narrower), in the
# order of the choice's last tie-break: fewer added conditions first.
CANDIDATES: list[tuple[str, ConflictRule]] = [
    ("none (the first rule)", WIDEST),
    ("numbers", ConflictRule(aligned_numbers=True)),
    ("clause", ConflictRule(clause_share=0.6)),
    ("negation", ConflictRule(negation_share=0.8)),
    ("numbers+clause", ConflictRule(aligned_numbers=True, clause_share=0.6)),
    ("numbers+negation", ConflictRule(aligned_numbers=True, negation_share=0.8)),
    ("clause+negation", ConflictRule(clause_share=0.6, negation_share=0.8)),
    ("numbers+clause+negation", ConflictRule(aligned_numbers=True, clause_share=0.6, negation_share=0.8)),
]
KEEP_FIXES = 5  # of the first rule's 6 on the dev part's contradicted claims


def signals_under(rule: ConflictRule, claim: str, source: str) -> dict[str, float]:
    """The claim's signals with the conflict guard's rule set to ``rule`` (the product reads
    ``_conflict.CONFLICT_RULE``)."""
    shipped = _conflict.CONFLICT_RULE
    _conflict.CONFLICT_RULE = rule
    try:
        return compute_signals(claim, unfence(source))
    finally:
        _conflict.CONFLICT_RULE = shipped


def patient(base: Judge, cache: validity.JsonlCache) -> Judge:
    """The judge with long timeouts: on a shared, loaded machine one call may take minutes."""
    return Judge(base.provider, cache=cache, sink=base.sink,
                 policy=RetryPolicy(call_timeout_s=900.0, step_deadline_s=3600.0))


async def labelled_rows() -> list[tuple[str, dict[str, Any], dict[str, float], float]]:
    """(set, row, signals, judge P(Yes)) of every development claim the first rule touches (the
    judge outputs of every candidate's touches; the signals are the shipped rule's)."""
    cache = validity.JsonlCache(validity.CACHE_DIR / "calls.jsonl")
    judge = patient(validity.make_judge(cache), cache)
    out = []
    for name in LABELLED:
        for row in validity.load_set(name, "dev"):
            prompt_id, values = validity.probe_calls(name, row, "bare")[0]
            if not signals_under(WIDEST, row["answer"], values["source"])["says_otherwise"]:
                continue
            sig = compute_signals(row["answer"], unfence(values["source"]))
            answer = await judge.choose(validity.load_prompt(prompt_id), values)
            out.append((name, row, sig, float(answer.value["Yes"])))
    return out


def labelled_report() -> None:
    rows = asyncio.run(labelled_rows())
    print("human-labelled development claims the rule touches (judge P(Yes) of the bare probe):")
    for name in LABELLED:
        mine = [r for r in rows if r[0] == name]
        n_dev = len(validity.load_set(name, "dev"))
        right = wrong = agree_before = agree_after = agree_judge = 0
        y, p_before, p_after = [], [], []
        for _, row, sig, j in mine:
            if not sig["says_otherwise"]:
                continue
            label = bool(validity.label_of(name, row))
            pb, pa = combine(j, sig, conflict_guard=False), combine(j, sig)
            before, after = pb >= 0.5, pa >= 0.5
            agree_before += before == label
            agree_after += after == label
            agree_judge += (j >= 0.5) == label
            y.append(label)
            p_before.append(pb)
            p_after.append(pa)
            if before != after:
                ok = after == label
                right += ok
                wrong += not ok
        pos = sum(y)
        mine = [r for r in mine if r[2]["says_otherwise"]]
        print(f"  {name:<9} {len(mine)} touched of {n_dev} development claims ({pos} supported); at 0.5: "
              f"{right} made right, {wrong} made wrong; agreement with the label on the touched claims: "
              f"combined {agree_before} of {len(mine)} before, {agree_after} with the guard "
              f"(judge alone {agree_judge})")
        if 0 < pos < len(y):
            import numpy as np
            from _stats import auroc_pairs

            yy = np.array(y)
            for what, v in (("before", p_before), ("with the guard", p_after)):
                vv = np.array(v)
                print(f"            AUROC on the touched claims, {what}: {auroc_pairs(vv[yy], vv[~yy]):.3f}")


async def judge_all(rows: list[dict[str, Any]]) -> dict[str, float]:
    cache = validity.JsonlCache(validity.CACHE_DIR / "conflict_calls.jsonl")
    judge = patient(validity.make_judge(cache), cache)
    prompt = validity.load_prompt("verify_claim")
    out = {}
    for i, row in enumerate(rows, start=1):
        values = {"source": contexts_block([row["chunk"]]), "claim": fence("claim", row["claim"]),
                  "claim_text": row["claim"], "target": "contexts"}
        answer = await judge.choose(prompt, values)
        p = float(answer.value["Yes"])
        out[row["id"]] = p
        print(f"  [{i}/{len(rows)}] {row['id']}: P(Yes) {p:.2f}", file=sys.stderr, flush=True)
    return out


def candidates_report(rows: list[dict[str, Any]], judged: dict[str, float]) -> str:
    """Each candidate's figures and the choice by the rule named before them; returns the name."""
    labelled = asyncio.run(labelled_rows())
    results = []
    print("candidates (made right / made wrong at 0.5 by the guard, against no guard):")
    print("  candidate                 dev fixes kept  dev supported lost  WiCE r/w  ExpertQA r/w  net")
    base_fixes: set[str] = set()
    for name, rule in CANDIDATES:
        fixes: dict[str, set[str]] = {"dev": set()}
        lost = 0
        for row in rows:
            if row.get("part", "dev") != "dev":
                continue  # the confirm part is read once, for the chosen rule (main)
            j = judged[row["id"]]
            sig = signals_under(rule, row["claim"], contexts_block([row["chunk"]]))
            before, after = combine(j, sig, conflict_guard=False) >= 0.5, combine(j, sig) >= 0.5
            if before and not after:
                if row["label"] == "contradicted":
                    fixes["dev"].add(row["id"])
                else:
                    lost += 1
        if rule == WIDEST:
            base_fixes = fixes["dev"]
        rw: dict[str, list[int]] = {}
        for set_name, row, _, j in labelled:
            sig = signals_under(rule, row["answer"], validity.probe_calls(set_name, row, "bare")[0][1]["source"])
            before, after = combine(j, sig, conflict_guard=False) >= 0.5, combine(j, sig) >= 0.5
            r = rw.setdefault(set_name, [0, 0])
            if before != after:
                r[0 if after == bool(validity.label_of(set_name, row)) else 1] += 1
        right = sum(v[0] for v in rw.values())
        wrong = sum(v[1] for v in rw.values())
        kept = len(fixes["dev"] & base_fixes)
        results.append((name, kept, lost, right, wrong))
        w, e = rw.get("wice", [0, 0]), rw.get("expertqa", [0, 0])
        print(f"  {name:<25} {kept} of {len(base_fixes):<10} {lost:<19} "
              f"{w[0]}/{w[1]:<7} {e[0]}/{e[1]:<11} {right - wrong:+d}")
    eligible = [r for r in results if r[1] >= KEEP_FIXES and r[2] == 0]
    # largest (right - wrong); ties: fewer wrong, then the earlier (fewer conditions) in CANDIDATES
    chosen = min(eligible, key=lambda r: (-(r[3] - r[4]), r[4], results.index(r)))[0]
    print(f"chosen by the rule named before (keep >= {KEEP_FIXES} dev fixes, no dev supported claim lost, "
          f"largest right - wrong on WiCE+ExpertQA dev): {chosen}")
    return chosen


def main() -> int:
    rows = read_jsonl(DATA)
    judged = asyncio.run(judge_all(rows))
    if "--candidates" in sys.argv[1:]:
        candidates_report(rows, judged)
        return 0
    table: dict[str, dict[str, int]] = {}
    flips = []
    seen = []
    for row in rows:
        j = judged[row["id"]]
        _, sig = assess_claim(row["claim"], contexts_block([row["chunk"]]), j)
        before = combine(j, sig, conflict_guard=False)
        after = combine(j, sig)
        t = table.setdefault(f"{row.get('part', 'dev')}: {row['label']}", {"n": 0, "before": 0, "after": 0, "judge": 0})
        t["n"] += 1
        t["before"] += before >= 0.5
        t["after"] += after >= 0.5
        t["judge"] += j >= 0.5
        kind = next((k for k in ("number", "negation", "antonym") if sig.get("says_otherwise_" + k)), "")
        if kind:
            seen.append(f"  {row.get('part', 'dev'):<7} {row['label']:<12} {kind:<9} {row['claim']}")
        if (before >= 0.5) != (after >= 0.5):
            flips.append(f"  {row.get('part', 'dev'):<7} {row['label']:<12} {before:.2f} -> {after:.2f} (judge {j:.2f}, "
                         f"overlap {sig['overlap']:.2f}) {row['claim']}")
    print(f"{DATA.name}: {len(rows)} claims against passages of Debian manual pages")
    print("accepted at P >= 0.5:              judge alone   combined, no guard   combined, guard")
    for label, t in sorted(table.items()):
        print(f"  {label:<20} ({t['n']:>2})        {t['judge']:>3}             {t['before']:>3}                {t['after']:>3}")
    print(f"the rule sees {len(seen)} claims:")
    print("\n".join(seen))
    print(f"flipped at 0.5 by the guard: {len(flips)}")
    print("\n".join(flips))
    labelled_report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
