"""What the monitor's tests share: RAG requests traced with the real OpenTelemetry SDK and sent by
its real OTLP/HTTP exporter, each export's result recorded (so a test knows which spans the
monitor acknowledged), and a monitor in this process on 127.0.0.1 judged by the scripted world."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

QUESTIONS = [
    ("What is the refund window?", "Refunds are accepted within 30 days of purchase. Keep the receipt.",
     ["Refunds are accepted within 30 days of purchase with a receipt."]),
    ("Can I change my seat?", "Seats can be changed online until check-in closes. A fee may apply.",
     ["Seat changes are free online until check-in closes."]),
    ("How heavy may a cabin bag be?", "A cabin bag may weigh up to 8 kg. It must fit the sizer.",
     ["Cabin bags up to 8 kg that fit the sizer are allowed."]),
]


OPEN: list[Any] = []  # every processor made, shut down by close_all() (no socket left open)


def close_all() -> None:
    while OPEN:
        OPEN.pop().shutdown()


class Recorded(SpanProcessor):
    """Exports each span as it ends, at once, and records (trace id, span id, result)."""

    def __init__(self, exporter: OTLPSpanExporter) -> None:
        self.exporter = exporter
        self.results: list[tuple[str, str, bool]] = []
        self.lock = threading.Lock()
        self.closed = False

    def on_end(self, span: ReadableSpan) -> None:
        ok = self.exporter.export([span]) == SpanExportResult.SUCCESS
        ctx = span.get_span_context()
        with self.lock:
            self.results.append((f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", ok))

    def shutdown(self) -> None:
        if not self.closed:
            self.closed = True
            self.exporter.shutdown()

    def acknowledged(self) -> set[tuple[str, str]]:
        return {(t, s) for t, s, ok in self.results if ok}


def tracer_for(port: int, *, token: str | None = None, gzip: bool = True, timeout: float = 5.0,
               path: str = "/v1/traces") -> tuple[Any, Recorded]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}{path}", headers=headers, timeout=timeout,
                                compression=Compression.Gzip if gzip else Compression.NoCompression)
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    processor = Recorded(exporter)
    provider.add_span_processor(processor)
    OPEN.append(processor)
    return provider.get_tracer("rag-app"), processor


def rag_request(tracer: Any, question: str, answer: str, contexts: Sequence[str], session: str | None = None) -> str:
    """One RAG request in the OpenInference conventions: a CHAIN span around a RETRIEVER and an
    LLM span. Returns its trace id (hex)."""
    with tracer.start_as_current_span("rag", attributes={"openinference.span.kind": "CHAIN",
                                                        "input.value": question}) as root:
        attrs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i, text in enumerate(contexts):
            attrs[f"retrieval.documents.{i}.document.content"] = text
            attrs[f"retrieval.documents.{i}.document.id"] = f"doc-{i}"
            attrs[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span("llm", attributes={"openinference.span.kind": "LLM",
                                                            "llm.output_messages.0.message.content": answer}):
            pass
        root.set_attribute("output.value", answer)
        if session:
            root.set_attribute("session.id", session)
        return f"{root.get_span_context().trace_id:032x}"


def send_requests(tracer: Any, n: int, offset: int = 0) -> list[str]:
    out = []
    for i in range(offset, offset + n):
        q, a, c = QUESTIONS[i % len(QUESTIONS)]
        out.append(rag_request(tracer, f"{q} (#{i})", a, c))
    return out


def wait_for(check: Callable[[], bool], timeout: float = 30.0, every: float = 0.1) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(every)
    raise AssertionError(f"not reached within {timeout:g} s")


def status_json(store: str) -> dict[str, Any]:
    from ragsight.monitor import status
    from ragsight.store import Store

    with Store(store, create=False) as st:
        return json.loads(json.dumps(status(st.conn)))
