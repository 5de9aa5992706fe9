"""An MCP server's tools read with the official mcp SDK: a small server written with the SDK's own
MCPServer, started by the test over stdio (and over streamable HTTP on 127.0.0.1), its tools/list
read by ``tools_from`` and by ``ragsight evaluate --tools-from``, then used by
tool_argument_validity with the server named in the trail. Offline."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragsight.cli import main
from ragsight.errors import ConfigError, MissingExtraError
from ragsight.integrations import tools_from

pytest.importorskip("mcp.server.mcpserver", reason="the mcp SDK (ragsight[agents])")
pytest.importorskip("jsonschema", reason="jsonschema (ragsight[agents])")

SERVER = '''
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("shop-mcp")


@server.tool()
def get_order(order_id: str, include_items: bool = False) -> str:
    """Look up an order by its id."""
    return f"order {order_id}: shipped"


@server.tool()
def refund(order_id: str, amount: float) -> str:
    """Refund part of an order."""
    return "refunded"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run("stdio")
'''


@pytest.fixture(scope="module")
def server_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "shop_server.py"
    path.write_text(SERVER)
    return path


def stdio_spec(script: Path) -> str:
    return f"mcp:stdio:{sys.executable} {script}"


def test_the_tools_of_a_stdio_server_with_their_schemas_and_server(server_script: Path) -> None:
    got = tools_from(stdio_spec(server_script))
    assert [(t.name, t.server, t.description) for t in got] == [
        ("get_order", "shop-mcp", "Look up an order by its id."), ("refund", "shop-mcp", "Refund part of an order.")]
    assert got[0].parameters is not None and got[0].parameters["required"] == ["order_id"]
    assert got[1].parameters is not None and got[1].parameters["properties"]["amount"]["type"] == "number"


def test_evaluate_with_tools_from_the_server(server_script: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    row = {"id": "o1", "messages": [
        {"role": "user", "content": "Refund 5 euros of order 42"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "refund",
                                                         "arguments": json.dumps({"order_id": 42, "amount": 5})}}]},
        {"role": "tool", "tool_call_id": "1", "content": "Error: order_id must be text"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "2", "type": "function", "function": {"name": "refund",
                                                         "arguments": json.dumps({"order_id": "42", "amount": 5})}}]},
        {"role": "tool", "tool_call_id": "2", "content": "refunded"},
        {"role": "assistant", "content": "Refunded 5 euros."}]}
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out.jsonl"
    code = main(["evaluate", str(data), "--metrics", "tool_argument_validity", "--store", str(tmp_path / "r.db"),
                 "--out", str(out), "--tools-from", stdio_spec(server_script), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "2 tools of MCP server shop-mcp (get_order, refund)" in captured.err
    conv = [json.loads(line) for line in out.read_text().splitlines()][-1]
    score = conv["scores"]["tool_argument_validity"]
    assert score["value"] == 0.5
    steps = conv["evidence"]["tool_argument_validity"]["details"]["steps"]
    assert [(s["valid"], s["server"]) for s in steps] == [(False, "shop-mcp"), (True, "shop-mcp")]
    assert steps[0]["errors"] == [{"path": "$.order_id", "message": "42 is not of type 'string'"}]
    # a stored run keeps the tools: the conversation's metadata holds them
    assert [t["name"] for t in conv["metadata"]["tools"]] == ["get_order", "refund"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_tools_of_a_streamable_http_server(server_script: Path) -> None:
    port = _port()
    proc = subprocess.Popen([sys.executable, str(server_script), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        got = tools_from(f"mcp:http://127.0.0.1:{port}/mcp")
        assert [(t.name, t.server) for t in got] == [("get_order", "shop-mcp"), ("refund", "shop-mcp")]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_server_that_cannot_start_or_a_bad_spec_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MCP server 'stdio:no-such-command-xyz' could not be read"):
        tools_from("mcp:stdio:no-such-command-xyz")
    with pytest.raises(ConfigError, match="give mcp:stdio:COMMAND or mcp:http"):
        tools_from("mcp:ftp://x")
    with pytest.raises(ConfigError, match="no such file"):
        tools_from(str(tmp_path / "missing.json"))
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps({"tools": [{"name": "get_order", "inputSchema": {"type": "object"}}]}))
    assert [t.name for t in tools_from(str(listed))] == ["get_order"]


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[agents\]'"):
        tools_from("mcp:stdio:anything")
