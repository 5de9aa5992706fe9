"""What a user comparing configurations reads in ``ragsight sweep``'s report. The latency
column is the system's answering time per question (no model loading, no index building, a kept
answer at the time it took), and a parameter whose values are names or switches is compared as
categories (each level against the baseline's, paired), not drawn as a slope. Each test runs the
sweep, then reads ``ragsight sweep report`` as printed at 80 columns (and the HTML page)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragsight import Store
from ragsight.cli import _common, main
from ragsight.judge import Judge
from ragsight.sweep import asweep, load_sweep
from tests.fakes.embedder import TableEmbedder
from tests.unit.test_sweep import (
    generator_provider,
    judge_provider,
    make_world,
    pipeline,
    spec_dict,
)

WIDTH = 80


@pytest.fixture(autouse=True)
def _narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common.out, "width", WIDTH)


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["sweep", "report", *argv]) == 0
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()) <= WIDTH
    return printed


def one_line(text: str) -> str:
    return " ".join(text.split())


def cost_rows(printed: str) -> dict[str, float]:
    """The latency column of the "Quality / cost" table: configuration -> seconds."""
    table = printed.split("Quality / cost", 1)[1]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]
        if len(cells) >= 4 and re.fullmatch(r"C\d+", cells[0]):
            rows[cells[0]] = float(cells[3])
    return rows


# ---- latency: no loading, no reading back --------------------------------------------------

LOAD_S, INDEX_S, QUERY_S = 1.0, 0.5, 0.2


class LoadingEmbedder(TableEmbedder):
    """A local embedder's timing: the model loads in LOAD_S (by load() or by the first embed),
    embedding a chunking's passages for its index takes INDEX_S, and a batch of queries QUERY_S."""

    def __init__(self) -> None:
        super().__init__(dim=12)
        self.loaded = False

    async def load(self) -> None:
        if not self.loaded:
            await asyncio.sleep(LOAD_S)
            self.loaded = True

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        await self.load()
        await asyncio.sleep(INDEX_S if kind == "passage" else QUERY_S)
        return await super().embed(texts, kind)


async def test_the_latency_column_leaves_out_loading_the_model_and_building_the_index(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs, ts = make_world(tmp_path)
    store = Store(tmp_path / "s.db")
    gen, emb = generator_provider(), LoadingEmbedder()
    await asweep(load_sweep(spec_dict(docs, ts)), store=store, judge=Judge(judge_provider()), embedder=emb,
                 pipeline=pipeline(docs, store, gen, emb))
    store.close()
    printed = report(capsys, "t", "--store", str(tmp_path / "s.db"))
    latency = cost_rows(printed)
    assert sorted(latency) == ["C1", "C2", "C3", "C4"]
    # the scripted generator answers at once: what is left is retrieval, embedding the question
    # (0.2 s). Before, the questions that waited for the model (1 s) and each chunking's index
    # (0.5 s) counted that wait: 1.12 s per question in C1, 0.35 s in C3
    dense, fusion = (latency["C1"], latency["C3"]), (latency["C2"], latency["C4"])
    assert all(QUERY_S <= v < QUERY_S + 0.15 for v in dense), latency
    # C3 (chunk_size 30, dense) asks the same questions as C1: their vectors come from the cache,
    # and count at the 0.2 s they took to make (before: 0.01 s, as if C3 were faster); RAG-fusion
    # embeds the question and its two rewrites (a rewrite's share of its batch: 0.1 s)
    assert all(QUERY_S <= v < 2 * QUERY_S + 0.15 for v in fusion), latency
    assert ("latency: the system's answering time per answered question, as measured when each answer "
            "was made: loading (models, indexes) left out, an answer reused from the store counted at "
            "the time it took then") in one_line(printed)


def test_an_answer_kept_from_an_interrupted_sweep_counts_at_the_time_it_took(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    questions = [("q1", "How many cabin bags may I bring?"), ("q2", "When does check-in close?"),
                 ("q3", "Can I bring a pet?")]
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "reference": "One bag."}) + "\n" for i, q in questions), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    (tmp_path / "rag_slow.py").write_text(
        "import os, signal, time\ndef answer(question, top_k):\n"
        "    if os.path.exists('stop') and 'pet' in question:  # Ctrl-C while this question is asked\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n        time.sleep(1)\n"
        "    time.sleep(0.3)  # the system's own answering time\n"
        "    return {'answer': 'One bag.', 'contexts': ['x'] * top_k}\n", "utf-8")
    (tmp_path / "s.toml").write_text(
        'name = "t"\ntestset = "ts.jsonl"\nmetrics = ["exact_match"]\nconcurrency = 1\n'
        '[pipeline]\ntarget = "rag_slow:answer"\n\n[grid]\ntop_k = [1]\n', "utf-8")
    (tmp_path / "stop").write_text("")
    assert main(["sweep", "s.toml", "--store", "s.db"]) == 130
    (tmp_path / "stop").unlink()
    assert main(["sweep", "s.toml", "--store", "s.db"]) == 0  # q1 and q2 read back, q3 asked
    latency = cost_rows(report(capsys, "t", "--store", "s.db"))
    # before: the two answers read back from the store counted 0.00 s: (0 + 0 + 0.3) / 3 = 0.10
    assert 0.28 <= latency["C1"] < 0.6, latency


# ---- categorical parameters: levels against the baseline's, no slope -----------------------

CATEGORIES_TARGET = """
def answer(question, generator, fusion, top_k):
    n = int(question.split()[-1].rstrip("?"))
    right = generator == "a" or (generator == "b" and n % 2 == 0)  # c, the baseline's, never
    return {"answer": "One bag." if right else "Two bags.", "contexts": ["x"] * top_k}
"""

CATEGORIES_SWEEP = """name = "cats"
testset = "ts.jsonl"
metrics = ["exact_match"]
baseline = {generator = "c", fusion = true, top_k = 1}

[pipeline]
target = "rag_levels:answer"

[grid]
generator = ["a", "b", "c"]
fusion = [true, false]
top_k = [1, 2]
"""


def test_names_and_switches_are_compared_as_levels_against_the_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": f"q{n}", "question": f"How many bags on flight {n}?", "reference": "One bag."}) + "\n"
        for n in range(12)), "utf-8")
    (tmp_path / "rag_levels.py").write_text(CATEGORIES_TARGET, "utf-8")
    (tmp_path / "cats.toml").write_text(CATEGORIES_SWEEP, "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert main(["sweep", "cats.toml", "--store", "s.db", "--quiet"]) == 0
    printed = report(capsys, "cats", "--store", "s.db", "--html", "cats.html")
    text = one_line(printed)

    # the generator: its levels, the baseline's (c) first, each against c; no step a -> b -> c
    assert ("Effect of generator: levels, each against the baseline's c (paired; held at the baseline; "
            "mean [95% CI]; p Holm)") in text
    section = printed.split("Effect of generator", 1)[1].split("Effect of", 1)[0]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in section.splitlines() if line.startswith("│")]
    assert rows == [
        ["exact_match", "c", "0.00 [0.00, 0.00]", "base", ""],
        ["", "a", "1.00 [1.00, 1.00]", "+1.00 [+1.00, +1.00]", rows[1][4]],
        ["", "b", "0.50 [0.25, 0.75]", "+0.50 [+0.17, +0.83]", rows[2][4]],
    ], section
    assert float(rows[1][4]) < 0.05 <= float(rows[2][4])
    # fusion = true / false is a switch: levels too, the baseline's true first
    assert "Effect of fusion: levels, each against the baseline's True" in text
    # top_k is a number: still a trend, step by step
    assert "Effect of top_k (held at the baseline; mean [95% CI])" in text and "last step" in text
    # the findings name the level and the baseline's level, not a step along a made-up order
    assert ("generator = a instead of the baseline's c raised exact_match by 1.000 [1.000, 1.000] (better; "
            "p Holm ") in text
    assert "generator a -> b" not in text and "generator b -> c" not in text

    page = (tmp_path / "cats.html").read_text("utf-8")
    charts = dict(re.findall(r"<h3>([^<]+)</h3><div class='charts'>(.*?)</div>\s*(?=<h3>|<h2>)", page, re.S))
    assert set(charts) == {"generator", "fusion", "top_k"}
    for name in ("generator", "fusion"):  # levels: no band, no line from one level to the next
        assert "<polyline" not in charts[name] and "<polygon" not in charts[name]
        assert "stroke-dasharray" in charts[name]  # the baseline level's mean, across
    assert "a vs c: +1.000 [+1.000, +1.000]" in charts["generator"]
    assert "<polyline" in charts["top_k"]  # a number keeps its trend line
