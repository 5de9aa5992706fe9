"""Does ``ragsight diagnose`` name the cause a failing sample was written to have, with the
embedded judge's own evidence?

    nice -n 10 .venv/bin/python bench/diagnose_check.py            # the embedded judge (takes a while)
    nice -n 10 .venv/bin/python bench/diagnose_check.py --store runs.db   # keep the run

Data: passages of the Python Language Reference (``bench/diagnose_docs.json``, its source and
licence inside: the Python Software Foundation License), and 18 samples written on them here,
each planted with one cause: two or three of each of retrieval (a missed claim, a needed chunk
ranked last), unsupported (two contradicted by the chunk, one the chunks are silent on), noise (an
answer copied from the irrelevant chunk), incomplete (one fact of four), decline (an in-scope
decline with the answer in the chunk, an out-of-scope question answered), tool (a wrong argument,
a missing call; two agent turns), judge (responses with no factual claim: undetermined), and
two correct answers that should fail nothing.

The run: ``ragsight.evaluate(rows, METRICS, judge="local")`` (faithfulness, context_recall,
context_precision, factual_correctness, noise_sensitivity, tool_call_accuracy; no abstention, so
declines are read from faithfulness's decline detection) and ``ragsight.diagnose`` with its
default thresholds and embedder. Printed: per planted cause, how many samples got it as their
primary cause (and what the others got), the split of the unsupported claims, and the overall
agreement.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = json.loads((REPO / "bench" / "diagnose_docs.json").read_text("utf-8"))["passages"]
METRICS = ["faithfulness", "context_recall", "context_precision", "factual_correctness", "noise_sensitivity",
           "tool_call_accuracy"]
PASSING = "passing"


def row(sid: str, cause: str, question: str, chunks: list[str], response: str, reference: str | None = None,
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": sid, "question": question, "contexts": [DOCS[c] for c in chunks],
                           "response": response, "metadata": {"planted": cause, **extra.pop("metadata", {})}}
    if reference is not None:
        out["reference"] = reference
    return {**out, **extra}


def tool_row(cid: str, ask: str, made: list[dict[str, Any]], expected: list[dict[str, Any]]) -> dict[str, Any]:
    return {"conversation_id": cid, "turns": [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "Here is what the reference says.", "tool_calls": made,
         "reference_tool_calls": expected}]}


ROWS = [
    row("ret-miss", "retrieval", 'What happens when "del" is applied to an unbound name?', ["pass", "lambda"],
        'Deleting an unbound name raises a "NameError" exception.',
        'Deleting an unbound name raises a "NameError" exception.'),
    row("ret-rank", "retrieval", 'What does "return" substitute when no expression list is present?',
        ["global", "nonlocal", "return"], 'When no expression list is present, "return" substitutes "None".',
        'When no expression list is present, "return" substitutes "None".'),
    row("uns-pep", "unsupported", 'Which PEP specifies the "nonlocal" statement?', ["nonlocal_pep", "nonlocal"],
        'The "nonlocal" statement is specified by PEP 3107.', 'PEP 3104 specifies the "nonlocal" statement.',
        metadata={"kind": "contradicted"}),
    row("uns-lambda", "unsupported", "Can a function created with a lambda expression contain statements?",
        ["lambda"], "Functions created with lambda expressions can contain statements.",
        "Functions created with lambda expressions cannot contain statements or annotations.",
        metadata={"kind": "contradicted"}),
    row("uns-silent", "unsupported", 'What does the "pass" statement do?', ["pass"],
        'The "pass" statement was added to Python in 1994 by Guido van Rossum. It is the fastest statement '
        "in CPython.", 'When "pass" is executed, nothing happens.', metadata={"kind": "silent"}),
    row("noi-break", "noise", 'What does "break" do to the optional "else" clause of a loop?', ["break", "continue"],
        '"break" continues with the next cycle of the nearest enclosing loop.',
        '"break" terminates the nearest enclosing loop, skipping its optional "else" clause.'),
    row("noi-global", "noise", 'How are the identifiers listed in a "global" statement interpreted?',
        ["global", "nonlocal"],
        "The listed identifiers refer to previously bound variables in the nearest enclosing scope excluding "
        "globals.", 'The identifiers listed in a "global" statement are interpreted as globals.'),
    row("inc-raise", "incomplete", 'What does "raise" do when no expressions are present?', ["raise"],
        'Without expressions, "raise" re-raises the exception that is currently being handled.',
        'Without expressions, "raise" re-raises the exception that is currently being handled. That exception '
        'is also known as the active exception. If there is no active exception, a "RuntimeError" exception is '
        'raised. The "RuntimeError" indicates that this is an error.'),
    row("inc-assert", "incomplete", 'What is the value of "__debug__", and what does it change?', ["assert"],
        'The built-in variable "__debug__" is "True" under normal circumstances.',
        'The built-in variable "__debug__" is "True" under normal circumstances. "__debug__" is "False" when '
        'optimization is requested. Optimization is requested with the command line option "-O". The code '
        "generator emits no code for an assert statement when optimization is requested at compile time."),
    row("dec-break", "decline", 'Does "break" skip the "else" clause of a loop?', ["break"],
        "I don't know; the documents do not say.", '"break" skips the optional "else" clause of the loop.'),
    row("dec-del", "decline", 'Which exception does deleting an unbound name raise?', ["del"],
        "The documents do not say which exception is raised.",
        'Deleting an unbound name raises a "NameError" exception.'),
    row("dec-oos", "decline", 'Which company maintains the "pass" statement?', ["pass"],
        'The "pass" statement is maintained by Microsoft.', metadata={"answerable": False}),
    row("jud-hello", "judge", 'What does the "pass" statement do?', ["pass"], "Happy to help!"),
    row("jud-thanks", "judge", 'When is "pass" useful?', ["pass"], "Thanks for the question, glad you asked."),
    row("ok-return", PASSING, 'What does "return" leave?', ["return"],
        '"return" leaves the current function call.', '"return" leaves the current function call.'),
    row("ok-global", PASSING, 'How long does a "global" declaration hold?', ["global"],
        'A "global" statement holds for the entire current code block.',
        'A "global" statement holds for the entire current code block.'),
]
TOOLS = [
    tool_row("tool-arg", 'Look up the "break" statement in the reference.',
             [{"name": "search_reference", "args": {"topic": "continue"}}],
             [{"name": "search_reference", "args": {"topic": "break"}}]),
    tool_row("tool-missing", 'Look up "global" and "nonlocal" in the reference.',
             [{"name": "search_reference", "args": {"topic": "global"}}],
             [{"name": "search_reference", "args": {"topic": "global"}},
              {"name": "search_reference", "args": {"topic": "nonlocal"}}]),
]
PLANTED = {**{r["id"]: r["metadata"]["planted"] for r in ROWS}, "tool-arg:0": "tool", "tool-missing:0": "tool"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", help="keep the run in this store (default: a temporary one)")
    ap.add_argument("--judge", default="local", help="judge spec (default: the embedded judge)")
    args = ap.parse_args()

    import ragsight
    from ragsight.diagnosis import diagnose, diagnosis_lines

    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or str(Path(tmp) / "diagnose_check.db")
        t0 = time.perf_counter()
        result = ragsight.evaluate([*ROWS, *TOOLS], METRICS, judge=args.judge, store=store,
                                   options=ragsight.RunOptions(show_progress=False))
        t_eval = time.perf_counter() - t0
        d = diagnose(result)
    got = {s.sample_id: s.primary for s in d.samples}
    by_cause: dict[str, Counter[str]] = {}
    for sid, planted in PLANTED.items():
        by_cause.setdefault(planted, Counter())[got.get(sid, PASSING)] += 1
    print(f"{len(PLANTED)} planted samples, judge {args.judge}, metrics {', '.join(METRICS)}; "
          f"evaluated in {t_eval:.0f} s (run {result.run_id})")
    print(f"{'planted':<12} {'n':>3} {'agree':>6}  diagnosed as")
    agree = 0
    for cause in ("retrieval", "unsupported", "noise", "incomplete", "decline", "tool", "judge", PASSING):
        c = by_cause.get(cause, Counter())
        n = sum(c.values())
        agree += c[cause]
        others = ", ".join(f"{k} {v}" for k, v in c.most_common() if k != cause) or "-"
        print(f"{cause:<12} {n:>3} {c[cause]:>6}  {others}")
    print(f"agreement: {agree} of {len(PLANTED)} ({agree / len(PLANTED):.0%})")
    kinds = []
    for r in ROWS:
        want = r["metadata"].get("kind")
        s = d.sample(r["id"])
        if want is None or s is None:
            continue
        f = next((f for f in s.findings if f.cause == "unsupported"), None)
        kinds.append((r["id"], want, ", ".join(sorted(f.kinds)) if f is not None else "no unsupported claim"))
    if kinds:
        print("unsupported claims, planted -> told apart as: " + "; ".join(f"{i}: {w} -> {g}" for i, w, g in kinds))
    print()
    print("\n".join(diagnosis_lines(d)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
