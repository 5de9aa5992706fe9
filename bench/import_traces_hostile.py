"""``ragsight import-traces`` on hostile exports, and its time on long span chains.

    .venv/bin/python bench/import_traces_hostile.py              # the corpus, then 1,000 and 10,000 spans
    .venv/bin/python bench/import_traces_hostile.py --chain 100000

The corpus is the one of ``tests/reliability/test_import_traces_hostile.py`` (span parent loops,
bytes that are not UTF-8, JSON nested thousands deep, numbers out of range, OTLP fields of the
wrong type, lone surrogates): each file is run through the command line as a user runs it
(``ragsight import-traces FILE --out samples.jsonl``) and counted as a clean import (exit 0),
a clean error (exit 2, one line) or a traceback. The chain is one trace whose spans form one
parent chain (an HTTP span, CHAIN spans, the RETRIEVER at the bottom): the shape whose import
was cubic in the number of spans.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.test_import_traces_hostile import CASES, chain

from ragsight.cli import main


def _run(args: list[str]) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | None = main(args)
        except BaseException:  # a traceback: what this counts
            traceback.print_exc(file=err)
            code = None
    return code, out.getvalue(), err.getvalue()


def corpus(folder: Path) -> None:
    imports = errors = tracebacks = 0
    for case in CASES:
        src = folder / f"{case.name}.json"
        src.write_bytes(case.content)
        code, _, err = _run(["import-traces", str(src), "--out", str(folder / f"{case.name}.samples.jsonl")])
        if code == 0:
            imports += 1
        elif code == 2 and len(err.strip().splitlines()) >= 1 and "Traceback" not in err:
            errors += 1
        else:
            tracebacks += 1
            print(f"  {case.name}: exit {code}\n{err}")
    print(f"{len(CASES)} hostile exports: {imports} clean imports, {errors} clean errors (exit 2), "
          f"{tracebacks} tracebacks")


def chains(folder: Path, sizes: list[int]) -> None:
    for n in sizes:
        src = folder / f"chain{n}.jsonl"
        src.write_bytes(chain(n))
        t0 = time.perf_counter()
        code, _, err = _run(["import-traces", str(src), "--out", str(folder / f"chain{n}.samples.jsonl")])
        took = time.perf_counter() - t0
        print(f"chain of {n:,} spans: exit {code}, {took:.2f} s ({src.stat().st_size / 1e6:.1f} MB)")
        if code != 0:
            print(err)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chain", type=int, action="append", help="a chain length (repeat; default 1,000 and 10,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus(folder)
        chains(folder, args.chain or [1_000, 10_000])


if __name__ == "__main__":
    cli()
