"""Mistakes a newcomer makes on the command line, as the README shows it: each gets one clear
message naming the problem and the fix, with no traceback and nothing else that misleads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import ragsight
from ragsight.cli import main
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld


def write_data(path: Path) -> Path:
    row = {"user_input": "When does the depot open?", "retrieved_contexts": ["It opens at nine."],
           "response": "At nine.", "reference": "At nine."}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def test_a_misspelt_embedded_judge_is_not_announced_before_it_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--judge local:qwen2.5-coder-1.5` (the b left out) printed "Embedded judge
    qwen2.5-coder-1.5: agreement with people not measured. Stronger: ..." as if it were a judge
    being used, then the error: the one line now is the error with the right name."""
    data = write_data(tmp_path / "data.jsonl")
    code = main(["evaluate", str(data), "--judge", "local:qwen2.5-coder-1.5",
                 "--store", str(tmp_path / "runs.db")])
    out, err = capsys.readouterr()
    assert code == 2
    text = out + err
    assert "Unknown model 'qwen2.5-coder-1.5'. Did you mean 'qwen2.5-coder-1.5b'?" in text
    assert "Embedded judge" not in text
    assert "Traceback" not in text
    assert not (tmp_path / "runs.db").exists()


def test_resume_last_with_nothing_to_resume_says_so_and_needs_no_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragsight evaluate --resume last` after a run that completed: it pinged the judge (and,
    with the judge's server gone, failed its preflight with exit 2), then printed the summary as
    if it had run. Now it says there is nothing to resume and shows the results, judge or not."""
    data = write_data(tmp_path / "data.jsonl")
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        assert main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                     "--base-url", srv.url, "--store", str(store)]) == 0
    # the judge's server is gone now
    capsys.readouterr()
    with Store(str(store)) as st:
        run_id = st.runs()[0].id

    code = main(["evaluate", "--resume", "last", "--store", str(store)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert f"Run {run_id} is already complete: nothing to resume." in " ".join(err.split())
    assert "ping" not in err and "Traceback" not in out + err
    assert f"run {run_id}  (1 sample, completed)" in out
    assert "faithfulness" in out


SWEEP = """name = "mine"
documents = "handbok/"
testset = "testset.jsonl"
metrics = ["span_hit_rate", "span_recall"]
baseline = {chunk_size = 256, top_k = 3}

[grid]
chunk_size = [256, 512]
top_k = [3, 5]
"""


def test_a_dry_run_refuses_documents_that_do_not_exist_as_the_run_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragsight sweep mine.toml --dry-run` with the documents folder misspelt printed the plan
    (4 configurations, calls, tokens) and exit 0; the run itself then stopped at once on the
    missing folder. The rehearsal now stops where the run would."""
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "leave.md").write_text("# Leave\n\nStaff get 25 days.\n", "utf-8")
    (tmp_path / "mine.toml").write_text(SWEEP, encoding="utf-8")
    row = {"id": "q1", "question": "How many days of leave?", "reference": "25 days.",
           "metadata": {"reference_spans": [{"doc_id": "leave.md", "start": 9, "end": 27}]}}
    (tmp_path / "testset.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    for args in (["--dry-run"], []):
        code = main(["sweep", str(tmp_path / "mine.toml"), *args,
                     "--store", str(tmp_path / "runs.db")])
        out, err = capsys.readouterr()
        text = " ".join((out + err).split())
        assert code == 2, text
        assert f"error: {tmp_path / 'handbok'}: no such file or folder" in text
        assert "configurations" not in text and "Traceback" not in text


RAG = """import json, sys
json.load(sys.stdin)
print(json.dumps({"answer": "Staff get 25 days of leave.",
                  "contexts": [{"id": "c1", "text": "Staff get 25 days of leave a year."}]}))
"""


def test_a_sweep_prints_a_warning_as_a_sentence_not_as_python_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep whose judge made the test set warned as Python does:
    '/.../ragsight/run/_evaluate.py:222: JudgeSameAsGeneratorWarning: ...' and then the source line
    'return await _run(st, run_id or new_run_id(), ...'. Now one line, as 'evaluate' prints it."""
    (tmp_path / "my_rag.py").write_text(RAG, encoding="utf-8")
    row = {"id": "q1", "question": "How many days of leave?", "reference": "25 days.",
           "metadata": {"generator_model": "m"}}  # as 'ragsight generate --judge openai:m' writes
    (tmp_path / "testset.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        (tmp_path / "mine.toml").write_text(
            f'name = "mine"\ntestset = "testset.jsonl"\nmetrics = ["faithfulness"]\n'
            f'judge = "openai:m"\nbase_url = "{srv.url}"\nembedder = "openai:e"\n'
            f'[pipeline]\ntarget = "cmd:{sys.executable} {tmp_path / "my_rag.py"}"\n[grid]\ntop_k = [3, 5]\n',
            encoding="utf-8")
        code = main(["sweep", str(tmp_path / "mine.toml"), "--store", str(tmp_path / "runs.db")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    text = " ".join(err.split())
    assert ("warning: the judge (m) is the model that generated the responses (sample 'q1' "
            "metadata 'generator_model')") in text, err
    assert text.count("is the model that generated") == 1
    assert ".py:" not in err and "JudgeSameAsGeneratorWarning" not in err
    assert "return await" not in err
    assert "1 answered, 0 failed" in err


@pytest.mark.parametrize("questions", [4, 8])
def test_a_sweep_too_small_to_find_anything_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], questions: int
) -> None:
    """A sweep over 4 questions printed "Best overall: C3 ..." and "No detectable effect" with
    nothing saying that 4 questions can never give p < 0.05 (2/2^4 = 0.125): the ranking was
    noise, unannounced."""
    (tmp_path / "my_rag.py").write_text(RAG, encoding="utf-8")
    rows = [{"id": f"q{i}", "question": f"How many days of leave in year {i}?",
             "reference": "Staff get 25 days of leave."} for i in range(questions)]
    (tmp_path / "testset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (tmp_path / "mine.toml").write_text(
        f'name = "mine"\ntestset = "testset.jsonl"\nmetrics = ["token_f1"]\n'
        f'[pipeline]\ntarget = "cmd:{sys.executable} {tmp_path / "my_rag.py"}"\n'
        '[grid]\ntop_k = [3, 5]\n', encoding="utf-8")
    assert main(["sweep", str(tmp_path / "mine.toml"), "--store", str(tmp_path / "runs.db")]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    prose = " ".join(out.split())
    note = ("NOTE: No configuration could have been found better or worse than the baseline, "
            "whatever the scores: with 4 paired questions the smallest p is 2/2^4 = 0.125")
    if questions == 4:
        assert note in prose, out
        assert "it takes at least 6 questions" in prose
    else:
        assert "could have been found" not in prose


def test_a_sweep_whose_questions_all_fail_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`target = "cmd:python my_rag.py"` run from another folder: every question failed, and the
    report said only "C1: 1 question(s) failed to answer (counted as skipped by the metrics)".
    The cause was in `ragsight show RUN --sample ID`. Now the note gives the first error."""
    (tmp_path / "my_rag.py").write_text(RAG, encoding="utf-8")
    (tmp_path / "testset.jsonl").write_text(
        json.dumps({"id": "q1", "question": "How many days?", "reference": "25 days."}) + "\n",
        "utf-8")
    (tmp_path / "mine.toml").write_text(
        f'name = "mine"\ntestset = "testset.jsonl"\nmetrics = ["token_f1"]\n'
        f'[pipeline]\ntarget = "cmd:{sys.executable} my_rag.py"\n[grid]\ntop_k = [3, 5]\n',
        encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the command runs here, where my_rag.py is not
    # every question of every configuration failed: the sweep fails too
    assert main(["sweep", str(tmp_path / "mine.toml"), "--store", str(tmp_path / "runs.db")]) == 1
    prose = " ".join(capsys.readouterr().out.split())
    assert ("NOTE: C1: 1 question(s) failed to answer (counted as skipped by the metrics); the "
            "first: cmd:") in prose, prose
    assert "[Errno 2] No such file or directory" in prose
    assert ("NOTE: C2: 1 question(s) failed to answer (counted as skipped by the metrics); the "
            "same error as above") in prose


# The second configuration (top_k = 5) holds its answers while the file HOLD exists, so the
# Ctrl-C surely lands while it runs. (Without the hold, a test process late by over a second to
# read the "[2/2] top_k=5 ..." line sent its signal after the sweep had finished: exit 0.)
SLOW_RAG = """import json, os, sys, time
message = json.load(sys.stdin)
time.sleep(0.5)
while message.get("config", {}).get("top_k") == 5 and os.path.exists(HOLD):
    time.sleep(0.1)
print(json.dumps({"answer": "Staff get 25 days.", "contexts": [{"id": "c1", "text": "25 days."}]}))
"""


def test_ctrl_c_in_a_sweep_says_how_to_continue_and_the_rerun_continues(tmp_path: Path) -> None:
    """Ctrl-C during a sweep printed one word, "interrupted", and nothing on how to go on. Now
    it says what is saved and the command that continues; that command reuses the finished
    configuration."""
    hold = tmp_path / "hold"
    hold.write_text("", encoding="utf-8")
    (tmp_path / "slow_rag.py").write_text(f"HOLD = {str(hold)!r}\n" + SLOW_RAG, encoding="utf-8")
    rows = [{"id": f"q{i}", "question": f"How many days {i}?", "reference": "25 days."}
            for i in range(8)]
    (tmp_path / "testset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (tmp_path / "slow.toml").write_text(
        f'name = "slow"\ntestset = "testset.jsonl"\nmetrics = ["token_f1"]\n'
        f'[pipeline]\ntarget = "cmd:{sys.executable} {tmp_path / "slow_rag.py"}"\n'
        '[grid]\ntop_k = [3, 5]\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(ragsight.__file__).parents[1])}
    cmd = [sys.executable, "-m", "ragsight.cli", "sweep", "slow.toml", "--store", "runs.db"]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a shell running the suite in the background (`cmd &`, nohup) ignores SIGINT, and its
        # children inherit that: the sweep would never see the Ctrl-C
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:  # wait for the second configuration to start
            seen.append(line)
            if line.startswith("[2/2] top_k=5 ..."):
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    finally:
        hold.unlink()
        if proc.poll() is None:  # never leave the sweep (and its held targets) running,
            proc.kill()
        proc.__exit__(None, None, None)  # nor its pipes open for a later test to report
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert ("interrupted: the finished configurations and samples are saved in runs.db. The same "
            "command continues the sweep (finished work is reused):") in " ".join(err.split())
    assert "  ragsight sweep slow.toml --store runs.db" in err
    # (a SIGINT while a target process is being started can still leave its pipes to be
    # reported unclosed when the loop is gone: a known gap, not asserted here)

    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "[1/2] top_k=3: already in the store" in again.stderr
    assert "[2/2] top_k=5: done: 8 answered, 0 failed" in again.stderr
