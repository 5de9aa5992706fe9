"""The tools an agent had available: read from the data in the shapes other tools write, kept
on the conversation as ``metadata["tools"]`` (so the turn samples and a stored, resumed run
carry them), one ``{"name", "description", "parameters", "server"}`` object per tool.

Shapes read (a list of tools, or an object holding one under ``tools``):

- OpenAI Chat Completions request ``tools``: ``{"type": "function", "function": {"name",
  "description", "parameters"}}`` (LangChain's ``convert_to_openai_tool`` writes the same);
- OpenAI Responses request ``tools``: ``{"type": "function", "name", "description",
  "parameters"}``; a built-in tool (``{"type": "web_search"}``) is named by its type, no schema;
- Anthropic Messages request ``tools``: ``{"name", "description", "input_schema"}``;
- an MCP server's ``tools/list`` result: ``{"tools": [{"name", "description", "inputSchema"}]}``;
- DeepEval's ``mcp_servers``: ``[{"server_name", "available_tools": [MCP tools]}]``, each tool
  then named with its server;
- ragsight's own: ``{"name", "description", "parameters", "server"}``; a tool's name alone.

Any of them may be JSON text (a CSV cell).

The row's ``tools`` (or ``available_tools``) and ``mcp_servers`` fields are read so; a tool that
cannot be used raises :class:`FieldError` naming the field and the tool
(``tools[2].function.name``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ._safety import json_loads
from ._shapes import FieldError, is_missing, norm_key, row_mapping, to_plain

if TYPE_CHECKING:
    from ._dataset import Dataset

__all__ = ["TOOLS_KEY", "ToolSpec", "add_tools", "looks_failed", "read_tools", "tool_named", "tools_of", "with_tools"]

TOOLS_KEY = "tools"  # the metadata key the available tools are kept under
_ROW_KEYS = ("tools", "available_tools")  # a row's fields that list tools
_SERVER_KEYS = ("mcp_servers",)  # DeepEval: servers with their tools
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema", "json_schema", "args_schema")


@dataclass(frozen=True)
class ToolSpec:
    """A tool an agent could call: its name, what it is for, the JSON Schema of its arguments
    (None when the data gives none) and the MCP server that offers it (None: not an MCP tool)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    server: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        if self.server is not None:
            out["server"] = self.server
        return out


def _as_map(value: Any) -> Mapping[str, Any] | None:
    value = to_plain(value)
    return value if isinstance(value, Mapping) else row_mapping(value)


def _tool(item: Any, where: str, server: str | None) -> ToolSpec:
    if isinstance(item, str) and item.strip():  # a list of tool names
        return ToolSpec(item.strip(), server=server)
    m = _as_map(item)
    if m is None:
        raise FieldError(where, f"'{where}': a tool must be an object with a name, got {type(item).__name__}.")
    fn = _as_map(m.get("function")) if m.get("function") is not None else None
    src, at = (fn, f"{where}.function") if fn is not None else (m, where)
    name = src.get("name")
    if name is None and isinstance(m.get("type"), str) and m["type"] != "function":
        name = m["type"]  # a provider's built-in tool ({"type": "web_search"})
    if not isinstance(name, str) or not name.strip():
        raise FieldError(f"{at}.name", f"'{at}.name': a tool has no name.")
    desc = src.get("description")
    if desc is not None and not isinstance(desc, str):
        raise FieldError(f"{at}.description", f"'{at}.description' must be text.")
    key = next((k for k in _SCHEMA_KEYS if k in src and not is_missing(src[k])), None)
    schema = None
    if key is not None:
        schema = _as_map(src[key])
        if schema is None:
            raise FieldError(f"{at}.{key}", f"'{at}.{key}' must be a JSON Schema object (the tool "
                             f"'{name.strip()}' takes its arguments by it).")
        schema = dict(schema)
    own = src.get("server")
    return ToolSpec(name.strip(), (desc or "").strip(), schema, own if isinstance(own, str) and own else server)


def read_tools(value: Any, field: str = "tools", server: str | None = None) -> tuple[ToolSpec, ...]:
    """The tools of one field's value (any shape of the module docstring). FieldError names the
    field and the tool that cannot be used."""
    value = to_plain(value)
    if isinstance(value, str) and value.strip()[:1] in "[{":  # JSON text (a CSV cell)
        with contextlib.suppress(ValueError, RecursionError):
            value = json_loads(value)
    if isinstance(value, Mapping) and "tools" in value:  # an MCP tools/list result
        return read_tools(value["tools"], f"{field}.tools", server)
    if not isinstance(value, (list, tuple)):
        raise FieldError(field, f"'{field}' must be a list of tool definitions, got {type(value).__name__}.")
    return tuple(_tool(item, f"{field}[{i}]", server) for i, item in enumerate(value))


def _servers(value: Any, field: str) -> list[ToolSpec]:
    value = to_plain(value)
    if not isinstance(value, (list, tuple)):
        raise FieldError(field, f"'{field}' must be a list of MCP servers, got {type(value).__name__}.")
    out: list[ToolSpec] = []
    for i, item in enumerate(value):
        m = _as_map(item)
        where = f"{field}[{i}]"
        if m is None:
            raise FieldError(where, f"'{where}': an MCP server must be an object with server_name and available_tools.")
        name = m.get("server_name") or m.get("name")
        if not isinstance(name, str) or not name.strip():
            raise FieldError(f"{where}.server_name", f"'{where}.server_name': an MCP server has no name.")
        tools = m.get("available_tools")
        if tools is not None and not is_missing(tools):
            out.extend(read_tools(tools, f"{where}.available_tools", name.strip()))
    return out


def with_tools(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with the tools its ``tools`` / ``available_tools`` / ``mcp_servers`` fields
    list read into ``metadata["tools"]`` (the other two fields removed); unchanged when it has
    none. A tool named twice is kept once (the first). FieldError for a tool that cannot be used."""
    keys = {norm_key(k): k for k in metadata}
    found = [(keys[k], False) for k in _ROW_KEYS if k in keys] + [(keys[k], True) for k in _SERVER_KEYS if k in keys]
    if not found:
        return dict(metadata)
    tools: list[ToolSpec] = []
    for key, servers in found:
        value = to_plain(metadata[key])
        if value is None or (not isinstance(value, (list, tuple, Mapping)) and is_missing(value)):
            continue
        tools.extend(_servers(value, str(key)) if servers else read_tools(value, str(key)))
    seen: dict[tuple[str | None, str], ToolSpec] = {}
    for t in tools:
        seen.setdefault((t.server, t.name), t)
    out = {k: v for k, v in metadata.items() if k not in {key for key, _ in found}}
    out[TOOLS_KEY] = [t.to_dict() for t in seen.values()]
    return out


def tools_of(obj: Any) -> tuple[ToolSpec, ...] | None:
    """The available tools of a sample or conversation (its ``metadata["tools"]``), or None when
    the data gives none. Read again on each call; a value that is not a list of tools is None."""
    meta = obj if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    if not isinstance(meta, Mapping) or meta.get(TOOLS_KEY) is None:
        return None
    try:
        return read_tools(meta[TOOLS_KEY])
    except FieldError:
        return None


_ERROR_TEXT = re.compile(r"^\s*[\[{(\"']*\s*(error|exception|traceback|failed|failure)\b", re.IGNORECASE)


def looks_failed(content: str) -> bool:
    """Whether a tool's result reads as a failure: it begins with ``Error``, ``Exception``,
    ``Traceback``, ``Failed`` / ``Failure``, or is a JSON object whose ``error`` (or MCP's
    ``isError``) is set. Used when the data does not mark the result (Turn.is_error)."""
    text = content.strip()
    if text.startswith("{"):
        try:
            got = json.loads(text)
        except (ValueError, RecursionError):
            got = None
        if isinstance(got, Mapping):
            return bool(got.get("isError")) or got.get("error") not in (None, "", False, {}, [])
    return _ERROR_TEXT.match(content) is not None


def tool_named(tools: Sequence[ToolSpec] | None, name: str) -> ToolSpec | None:
    """The tool a call of ``name`` used (the first listed), or None when none is named so."""
    return next((t for t in tools or () if t.name == name), None)




def add_tools(dataset: Dataset, tools: Sequence[ToolSpec]) -> Dataset:
    """The data set with ``tools`` added to the available tools of every sample of a conversation
    (after the tools its own data lists; a tool already listed, by server and name, is kept once);
    single-turn samples, which make no calls, are left as they are."""
    from ._dataset import Dataset

    if not tools:
        return dataset
    extra = [t.to_dict() for t in tools]
    out = []
    for s in dataset.samples:
        if s.conversation_id is None:
            out.append(s)
            continue
        own = tools_of(s) or ()
        have = {(t.server, t.name) for t in own}
        merged = [t.to_dict() for t in own] + [d for t, d in zip(tools, extra) if (t.server, t.name) not in have]
        out.append(replace(s, metadata={**s.metadata, TOOLS_KEY: merged}))
    copy = Dataset(out, dataset.problems, dataset.source)
    copy.sources, copy.misnamed, copy.columns = dataset.sources, dataset.misnamed, dataset.columns
    return copy
