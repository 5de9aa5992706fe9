"""The conversation data model: turns, tool calls, and a turn sample's plain form."""

from __future__ import annotations

import json

from ragsight.conversation import Conversation, ToolCall, Turn
from ragsight.sample import Sample


def test_a_turn_sample_writes_its_history_and_tool_calls_as_plain_json() -> None:
    history = (Turn("user", "Which bike is the Trail?"),
               Turn("assistant", "The Trail is our hybrid bike.", contexts=("The Trail is a hybrid.",)))
    call = ToolCall("stock", {"model": "Trail", "colour": "red"}, id="c1")
    s = Sample(id="c1:1", question="Does it come in red?", response="Yes.", conversation_id="c1", turn=1,
               history=history, tool_calls=(call,), reference_tool_calls=(ToolCall("stock", {"model": "Trail"}),))
    d = json.loads(json.dumps(s.to_dict()))
    assert d["history"][1] == {"role": "assistant", "content": "The Trail is our hybrid bike.",
                               "contexts": ["The Trail is a hybrid."]}
    assert d["tool_calls"] == [{"name": "stock", "args": {"model": "Trail", "colour": "red"}, "id": "c1"}]
    assert d["reference_tool_calls"] == [{"name": "stock", "args": {"model": "Trail"}}]
    assert (d["conversation_id"], d["turn"]) == ("c1", 1)
    assert s.has("history") and not s.has("scenario")


def test_assistant_turns_are_counted_in_order() -> None:
    conv = Conversation("c", (Turn("system", "Be brief."), Turn("user", "hi"), Turn("assistant", "hello"),
                              Turn("user", "and?"), Turn("tool", "42", tool_call_id="t"),
                              Turn("assistant", "42")))
    assert conv.assistant_turns == (2, 5)
