"""Reviewing a conversation run from the outside, as docs/data.md, docs/report.md,
docs/review.md and docs/metrics.md describe it: conversations written as ragas writes them,
``ragsight evaluate FILE --out``, ``ragsight export``, ``ragsight labels import``, ``ragsight
align --examples 0``, ``ragsight evaluate --alignment``, ``ragsight compare`` and ``ragsight
calibrate``, over real HTTP to a judge on 127.0.0.1 that gives log-probability verdicts.

The judge is miscalibrated on purpose: the contexts alone give a right claim P(supported) 0.30 to
0.80 and a wrong one 0.05 to 0.25, so the threshold ``align`` fits from the labels falls between
them (about 0.275); read with the user's earlier messages, a right claim gets 0.9 and a wrong one
0.28. Each assistant turn searches once (its tool result is its context) and the conversation
names the calls it should have made, so a run has a turn metric (faithfulness) and a conversation
metric (conversation_tool_call_accuracy)."""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.report import compare_runs, corrected_estimate
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.fakes.openai_server import RecordedRequest, Reply

N = 24
CONTEXT = "Each passenger may bring one cabin bag."
METRICS = "faithfulness,conversation_tool_call_accuracy"


def right(i: int, turn: int) -> bool:
    return (i + turn) % 2 == 0


def p_contexts(i: int, turn: int) -> float:
    k = (i // 2) % 4
    return [0.30, 0.35, 0.40, 0.80][k] if right(i, turn) else [0.05, 0.10, 0.15, 0.25][k]


def p_conversation(i: int, turn: int) -> float:
    return 0.9 if right(i, turn) else 0.28


def rows() -> list[dict[str, Any]]:
    """ragas ``MultiTurnSample.model_dump()`` rows, with an id."""
    out = []
    for i in range(N):
        messages: list[dict[str, Any]] = []
        for t in range(2):
            what = "one cabin bag" if right(i, t) else "three cabin bags"
            messages += [
                {"content": f"What may passenger {i} bring on turn {t}?", "type": "human"},
                {"content": "", "type": "ai", "tool_calls": [{"name": "search", "args": {"query": "bags"}}]},
                {"content": CONTEXT, "type": "tool"},
                {"content": f"Passenger {i} may bring {what} on turn {t}.", "type": "ai"},
            ]
        expected = [{"name": "search", "args": {"query": "bags" if i % 3 else "fares"}}] * 2
        out.append({"id": f"c{i:02d}", "user_input": messages, "reference_tool_calls": expected})
    return out


def _last(tag: str, text: str) -> str | None:
    found = re.findall(rf"<{tag}[^>]*>\n?(.*?)\n?</{tag}>", text, re.S)
    return found[-1].strip() if found else None


def world(request: RecordedRequest) -> Reply:
    body = request.json or {}
    text = "\n".join(m.get("content") or "" for m in body.get("messages", []))
    if text == "ping":
        return Reply.chat("pong")
    if body.get("max_tokens") == 1:  # a yes/no verdict read from the log-probabilities
        found = re.search(r"Passenger (\d+) .* turn (\d+)", _last("claim", text) or "")
        assert found, text
        i, t = int(found.group(1)), int(found.group(2))
        p = p_conversation(i, t) if "<conversation" in text else p_contexts(i, t)
        return Reply.chat("Yes" if p >= 0.5 else "No", logprobs={"Yes": math.log(p), "No": math.log(1 - p)})
    if "claims" in json.dumps(body.get("response_format", {})):
        return Reply.chat(json.dumps({"claims": [_last("response", text)]}))
    return Reply.chat(json.dumps({"reason": "the judge's reason"}))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class Review:
    """A run A, labels of its turns, an alignment fitted on them, and run B made with it."""

    dir: Path
    store: Path
    url: str
    run_a: str
    run_b: str

    def cli(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--store", str(self.store)])
        cap = capsys.readouterr()
        assert "Traceback" not in cap.out + cap.err
        return code, cap.out, cap.err

    def evaluate(self, *argv: str) -> int:
        return main(["evaluate", str(self.dir / "chats.jsonl"), "--judge", "openai-logprobs:m", "--base-url",
                     self.url, "--metrics", METRICS, "--store", str(self.store), "--quiet", *argv])


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Review]:
    tmp = tmp_path_factory.mktemp("review")
    (tmp / "chats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp, FakeOpenAIServer(handler=world) as srv:
        mp.setenv("OPENAI_API_KEY", "sk-test-review")
        r = Review(tmp, tmp / "runs.db", srv.url, "", "")
        assert r.evaluate("--out", str(tmp / "a.jsonl")) == 0
        a = read_jsonl(tmp / "a.jsonl")
        r.run_a = a[0]["run_id"]
        labels = [{"id": row["id"], "metric": "faithfulness", "ok": right(int(row["conversation_id"][1:]), row["turn"])}
                  for row in a if row["turn"] is not None]
        (tmp / "labels.jsonl").write_text("".join(json.dumps(lb) + "\n" for lb in labels), encoding="utf-8")
        assert main(["labels", "import", str(tmp / "labels.jsonl"), "--run", r.run_a, "--label", "ok",
                     "--store", str(r.store)]) == 0
        assert main(["align", r.run_a, "--metric", "faithfulness", "--label", "ok", "--examples", "0",
                     "--out", str(tmp / "faithfulness.align.json"), "--store", str(r.store)]) == 0
        assert r.evaluate("--alignment", str(tmp / "faithfulness.align.json"), "--out", str(tmp / "b.jsonl")) == 0
        r.run_b = read_jsonl(tmp / "b.jsonl")[0]["run_id"]
        yield r


def test_out_writes_the_rows_export_writes(review: Review, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/data.md: ``--out`` writes the same rows as ``ragsight export`` (JSONL: ``scores`` and
    ``evidence`` objects); the same bytes, in JSONL and in CSV."""
    exported = review.dir / "export-a.jsonl"
    code, _, err = review.cli(capsys, "export", review.run_a, "--format", "jsonl", "--out", str(exported))
    assert code == 0, err
    out = read_jsonl(review.dir / "a.jsonl")
    assert all("evidence" in row for row in out)
    turn = next(row for row in out if row["turn"] == 1)
    assert turn["evidence"]["faithfulness"]["claims"][0]["claim"].startswith("Passenger 0 may bring")
    assert (review.dir / "a.jsonl").read_bytes() == exported.read_bytes()

    csv_out, csv_export = review.dir / "a.csv", review.dir / "export-a.csv"
    assert review.evaluate("--out", str(csv_out)) == 0
    capsys.readouterr()
    with csv_out.open(newline="", encoding="utf-8") as f:
        run_id = next(csv.DictReader(f))["run_id"]
    code, _, err = review.cli(capsys, "export", run_id, "--format", "csv", "--out", str(csv_export))
    assert code == 0, err
    assert csv_out.read_bytes() == csv_export.read_bytes()


def test_an_aligned_threshold_leaves_every_expected_form_value_as_it_was(review: Review) -> None:
    """docs/metrics.md: a threshold changes only the count form and the verdicts. Run B, made with
    an alignment fitted with ``--examples 0`` (a threshold only), keeps run A's expected-form value
    (the mean P(supported), kept in each score's evidence) on every turn; the verdicts at the
    threshold, and with them the count-form value, are what moved."""
    alignment = json.loads((review.dir / "faithfulness.align.json").read_text(encoding="utf-8"))
    assert alignment["examples"] == [] and 0.25 < alignment["threshold"] < 0.30
    a, b = read_jsonl(review.dir / "a.jsonl"), read_jsonl(review.dir / "b.jsonl")
    assert [row["id"] for row in a] == [row["id"] for row in b]
    with Store(review.store) as st:
        before, after = st.scores(review.run_a), st.scores(review.run_b)
    turns = [row["id"] for row in a if row["turn"] is not None]
    assert len(turns) == 2 * N
    values = [(sid, before[sid]["faithfulness"].evidence.details["mean_p"]) for sid in turns]
    again = [(sid, after[sid]["faithfulness"].evidence.details["mean_p"]) for sid in turns]
    assert all(v is not None for _, v in values)
    assert again == [(sid, pytest.approx(v)) for sid, v in values]
    moved = [sid for sid in before if "faithfulness" in before[sid]
             and [c.supported for c in before[sid]["faithfulness"].evidence.claims]
             != [c.supported for c in after[sid]["faithfulness"].evidence.claims]]
    assert moved  # the verdicts at the threshold did change (a claim at 0.30 is now supported)
    assert any(after[sid]["faithfulness"].value > before[sid]["faithfulness"].value for sid in moved)


def test_compare_pairs_each_metric_on_its_own_level_and_names_the_alignment(
        review: Review, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/report.md: ``ragsight compare RUN_A RUN_B`` pairs a turn metric on the turns and a
    conversation metric on the conversations, and its configurations show the claim threshold
    and the alignment each run was judged with."""
    code, text, err = review.cli(capsys, "compare", review.run_a, review.run_b)
    assert code == 0, err
    flat = " ".join(text.split())
    # 48 turns and 24 conversations: faithfulness pairs 48 of the 48 turns, not 48 of 72 rows
    assert re.search(rf"faithfulness ↑ B {2 * N}/{2 * N} ", flat), flat
    assert f"{2 * N}/{3 * N}" not in flat and f" {N}/{N} " in flat
    assert "a turn metric on the assistant turns, a conversation metric on the conversations" in flat
    assert "claim threshold * 0.5 0.275" in flat and "alignment *" in flat

    with Store(review.store) as st:
        cmp = compare_runs(st, [review.run_a, review.run_b])
    pairs = {row.metric: (row.difference.n, row.shared, row.level) for row in cmp.paired}
    assert pairs == {"faithfulness": (2 * N, 2 * N, "turn"),
                     "conversation_tool_call_accuracy": (N, N, "conversation")}
    a, b = cmp.runs
    threshold = json.loads((review.dir / "faithfulness.align.json").read_text(encoding="utf-8"))["threshold"]
    assert (a.config["claim threshold"], b.config["claim threshold"]) == (0.5, threshold)
    assert "alignment" not in a.config
    assert re.fullmatch(r"faithfulness:aligned-[0-9a-f]{8} \(0 worked examples\)", b.config["alignment"])


def test_calibrate_calls_unanimous_labels_too_few_as_the_estimate_does(
        review: Review, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/review.md: labels all alike are too few for the corrected mean's interval, whatever
    their number; calibrate, its --json and the report say so as the estimate (and the viewer)
    does."""
    a = read_jsonl(review.dir / "a.jsonl")
    passing = [row for row in a if row["turn"] is not None
               and right(int(row["conversation_id"][1:]), row["turn"])][:12]
    (review.dir / "pass.csv").write_text("id,first_pass\n" + "".join(f"{row['id']},yes\n" for row in passing),
                                         encoding="utf-8")
    code, _, err = review.cli(capsys, "labels", "import", str(review.dir / "pass.csv"), "--run", review.run_a,
                              "--label", "first_pass", "--metric", "faithfulness")
    assert code == 0, err
    code, out, err = review.cli(capsys, "calibrate", review.run_a, "--label", "first_pass", "--json",
                                "--metric", "faithfulness")
    assert code == 0, err
    faith = json.loads(out)["metrics"][0]
    judged = {row["id"]: row["scores"]["faithfulness"]["value"] for row in a if row["turn"] is not None}
    est = corrected_estimate(judged, {row["id"]: 1.0 for row in passing})
    assert est.unanimous and est.too_few and faith["n_labels"] == 12
    assert faith["too_few_labels"] is est.too_few and faith["labels_unanimous"] is True
    code, text, _ = review.cli(capsys, "calibrate", review.run_a, "--label", "first_pass",
                               "--metric", "faithfulness")
    assert "WARNING: too few labels: faithfulness rests on 12 labels all alike" in " ".join(text.split())
    page = review.dir / "report.html"
    code, _, err = review.cli(capsys, "report", review.run_a, "--out", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    part = html[html.index("Corrected by the labels 'first_pass'"):]
    assert "too few labels" in part[:part.index("</table>")]
    assert "faithfulness rests on 12 labels all alike" in part
