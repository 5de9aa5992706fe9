"""The fifth pass's defects left for after it, each through the command, the API or the server as
documented: a long conversation's turns each holding a copy of the messages before them, ragas
message cells the reader cannot use, a money limit of minus infinity, cancelled calls counted at
their worst, a reviewer's name that turns text around, slow clients holding the viewer's
threads, and a number of thousands of digits in an agent's tool calls."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import cli
from ragsight.dataset import Dataset, SampleWarning
from ragsight.errors import BudgetExceededError
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    printed = cap.out + cap.err
    assert "Traceback" not in printed, printed
    return code, " ".join(printed.split())


def write_chat(path: Path, messages: int) -> Path:
    turns: list[dict[str, Any]] = []
    for i in range(messages // 2):
        turns.append({"role": "user", "content": f"Question {i}: what does the warranty say about part {i}?"})
        turns.append({"role": "assistant", "content": f"Part {i} is covered for two years, see section {i}.",
                      "reference": f"Part {i} is covered for two years."})
    path.write_text(json.dumps({"conversation_id": "long", "turns": turns}) + "\n", encoding="utf-8")
    return path


def traced_peak_mb(fn: Any) -> tuple[Any, float]:
    tracemalloc.start()
    try:
        got = fn()
        return got, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_a_long_conversation_takes_memory_in_line_with_its_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # 6,000 messages: 3,000 turns, whose histories hold 9 million messages in all. As a copy each
    # (8 bytes a reference) that was 72 MB; shared, the messages themselves, a few MB.
    data = write_chat(tmp_path / "chat.jsonl", 6000)
    samples, peak = traced_peak_mb(lambda: Dataset.load(data).samples)
    assert len(samples) == 3001 and sum(len(s.history or ()) for s in samples) == 9_003_000
    assert peak < 25, f"loading a 6,000-message chat peaked at {peak:.1f} MB"
    last, first = samples[-2], samples[1]
    assert len(last.history) == 5998 and last.history[:2] == first.history
    assert last.history[-1].content == "Part 2998 is covered for two years, see section 2998."
    assert tuple(last.history) == last.history and last.history == tuple(last.history)

    # the store gives them back shared too: 1,500 turns, 2.25 million messages in their histories
    # (as copies, 22 MB)
    db = tmp_path / "runs.db"
    small = write_chat(tmp_path / "small.jsonl", 3000)
    code, printed = run(capsys, "evaluate", str(small), "--metrics", "token_f1", "--store", str(db), "--quiet")
    assert code == 0, printed
    with Store(db) as st:
        run_id = st.resolve_run("last")
        got, peak = traced_peak_mb(lambda: st.samples(run_id))
    assert [s.id for s in got] == [f"long:{k}" for k in range(1500)] + ["long"]
    assert [len(s.history or ()) for s in got] == [2 * k for k in range(1500)] + [3000]
    assert got[-2].history[-1].content == "Part 1498 is covered for two years, see section 1498."
    assert peak < 10, f"reading a 3,000-message chat's samples peaked at {peak:.1f} MB"


GOOD_CHAT = ("[HumanMessage(content='Where is my parcel?', metadata=None, type='human'), "
             "AIMessage(content='It left the depot today.', metadata=None, type='ai', tool_calls=None)]")


@pytest.mark.parametrize("cell,why", [
    ("[]", "it is empty"),
    ("[ChatMessage(role='user', content='hi'), AIMessage(content='yo', type='ai')]", "ChatMessage(...), which is not"),
    ("[ragas.messages.HumanMessage(content='hi', type='human')]", "ragas.messages.HumanMessage(...), which is not"),
    ("[{'content': 'hi'}, {'content': 'yo'}]", "item 0 is not a message (it has neither a 'type' nor a 'role')"),
    ("[{'text': 'hi', 'type': 'human'}, 'hello']", "item 1 is not a message (a str)"),
    ("[HumanMessage(content='hi', type='human'), 5]", "item 1 is not a message (a int)"),
])
def test_a_ragas_message_cell_that_cannot_be_read_is_a_row_problem(
    cell: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # as ragas' to_csv() writes a MultiTurnSample's messages: Python's print of the list
    path = tmp_path / "chats.csv"
    path.write_text("user_input,reference\n" + json.dumps(GOOD_CHAT) + ",The parcel is found.\n"
                    + json.dumps(cell) + ",x\n", encoding="utf-8")
    with pytest.warns(SampleWarning, match="Python text"):
        got = Dataset.load(path)
    assert [s.id for s in got if s.turn == 0] and all(s.conversation_id for s in got), got.samples
    (problem,) = got.errors
    assert problem.row == 3 and problem.field == "user_input", problem
    assert why in problem.message and "to_jsonl()" in problem.message, problem.message

    code, printed = run(capsys, "evaluate", str(path), "--metrics", "exact_match,token_f1",
                        "--store", str(tmp_path / "s.db"))
    assert code == 1 and "row 3, field 'user_input'" in printed and why in printed, printed
    assert "1 input row(s) could not be used" in printed, printed
    with Store(tmp_path / "s.db") as st:  # the good conversation was evaluated
        assert [s.id for s in st.samples(st.resolve_run("last"))] == [got.samples[0].id, got.samples[1].id]


@pytest.mark.parametrize("question", ["[Draft] where is my parcel?", "[f(x)] what does it return?", "['a', 'b']"])
def test_a_question_that_begins_with_a_bracket_is_still_a_question(question: str, tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("user_input,response\n" + json.dumps(question) + ",a\n", encoding="utf-8")
    got = Dataset.load(path)
    assert not got.errors and [s.question for s in got] == [question]


@pytest.fixture()
def chat_file(tmp_path: Path) -> Path:
    return write_chat(tmp_path / "chat.jsonl", 4)


@pytest.mark.parametrize("value", ["-inf", "-Infinity", "-nan", "nan", "-1e3", "-1", "-0.5", "0"])
@pytest.mark.parametrize("extra", [[], ["--dry-run"], ["--repeats", "2"]])
def test_a_max_cost_that_is_not_a_positive_number_is_one_line_naming_the_option(
    value: str, extra: list[str], chat_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "s.db"
    code, printed = run(capsys, "evaluate", str(chat_file), "--metrics", "faithfulness", "--judge", "openai:m",
                        "--max-cost", value, "--store", str(store), *extra)
    assert code == 2 and printed.startswith("error: --max-cost must be a positive number of dollars, not "), printed
    assert "usage:" not in printed and "expected one argument" not in printed, printed
    assert not store.exists()


@pytest.mark.parametrize("argv", [
    ["monitor", "--max-cost-per-day", "-inf"],
    ["evaluate", "DATA", "--metrics", "faithfulness", "--judge", "openai:m", "--threshold", "-inf"],
    ["evaluate", "DATA", "--metrics", "faithfulness", "--judge", "openai:m", "--threshold", "nan"],
])
def test_other_numbers_of_minus_infinity_or_nan_are_one_line_naming_the_option(
    argv: list[str], chat_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    option = next(a for a in argv if a.startswith("--") and a not in ("--metrics", "--judge"))
    code, printed = run(capsys, *[str(chat_file) if a == "DATA" else a for a in argv],
                        "--store", str(tmp_path / "s.db"))
    assert code == 2 and printed.startswith(f"error: {option} must be "), printed


PRICE = (0.15, 0.6)  # dollars per million tokens in / out
USAGE = (11, 7)  # what the fake server reports for each answer


class CutOffWorld(JudgeWorld):
    """The judge world, except that each sample's claim verification hangs (it is in flight when
    the run stops) and the long sample's claim extraction answers after a second (by then the
    others hang). Counts the answers it sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self.hanging = 0
        self.guard = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        body = request.json if isinstance(request.json, dict) else {}
        pid = prompt_id_of(body) if request.path.endswith("/chat/completions") else None
        text = json.dumps(body.get("messages"))
        if pid == "verify_claims":
            with self.guard:
                self.hanging += 1
            return Reply.hang()
        if pid == "extract_claims" and "Filler" in text:
            time.sleep(1.0)
        reply = super().__call__(request)
        if pid is not None:
            with self.guard:
                self.sent += 1
        return reply


@pytest.fixture()
def cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAIServer, CutOffWorld, Path]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cut-off")
    rows = make_samples(7)
    # its claims are checked against 110 kB of text: that call's worst cost ($0.006) is over the limit
    rows.append({**rows[0], "id": "long", "contexts": [*rows[0]["contexts"], "Filler words here. " * 6000]})
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    world = CutOffWorld()
    with FakeOpenAIServer(handler=world) as srv:
        yield srv, world, data


def test_calls_cut_off_at_the_max_cost_stop_are_not_said_as_spent(
    cut_off: tuple[FakeOpenAIServer, CutOffWorld, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    srv, world, data = cut_off
    judge = ragsight.JudgeSpec("openai:m", base_url=srv.url, prices={"m": PRICE})
    with pytest.raises(BudgetExceededError) as stop:
        ragsight.evaluate(str(data), ["faithfulness"], judge=judge, store=tmp_path / "api.db",
                          options=ragsight.RunOptions(max_cost=0.004, concurrency=8, show_progress=False))
    answered = world.sent * (USAGE[0] * PRICE[0] + USAGE[1] * PRICE[1]) / 1e6
    # spent: what the judge reported, never the worst cost of the calls cut off (before: each
    # verification cut off counted at its worst, $0.0003 each, ten times what an answer cost)
    assert world.hanging >= 3 and stop.value.spent <= answered + 1e-12, (world.hanging, stop.value.spent, answered)
    cut = stop.value.unreported_calls
    assert cut >= world.hanging, (world.hanging, cut)
    assert stop.value.spent + stop.value.unreported >= answered - 1e-12
    assert 0 < stop.value.unreported <= stop.value.limit
    with Store(tmp_path / "api.db") as st:
        stats = st.run(st.resolve_run("last")).stats["stopped_by"]
    assert stats["unreported_calls"] == cut and stats["spent"] == pytest.approx(stop.value.spent, abs=1e-6)

    world.sent = world.hanging = 0
    code, printed = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                        "--base-url", srv.url, "--price", "m=0.15/0.6", "--max-cost", "0.004",
                        "--concurrency", "8", "--store", str(tmp_path / "cli.db"))
    assert code == 3, printed
    assert "spent by this command (as the judge reported it; " in printed, printed
    assert "cut off at the stop or timed out reported no usage: up to $" in printed, printed


RLO = "\u202e"
BIDI_NAMES = [f"ana{RLO}1=eulav", "\u2066bo\u2069", "li\u200bsa", "x\u200fy", "a\u2028b"]


@pytest.fixture()
def label_store(tmp_path: Path) -> Path:
    data, path = tmp_path / "ir.jsonl", tmp_path / "labels.db"
    data.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Question {i}?", "retrieved_ids": ["d1"],
                                        "relevant_ids": ["d1"]}) + "\n" for i in range(2)), encoding="utf-8")
    assert cli.main(["evaluate", str(data), "--metrics", "hit_rate", "--store", str(path), "--quiet"]) == 0
    return path


def read_to_end(sock: socket.socket) -> bytes:
    """Everything the viewer writes on ``sock`` until it closes the connection."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


@pytest.mark.parametrize("name", BIDI_NAMES)
def test_a_reviewer_name_that_turns_text_around_is_refused_where_labels_are_written(
    name: str, label_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from ragsight.store import Label
    from ragsight.view import make_server

    capsys.readouterr()
    # the viewer: 400 naming 'who' and the character; a plain name (with a joiner) is kept
    srv = make_server(str(label_store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.start()
    try:
        with Store(label_store) as st:
            rid = st.runs()[0].id
        answers = []
        for who in (name, "mehr\u200cnaz"):
            body = json.dumps({"run": rid, "sample": "s1", "metric": "hit_rate", "claim": None, "value": 0,
                               "who": who}).encode()
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
                sock.sendall(f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: "
                             f"application/json\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
                             .encode() + body)
                got = read_to_end(sock)
            answers.append(got.decode("utf-8", "replace"))
    finally:
        srv.shutdown()
        srv.server_close()
        srv.app.close()
    assert answers[0].startswith("HTTP/1.1 400") and "'who' holds U+" in answers[0], answers[0][:600]
    assert answers[1].startswith("HTTP/1.1 200"), answers[1][:600]
    with Store(label_store) as st:
        assert [lb.who for lb in st.labels()] == ["mehr\u200cnaz"]
        key = st.sample_keys(rid)["s0"]
        with pytest.raises(ragsight.errors.InputError, match="'who' holds U\\+"):  # the Python API
            st.add_labels([Label(key, "hit_rate", 1.0, who=name)])

    # labels import: the row is left out and named, the others are written; --who is refused
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"id": "s0", "correct": 1, "who": name}) + "\n"
                 + json.dumps({"id": "s1", "correct": 0, "who": "bo"}) + "\n", encoding="utf-8")
    code, printed = run(capsys, "labels", "import", str(f), "--label", "correct", "--run", "last",
                        "--store", str(label_store))
    assert code == 0 and "row 1: 'who' holds U+" in printed and "1 label(s) 'correct'" in printed, printed
    code, printed = run(capsys, "labels", "import", str(f), "--label", "correct", "--run", "last",
                        "--who", name, "--store", str(label_store))
    assert code == 2 and printed.startswith("error: --who holds U+"), printed


def test_a_name_stored_before_names_were_checked_is_shown_escaped(label_store: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from ragsight.report import label_rows
    from ragsight.view import make_server

    with Store(label_store) as st:
        rid = st.runs()[0].id
        key = st.sample_keys(rid)["s0"]
    with sqlite3.connect(label_store) as con:  # as an older version wrote it
        con.execute("INSERT INTO labels (sample_key, metric, claim, field, who, value, made_at, run_id, sample_id,"
                    " note) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (key, "hit_rate", "", "human", f"ana{RLO}0=eulav", 1.0, "2026-01-01T00:00:00Z", rid, "s0", None))
    with Store(label_store) as st:
        (row,) = label_rows(st)
    assert row["who"] == "ana\\u202e0=eulav"
    srv = make_server(str(label_store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
            sock.sendall(f"GET /run/{rid}/sample/s0 HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            page = read_to_end(sock)
    finally:
        srv.shutdown()
        srv.server_close()
        srv.app.close()
    text = page.decode("utf-8")
    assert text.startswith("HTTP/1.1 200"), text[:300]
    import html
    import re

    names = [k for attr in re.findall(r'data-by="([^"]*)"', text) for k in json.loads(html.unescape(attr))]
    assert RLO not in text and names == ["ana\\u202e0=eulav"], names  # what the page's script shows


BIG = "9" * 5000
CALL_OK = '[{"name": "weather", "input_parameters": {"city": "Paris"}}]'
CALL_BIG = '[{"name": "weather", "input_parameters": {"n": ' + BIG + '}}]'


@pytest.mark.parametrize("shape", ["csv", "jsonl text", "jsonl arguments text"])
def test_a_number_of_thousands_of_digits_in_deepeval_tools_called_is_a_row_problem(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # as DeepEval's save_as("csv") writes tools_called (JSON text in a cell), and JSON text in JSONL
    if shape == "csv":
        import csv

        path = tmp_path / "cases.csv"
        with path.open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerows([("input", "actual_output", "tools_called"), ("Weather?", "It is sunny.", CALL_OK),
                         ("Big?", "It is sunny.", CALL_BIG)])
    elif shape == "jsonl text":
        path = tmp_path / "cases.jsonl"
        path.write_text("".join(json.dumps({"input": q, "actual_output": "It is sunny.", "tools_called": cell}) + "\n"
                                for q, cell in (("Weather?", CALL_OK), ("Big?", CALL_BIG))), encoding="utf-8")
    else:  # the arguments themselves as JSON text, as OpenAI gives them
        path = tmp_path / "cases.jsonl"
        path.write_text("".join(json.dumps({"input": q, "actual_output": "It is sunny.", "tools_called": [
            {"name": "weather", "input_parameters": args}]}) + "\n"
            for q, args in (("Weather?", '{"city": "Paris"}'), ("Big?", '{"n": ' + BIG + "}"))), encoding="utf-8")
    with pytest.warns(SampleWarning, match="DeepEval test cases"):
        got = Dataset.load(path)
    (problem,) = got.errors
    row = 3 if shape == "csv" else 2
    assert problem.row == row and problem.field == "tools_called[0].input_parameters", problem
    assert "is a number with 5,000 digits" in problem.message, problem.message
    assert len(got) == 2 and got.samples[0].tool_calls  # the other test case is read
    code, printed = run(capsys, "evaluate", str(path), "--metrics", "token_f1", "--store", str(tmp_path / "s.db"))
    assert code == 1 and f"row {row}, field 'tools_called[0].input_parameters'" in printed, printed


def test_three_hundred_slow_clients_leave_the_viewer_serving_others(label_store: Path, tmp_path: Path) -> None:
    """300 clients that each send half a request and then a byte now and then (slow loris): they
    hold no handler thread, so a normal request is answered at once beside them (before: the 32
    handler threads were theirs, and it got 503); each is dropped when its request takes longer
    than the time a request may take."""
    from ragsight.view import ViewServer, make_server

    srv = make_server(str(label_store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.request_timeout_s = 4.0
    srv.start()
    base = threading.active_count()
    slow: list[socket.socket] = []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-Slow: ".encode())
            slow.append(s)
        for s in slow:
            with contextlib.suppress(OSError):  # (before: those beyond the threads were refused)
                s.sendall(b"a")
        time.sleep(0.3)
        assert threading.active_count() - base <= ViewServer.max_handlers
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
            sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nConnection: close\r\n\r\n".encode())
            answer = read_to_end(sock)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
        assert time.monotonic() - t0 < 3.0
        for s in slow:
            s.sendall(b"b")  # still trickling, still held
        time.sleep(4.5)  # past the time a request may take: dropped, whatever they still send
        slow[0].settimeout(5)
        assert slow[0].recv(4096) == b""
    finally:
        for s in slow:
            s.close()
        srv.shutdown()
        srv.server_close()
        srv.app.close()


def test_a_client_that_waits_for_leave_to_send_its_body_gets_it_at_once(label_store: Path, tmp_path: Path) -> None:
    """A POST with ``Expect: 100-continue`` (curl sends it with a large body) is told to go on as
    soon as its head is read, once, and then answered; a body over the limit is refused at once
    without it (before: the client waited, and the viewer waited for the body until the time a
    request may take ran out)."""
    from ragsight.view import make_server
    from ragsight.view._app import MAX_BODY

    srv = make_server(str(label_store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.request_timeout_s = 10.0
    srv.start()
    try:
        body = json.dumps({"label": "pass"}).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            t0 = time.monotonic()
            sock.sendall(f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".encode())
            assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
            assert time.monotonic() - t0 < 5.0  # well before the 10 s a request may take
            sock.sendall(body)
            answer = read_to_end(sock)
        status = answer.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.1 ") and not status.startswith(b"HTTP/1.1 100"), answer[:300]
        assert b"100 Continue" not in answer
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            sock.sendall(f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Length: {MAX_BODY + 1}\r\n"
                         "Expect: 100-continue\r\n\r\n".encode())
            answer = read_to_end(sock)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    finally:
        srv.shutdown()
        srv.server_close()
        srv.app.close()
