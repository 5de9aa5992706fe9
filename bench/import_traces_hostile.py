"""``ragsight import-traces`` on hostile exports, and its time on long span chains.

    .venv/bin/python bench/import_traces_hostile.py              # the corpus, then 1,000 and 10,000 spans
    .venv/bin/python bench/import_traces_hostile.py --chain 100000
    .venv/bin/python bench/import_traces_hostile.py --fuzz 3000     # and 3,000 mutated exports

The corpus is the one of ``tests/reliability/test_import_traces_hostile.py`` (span parent loops,
bytes that are not UTF-8, JSON nested thousands deep, numbers out of range, OTLP fields of the
wrong type, lone surrogates): each file is run through the command line as a user runs it
(``ragsight import-traces FILE --out samples.jsonl``) and counted as a clean import (exit 0),
a clean error (exit 2, one line) or a traceback. The chain is one trace whose spans form one
parent chain (an HTTP span, CHAIN spans, the RETRIEVER at the bottom): the shape whose import
was cubic in the number of spans. ``--fuzz N`` also imports N exports mutated at random (seeded):
half with JSON values replaced by values of the wrong kind (null, lists, NaN, 1e400, 5,000-digit
integers, lone surrogates, malformed OTLP values), half with bytes changed, cut or inserted
(brackets thousands deep, bytes that are not UTF-8), and counts the tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.test_import_traces_hostile import (
    CASES,
    TID,
    chain,
    jsonl,
    langfuse,
    lf_lines,
    otlp,
    otlp_doc,
    otlp_rag,
    rag,
    span,
)

from ragsight.cli import main
from ragsight.errors import InputError
from ragsight.integrations import import_traces, traces_from_records


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


WRONG = [None, [], {}, "", "x", 0, -1, 1.5, float("nan"), float("inf"), True, [None], {"a": None}, "\ud800",
         10**4000, "0x", {"stringValue": None}, {"arrayValue": None}, {"kvlistValue": {"values": [{"key": "k"}]}},
         {"arrayValue": {"values": [{"kvlistValue": 3}]}}, [[[]]], '{"a": NaN}', "[1,2", "9" * 5000]
INSERTS = [b"[", b"{", b"NaN", b"1e400", b"\\ud800", b"\xff", b"\n", b"null", b"9" * 5000, b"[" * 3000]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _written(rows: list[dict[str, Any]], messages: list[str]) -> None:
    # what the command writes and prints: strict JSON, UTF-8 (raises otherwise)
    for row in rows:
        json.dumps(row, allow_nan=False, ensure_ascii=False).encode("utf-8")
    for message in messages:
        message.encode("utf-8")


def fuzz(folder: Path, n: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    values: list[tuple[str, list[Any]]] = [
        ("spans", [*rag(TID), span(TID, 3, 1, "LLM", {"llm.output_messages.0.message.content": "a"})]),
        ("otlp", [otlp(otlp_rag())]), ("langfuse", [langfuse("t1"), langfuse("t2", sessionId="s")]),
        ("auto", [langfuse("t1", sessionId="s"), langfuse("t2", sessionId="s")])]
    files = [jsonl(rag(TID)), otlp_doc(otlp(otlp_rag())), lf_lines(langfuse("t1")),
             json.dumps(otlp(otlp_rag()), indent=2).encode()]
    crashes = 0
    src = folder / "fuzz.json"
    for i in range(n):
        try:
            if i % 2 == 0:
                fmt, base = rnd.choice(values)
                data: Any = copy.deepcopy(base)
                for _ in range(rnd.randint(1, 4)):
                    where = rnd.choice(_paths(data))
                    new = copy.deepcopy(rnd.choice(WRONG))
                    if not where:
                        data = new
                        continue
                    holder = data
                    for k in where[:-1]:
                        holder = holder[k]
                    holder[where[-1]] = new
                got = traces_from_records(data if isinstance(data, list) else [data], fmt)
            else:
                raw = bytearray(rnd.choice(files))
                for _ in range(rnd.randint(1, 6)):
                    at, op = rnd.randrange(max(1, len(raw))), rnd.random()
                    if op < 0.3 and raw:
                        raw[min(at, len(raw) - 1)] = rnd.randrange(256)
                    elif op < 0.5:
                        del raw[at:at + rnd.randint(1, 20)]
                    elif op < 0.7:
                        raw[at:at] = rnd.choice(INSERTS)
                    else:
                        del raw[at:]
                src.write_bytes(bytes(raw))
                got = import_traces(src)
            _written(got.rows, [str(p) for p in got.problems])
        except InputError as exc:
            str(exc).encode("utf-8")
        except Exception:
            crashes += 1
            if crashes <= 3:
                traceback.print_exc()
    print(f"{n:,} mutated exports (seed {seed}): {crashes} tracebacks")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chain", type=int, action="append", help="a chain length (repeat; default 1,000 and 10,000)")
    parser.add_argument("--fuzz", type=int, default=0, help="also import this many exports mutated at random")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus(folder)
        chains(folder, args.chain or [1_000, 10_000])
        if args.fuzz:
            fuzz(folder, args.fuzz, args.seed)


if __name__ == "__main__":
    cli()
