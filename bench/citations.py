"""What the citation metrics cost, and how the embedded judge ranks right and wrong citations.

    .venv/bin/python bench/citations.py             # judge calls and prompt tokens on the mock
    .venv/bin/python bench/citations.py --local     # also: the embedded judge on 2 samples

Cost: the 20 airline samples of the shared benchmark kit (``../shared/bench``, ``--kit``), each
sentence of each response given a citation marker ``[k]`` (k cycling over the three chunks), are
evaluated on the kit's OpenAI-compatible mock with faithfulness alone, with faithfulness and the
two citation metrics, and with the citation metrics alone. Calls and prompt tokens are what the
mock counted (``GET /stats``), per sample; the mock's verdicts are arbitrary, so its scores mean
nothing here.

``--local``: the response of tests/local/test_citations_local.py citing the right chunks and
the same response citing the wrong ones, with the embedded judge (Qwen2.5-Coder-1.5B): both
metrics' values and the model calls made (a few minutes on two cores).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _data import read_jsonl
from _mock import started_mock
from bench_vs_ragas import DEFAULT_KIT

import ragsight

CHUNKS = [
    "Refunds for cancelled flights are paid within five working days of the request.",
    "Each passenger may check one bag of up to 23 kg; a second checked bag costs 30 euros.",
    "The airport lounge in Terminal 2 opens at 6 am and closes at 11 pm.",
]
RIGHT = ("Refunds for cancelled flights are paid within five working days [1]. "
         "A second checked bag costs 30 euros [2].")
WRONG = ("Refunds for cancelled flights are paid within five working days [3]. "
         "A second checked bag costs 30 euros [1].")


def cited_rows(kit: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(kit / "airline_20.jsonl")
    for row in rows:
        parts = re.split(r"(?<=[.!?])\s+", row["response"].strip())
        row["response"] = " ".join(p[:-1] + f" [{i % 3 + 1}]" + p[-1] if p[-1:] in ".!?" else p + f" [{i % 3 + 1}]"
                                   for i, p in enumerate(parts))
    return rows


def cost(kit: Path, python: Path) -> None:
    rows = cited_rows(kit)
    runs = {"faithfulness": ["faithfulness"],
            "faithfulness + citations": ["faithfulness", "citation_precision", "citation_recall"],
            "citations alone": ["citation_precision", "citation_recall"]}
    with tempfile.TemporaryDirectory(prefix="ragsight-cite-") as tmp, \
            started_mock(kit, python, Path(tmp), str(kit / "tiktoken_cache")) as mock:
        os.environ.setdefault("OPENAI_API_KEY", "sk-local-mock")
        print(f"{len(rows)} airline samples, every sentence cited; judge calls and prompt tokens per sample")
        print(f"{'metrics':<26} {'calls':>6} {'prompt tokens':>14}  outcomes")
        for i, (name, metrics) in enumerate(runs.items()):
            mock.reset(f"cite{i}", 0.0)
            res = ragsight.evaluate(rows, metrics, store=os.path.join(tmp, f"r{i}.db"),
                                    judge=ragsight.JudgeSpec("openai:gpt-4o-mini", base_url=mock.url + "/v1"),
                                    options=ragsight.RunOptions(cache=False, show_progress=False))
            stats = mock.get("/stats")
            outcomes: dict[str, int] = {}
            for s in res.samples:
                for k in res.metric_keys:
                    o = res.scores[s.id][k].outcome.value
                    outcomes[o] = outcomes.get(o, 0) + 1
            calls = (stats["chat_calls"] - 1) / len(rows)  # less the preflight ping
            print(f"{name:<26} {calls:>6.2f} {stats['prompt_tokens'] / len(rows):>14,.0f}  {outcomes}")


def local() -> None:
    data = [{"id": k, "question": "How fast are refunds paid, and what does a second bag cost?",
             "contexts": CHUNKS, "response": r} for k, r in (("right", RIGHT), ("wrong", WRONG))]
    t0 = time.perf_counter()
    res = ragsight.evaluate(data, ["citation_precision", "citation_recall"], judge="local",
                            options=ragsight.RunOptions(show_progress=False))
    wall = time.perf_counter() - t0
    print(f"embedded judge, 2 samples, {wall:.0f} s, {res.judge_stats.get('calls')} model calls")
    for sid in ("right", "wrong"):
        for k in res.metric_keys:
            sc = res.scores[sid][k]
            value = "-" if sc.value is None else f"{sc.value:.3f}"
            print(f"  {sid:<6} {k:<19} {value:>6}  {sc.reason}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", type=Path, default=DEFAULT_KIT)
    ap.add_argument("--mock-python", type=Path, default=Path(sys.executable),
                    help="a Python with aiohttp and tiktoken for the kit's mock (default: this one)")
    ap.add_argument("--local", action="store_true", help="also run the embedded judge on 2 samples")
    args = ap.parse_args(argv)
    cost(args.kit, args.mock_python)
    if args.local:
        local()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
