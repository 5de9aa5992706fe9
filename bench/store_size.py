"""Bytes per sample of the run store, on the benchmark kit with the seven metrics.

    .venv/bin/python bench/store_size.py                  # the kit's 20 samples, and 200 (copies)
    .venv/bin/python bench/store_size.py --n 20 --keep /tmp/kit20.db

Runs ``ragsight.evaluate`` with its defaults (the cache on, a store file) against the kit's
OpenAI-compatible mock at 0 ms (``shared/bench/mock_openai.py``, run with ``--mock-python``,
default ``.venv-ragas/bin/python``), the seven metrics, on the kit's ``airline_20.jsonl``; with
``--n`` above 20 the samples are repeated, each copy marked (" (case i)" in every text) so that no
text or judge step is shared between copies: the growth per sample of a large run.

Printed: the file's size per sample (after a checkpoint of the write-ahead log), and where the
bytes are (SQLite's dbstat: pages, payload and unused bytes of each table and index). Point
PYTHONPATH at another checkout to measure its layout (the "before" figure).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import _where
from _data import SEVEN, marked_copy, read_jsonl
from _mock import started_mock

ROOT = Path(__file__).resolve().parents[1]
KIT = _where.kit()


def rows(n: int, kit: Path) -> list[dict[str, Any]]:
    base = read_jsonl(kit / "airline_20.jsonl")
    if n <= len(base):
        return base[:n]
    return [dict(base[i]) if i < len(base) else marked_copy(base[i % len(base)], i) for i in range(n)]


def breakdown(path: str) -> list[tuple[str, int, int, int]]:
    con = sqlite3.connect(path)
    try:
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in con.execute(
            "SELECT name, SUM(pgsize), SUM(payload), SUM(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC")]
    except sqlite3.OperationalError:  # an SQLite built without dbstat
        return []
    finally:
        con.close()


def measure(n: int, base_url: str, keep: str | None) -> dict[str, Any]:
    import ragsight

    with tempfile.TemporaryDirectory(prefix="store-size-") as tmp:
        path = keep or os.path.join(tmp, "runs.db")
        if os.path.exists(path):
            os.remove(path)
        t0 = time.perf_counter()
        res = ragsight.evaluate(rows(n, KIT), SEVEN, embedder="openai:mock-embed", store=path,
                                judge=ragsight.JudgeSpec("openai:mock", base_url=base_url),
                                options=ragsight.RunOptions(preflight=False))
        wall = time.perf_counter() - t0
        assert res.status == "completed", res.status
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        schema = con.execute("PRAGMA user_version").fetchone()[0]
        con.close()
        size = os.path.getsize(path)
        parts = breakdown(path)
    return {"n": n, "bytes": size, "per_sample": size / n, "schema": schema, "wall_s": wall, "parts": parts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="*", default=[20, 200], help="samples (default 20 200)")
    ap.add_argument("--mock-python", default=str(ROOT / ".venv-ragas" / "bin" / "python"))
    ap.add_argument("--keep", default=None, help="write the (last) store here instead of a temporary file")
    args = ap.parse_args()
    import ragsight

    with started_mock(KIT, args.mock_python) as mock:
        mock.control(run="store-size", latency_ms=0, embed_latency_ms=0)
        print(f"ragsight {ragsight.__version__} from {Path(ragsight.__file__).parent}; seven metrics, "
              f"cache on, the kit's mock at 0 ms")
        for n in args.n:
            m = measure(n, mock.url + "/v1", args.keep)
            print(f"\n{n} samples: store schema {m['schema']}, {m['bytes'] / 1e3:,.0f} kB, "
                  f"**{m['per_sample'] / 1e3:.1f} kB per sample** ({m['wall_s']:.1f} s)")
            if m["parts"]:
                print("| table or index | kB | per sample | payload kB | unused kB |")
                print("|---|---|---|---|---|")
                for name, pg, payload, unused in m["parts"]:
                    print(f"| {name} | {pg / 1e3:,.1f} | {pg / n:,.0f} B | {payload / 1e3:,.1f} | {unused / 1e3:,.1f} |")


if __name__ == "__main__":
    main()
