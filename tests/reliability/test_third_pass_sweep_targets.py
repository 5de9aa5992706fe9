"""Sweep targets and sweep files under attack, through ``ragsight sweep`` as
docs/sweep.md shows it. A ``cmd:`` target is killed with its children at its timeout; what it
prints to stderr is stored without keys; one bad answer fails its question, not the sweep; a
target that failed everywhere exits 1; an interrupted sweep keeps the answers it got; the dry run
says what the run would; grids and YAML aliases are bounded before expansion; hostile files end
in clean errors."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from ragsight import cli

QUESTIONS = [("q1", "How many cabin bags may I bring?"), ("q2", "When does check-in close?"),
             ("q3", "Can I bring a pet?")]


def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "reference": "One bag."}) + "\n" for i, q in QUESTIONS), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])


def sweep_file(tmp_path: Path, target: str, extra: str = "", grid: str = "top_k = [1, 2]") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "t"\ntestset = "ts.jsonl"\nmetrics = ["exact_match"]\n{extra}\n'
        f'[pipeline]\ntarget = {json.dumps(target)}\n'
        f'{"timeout = 2" if target.startswith("cmd:") else ""}\n\n[grid]\n{grid}\n', "utf-8")
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_a_cmd_target_whose_child_holds_stdout_is_killed_with_it_at_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    (tmp_path / "rag.py").write_text(
        "import json, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "open('pids.txt', 'a').write(f'{child.pid}\\n')\n"
        "print(json.dumps({'answer': 'One bag.', 'contexts': ['x']}), flush=True)\n", "utf-8")
    spec = sweep_file(tmp_path, f"cmd:{sys.executable} rag.py", grid="top_k = [1]")
    t0 = time.monotonic()
    code, printed = run(["sweep", str(spec), "--store", "s.db"], capsys)
    elapsed = time.monotonic() - t0
    # 3 questions, 4 at a time, 3 attempts of 2 s each plus backoff
    assert elapsed < 30, elapsed
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert pids and not [p for p in pids if alive(p)], "children of the command outlived its timeout"
    assert "no answer within 2 s" in " ".join(printed.split())
    assert code == 1  # the target failed on every question


def test_stderr_of_a_failing_target_is_stored_without_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    secret = "tok_live_5f1c0a9e77b24d10"
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)
    (tmp_path / "rag.py").write_text(
        "import os, sys\nsys.stderr.write('auth failed with ' + os.environ['MY_SERVICE_TOKEN'] + '\\n')\n"
        "sys.exit(4)\n", "utf-8")
    spec = sweep_file(tmp_path, f"cmd:{sys.executable} rag.py", grid="top_k = [1]")
    code, printed = run(["sweep", str(spec), "--store", "s.db"], capsys)
    assert code == 1  # failed everywhere
    assert "auth failed with" in printed
    assert secret not in printed
    for f in tmp_path.iterdir():
        if f.name.startswith("s.db"):
            assert secret.encode() not in f.read_bytes(), f.name
    code, printed = run(["sweep", "report", "t", "--store", "s.db", "--html", "r.html"], capsys)
    assert code == 0, printed
    assert secret not in printed and secret not in (tmp_path / "r.html").read_text("utf-8")


def test_one_bad_answer_fails_its_question_not_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    (tmp_path / "rag_exit.py").write_text(
        "import sys\ndef answer(question, top_k):\n"
        "    if 'check-in' in question:\n        sys.exit(3)\n"
        "    return {'answer': 'One bag.', 'contexts': ['x'] * top_k}\n", "utf-8")
    code, printed = run(["sweep", str(sweep_file(tmp_path, "rag_exit:answer")), "--store", "s.db"], capsys)
    assert code == 0, printed
    assert "raised SystemExit: 3" in " ".join(printed.split())
    assert "Sweep 't': 2 configurations, 3 questions each" in printed


def test_a_target_that_failed_everywhere_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    (tmp_path / "rag_down.py").write_text(
        "def answer(question, top_k):\n    raise ConnectionError('index server down')\n", "utf-8")
    code, printed = run(["sweep", str(sweep_file(tmp_path, "rag_down:answer")), "--store", "s.db"], capsys)
    assert code == 1, printed
    assert "failed on every question of 2 of 2 configuration(s)" in " ".join(printed.split())


def test_an_interrupted_sweep_keeps_the_answers_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    (tmp_path / "rag_count.py").write_text(
        "import os, signal, time\ndef answer(question, top_k):\n"
        "    open('asked.txt', 'a').write(question + '\\n')\n"
        "    if os.path.exists('stop') and 'pet' in question:  # Ctrl-C while this question is asked\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n        time.sleep(1)\n"
        "    return {'answer': 'One bag.', 'contexts': ['x'] * top_k}\n", "utf-8")
    spec = sweep_file(tmp_path, "rag_count:answer", extra="concurrency = 1", grid="top_k = [1]")
    (tmp_path / "stop").write_text("")
    code, _ = run(["sweep", str(spec), "--store", "s.db"], capsys)
    assert code == 130
    asked_before = (tmp_path / "asked.txt").read_text().splitlines()
    assert len(asked_before) == 3
    (tmp_path / "stop").unlink()
    code, printed = run(["sweep", str(spec), "--store", "s.db"], capsys)
    assert code == 0, printed
    asked_after = (tmp_path / "asked.txt").read_text().splitlines()[3:]
    assert asked_after == ["Can I bring a pet?"]  # the two answers got before the stop were kept


def test_the_dry_run_refuses_a_missing_test_set_as_the_run_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    (tmp_path / "ts.jsonl").unlink()
    code, printed = run(["sweep", str(sweep_file(tmp_path, "x:y")), "--dry-run", "--store", "s.db"], capsys)
    assert code == 2
    assert "no such test set" in printed and "will be generated" not in printed


def test_a_grid_of_ten_to_the_eight_is_refused_before_expansion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, monkeypatch)
    grid = "\n".join(f"p{i} = [{', '.join(str(v) for v in range(10))}]" for i in range(8))
    t0 = time.monotonic()
    code, printed = run(["sweep", str(sweep_file(tmp_path, "x:y", grid=grid)), "--dry-run", "--store", "s.db"],
                        capsys)
    assert time.monotonic() - t0 < 5
    assert code == 2
    assert "100,000,000 configurations" in " ".join(printed.split())


def test_a_yaml_alias_bomb_is_refused_before_expansion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("yaml")
    world(tmp_path, monkeypatch)
    lines = ['name: t', 'testset: ts.jsonl', 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    lines.append("grid: {top_k: *a8}")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n", "utf-8")
    t0 = time.monotonic()
    code, printed = run(["sweep", "bomb.yaml", "--dry-run", "--store", "s.db"], capsys)
    assert time.monotonic() - t0 < 5
    assert code == 2
    assert "expands to more than 100,000 values" in " ".join(printed.split())


HOSTILE_TOML = [
    'name = 5\ntestset = "ts.jsonl"\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\ngrid = 3\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nconfigurations = "abc"\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nfixed = [1, 2]\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nmetrics = 5\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nmetrics = [1, 2]\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nconcurrency = "many"\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nconcurrency = -3\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\n[pipeline]\ntarget = 5\n',
    'testset = "ts.jsonl"\n[pipeline]\ntarget = "cmd:x"\ntimeout = "soon"\n',
    'testset = "ts.jsonl"\ndocuments = 5\n[pipeline]\ntarget = "x:y"\n',
    'testset = 5\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\nbaseline = 3\n[pipeline]\ntarget = "x:y"\n[grid]\ntop_k = [1, 2]\n',
    'testset = "ts.jsonl"\n[pipeline]\ntarget = "x:y"\n[grid]\ntop_k = [{a = 1}, {a = 1}]\n',
    'testset = "ts.jsonl"\ngenerate = {size = "big"}\n[pipeline]\ntarget = "x:y"\n',
    'testset = "ts.jsonl"\njudge = ["a"]\n[pipeline]\ntarget = "x:y"\n',
]
HOSTILE_YAML = [
    "- a\n- b\n", "name: [\n", "&a [*a]\n", "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "name: t\ntestset: ts.jsonl\npipeline: {target: x:y}\ngrid: {top_k: null}\n",
    "name: t\ntestset: ts.jsonl\npipeline: {target: x:y}\nconfigurations: [1, 2]\n",
    "name: t\ntestset: ts.jsonl\npipeline: [1]\n",
    "name: t\ntestset: ts.jsonl\npipeline: {target: x:y}\n? [1, 2]\n: 3\n",
]


@pytest.mark.parametrize("text", HOSTILE_TOML + HOSTILE_YAML + [b"\xff\xfe name = 1"])
def test_hostile_sweep_files_end_in_clean_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str | bytes
) -> None:
    if isinstance(text, str) and text in HOSTILE_YAML:
        pytest.importorskip("yaml")
    world(tmp_path, monkeypatch)
    path = tmp_path / ("s.yaml" if isinstance(text, str) and text in HOSTILE_YAML else "s.toml")
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, printed = run(["sweep", str(path), "--dry-run", "--store", "s.db"], capsys)
    assert code == 2, printed
    assert "Traceback" not in printed and printed.startswith("error: "), printed
