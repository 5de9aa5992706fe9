"""Tokens into money: the price table of hosted judge models and the one rule that prices a call.

The table (``ragsight/data/prices.toml``) gives US dollars per million input (prompt) and output
(completion) tokens for common OpenAI, Anthropic, Gemini and Mistral models, with the date the
prices were read (``as_of``). A price given by the user wins over the table: from
``[tool.ragsight.prices]`` in pyproject.toml, then from ``--price MODEL=IN/OUT`` (the flag wins
over the file). A judge whose model has no price, and every judge that runs on this machine
(``local``, ``scripted``), costs "unknown": ``None``, never 0.

A model name is matched as given, then without its provider prefix (``openai/``, ``models/``),
then without a date or ``-latest`` suffix (``claude-3-5-haiku-20241022`` takes the price of
``claude-3-5-haiku``); never by a looser prefix (``gpt-4o-mini`` is not ``gpt-4o``).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = [
    "LOCAL_KINDS",
    "Price",
    "PriceTable",
    "describe_cost",
    "format_limit",
    "format_usd",
    "load_prices",
    "parse_price_flags",
    "price_for",
    "prices_from_config",
    "stale_note",
]

# Judges that run on this machine (or in a test): their money cost is not known to ragsight.
LOCAL_KINDS = ("local", "scripted")
_SMALLEST = 0.000001  # dollars: less is printed as "< $0.000001"
STALE_DAYS = 365  # a table older than this is said to be old beside every dollar figure

_DATE_SUFFIX = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})|-latest|-preview|-exp)$")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens, ``input`` (prompt) and ``output`` (completion); ``source``
    says where the price came from (``table 2025-08-01``, ``pyproject.toml``, ``--price``)."""

    model: str
    input: float
    output: float
    source: str

    def cost(self, prompt_tokens: int | float, completion_tokens: int | float) -> float:
        """The dollars of ``prompt_tokens`` in and ``completion_tokens`` out."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "input": self.input, "output": self.output, "source": self.source}

    @staticmethod
    def from_dict(d: Mapping[str, Any] | None) -> Price | None:
        if not isinstance(d, Mapping):
            return None
        try:
            return Price(str(d["model"]), float(d["input"]), float(d["output"]), str(d.get("source", "")))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, the table's date, and the user's overrides (which win)."""

    models: Mapping[str, tuple[float, float]]
    as_of: str
    overrides: Mapping[str, tuple[float, float, str]] = field(default_factory=dict)

    def with_overrides(self, overrides: Mapping[str, tuple[float, float, str]]) -> PriceTable:
        merged = dict(self.overrides)
        merged.update(overrides)
        return PriceTable(self.models, self.as_of, merged)

    def age_days(self, today: _dt.date | None = None) -> int | None:
        try:
            then = _dt.date.fromisoformat(self.as_of)
        except ValueError:
            return None
        return ((today or _dt.date.today()) - then).days

    def override(self, names: Sequence[str]) -> tuple[str, tuple[float, float, str]] | None:
        """The user's price for the first of ``names`` it names: by the exact name first, then
        as ``lookup`` reads a model's name (case, a provider prefix such as ``openai:`` or
        ``openai/``, a date suffix), so ``--price GPT-4o-mini=...`` prices gpt-4o-mini."""
        ov = self.overrides
        for n in names:
            if n in ov:
                return n, ov[n]
        folded: dict[str, tuple[str, tuple[float, float, str]]] = {}
        for key, value in ov.items():
            bare = key.split(":", 1)[1] if ":" in key else key
            for c in _candidates(bare):
                folded.setdefault(c, (key, value))
        for n in names:
            for c in _candidates(n):
                if c in folded:
                    return folded[c]
        return None

    def lookup(self, model: str) -> Price | None:
        found = self.override(_candidates(model))
        if found is not None:
            i, o, source = found[1]
            return Price(model, i, o, source)
        for name in _candidates(model):
            if name in self.models:
                i, o = self.models[name]
                return Price(model, i, o, f"table {self.as_of}")
        return None


def _candidates(model: str) -> list[str]:
    """``model`` as given, lower-cased, without provider prefix, without a date suffix."""
    out = [model, model.strip().lower()]
    bare = out[-1].rsplit("/", 1)[-1]
    out.append(bare)
    for _ in range(2):  # "claude-3-5-haiku-20241022", "gemini-2.0-flash-exp", "...-preview-05-20"
        stripped = _DATE_SUFFIX.sub("", bare)
        stripped = re.sub(r"-preview-\d{2}-\d{2}$", "", stripped)
        if stripped == bare:
            break
        bare = stripped
        out.append(bare)
    return list(dict.fromkeys(out))


def _read_toml(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def _pair(value: Any, where: str) -> tuple[float, float]:
    if isinstance(value, Mapping):
        if set(value) - {"input", "output"} or not {"input", "output"} <= set(value):
            raise ConfigError(f"{where}: give both input and output dollars per million tokens, "
                              "e.g. { input = 0.15, output = 0.60 }")
        raw = [value["input"], value["output"]]
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        raw = list(value)
    else:
        raise ConfigError(f"{where}: a price is {{ input = IN, output = OUT }} in dollars per million "
                          f"tokens, not {value!r}")
    nums = []
    for x in raw:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ConfigError(f"{where}: a price must be a number of dollars (0 or more), not {x!r}")
        nums.append(float(x))
    return nums[0], nums[1]


def load_prices() -> PriceTable:
    """The price table shipped with ragsight."""
    text = resources.files("ragsight").joinpath("data").joinpath("prices.toml").read_text("utf-8")
    doc = _read_toml(text)
    models = {str(k).lower(): _pair(v, f"prices.toml {k}") for k, v in doc.get("models", {}).items()}
    return PriceTable(models, str(doc.get("as_of", "")))


def prices_from_config(path: str | Path | None) -> dict[str, tuple[float, float, str]]:
    """The ``[tool.ragsight.prices]`` table of a TOML file (``None``: ./pyproject.toml when it
    exists), as model -> (input, output, source). A malformed price is a ConfigError naming it."""
    file = Path(path) if path else Path("pyproject.toml")
    if not file.is_file():
        if path:
            raise ConfigError(f"cannot read the config file {file}: no such file")
        return {}
    try:
        doc = _read_toml(file.read_text("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"the config file {file} is not UTF-8; TOML files are UTF-8: save it as UTF-8") from None
    except RecursionError:
        raise ConfigError(f"the config file {file} nests arrays or tables too deeply to read") from None
    except Exception as exc:
        raise ConfigError(f"the config file {file} is not valid TOML: {exc}") from None
    tool = doc.get("tool")
    table = tool.get("ragsight", {}).get("prices") if isinstance(tool, Mapping) and isinstance(
        tool.get("ragsight"), Mapping) else None
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{file} [tool.ragsight.prices] must be a table of \"MODEL\" = "
                          "{ input = IN, output = OUT }")
    where = f"{file.name} [tool.ragsight.prices]"
    return {str(k): (*_pair(v, f"{where} {k}"), file.name) for k, v in table.items()}


def parse_price_flags(items: Sequence[str]) -> dict[str, tuple[float, float, str]]:
    """``--price MODEL=IN/OUT`` values (dollars per million input/output tokens), repeatable."""
    out: dict[str, tuple[float, float, str]] = {}
    for item in items:
        model, sep, value = item.rpartition("=")
        parts = value.split("/")
        if not sep or not model.strip() or len(parts) != 2:
            raise ConfigError(f"--price '{item}' needs the form MODEL=IN/OUT in dollars per million "
                              "tokens, e.g. --price gpt-4o-mini=0.15/0.60")
        try:
            pair = _pair([float(parts[0]), float(parts[1])], f"--price {item}")
        except ValueError:
            raise ConfigError(f"--price '{item}': IN and OUT must be numbers, e.g. gpt-4o-mini=0.15/0.60") from None
        out[model.strip()] = (*pair, "--price")
    return out


def price_for(judge_name: str | None, model: str | None, table: PriceTable | None = None) -> Price | None:
    """The price of a judge (its spec name and model), or None when it is unknown: a local or
    scripted judge, or a model neither the user nor the table prices. A user's price for a local
    model's name counts (someone who knows what their GPU hour costs may say so)."""
    if not judge_name and not model:
        return None
    table = table or load_prices()
    kind = (judge_name or "").partition(":")[0]
    names = [n for n in (model, (judge_name or "").partition(":")[2], judge_name) if n]
    if kind in LOCAL_KINDS:
        found = table.override(names)
        if found is None:
            return None
        i, o, source = found[1]
        return Price(found[0], i, o, source)
    for n in names:
        price = table.lookup(n)
        if price is not None:
            return price
    return None


def stale_note(price: Price | None, today: _dt.date | None = None) -> str:
    """" (prices as of DATE, N days old: check them)" for a table price older than STALE_DAYS,
    else ""."""
    if price is None or not price.source.startswith("table "):
        return ""
    table = PriceTable({}, price.source[6:])
    age = table.age_days(today)
    if age is None or age <= STALE_DAYS:
        return ""
    return f" (list price of {table.as_of}, {age} days old: check it, or set it with --price)"


def describe_cost(cost: Mapping[str, Any] | None) -> tuple[str, str]:
    """Two lines for a run's stored ``cost`` (see ``ragsight.result.run_cost``): the run's
    dollars with the price behind them, and the dollars per metric ("" when none)."""
    if not isinstance(cost, Mapping):
        return "", ""
    price = Price.from_dict(cost.get("price"))
    if price is None:
        total = "cost: unknown (no price for this judge; give one with --price MODEL=IN/OUT)"
    else:
        total = (f"cost: {format_usd(cost.get('usd'))} (judge {price.model} at ${price.input:g} in / "
                 f"${price.output:g} out per million tokens, {price.source}){stale_note(price)}")
    by = cost.get("by_metric") or {}
    if price is None:  # every metric's share is unknown too: one line says it
        return total, ""
    per = "; ".join(f"{m} {format_usd(v)}" for m, v in by.items()) if isinstance(by, Mapping) else ""
    return total, (f"cost by metric: {per}" if per else "")


def format_usd(value: float | None) -> str:
    """Dollars for a person: ``unknown`` for None, ``$0.00`` for nothing; below a dollar to 4
    decimal places, and an amount under a hundredth of a cent to two significant digits
    (``$0.000042``), so money spent never reads as none; under a millionth of a dollar
    ``< $0.000001``."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0.00"
    if value < _SMALLEST:
        return f"< ${_SMALLEST:.6f}"
    if value < 0.0001:
        return f"${value:.{1 - math.floor(math.log10(value))}f}"
    if value < 1:
        return f"${value:.4f}"
    if value < 100:
        return f"${value:.2f}"
    return f"${value:,.0f}"


def format_limit(value: float) -> str:
    """A money limit as it was given (``--max-cost 0.00005``: ``$0.00005``, ``2.5``: ``$2.5``),
    never in exponent notation."""
    text = f"{value:g}"
    if "e" in text:
        text = f"{value:.12f}".rstrip("0").rstrip(".")
    return f"${text}"
