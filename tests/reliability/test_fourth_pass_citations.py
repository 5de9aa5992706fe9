"""A response of 10,000 citation markers, evaluated for citation precision and recall with
``ragsight evaluate`` against the fake judge over HTTP: before, the trail held a verdict per
citation, each carrying its claim (the whole marked sentence), so memory and the store grew with
the square of the response (10,000 markers: 65 s, 1.5 GB, a 114 MB store). Now the first 200
markers of a response and 20 distinct citations of a sentence are read, and the rest are counted
and said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ragsight
from ragsight.store import Store

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(ragsight.__file__).resolve().parents[1]  # the ragsight this test runs against

CHILD = r"""
import json, os, sys
from ragsight import cli
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld
data, store = sys.argv[1], sys.argv[2]
with FakeOpenAIServer(handler=JudgeWorld()) as srv:
    code = cli.main(["evaluate", data, "--judge", "openai:m", "--base-url", srv.url, "--store", store, "--quiet",
                     "--metrics", "citation_precision,citation_recall"])
# VmHWM: this program's own peak (ru_maxrss keeps the forking parent's size across exec, so a child
# of a large test process would report that process's memory)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"code": code, "peak_mb": peak / 1024}))
"""


def test_ten_thousand_markers_cost_what_a_few_hundred_do(tmp_path: Path) -> None:
    # markers alternate between chunks of the sample ([1]-[3]) and numbers out of its range
    marks = "".join(f"[{i % 3 + 1}]" if i % 2 else f"[{i}]" for i in range(10_000))
    response = f"Refunds are paid within five days {marks}. Bags cost thirty euros [2]."
    row = {"id": "c1", "question": "Refunds and bags?", "response": response,
           "contexts": ["Refunds are paid within five days.", "Bags cost thirty euros.", "Lounges open at six."]}
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{SRC}:{ROOT}", "OPENAI_API_KEY": "sk-test-cites"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(data), str(store)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["code"] == 0, proc.stderr[-3000:]
    assert got["peak_mb"] < 400, got  # 1.5 GB before
    assert store.stat().st_size < 8 * 2**20  # 114 MB before
    with Store(store) as st:
        run = st.runs()[0].id
        scores = st.scores(run, "c1")["c1"]
    for name in ("citation_precision", "citation_recall"):
        score = scores[name]
        assert score.value is not None, score.reason
        assert "marker(s) beyond the first 200 of the response" in score.reason, score.reason
        not_read = score.evidence.details["not_read"]
        assert not_read["markers"] == 10_001 - 200 and not_read["max_sentence_citations"] == 20
        assert len(score.evidence.claims) <= 2 * 20
        sentences = score.evidence.details["sentences"]
        assert all(len(s["markers"]) <= 20 for s in sentences)
    # the markers read still count: 20 distinct citations of the first sentence (the sentence the
    # first 200 markers stand in), judged
    assert len(scores["citation_precision"].evidence.details["citations"]) == 20
