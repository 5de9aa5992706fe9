"""Peak memory of ``ragsight.evaluate()`` at 1,000 and at 100,000 samples.

    nice -n 10 .venv/bin/python bench/memory.py                 # 1,000 and 100,000 samples
    .venv/bin/python bench/memory.py --sizes 1000,5000          # a quick look

Each size runs in a fresh Python process: synthetic samples (every text distinct, so nothing is
shared or cached between samples) written to a JSONL file, evaluated into a store file with six
cheap metrics (exact_match, token_f1, rouge_l, hit_rate, mrr, ndcg) and one judge metric
(faithfulness: a claim extraction and a verification per sample) by an in-process scripted
judge that answers at once (0 ms) and keeps nothing. Then the process reads its result as a
user would: the summary, ``repr``, the overall score, and every record (``iter_records``).

Printed per size: the peak resident memory of the process (``resource.getrusage``
``ru_maxrss``) after ``evaluate()`` returned and after the records were read, the seconds, and
the ratio of the largest size's peaks to the smallest's. The target: 100,000 samples within
1.2x of 1,000. The data set is loaded (``Dataset.load``) before ``evaluate()`` is called, so the
peak is also shown split into the imports, the loaded data set (a JSONL file of 8 MB or more is
read from the file when its samples are gone through, ``FileSamples``; a smaller one is held)
and what the run added above it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _machine import peak_mb, rss_mb

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["faithfulness", "exact_match", "token_f1", "rouge_l", "hit_rate", "mrr", "ndcg"]


def make_data(n: int, path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            row: dict[str, Any] = {
                "id": f"m{i:06d}",
                "question": f"What does Acme{i} say about Topic{i}?",
                "contexts": [f"Acme{i} reports that Topic{i} grew by {i % 97} percent last year.",
                             f"Topic{i} is run by Dana{i} from Berlin.",
                             f"Unrelated note {i} about the weather in Oslo."],
                "response": f"Acme{i} says Topic{i} grew by {i % 97} percent. Dana{i} runs Topic{i}.",
                "reference": f"Topic{i} grew by {i % 97} percent according to Acme{i}.",
                "retrieved_ids": [f"doc{i}", f"doc{i + 1}", f"doc{i + 2}"],
                "relevant_ids": [f"doc{i + 1}"],
            }
            if i % 7 == 3:
                row["response"] = f"I do not know about Topic{i}."  # no claims: undetermined
            if i % 5 == 4:
                del row["reference"]  # the reference metrics are skipped
            f.write(json.dumps(row) + "\n")


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _extract_claims(v: Mapping[str, Any]) -> Any:
    return {"claims": [s.strip() + "." for s in str(v["raw_text"]).split(".") if s.strip() and "know" not in s]}


def _verify_claims(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [{"id": i, "supported": _h(c, v["target"]) % 3 != 0, "chunks": [1],
                          "reason": f"scripted verdict {i}"} for i, c in enumerate(v["claim_list"], start=1)]}


def child(n: int, workdir: Path) -> dict[str, Any]:
    import ragsight
    from ragsight.judge import ScriptedProvider

    class Judge(ScriptedProvider):
        """The scripted judge, keeping no request (ScriptedProvider keeps them for tests)."""

        async def complete(self, request: Any) -> Any:
            try:
                return await super().complete(request)
            finally:
                self.requests.clear()

    data = workdir / f"data_{n}.jsonl"
    make_data(n, data)
    store = workdir / f"runs_{n}.db"
    start_mb = peak_mb()
    # the data is loaded first, so that what the data takes and what the run adds are told apart
    dataset = ragsight.Dataset.load(str(data))
    data_mb = peak_mb()
    held_mb = rss_mb()
    t0 = time.monotonic()
    result = ragsight.evaluate(dataset, METRICS,
                               judge=Judge(
        {"extract_claims": _extract_claims, "verify_claims": _verify_claims}, model="memory-bench"),
                               store=str(store), options=ragsight.RunOptions(show_progress=False))
    seconds = time.monotonic() - t0
    after_evaluate = peak_mb()
    summary = {k: (s.mean, dict(s.counts)) for k, s in result.summary.items()}
    text = repr(result)
    overall = result.overall
    records = sum(1 for _ in result.iter_records())
    return {"n": n, "seconds": round(seconds, 1), "start_mb": round(start_mb, 1), "data_mb": round(data_mb, 1),
            "held_mb": round(held_mb, 1),
            "evaluate_mb": round(after_evaluate, 1), "records_mb": round(peak_mb(), 1),
            "records": records, "lazy": result.lazy, "overall": overall, "repr": text,
            "faithfulness": summary["faithfulness"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,100000", help="sample counts, comma-separated (default 1000,100000)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, Path(args.workdir))), flush=True)
        return
    sizes = [int(x) for x in args.sizes.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = []
    with tempfile.TemporaryDirectory(prefix="ragsight-memory-") as tmp:
        for n in sizes:
            proc = subprocess.run([sys.executable, __file__, "--child", str(n), "--workdir", tmp],
                                  env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.exit(f"the run of {n} samples failed:\n{proc.stderr[-3000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            out.append(got)
            print(f"{n:>8,} samples: peak RSS {got['evaluate_mb']:7.1f} MB after evaluate(), "
                  f"{got['records_mb']:7.1f} MB after reading every record; {got['seconds']:.0f} s", flush=True)
            print(f"          of which: imports {got['start_mb']:.1f} MB, loading the data set "
                  f"{got['data_mb'] - got['start_mb']:.1f} MB (resident once loaded: {got['held_mb']:.1f} MB), "
                  f"the run above that {got['evaluate_mb'] - got['data_mb']:.1f} MB (lazy result: {got['lazy']})",
                  flush=True)
            print(f"          {got['repr'][:300]}", flush=True)
    first, last = out[0], out[-1]
    if len(out) > 1:
        print(f"ratio {last['n']:,} / {first['n']:,} samples: {last['evaluate_mb'] / first['evaluate_mb']:.2f}x "
              f"after evaluate(), {last['records_mb'] / first['records_mb']:.2f}x after the records "
              "(target: at most 1.2x)")
        print(f"the data set takes {(last['held_mb'] - last['start_mb']) / last['n'] * 1024:.2f} kB a sample once "
              f"loaded, {(last['data_mb'] - last['start_mb']) / last['n'] * 1024:.2f} kB while loading; the run "
              f"adds {last['evaluate_mb'] - last['data_mb']:.1f} MB above that at {last['n']:,} samples, "
              f"{first['evaluate_mb'] - first['data_mb']:.1f} MB at {first['n']:,}")


if __name__ == "__main__":
    main()
