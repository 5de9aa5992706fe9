"""Everyday trust: what a RAG builder trying ragsight for the first time tripped over.
Each test runs ``ragsight`` as the docs show it (or the library as the README shows it), against
a judge on 127.0.0.1, and reads what a person reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import _common, main
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld

WIDTH = 80


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-newcomer")


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


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def one_line(text: str) -> str:
    return " ".join(text.split())


# ---- generate: invented references are rejected (part B) -----------------------------------

DOC = ("The gzip program compresses files with the DEFLATE algorithm. It was written by Jean-loup "
       "Gailly and Mark Adler. File names are stored as given; gzip keeps the original name and "
       "time stamp of each file in the compressed file's header.")


class GeneratorWorld:
    """A generator that writes one question and a reference, and a critic with a fixed verdict."""

    def __init__(self, reference: str, contradicted: bool = False) -> None:
        self.reference = reference
        self.contradicted = contradicted

    def __call__(self, req: RecordedRequest) -> Reply | None:
        if not req.path.endswith("/chat/completions"):
            return None
        system = req.json["messages"][0]["content"]
        if system.startswith("You write test questions"):
            return Reply.chat(json.dumps({"question": "What limit does gzip put on stored file names?",
                                          "answer": self.reference}))
        if system.startswith("You review test questions"):
            return Reply.chat(json.dumps({"reason": "scripted", "answerable": True, "self_contained": True,
                                          "contradicted": self.contradicted, "copied": False}))
        return Reply.chat("{}")


def generate(capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str) -> tuple[int, str, str]:
    (tmp_path / "gzip.md").write_text(DOC, encoding="utf-8")
    return run(capsys, "generate", str(tmp_path / "gzip.md"), "--size", "1", "--types", "single_hop=1",
               "--attempts", "1", "--out", str(tmp_path / "ts.jsonl"), "--judge", "openai:m",
               "--base-url", url, "--embedder", "openai:e", "--no-cache")


@pytest.mark.parametrize(("reference", "contradicted", "absent"), [
    # the trial's invented limit: a number no document holds
    ("gzip keeps file names of up to 255 characters in the compressed file's header.", False, ["255"]),
    # a name no document holds
    ("gzip was written by Jean-loup Gailly at Microsoft and keeps the original name.", False, ["Microsoft"]),
    # made of the document's words, but the critic finds it contradicted
    ("gzip does not keep the original name of each file in the compressed file's header.", True, []),
])
def test_generate_rejects_a_reference_its_contexts_do_not_hold(
        reference: str, contradicted: bool, absent: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(handler=GeneratorWorld(reference, contradicted)) as srv:
        code, out, err = generate(capsys, tmp_path, srv.url)
    assert code == 1  # nothing was written: a non-zero exit
    assert "error: no question passed the filter" in one_line(err)
    assert (tmp_path / "ts.jsonl").read_text("utf-8") == ""
    (rejected,) = [json.loads(line) for line in (tmp_path / "ts.rejected.jsonl").read_text("utf-8").splitlines()]
    assert "reference_not_grounded" in rejected["reasons"]
    assert rejected["details"].get("not_in_contexts", []) == absent
    assert "reference_not_grounded: 1" in out


def test_generate_keeps_a_reference_its_contexts_hold(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    reference = "gzip keeps the original name and time stamp of each file in the header."
    with FakeOpenAIServer(handler=GeneratorWorld(reference)) as srv:
        code, out, _ = generate(capsys, tmp_path, srv.url)
    assert code == 0
    (row,) = [json.loads(line) for line in (tmp_path / "ts.jsonl").read_text("utf-8").splitlines()]
    assert row["reference"] == reference
    assert "read every row" not in out  # a remote judge: no warning about the embedded model


def test_generate_with_the_embedded_model_says_to_read_every_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsight.cli import _testset
    from ragsight.judge import Judge, ScriptedProvider

    reference = "gzip keeps the original name and time stamp of each file in the header."
    provider = ScriptedProvider({
        "testset_single_hop": lambda v: {"question": "What does gzip keep in the header?", "answer": reference},
        "testset_critique": lambda v: {"reason": "-", "answerable": True, "self_contained": True,
                                       "contradicted": False, "copied": False},
    })
    provider.name = "local:qwen2.5-coder-1.5b"  # what the embedded judge calls itself
    monkeypatch.setattr(_testset, "make_judge", lambda *a, **k: Judge(provider))
    (tmp_path / "gzip.md").write_text(DOC, encoding="utf-8")
    code, out, _ = run(capsys, "generate", str(tmp_path / "gzip.md"), "--size", "1", "--types",
                       "single_hop=1", "--attempts", "1", "--out", str(tmp_path / "ts.jsonl"), "--no-cache",
                       "--embedder", "none")
    assert code == 0
    assert f"read every row of {tmp_path / 'ts.jsonl'} before you use it" in one_line(out)


# ---- the input: misnamed columns, dropped rows, pandas' index ------------------------------

GOOD = {"id": "g1", "question": "Who wrote gzip?", "contexts": [DOC],
        "response": "Jean-loup Gailly and Mark Adler wrote gzip.", "reference": "Gailly and Adler."}


def evaluate_argv(data: Path, url: str, store: Path, *extra: str) -> list[str]:
    return ["evaluate", str(data), "--judge", "openai:m", "--base-url", url, "--store", str(store),
            "--quiet", *extra]


def chat_calls(srv: FakeOpenAIServer) -> int:
    return sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))


@pytest.mark.parametrize(("name", "body"), [
    ("docs.jsonl", '{"question": "Who wrote gzip?", "answer": "Gailly.", "retrieved_docs": ["gzip was written by '
                   'Jean-loup Gailly.", "It uses DEFLATE."]}\n'),
    ("docs.csv", 'question,answer,passages\n"Who wrote gzip?","Gailly.","gzip was written by Jean-loup Gailly."\n'),
])
def test_a_column_of_texts_under_another_name_stops_before_a_run(
        name: str, body: str, tmp_path: Path, judge: FakeOpenAIServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / name
    data.write_text(body, encoding="utf-8")
    store = tmp_path / "runs.db"
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, store))
    col = "retrieved_docs" if name.endswith("jsonl") else "passages"
    msg = one_line(err)
    assert code == 2
    assert f"'{col}' holds texts: name it 'contexts'" in msg and "retrieved_ids'?" not in msg
    assert f"Columns found: question, answer, {col}." in msg
    assert "The columns ragsight reads: id, question, contexts, response, reference" in msg
    assert not store.exists() and chat_calls(judge) == 0


def test_a_metadata_column_is_kept_and_does_not_stop_the_run(tmp_path: Path, judge: FakeOpenAIServer,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "d.jsonl", [{**GOOD, "category": "tools", "source": "man page"}])
    code, _, _ = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics", "faithfulness"))
    assert code == 0


def test_rows_that_could_not_be_used_make_the_exit_status_1(tmp_path: Path, judge: FakeOpenAIServer,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "d.jsonl", [GOOD, {**GOOD, "id": "bad", "contexts": [1, 2]}])
    argv = evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics", "faithfulness")
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert ("error: 1 input row could not be used and was not evaluated (listed above); exit status 1. "
            "Fix the rows, or pass --allow-bad-rows to accept the run without them.") in one_line(err)
    code, _, err = run(capsys, *argv, "--allow-bad-rows")
    assert code == 0 and "error:" not in err


def test_pandas_unnamed_index_column_is_dropped(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    import ragsight

    csv = tmp_path / "from_pandas.csv"
    pd.DataFrame([{"question": GOOD["question"], "response": GOOD["response"]}]).to_csv(csv)  # index kept
    assert csv.read_text("utf-8").startswith(",question,response")
    (sample,) = ragsight.Dataset.load(csv)
    assert sample.metadata == {}
    (sample,) = ragsight.Dataset.load(pd.read_csv(csv))  # read back: the column is "Unnamed: 0"
    assert sample.metadata == {}


# ---- the gate: a threshold outside the scores' range -------------------------------------


@pytest.mark.parametrize("where", ["flag", "pyproject"])
def test_a_threshold_of_80_is_refused_before_any_call(where: str, tmp_path: Path, judge: FakeOpenAIServer,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = write(tmp_path / "d.jsonl", [GOOD])
    store = tmp_path / "runs.db"
    monkeypatch.chdir(tmp_path)
    if where == "flag":
        extra: tuple[str, ...] = ("--fail-under", "faithfulness=80")
    else:
        (tmp_path / "pyproject.toml").write_text("[tool.ragsight]\nfail-under = { faithfulness = 80 }\n",
                                                 encoding="utf-8")
        extra = ()
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, store), *extra)
    assert code == 2
    msg = one_line(err)
    assert "the threshold 80 is outside the range of its scores (0 to 1)" in msg
    assert "did you mean 0.8?" in msg
    assert not store.exists() and judge.requests == []


def test_a_boolean_threshold_in_pyproject_is_refused(tmp_path: Path, judge: FakeOpenAIServer,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.ragsight]\nfail-under = { faithfulness = true }\n",
                                             encoding="utf-8")
    code, _, err = run(capsys, *evaluate_argv(write(tmp_path / "d.jsonl", [GOOD]), judge.url, tmp_path / "r.db"))
    assert code == 2 and "the threshold must be a number, not True" in one_line(err)


# ---- the docs ------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def test_no_path_of_a_developers_machine_in_the_docs_or_the_code() -> None:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "src").rglob("*.py")),
             *sorted((REPO / "src").rglob("*.txt"))]
    found = [f"{f.relative_to(REPO)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text("utf-8").splitlines(), start=1)
             if re.search(r"(?<![\w.])/(?:work|home|Users)/", line)]
    assert found == []


# ---- the summary a person reads ------------------------------------------------------------


def test_the_summary_speaks_in_the_right_number(tmp_path: Path, judge: FakeOpenAIServer, narrow: None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "d.jsonl", [GOOD])
    code, out, _ = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics", "faithfulness"))
    assert code == 0
    assert re.search(r"\(1 sample, completed\)", out)
    assert "1 samples" not in out and "1 claims" not in out and "1 retries" not in out
    assert re.search(r"judge: \d+ calls?, 0 cache hits, ", out)
    assert "0 retries, 0 re-asks, 0 failed steps" in out


def test_repeats_in_a_no_cache_run_are_not_called_cache_hits(tmp_path: Path, judge: FakeOpenAIServer,
                                                             narrow: None,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # two samples with the same response and contexts: the second asks the same steps again
    data = write(tmp_path / "d.jsonl", [GOOD, {**GOOD, "id": "g2"}])
    code, out, _ = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "runs.db", "--metrics",
                                              "faithfulness", "--no-cache"))
    assert code == 0
    assert "cache hit" not in out
    assert re.search(r"judge: \d+ calls?, [1-9]\d* repeats? answered from memory, ", out)


def test_a_failed_gate_points_its_evidence_hint_at_the_failing_metric(
        tmp_path: Path, judge: FakeOpenAIServer, narrow: None, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.reliability.world import make_samples

    data = write(tmp_path / "d.jsonl", make_samples(4))
    store = tmp_path / "runs.db"
    argv = evaluate_argv(data, judge.url, store, "--metrics", "faithfulness,context_recall",
                         "--fail-under", "context_recall=0.99")
    code, out, _ = run(capsys, *argv)
    assert code == 1
    from ragsight.result import load_result
    from ragsight.store import Store

    with Store(store) as st:
        result = load_result(st, "last")
    recall = result.scored_values("context_recall")
    assert min(recall.values()) < 0.99 and result.worst()[1] == "faithfulness"  # the run's lowest is not it
    worst = min(recall, key=lambda s: recall[s])
    assert f"Evidence of the lowest score (context_recall {recall[worst]:.3f} on sample {worst}):" in out


def test_all_leaves_out_a_metric_whose_package_is_missing_with_a_note(
        tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sacrebleu" else real(name, *a))
    data = write(tmp_path / "d.jsonl", [GOOD])
    store = tmp_path / "runs.db"
    code, out, err = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "lexical",
                                                "--embedder", "openai:e"))
    assert code == 0
    assert ("left out, their optional package is not installed: bleu, chrf (pip install "
            "'ragsight[lexical]')") in one_line(err)
    assert "bleu" not in out and "chrf" not in out and "rouge" in out
    code, _, err = run(capsys, *evaluate_argv(data, judge.url, tmp_path / "r2.db", "--metrics", "bleu"))
    assert code == 2 and "ragsight[lexical]" in one_line(err)  # named alone: stop, saying what to install


def test_show_sample_puts_the_verdicts_first_and_elides_long_contexts(
        tmp_path: Path, judge: FakeOpenAIServer, narrow: None, capsys: pytest.CaptureFixture[str]) -> None:
    long_chunk = DOC + " " + " ".join(f"Filler sentence number {i} about compression." for i in range(60))
    data = write(tmp_path / "d.jsonl", [{**GOOD, "contexts": [long_chunk]}])
    store = tmp_path / "runs.db"
    assert run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness"))[0] == 0
    code, out, _ = run(capsys, "show", "last", "--sample", "g1", "--store", str(store))
    assert code == 0
    flat = one_line(out)
    assert flat.index("value:") < flat.index("context 1:")  # the verdicts before the texts
    assert "more characters; --full shows them)" in flat
    assert "Filler sentence number 59" not in flat
    code, out, _ = run(capsys, "show", "last", "--sample", "g1", "--store", str(store), "--full")
    assert code == 0 and "Filler sentence number 59 about compression." in one_line(out)


def test_runs_and_compare_fit_80_columns_when_piped(tmp_path: Path, judge: FakeOpenAIServer,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import subprocess
    import sys

    from tests.reliability.world import make_samples

    data = write(tmp_path / "d.jsonl", make_samples(6))
    store = tmp_path / "runs.db"
    for tag in ("a", "b"):
        assert run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness,context_recall",
                                          "--metadata", f"variant={tag}-with-a-rather-long-label-for-this-setting"))[0] == 0
    from ragsight.store import Store

    with Store(store) as st:
        ids = [r.id for r in st.runs()]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for argv in (["runs", "--store", str(store)], ["compare", *ids, "--store", str(store)]):
        done = subprocess.run([sys.executable, "-m", "ragsight.cli", *argv], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        long = [line for line in done.stdout.splitlines() if len(line) > WIDTH]
        assert long == [], (argv[0], long)


def _first_python_block(text: str) -> tuple[str, str]:
    """(the README's text before its first Python block, the block)."""
    head, _, rest = text.partition("```python\n")
    return head, rest.partition("```")[0]


def test_the_readme_first_python_example_runs_or_says_what_to_install(
        tmp_path: Path, judge: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from ragsight.cli import example_path

    tomllib = pytest.importorskip("tomllib")

    readme = (REPO / "README.md").read_text("utf-8")
    head, code = _first_python_block(readme)
    setup = (REPO / "scripts" / "setup.sh").read_text("utf-8")
    extras = re.findall(r'extras="([^"]+)"', setup)[0].split(",")
    needs = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    installed_by_setup = any(any(d.startswith("pandas") for d in needs.get(e, [])) for e in extras)
    if "to_pandas()" in code and not installed_by_setup:
        # the set-up does not install pandas: the text right before the example must say so
        assert "ragsight[pandas]" in head.rstrip().rsplit("\n\n", 1)[-1], "the example needs pandas, unsaid"
    pytest.importorskip("pandas")
    shutil.copy(example_path(), tmp_path / "data.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", judge.url)
    exec(compile(code, "README.md", "exec"), {})  # runs as written, against the judge on 127.0.0.1
    assert (tmp_path / "runs.db").exists()


def test_contexts_cut_to_the_window_are_said_once_and_marked_only_where_read(
        tmp_path: Path, judge: FakeOpenAIServer, narrow: None, capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.report import render_report
    from ragsight.result import load_result
    from ragsight.store import Store

    fact = "gzip was written by Jean-loup Gailly and Mark Adler."
    row = {"id": "long", "question": "Who wrote gzip?", "contexts": [fact, "filler words " * 60_000],
           "response": fact}
    data = write(tmp_path / "long.jsonl", [row])
    store = tmp_path / "runs.db"
    code, out, _ = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", "faithfulness,answer_relevancy",
                                              "--embedder", "openai:e"))
    assert code == 0
    assert re.search(r"cut to fit the judge's window: 1 sample; the largest cut: contexts\[2\] of sample long, "
                     r"[\d,]+ tokens to [\d,]+\.", one_line(out))
    with Store(store) as st:
        result = load_result(st, "last")
    scores = result.scores["long"]
    assert scores["faithfulness"].evidence.details["truncated"][0]["field"] == "contexts[2]"
    assert "truncated" not in scores["answer_relevancy"].evidence.details  # it reads no context
    page = render_report([result])
    assert "cut to fit the judge&#x27;s window: 1 sample" in page or "cut to fit the judge's window: 1 sample" in page


# ---- Ctrl-C --------------------------------------------------------------------------------

CTRL_C_SCRIPT = """
import asyncio, os, signal, sqlite3, sys, threading, time
import ragsight
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

store = sys.argv[1]

def interrupt():  # Ctrl-C once two samples are saved
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            with sqlite3.connect(store, timeout=1) as c:
                if c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0] >= 2:
                    break
        except sqlite3.OperationalError:
            pass
    os.kill(os.getpid(), signal.SIGINT)

async def main(url):  # a script's own async main calling the sync API
    threading.Thread(target=interrupt, daemon=True).start()
    ragsight.evaluate(make_samples(40), ["faithfulness"], judge=ragsight.JudgeSpec("openai:m", base_url=url),
                      store=store, options=ragsight.RunOptions(concurrency=2, show_progress=False))

with FakeOpenAIServer(handler=JudgeWorld(latency=0.2)) as srv:
    asyncio.run(main(srv.url))
"""


def test_sync_evaluate_under_asyncio_run_stops_on_the_first_ctrl_c(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_SCRIPT, encoding="utf-8")
    store = tmp_path / "c.db"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), str(store)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    m = re.search(r"ragsight: interrupted: (\d+) of 40 samples are saved in \S+ \(run \S+\)\. Continue with: "
                  r"ragsight\.evaluate\(None, resume=", done.stderr)
    assert m is not None, done.stderr[-2000:]
    assert 2 <= int(m.group(1)) < 40  # before: the first Ctrl-C was swallowed and all 40 ran


ACTRL_C_SCRIPT = """
import asyncio, os, signal, sqlite3, sys, threading, time
import ragsight
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

store, how = sys.argv[1], sys.argv[2]

def interrupt():  # Ctrl-C once two samples are saved
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            with sqlite3.connect(store, timeout=1) as c:
                if c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0] >= 2:
                    break
        except sqlite3.OperationalError:
            pass
    os.kill(os.getpid(), signal.SIGINT)

async def main(url):  # a script's own async main awaiting the async API
    threading.Thread(target=interrupt, daemon=True).start()
    await ragsight.aevaluate(make_samples(40), ["faithfulness"], judge=ragsight.JudgeSpec("openai:m", base_url=url),
                             store=store, options=ragsight.RunOptions(concurrency=2, show_progress=False))
    print("the script went on after the Ctrl-C")

with FakeOpenAIServer(handler=JudgeWorld(latency=0.2)) as srv:
    if how == "asyncio.run":
        asyncio.run(main(srv.url))
    else:
        asyncio.new_event_loop().run_until_complete(main(srv.url))
"""


@pytest.mark.parametrize("how", ["asyncio.run", "run_until_complete"])
def test_an_interrupted_aevaluate_says_what_it_saved_and_how_to_resume(how: str, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    import ragsight

    script = tmp_path / "actrl_c.py"
    script.write_text(ACTRL_C_SCRIPT, encoding="utf-8")
    store = tmp_path / "c.db"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), str(store), how], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode not in (0, -signal.SIGKILL), done.stderr[-2000:]
    assert "went on" not in done.stdout
    # before: the same line, then a CancelledError traceback and "During handling of the above
    # exception" ending in a bare KeyboardInterrupt (run_until_complete: no line at all)
    assert "CancelledError" not in done.stderr and "During handling" not in done.stderr, done.stderr[-3000:]
    line = (r"interrupted: (\d+) of 40 samples are saved in \S+ \(run (\S+)\)\. Continue with: "
            r"ragsight\.evaluate\(None, resume='\S+', store='\S+'\)")
    said = re.search(r"^ragsight: " + line, done.stderr, re.M)
    assert said is not None, done.stderr[-2000:]
    # the exception the script sees is evaluate()'s, its message the same line
    assert re.search(r"^ragsight\.run\.RunInterrupted: " + line + "$", done.stderr, re.M), done.stderr[-2000:]
    saved, run_id = int(said.group(1)), said.group(2)
    assert 2 <= saved < 40
    # nothing lost: the run is marked interrupted with the saved samples, and the resume call finishes it
    st = ragsight.Store(str(store))
    try:
        assert st.run(run_id).status == "interrupted"
        assert len(st.finished_samples(run_id)) == saved
    finally:
        st.close()
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        world = srv
        result = ragsight.evaluate(None, resume=run_id, store=str(store),
                                   judge=ragsight.JudgeSpec(base_url=srv.url),
                                   options=ragsight.RunOptions(show_progress=False))
    assert result.status == "completed" and len(result.samples) == 40
    assert len(result.scores) == 40
    assert chat_calls(world) > 0


# ---- a correct decline is not among the worst samples (trial on the bc and chage manuals) ------

DECLINES = [
    {"id": "de", "question": "Which programming language is GNU bc written in?", "contexts": [DOC],
     "response": "Die Dokumente enthalten keine Angabe dazu, in welcher Sprache bc geschrieben ist.",
     "reference": "The documents do not contain the answer to this question.", "out_of_scope": True},
    {"id": "en", "question": "Does gzip encrypt files?", "contexts": [DOC],
     "response": "The documents do not say.",
     "reference": "The documents do not contain the answer to this question.", "out_of_scope": True},
    {"id": "wrong", "question": "Who wrote gzip?", "contexts": [DOC],
     "response": "Gzip was written by Richard Stallman in 1975.", "reference": "Gailly and Adler."},
]


def test_a_correct_decline_is_not_graded_as_a_wrong_answer_nor_listed_among_the_worst(
        tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "d.jsonl", DECLINES)
    store = tmp_path / "runs.db"
    metrics = "answer_relevancy,factual_correctness,answer_correctness,abstention"
    code, _, _ = run(capsys, *evaluate_argv(data, judge.url, store, "--metrics", metrics))
    assert code == 0
    code, out, _ = run(capsys, "show", "last", "--store", str(store), "--sample", "de")
    shown = one_line(out)
    assert "declines an out-of-scope question" in shown and "nothing to be relevant to (see abstention)" in shown
    assert "the documents hold no answer to grade (see abstention)" in shown
    report = tmp_path / "r.html"
    code, _, _ = run(capsys, "report", "last", "--store", str(store), "--out", str(report))
    assert code == 0
    page = report.read_text(encoding="utf-8")
    worst = page[page.index("<h3>Worst samples</h3>"):]
    worst = worst[:worst.index("</table>")]
    rows = re.findall(r"<tr>.*?</tr>", worst, flags=re.S)[1:]  # after the header
    assert rows and "wrong" in rows[0], rows[0]  # the invented author is the worst sample
    for row in rows:  # each decline is there only with its abstention of 1.000
        if ">de<" in row or ">en<" in row:
            assert "abstention" in row and "1.000" in row, row


def test_generate_says_something_as_each_candidate_is_checked(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # A trial's `generate --size 5` with the embedded model printed nothing for 47 minutes: the
    # count came once per round of candidates. Now a line comes as each candidate is checked.
    (tmp_path / "gzip.md").write_text(DOC, encoding="utf-8")
    with FakeOpenAIServer(handler=GeneratorWorld("gzip keeps the original name and time stamp.")) as srv:
        _, _, err = run(capsys, "generate", str(tmp_path / "gzip.md"), "--size", "3", "--types",
                           "single_hop=1", "--attempts", "1", "--out", str(tmp_path / "ts.jsonl"),
                           "--judge", "openai:m", "--base-url", srv.url, "--embedder", "openai:e", "--no-cache")
    lines = [line.strip() for line in err.splitlines() if "accepted after" in line]
    assert "0/3 accepted after 1 candidate" in lines, err
    tried = [int(re.search(r"after (\d+) candidate", line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert tried == sorted(tried) and len(tried) >= 3, lines
