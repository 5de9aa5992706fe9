"""A run as the comparison and the report read it: its result, its configuration (the run's
metadata, then judge, embedder and data set), when it was made and the human labels of its
samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..result import EvaluationResult, load_result
from ..store import Label, Store
from ._align import count_examples

__all__ = ["RunData", "judge_settings", "load_runs"]


@dataclass(frozen=True)
class RunData:
    """A run's result with its configuration (the run's metadata, then judge, embedder and
    data set), as the comparison and the report need it."""

    result: EvaluationResult
    config: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    labels: tuple[Label, ...] = ()
    """The human labels of the run's samples kept in the store (the report's corrected means)."""

    @property
    def run_id(self) -> str:
        return self.result.run_id

    @classmethod
    def from_result(
        cls, result: EvaluationResult, metadata: Mapping[str, Any] | None = None
    ) -> RunData:
        """Wrap a result made by ``evaluate()``; ``metadata`` is the run's configuration
        (chunk size, top-k, generator model...) if you have it."""
        config: dict[str, Any] = dict(metadata or {})
        for key, value in (
            ("judge", result.config.get("judge_spec")),
            ("embedder", result.config.get("embedder_spec")),
        ):
            if value is not None and key not in config:
                config[key] = value
        return cls(result, config)


def judge_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run stored that change its judge's verdicts, as a comparison names them:
    ``claim threshold`` (the P(supported) at or above which a claim counts as supported:
    ``--threshold``, or an alignment's) and ``alignment`` (the alignment's name and how many
    worked examples it put in the claim-verdict prompts). Empty for a run that stored none."""
    settings = config.get("settings")
    if not isinstance(settings, Mapping):
        return {}
    out: dict[str, Any] = {}
    if settings.get("support_threshold") is not None:
        out["claim threshold"] = settings["support_threshold"]
    name, block = settings.get("alignment") or "", str(settings.get("verdict_examples") or "")
    if name or block.strip():
        n = count_examples(block)
        out["alignment"] = f"{name or 'worked examples'} ({n} worked example{'' if n == 1 else 's'})"
    return out


def load_runs(store: Store, refs: Sequence[str]) -> list[RunData]:
    """Load runs by id, id prefix or 'last'. The same run given twice is an error."""
    out: list[RunData] = []
    seen: set[str] = set()
    for ref in refs:
        result = load_result(store, ref)
        if result.run_id in seen:
            raise ConfigError(f"run {result.run_id} is given twice ('{ref}'); name different runs")
        seen.add(result.run_id)
        info = store.run(result.run_id)
        config: dict[str, Any] = dict(info.metadata)
        for key, value in (
            ("judge", info.judge),
            ("embedder", info.embedder),
            ("dataset", info.dataset),
        ):
            if value is not None and key not in config:
                config[key] = value
        for m in info.metrics:  # a rubric's definition: two runs may use one name for two rubrics
            digest = (m.get("params") or {}).get("definition_hash")
            if digest and f"rubric {m['key']}" not in config:
                config[f"rubric {m['key']}"] = digest
        out.append(RunData(result, config, info.created_at, tuple(store.labels(result.run_id))))
    return out
