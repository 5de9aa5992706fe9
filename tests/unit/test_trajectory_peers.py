"""trajectory_match beside LangChain agentevals' own verdicts (``tests/fixtures/peers/
trajectory_agentevals.json``, written by agentevals 0.0.9 with ``make_trajectory_peers.py``): the
same verdict in every mode and argument mode on every case, except the differences docs/agents.md
names, which are exactly these."""

from __future__ import annotations

import json
from pathlib import Path

from ragsight.conversation import ToolCall
from ragsight.metrics.trajectory import match_trajectory

PEERS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "peers" /
                    "trajectory_agentevals.json").read_text())

# (case, mode/args) -> ragsight's verdict where it differs from agentevals', and why
DIFFERENCES = {
    # agentevals compares message by message: two parallel calls of one message in any order
    ("parallel_other_order", "strict/exact"): False,
    ("parallel_other_order", "strict/ignore"): False,
    ("parallel_other_order", "strict/subset"): False,
    ("parallel_other_order", "strict/superset"): False,
    # agentevals' first-fit pairing takes the call another reference call needed; the largest
    # matching pairs both
    ("greedy_subset_args", "unordered/subset"): True,
    ("greedy_subset_args", "subset/subset"): True,
    ("greedy_subset_args", "superset/subset"): True,
    # with an argument mode that is not symmetric, agentevals tests (reference, call) in subset
    # mode and both ways in unordered mode; ragsight always tests (call, reference)
    ("more_arguments_than_the_reference", "subset/subset"): False,
    ("more_arguments_than_the_reference", "subset/superset"): True,
    ("more_arguments_than_the_reference", "unordered/superset"): True,
}


def test_the_same_verdicts_as_agentevals_but_the_named_differences() -> None:
    differ = {}
    for name, row in PEERS["cases"].items():
        made = [ToolCall(n, a) for step in row["calls"] for n, a in step]
        want = [ToolCall(n, a) for step in row["reference"] for n, a in step]
        for key, peer in row["verdicts"].items():
            mode, args = key.split("/")
            ours = match_trajectory(made, want, mode, args)[0]
            if ours != peer:
                differ[(name, key)] = ours
    assert differ == DIFFERENCES
    assert len(PEERS["cases"]) == 10 and all(len(r["verdicts"]) == 16 for r in PEERS["cases"].values())
