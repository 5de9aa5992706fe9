"""Peak memory of a long conversation's samples: each turn's history shared (shipped) or copied
(as before: each turn held a tuple of the messages before it).

    .venv/bin/python bench/conversation_memory.py                          # 10,000 and 40,000 messages
    .venv/bin/python bench/conversation_memory.py --sizes 10000 --dry-run   # and `evaluate --dry-run`

Each measurement runs in a fresh Python process. The data: one chat in ragsight's turn form,
``messages`` short messages (a user question, an answer with its reference, in turn). Printed per
size and way: the peak resident memory of the process (``resource.getrusage`` ``ru_maxrss``) and
the peak that Python allocated (``tracemalloc``) while ``Dataset.load`` read the file and its
samples were held; with ``--dry-run``, the peak resident memory of ``ragsight evaluate FILE
--judge openai:gpt-4o-mini --dry-run`` (its default metrics, nothing called; the whole estimate,
whose time grows with the square of the messages because each turn's prompt shows its
conversation). "copied" replaces the view of each turn's history by a tuple of its messages, which
is what ``turn_samples`` made before.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def write_chat(path: Path, messages: int) -> Path:
    turns: list[dict[str, Any]] = []
    for i in range(messages // 2):
        turns.append({"role": "user", "content": f"Question {i}: what does the warranty say about part {i}?"})
        turns.append({"role": "assistant", "content": f"Part {i} is covered for two years, see section {i}.",
                      "reference": f"Part {i} is covered for two years."})
    path.write_text(json.dumps({"conversation_id": "long", "turns": turns}) + "\n", encoding="utf-8")
    return path


def _copy_histories() -> None:
    """Each turn's history a tuple of its own, as ``turn_samples`` made it before."""
    from ragsight.dataset import _sample

    def copied(turns: Any, stop: int) -> Any:
        return tuple(turns[:stop])

    _sample.History = copied  # type: ignore[assignment,misc]


def child(mode: str, path: Path, what: str) -> dict[str, Any]:
    import resource
    import tracemalloc

    if mode == "copied":
        _copy_histories()
    t0 = time.monotonic()
    if what == "load":
        from ragsight.dataset import Dataset
        tracemalloc.start()
        samples = Dataset.load(path).samples
        traced = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        held = sum(len(s.history or ()) for s in samples)
        out: dict[str, Any] = {"samples": len(samples), "history_messages": held, "traced_mb": round(traced, 1)}
    else:
        import contextlib
        import io

        from ragsight.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["evaluate", str(path), "--judge", "openai:gpt-4o-mini", "--dry-run"])
        out = {"exit": code}
    out["seconds"] = round(time.monotonic() - t0, 1)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,40000", help="messages in the chat, comma-separated")
    ap.add_argument("--dry-run", action="store_true", help="also measure `evaluate --dry-run` (slow: minutes)")
    ap.add_argument("--modes", default="shared,copied", help="shared (shipped), copied (as before)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, path, what = args.child
        print(json.dumps(child(mode, Path(path), what)), flush=True)
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    whats = ["load", "dry-run"] if args.dry_run else ["load"]
    with tempfile.TemporaryDirectory(prefix="ragsight-conversation-memory-") as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            data = write_chat(Path(tmp) / f"chat{n}.jsonl", n)
            for what in whats:
                for mode in args.modes.split(","):
                    proc = subprocess.run([sys.executable, __file__, "--child", mode, str(data), what],
                                          env=env, capture_output=True, text=True, check=False)
                    if proc.returncode != 0:
                        print(f"{n:>7,} messages, {what}, {mode}: failed (exit {proc.returncode}): "
                              f"{proc.stderr.strip()[-500:]}", flush=True)
                        continue
                    got = json.loads(proc.stdout.strip().splitlines()[-1])
                    extra = (f", traced peak {got['traced_mb']:,.1f} MB, {got['history_messages']:,} history "
                             f"entries in {got['samples']:,} samples" if what == "load" else "")
                    print(f"{n:>7,} messages, {what:<7} {mode:<6}: peak RSS {got['peak_rss_mb']:>8,.1f} MB"
                          f"{extra}; {got['seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
