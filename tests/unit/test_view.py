"""The viewer as an application (``ViewApp.handle``, no socket): its pages, filters, search,
comparison, labels written through the store, and the door (Host check, token, CSRF rules).
Runs come from the scripted judge (``scripted_runs``) or are written with exact values
(``put_run``), so every expected number is known."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragsight import Store
from ragsight.report import compare, load_runs
from ragsight.store import claim_key
from ragsight.view import Filter, RunTable, ViewApp, fts_query, informativeness
from tests.unit.test_report_data import PY_CLAIMS, put_run, scripted_runs

HOST = {"host": "127.0.0.1:8765"}
JSON = {**HOST, "content-type": "application/json", "origin": "http://127.0.0.1:8765"}


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with Store(path) as store:
        await scripted_runs(store)
    return path


def app_of(path: Path, token: str | None = None) -> ViewApp:
    app = ViewApp(str(path), token=token, index_path=str(path) + ".search-index")
    app.bound("127.0.0.1" if token is None else "10.1.2.3", 8765)
    return app


def get(app: ViewApp, target: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    r = app.handle("GET", target, headers or HOST)
    return r.status, r.body.decode("utf-8")


def sample_ids(page: str) -> list[str]:
    """The sample ids a run page lists, in order."""
    table = page.split('id="samples"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'/sample/([^"?]+)[^"]*">', table)


def post(app: ViewApp, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    r = app.handle("POST", "/api/labels", headers or JSON, json.dumps(body).encode())
    return r.status, json.loads(r.body)


# ---- pages --------------------------------------------------------------------------------------


def test_the_runs_page_names_every_run_with_its_means_and_a_trend(db: Path) -> None:
    app = app_of(db)
    status, page = get(app, "/")
    assert status == 200
    for run in ("run-A", "run-B"):
        assert f'href="/run/{run}"' in page and f'name="run" value="{run}"' in page
    # run-A: faithfulness 1, 2/3, 1 on paris, python, hostile (hello undetermined, nocontext skipped)
    assert "faithfulness ↑ <b>0.889</b>" in page and "(3)" in page
    assert "chunk_size=512" in page and "scripted:scripted" in page
    assert page.count("<svg") == 2  # one trend per metric: two runs of the same data set
    assert 'action="/compare"' in page


def test_a_run_page_filters_by_metric_outcome_and_range_and_sorts(db: Path) -> None:
    app = app_of(db)
    _, page = get(app, "/run/run-A")
    assert sample_ids(page) == ["paris", "python", "hostile", "hello", "nocontext"]
    _, page = get(app, "/run/run-A?metric=faithfulness&outcome=scored&sort=asc")
    assert sample_ids(page) == ["python", "paris", "hostile"]  # 0.667, then the two 1.0 in data order
    _, page = get(app, "/run/run-A?metric=faithfulness&low=0.5&high=0.9")
    assert sample_ids(page) == ["python"]
    _, page = get(app, "/run/run-A?metric=faithfulness&outcome=undetermined")
    assert sample_ids(page) == ["hello"]
    _, page = get(app, "/run/run-A?metric=context_precision&sort=desc")
    assert sample_ids(page)[-1] == "nocontext"  # not scored: last
    assert "3 of 5 samples" in get(app, "/run/run-A?metric=faithfulness&outcome=scored")[1]


def test_bad_filters_are_answered_with_what_is_wrong(db: Path) -> None:
    app = app_of(db)
    status, page = get(app, "/run/run-A?metric=nope")
    assert status == 400 and "no metric &#x27;nope&#x27;" in page and "faithfulness" in page
    status, page = get(app, "/run/run-A?metric=faithfulness&low=abc")
    assert status == 400 and "&#x27;low&#x27; must be a number" in page
    status, page = get(app, "/run/run-A?low=0.5")
    assert status == 400 and "pick one" in page
    status, page = get(app, "/run/no-such-run")
    assert status == 404 and "no run" in page
    assert get(app, "/run/run-A/sample/nope")[0] == 404
    assert get(app, "/etc/passwd")[0] == 404


def test_pages_of_fifty(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with Store(path) as store:
        put_run(store, "big", {"faithfulness": {f"s{i:03d}": (i % 10) / 10 for i in range(120)}})
    app = app_of(path)
    _, first = get(app, "/run/big")
    assert sample_ids(first) == [f"s{i:03d}" for i in range(50)] and "page 1 of 3" in first
    _, last = get(app, "/run/big?page=3")
    assert sample_ids(last) == [f"s{i:03d}" for i in range(100, 120)]
    _, past = get(app, "/run/big?page=99")  # past the end: the last page
    assert sample_ids(past) == sample_ids(last)
    # the next link keeps the filter
    _, page = get(app, "/run/big?metric=faithfulness&sort=desc")
    assert 'href="/run/big?metric=faithfulness&amp;sort=desc&amp;page=2"' in page


def test_search_finds_words_in_questions_answers_and_contexts(db: Path) -> None:
    app = app_of(db)
    _, page = get(app, "/run/run-A?q=Guido")  # in the python samples' contexts and responses
    assert sorted(sample_ids(page)) == ["nocontext", "python"]
    _, page = get(app, "/run/run-A?q=louvre")  # in a context only, any case
    assert sample_ids(page) == ["paris"]
    _, page = get(app, "/run/run-A?q=capit")  # the last word also as a prefix
    assert sample_ids(page) == ["paris"]
    _, page = get(app, '/run/run-A?q="largest city"')
    assert sample_ids(page) == ["paris"]
    _, page = get(app, '/run/run-A?q="city largest"')  # a phrase keeps its order
    assert sample_ids(page) == []
    _, page = get(app, "/run/run-A?q=Guido&metric=faithfulness&outcome=scored")  # search and filter
    assert sample_ids(page) == ["python"]
    # FTS5 syntax in the text is searched as words, never an error
    status, page = get(app, '/run/run-A?q=%22AND%20(%20NEAR%20*%20')
    assert status == 200
    assert Path(str(db) + ".search-index").exists()


def test_fts_query_quotes_every_word() -> None:
    assert fts_query("warranty battery") == '"warranty" "battery"*'
    assert fts_query('"two years" frame') == '"two years" "frame"*'
    assert fts_query('frame "two years"') == '"frame" "two years"'
    assert fts_query('AND OR ( ) * " ^') == '"AND" "OR"*'
    assert fts_query("  ...  ") is None


def test_the_index_is_rebuilt_when_its_run_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        put_run(store, "r", {"faithfulness": {"a": 1.0}}, samples=[{"id": "a", "question": "alpha"}])
    app = app_of(path)
    assert sample_ids(get(app, "/run/r?q=alpha")[1]) == ["a"]
    app.close()
    path.unlink()
    Path(str(path) + "-wal").unlink(missing_ok=True)
    with Store(path) as store:  # a new store with a run of the same id: the old index is stale
        put_run(store, "r", {"faithfulness": {"b": 1.0}}, samples=[{"id": "b", "question": "beta"}],
                created_at=1.0)
    app = app_of(path)
    assert sample_ids(get(app, "/run/r?q=alpha")[1]) == []
    assert sample_ids(get(app, "/run/r?q=beta")[1]) == ["b"]


def test_the_sample_page_shows_the_evidence_trail(db: Path) -> None:
    app = app_of(db)
    status, page = get(app, "/run/run-A/sample/python")
    assert status == 200
    for claim in PY_CLAIMS:
        assert claim in page
    assert page.count('class="claim ok"') == 2 and page.count('class="claim bad"') == 1
    assert "scripted verdict for claim 3" in page  # the judge's reason
    assert "<mark " in page and "supporting sentence (context 1" in page
    assert "Judge calls (3)" in page and "verify_claims v" in page and "extract_claims v" in page
    # navigation in data order: python is the second sample
    assert 'id="prev-sample" href="/run/run-A/sample/paris"' in page
    assert 'id="next-sample" href="/run/run-A/sample/hostile"' in page
    # the label controls: a pass/fail per metric, right/wrong per claim
    assert page.count('data-value="1" aria-pressed') == 2 + 3


def test_hostile_text_stays_inert(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    evil = {
        "id": "<img src=x onerror=alert(1)>",
        "question": "<script>document.title='pwned'</script> javascript:alert(1)",
        "contexts": ['<a href="javascript:alert(2)">click</a>\x1b[31m red \x00 nul \u202e reversed'],
        "response": "</div></section><iframe src=//evil.example>",
        "metadata": {"x": "<b onmouseover=alert(3)>"},
    }
    with Store(path) as store:
        put_run(store, "run <x>", {"faithfulness": {evil["id"]: 0.5}}, samples=[evil])
    app = app_of(path)
    for target in ("/", "/run/run%20%3Cx%3E", "/run/run%20%3Cx%3E/sample/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"):
        status, page = get(app, target)
        assert status == 200, target
        body = page.split("<body", 1)[1]
        assert "<script>" not in body.replace("<script>(function", "") and "<img" not in body
        assert "<iframe" not in body and 'href="javascript:' not in body and "onerror=alert" not in body.replace(
            "onerror=alert(1)&gt;", "")
    _, page = get(app, "/run/run%20%3Cx%3E/sample/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    assert "&lt;script&gt;document.title=" in page
    # control and direction characters are shown, not obeyed
    assert 'title="U+001B">␛</span>' in page and 'title="U+0000">␀</span>' in page
    assert 'title="U+202E">U+202E</span>' in page and "\x1b" not in page and "\u202e" not in page


def test_compare_gives_the_same_paired_statistics_as_ragsight_compare(db: Path) -> None:
    app = app_of(db)
    status, page = get(app, "/compare?run=run-A&run=run-B")
    assert status == 200
    with Store(db) as store:
        expected = compare(load_runs(store, ["run-A", "run-B"]))
    rows = re.findall(r"<tr><td class=\"l\">([^<]+) ↑</td><td>B</td><td>(\d+) of (\d+)</td><td>([^<]+)</td>"
                      r"<td>([^<]+)</td><td>([^<]+)</td>", page)
    assert len(rows) == len(expected.paired) == 2
    for row, p in zip(rows, expected.paired):
        d = p.difference
        assert row[0] == p.metric and int(row[1]) == d.n and int(row[2]) == p.shared
        assert row[3] == f"{d.diff:+.3f}" and row[5] == ("<0.001" if d.p_value < 0.001 else f"{d.p_value:.3f}")
    # the samples that changed most first (B believes fewer claims and ranks paris's chunks better):
    # paris 0.5 (faithfulness 1 -> 0.5, context precision 0.5 -> 1), python 0.333; no other moved
    changed = page.split('id="changed"', 1)[1]
    rows = re.findall(r'<tr><td>([0-9.]+)</td><td class="l"><a href="/run/run-B/sample/(\w+)"', changed)
    assert rows == [("0.500", "paris"), ("0.333", "python")]
    # the oldest run is the baseline, whatever the order of the request
    def without_time(text: str) -> str:
        return re.sub(r"computed in \d+ ms", "", text)

    assert without_time(get(app, "/compare?run=run-B&run=run-A")[1]) == without_time(page)


def test_compare_needs_two_runs_and_says_when_they_pair_poorly(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with Store(path) as store:
        put_run(store, "a", {"faithfulness": {f"s{i}": 0.5 for i in range(10)}})
        put_run(store, "b", {"faithfulness": {f"t{i}": 0.5 for i in range(10)}})
    app = app_of(path)
    status, page = get(app, "/compare?run=a")
    assert status == 400 and "two runs or more" in page
    status, page = get(app, "/compare?run=a&run=b")
    assert status == 200 and "share too few samples" in page and "allow_poor=1" in page


def test_the_queue_puts_informative_samples_first(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with Store(path) as store:
        put_run(store, "q", {
            "faithfulness": {"sure": 1.0, "edge": 0.52, "split": 0.9, "none": "failed:x"},
            "context_precision": {"sure": 1.0, "edge": 0.6, "split": 0.1, "none": "failed:x"},
        })
        table = RunTable.read(store, "q")
    # edge: nearest 0.52 -> 0.96, spread 0.08 -> 1.04; split: nearest 0.1 -> 0.2, spread 0.8 -> 1.0
    assert informativeness(table, table.position["edge"]) == pytest.approx(1.04)
    assert informativeness(table, table.position["split"]) == pytest.approx(1.0)
    assert informativeness(table, table.position["sure"]) == pytest.approx(0.0)
    assert informativeness(table, table.position["none"]) is None
    assert [table.ids[i] for i in Filter(sort="informative").select(table)] == ["edge", "split", "sure", "none"]
    app = app_of(path)
    _, page = get(app, "/run/q?sort=informative&labels=unlabelled")
    assert sample_ids(page) == ["edge", "split", "sure", "none"]


# ---- labels -------------------------------------------------------------------------------------


def test_labels_are_written_through_the_store_and_shown(db: Path) -> None:
    app = app_of(db)
    status, reply = post(app, {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": 2,
                               "value": 0, "who": "ana"})
    assert status == 200 and reply["message"] == "saved: claim 3 of faithfulness of sample python is wrong (ana)"
    status, _ = post(app, {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": None,
                           "value": 1, "who": "bo"})
    assert status == 200
    with Store(db) as store:
        labels = store.labels("run-A")
        again = store.labels("run-B")  # the same content in another run: the same labels
    assert [(lb.sample_id, lb.metric, lb.claim, lb.value, lb.who, lb.field) for lb in labels] == [
        ("python", "faithfulness", None, 1.0, "bo", "human"),
        ("python", "faithfulness", claim_key(PY_CLAIMS[2]), 0.0, "ana", "human"),
    ]
    assert all(lb.when.endswith("Z") for lb in labels) and [lb.sample_id for lb in again] == ["python", "python"]
    _, page = get(app, "/run/run-A/sample/python")
    assert '"ana": 0' in page.replace("&quot;", '"') and '"bo": 1' in page.replace("&quot;", '"')
    _, page = get(app, "/run/run-A?labels=unlabelled")
    assert "python" not in sample_ids(page) and len(sample_ids(page)) == 4
    _, page = get(app, "/run/run-A/sample/paris")
    assert 'id="next-unlabelled" href="/run/run-A/sample/hostile"' in page  # python is skipped
    # null removes one's own label
    status, reply = post(app, {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": 2,
                               "value": None, "who": "ana"})
    assert status == 200 and reply["message"].startswith("removed ana's label")
    with Store(db) as store:
        assert [lb.who for lb in store.labels("run-A")] == ["bo"]


@pytest.mark.parametrize(("change", "error"), [
    ({"run": "run-Z"}, "no run"),
    ({"run": "run"}, "matches 2 runs"),
    ({"sample": "nope"}, "has no sample 'nope'"),
    ({"metric": "answer_relevancy"}, "has no metric 'answer_relevancy'"),
    ({"claim": 3}, "has 3 claim(s); there is no claim 3"),
    ({"claim": "1"}, "'claim' must be the claim's position"),
    ({"value": 0.5}, "'value' must be 1 (right), 0 (wrong) or null"),
    ({"value": True}, "'value' must be 1"),
    ({"who": ""}, "'who' must be a non-empty text"),
    ({"who": "a\x1bb"}, "'who' holds U+001B (a control character) at character 2"),
    ({"extra": 1}, "unknown field(s) in the label: extra"),
])
def test_a_label_is_checked_against_the_run_it_names(db: Path, change: dict[str, Any], error: str) -> None:
    app = app_of(db)
    body = {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": 0, "value": 1, "who": "ana"}
    status, reply = post(app, {**body, **change})
    assert status == 400 and error in reply["error"]
    with Store(db) as store:
        assert store.labels() == []


def test_a_label_must_be_same_origin_json(db: Path) -> None:
    app = app_of(db)
    body = {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": 0, "value": 1, "who": "ana"}
    form = {**JSON, "content-type": "application/x-www-form-urlencoded"}
    assert post(app, body, form)[0] == 415  # what a form of another site can send
    assert post(app, body, {**JSON, "origin": "http://evil.example"})[0] == 403
    assert post(app, body, {**JSON, "sec-fetch-site": "cross-site"})[0] == 403
    assert post(app, body, {**JSON, "host": "evil.example:8765"})[0] == 403  # DNS rebinding
    r = app.handle("POST", "/api/labels", JSON, b"{not json")
    assert r.status == 400
    with Store(db) as store:
        assert store.labels() == []
    assert post(app, body)[0] == 200


# ---- the door -----------------------------------------------------------------------------------


def test_a_loopback_viewer_answers_its_own_host_names_only(db: Path) -> None:
    app = app_of(db)
    assert get(app, "/", {"host": "127.0.0.1:8765"})[0] == 200
    assert get(app, "/", {"host": "localhost:8765"})[0] == 200
    status, page = get(app, "/", {"host": "rebound.example:8765"})
    assert status == 403 and "answers requests to" in page
    assert get(app, "/", {"host": "127.0.0.1:9999"})[0] == 403


def test_a_viewer_with_a_token_refuses_requests_without_it(db: Path) -> None:
    app = app_of(db, token="s3cret-token")
    host = {"host": "10.1.2.3:8765"}
    status, page = get(app, "/", host)
    assert status == 403 and "access token" in page and "run-A" not in page
    assert get(app, "/?token=wrong", host)[0] == 403
    assert get(app, "/run/run-A", {**host, "cookie": "ragsight_token=wrong"})[0] == 403
    # the token in the address: a cookie, and the same address without it
    r = app.handle("GET", "/run/run-A?metric=faithfulness&token=s3cret-token", host)
    assert r.status == 303 and r.headers["Location"] == "/run/run-A?metric=faithfulness"
    assert r.headers["Set-Cookie"] == "ragsight_token=s3cret-token; Path=/; HttpOnly; SameSite=Strict"
    status, page = get(app, "/run/run-A", {**host, "cookie": "ragsight_token=s3cret-token"})
    assert status == 200 and 'data-token="s3cret-token"' in page
    assert get(app, "/", {**host, "x-ragsight-token": "s3cret-token"})[0] == 200
    # a write needs the token in its header (the cookie alone is not enough)
    body = {"run": "run-A", "sample": "python", "metric": "faithfulness", "claim": 0, "value": 1, "who": "ana"}
    headers = {**host, "content-type": "application/json", "cookie": "ragsight_token=s3cret-token"}
    assert post(app, body, headers)[0] == 403
    assert post(app, body, {**headers, "x-ragsight-token": "s3cret-token"})[0] == 200


def test_the_run_page_shows_the_mean_corrected_by_the_labels_as_calibrate_does(
        db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.cli import main

    app = app_of(db)
    _, page = get(app, "/run/run-A")
    assert 'id="corrected"' not in page  # no label yet: no corrected mean
    for sid, value in (("paris", 1), ("python", 0), ("hostile", 1)):
        assert post(app, {"run": "run-A", "sample": sid, "metric": "faithfulness", "claim": None,
                          "value": value, "who": "ana"})[0] == 200
    _, page = get(app, "/run/run-A")
    assert main(["calibrate", "run-A", "--label", "human", "--json", "--store", str(db)]) == 0
    out = json.loads(capsys.readouterr().out)
    faith = next(m for m in out["metrics"] if m["metric"] == "faithfulness")
    low, high = faith["corrected_ci"]
    row = re.search(r'<td class="l">faithfulness ↑</td><td>(\d+)</td><td>([\d.]+)</td><td><b>([\d.]+)</b>( !)?</td>'
                    r"<td>\[([-\d.]+), ([-\d.]+)\]</td>", page)
    assert row, page.split('id="corrected"')[1][:600]
    assert int(row[1]) == faith["n_labels"] == 3 and row[2] == "0.889"
    assert row[3] == f"{faith['corrected_mean']:.3f}" and (row[5], row[6]) == (f"{low:.3f}", f"{high:.3f}")
    assert row[4] == " !" and "faithfulness rests on 3 (fewer than 10)" in page  # three labels are too few


def test_unanimous_labels_are_called_too_few_for_that_reason_as_calibrate_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.cli import main

    path = tmp_path / "same.db"
    with Store(path) as store:
        put_run(store, "same", {"faithfulness": {f"s{i:02d}": 0.2 + (i % 4) / 5 for i in range(16)}})
    app = app_of(path)
    for i in range(12):  # twelve labels, every one a pass: more than ten, but their spread is unknown
        assert post(app, {"run": "same", "sample": f"s{i:02d}", "metric": "faithfulness", "claim": None,
                          "value": 1, "who": "ana"})[0] == 200
    _, page = get(app, "/run/same")
    warning = page.split('id="too-few">', 1)[1].split("</p>", 1)[0]
    assert "fewer than 10" not in page
    assert "faithfulness rests on 12 labels all alike (their spread cannot be measured)" in warning
    assert main(["calibrate", "same", "--label", "human", "--store", str(path)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "too few labels: faithfulness rests on 12 labels all alike (their spread cannot be measured)." in said


def test_imported_labels_of_the_whole_sample_are_shown(db: Path) -> None:
    from ragsight.store import ANY_METRIC, Label

    with Store(db) as store:
        key = store.sample_keys("run-A")["paris"]
        store.add_labels([Label(key, ANY_METRIC, 1.0, "human", who="import")])
    _, page = get(app_of(db), "/run/run-A/sample/paris")
    assert 'id="whole-labels">labels of the whole sample (every metric): import=1.00' in page


def test_the_index_falls_back_to_memory_when_it_cannot_sit_beside_the_store(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ragsight.view._app as app_module

    monkeypatch.setattr(app_module, "index_path_for", lambda path: "/no/such/folder/x.search-index")
    app = ViewApp(str(db))
    app.bound("127.0.0.1", 8765)
    assert app.index.path == ":memory:" and "kept in memory" in app.notes[0]
    assert sample_ids(get(app, "/run/run-A?q=louvre")[1]) == ["paris"]


def test_a_long_comparison_answers_computing_then_its_result(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import ragsight.view._app as app_module

    release = threading.Event()
    real = app_module.comparison

    def slow(*args: Any) -> Any:
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(app_module, "comparison", slow)
    monkeypatch.setattr(app_module, "COMPARE_WAIT_S", 0.05)
    app = app_of(db)
    r = app.handle("GET", "/compare?run=run-A&run=run-B", HOST)
    assert r.status == 200 and r.headers["Refresh"] == "2" and b'id="computing"' in r.body
    release.set()
    monkeypatch.setattr(app_module, "COMPARE_WAIT_S", 30.0)
    r = app.handle("GET", "/compare?run=run-A&run=run-B", HOST)
    assert "Refresh" not in r.headers and b'id="paired"' in r.body


def test_a_turn_of_a_conversation_is_shown_as_a_sample(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with Store(path) as store:
        put_run(store, "conv", {"faithfulness": {"c1:1": 0.5}},
                samples=[{"id": "c1:1", "question": "Does it come in red?", "response": "Yes.",
                          "conversation_id": "c1", "turn": 1}])
    app = app_of(path)
    status, page = get(app, "/run/conv/sample/c1%3A1")
    # named on a line of its own once the store reads a turn's fields back, in the metadata until then
    assert status == 200 and ('id="conversation">conversation c1, turn 1' in page
                              or "&quot;conversation_id&quot;: &quot;c1&quot;" in page)
    assert sample_ids(get(app, "/run/conv?q=red")[1]) == ["c1%3A1"]  # the id, percent-encoded in the link


def test_the_comparison_pairs_turns_of_a_conversation_as_compare_does(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with Store(path) as store:
        for run, prefix, shift in (("turns-a", "a", 0.0), ("turns-b", "b", 0.25)):
            rows = [{"id": f"{prefix}{i}", "question": f"q{i}", "conversation_id": "c1", "turn": i} for i in range(6)]
            put_run(store, run, {"faithfulness": {f"{prefix}{i}": 0.5 + shift * (i % 2) for i in range(6)}},
                    samples=rows, created_at=1.0 if prefix == "a" else 2.0)
        expected = compare(load_runs(store, ["turns-a", "turns-b"]))
    assert expected.pairing[0].paired == 6  # the ids differ; conversation and turn pair them
    _, page = get(app_of(path), "/compare?run=turns-a&run=turns-b")
    assert "Pairing: 6 of 6 turns paired" in page
    assert f"<td>{expected.paired[0].difference.n} of 6</td><td>+0.125</td>" in page
    changed = re.findall(r'<a href="/run/turns-b/sample/(b\d)">b\d</a> <a class="muted" href="/run/turns-a/sample/(a\d)"',
                         page)
    assert changed == [("b1", "a1"), ("b3", "a3"), ("b5", "a5")]  # the odd turns moved by 0.25


def test_a_turn_page_shows_its_chat_calls_and_the_other_levels_metrics_as_not_applicable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from ragsight.cli import main

    chat = {"conversation_id": "trip", "turns": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]},
        {"role": "tool", "name": "weather", "content": "Paris: sunny, 21 C."},
        {"role": "assistant", "content": "Sunny, 21 C.",
         "reference_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": "Rain is expected.", "tool_calls": [{"name": "forecast", "args": {"day": 1}}],
         "reference_tool_calls": [{"name": "forecast", "args": {"city": "Paris", "day": 1}}]}]}
    data = tmp_path / "chat.jsonl"
    data.write_text(json.dumps(chat) + "\n")
    db = tmp_path / "runs.db"
    assert main(["evaluate", str(data), "--metrics", "tool_call_accuracy,conversation_tool_call_accuracy",
                 "--store", str(db)]) == 0
    capsys.readouterr()
    app = app_of(db)
    with Store(db) as store:
        run_id = store.runs()[0].id
    status, page = get(app, f"/run/{run_id}/sample/trip:1")
    assert status == 200
    assert "history (the chat before this question)" in page
    assert "message 0 · user" in page and "Weather in Paris?" in page
    assert "message 2 · tool weather" in page and "Paris: sunny, 21 C." in page
    assert 'calls: weather({&quot;city&quot;: &quot;Paris&quot;})' in page
    assert "tool calls of this turn" in page and "forecast({&quot;day&quot;: 1})" in page
    assert "not applicable: a metric of the conversation level" in page
    assert "not scored yet" not in page
    status, own = get(app, f"/run/{run_id}/sample/trip")
    assert "not applicable: a metric of the turn level" in own and "<b>messages</b>" in own
    _, run_page = get(app, f"/run/{run_id}")
    table = run_page.split('id="samples"', 1)[1].split("</table>", 1)[0]
    assert ">missing<" not in table and ">n/a<" in table  # a finished run has nothing missing
