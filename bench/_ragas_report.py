"""The tables bench/bench_vs_ragas.py prints: work per sample counted by the mock, wall times,
what makes the comparison fair, and the targets."""

from __future__ import annotations

from typing import Any

from _data import CORE4, SEVEN
from _table import print_table

SUITES = {"core4": CORE4, "seven": SEVEN}


def fmt(x: float | None, d: int = 2) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.{d}f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = sorted(runs, key=lambda r: r["wall_s"])
    mid = dict(walls[len(walls) // 2])
    mid["walls"] = [round(r["wall_s"], 3) for r in runs]
    mid["loads"] = [round(r["load1"], 2) for r in runs]
    return mid


def work_rows(name: str, rs: dict[str, Any], rg: dict[str, Any], n: int) -> list[list[str]]:
    s1, s2 = rs["server"], rg["server"]
    rows = []
    for label, key in (("judge calls/sample", "chat_calls"), ("choices returned/sample", "chat_choices"),
                       ("prompt tokens/sample", "prompt_tokens"),
                       ("completion tokens/sample", "completion_tokens"),
                       ("embedding calls/sample", "embed_calls")):
        a, b = s1[key] / n, s2[key] / n
        rows.append([name, label, fmt(a, 2 if a < 100 else 0), fmt(b, 2 if b < 100 else 0), ratio(a, b)])
    return rows


def report_suite(suite: str, per_lat: dict[float, dict[str, Any]], n: int) -> None:
    metrics = SUITES[suite]
    lat0 = min(per_lat)
    rs0, rg0 = per_lat[lat0]["ragsight"], per_lat[lat0]["ragas"]
    print(f"\n=== suite {suite}: {', '.join(metrics)}")
    if rg0 is not None:
        print_table(f"work per sample ({suite}, counted by the mock, at {int(lat0)} ms)",
                    ["suite", "measure", "ragsight", "ragas", "ragsight/ragas"], work_rows(suite, rs0, rg0, n))
    else:
        s = rs0["server"]
        print(f"ragsight: calls/sample {s['chat_calls'] / n:.2f}, prompt tokens/sample "
              f"{s['prompt_tokens'] / n:,.0f}, completion tokens/sample {s['completion_tokens'] / n:,.0f}, "
              f"embedding calls/sample {s['embed_calls'] / n:.2f}")
    rows = []
    for lat, pair in per_lat.items():
        rs, rg = pair["ragsight"], pair["ragas"]
        rows.append([f"{int(lat)} ms", f"{rs['wall_s']:.2f} s (runs {rs['walls']}, load {rs['loads']})",
                     f"{rg['wall_s']:.2f} s (runs {rg['walls']}, load {rg['loads']})" if rg else "-",
                     ratio(rs["wall_s"], rg["wall_s"]) if rg else "-",
                     f"{rs['server']['max_inflight']} / {rg['server']['max_inflight']}" if rg else "-"])
    print_table(f"wall time ({suite}, 20 samples; load = 1-min load average at start)",
                ["latency", "ragsight", "ragas", "ratio", "peak calls in flight rs/rg"], rows)
    # what makes it fair
    if rs0.get("log"):
        L1, L2 = rs0["log"], (rg0 or {}).get("log") or {}
        fair = []
        for label, key in (("judge steps/sample (first calls, no re-asks)", "steps_per_sample"),
                           ("response claims extracted/sample", "claims_response_per_sample"),
                           ("reference claims extracted/sample", "claims_reference_per_sample"),
                           ("response decompositions/sample", "response_decompositions_per_sample"),
                           ("reference decompositions/sample", "reference_decompositions_per_sample"),
                           ("claim verdicts/sample", "claim_verdicts_per_sample"),
                           ("chunk relevance verdicts/sample", "chunk_verdicts_per_sample"),
                           ("re-asks or repairs/sample", "reasks_per_sample"),
                           ("response_format schema tokens/sample (not in prompt tokens)",
                            "schema_tokens_per_sample")):
            fair.append([label, fmt(L1.get(key)), fmt(L2.get(key)) if L2 else "-"])
        cp_rows = []
        for lat, pair in per_lat.items():
            if lat <= 0:  # at 0 ms the mock answers one call at a time: chains mean nothing
                continue
            for tool in ("ragsight", "ragas"):
                r = pair[tool]
                if r and r.get("log"):
                    cp = r["log"]["critical_path"]
                    cp_rows.append([f"{int(lat)} ms", tool, fmt(cp["chain_mean"]), str(cp["chain_max"]),
                                    fmt(cp["span_mean_s"])])
        print_table(f"what makes it fair ({suite}, from the mock's request log)",
                    ["measure", "ragsight", "ragas"], fair)
        print("  ragsight steps by kind/sample:", {k: round(v, 2) for k, v in L1["steps_by_kind"].items()})
        if L2:
            print("  ragas steps by kind/sample:   ", {k: round(v, 2) for k, v in L2["steps_by_kind"].items()})
        print(f"  ragsight preflight pings in the run: {L1['preflight_calls']}; calls not matched to a "
              f"sample: ragsight {L1['unmatched_calls']}, ragas {L2.get('unmatched_calls', '-')}")
        if cp_rows:
            print_table("calls one after another per sample (longest chain of a sample's calls, each starting "
                        "after the previous ended: dependencies plus queueing) and the span of a sample's calls",
                        ["latency", "tool", "chain mean", "chain max", "span mean s"], cp_rows)
    bp = rs0["judge_stats"].get("by_prompt", {})
    print(f"  ragsight judge_stats: calls {rs0['judge_stats']['calls']}, steps {rs0['judge_stats']['steps']}, "
          f"re-asks {rs0['judge_stats']['reasks']}, failed steps {rs0['judge_stats']['failed_steps']}")
    print("  ragsight calls per prompt id (judge_stats['by_prompt'], whole run):",
          {k: v for k, v in sorted(bp.items())}, "per sample:", {k: round(v / n, 2) for k, v in sorted(bp.items())})
    print("  ragsight outcomes:", rs0["outcomes"], "means:", {k: fmt(v, 3) for k, v in rs0["means"].items()})
    if rs0["fail_reasons"]:
        print("  ragsight failures:", rs0["fail_reasons"])
    if rg0:
        print("  ragas means:", {k: fmt(v, 3) for k, v in rg0["means"].items()}, "NaN:", rg0["nan"])


def check_targets(results: dict[str, Any], n: int) -> None:
    lines = []
    for suite, per_lat in results["suites"].items():
        lat0 = min(per_lat)
        rs0, rg0 = per_lat[lat0]["ragsight"], per_lat[lat0]["ragas"]
        p300 = per_lat.get(300.0)
        calls = rs0["server"]["chat_calls"] / n
        ptok = rs0["server"]["prompt_tokens"] / n
        if suite == "core4":
            if rg0:
                r = rs0["server"]["prompt_tokens"] / rg0["server"]["prompt_tokens"]
                lines.append((suite, "prompt tokens <= 0.5 x ragas", r <= 0.5, f"{r:.2f} x"))
            if p300 and p300["ragas"]:
                r = p300["ragsight"]["wall_s"] / p300["ragas"]["wall_s"]
                lines.append((suite, "wall @300ms <= 1/3 ragas (0.333)", r <= 1 / 3, f"{r:.3f} x"))
        else:
            lines.append((suite, "<= 10 judge calls/sample", calls <= 10, f"{calls:.2f}"))
            lines.append((suite, "<= 8,000 prompt tokens/sample", ptok <= 8000, f"{ptok:,.0f}"))
            if p300 and p300["ragas"]:
                r = p300["ragsight"]["wall_s"] / p300["ragas"]["wall_s"]
                lines.append((suite, "wall @300ms <= 1/4 ragas (0.25)", r <= 0.25, f"{r:.3f} x"))
    results["targets"] = [{"suite": s, "target": t, "pass": ok, "value": v} for s, t, ok, v in lines]
    if lines:
        print_table("targets", ["suite", "target", "result", "measured"],
                    [[s, t, "PASS" if ok else "FAIL", v] for s, t, ok, v in lines])
