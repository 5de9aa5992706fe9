"""The product speaks of itself only: no path of a developer's machine in its code, docs,
benchmarks or tests (a folder of the machine the project was built on, a user's home)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# built from parts so that this file does not match itself
PATTERN = re.compile("|".join([
    "/" + "work/(?:main|shared|cache|wt|helpers|scratch)",
    "/" + "root/",
    "/" + "home/[a-z][a-z0-9_-]*/",
    "/" + "tmp/bash_jobs",
]))
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".sh", ".yml", ".yaml", ".json", ".sql", ".html", ".js", ".css"}


def files() -> list[Path]:
    out = [ROOT / "README.md"]
    for top in ("src", "docs", "bench", "tests", "scripts", ".ci"):
        base = ROOT / top
        if base.is_dir():
            out += [p for p in base.rglob("*") if p.is_file() and (p.suffix in SUFFIXES or top == ".ci")
                    and ".venv" not in p.parts and "__pycache__" not in p.parts]
    return out


def test_no_developer_machine_path_anywhere() -> None:
    found = []
    for path in files():
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not found, "paths of a developer's machine:\n" + "\n".join(found)
