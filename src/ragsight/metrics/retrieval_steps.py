"""A RAG agent's retrieval steps, each judged as a retrieval: ``retrieval_step_relevance`` reads
every retrieval call of a conversation as a query (the call's query argument) and the contexts it
returned (the call's result), scores it with ``context_relevance`` (the share of the result's
sentences relevant to the query), and averages over the steps.

Which calls retrieve: those of the tools named by ``tools`` (``retrieval_step_relevance(
tools=search_docs/lookup)``), else those whose tool's name holds ``search``, ``retriev``,
``lookup``, ``query`` or ``find``. The query is the call's first text argument named ``query``,
``q``, ``question``, ``search_query``, ``search`` or ``text``, else every text argument joined. A
retrieval call without a result (or an empty one) is listed and not scored.

Over everything retrieved in a turn, the turn-level metrics already read the steps: a turn
without contexts of its own takes the results of every call since its user message as its
contexts, so ``context_recall`` and ``context_precision`` of the turn judge them all together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..dataset import Sample, ToolCall
from ._base import Metric
from ._levels import conversation_only
from .agent_judge import Step, trajectory_steps
from .context_relevance import ContextRelevance
from .tool_calls import call_text

__all__ = ["RETRIEVAL_NAMES", "RetrievalStepRelevance", "query_of"]

RETRIEVAL_NAMES = re.compile(r"search|retriev|lookup|query|find", re.IGNORECASE)
_QUERY_KEYS = ("query", "q", "question", "search_query", "search", "text")


def query_of(call: ToolCall) -> str:
    """The query a retrieval call asked (see the module docstring); '' when it gives no text."""
    for key in _QUERY_KEYS:
        value = call.args.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return " ".join(" ".join(v.split()) for v in call.args.values() if isinstance(v, str) and v.strip())


class RetrievalStepRelevance(Metric):
    name = "retrieval_step_relevance"
    level = "conversation"
    needs_judge = True
    groups = frozenset({"agent"})

    def __init__(self, key: str | None = None, tools: str | tuple[Any, ...] | None = None) -> None:
        super().__init__(key)
        names = tools if isinstance(tools, tuple) else (() if tools is None else (tools,))
        self.tools = tuple(str(n).strip() for n in names if str(n).strip())

    def params(self) -> dict[str, Any]:
        return {"tools": "/".join(self.tools)} if self.tools else {}

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)

    def retrieves(self, call: ToolCall) -> bool:
        name = call.name.strip()
        return name in self.tools if self.tools else RETRIEVAL_NAMES.search(name) is not None

    async def compute(self, ctx: SampleAnalyses) -> Score:
        _, steps = trajectory_steps(ctx.sample.history or ())
        picked: Sequence[Step] = [s for s in steps if self.retrieves(s.call)]
        which = f"of the tools {', '.join(self.tools)}" if self.tools else "of a search or retrieval tool"
        if not picked:
            return Score.undetermined(self.key, f"no retrieval call ({which}) was made",
                                      Evidence(details={"calls": len(steps), "steps": []}))
        rows: list[dict[str, Any]] = []
        refs: list[Any] = []
        inner = ContextRelevance()
        for s in picked:
            query = query_of(s.call) or s.request
            row: dict[str, Any] = {"call": s.index, "made": call_text(s.call), "turn": s.turn, "query": query}
            result = s.result.content.strip() if s.result is not None else ""
            if not result or not query:
                row.update(value=None, note="no result" if not result else "no query")
                rows.append(row)
                continue
            step = Sample(id=f"{ctx.sample.id}#call{s.index}", question=query, contexts=(result,))
            got = await inner.compute(SampleAnalyses(step, ctx.judge, ctx.embedder, ctx.settings))
            refs.extend(got.evidence.calls)
            row.update(value=got.value, outcome=got.outcome.value, reason=got.reason,
                       sentences=got.evidence.details.get("sentences", []))
            rows.append(row)
        scored = [r["value"] for r in rows if isinstance(r.get("value"), float)]
        ev = Evidence(details={"calls": len(steps), "retrieval_calls": len(picked), "steps": rows}, calls=tuple(refs))
        if not scored:
            return Score.undetermined(self.key, f"none of the {len(picked)} retrieval calls has a result and a "
                                      "query to judge", ev)
        value = sum(scored) / len(scored)
        low = min((r for r in rows if isinstance(r.get("value"), float)), key=lambda r: r["value"])
        return Score.scored(self.key, value, f"mean relevance of {len(scored)} retrieval step"
                            f"{'s' if len(scored) != 1 else ''} to their queries; lowest {low['value']:.2f}: "
                            f"{low['made']}", ev)
