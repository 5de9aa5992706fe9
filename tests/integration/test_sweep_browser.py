"""The sweep report in a real browser (headless Chromium): it loads with no console message (a
blocked request or a CSP violation would print one), and its tables, charts and findings are in
the DOM. The screenshot goes to artifacts/ for a human to look at."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsight import Store
from ragsight.cli import main
from ragsight.judge import Judge
from ragsight.sweep import asweep, load_sweep
from tests.fakes.embedder import TableEmbedder
from tests.integration.test_report_browser import artifacts, browse
from tests.unit.test_sweep import (
    generator_provider,
    judge_provider,
    make_world,
    pipeline,
    spec_dict,
)

pytestmark = pytest.mark.slow  # one browser launch


async def test_sweep_report_renders_in_chromium(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    db = tmp_path / "s.db"
    store = Store(db)
    gen, emb = generator_provider(), TableEmbedder(dim=12)
    await asweep(load_sweep(spec_dict(docs, ts)), store=store, judge=Judge(judge_provider()), embedder=emb,
                 pipeline=pipeline(docs, store, gen, emb))
    store.close()
    page = tmp_path / "sweep.html"
    assert main(["sweep", "report", "t", "--store", str(db), "--html", str(page)]) == 0
    shot = artifacts(tmp_path) / "sweep-report-browser.png"
    shot.unlink(missing_ok=True)
    dom, log = browse(tmp_path, page, "--dump-dom", f"--screenshot={shot}")
    console = [ln for ln in log.splitlines() if ":CONSOLE" in ln]
    assert console == [], "console messages:\n" + "\n".join(console)
    assert "<title>ragsight sweep: t</title>" in dom
    assert 'id="matrix"' in dom and 'id="best"' in dom and 'id="runs"' in dom
    assert dom.count("<svg") >= 3  # effects (chunk_size, retrieval) and the trade-off
    assert 'class="best"' in dom and "baseline" in dom
    assert shot.stat().st_size > 30_000
