"""The CI gate of ``ragsight evaluate``: thresholds on metric means.

From the command line (repeatable, or comma-separated)::

    ragsight evaluate data.jsonl --fail-under faithfulness=0.8 --fail-under context_recall=0.7
    ragsight evaluate data.jsonl --fail-over noise_sensitivity=0.3

or from the ``[tool.ragsight]`` table of ``pyproject.toml`` in the working folder (another
file with ``--config PATH``); a flag overrides the file for the same metric::

    [tool.ragsight]
    fail-under = { faithfulness = 0.8, context_recall = 0.7 }
    fail-over = { noise_sensitivity = 0.3 }

A threshold compares the metric's mean over its scored samples: ``fail-under`` fails the run
when the mean is below the value, ``fail-over`` when it is above (for metrics where lower is
better). A gated metric with no mean fails the gate; so does any metric of the run that failed
or was skipped on every sample, gated or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import read_toml
from ..errors import ConfigError
from ..metrics import check_threshold, resolve_metrics
from ..result import EvaluationResult

__all__ = ["GateResult", "Threshold", "check_gate", "check_resumed_gate", "gate_metrics", "gate_thresholds"]

CONFIG_TABLE = "[tool.ragsight]"
CONFIG_KEYS = ("fail-under", "fail-over")
OTHER_KEYS = ("prices", "rubrics")  # read elsewhere: ragsight._cost, cli/_rubrics.py


@dataclass(frozen=True)
class Threshold:
    """One gate: ``metric``'s mean must not be below (``kind`` "under") or above ("over")
    ``value``. ``source`` says where it was set, for the messages."""

    metric: str
    value: float
    kind: str
    source: str

    def describe(self) -> str:
        return f"{self.metric} {'>=' if self.kind == 'under' else '<='} {self.value:g}"


@dataclass(frozen=True)
class GateResult:
    """What the gate found: one line per threshold and per metric that nothing scored."""

    lines: tuple[tuple[bool, str], ...]

    @property
    def failed(self) -> bool:
        return any(not ok for ok, _ in self.lines)


def _number(text: Any, where: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: the threshold must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{where}: the threshold must be a finite number, not {text!r}")
    return value


def _from_flags(items: Sequence[str], kind: str) -> list[Threshold]:
    flag = f"--fail-{kind}"
    out = []
    for item in items:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            metric, sep, value = part.rpartition("=")
            if not sep or not metric.strip():
                raise ConfigError(f"{flag} '{part}' needs the form METRIC=VALUE, e.g. {flag} faithfulness=0.8")
            out.append(Threshold(metric.strip(), _number(value.strip(), f"{flag} {part}"), kind, flag))
    return out


def _from_config(path: Path, explicit: bool) -> list[Threshold]:
    doc = read_toml(path, "config file")
    table = doc.get("tool", {}).get("ragsight") if isinstance(doc.get("tool"), Mapping) else None
    if table is None:
        if explicit:
            raise ConfigError(f"{path} has no {CONFIG_TABLE} table (see 'ragsight evaluate --help')")
        return []
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path}: {CONFIG_TABLE} must be a table")
    unknown = [k for k in table if k not in CONFIG_KEYS + OTHER_KEYS]
    if unknown:
        raise ConfigError(f"{path} {CONFIG_TABLE}: unknown key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(CONFIG_KEYS + OTHER_KEYS)}")
    out = []
    for key in CONFIG_KEYS:
        values = table.get(key, {})
        if not isinstance(values, Mapping):
            raise ConfigError(f"{path} {CONFIG_TABLE} {key} must be a table of metric = threshold, "
                              f"e.g. {key} = {{ faithfulness = 0.8 }}")
        source = f"{path.name} {CONFIG_TABLE} {key}"
        for metric, value in values.items():
            if isinstance(value, bool):  # TOML true is not a threshold (float(True) would be 1.0)
                raise ConfigError(f"{source} {metric}: the threshold must be a number, not {value!r}")
            out.append(Threshold(str(metric), _number(value, f"{source} {metric}"), key[5:], source))
    return out


def gate_thresholds(fail_under: Sequence[str], fail_over: Sequence[str],
                    config: str | None) -> list[Threshold]:
    """The thresholds of a run: the config file's (``config``, else ./pyproject.toml when it
    has a ``[tool.ragsight]`` table), then the flags, a flag replacing the file's threshold of
    the same metric and kind. Names are checked (a typo gets the close name) and a
    lower-is-better metric is refused in ``fail-under`` (and the reverse)."""
    path = Path(config) if config else Path("pyproject.toml")
    from_file = _from_config(path, explicit=bool(config)) if (config or path.is_file()) else []
    flags = _from_flags(fail_under, "under") + _from_flags(fail_over, "over")
    seen: dict[tuple[str, str], Threshold] = {}
    for t in flags:  # one threshold per metric and kind on the command line: no silent last-wins
        key = (resolve_metrics([t.metric])[0].key, t.kind)
        if key in seen and seen[key].value != t.value:
            raise ConfigError(f"{t.source} gives {key[0]} twice ({seen[key].value:g} and {t.value:g}); "
                              "keep one threshold per metric")
        seen[key] = t
    chosen: dict[tuple[str, str], Threshold] = {(t.metric.lower(), t.kind): t for t in from_file}
    chosen.update({(t.metric.lower(), t.kind): t for t in flags})
    out = []
    for t in chosen.values():
        # a typo gets the close name; 80 for 0.8 is refused ("did you mean 0.8?")
        metric, _ = check_threshold(t.metric, t.value, f"{t.source} {t.metric}={t.value:g}")
        if metric.lower_is_better and t.kind == "under":
            raise ConfigError(f"{t.source} {t.metric}: lower is better for {metric.key}; gate it with "
                              f"fail-over (--fail-over {metric.key}={t.value:g}: fail when above)")
        if not metric.lower_is_better and t.kind == "over":
            raise ConfigError(f"{t.source} {t.metric}: higher is better for {metric.key}; gate it with "
                              f"fail-under (--fail-under {metric.key}={t.value:g}: fail when below)")
        out.append(Threshold(metric.key, t.value, t.kind, t.source))
    return out


def gate_metrics(metrics: str | None, thresholds: Sequence[Threshold]) -> tuple[str | None, list[str]]:
    """The metric specs a gated run computes, and the gated metrics that joined the defaults.

    Without ``--metrics`` the run computes the default metrics and every gated one (the README's
    gate on noise_sensitivity, which is not a default metric). With ``--metrics`` a gated metric
    it does not compute is refused here, before any judge call: the run could never meet its
    gate. (A group in ``--metrics`` counts with all its members; the data may leave one out.)"""
    if not thresholds:
        return metrics, []
    gated = list(dict.fromkeys(t.metric for t in thresholds))
    if metrics is None:
        defaults = {m.key for m in resolve_metrics(None)}
        # every gated key is named: one the data's fields drop from the defaults is still
        # computed (and skipped with its reason), never left out of the gate in silence
        return ",".join(["default", *gated]), [k for k in gated if k not in defaults]
    chosen = [m.key for m in resolve_metrics(metrics)]
    for t in thresholds:
        if t.metric not in chosen:
            raise ConfigError(f"{t.source} gates {t.metric}, which --metrics does not compute "
                              f"({', '.join(chosen)}): add it to --metrics or drop the threshold; "
                              "nothing was evaluated")
    return metrics, []


def check_resumed_gate(run_id: str, computed: Sequence[str], thresholds: Sequence[Threshold]) -> None:
    """A ConfigError, before a resume pays for anything, when a threshold names a metric the
    run does not compute (a run's metrics are fixed when it is created)."""
    for t in thresholds:
        if t.metric not in computed:
            raise ConfigError(f"{t.source} gates {t.metric}, which run {run_id} does not compute; its "
                              f"metrics: {', '.join(computed)}. Nothing was resumed.")


def check_gate(result: EvaluationResult, thresholds: Sequence[Threshold]) -> GateResult:
    """Compare the run with its thresholds; a metric that failed or was skipped on every
    sample fails too. Raises ConfigError when a threshold names a metric the run lacks."""
    lines: list[tuple[bool, str]] = []
    for t in thresholds:
        s = result.summary.get(t.metric)
        if s is None:
            raise ConfigError(f"{t.source} names {t.metric}, which run {result.run_id} did not compute; "
                              f"its metrics: {', '.join(result.metric_keys)}")
        if s.mean is None:
            lines.append((False, f"{t.metric} has no mean ({s.why_no_mean()}); threshold {t.describe()}"))
            continue
        ok = s.mean >= t.value if t.kind == "under" else s.mean <= t.value
        relation = ("<" if t.kind == "under" else ">") if not ok else ("≥" if t.kind == "under" else "≤")
        lines.append((ok, f"{t.metric} {s.mean:.3f} {relation} {t.value:g}"))
    gated = {t.metric for t in thresholds}
    for key, s in result.summary.items():
        if key not in gated and s.all_failed_or_skipped:
            lines.append((False, f"{key}: {s.why_no_mean()}"))
    return GateResult(tuple(lines))
