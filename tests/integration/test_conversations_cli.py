"""Conversations from the outside: JSONL files as ragas, DeepEval and OpenAI write them,
evaluated with ``ragsight evaluate FILE --judge ... --out``, over real HTTP to a judge on
127.0.0.1. ``--out`` has one row per assistant turn with ``conversation_id`` and ``turn``, and
one row per conversation."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

# ragas: EvaluationDataset(samples=[MultiTurnSample(...)]).to_jsonl() writes one model_dump() a line
RAGAS = [
    {"user_input": [
        {"content": "Which bikes do you sell?", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "search", "args": {"query": "bikes"}}]},
        {"content": "The Trail is a hybrid bike. The Trail comes in red and blue.", "type": "tool"},
        {"content": "We sell the Trail, a hybrid bike.", "type": "ai"},
        {"content": "Does it come in red?", "type": "human"},
        {"content": "Yes, the Trail comes in red.", "type": "ai"}],
     "reference": "The user learns the Trail comes in red.",
     "reference_tool_calls": [{"name": "search", "args": {"query": "bikes"}}]},
]
# DeepEval: ConversationalTestCase(...).model_dump() a line
DEEPEVAL = [
    {"name": "refunds", "scenario": "A customer asks about refunds.", "chatbot_role": "a shop assistant",
     "expected_outcome": "The customer learns the refund policy.",
     "turns": [
         {"role": "user", "content": "What if these shoes don't fit?"},
         {"role": "assistant", "content": "We offer a 30-day full refund.",
          "retrieval_context": ["All customers are eligible for a 30 day full refund."]},
         {"role": "user", "content": "Even on sale items?"},
         {"role": "assistant", "content": "Sale items can be exchanged, not refunded.",
          "retrieval_context": ["Sale items are final: exchange only."]}]},
]
# OpenAI: a chat log, one {"messages": [...]} a line
OPENAI = [
    {"id": "weather", "messages": [
        {"role": "system", "content": "You answer questions about the weather."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny, 21 C."},
        {"role": "assistant", "content": "It is sunny in Paris."}]},
]


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-conv")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


def _evaluate(tmp_path: Path, url: str, rows: list[dict[str, Any]], capsys: pytest.CaptureFixture[str],
              name: str) -> tuple[int, str, list[dict[str, Any]]]:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / f"{name}-out.jsonl"
    code = main(["evaluate", str(data), "--metrics", "faithfulness,answer_relevancy", "--judge", "openai:m",
                 "--base-url", url, "--embedder", "openai:emb", "--store", str(tmp_path / "runs.db"),
                 "--out", str(out), "--quiet"])
    stdout = capsys.readouterr().out
    return code, stdout, [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize(("name", "rows", "turns"), [
    ("ragas", RAGAS, [0, 1]), ("deepeval", DEEPEVAL, [0, 1]), ("openai", OPENAI, [0])])
def test_each_shape_evaluates_one_row_per_assistant_turn_plus_one_per_conversation(
    judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
    rows: list[dict[str, Any]], turns: list[int],
) -> None:
    code, stdout, out = _evaluate(tmp_path, judge_url, rows, capsys, name)
    assert code == 0, stdout
    cid = out[0]["conversation_id"]
    assert [(r["conversation_id"], r["turn"]) for r in out] == [(cid, t) for t in turns] + [(cid, None)]
    for r in out[:-1]:
        assert r["id"] == f"{cid}:{r['turn']}"
        assert set(r["scores"]) == {"faithfulness", "answer_relevancy"}
        assert r["scores"]["answer_relevancy"]["outcome"] == "scored"
    conv = out[-1]
    assert conv["scores"] == {}  # no conversation-level metric was asked for: no 'skipped' noise
    assert set(conv["turn_means"]) == {"faithfulness", "answer_relevancy"}
    assert conv["turn_means"]["answer_relevancy"]["outcome"] == "scored"
    assert f"1 conversation, {len(turns)} assistant turn{'s' if len(turns) > 1 else ''}" in stdout
    assert "Per conversation (1)" in stdout


def test_tool_results_are_the_contexts_of_an_agent_turn(judge_url: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, _, out = _evaluate(tmp_path, judge_url, OPENAI, capsys, "agent")
    first = out[0]
    assert first["contexts"] == ["Paris: sunny, 21 C."]
    assert first["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]
    assert first["system_role"] == "You answer questions about the weather."
    assert first["scores"]["faithfulness"]["outcome"] == "scored"


def test_export_and_a_reload_of_the_out_file(judge_url: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, out = _evaluate(tmp_path, judge_url, RAGAS + DEEPEVAL, capsys, "both")
    assert code == 0
    csv_path = tmp_path / "export.csv"
    assert main(["export", "last", "--format", "csv", "--out", str(csv_path),
                 "--store", str(tmp_path / "runs.db")]) == 0
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["conversation_id"], r["turn"]) for r in rows] == [
        (out[0]["conversation_id"], "0"), (out[0]["conversation_id"], "1"), (out[0]["conversation_id"], ""),
        ("refunds", "0"), ("refunds", "1"), ("refunds", "")]
    assert rows[2]["faithfulness__outcome"] == ""  # a turn metric on the conversation's row: empty
    # the --out file loads back as the same turns (evaluate it again: the same ids, served from cache)
    again = tmp_path / "again.jsonl"
    assert main(["evaluate", str(tmp_path / "both-out.jsonl"), "--metrics", "faithfulness,answer_relevancy",
                 "--judge", "openai:m", "--base-url", judge_url, "--embedder", "openai:emb",
                 "--store", str(tmp_path / "runs.db"), "--out", str(again), "--quiet"]) == 0
    back = [json.loads(line) for line in again.read_text().splitlines()]
    assert [(r["id"], r["turn"]) for r in back] == [(r["id"], r["turn"]) for r in out]
    assert [r["scores"] for r in back] == [r["scores"] for r in out]
    assert "judge: 0 calls" in capsys.readouterr().out


def _report(tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> Path:
    code, _, _ = _evaluate(tmp_path, url, RAGAS + DEEPEVAL + OPENAI, capsys, "report")
    assert code == 0
    page = tmp_path / "report.html"
    assert main(["report", "last", "--store", str(tmp_path / "runs.db"), "--out", str(page)]) == 0
    return page


def test_the_report_groups_each_conversations_turns(judge_url: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    html = _report(tmp_path, judge_url, capsys).read_text(encoding="utf-8")
    assert "3 conversations, 5 assistant turns" in html and "<h3>Conversations (3)</h3>" in html
    assert html.count('<details class="conversation"') == 3
    refunds = html[html.index("<b>refunds</b>"):]
    refunds = refunds[: refunds.index("</details>")]
    # the turns in order, each linked to its own panel, with the conversation's scenario
    assert refunds.index("don&#x27;t fit?") < refunds.index('data-turn="0"') < refunds.index("Even on sale") \
        < refunds.index('data-turn="1"')
    assert refunds.count('href="#r1-s') == 2 and "A customer asks about refunds." in refunds
    assert "mean of 2 scored turn(s) of 2" in refunds
    # the agent's tool call is shown between the question and the answer
    weather = html[html.index("<b>weather</b>"):]
    assert weather.index("get_weather(city=&#x27;Paris&#x27;)") < weather.index("Paris: sunny") < \
        weather.index('data-turn="0"')


@pytest.mark.slow
def test_the_report_renders_a_conversation_in_chromium(judge_url: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tests.integration.test_report_browser import body_attrs, browse

    page = _report(tmp_path, judge_url, capsys)
    dom, log = browse(tmp_path, page, "--dump-dom")
    attrs = body_attrs(dom)
    assert attrs.get("data-js") == "ran" and attrs.get("data-js-errors") == ""
    assert [ln for ln in log.splitlines() if ":CONSOLE" in ln] == []
    assert dom.count('<details class="conversation"') == 3 and dom.count('data-turn="') == 5


def test_show_prints_a_conversation_turn_by_turn_and_a_turns_history(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _evaluate(tmp_path, judge_url, DEEPEVAL, capsys, "show")
    store = str(tmp_path / "runs.db")
    assert main(["show", "last", "--conversation", "refunds", "--store", store]) == 0
    text = capsys.readouterr().out
    order = ["scenario: A customer asks about refunds.", "user: What if these shoes don't fit?",
             "assistant (turn 0): We offer a 30-day full refund.", "✗ [contexts] We offer a 30-day",
             "user: Even on sale items?", "assistant (turn 1): Sale items can be exchanged",
             "✗ [contexts] Sale items can be", "the conversation",
             "mean of 2 scored turn(s) of 2"]
    at = [text.index(s) for s in order]
    assert at == sorted(at), text
    assert main(["show", "last", "--sample", "refunds:1", "--store", store]) == 0
    text = capsys.readouterr().out
    assert "turn 1 of conversation refunds" in text
    assert text.index("user: What if these shoes") < text.index("question: Even on sale items?")
    assert main(["show", "last", "--conversation", "nope", "--store", store]) != 0
    assert "no conversation 'nope'; its conversations: refunds" in capsys.readouterr().err


def _span(trace: str, span: str, parent: str | None, kind: str, start: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """A span as the OpenTelemetry SDK's ``span.to_json()`` writes it (OpenInference attributes)."""
    return {"name": kind.lower(), "context": {"trace_id": "0x" + trace * 16, "span_id": "0x" + span * 8},
            "parent_id": None if parent is None else "0x" + parent * 8, "start_time": start,
            "end_time": start.replace(":00Z", ":01Z"), "status": {"status_code": "UNSET"},
            "attributes": {"openinference.span.kind": kind, **attrs}}


def _session_trace(trace: str, start: str, question: str, answer: str, doc: str) -> list[dict[str, Any]]:
    return [
        _span(trace, "a1", None, "CHAIN", start, {"session.id": "chat-7", "input.value": question,
                                                   "output.value": answer}),
        _span(trace, "b2", "a1", "RETRIEVER", start, {"input.value": question,
                                                      "retrieval.documents.0.document.id": f"doc-{trace}",
                                                      "retrieval.documents.0.document.content": doc}),
    ]


def test_import_traces_groups_a_sessions_traces_into_a_conversation(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the second request was exported first: the turns follow the traces' start times
    spans = (_session_trace("22", "2026-01-02T10:05:00Z", "Does it come in red?", "Yes, the Trail comes in red.",
                            "The Trail comes in red and blue.")
             + _session_trace("11", "2026-01-02T10:00:00Z", "Which bike is the Trail?", "A hybrid bike.",
                              "The Trail is a hybrid bike.")
             + [_span("33", "c3", None, "RETRIEVER", "2026-01-02T11:00:00Z", {
                 "input.value": "Opening hours?", "retrieval.documents.0.document.content": "9 to 5."})])
    traces = tmp_path / "spans.jsonl"
    traces.write_text("".join(json.dumps(s) + "\n" for s in spans))
    samples = tmp_path / "samples.jsonl"
    assert main(["import-traces", str(traces), "--out", str(samples)]) == 0
    assert "1 conversation among them" in capsys.readouterr().out
    code, _, out = _evaluate(tmp_path, judge_url, [json.loads(x) for x in samples.read_text().splitlines()],
                             capsys, "sessions")
    assert code == 0
    assert [(r["id"], r.get("conversation_id"), r.get("turn")) for r in out] == [
        ("chat-7:0", "chat-7", 0), ("chat-7:1", "chat-7", 1), ("chat-7", "chat-7", None), ("33" * 16, None, None)]
    assert (out[0]["question"], out[0]["contexts"]) == ("Which bike is the Trail?", ["The Trail is a hybrid bike."])
    assert out[1]["history"][0]["content"] == "Which bike is the Trail?"
    assert out[1]["metadata"]["trace_ids"] == ["11" * 16, "22" * 16]  # turn k is trace k


def test_langfuse_traces_of_one_session_become_one_conversation() -> None:
    from ragsight.integrations import traces_from_records

    trace = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "langfuse.json")
                       .read_text())["data"][0]
    later = json.loads(json.dumps(trace))
    later.update(id="second", timestamp="2026-01-02T10:09:00.000Z", input={"input": "And in Bergen?"})
    got = traces_from_records([later, trace])
    (row,) = got.rows
    assert got.conversations == 1 and row["id"] == "sess-42"
    assert [t["content"] for t in row["turns"] if t["role"] == "user"] == [
        "What is the per diem in Oslo?", "And in Bergen?"]
    assert row["turns"][1]["contexts"] == ["The per diem in Oslo is 800 NOK.", "Receipts are needed above 200 NOK."]


# ---- ragsight answer: a chat system driven turn by turn -------------------------------------------

CHAT_TESTSET = [
    {"id": "bike", "scenario": "A customer picks a bike.",
     "turns": [{"role": "user", "content": "Which bike is the Trail?"},
               {"role": "user", "content": "Does it come in red?"},
               {"role": "assistant", "reference": "Yes, in red and blue."}]},
]


def _chat_reply(question: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat system that can only answer the follow-up through the history."""
    if question == "Which bike is the Trail?":
        return {"answer": "The Trail is a hybrid bike.", "contexts": [{"id": "d1", "text": "The Trail is a hybrid."}]}
    about = "the Trail" if any("Trail" in m["content"] for m in history) else "what?"
    return {"answer": f"Yes, {about} comes in red.", "contexts": [{"id": "d2", "text": "The Trail: red, blue."}]}


def chat_target(question: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat_reply(question, history)


def test_answer_drives_an_http_chat_endpoint_turn_by_turn(judge_url: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes import Reply

    seen: list[Any] = []

    def endpoint(req: Any) -> Any:
        seen.append(req.json)
        return Reply.json(_chat_reply(req.json["question"], req.json["history"]))

    testset = tmp_path / "chats.jsonl"
    testset.write_text("".join(json.dumps(r) + "\n" for r in CHAT_TESTSET))
    answers = tmp_path / "answers.jsonl"
    with FakeOpenAIServer(handler=endpoint) as srv:
        code = main(["answer", str(testset), "--target", srv.root + "/chat", "--out", str(answers), "--quiet"])
    assert code == 0, capsys.readouterr()
    assert seen == [
        {"question": "Which bike is the Trail?", "history": []},
        {"question": "Does it come in red?", "history": [
            {"role": "user", "content": "Which bike is the Trail?"},
            {"role": "assistant", "content": "The Trail is a hybrid bike."}]}]
    (row,) = [json.loads(x) for x in answers.read_text().splitlines()]
    assert [t["role"] for t in row["turns"]] == ["user", "assistant", "user", "assistant"]
    assert row["turns"][3] == {"role": "assistant", "content": "Yes, the Trail comes in red.",
                               "contexts": ["The Trail: red, blue."], "retrieved_ids": ["d2"],
                               "reference": "Yes, in red and blue."}
    assert row["scenario"] == "A customer picks a bike." and row["metadata"]["error"] is None
    capsys.readouterr()
    code, _, out = _evaluate(tmp_path, judge_url, [row], capsys, "answered")
    assert code == 0 and [(r["id"], r["turn"]) for r in out] == [("bike:0", 0), ("bike:1", 1), ("bike", None)]
    assert out[1]["reference"] == "Yes, in red and blue."


def test_answer_passes_the_history_to_a_python_function(tmp_path: Path) -> None:
    from ragsight.testset import arun, make_target

    result = asyncio.run(arun(CHAT_TESTSET, make_target(chat_target)))
    (row,) = result.rows
    assert row["turns"][3]["content"] == "Yes, the Trail comes in red."

    def no_history(question: str) -> str:
        return "an answer"

    result = asyncio.run(arun(CHAT_TESTSET, make_target(no_history)))
    assert "takes no 'history' argument" in result.rows[0]["metadata"]["error"]
    assert result.rows[0]["metadata"]["error"].startswith("turn 0: ")
