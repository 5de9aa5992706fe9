"""Small amounts of money, from the outside: a judge priced at cents per million tokens spends
hundredths of a cent per call. The ``--max-cost`` stop, the run's summary and ``ragsight runs``
print what was spent as an amount that is not zero (docs/cost.md), over real HTTP against a judge
on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragsight
from ragsight.calls import format_limit, format_usd
from ragsight.cli import main
from ragsight.errors import BudgetExceededError
from tests.fakes import FakeOpenAIServer
from tests.integration.test_cost import BilledWorld
from tests.reliability.world import make_samples

NONZERO = r"\$0\.0000[1-9]\d"  # two significant digits under a hundredth of a cent


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-small")
    with FakeOpenAIServer(handler=BilledWorld()) as srv:
        yield srv


def test_a_stop_after_a_fraction_of_a_cent_says_what_it_spent(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(8)))
    store = tmp_path / "runs.db"
    base = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:cheap", "--price",
            "cheap=0.01/0.02", "--base-url", server.url, "--store", str(store), "--quiet", "--concurrency", "1"]
    code = main([*base, "--max-cost", "0.00005"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3, err
    spent = re.search(r"stopped before exceeding --max-cost \$\S+ (\$\S+) spent by this command", err)
    assert spent is not None, err
    assert re.fullmatch(NONZERO, spent[1]), spent[1]
    with sqlite3.connect(store) as db:
        stats = json.loads(db.execute("SELECT stats FROM runs").fetchone()[0])
    assert 0 < stats["cost"]["usd"] < 0.0001

    assert main(["runs", "--store", str(store)]) == 0
    listed = " ".join(capsys.readouterr().out.split())
    assert re.search(r"; cost " + NONZERO, listed), listed

    code = main(base)
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    line = re.search(r"cost: (\$\S+) \(judge cheap at \$0\.01 in / \$0\.02 out per million tokens", out)
    assert line is not None and line[1] != "$0.0000", out
    assert "$0.0000 " not in out and "$0.0000;" not in out


def test_a_limit_under_a_hundredth_of_a_cent_prints_as_given(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``--max-cost 0.00004`` reads as the money formatter prints a limit ($0.00004), never in
    exponent notation, in the dry run, in the stop, and in the error the Python API raises."""
    limit = format_limit(0.00004)
    assert limit == "$0.00004"
    data = tmp_path / "data.jsonl"
    rows = make_samples(8)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:cheap", "--price",
            "cheap=0.01/0.02", "--base-url", server.url, "--store", str(tmp_path / "runs.db"), "--quiet",
            "--concurrency", "1", "--max-cost", "0.00004"]

    main([*base, "--dry-run"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"--max-cost {limit}" in out and "e-05" not in out, out

    assert main(base) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert f"stopped before exceeding --max-cost {limit}: " in err and "e-05" not in err, err

    judge = ragsight.JudgeSpec("openai:cheap", base_url=server.url, prices={"cheap": (0.01, 0.02)})
    with pytest.raises(BudgetExceededError) as stop:
        ragsight.evaluate(rows, ["faithfulness"], judge=judge,
                          options=ragsight.RunOptions(max_cost=0.00004, concurrency=1, show_progress=False))
    message = str(stop.value)
    assert f"of the {limit} limit (--max-cost)" in message and "e-05" not in message, message
    costs = re.findall(r"\$[\d.]+", message.split(" of the ")[0])
    assert costs and all(c == format_usd(float(c[1:])) for c in costs), message
