"""The fifth pass's smaller defects, each through the command or the API as documented: odd values
that ended in a traceback (a seed of -1, a port of 99999, a number of 5,000 digits in a scenario,
a folder or a pipe as the scenarios), values that disabled the money limit (negative or NaN
prices, a judge reporting 0 tokens), a concurrency of a billion, options of the wrong type, the
failing questions of ``diagnose`` sent to the public endpoint, and a symbolic link followed."""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragsight
from ragsight import cli
from ragsight.errors import ConfigError
from ragsight.result import load_result
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    printed = cap.out + cap.err
    assert "Traceback" not in printed, printed
    return code, " ".join(printed.split())


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), "utf-8")
    return path


def test_diagnose_seed_out_of_range_is_one_line(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.db"
    ragsight.evaluate(str(data), ["exact_match"], store=store)
    code, printed = run(capsys, "diagnose", "last", "--store", str(store), "--seed", "-1")
    assert code == 2 and printed.startswith("error: --seed must be a whole number from 0"), printed
    with Store(store) as st, pytest.raises(ConfigError, match="seed"):
        ragsight.diagnose(load_result(st, "last"), seed=-1, topics=False)


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://127.0.0.1:0/v1"])
def test_a_port_out_of_range_is_one_line(url: str, data: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                        "--base-url", url, "--store", str(tmp_path / "s.db"))
    assert code == 2 and printed.startswith("error: ") and "port" in printed, printed
    assert not (tmp_path / "s.db").exists()


def test_a_scenario_row_with_a_huge_number_is_left_out_by_line(tmp_path: Path) -> None:
    from ragsight.simulate import read_scenarios

    path = tmp_path / "sc.jsonl"
    good = {"id": "a", "scenario": "A traveller asks\u2028about bags.", "expected_outcome": "One bag."}
    path.write_text(json.dumps(good, ensure_ascii=False) + "\n" + '{"id": "b", "scenario": "x", "max_turns": '
                    + "9" * 5000 + "}\n", "utf-8")
    scenarios, problems = read_scenarios(path)
    assert [s.id for s in scenarios] == ["a"]
    assert scenarios[0].scenario == "A traveller asks\u2028about bags."  # the separator kept as written
    (p,) = problems
    assert "line 2" in str(p) and "4,300 digits" in str(p)


@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_scenarios_that_are_not_a_file_say_what_they_are(kind: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "sc"
    if kind == "folder":
        target.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("POSIX pipes")
        os.mkfifo(target)
    code, printed = run(capsys, "simulate", str(target), "--target", "x:y", "--out", str(tmp_path / "o.jsonl"),
                        "--no-cache")
    assert code == 2 and ("is a folder" if kind == "folder" else "is not a regular file") in printed, printed
    assert "no such file" not in printed


@pytest.mark.parametrize("price", [(-1.0, 2.0), (math.nan, 1.0), (1.0, math.inf), ("1", 2), (1.0,)])
def test_judge_spec_prices_are_checked_as_price_flags_are(price: tuple[object, ...]) -> None:
    with pytest.raises(ConfigError, match="JudgeSpec"):
        ragsight.JudgeSpec("openai:m", prices={"m": price})  # type: ignore[dict-item]


def zero_usage(world: JudgeWorld):  # type: ignore[no-untyped-def]
    def handler(request: RecordedRequest) -> Reply | None:
        reply = world(request)
        if reply is None or not request.path.endswith("/chat/completions") or reply.kind != "http":
            return reply
        body = json.loads(reply.body)
        if "choices" in body:
            body["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return Reply.json(body)
    return handler


def test_a_judge_reporting_no_tokens_does_not_blind_the_money_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-zero")
    data, store = tmp_path / "data.jsonl", tmp_path / "s.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(8)), "utf-8")
    # counted from their text, the 8 samples cost about 9 cents at this price; reported, nothing
    with FakeOpenAIServer(handler=zero_usage(JudgeWorld())) as srv:
        code, printed = run(capsys, "evaluate", str(data), "--metrics", "faithfulness,context_recall", "--judge",
                            "openai:pricey", "--base-url", srv.url, "--price", "pricey=10/10", "--store",
                            str(store), "--max-cost", "0.05", "--concurrency", "1", "--embedder", "openai:e",
                            "--quiet")
    assert code == 3, printed  # stopped at the limit: the calls were counted from their text
    with sqlite3.connect(store) as db:
        stats = json.loads(db.execute("SELECT stats FROM runs").fetchone()[0])
    assert 0.01 < stats["cost"]["usd"] <= 0.05
    assert "is not a token count" in printed


@pytest.mark.parametrize("flag", ["--judge-concurrency", "--concurrency"])
def test_a_concurrency_of_a_billion_is_refused(flag: str, data: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                        "--base-url", "http://127.0.0.1:9/v1", flag, "1000000000", "--store", str(tmp_path / "s.db"))
    assert code == 2 and "from 1 to 4096" in printed, printed


@pytest.mark.parametrize("field", ["policy", "settings", "progress", "notice"])
def test_run_options_of_the_wrong_type_say_what_they_take(field: str) -> None:
    with pytest.raises(ConfigError, match=rf"RunOptions\({field}=\.\.\.\) takes"):
        ragsight.RunOptions(**{field: "x"})  # type: ignore[arg-type]


@pytest.fixture()
def embed_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-embed")
    with FakeOpenAIServer() as srv:
        yield srv


def test_diagnose_embeds_at_the_runs_server_or_refuses(
    embed_server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    code, printed = run(capsys, "evaluate", str(data), "--metrics", "answer_similarity", "--embedder", "openai:emb",
                        "--embedder-base-url", embed_server.url, "--store", str(store), "--quiet")
    assert code in (0, 1), printed
    embed_server.settle()
    before = len(embed_server.requests)
    code, printed = run(capsys, "diagnose", "last", "--store", str(store), "--embedder", "openai:emb")
    assert code == 0, printed
    embed_server.settle()
    assert len(embed_server.requests) > before, "the topics were not embedded at the run's server"
    code, printed = run(capsys, "diagnose", "last", "--store", str(store), "--embedder", "openai:other")
    assert code == 2 and "--embedder-base-url" in printed and "not the run's embedder" in printed, printed


def test_a_symlinked_file_of_finished_conversations_is_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sc.jsonl").write_text(json.dumps({"id": "a", "scenario": "s", "expected_outcome": "o"}) + "\n")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me\n")
    os.symlink(elsewhere, tmp_path / "out.partial.jsonl")
    code, printed = run(capsys, "simulate", str(tmp_path / "sc.jsonl"), "--target", "x:y", "--out",
                        str(tmp_path / "out.jsonl"), "--no-cache")
    assert code == 2 and "symbolic link" in printed, printed
    assert elsewhere.read_text() == "keep me\n"


@pytest.mark.parametrize("key", ["GPT-4o-Mini", "openai:gpt-4o-mini", "openai/gpt-4o-mini", "gpt-4o-mini"])
def test_a_price_key_in_another_case_or_with_a_provider_prefix_prices_the_model(key: str) -> None:
    from ragsight.calls import load_prices, parse_price_flags, price_for

    table = load_prices().with_overrides(parse_price_flags([f"{key}=1.5/2.5"]))
    price = price_for("openai:gpt-4o-mini", "gpt-4o-mini", table)
    assert price is not None and (price.input, price.output, price.source) == (1.5, 2.5, "--price")
    local = price_for("local:qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b",
                      load_prices().with_overrides(parse_price_flags(["Qwen2.5-Coder-1.5B=0.1/0.2"])))
    assert local is not None and local.input == 0.1


def test_a_streamed_file_renamed_away_and_back_says_it_changed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import ragsight.dataset._dataset as dataset_module
    from ragsight.dataset._dataset import Dataset
    from ragsight.errors import InputError

    monkeypatch.setattr(dataset_module, "LAZY_FILE_BYTES", 0)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Q{i}", "response": f"R{i}"}) + "\n"
                            for i in range(5)))
    ds = Dataset.load(path)
    path.rename(tmp_path / "away.jsonl")
    with pytest.raises(InputError, match=r"live\.jsonl: the file changed while ragsight was reading it"):
        ds[0]
    (tmp_path / "away.jsonl").rename(path)  # back, as it was: read as before
    assert [s.id for s in ds] == [f"s{i}" for i in range(5)]
