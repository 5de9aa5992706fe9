"""The price table, the user's prices over it, and the money limit's admission rule."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ragsight.calls._cost import (
    Price,
    describe_cost,
    format_usd,
    load_prices,
    parse_price_flags,
    price_for,
    prices_from_config,
    stale_note,
)
from ragsight.errors import BudgetExceededError, ConfigError
from ragsight.judge import JudgeRequest, Message, SpendLimit


def test_the_table_is_dated_and_prices_the_common_hosted_models() -> None:
    table = load_prices()
    dt.date.fromisoformat(table.as_of)
    for model in ("gpt-4o-mini", "gpt-4.1", "claude-3-5-haiku", "claude-sonnet-4", "gemini-2.5-flash",
                  "mistral-large", "mistral-small"):
        price = table.lookup(model)
        assert price is not None and price.input > 0 and price.output >= price.input, model


@pytest.mark.parametrize(("judge", "model", "expected"), [
    ("openai:gpt-4o-mini", "gpt-4o-mini", (0.15, 0.60)),
    ("anthropic:claude-3-5-haiku-20241022", "anthropic/claude-3-5-haiku-20241022", (0.80, 4.00)),
    ("mistral:mistral-large-latest", "mistral/mistral-large-latest", (2.00, 6.00)),
    ("gemini:gemini-2.5-flash", "gemini/gemini-2.5-flash", (0.30, 2.50)),
    ("openai:gpt-4o", "gpt-4o", (2.50, 10.00)),
])
def test_a_model_is_found_without_its_provider_prefix_or_date(judge: str, model: str,
                                                              expected: tuple[float, float]) -> None:
    price = price_for(judge, model)
    assert price is not None and (price.input, price.output) == expected
    assert price.source.startswith("table ")


@pytest.mark.parametrize(("judge", "model"), [
    ("openai:qwen2.5-7b-instruct", "qwen2.5-7b-instruct"),  # a self-hosted model: not in the table
    ("openai:gpt-4o-mini-tts", "gpt-4o-mini-tts"),  # never by a looser prefix
    ("local", "qwen2.5-coder-1.5b"),
    ("local:gpt-4o-mini", "gpt-4o-mini"),  # a local judge is unknown whatever its name
    ("scripted:scripted", "scripted"),
])
def test_a_local_or_unlisted_model_costs_unknown_never_zero(judge: str, model: str) -> None:
    assert price_for(judge, model) is None
    assert format_usd(None) == "unknown"


def test_the_users_price_wins_over_the_table_and_can_price_a_local_model() -> None:
    table = load_prices().with_overrides({"gpt-4o-mini": (1.0, 2.0, "--price"),
                                          "qwen2.5-coder-1.5b": (0.01, 0.01, "pyproject.toml")})
    p = price_for("openai:gpt-4o-mini", "gpt-4o-mini", table)
    assert p == Price("gpt-4o-mini", 1.0, 2.0, "--price")
    assert price_for("local", "qwen2.5-coder-1.5b", table) == Price("qwen2.5-coder-1.5b", 0.01, 0.01,
                                                                    "pyproject.toml")
    assert p.cost(1_000_000, 500_000) == pytest.approx(2.0)


def test_price_flags_and_their_errors() -> None:
    assert parse_price_flags(["my-model=0.2/0.8", "org/other=1/2"]) == {
        "my-model": (0.2, 0.8, "--price"), "org/other": (1.0, 2.0, "--price")}
    for bad in ("my-model", "my-model=1", "=1/2", "m=a/b", "m=-1/2", "m=1/inf"):
        with pytest.raises(ConfigError, match="--price"):
            parse_price_flags([bad])


def test_prices_from_pyproject(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.ragsight.prices]\n"m1" = { input = 1, output = 2 }\n"m2" = [0.5, 1.5]\n')
    assert prices_from_config(path) == {"m1": (1.0, 2.0, "pyproject.toml"), "m2": (0.5, 1.5, "pyproject.toml")}
    path.write_text('[tool.ragsight.prices]\n"m1" = { input = 1 }\n')
    with pytest.raises(ConfigError, match=r"\[tool.ragsight.prices\] m1: give both input and output"):
        prices_from_config(path)
    path.write_text('[tool.ragsight]\nfail-under = { faithfulness = 0.8 }\n')
    assert prices_from_config(path) == {}


def test_an_old_table_price_says_so_and_a_users_price_does_not() -> None:
    table_price = Price("gpt-4o-mini", 0.15, 0.6, "table 2025-08-01")
    assert stale_note(table_price, today=dt.date(2025, 9, 1)) == ""
    assert "486 days old" in stale_note(table_price, today=dt.date(2026, 11, 30))
    assert stale_note(Price("m", 1, 1, "--price"), today=dt.date(2030, 1, 1)) == ""


def test_describe_cost_says_unknown_for_an_unpriced_run() -> None:
    total, per = describe_cost({"usd": None, "price": None, "by_metric": {"faithfulness": None}})
    assert total.startswith("cost: unknown") and per == ""  # one line, not "unknown" per metric
    total, per = describe_cost({"usd": 0.0123, "price": Price("m", 1, 2, "--price").to_dict(),
                                "by_metric": {"faithfulness": 0.01, "context_recall": 0.0023}})
    assert total == "cost: $0.0123 (judge m at $1 in / $2 out per million tokens, --price)"
    assert per == "cost by metric: faithfulness $0.0100; context_recall $0.0023"


def _request(chars: int, max_tokens: int) -> JudgeRequest:
    return JudgeRequest("p", "1", (Message("user", "x" * chars),), max_tokens=max_tokens)


def test_spend_limit_admits_a_call_only_when_its_worst_cost_fits() -> None:
    limit = SpendLimit(1.0, Price("m", 1_000_000.0, 1_000_000.0, "--price"))  # a dollar a token
    # worst cost: 300 bytes / 3 = 100 tokens + 4 per message, and the whole max_tokens reply
    assert limit.worst_cost(_request(300, 10)) == pytest.approx(114 * 1.0)
    limit = SpendLimit(200.0, Price("m", 1_000_000.0, 1_000_000.0, "--price"))
    reserved = limit.admit(_request(300, 10))
    assert limit.reserved == pytest.approx(114)
    with pytest.raises(BudgetExceededError) as stop:  # 114 in flight + 114 more > 200
        limit.admit(_request(300, 10))
    assert stop.value.limit == 200.0 and stop.value.spent == 0.0
    limit.settle(reserved, (60, 5))  # the call reported 65 tokens: $65 spent, nothing in flight
    assert (limit.spent, limit.reserved) == (pytest.approx(65), 0)
    limit.admit(_request(300, 10))  # 65 + 114 <= 200
    limit.admit(_request(3, 1))  # + 1 + 4 + 1 = 185
    with pytest.raises(BudgetExceededError):
        limit.admit(_request(60, 1))  # + 20 + 4 + 1 = 210


@pytest.mark.parametrize("judge", ["openai:gpt-4o-mini", "local"])
def test_the_dry_run_simulates_every_metrics_steps(judge: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every judge step of every metric takes the estimator's synthetic reply (none is left out,
    which would make the estimate low), for a remote judge (JSON) and the embedded one (yes/no);
    nothing is sent (the base URL is a closed port)."""
    import asyncio

    from ragsight import JudgeSpec
    from ragsight.cli import example_path
    from ragsight.run import aestimate

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    est = asyncio.run(aestimate(example_path(), "all",
                                judge=JudgeSpec(judge, base_url="http://127.0.0.1:9/v1")))
    assert est.unsimulated == 0
    assert est.calls > 0 and est.prompt_tokens > 0
    judged = {"faithfulness", "answer_relevancy", "context_precision", "context_recall", "abstention",
              "noise_sensitivity", "factual_correctness", "context_entity_recall"}
    assert judged <= set(est.tokens_by_metric)
    assert (est.usd is None) == (judge == "local")
