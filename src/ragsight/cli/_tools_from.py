"""``--tools-from``: the tools the agent had, read from an MCP server or a JSON file and added to
every conversation of the data (see ragsight.integrations.tools_from)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dataset import Dataset, ToolSpec, add_tools
from ..errors import ConfigError
from ..integrations import tools_from

__all__ = ["TOOLS_FROM_HELP", "with_tools_from"]

TOOLS_FROM_HELP = ("the tools the agent had, for the agent metrics: mcp:stdio:'COMMAND ARGS' (an MCP server "
                   "started for its tools/list), mcp:http://HOST/PATH (streamable HTTP) or FILE.json (OpenAI, "
                   "Anthropic or MCP tool definitions); added to every conversation's own tools; repeatable")


def with_tools_from(data: Any, specs: Sequence[str], resume: str | None, notice: Any) -> Any:
    """``data`` as a Dataset whose conversations have the tools of ``specs`` (unchanged without
    specs). ConfigError with --resume: a stored run keeps the tools it was evaluated with."""
    if not specs:
        return data
    if resume:
        raise ConfigError("--tools-from cannot change a resumed run: its stored samples keep the tools they were "
                          "evaluated with; start a new run to add tools")
    tools: list[ToolSpec] = []
    for spec in specs:
        got = tools_from(spec)
        servers = sorted({t.server for t in got if t.server})
        notice(f"--tools-from {spec}: {len(got)} tool{'s' if len(got) != 1 else ''}"
               + (f" of MCP server {', '.join(servers)}" if servers else "")
               + (f" ({', '.join(t.name for t in got[:8])}{', ...' if len(got) > 8 else ''})" if got else ""))
        tools.extend(got)
    ds = add_tools(Dataset.load(data), tools)
    if not any(s.conversation_id is not None for s in ds.samples):
        notice("--tools-from: the data has no conversation, so no sample makes a call; the tools are not used")
    return ds
