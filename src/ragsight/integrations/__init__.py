"""Doors from where RAG teams already work: production traces (OpenInference spans, Langfuse
exports) to samples; a LangChain runnable or a LlamaIndex query engine asked every question of a
test set, its retrieved documents and answer captured through the library's own callbacks; the
tools an MCP server offers (``tools_from("mcp:stdio:python server.py")``), for the agent metrics.

    imported = import_traces("spans.jsonl")                 # one sample row per RAG request
    run = answer_with_langchain(chain, "testset.jsonl")     # or answer_with_llamaindex(engine, ...)
    result = ragsight.evaluate(run.rows)

LangChain and LlamaIndex are imported only when their function is called (extras
``ragsight[langchain]``, ``ragsight[llamaindex]``); see docs/integrations/.
"""

from ._langchain import aanswer_with_langchain, answer_with_langchain
from ._llamaindex import aanswer_with_llamaindex, answer_with_llamaindex
from ._mcp import alist_mcp_tools, list_mcp_tools, tools_from
from ._pipeline import PipelineRun, PipelineWarning, testset_rows
from ._trace_common import TRACE_FORMATS, TraceImport, TraceProblem
from ._traces import import_traces, traces_from_records

__all__ = [
    "TRACE_FORMATS",
    "PipelineRun",
    "PipelineWarning",
    "TraceImport",
    "TraceProblem",
    "aanswer_with_langchain",
    "aanswer_with_llamaindex",
    "alist_mcp_tools",
    "answer_with_langchain",
    "answer_with_llamaindex",
    "import_traces",
    "list_mcp_tools",
    "testset_rows",
    "tools_from",
    "traces_from_records",
]
