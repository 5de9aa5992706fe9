"""Are conversation_completeness and agent_goal_accuracy right with the embedded judge? Seven chats
written for this check (``bench/conversation_goals.jsonl``: a support assistant for the gzip and xz
tools, its facts taken from their manual pages), each with the truth written before any score: for
every user message whether the assistant's words met its request, and whether the expected outcome
was reached. The chats: requests met; one request asked four times and never answered; an
out-of-scope request declined (the expected outcome is the decline); a decline followed by an
answer; a partly met request; a request only promised; a request met after a question back.

    PYTHONPATH=src .venv/bin/python bench/conversation_check.py            # the embedded judge
    PYTHONPATH=src .venv/bin/python bench/conversation_check.py --only met,partial

The code measured is the ``ragsight`` on PYTHONPATH (the code before a change: put its ``src``
there). Printed: each chat's scores and each user message's verdict (P(Yes) and reason) beside the
truth; then the user messages whose verdict matches the truth, the AUROC of P(met) over them, and
the goals judged right.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import read_jsonl  # noqa: E402
from _stats import auroc_pairs  # noqa: E402

SET = HERE / "conversation_goals.jsonl"


async def run(rows: list[dict], explain: str) -> int:
    from ragsight.analyses import AnalysisSettings
    from ragsight.conversation import Turn
    from ragsight.engine import score_sample
    from ragsight.judge import Judge
    from ragsight.judge._local import LocalProvider
    from ragsight.metrics import AgentGoalAccuracy, ConversationCompleteness
    from ragsight.sample import Sample

    judge = Judge(LocalProvider(progress=False))
    metrics = [ConversationCompleteness(), AgentGoalAccuracy()]
    right = total = goals_right = 0
    pos: list[float] = []
    neg: list[float] = []
    for row in rows:
        turns = tuple(Turn(m["role"], m["content"]) for m in row["messages"])
        sample = Sample(id=row["id"], conversation_id=row["id"], history=turns,
                        expected_outcome=row["expected_outcome"])
        scores = {s.metric: s for s in await score_sample(sample, metrics, judge, None, AnalysisSettings(use_cache=False, explain=explain))}
        comp, goal = scores["conversation_completeness"], scores["agent_goal_accuracy"]
        print(f"{row['id']}: completeness {comp.value} ({comp.outcome.value}: {comp.reason})")
        verdicts = comp.evidence.details.get("verdicts") or []
        for v, truth in zip(verdicts, row["met"]):
            p = v.get("probability")
            ok = bool(v["verdict"])
            right += ok == truth
            total += 1
            if p is not None:
                (pos if truth else neg).append(float(p))
            mark = "right" if ok == truth else "WRONG"
            ps = "-" if p is None else f"{p:.2f}"
            print(f"    [{v['message']}] met={ok} P={ps} truth={truth} {mark} {v.get('reason') or ''}")
        reached = goal.value == 1.0
        goals_right += reached == row["goal_met"]
        gp = goal.evidence.details.get("probability")
        print(f"  goal {goal.value} (P {gp}) truth={row['goal_met']} {'right' if reached == row['goal_met'] else 'WRONG'}: "
              f"{goal.reason}")
    print()
    print(f"completeness verdicts matching the truth: {right} of {total}")
    if pos and neg:
        print(f"AUROC of P(met), met vs not met: {auroc_pairs(np.array(pos), np.array(neg)):.3f} "
              f"({len(pos)} met, {len(neg)} not met)")
    print(f"goals judged right: {goals_right} of {len(rows)}")
    await judge.aclose()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated chat ids (default: all)")
    ap.add_argument("--explain", default="unsupported", choices=["none", "unsupported", "all"],
                    help="which verdicts get a reason (default: the No verdicts; none saves their generation)")
    args = ap.parse_args(argv)
    rows = read_jsonl(SET)
    if args.only:
        wanted = set(args.only.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    return asyncio.run(run(rows, args.explain))


if __name__ == "__main__":
    raise SystemExit(main())
