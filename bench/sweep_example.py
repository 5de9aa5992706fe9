"""Time ``ragsight sweep --example`` from a fresh store, and screenshot its HTML report.

    nice -n 10 .venv/bin/python bench/sweep_example.py [--store DIR] [--screenshot docs/img/sweep-report.png]

Runs the command exactly as docs/sweep.md shows it (the bundled handbook, 2 chunk sizes x 2 top-k
x {dense, RAG-fusion}, the embedded generator and judge), in a new store, and prints: the wall
time, the load average before and after (the machine is shared: the time depends on the load,
the calls and tokens do not), the generator and judge calls and tokens from the store, and the
time of a second run over the same store (everything reused). With ``--screenshot``, headless
Chromium (/usr/bin/chromium) renders the report to a PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(store: Path, html: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the command, its output)."""
    cmd = [sys.executable, "-m", "ragsight.cli", "sweep", "--example", "--store", str(store), "--report", str(html)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took, cpu, proc.stdout + proc.stderr


def spend(store: Path) -> dict[str, float]:
    con = sqlite3.connect(store)
    out: dict[str, float] = {"runs": 0, "judge_calls": 0, "judge_prompt_tokens": 0, "judge_completion_tokens": 0}
    for (stats,) in con.execute("SELECT stats FROM runs"):
        s = json.loads(stats)
        out["runs"] += 1
        out["judge_calls"] += s.get("calls", 0)
        out["judge_prompt_tokens"] += s.get("prompt_tokens", 0)
        out["judge_completion_tokens"] += s.get("completion_tokens", 0)
    gen_calls = gen_p = gen_c = 0
    for (entry,) in con.execute("SELECT entry FROM cache WHERE key LIKE 'pipeline/cost/%'"):
        e = json.loads(entry)
        gen_calls += 1
        gen_p += e.get("prompt_tokens", 0)
        gen_c += e.get("completion_tokens", 0)
    out.update(generator_steps=gen_calls, generator_prompt_tokens=gen_p, generator_completion_tokens=gen_c)
    return out


def screenshot(html: Path, png: Path) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", "--window-size=1280,2400",
                        f"--screenshot={png}", html.as_uri()], check=True, capture_output=True, timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", help="folder for the store and report (default: a temporary one)")
    ap.add_argument("--screenshot", help="write a PNG of the report here")
    args = ap.parse_args()
    folder = Path(args.store or tempfile.mkdtemp(prefix="sweep-example-"))
    folder.mkdir(parents=True, exist_ok=True)
    store, html = folder / "sweep.db", folder / "sweep.html"
    for p in folder.glob("sweep.db*"):
        p.unlink()
    print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()}")
    took, cpu, output = run(store, html)
    print(f"first run: {took:.1f} s wall (limit 600 s: {'PASS' if took <= 600 else 'FAIL'}), {cpu:.1f} s of "
          f"CPU (both cores' time added: a lower bound of the wall time on an idle 2-core machine is "
          f"{cpu / 2:.0f} s); load average after: {os.getloadavg()}")
    for k, v in spend(store).items():
        print(f"  {k}: {v:,.0f}")
    again, again_cpu, _ = run(store, html)
    print(f"second run over the same store (everything reused): {again:.1f} s wall, {again_cpu:.1f} s CPU")
    print(f"report: {html}")
    tail = [line for line in output.splitlines() if line.startswith("[")]
    print("\n".join(tail))
    if args.screenshot:
        screenshot(html, Path(args.screenshot))
        print(f"screenshot: {args.screenshot}")


if __name__ == "__main__":
    main()
