"""The HTML report: self-contained, escaped, evidence shown, worst samples first."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest

from ragsight import Store
from ragsight.cli import main
from ragsight.report import best_matching_sentence, load_runs, render_report
from ragsight.report._evidence import sentence_spans
from ragsight.report._html import CSP, e
from tests.unit.test_report_data import HOSTILE_CONTEXT, PY_CONTEXT, put_run, scripted_runs


@pytest.fixture
async def store() -> Store:
    st = Store(":memory:")
    await scripted_runs(st)
    put_run(
        st,
        "exact",
        {
            "faithfulness": {
                "a": 0.9,
                "b": 0.2,
                "c": "failed:judge returned no JSON after 3 attempts",
                "d": "skipped:sample has no contexts",
            },
            "noise_sensitivity": {"a": 0.95, "b": 0.1, "c": 0.0, "d": 0.0},
        },
        lower=frozenset({"noise_sensitivity"}),
        metadata={"chunk_size": 256},
    )
    return st


def one(st: Store, ref: str) -> str:
    return render_report(load_runs(st, [ref]), generated_at="2026-01-01 00:00 UTC")


def panel(html_text: str, sample_id: str) -> str:
    m = re.search(
        r'<details class="sample" id="[^"]+"( open)?><summary><b>'
        + re.escape(sample_id)
        + r"</b>.*?</details>(?=<details class=\"sample\"|</section>)",
        html_text,
        re.S,
    )
    assert m, f"no panel for {sample_id}"
    return m.group(0)


def sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


async def test_self_contained_and_locked_down(store: Store) -> None:
    text = one(store, "run-A")
    # nothing is fetched: no src/href except in-page anchors; the only URL is the SVG namespace
    assert re.findall(r'\b(?:src|href)="(?!#)', text) == []
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {"http://www.w3.org/2000/svg"}
    assert "@import" not in text and "url(" not in text
    # the CSP allows exactly the one style sheet and the one script, by hash
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    script = re.search(r"<script>(.*?)</script>", text, re.S)
    assert style and script
    assert (
        f"style-src '{sha(style.group(1))}'" in CSP
        and f"script-src '{sha(script.group(1))}'" in CSP
    )
    assert text.count("<script") == 1 and text.count("<style") == 1
    assert f'content="{e(CSP)}"' in text and "default-src 'none'" in CSP


async def test_hostile_text_is_escaped_everywhere(store: Store) -> None:
    text = one(store, "run-A")
    assert '<script>document.title="pwned"</script>' not in text
    assert "<img" not in text
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in text
    hostile = panel(text, "hostile")
    # the response tries to close the panel early; it stays text
    assert "&lt;/details&gt;&lt;b&gt;bold&lt;/b&gt;" in hostile
    assert "What does &lt;script&gt; do?" in hostile
    # a supported claim is still matched inside the hostile context, and the mark is escaped text
    mark = re.search(
        r'<mark id="r1-s\d+-m1" title="supports faithfulness claim 1">(.*?)</mark>', hostile
    )
    assert mark and "The script element embeds executable code in a page." in mark.group(1)
    assert mark.group(1).startswith("&lt;script&gt;")


async def test_summary_distributions_and_not_scored_causes(store: Store) -> None:
    text = one(store, "exact")
    assert "<td>faithfulness ↑</td><td>0.550</td>" in text  # mean of 0.9 and 0.2
    assert "noise_sensitivity ↓" in text
    # overall: the mean of 0.55 and 1 - mean(0.95, 0.1, 0, 0) = 0.7375; the harmonic beside it
    assert f"overall score {(0.55 + 0.7375) / 2:.3f}" in text
    assert f"harmonic mean {2 / (1 / 0.55 + 1 / 0.7375):.3f}" in text
    assert (
        text.count("<svg") == 2 and 'aria-label="faithfulness: histogram of 2 scored values' in text
    )
    assert "judge returned no JSON after 3 attempts" in text
    assert re.search(r"<td>faithfulness</td><td class=\"text\">failed</td>.*?<td>1</td>", text)
    assert re.search(
        r"<td>faithfulness</td><td class=\"text\">skipped</td><td class=\"text\">sample has "
        r"no contexts</td>",
        text,
    )
    assert '<th class="text">chunk_size</th><td class="text">256</td>' in text  # configuration


async def test_worst_samples_first_and_first_panel_open(store: Store) -> None:
    text = one(store, "exact")
    order = re.findall(r'<details class="sample" id="r1-s(\d+)"', text)
    # a: min(0.9, 1-0.95=0.05); b: min(0.2, 0.9); c: 1-0 (faithfulness failed); d: 1.0 (skipped)
    assert order == ["0", "1", "2", "3"]
    assert '<details class="sample" id="r1-s0" open>' in text
    assert "— lowest noise_sensitivity 0.050" in text
    worst = re.search(r"<h3>Worst samples</h3><div class=\"scroll\"><table>.*?</table>", text, re.S)
    assert worst and [m for m in re.findall(r'href="#r1-s(\d)"', worst.group(0))] == [
        "0",
        "1",
        "2",
        "3",
    ]
    # the worst table shows the metric's own value (0.95), not the oriented 0.05
    assert "noise_sensitivity ↓</td><td>0.950</td>" in worst.group(0)


async def test_evidence_trail_with_relevance_and_support_spans(store: Store) -> None:
    text = one(store, "run-A")
    paris = panel(text, "paris")
    # context_precision judged chunk 1 irrelevant, chunk 2 relevant
    assert re.search(
        r'<li class="irrelevant"><div>context 1 <span class="tag irrelevant">not relevant', paris
    )
    assert re.search(
        r'<li class="relevant"><div>context 2 <span class="tag relevant">relevant', paris
    )
    # supported claim: coloured ok, with the judge's reason, linked to its highlighted sentence
    assert re.search(
        r'<li class="claim ok"><span class="verdict">✓ supported</span> <span class="muted">'
        r"\[contexts\]</span> Paris is the capital of France\.",
        paris,
    )
    assert "judge: scripted verdict for claim 1" in paris
    assert re.search(
        r'<mark id="(r1-s\d+-m1)" [^>]*>Paris is the capital and largest city of France\.</mark>',
        paris,
    )
    assert "context 2, 100% of the claim's words" in paris
    # the paragraph break inside the context survives (pre-wrap text, not re-flowed)
    assert "France is a country in Europe.\n\n<mark" in paris
    python = panel(text, "python")
    # an unsupported claim is coloured bad and gets no support span
    bad = re.search(r'<li class="claim bad">.*?</li>', python, re.S)
    assert bad and "most widely used" in bad.group(0) and "best-matching" not in bad.group(0)
    assert "judge steps: extract_claims v" in python
    hello = panel(text, "hello")
    assert "the response makes no factual claims" in hello


async def test_relevance_from_ids_when_no_judge_relevance() -> None:
    with Store(":memory:") as st:
        put_run(
            st,
            "ids",
            {"faithfulness": {"x": 1.0}},
            samples=[
                {
                    "id": "x",
                    "question": "q",
                    "contexts": ["alpha", "beta"],
                    "response": "r",
                    "retrieved_ids": ["d1", "d2"],
                    "relevant_ids": ["d2"],
                }
            ],
        )
        text = one(st, "ids")
    assert "relevance from relevant_ids" in text
    assert re.search(
        r'<li class="irrelevant"><div>context 1 <span class="muted">id d1</span> <span class="tag irrelevant">',
        text,
    )
    assert re.search(
        r'<li class="relevant"><div>context 2 <span class="muted">id d2</span> <span class="tag relevant">',
        text,
    )


async def test_several_runs_add_the_comparison_section(store: Store) -> None:
    text = render_report(load_runs(store, ["run-A", "run-B"]), generated_at="x")
    assert text.index('id="comparison"') < text.index('id="r1"') < text.index('id="r2"')
    assert "Run B is compared with run A (the baseline)." in text
    assert '<tr class="differs"><th class="text">chunk_size ≠</th>' in text
    # experiment table: A's faithfulness 8/9 is best, B's context precision is best
    assert '<tr><td>faithfulness ↑</td><td class="best">0.889 ★</td><td>0.611</td></tr>' in text
    assert '<td>context_precision ↑</td><td>0.625</td><td class="best">0.750 ★</td>' in text
    assert "<td>3 of 5</td>" in text  # faithfulness pairs: scored in both of 5 shared samples
    assert "adjusted over all 2 comparisons" in text
    assert text.count('role="img"') == 2 * 2 + 2  # two histograms per run, one plot per metric


def test_best_matching_sentence_is_deterministic() -> None:
    ctxs = [
        "Java appeared in 1995. Python was created by Guido.",
        PY_CONTEXT,
        "Python was invented by Guido van Rossum.",
    ]
    m = best_matching_sentence("Guido van Rossum invented Python.", ctxs)
    # both context 2 and 3 hold all four words; the shorter sentence (larger share of its own
    # words in the claim) wins
    assert m is not None and (m.context, m.sentence, m.cover) == (2, 0, 1.0)
    # restricted to one chunk
    m2 = best_matching_sentence("Guido van Rossum invented Python.", ctxs, only=1)
    assert m2 is not None and m2.context == 1 and m2.text == PY_CONTEXT
    # under half the claim's words: no match
    assert best_matching_sentence("Rust has a borrow checker and Guido.", ctxs) is None
    assert best_matching_sentence("the of and", ctxs) is None  # only stop words


def test_sentence_spans_point_into_the_original_text() -> None:
    text = "First  sentence here.\nSecond one!   Third? " + HOSTILE_CONTEXT
    for sent, start, end in sentence_spans(text):
        assert start is not None and end is not None
        assert " ".join(text[start:end].split()) == sent


async def test_cli_report_writes_the_file(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as st:
        await scripted_runs(st)
    out = tmp_path / "r.html"
    assert main(["report", "run-A", "run-B", "--store", str(db), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="comparison"' in text
    printed = capsys.readouterr().out
    assert "run run-A" in printed and f"written to {out}" in " ".join(printed.split())
    assert main(["report", "nope", "--store", str(db), "--out", str(out)]) == 2
