"""The Anthropic Messages API on 127.0.0.1, for testing judges that speak it (LiteLLM's).

The transport (queue, handler, recorded requests, resets and hangs) is FakeOpenAIServer's; what
this module adds is the wire format of ``POST /v1/messages``:

- the request is checked as Anthropic checks it: an ``x-api-key`` and an ``anthropic-version``
  header, ``max_tokens``, a top-level ``system`` (never a "system" role in ``messages``), user
  and assistant turns alternating from a user turn; a violation gets Anthropic's 400 error;
- the answer is a ``message`` with content blocks: a ``tool_use`` block when the request forces
  a tool (``tool_choice: {"type": "tool", "name": ...}``, which is how structured output reaches
  Anthropic), else a ``text`` block; ``usage`` has ``input_tokens`` / ``output_tokens``;
- errors are ``{"type": "error", "error": {"type": ..., "message": ...}}`` (:func:`error`).

:func:`world_handler` answers ragsight's own prompts with a JudgeWorld, recognising each prompt
by the shape of the tool's input schema, or of the schema written in the prompt (the prompt id
does not travel in this format).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from .openai_server import FakeOpenAIServer, RecordedRequest, Reply

__all__ = ["FakeAnthropicServer", "error", "message", "text_of", "world_handler"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}

# What the model "decides": the JSON object (or text) it produces for an Anthropic request body.
Answer = Callable[[dict[str, Any]], "dict[str, Any] | str"]


def message(content: list[dict[str, Any]], *, model: str = "claude-test", stop_reason: str = "end_turn",
            usage: tuple[int, int] = (21, 9), headers: Mapping[str, str] | None = None) -> Reply:
    """A Messages API answer with these content blocks."""
    body = {"id": "msg_01fake", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}
    return Reply.json(body, headers=headers)


def error(status: int, text: str = "", *, headers: Mapping[str, str] | None = None) -> Reply:
    """An Anthropic error body with ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return Reply.json({"type": "error", "error": {"type": kind, "message": text or f"fake {kind}"}},
                      status=status, headers=headers)


def _problem(req: RecordedRequest) -> str | None:
    if not req.headers.get("x-api-key"):
        return "x-api-key header is required"
    if not req.headers.get("anthropic-version"):
        return "anthropic-version header is required"
    body = req.json
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    roles = [m.get("role") for m in messages]
    if "system" in roles:
        return "messages: Unexpected role \"system\". Use the top-level system parameter"
    if roles[0] != "user" or any(a == b for a, b in itertools.pairwise(roles)):
        return "messages: roles must alternate between \"user\" and \"assistant\", starting with user"
    return None


def text_of(content: Any) -> str:
    """The text of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _answer(req: RecordedRequest, answer: Answer) -> Reply:
    body = req.json
    produced = answer(body)
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        if not isinstance(produced, dict):
            raise AssertionError("a forced tool call needs a JSON object as the answer")
        block = {"type": "tool_use", "id": "toolu_01fake", "name": choice["name"], "input": produced}
        return message([block], model=body["model"], stop_reason="tool_use")
    text = produced if isinstance(produced, str) else json.dumps(produced)
    return message([{"type": "text", "text": text}], model=body["model"])


class FakeAnthropicServer(FakeOpenAIServer):
    """``POST /v1/messages`` answered by ``answer(body)`` (when nothing is queued and
    ``handler`` gives no reply); ``srv.root`` is the base URL a client is given."""

    def __init__(self, answer: Answer | None = None,
                 handler: Callable[[RecordedRequest], Reply | None] | None = None) -> None:
        super().__init__(handler=handler)
        self.answer = answer

    def _default(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        if request.method != "POST" or path != "/v1/messages":
            return error(404, f"no route {request.method} {path}")
        problem = _problem(request)
        if problem is not None:
            return error(400, problem)
        if self.answer is None:
            return error(500, "FakeAnthropicServer has no answer scripted")
        return _answer(request, self.answer)


def _normal(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _normal(v) for k, v in sorted(schema.items())
                if k not in ("minItems", "maxItems", "additionalProperties", "$schema")}
    if isinstance(schema, list):
        return [_normal(v) for v in schema]
    return schema


def _schema_index() -> dict[str, str]:
    from ragsight.prompts import load_prompt, prompt_ids

    index: dict[str, str] = {}
    for pid in prompt_ids():
        prompt = load_prompt(pid)
        if prompt.schema is not None and not pid.startswith("testset_"):
            # prompts that share a schema (extract_claims and its recheck) are answered as the
            # first of them in name order: the world knows the step, not each variant
            index.setdefault(json.dumps(_normal(prompt.schema_for(1)), sort_keys=True), pid)
    return index


def world_handler(world: Any) -> Answer:
    """An ``answer`` for FakeAnthropicServer from a JudgeWorld: the prompt is recognised by its
    tool's input schema, and the world answers the OpenAI-shaped equivalent of the request."""
    index = _schema_index()

    def answer(body: dict[str, Any]) -> dict[str, Any] | str:
        tools = body.get("tools") or []
        schema = tools[0].get("input_schema") if tools else None
        if schema is None:  # the schema may be written in the prompt instead
            last = text_of(body["messages"][-1]["content"])
            _, marker, rest = last.rpartition("JSON schema, and nothing else:\n")
            schema = json.loads(rest) if marker else None
        system = text_of(body.get("system"))
        messages = [{"role": "system", "content": system}] if system else []
        messages += [{"role": m["role"], "content": text_of(m["content"])} for m in body["messages"]]
        if schema is None:
            return "pong"
        prompt_id = index.get(json.dumps(_normal(schema), sort_keys=True))
        if prompt_id is None:
            raise AssertionError(f"no ragsight prompt has the schema {schema}")
        openai_body = {"messages": messages,
                       "response_format": {"type": "json_schema",
                                           "json_schema": {"name": prompt_id, "schema": schema}}}
        produced, _ = world.answer(prompt_id, openai_body)
        return dict(produced)

    return answer
