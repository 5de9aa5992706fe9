"""``ragsight view`` in a real browser (headless Chromium, driven over the DevTools protocol by
``tests/cdp.py``): navigation, filters, search, labelling with the keyboard, labels read back
through the store and by ``calibrate``, hostile text inert, and the token refusal when the viewer
listens on another address. Screenshots go under the test's tmp_path, or to
$RAGSIGHT_TEST_ARTIFACTS when set (and, with RAGSIGHT_DOC_SHOTS=1, to docs/img/ for docs/review.md).

Needs /usr/bin/chromium (scripts/ci_system_deps.sh installs it); skipped without it, except in CI.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight import Store
from ragsight.cli import main
from ragsight.store import claim_key
from ragsight.view import ViewServer, make_server
from tests.cdp import Browser
from tests.integration.test_report_browser import artifacts, chromium
from tests.unit.test_report_data import PARIS_CLAIMS, scripted_runs

pytestmark = pytest.mark.slow  # a browser and a dozen pages: about 10 s

DOC_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def shot(b: Browser, name: str, tmp_path: Path) -> None:
    folder = artifacts(tmp_path)
    b.screenshot(folder / f"{name}.png")
    if os.environ.get("RAGSIGHT_DOC_SHOTS"):
        shutil.copy(folder / f"{name}.png", DOC_IMG / f"{name}.png")


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ViewServer]:
    monkeypatch.chdir(tmp_path)  # the store named as a person names it (the pages show its path)
    with Store("runs.db") as store:
        await scripted_runs(store)
    server = make_server("runs.db", port=0)
    server.start()
    yield server
    server.shutdown()
    server.server_close()
    server.app.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with Browser(tmp_path / "profile", chromium(), width=1280, height=900) as b:
        yield b


def clean(b: Browser) -> None:
    """The page's script ran, with no error, policy violation or console message."""
    assert b.eval("document.body.dataset.js") == "ran"
    assert b.eval("document.body.dataset.jsErrors") == ""
    assert b.console == [], b.console


def listed(b: Browser) -> list[str]:
    return list(b.eval("Array.from(document.querySelectorAll('#samples tbody td:nth-child(2) a'))"
                       ".map(a => a.textContent)"))


def test_browse_filter_search_and_label_with_the_keyboard(served: ViewServer, browser: Browser, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    b, base = browser, served.url()
    b.goto(base)
    clean(b)
    assert b.eval("Array.from(document.querySelectorAll('td a')).map(a => a.textContent)") == ["run-B", "run-A"]
    shot(b, "view-runs", tmp_path)

    b.click('a[href="/run/run-A"]')
    b.wait_for("location.pathname === '/run/run-A' && document.readyState === 'complete'")
    assert listed(b) == ["paris", "python", "hostile", "hello", "nocontext"]
    # filter: pick a metric and an outcome in the form, then Apply
    b.eval("document.getElementById('metric').value='faithfulness';document.getElementById('outcome').value='scored';"
           "document.getElementById('sort').value='asc'")
    b.click("#apply")
    b.wait_for("location.search.includes('outcome=scored') && document.readyState === 'complete'")
    assert listed(b) == ["python", "paris", "hostile"]
    # search: '/' focuses the search box, Enter submits the form
    b.goto(base + "run/run-A")
    b.key("/")
    assert b.eval("document.activeElement.id") == "q"
    b.type("Guido")
    b.key("Enter")
    b.wait_for("location.search.includes('q=Guido') && document.readyState === 'complete'")
    assert sorted(listed(b)) == ["nocontext", "python"]
    clean(b)
    shot(b, "view-run", tmp_path)

    # label paris: a name once, then the keyboard only
    b.goto(base + "run/run-A/sample/paris")
    b.eval("document.getElementById('who').focus()")
    b.type("ana")
    b.eval("document.getElementById('who').blur()")  # a change: kept in localStorage
    b.key("j")  # the first item: the faithfulness sample label
    b.key("y")  # pass; the focus moves on to claim 1
    b.key("y")  # claim 1's verdict is right
    b.key("n")  # claim 2's verdict is wrong
    b.wait_for("document.body.dataset.saved === '3'")
    assert b.eval("document.getElementById('status').className") == "status"
    clean(b)
    shot(b, "view-sample", tmp_path)
    with Store(served.app.store_path) as store:
        got = {(lb.metric, lb.claim, lb.value, lb.who) for lb in store.labels("run-A")}
    assert got == {("faithfulness", None, 1.0, "ana"),
                   ("faithfulness", claim_key(PARIS_CLAIMS[0]), 1.0, "ana"),
                   ("faithfulness", claim_key(PARIS_CLAIMS[1]), 0.0, "ana")}
    # ... and by calibrate, which reads the store's labels
    assert main(["calibrate", "run-A", "--label", "human", "--json", "--store", served.app.store_path]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_labels"] == 1 and report["n_positive"] == 1
    # read back: a new visit shows ana's labels pressed (the name was kept in this browser)
    b.goto(base + "run/run-A/sample/paris")
    assert b.eval("document.getElementById('who').value") == "ana"
    assert b.eval("Array.from(document.querySelectorAll('button[aria-pressed=true]'))"
                  ".map(x => x.dataset.value + (x.dataset.claim || '-'))") == ["1-", "10", "01"]
    # ']' goes to the next unlabelled sample (paris is now labelled, python is next)
    b.key("]")
    b.wait_for("location.pathname === '/run/run-A/sample/python' && document.readyState === 'complete'")
    # x removes one's own label
    b.key("j")
    b.key("y")
    b.wait_for("document.body.dataset.saved === '1'")
    b.key("k")
    b.key("x")
    b.wait_for("document.body.dataset.saved === '2'")
    with Store(served.app.store_path) as store:
        assert [lb.sample_id for lb in store.labels("run-A")].count("python") == 0

    # hostile text in a sample: shown as text, never run
    b.goto(base + "run/run-A/sample/hostile")
    clean(b)
    assert b.eval("document.title") == "ragsight view: hostile"
    assert b.eval("document.body.dataset.pwned") is None
    assert b.eval("document.querySelectorAll('.field img, .field script').length") == 0
    assert "<script>document.title" in b.eval("document.querySelector('ol.contexts').textContent")

    # compare two runs from the runs page
    b.goto(base)
    b.eval("document.querySelectorAll('input[name=run]').forEach(c => c.checked = true)")
    b.click("form.pick button[type=submit]")
    b.wait_for("location.pathname === '/compare' && document.readyState === 'complete'")
    assert b.eval("document.querySelectorAll('#paired tbody tr').length") == 2
    assert b.eval("document.querySelectorAll('#changed tbody tr').length") >= 2
    clean(b)
    shot(b, "view-compare", tmp_path)


def test_a_viewer_on_another_address_refuses_the_browser_without_its_token(tmp_path: Path,
                                                                          browser: Browser) -> None:
    db = tmp_path / "t.db"
    with Store(db) as store:
        from tests.unit.test_report_data import put_run

        put_run(store, "only", {"faithfulness": {"a": 0.5}}, samples=[{"id": "a", "question": "q"}])
    server = make_server(str(db), host="127.0.0.2", port=0)
    server.start()
    try:
        token = server.app.token
        assert token
        base = f"http://127.0.0.2:{server.port}/"
        browser.goto(base)
        assert "needs its access token" in browser.eval("document.body.textContent")
        assert browser.eval("document.querySelectorAll('a[href=\"/run/only\"]').length") == 0
        browser.goto(base + f"run/only?token={token}")  # the printed address: cookie, then clean address
        assert browser.eval("location.href") == base + "run/only"
        assert browser.eval("document.querySelectorAll('#samples tbody tr').length") == 1
        # a label from the page carries the token in its header
        browser.goto(base + "run/only/sample/a")
        browser.eval("localStorage.setItem('ragsight.reviewer', 'bo')")
        browser.goto(base + "run/only/sample/a")
        browser.key("j")
        browser.key("n")
        browser.wait_for("document.body.dataset.saved === '1'")
        with Store(db) as store:
            assert [(lb.who, lb.value) for lb in store.labels("only")] == [("bo", 0.0)]
        # the one message: the browser's note of the first, refused, page
        assert browser.console == ["log.error (network): Failed to load resource: the server responded "
                                   "with a status of 403 (Forbidden)"]
    finally:
        server.shutdown()
        server.server_close()
        server.app.close()
