"""How close ``evaluate --dry-run`` comes to the real run: calls and tokens, estimated, then paid.

    .venv/bin/python bench/dry_run_accuracy.py [--kit DIR] [--metrics core4|seven|a,b,c]

Starts the benchmark kit's OpenAI-compatible mock (``mock_openai.py``: schema-valid replies,
tokens counted with tiktoken cl100k_base, a call counter), then on its 20 airline samples:

1. ``aestimate(...)``: the dry run, with no store yet (no cache); the mock's call counter must not
   move;
2. ``evaluate(...)`` against the mock, a fresh store;
3. prints estimated / real for judge calls, prompt, completion and total tokens (the mock's
   tiktoken counts, not ragsight's), and the dollars at gpt-4o-mini's table price.

The issue's bound is 25% on the total tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "src"))

from _data import CORE4, read_jsonl  # noqa: E402
from _mock import started_mock  # noqa: E402
from bench_vs_ragas import DEFAULT_KIT, SUITES  # noqa: E402

import ragsight  # noqa: E402
from ragsight.run import aestimate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kit", type=Path, default=DEFAULT_KIT)
    ap.add_argument("--metrics", default="core4")
    args = ap.parse_args()
    metrics = SUITES.get(args.metrics) or [m.strip() for m in args.metrics.split(",") if m.strip()] or CORE4
    rows = read_jsonl(args.kit / "airline_20.jsonl")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    tiktoken_dir = str(args.kit / "tiktoken_cache")
    with tempfile.TemporaryDirectory() as tmp, started_mock(args.kit, Path(sys.executable), Path(tmp),
                                                             tiktoken_dir) as mock:
        store = Path(tmp) / "runs.db"
        mock.reset("dry", 0)
        est = asyncio.run(aestimate(rows, metrics, store=str(store),
                                    judge=ragsight.JudgeSpec("openai:gpt-4o-mini", base_url=mock.url + "/v1")))
        after_dry = mock.get("/stats")
        mock.reset("real", 0)
        result = ragsight.evaluate(rows, metrics, embedder="openai:text-embedding-3-small", store=str(store),
                                   judge=ragsight.JudgeSpec("openai:gpt-4o-mini", base_url=mock.url + "/v1"))
        real = mock.get("/stats")
    st = result.judge_stats
    calls_sent = int(real.get("chat_calls", 0)) - 1  # less the preflight ping
    print(f"{len(rows)} airline samples, metrics: {', '.join(metrics)}, judge openai:gpt-4o-mini on the mock")
    print(f"dry run: {after_dry.get('chat_calls', 0)} chat calls and {after_dry.get('embed_calls', 0)} embedding "
          "calls reached the mock")
    est_total = est.prompt_tokens + est.completion_tokens
    real_prompt, real_completion = int(real["prompt_tokens"]), int(real["completion_tokens"])
    real_total = real_prompt + real_completion
    print(f"{'':22}{'estimated':>12}{'real':>12}{'ratio':>8}")
    for label, a, b in (("judge calls", est.calls, calls_sent),
                        ("prompt tokens", est.prompt_tokens, real_prompt),
                        ("completion tokens", est.completion_tokens, real_completion),
                        ("total tokens", est_total, real_total)):
        print(f"{label:22}{a:>12,}{b:>12,}{a / b if b else float('nan'):>8.2f}")
    cost = result.cost or {}
    print(f"dollars at the table price: estimated {ragsight.calls._cost.format_usd(est.usd)}, "
          f"real {ragsight.calls._cost.format_usd(cost.get('usd'))} (ragsight's own count: "
          f"{st.get('prompt_tokens', 0):,} + {st.get('completion_tokens', 0):,} tokens)")
    ratio = est_total / real_total if real_total else float("nan")
    ok = abs(ratio - 1) <= 0.25 and after_dry.get("chat_calls", 0) == 0 == after_dry.get("embed_calls", 0)
    print(f"within 25% of the real total and no call in the dry run: {'yes' if ok else 'NO'} "
          f"(ratio {ratio:.3f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
