"""Doors from where RAG teams already work: production traces (OpenInference spans, Langfuse
exports) to samples; LangChain runnables and LlamaIndex query engines run over a test set.

    imported = import_traces("spans.jsonl")          # one sample row per RAG request
    result = ragsight.evaluate(imported.rows)

The LangChain and LlamaIndex adapters import their library only when called (extras
``ragsight[langchain]`` and ``ragsight[llamaindex]``); see docs/integrations/.
"""

from ._traces import TRACE_FORMATS, TraceImport, TraceProblem, import_traces, traces_from_records

__all__ = [
    "TRACE_FORMATS",
    "TraceImport",
    "TraceProblem",
    "import_traces",
    "traces_from_records",
]
