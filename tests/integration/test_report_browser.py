"""The HTML report in a real browser (headless Chromium): it loads without JavaScript errors or
blocked requests, hostile context text stays inert, the key parts are in the DOM, and it reads
with JavaScript off. Screenshots go under the test's tmp_path, or to $RAGSIGHT_TEST_ARTIFACTS
when set (a folder a human or CI keeps to look at).

Needs /usr/bin/chromium (Debian package ``chromium``; scripts/ci_system_deps.sh installs it).
Skipped when it is absent, except in CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ragsight import Store
from ragsight.cli import main
from ragsight.report._html import CSP, e
from tests.unit.test_report_data import RAG_ROWS, put_run, scripted_runs


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: ``$RAGSIGHT_TEST_ARTIFACTS`` if set, else the test's tmp_path."""
    folder = Path(os.environ["RAGSIGHT_TEST_ARTIFACTS"]) if os.environ.get("RAGSIGHT_TEST_ARTIFACTS") else tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder

pytestmark = pytest.mark.slow  # two browser launches, about 6 s


def chromium() -> str:
    path = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: run scripts/ci_system_deps.sh before the tests")
        pytest.skip(
            "chromium is not installed (apt-get install chromium, or scripts/ci_system_deps.sh)"
        )
    return path


def browse(tmp_path: Path, page: Path, *extra: str) -> tuple[str, str]:
    """Load ``page`` in headless Chromium; returns (stdout, the browser's log). With
    ``--dump-dom`` among ``extra``, stdout is the DOM after load."""
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    profile.mkdir()
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={profile}",
        "--window-size=1280,2000",
        *extra,
        page.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc.stdout, proc.stderr


def body_attrs(dom: str) -> dict[str, str]:
    m = re.search(r"<body([^>]*)>", dom)
    assert m, "no <body> in the DOM dump"
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


async def test_report_renders_in_chromium(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        await scripted_runs(store)
        # the same five questions as run-A and run-B, so the three runs pair (compare refuses
        # runs that pair fewer than 80% of their samples), with a failure and a skip among them
        put_run(
            store,
            "failures",
            {
                "faithfulness": {
                    "paris": 0.4,
                    "python": "failed:judge returned no JSON after 3 attempts",
                    "hostile": 0.9,
                    "hello": 0.6,
                    "nocontext": "skipped:sample has no contexts",
                }
            },
            samples=RAG_ROWS,
        )
    both = tmp_path / "compare.html"
    single = tmp_path / "single.html"
    assert (
        main(["report", "run-A", "run-B", "failures", "--store", str(db), "--out", str(both),
              "--allow-poor-pairing"]) == 0  # 'failures' holds 3 of run-A's 5 samples
    )
    assert main(["report", "run-A", "--store", str(db), "--out", str(single)]) == 0
    shots = artifacts(tmp_path)
    shot = shots / "report-browser.png"
    shot_nojs = shots / "report-browser-nojs.png"
    for p in (shot, shot_nojs):
        p.unlink(missing_ok=True)

    dom, log = browse(tmp_path, both, "--dump-dom", f"--screenshot={shot}")
    attrs = body_attrs(dom)
    assert attrs.get("data-js") == "ran", "the report's script did not run"
    assert attrs.get("data-js-errors") == "", f"JavaScript errors: {attrs.get('data-js-errors')}"
    console = [ln for ln in log.splitlines() if ":CONSOLE" in ln]
    assert console == [], "console messages:\n" + "\n".join(console)
    # hostile context text did not run: the title is ours, no attribute was planted
    assert "<title>ragsight report: 3 runs</title>" in dom
    assert "pwned" not in attrs and "data-pwned" not in dom
    assert "&lt;script&gt;document.title=" in dom
    # the key parts are there
    assert 'id="comparison"' in dom and all(f'id="r{i}"' in dom for i in (1, 2, 3))
    # the runs pair in full: no pairing warning
    assert '<p class="warn"><strong>Only' not in dom
    # panels: 5 + 5 + 5; plots: histograms 2 + 2 + 1, one per metric across runs 2
    assert dom.count('<details class="sample"') == 15 and dom.count("<svg") == 7
    assert "judge returned no JSON after 3 attempts" in dom  # the failure and its cause
    assert "<mark " in dom and 'class="claim ok"' in dom and 'class="best"' in dom
    assert shot.stat().st_size > 50_000  # a blank page compresses to a few kB

    # JavaScript off. Chromium's own switch (--blink-settings=scriptEnabled=false) also stops
    # --dump-dom and --screenshot, so a copy of the page forbids its scripts in its CSP instead:
    # the page then renders exactly as with JavaScript off, and the browser still reports.
    text = single.read_text(encoding="utf-8")
    off = tmp_path / "single-nojs.html"
    no_scripts = re.sub(r"script-src [^;]+;", "script-src 'none';", CSP)
    assert e(CSP) in text and no_scripts != CSP
    off.write_text(text.replace(e(CSP), e(no_scripts)), encoding="utf-8")
    dom_off, log_off = browse(tmp_path, off, "--dump-dom", f"--screenshot={shot_nojs}")
    assert "data-js" not in body_attrs(dom_off)  # the script really did not run...
    blocked = [ln for ln in log_off.splitlines() if ":CONSOLE" in ln]
    assert all("Content Security Policy" in ln for ln in blocked)
    # ...and everything is still there: plots, panels (the worst one open) and their evidence
    assert dom_off.count('<details class="sample"') == 5 and dom_off.count("<svg") == 2
    first = re.search(r'<details class="sample" id="r1-s(\d+)"( open="")?>', dom_off)
    assert first and first.groups() == ("3", ' open=""')  # "hello", context_precision 0
    assert "scripted verdict for claim 1" in dom_off and "<mark " in dom_off
    assert shot_nojs.stat().st_size > 50_000


def test_the_comparison_page_reads_at_600_px(tmp_path: Path) -> None:
    # at 600 px the paired-differences table made the page 250 px wider than
    # the window and its rows hundreds of pixels tall; now each wide table scrolls in its box
    db = tmp_path / "runs.db"
    ids = [f"s{i}" for i in range(6)]
    with Store(db) as store:
        for run_id, shift in (("narrow-a", 0.0), ("narrow-b", 0.1)):
            put_run(store, run_id, {
                name: {sid: round(0.3 + shift + 0.05 * i, 3) for i, sid in enumerate(ids)}
                for name in ("faithfulness", "answer_relevancy", "context_precision_without_reference",
                             "factual_correctness(mode=recall)")
            }, metadata={"chunk_size": 512 if shift else 256, "generator": "gpt-4o-mini-2024-07-18"})
    page = tmp_path / "compare.html"
    assert main(["report", "narrow-a", "narrow-b", "--store", str(db), "--out", str(page)]) == 0
    shots = artifacts(tmp_path)
    shot = shots / "report-compare-600px.png"
    dom, _ = browse(tmp_path, page, "--dump-dom", f"--screenshot={shot}", "--window-size=600,2400")
    attrs = body_attrs(dom)
    assert attrs.get("data-js") == "ran" and attrs.get("data-js-errors") == ""
    assert attrs.get("data-overflow-px") == "0", f"the page is {attrs.get('data-overflow-px')} px wider than 600"
