"""The first hour on the command line: the preflight checks
everything before the first judge call and creates no store when it fails; Ctrl-C prints one
line and the resume command; the CI gate and its exit codes; every table read at 80 columns;
and the small things a new user trips over. Each test runs ``ragsight`` as the docs show it,
against a judge on 127.0.0.1."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import _common, main
from ragsight.errors import ConfigError
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply, unused_port
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of

WIDTH = 80


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-first-hour")


@pytest.fixture()
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


@pytest.fixture()
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard output is an 80-column terminal."""
    monkeypatch.setattr(_common.out, "width", WIDTH)


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def judged(requests: list[RecordedRequest]) -> int:
    """Judge calls made for samples (the preflight ping excluded)."""
    return sum(1 for r in requests if r.path.endswith("/chat/completions")
               and prompt_id_of(r.json if isinstance(r.json, dict) else {}) is not None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def one_line(text: str) -> str:
    return " ".join(text.split())


def evaluate_argv(data: Path, url: str, store: Path | str, *extra: str) -> list[str]:
    return ["evaluate", str(data), "--judge", "openai:m", "--base-url", url, "--store", str(store),
            "--quiet", *extra]


# ---- preflight (item 6; item 14: no empty store) ----------------------------------------------


def test_an_unusable_embedder_stops_the_run_and_leaves_nothing(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    data = write(tmp_path / "d.jsonl", make_samples(3))
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=lambda r: Reply.error(404, "model 'emb' not found", code="model_not_found")) as emb:
        code, _, err = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics",
                                                  "faithfulness,answer_relevancy", "--embedder",
                                                  "openai:emb", "--embedder-base-url", emb.url))
    assert code == 2
    assert err.startswith("error: the embedder openai:emb (needed by answer_relevancy) is not usable")
    assert "model 'emb' not found" in err and "--embedder" in one_line(err)
    # the samples in flight were judged while the embedder was pinged (they go on together:
    # tests/reliability/test_concurrent_preflight.py); nothing of them is kept
    assert not store.exists()  # once: an empty store, and every judge call paid first


def test_a_missing_package_of_a_metric_stops_the_run_before_any_judge_call(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # not installed
    data = write(tmp_path / "d.jsonl", make_samples(3))
    store = tmp_path / "runs.db"
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness,bleu,chrf"))
    assert code == 2
    assert "Computing bleu, chrf needs the optional package 'sacrebleu'" in one_line(err)
    assert "pip install 'ragsight[lexical]'" in err
    assert judged(judge.requests) == 0 and not store.exists()


@pytest.mark.parametrize("where", ["missing folder", "judge unreachable"])
def test_a_failed_preflight_leaves_no_store_behind(
    where: str, tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    data = write(tmp_path / "d.jsonl", make_samples(2))
    if where == "missing folder":
        store, url, expect = tmp_path / "nope" / "runs.db", judge.url, "folder"
    else:
        store, url = tmp_path / "runs.db", f"http://127.0.0.1:{unused_port()}/v1"
        expect = "preflight call to judge 'openai:m' failed"
    code, _, err = run(capsys, *evaluate_argv(data, url, store, "--metrics", "faithfulness"))
    assert code == 2 and expect in err, err
    assert not store.exists() and judged(judge.requests) == 0


def test_a_failure_cause_is_shown_whole(tmp_path: Path, judge: FakeOpenAIServer,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    # the embeddings server answers the preflight, then fails: every cause keeps what follows ':'
    seen = {"n": 0}

    def flaky(request: RecordedRequest) -> Reply | None:
        seen["n"] += 1
        return None if seen["n"] == 1 else Reply.error(400, "input too long: limit is 8 tokens")

    data = write(tmp_path / "d.jsonl", make_samples(2))
    with FakeOpenAIServer(handler=flaky) as emb:
        code, out, err = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics",
                                                    "faithfulness,answer_relevancy", "--embedder",
                                                    "openai:e", "--embedder-base-url", emb.url))
    text = one_line(out)
    assert code == 1  # answer_relevancy failed on every sample
    # no threshold was set: the last line names what failed, not a gate the user never gave
    assert "misses its gate" not in err and "a metric has no score on any sample" in err, err
    assert "input too long: limit is 8 tokens" in text
    assert "LEFT OUT of the overall: answer_relevancy: failed on all 2 samples" in text


# ---- Ctrl-C (item 7) ----------------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "code", "what"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, r"terminated \(SIGTERM\)")])
def test_ctrl_c_prints_one_line_and_the_resume_command(signum: int, code: int, what: str,
                                                       tmp_path: Path) -> None:
    data = write(tmp_path / "d.jsonl", make_samples(60))
    store = tmp_path / "s.db"
    env = {**__import__("os").environ, "OPENAI_API_KEY": "sk-x"}
    with FakeOpenAIServer(handler=JudgeWorld(latency=0.2)) as srv:
        url = srv.url
        # the default concurrency (16 samples in flight) and an embedder: many calls in flight
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragsight.cli", "evaluate", str(data), "--metrics",
             "faithfulness,answer_relevancy,context_recall", "--judge", "openai:m", "--base-url",
             srv.url, "--embedder", "openai:e", "--store", str(store)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            # a shell running the suite in the background ignores SIGINT, and its children inherit it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline, done = time.monotonic() + 60, 0
        while time.monotonic() < deadline and proc.poll() is None and done < 2:
            time.sleep(0.2)
            if store.exists():
                try:
                    with closing(sqlite3.connect(store, timeout=1.0)) as c:
                        done = c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
                except sqlite3.OperationalError:
                    pass
        assert proc.poll() is None and done >= 2, f"the run did not get going ({done} finished)"
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    # a preflight ping slower than 2 s (a loaded machine) is announced before the run begins:
    # that line is the preflight's, not the interrupt's
    lines = [ln for ln in stderr.splitlines()
             if not ln.startswith(f"waiting for the judge 'openai:m' at {url} to answer a 1-token ping")]
    # on main: about 170 lines of tracebacks of the calls in flight before the hint
    assert len(lines) == 2, stderr
    assert re.fullmatch(rf"{what}: \d+ of 60 samples are saved in .*s\.db\. Continue with:", lines[0])
    run_id = re.fullmatch(r"  ragsight evaluate --resume (\S+) --store \S+", lines[1])
    assert run_id is not None, lines[1]
    with Store(store) as st:
        assert st.run(run_id.group(1)).status == "interrupted"


# ---- the CI gate (item 12) ----------------------------------------------------------------------


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write(tmp_path / "d.jsonl", make_samples(4))


def test_a_run_below_its_threshold_exits_1_and_above_exits_0(
    tmp_path: Path, judge: FakeOpenAIServer, data: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "runs.db"
    code, out, err = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness",
                                                "--fail-under", "faithfulness=0.99"))
    assert code == 1
    mean = re.search(r"FAILED faithfulness (0\.\d{3}) < 0\.99", out)
    assert mean is not None, out
    assert "misses its gate" in err
    code, out, _ = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness",
                                              "--fail-under", f"faithfulness={float(mean.group(1)) - 0.01}"))
    assert code == 0 and "ok     faithfulness" in out


def test_thresholds_from_pyproject(tmp_path: Path, judge: FakeOpenAIServer, data: Path,
                                   capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "my-rag"\n\n[tool.ragsight]\nfail-under = { faithfulness = 0.99 }\n'
        'fail-over = { noise_sensitivity = 0.9 }\n', encoding="utf-8")
    argv = evaluate_argv(data, judge.url, "runs.db", "--metrics", "faithfulness,noise_sensitivity")
    code, out, _ = run(capsys, *argv)
    assert code == 1 and "FAILED faithfulness" in out and "ok     noise_sensitivity" in out
    # a flag replaces the file's threshold of the same metric
    code, out, _ = run(capsys, *argv, "--fail-under", "faithfulness=0")
    assert code == 0, out
    # --config names another file; an unknown key is an unusable configuration
    other = tmp_path / "gate.toml"
    other.write_text("[tool.ragsight]\nfail_under = { faithfulness = 0.5 }\n", encoding="utf-8")
    code, _, err = run(capsys, *argv, "--config", str(other))
    assert code == 2 and "unknown key(s) fail_under; known: fail-under, fail-over" in err


@pytest.mark.parametrize(("flag", "expect"), [
    ("--fail-under=faithfulnes=0.8", "Did you mean 'faithfulness'?"),
    ("--fail-under=noise_sensitivity=0.3", "lower is better for noise_sensitivity; gate it with fail-over"),
    ("--fail-under=faithfulness", "needs the form METRIC=VALUE"),
    ("--fail-under=faithfulness=high", "the threshold must be a number"),
    ("--fail-under=context_recall=0.5", "gates context_recall, which --metrics does not compute"),
])
def test_an_unusable_gate_exits_2(flag: str, expect: str, tmp_path: Path, judge: FakeOpenAIServer,
                                  data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics",
                                              "faithfulness,noise_sensitivity", flag))
    assert code == 2 and expect in one_line(err), err


def test_a_metric_skipped_on_every_sample_fails_the_run(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    rows = make_samples(3)
    for r in rows:
        r.pop("reference")
    data = write(tmp_path / "d.jsonl", rows)
    code, out, _ = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics",
                                              "faithfulness,context_recall"))
    assert code == 1  # on main: 0
    assert "FAILED context_recall: skipped on all 3 samples: sample has no reference" in one_line(out)


def test_answer_exits_1_when_every_call_to_the_target_failed(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    testset = write(tmp_path / "ts.jsonl", [{"question": "Where?"}, {"question": "When?"}])
    code, _, err = run(capsys, "answer", str(testset), "--target", f"http://127.0.0.1:{unused_port()}/ask",
                       "--out", str(tmp_path / "eval.jsonl"), "--retries", "0", "--quiet")
    assert code == 1  # on main: 0
    assert "every call to the target failed (2 of 2)" in err


# ---- 80 columns (item 13) -----------------------------------------------------------------------

LONG_NAMES = "faithfulness,answer_relevancy,context_precision,context_recall,noise_sensitivity"


def assert_fits(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= WIDTH, f"{len(line)} columns: {line!r}"
    assert "…" not in text


def test_the_evaluate_summary_reads_at_80_columns(tmp_path: Path, judge: FakeOpenAIServer, narrow: None,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "d.jsonl", make_samples(6))
    code, out, _ = run(capsys, "evaluate", "d.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                       "--embedder", "openai:e", "--metrics", LONG_NAMES, "--store", "runs.db", "--quiet")
    assert code == 0
    assert_fits(out)
    header = next(line for line in out.splitlines() if line.lstrip().startswith("metric"))
    assert header.split() == ["metric", "mean", "95%", "CI", "sd", "scored", "undet.", "failed", "skipped"]
    for name in LONG_NAMES.split(","):
        row = next(line for line in out.splitlines() if line.startswith(name))
        assert re.search(r"\s-?\d\.\d{3}\s+-?\d\.\d{3}–-?\d\.\d{3}\s+\d\.\d{3}\s+\d+\s+\d+\s+\d+\s+\d+$", row), row
    # the evidence hint: its own line, whole, pointing at the lowest score of the run
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Evidence of the lowest score"))
    m = re.fullmatch(r"  ragsight show (\S+) --sample (\S+) --store runs\.db", lines[at + 1])
    assert m is not None, lines[at + 1]
    with Store(tmp_path / "runs.db") as st:
        lower = {"noise_sensitivity"}
        oriented = [(1 - s.value if k in lower else s.value, sid)
                    for sid, per in st.scores(m.group(1)).items() for k, s in per.items()
                    if s.value is not None]
    assert m.group(2) == min(oriented)[1]
    assert f"on sample {m.group(2)})" in lines[at]


def test_runs_and_show_read_at_80_columns(tmp_path: Path, judge: FakeOpenAIServer, narrow: None,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    data = write(tmp_path / "d.jsonl", make_samples(3))
    for size in (256, 512):
        code, _, _ = run(capsys, *evaluate_argv(data, judge.url, store, "--embedder", "openai:e",
                                                "--metrics", LONG_NAMES, "--metadata", f"chunk_size={size}",
                                                "--metadata", "generator=gpt-4o-mini-2024-07-18"))
        assert code == 0
    code, out, _ = run(capsys, "runs", "--store", str(store))
    assert code == 0
    assert_fits(out)
    with Store(store) as st:
        ids = [r.id for r in st.runs()]
    for rid in ids:
        assert re.search(rf"^{rid}  completed\s+3 samples  created \d{{4}}-\d\d-\d\d \d\d:\d\d$", out, re.M), out
    assert re.search(r"^  judge openai:m; 5 metrics: faithfulness, answer_relevancy,", out, re.M), out
    assert re.search(r"^  chunk_size=512 generator=gpt-4o-mini-2024-07-18\s*$", out, re.M), out
    code, out, _ = run(capsys, "show", "last", "--store", str(store))
    assert code == 0
    assert_fits(out)
    code, out, _ = run(capsys, "show", "last", "--metric", "faithfulness", "--store", str(store))
    assert code == 0
    assert_fits(out)


# ---- small things (item 14) ---------------------------------------------------------------------


def test_show_metric_without_a_sample_lists_the_metric_on_every_sample(
    tmp_path: Path, judge: FakeOpenAIServer, data: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "runs.db"
    assert run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness,context_recall"))[0] == 0
    code, out, _ = run(capsys, "show", "last", "--metric", "Context_Recall", "--store", str(store))
    assert code == 0  # on main: --metric was ignored, and the summary printed
    assert "context_recall in run" in out
    assert all(f"s00{i}" in out for i in range(4)) and "faithfulness" not in out
    code, _, err = run(capsys, "show", "last", "--metric", "faithfulnes", "--store", str(store))
    assert code == 2 and "has no metric 'faithfulnes' (did you mean 'faithfulness'?)" in err
    code, _, err = run(capsys, "show", "last", "--sample", "s00", "--store", str(store))
    assert code == 2 and "no sample 's00'" in err


def test_metrics_given_twice_both_count_and_names_fold_case(
    tmp_path: Path, judge: FakeOpenAIServer, data: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "runs.db"
    code, _, _ = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "Faithfulness",
                                            "--metrics", "CONTEXT_RECALL"))
    assert code == 0
    with Store(store) as st:
        assert st.runs()[0].metric_keys == ["faithfulness", "context_recall"]  # on main: only the last


@pytest.mark.parametrize(("metrics", "expect"), [
    ("faithfulness(foo=1)", "metric 'faithfulness(foo=1)': faithfulness has no parameter 'foo'; its parameters: form"),
    ("ir", "no metric selected: the ir metrics need retrieved_ids, relevant_ids, which no sample has"),
])
def test_metric_mistakes_get_a_clear_error(metrics: str, expect: str, tmp_path: Path,
                                           judge: FakeOpenAIServer, data: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", metrics))
    assert code == 2 and expect in one_line(err), err
    assert not store.exists()


def test_generate_sends_the_embedder_to_its_own_url(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsight.cli import _testset

    seen: dict[str, Any] = {}

    async def fake_generate(corpus: Any, generator: Any, critic: Any, embedder: Any, *rest: Any) -> Any:
        seen["embedder"] = embedder
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(_testset, "agenerate", fake_generate)
    (tmp_path / "doc.md").write_text("Aurora Airways allows one cabin bag. " * 20, encoding="utf-8")
    base = ["generate", str(tmp_path / "doc.md"), "--out", str(tmp_path / "ts.jsonl"), "--judge",
            "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--embedder", "openai:e", "--no-cache"]
    assert run(capsys, *base, "--embedder-base-url", "http://127.0.0.1:8/v1")[0] == 2
    assert seen["embedder"].base_url == "http://127.0.0.1:8/v1"
    assert run(capsys, *base)[0] == 2
    assert seen["embedder"].base_url == "http://127.0.0.1:9/v1"  # else the generator's server
