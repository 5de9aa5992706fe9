"""Malformed inputs through the CLI: a clear message naming the row, the field and the fix; exit 2
when the whole input is unusable, else the good rows evaluated and the bad ones reported; never a
traceback for a user's mistake. Over-long texts are cut by the stated truncation policy
(``ragsight.calls._budget``) and the cut is recorded with the judge call.

The data files are in ``tests/fixtures/bad_inputs/``; each is run by ``ragsight.cli.main`` against
a fake OpenAI-compatible judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from ragsight.calls._budget import DEFAULT_WINDOW
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, Reply
from tests.reliability.world import JudgeWorld

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bad_inputs"


@dataclass(frozen=True)
class Case:
    file: str
    exit: int
    expect: tuple[str, ...] = ()  # substrings of the output (whitespace normalised)
    evaluated: int | None = None  # samples evaluated when the run goes ahead
    reported: int = 0  # rows reported as not usable


# The run goes ahead but exits 1: no row of the file has a reference, so context_recall is
# skipped on every sample, and a metric that nothing scored fails the run (cli docstring).
NO_REFERENCE = 1

ROW_CASES = [
    Case("empty_file.jsonl", 2, ("empty_file.jsonl: the file is empty",)),
    Case("blank_lines.jsonl", 2, ("blank_lines.jsonl: the file is empty",)),
    Case("invalid_json_line.jsonl", 0, ("invalid_json_line.jsonl, row 2: not valid JSON",
                                        "Each line must be one JSON object"), 2, 1),
    Case("line_not_object.jsonl", 0, ("line_not_object.jsonl, row 2: expected an object with fields, got list",
                                      'Each row must be an object such as'), 2, 1),
    Case("array_of_non_objects.json", 2, ("row 1: expected an object with fields, got int",
                                          "row 3: expected an object with fields, got NoneType")),
    Case("only_unknown_fields.jsonl", 2, ("row 1: none of this row's fields is known ('prompt', 'docs', 'completion')",
                                          "Name them question, contexts, response, reference")),
    # a column that means a field the row lacks stops the run before it is made
    Case("misnamed_fields.jsonl", 2, ("misnamed_fields.jsonl: unknown column(s): 'questoin': did you mean "
                                      "'question'?; 'contxts' holds texts: name it 'contexts'",
                                      "Columns found: id, question, contexts, response, reference, questoin, "
                                      "contxts", "nothing was run")),
    Case("contexts_as_string.jsonl", 0, (), 2),  # one string is one chunk
    Case("contexts_list_of_numbers.jsonl", 0, ("row 2, field 'contexts': item 0 is int, not a string",
                                               "Every item must be text"), 1, 1),
    Case("contexts_nested_list.jsonl", 0, ("row 2, field 'contexts': item 0 is list, not a string",), 1, 1),
    Case("contexts_as_object.jsonl", 0, ("row 2, field 'contexts': item 0 is an object with no text ('chunk')",
                                         'as an object with "text" or "page_content"'), 1, 1),
    Case("question_as_object.jsonl", 0, ("row 2, field 'question': expected text, got dict",
                                         "Give 'question' as a string"), 1, 1),
    Case("response_as_list.jsonl", 0, ("row 2, field 'response': expected text, got list",
                                       "Give 'response' as a string"), 1, 1),
    Case("reference_as_object.jsonl", 0, ("row 2, field 'reference': expected text or a list of acceptable "
                                          "answers, got dict", "Give the reference as a string"), 1, 1),
    Case("metadata_as_list.jsonl", 0, ("row 2, field 'metadata': expected an object (mapping), got list",
                                       "Give metadata as an object"), 1, 1),
    Case("relevant_ids_bad_grade.jsonl", 0, ("row 2, field 'relevant_ids': grade of 'd1' is -1",
                                             "grades must be numbers >= 0"), 1, 1),
    Case("duplicate_ids.jsonl", 0, ("row 3, field 'id': id 'good-1' was already used by row 1",
                                    "Give this row another id, or remove the duplicate row"), 2, 1),
    Case("empty_strings.jsonl", 0, ("skipped faithfulness on 1 sample: sample has no response, contexts",), 2),
    Case("null_fields.jsonl", 0, ("skipped context_recall on 1 sample: sample has no reference, contexts",), 2),
    Case("numbers_as_text.jsonl", 0, (), 2),
    Case("nan_literal.jsonl", 0, (), 2),
    Case("crlf_lines.jsonl", 0, (), 2),
    Case("line_separator_in_string.jsonl", NO_REFERENCE, (), 1),
    Case("non_utf8_row.jsonl", 0, ("non_utf8_row.jsonl, row 2: not valid UTF-8 (byte 0xe9 at column 33)",
                                   "iconv -f latin1 -t utf-8"), 2, 1),
    Case("non_utf8.csv", 2, ("non_utf8.csv, line 2: the file is not valid UTF-8 (byte 0xe9",
                             "iconv -f latin1 -t utf-8")),
    Case("bom.jsonl", 0, (), 1),
    Case("bom.csv", NO_REFERENCE, (), 1),
    Case("csv_embedded_newlines.csv", NO_REFERENCE, (), 1),
    Case("csv_extra_cells.csv", NO_REFERENCE, ("csv_extra_cells.csv, row 3: more cells than header columns",
                                    "quote cells that contain the delimiter"), 1, 1),
    Case("csv_contexts_not_json.csv", NO_REFERENCE, (), 2),  # a cell that is not a list is one chunk
    Case("csv_contexts_bad_json.csv", NO_REFERENCE, ("csv_contexts_bad_json.csv, row 3, field 'contexts': the text starts "
                                          "like a list but does not parse (Expecting value",), 1, 1),
    Case("csv_unclosed_quote.csv", 2, ("csv_unclosed_quote.csv, line 3: the CSV does not parse",
                                       "Look for an unclosed quote")),
    Case("csv_header_only.csv", 2, ("csv_header_only.csv: the file has a header row and no samples",)),
    Case("json_single_object.json", 2, ("expected a list of samples, or an object of equal-length columns",)),
    Case("json_unequal_columns.json", 2, ("expected a list of samples, or an object of equal-length columns",)),
    Case("json_invalid.json", 2, ("json_invalid.json, line 2: not valid JSON",
                                  "If it is one object per line, name it .jsonl")),
    Case("unknown_extension.txt", 2, ("unknown file type '.txt'. Use .jsonl, .json, .csv or .parquet",)),
    Case("not_parquet.parquet", 2, ("not_parquet.parquet: not a readable Parquet file",)),
    # one bad value is a row problem naming row and field; the other rows evaluate
    Case("lone_surrogate.jsonl", 0, ("lone_surrogate.jsonl, row 2, field 'response': 'response' holds a lone "
                                     "surrogate (\\ud83d at character 18), half of an emoji",), 1, 1),
    Case("deeply_nested.jsonl", 0, ("deeply_nested.jsonl, row 2, field 'metadata': nests deeper than",), 1, 1),
    Case("huge_integer.jsonl", 0, ("huge_integer.jsonl, row 2, field 'reference': 'reference' is a number with "
                                   "5,000 digits",), 1, 1),
    # a non-finite id is refused, never the id "nan"
    Case("nan_ids.jsonl", 0, ("nan_ids.jsonl, row 2, field 'retrieved_ids': item 1: 'retrieved_ids' holds nan, "
                              "not an id",), 1, 1),
    # a valid cell over csv's default 131,072-character limit loads
    Case("csv_long_cell.csv", NO_REFERENCE, (), 1),
    Case("binary_file.jsonl", 2, ("binary_file.jsonl: the file is binary",)),
]


def normalised(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    output = captured.out + "\n" + captured.err
    assert "Traceback" not in output, output
    return code, normalised(output)


def evaluate_args(data: str | Path, store: Path, url: str, *extra: str) -> list[str]:
    return ["evaluate", str(data), "--judge", "openai:m", "--embedder", "openai:e", "--base-url", url,
            "--store", str(store), "--quiet", "--metrics", "faithfulness,context_recall", *extra]


def test_the_corpus_is_complete() -> None:
    files = sorted(p.name for p in FIXTURES.iterdir())
    assert sorted(c.file for c in ROW_CASES) == files, "every fixture file has a case, and no more"
    assert len(ROW_CASES) + len(CLI_CASES) + 2 >= 30


@pytest.mark.parametrize("case", ROW_CASES, ids=lambda c: c.file)
def test_bad_input_file(case: Case, judge_server: FakeOpenAIServer, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    code, output = run_cli(evaluate_args(FIXTURES / case.file, store, judge_server.url), capsys)
    # rows that could not be used make the exit status 1 unless --allow-bad-rows
    want = 1 if case.reported and case.exit == 0 else case.exit
    assert code == want, output
    for text in case.expect:
        assert normalised(text) in output, f"{text!r} not in {output!r}"
    if case.exit == 2:
        # the error (after the warnings of the rows, for a misnamed column), and no store
        assert output.startswith("error: ") or (output.startswith("warning: ") and " error: " in output), output
        assert not store.exists()
        return
    with Store(store) as st:
        run = st.runs()[0]
        samples = st.samples(run.id)
        problems = [p for p in st.problems(run.id) if not p.message.startswith("warning:")]
        scores = st.scores(run.id)
    assert run.status == "completed"
    assert len(samples) == case.evaluated
    assert len(scores) == case.evaluated  # every evaluated sample has its scores
    assert len(problems) == case.reported
    if case.reported:
        assert f"{case.reported} input row(s) could not be used and were not evaluated" in output
        for p in problems:
            assert f"row {p.row}" in output
        assert "pass --allow-bad-rows to accept the run without them" in output


def test_csv_with_quoted_newlines_loads_exactly(judge_server: FakeOpenAIServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    code, _ = run_cli(evaluate_args(FIXTURES / "csv_embedded_newlines.csv", store, judge_server.url), capsys)
    assert code == NO_REFERENCE
    with Store(store) as st:
        (sample,) = st.samples(st.runs()[0].id)
    assert sample.id == "nl"
    assert sample.question == "What is the\ncabin bag allowance?"
    assert sample.contexts == ("Aurora Airways allows one cabin bag.\nIt may weigh eight kilograms.",)
    assert sample.response == "Aurora Airways allows one cabin bag.\nIt may weigh eight kilograms."


@dataclass(frozen=True)
class CliCase:
    name: str
    args: tuple[str, ...]
    expect: tuple[str, ...]


GOOD = str(FIXTURES / "crlf_lines.jsonl")
CLI_CASES = [
    CliCase("unknown metric", ("--metrics", "faithfulnes"), ("unknown metric 'faithfulnes'. Did you mean 'faithfulness'?",)),
    CliCase("two unknown metrics, named at once", ("--metrics", "faithfullness,answer_relevancy,context_recal"),
            ("unknown metrics 'faithfullness' (did you mean 'faithfulness'?), 'context_recal' (did you mean "
             "'context_recall'?).",)),
    CliCase("metric with a bad parameter", ("--metrics", "factual_correctness(mode=foo)"),
            ("factual_correctness mode must be one of precision, recall, f1, fbeta, not 'foo'",)),
    CliCase("unreadable metric", ("--metrics", "factual_correctness(mode"), ("cannot read metric",)),
    CliCase("unknown judge", ("--judge", "gpt4"), ("unknown judge 'gpt4'. Use openai:MODEL",)),
    CliCase("base url not http", ("--base-url", "ftp://example"), ("must be an absolute http:// or https:// URL",)),
    CliCase("timeout zero", ("--timeout", "0"), ("call_timeout_s must be a positive number of seconds (the CLI's --timeout)",)),
    CliCase("negative retries", ("--max-retries", "-1"), ("max_attempts must be at least 1 (the CLI's --max-retries + 1)",)),
    CliCase("metadata without =", ("--metadata", "novalue"), ("--metadata 'novalue' needs the form KEY=VALUE",)),
    CliCase("resume an unknown run", ("--resume", "nope"), ("no store at",)),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.name)
def test_bad_setting(case: CliCase, judge_server: FakeOpenAIServer, tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    args = evaluate_args(GOOD, tmp_path / "runs.db", judge_server.url)
    for flag, value in zip(case.args[::2], case.args[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    if "--resume" in args:
        args.remove(GOOD)
    code, output = run_cli(args, capsys)
    assert code == 2, output
    assert output.startswith("error: ")
    for text in case.expect:
        assert normalised(text) in output, output


def test_missing_file_and_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for data, expect in ((tmp_path / "nope.jsonl", "nope.jsonl: no such file. Check the path."),
                         (tmp_path, "is a folder; give a .jsonl, .json, .csv or .parquet file")):
        code, output = run_cli(["evaluate", str(data), "--store", str(tmp_path / "r.db"), "--quiet"], capsys)
        assert code == 2
        assert expect in output


def test_store_that_is_not_sqlite(tmp_path: Path, judge_server: FakeOpenAIServer,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "notes.db"
    store.write_text("not a database\n" * 50)
    code, output = run_cli(evaluate_args(GOOD, store, judge_server.url), capsys)
    assert code == 2
    assert "is not a usable ragsight store (file is not a database). Pick another --store path." in output


def test_judge_url_that_does_not_resolve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, output = run_cli(evaluate_args(GOOD, tmp_path / "r.db", "http://no-such-host.invalid/v1"), capsys)
    assert code == 2
    assert "the preflight call to judge 'openai:m' failed" in output
    # "does not resolve" here; "temporary DNS failure" where the resolver cannot be reached
    assert "no-such-host.invalid" in output
    assert "base_url" in output or "network" in output


def test_wrong_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    with FakeOpenAIServer(handler=lambda r: Reply.error(
            401, "Incorrect API key provided: sk-wrong-key-0123456789", code="invalid_api_key")) as srv:
        code, output = run_cli(evaluate_args(GOOD, tmp_path / "r.db", srv.url), capsys)
    assert code == 2
    assert "the judge rejected the API key (HTTP 401); check OPENAI_API_KEY." in output
    assert "sk-wrong-key-0123456789" not in output


def test_context_beyond_the_judge_window_is_truncated_and_recorded(
    judge_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 100k-token chunk beside a short one: the long chunk is cut to the default window
    (the judge states none), the short one is kept whole, the cut is marked in the prompt and
    stored with the judge call, and the claim the short chunk supports is still supported."""
    fact = "Aurora Airways allows one cabin bag weighing eight kilograms."
    filler = " ".join(f"Filler sentence number {i} says nothing about baggage." for i in range(8000))
    assert len(filler) // 4 > 100_000  # tokens as the OpenAI judge estimates them
    row = {"id": "long", "question": "What is the cabin bag allowance?", "contexts": [fact, filler],
           "response": fact, "reference": fact}
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    store = tmp_path / "runs.db"
    code, output = run_cli(evaluate_args(data, store, judge_server.url), capsys)
    assert code == 0, output
    # what the judge received fits the window assumed for it
    for req in judge_server.requests_to("/chat/completions"):
        chars = sum(len(m["content"]) for m in req.json["messages"])
        assert chars // 4 + req.json["max_tokens"] <= DEFAULT_WINDOW
    with Store(store) as st:
        run_id = st.runs()[0].id
        scores = st.scores(run_id)["long"]
        calls = st.judge_calls(run_id)
    verify = [c for c in calls if c["prompt_id"] == "verify_claims"]
    assert verify
    prompt = verify[0]["messages"][1]["content"]
    cut = re.findall(r"\[\.\.\. truncated (\d+) tokens \.\.\.\]", prompt)
    assert len(cut) == 1 and int(cut[0]) > 60_000
    assert fact in prompt  # the short chunk is whole
    assert "Filler sentence number 0 " in prompt and "Filler sentence number 7999 " in prompt  # head and tail
    assert scores["faithfulness"].value == 1.0
    assert scores["context_recall"].value == 1.0


def test_truncation_is_recorded_in_the_evidence(judge_server: FakeOpenAIServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    fact = "Aurora Airways allows one cabin bag weighing eight kilograms."
    row = {"id": "long", "contexts": [fact, "filler words " * 60_000], "response": fact}
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    store = tmp_path / "runs.db"
    args = evaluate_args(data, store, judge_server.url)
    args[args.index("--metrics") + 1] = "faithfulness"
    code, _ = run_cli(args, capsys)
    assert code == 0
    with Store(store) as st:
        score = st.scores(st.runs()[0].id)["long"]["faithfulness"]
    details: Any = score.evidence.details
    assert details["truncated"][0]["field"] == "contexts[2]"
    assert details["truncated"][0]["cut"] > 100_000


def test_negative_mean_does_not_crash_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = JudgeWorld()

    def handler(req: Any) -> Any:
        if req.path.endswith("/embeddings"):
            # generated questions point away from the user's question: cosine -1
            texts = req.json["input"]
            rows = [{"object": "embedding", "index": i,
                     "embedding": [-1.0 if t.startswith("What does the answer say") else 1.0] * 4}
                    for i, t in enumerate(texts)]
            return Reply.json({"object": "list", "data": rows, "model": "e"})
        return world(req)

    with FakeOpenAIServer(handler=handler) as srv:
        rows = [{"id": f"q{i}", "question": f"What is rule {i}?", "response": f"Rule {i} is strict.",
                 "contexts": ["Rule text."]} for i in range(8)]
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        args = evaluate_args(data, tmp_path / "r.db", srv.url)
        args[args.index("--metrics") + 1] = "answer_relevancy,faithfulness"
        code = cli.main(args)
    captured = capsys.readouterr()
    assert code == 0
    assert "Traceback" not in captured.err


def test_a_csv_cell_over_the_default_field_limit_loads_whole(judge_server: FakeOpenAIServer, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    code, output = run_cli(evaluate_args(FIXTURES / "csv_long_cell.csv", store, judge_server.url), capsys)
    assert code == NO_REFERENCE, output
    assert "unclosed quote" not in output
    with Store(store) as st:
        (sample,) = st.samples(st.runs()[0].id)
    assert sample.contexts is not None and len(sample.contexts[0]) > 131_072


@pytest.mark.parametrize("target", ["/dev/zero", "link"])
def test_a_device_fails_fast_with_a_clear_error(target: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/zero never ends: read whole, it ends in MemoryError. It is refused before any read,
    also behind a name that looks like data."""
    path = Path("/dev/zero")
    if target == "link":
        path = tmp_path / "data.jsonl"
        path.symlink_to("/dev/zero")
    code, output = run_cli(["evaluate", str(path), "--store", str(tmp_path / "r.db"), "--quiet"], capsys)
    assert code == 2
    expect = "not a regular file" if target == "link" else "unknown file type ''"
    assert expect in output, output


def test_a_big_binary_file_named_like_data_fails_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.jsonl"
    with path.open("wb") as f:
        for _ in range(64):  # 64 MiB of binary: refused from its first 64 KiB
            f.write(bytes(range(256)) * 4096)
    code, output = run_cli(["evaluate", str(path), "--store", str(tmp_path / "r.db"), "--quiet"], capsys)
    assert code == 2
    assert "the file is binary" in output
