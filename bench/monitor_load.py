"""``ragsight monitor`` under load: requests accepted per second, the OTLP exporter's POST
latency (p50, p99) while the sampled requests are judged, and the monitor's memory over many
requests.

    .venv/bin/python bench/monitor_load.py --requests 100000 --sample 0.01
    .venv/bin/python bench/monitor_load.py --requests 20000 --sample 0 (receive only: the baseline)

The monitor runs as the command line does (``ragsight monitor``, a process of its own, on
127.0.0.1), judged by the kit's OpenAI-compatible mock (``mock_openai.py``, run with
``--mock-python``, which has aiohttp and tiktoken), at ``--sample`` of the requests with
faithfulness. The load: ``--senders`` threads, each with the OpenTelemetry SDK's OTLP/HTTP
exporter (protobuf, gzip), each POST holding ``--per-post`` RAG requests of three spans (a
CHAIN, a RETRIEVER with three documents, an LLM span) as a BatchSpanProcessor sends them. The
monitor's resident memory (``VmRSS``) is read every ``--every`` requests. Every figure is
under whatever else the machine runs; the load generator shares the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _where
from _mock import free_port, started_mock

ROOT = Path(__file__).resolve().parent.parent


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_spans(n: int, seed: int) -> list[Any]:
    """``n`` RAG requests of three ended spans each, made with the SDK's tracer."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

    got: list[ReadableSpan] = []

    class Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            got.append(span)

    provider = TracerProvider()
    provider.add_span_processor(Keep())
    tracer = provider.get_tracer("load")
    for i in range(n):
        q = f"What is the refund window for order {seed}-{i}?"
        a = "Refunds are accepted within 30 days of purchase. Keep the receipt."
        with tracer.start_as_current_span("rag", attributes={"openinference.span.kind": "CHAIN", "input.value": q,
                                                            "output.value": a}):
            attrs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": q}
            for d in range(3):
                attrs[f"retrieval.documents.{d}.document.content"] = f"Policy {d}: refunds within 30 days, receipt needed."
                attrs[f"retrieval.documents.{d}.document.id"] = f"doc-{d}"
            with tracer.start_as_current_span("retrieve", attributes=attrs):
                pass
            with tracer.start_as_current_span("llm", attributes={"openinference.span.kind": "LLM",
                                                                "llm.output_messages.0.message.content": a}):
                pass
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--sample", type=float, default=0.01)
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--per-post", type=int, default=10, help="RAG requests per POST (3 spans each)")
    ap.add_argument("--every", type=int, default=10_000, help="read the monitor's memory every N requests")
    ap.add_argument("--mock-python", default=str(ROOT / ".venv-ragas" / "bin" / "python"))
    ap.add_argument("--store", help="the store (default: a new temporary file)")
    args = ap.parse_args()
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    chunk = 2_000  # requests made at a time (spans are made ahead, outside the timed sends)
    store = args.store or str(Path(tempfile.mkdtemp(prefix="monitor-load-")) / "load.db")
    port = free_port()
    with started_mock(_where.kit(), args.mock_python) as mock:
        cmd = [sys.executable, "-m", "ragsight.cli", "monitor", "--otlp", f"127.0.0.1:{port}", "--store", store,
               "--sample", str(args.sample), "--metrics", "faithfulness", "--judge", "openai:gpt-4o-mini",
               "--base-url", mock.url + "/v1", "--embedder", "openai:text-embedding-3-small", "--settle", "1",
               "--batch-size", "32"]
        env = dict(os.environ, OPENAI_API_KEY="sk-mock", PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "receiving" not in line:
            proc.kill()
            print(line, proc.stderr.read() if proc.stderr else "", file=sys.stderr)
            return 2
        latencies: list[float] = []
        failed = 0
        memory: list[tuple[int, float]] = [(0, rss_mb(proc.pid))]
        lock = threading.Lock()
        sent = 0
        started = time.perf_counter()
        busy = 0.0
        try:
            while sent < args.requests:
                n = min(chunk, args.requests - sent)
                spans = make_spans(n, sent)
                posts = [spans[i:i + 3 * args.per_post] for i in range(0, len(spans), 3 * args.per_post)]
                todo = iter(posts)

                def sender(todo: Any = todo) -> None:
                    nonlocal failed
                    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces",
                                                compression=Compression.Gzip, timeout=30)
                    while True:
                        with lock:
                            batch = next(todo, None)
                        if batch is None:
                            return
                        t0 = time.perf_counter()
                        ok = exporter.export(batch) == SpanExportResult.SUCCESS
                        took = time.perf_counter() - t0
                        with lock:
                            latencies.append(took)
                            failed += 0 if ok else 1

                t0 = time.perf_counter()
                threads = [threading.Thread(target=sender) for _ in range(args.senders)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                busy += time.perf_counter() - t0
                before = sent
                sent += n
                if sent // args.every > before // args.every or sent == args.requests:
                    memory.append((sent, rss_mb(proc.pid)))
        finally:
            wall = time.perf_counter() - started
            status = subprocess.run([sys.executable, "-m", "ragsight.cli", "monitor", "status", "--store", store,
                                     "--json"], capture_output=True, text=True, env=env)
            proc.terminate()
            proc.communicate(timeout=120)
    import json

    s = json.loads(status.stdout) if status.returncode == 0 else {}
    lat = sorted(latencies)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
    print(f"requests sent {sent:,} ({3 * sent:,} spans) in {len(lat):,} POSTs of {args.per_post} requests, "
          f"{args.senders} senders; failed POSTs {failed}")
    print(f"accepted per second while sending: {sent / busy:,.0f} requests ({3 * sent / busy:,.0f} spans); "
          f"wall {wall:.1f} s")
    print(f"exporter POST latency: p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {lat[-1] * 1000:.1f} ms, "
          f"mean {statistics.fmean(lat) * 1000:.1f} ms")
    print("monitor memory (VmRSS) by requests sent: " + ", ".join(f"{n:,}: {m:.0f} MB" for n, m in memory))
    if s:
        print(f"monitor status at the end: received {s['received']:,}, sampled {s['sampled']:,}, evaluated "
              f"{s['evaluated']:,}, pending {s['pending']:,}, not evaluated {s['not_evaluated']:,}, open {s['open']:,}")
    print(f"store {store}: {os.path.getsize(store) / 1e6:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
