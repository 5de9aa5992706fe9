"""A real LangChain pipeline instrumented with OpenInference's instrumentation, or OpenLLMetry's,
exporting through the real OTLP/HTTP exporter to the monitor: the example of docs/monitor.md,
offline (a fake retriever and a fake chat model from langchain-core)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragsight.judge import Judge, JudgeSpec
from ragsight.monitor import EvalSettings, Monitor, MonitorConfig
from ragsight.store import Store
from tests.fakes.scripted_world import provider
from tests.integration.monitor_world import status_json, wait_for


class Handbook(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content="Refunds are accepted within 30 days of purchase.", id="refunds"),
                Document(page_content="Seat changes are free online.", id="seats")]


def instrumentor(kind: str) -> Any:
    if kind == "openinference":
        oi = pytest.importorskip("openinference.instrumentation.langchain")
        return oi.LangChainInstrumentor()
    ollm = pytest.importorskip("opentelemetry.instrumentation.langchain")
    return ollm.LangchainInstrumentor()


@pytest.mark.parametrize("kind", ["openinference", "openllmetry"])
def test_a_langchain_pipeline_instrumented_for_opentelemetry_is_monitored(tmp_path: Path, kind: str) -> None:
    store = str(tmp_path / "prod.db")
    m = Monitor(MonitorConfig(store=store, port=0, settle_s=0.3, tick_s=0.05, evaluation=EvalSettings(
        metrics=["faithfulness"], judge=JudgeSpec(Judge(provider())), poll_s=0.05)))
    m.start()
    tracer_provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{m.port}/v1/traces")
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumented = instrumentor(kind)
    instrumented.instrument(tracer_provider=tracer_provider)
    try:
        prompt = ChatPromptTemplate.from_template("Answer from the context.\n{context}\nQuestion: {question}")
        llm: Any = FakeListChatModel(responses=["Refunds are accepted within 30 days."])
        chain = {"context": Handbook(), "question": RunnablePassthrough()} | prompt | llm
        for i in range(3):
            chain.invoke(f"How long do I have to return an item? ({i})")
        tracer_provider.force_flush()
        wait_for(lambda: status_json(store)["evaluated"] == 3, 60)
    finally:
        instrumented.uninstrument()
        tracer_provider.shutdown()
        m.stop()
    s = status_json(store)
    assert (s["received"], s["sampled"], s["evaluated"], s["skipped"]) == (3, 3, 3, 0)
    with Store(store, create=False) as st:
        run = next(r for r in st.runs() if r.metadata.get("source") == "ragsight monitor")
        sample = st.samples(run.id)[0]
        assert sample.question.startswith("How long do I have to return an item?")
        assert list(sample.contexts) == ["Refunds are accepted within 30 days of purchase.",
                                         "Seat changes are free online."]
        assert sample.response == "Refunds are accepted within 30 days."
        assert sample.metadata["retriever_span_ids"]
        assert sample.metadata["trace_id"] == sample.id
