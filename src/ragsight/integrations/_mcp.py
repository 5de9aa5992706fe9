"""The tools an MCP server offers, read with the official ``mcp`` SDK (``pip install
'ragsight[agents]'``), so that the agent metrics know what the agent could call.

``--tools-from`` (``ragsight evaluate``) and :func:`tools_from` take:

- ``mcp:stdio:COMMAND ARGS...``: start the server as a subprocess (the command split as a shell
  would, nothing run through a shell) and read its ``tools/list`` over stdin/stdout; the server
  is stopped afterwards;
- ``mcp:http://HOST/PATH`` or ``mcp:https://...``: a running server over streamable HTTP;
- ``FILE.json``: a tools list in any shape :mod:`ragsight.dataset` reads (OpenAI or Anthropic
  request tools, an MCP ``tools/list`` result).

Each tool of a server is named with the server (its ``serverInfo.name`` from the handshake), so
the trail of a call names the server whose tool it used. Every page of a paginated listing is
read. The mcp SDK is imported when a server is read, never at ``import ragsight``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..dataset import FieldError, ToolSpec, read_tools
from ..errors import ConfigError, MissingExtraError

__all__ = ["MCP_TIMEOUT_S", "alist_mcp_tools", "list_mcp_tools", "tools_from"]

MCP_TIMEOUT_S = 60.0  # the handshake and the whole listing must finish within this
_MAX_PAGES = 1000  # a server that pages forever is not a tool list


def _client() -> Any:
    try:
        import mcp
    except ImportError as exc:
        raise MissingExtraError("reading an MCP server's tools (--tools-from mcp:...)", "agents", "mcp") from exc
    return mcp


async def _list(session: Any) -> tuple[str | None, list[Any]]:
    init = await session.initialize()
    info = getattr(init, "server_info", None) or getattr(init, "serverInfo", None)
    server = getattr(info, "name", None) if info is not None else None
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        if cursor is None:
            page = await session.list_tools()
        else:
            from mcp import types

            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if not cursor:
            return server, tools
    raise ConfigError(f"the MCP server '{server}' listed more than {_MAX_PAGES} pages of tools; not read")


def _specs(server: str | None, tools: Sequence[Any], where: str) -> tuple[ToolSpec, ...]:
    dumped = [t.model_dump(by_alias=True, exclude_none=True) if hasattr(t, "model_dump") else t for t in tools]
    try:
        return read_tools(dumped, where, server or None)
    except FieldError as exc:
        raise ConfigError(f"{where}: {exc.message}") from None


async def alist_mcp_tools(target: str, timeout: float = MCP_TIMEOUT_S) -> tuple[ToolSpec, ...]:
    """The tools of the MCP server ``target``: ``stdio:COMMAND ARGS...`` or an ``http(s)://`` URL
    (streamable HTTP). ConfigError when the server cannot be started, reached or read."""
    mcp = _client()
    import anyio

    where = f"MCP server '{target}'"
    try:
        with anyio.fail_after(timeout):
            if target.startswith("stdio:"):
                argv = shlex.split(target[len("stdio:"):])
                if not argv:
                    raise ConfigError("--tools-from mcp:stdio: needs the command that starts the server, "
                                      "e.g. mcp:stdio:'python server.py'")
                params = mcp.StdioServerParameters(command=argv[0], args=argv[1:])
                async with mcp.stdio_client(params) as (read, write), mcp.ClientSession(read, write) as session:
                    server, tools = await _list(session)
            elif target.startswith(("http://", "https://")):
                from mcp.client.streamable_http import streamable_http_client

                async with streamable_http_client(target) as streams, \
                        mcp.ClientSession(streams[0], streams[1]) as session:
                    server, tools = await _list(session)
            else:
                raise ConfigError(f"cannot read the MCP server '{target}': give mcp:stdio:COMMAND or "
                                  "mcp:http(s)://URL")
    except TimeoutError:
        raise ConfigError(f"{where} did not list its tools within {timeout:g} s") from None
    except ConfigError:
        raise
    except Exception as exc:  # the SDK's errors, OSError for a command not found, ...
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"{where} could not be read: {detail}") from None
    return _specs(server, tools, where)


def list_mcp_tools(target: str, timeout: float = MCP_TIMEOUT_S) -> tuple[ToolSpec, ...]:
    """:func:`alist_mcp_tools`, from synchronous code."""
    import anyio

    _client()
    result: tuple[ToolSpec, ...] = anyio.run(lambda: alist_mcp_tools(target, timeout))
    return result


def tools_from(spec: str) -> tuple[ToolSpec, ...]:
    """The tools ``spec`` names (the module docstring): an MCP server or a JSON file."""
    text = spec.strip()
    if text.startswith("mcp:"):
        return list_mcp_tools(text[len("mcp:"):])
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"--tools-from '{spec}': no such file; give FILE.json, mcp:stdio:COMMAND or "
                          "mcp:http(s)://URL")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"--tools-from {spec}: not a JSON file ({exc})") from None
    try:
        return read_tools(value, path.name)
    except FieldError as exc:
        raise ConfigError(f"--tools-from {spec}: {exc.message}") from None
