"""The viewer's page of an agent conversation shows its trajectory: each call with its message,
MCP server, argument validity, matched reference call and result, a failed result marked; a
turn's page and a conversation without calls show none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import Store
from ragsight.cli import main
from tests.unit.test_view import app_of, get

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def test_the_conversation_page_shows_each_call_its_validity_and_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("jsonschema")
    chat = {"id": "order", "mcp_servers": [{"server_name": "shop-mcp", "available_tools": [
        {"name": "get_order", "description": "Look up an order.", "inputSchema": SCHEMA}]}],
        "messages": [
            {"role": "user", "content": "Where is order 42?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": 42}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "Error: order_id must be text"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "2", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"42\"}"}}]},
            {"role": "tool", "tool_call_id": "2", "content": "Order 42: shipped"},
            {"role": "assistant", "content": "It has shipped."}],
        "reference_tool_calls": [{"name": "get_order", "args": {"order_id": "42"}}]}
    data = tmp_path / "chat.jsonl"
    data.write_text(json.dumps(chat) + "\n")
    db = tmp_path / "runs.db"
    assert main(["evaluate", str(data), "--metrics", "trajectory_match(mode=superset),tool_argument_validity",
                 "--store", str(db), "--quiet"]) == 0
    capsys.readouterr()
    app = app_of(db)
    with Store(db) as store:
        run_id = store.runs()[0].id
    status, page = get(app, f"/run/{run_id}/sample/order")
    assert status == 200
    table = page.split('id="trajectory"', 1)[1].split("</table>", 1)[0]
    assert "trajectory (2 calls)" in table
    first, second = table.split('<tr id="call-0">', 1)[1].split('<tr id="call-1">')
    assert "get_order({&quot;order_id&quot;: 42})" in first and "shop-mcp" in first
    assert "invalid: $.order_id: 42 is not of type &#x27;string&#x27;" in first
    assert "no reference call" in first and 'badge low">failed' in first
    assert "valid" in second and "reference 1" in second and "Order 42: shipped" in second
    assert "failed" not in second
    _, turn = get(app, f"/run/{run_id}/sample/order:0")
    assert 'id="trajectory"' not in turn
