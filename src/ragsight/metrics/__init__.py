"""Metrics: the registry, selection by name or group, and the metric classes.

A metric is named as in the spec (``faithfulness``); parameters go in brackets:
``factual_correctness(mode=recall)``, ``noise_sensitivity(mode=irrelevant)``,
``answer_correctness(weights=0.6/0.4)``, ``hit_rate(k=5)``, ``trajectory_match(mode=unordered,
args=keys:city,date)`` (a part without ``=`` after a ``name:a`` value continues its list). Results are
reported under the name exactly as given.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..dataset import Sample
from ..errors import ConfigError
from ._base import OUT_OF_SCOPE_SKIP, Metric
from .abstention import Abstention
from .answer_correctness import AnswerCorrectness
from .answer_relevancy import AnswerRelevancy
from .answer_similarity import AnswerSimilarity
from .citation_precision import CitationPrecision
from .citation_recall import CitationRecall
from .context_entity_recall import ContextEntityRecall
from .context_precision import ContextPrecision, ContextPrecisionWithoutReference
from .context_recall import ContextRecall
from .context_relevance import ContextRelevance
from .conversation import (
    AgentGoalAccuracy,
    ConversationCompleteness,
    KnowledgeRetention,
    RoleAdherence,
)
from .factual_correctness import FactualCorrectness
from .faithfulness import Faithfulness
from .noise_sensitivity import NoiseSensitivity
from .tool_calls import (
    ConversationToolCallAccuracy,
    ConversationToolCallF1,
    ToolCallAccuracy,
    ToolCallF1,
)

if TYPE_CHECKING:
    from .rubric import RubricMetric

__all__ = [
    "GROUPS",
    "OUT_OF_SCOPE_SKIP",
    "REGISTRY",
    "Abstention",
    "AgentGoalAccuracy",
    "AnswerCorrectness",
    "AnswerRelevancy",
    "AnswerSimilarity",
    "CitationPrecision",
    "CitationRecall",
    "ContextEntityRecall",
    "ContextPrecision",
    "ContextPrecisionWithoutReference",
    "ContextRecall",
    "ContextRelevance",
    "ConversationCompleteness",
    "ConversationToolCallAccuracy",
    "ConversationToolCallF1",
    "FactualCorrectness",
    "Faithfulness",
    "KnowledgeRetention",
    "Metric",
    "NoiseSensitivity",
    "RoleAdherence",
    "ToolCallAccuracy",
    "ToolCallF1",
    "check_threshold",
    "default_metrics",
    "load_rubrics",
    "metric_names",
    "metrics_of_run",
    "named_on_their_own",
    "register",
    "resolve_metrics",
]

REGISTRY: dict[str, type[Metric]] = {}
GROUPS = ("retrieval", "generation", "reference-free", "lexical", "ir", "agent", "conversation")


def register(cls: type[Metric]) -> type[Metric]:
    """Register a metric class under its ``name`` (usable as a decorator)."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ConfigError(f"a metric named '{cls.name}' is already registered")
    REGISTRY[cls.name] = cls
    return cls


for _cls in (
    Faithfulness, AnswerRelevancy, ContextPrecision, ContextPrecisionWithoutReference,
    ContextRecall, FactualCorrectness, AnswerCorrectness, AnswerSimilarity, NoiseSensitivity,
    ContextRelevance, ContextEntityRecall, Abstention, CitationPrecision, CitationRecall,
    ToolCallAccuracy, ToolCallF1, ConversationToolCallAccuracy, ConversationToolCallF1,
    KnowledgeRetention, ConversationCompleteness, RoleAdherence, AgentGoalAccuracy,
):
    register(_cls)


def metric_names() -> list[str]:
    _load_optional()
    return sorted(REGISTRY)


def _load_optional() -> None:
    # IR, lexical and agent metrics register themselves on import.
    from . import agents, ir, lexical, rubric, similarity_mrr, span_ir  # noqa: F401


_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")


def _coerce(value: str) -> Any:
    v = value.strip()
    if "/" in v:
        return tuple(_coerce(p) for p in v.split("/"))
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def _finite(spec: str, name: str, value: Any) -> None:
    """Refuse NaN and infinity (also 1e999, which reads as infinity) in a parameter, before any
    judge call: no metric can compute with them."""
    for v in value if isinstance(value, tuple) else (value,):
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(
                f"metric '{spec}': parameter {name}={v} is not a finite number; give a number such as "
                "0.5 or 2")


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    m = _SPEC.match(spec)
    if not m:
        raise ConfigError(f"cannot read metric '{spec}'; write name or name(param=value, ...)")
    name, args = m.group(1).lower(), m.group(2)  # Faithfulness is faithfulness
    params: dict[str, Any] = {}
    if args:
        last: tuple[str, str] | None = None  # the previous parameter and its text
        for part in args.split(","):
            if "=" not in part:
                if last is not None and ":" in last[1] and part.strip():  # keys:city,date: a list goes on
                    last = (last[0], f"{last[1]},{part.strip()}")
                    params[last[0]] = last[1]
                    continue
                raise ConfigError(f"metric '{spec}': parameter '{part.strip()}' needs the form name=value")
            k, _, v = part.partition("=")
            params[k.strip()] = _coerce(v)
            last = (k.strip(), v.strip())
            _finite(spec, k.strip(), params[k.strip()])
    return name, params


def _unknown(*unknown: str) -> ConfigError:
    names = metric_names()
    known = f"Known metrics: {', '.join(names)}; groups: {', '.join(GROUPS)}, all."

    def close(name: str) -> str | None:
        found = difflib.get_close_matches(name, names + list(GROUPS), n=1)
        return found[0] if found else None

    if len(unknown) == 1:
        near = close(unknown[0])
        hint = f" Did you mean '{near}'?" if near else ""
        return ConfigError(f"unknown metric '{unknown[0]}'.{hint} {known}")
    said = [f"'{n}'" + (f" (did you mean '{near}'?)" if (near := close(n)) else "") for n in unknown]
    return ConfigError(f"unknown metrics {', '.join(said)}. {known}")


def resolve_metrics(specs: Iterable[str] | str | None, samples: Sequence[Sample] = ()) -> list[Metric]:
    """Turn names, groups (``retrieval``...), ``all`` or ``default`` into metric instances.

    ``all`` and groups select the metrics the data's fields allow (at least one sample has the
    fields); names are always kept (a sample lacking fields then gets ``skipped``).
    """
    _load_optional()
    if specs is None:
        specs = ["default"]
    specs = list(_split_specs(specs)) if isinstance(specs, str) else list(specs)  # read twice below
    out: list[Metric] = []
    seen: set[str] = set()
    empty_groups: list[str] = []
    not_installed: dict[str, list[str]] = {}  # extra -> metrics of 'all' or a group left out
    unknown = [name for name in (parse_spec(x.strip())[0] for x in specs if x.strip()
                                 and x.strip().lower() not in ("default", "core", "all", *GROUPS))
               if name not in REGISTRY]
    if unknown:  # every misspelt name at once, not one per attempt
        raise _unknown(*dict.fromkeys(unknown))

    def add(m: Metric) -> None:
        if m.key not in seen:
            seen.add(m.key)
            out.append(m)

    for spec in specs:
        spec = spec.strip()
        if not spec:
            continue
        if spec.lower() in ("default", "core"):
            for m in default_metrics(samples):
                add(m)
            continue
        if spec.lower() == "all" or spec.lower() in GROUPS:
            spec = spec.lower()
            members = [REGISTRY[n] for n in sorted(REGISTRY) if spec == "all" or spec in REGISTRY[n].groups]
            fitting = [m for m in (cls() for cls in members)
                       if not samples or any(m.missing(s) is None for s in samples)]
            fitting = _installed(fitting, spec, not_installed)
            for m in fitting:
                add(m)
            if members and not fitting:
                empty_groups.append(_why_none_fits(spec, members))
            continue
        name, params = parse_spec(spec)
        found = REGISTRY[name]
        _check_params(found, name, spec, params)
        key = name + spec.strip()[len(name):] if params else name
        try:
            add(found(key=key, **params) if params else found())
        except TypeError as exc:
            raise ConfigError(f"metric '{spec}': {exc}") from exc
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
    if not_installed:
        left = "; ".join(f"{', '.join(dict.fromkeys(keys))} (pip install 'ragsight[{extra}]')"
                         for extra, keys in not_installed.items())
        warnings.warn(f"left out, their optional package is not installed: {left}", UserWarning, stacklevel=2)
    if empty_groups and out:
        warnings.warn(f"{'; '.join(empty_groups)}; the other metrics run", UserWarning, stacklevel=2)
    if not out:
        if empty_groups:
            raise ConfigError(f"no metric selected: {'; '.join(empty_groups)}")
        raise ConfigError("no metric selected; name at least one with --metrics")
    _check_tool_call_level(out, samples)
    return out


def named_on_their_own(specs: Iterable[str | Metric] | str | None) -> set[str]:
    """The keys of the metrics named on their own in ``specs`` (a name, a name with parameters,
    or an instance), not chosen by ``all``, ``default`` or a group: a metric the judge cannot
    score right is refused when named, and left out, said, when a group chose it."""
    if specs is None:
        return set()
    items = _split_specs(specs) if isinstance(specs, str) else list(specs)
    out: set[str] = set()
    for x in items:
        if isinstance(x, Metric):
            out.add(x.key)
            continue
        spec = x.strip()
        if not spec or spec.lower() in ("default", "core", "all", *GROUPS):
            continue
        name, params = parse_spec(spec)
        out.add(name + spec[len(name):] if params else name)
    return out


def _check_tool_call_level(chosen: Sequence[Metric], samples: Sequence[Sample]) -> None:
    """Stop before any work when a turn's tool-call metric is asked for on conversations whose
    reference calls sit on the conversation (ragas' MultiTurnSample keeps them there) and on no
    turn: every turn would be skipped for a field the file does have. The conversation form of
    the metric is the one that reads them; the error names it."""
    turn_forms = [m for m in chosen if m.name in ("tool_call_accuracy", "tool_call_f1")]
    if not turn_forms:
        return
    on_conversation = [s for s in samples if s.conversation_id is not None and s.turn is None
                       and s.reference_tool_calls is not None]
    on_turns = any(s.turn is not None and s.reference_tool_calls is not None for s in samples)
    if not on_conversation or on_turns:
        return
    asked = ", ".join(m.key for m in turn_forms)
    forms = ", ".join(f"conversation_{m.name}" for m in turn_forms)
    raise ConfigError(
        f"{asked} judges each turn against that turn's reference calls, but the reference calls of "
        f"{len(on_conversation)} conversation(s) (the first: '{on_conversation[0].conversation_id}') are given "
        f"for the whole conversation, as ragas' MultiTurnSample keeps them, and no turn has its own: "
        f"ask for {forms} (every call of the conversation against its reference calls, as ragas scores "
        f"them); nothing was run.")


def metrics_of_run(records: Sequence[Mapping[str, Any]], samples: Sequence[Sample] = ()) -> list[Metric]:
    """The metrics a stored run measured, from its metric records (``key``, ``name``,
    ``params``): a rubric is rebuilt from the definition stored with the run (no registration
    needed, in any process), every other metric is resolved by its key."""
    from .rubric import RubricMetric

    out: list[Metric] = []
    for rec in records:
        definition = (rec.get("params") or {}).get("definition")
        if isinstance(definition, Mapping) and "criteria" in definition:
            try:
                out.append(RubricMetric.from_definition(definition, key=rec["key"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"the run's rubric '{rec['key']}' cannot be rebuilt from the store: {exc}") from None
        else:
            out.extend(resolve_metrics([rec["key"]], samples))
    return out


def load_rubrics(path: str | Path, *, required: bool = True) -> list[RubricMetric]:
    """The rubrics of a TOML file, as metrics to pass to ``evaluate`` (``[rubrics.NAME]`` or
    ``[tool.ragsight.rubrics.NAME]`` tables; docs/rubrics.md). ConfigError names the key of a
    table that cannot be used."""
    from ._rubric_toml import load_rubrics as load

    return load(path, required=required)


def _check_params(cls: type[Metric], name: str, spec: str, params: dict[str, Any]) -> None:
    """A ConfigError naming the parameter a metric does not take, and the ones it does."""
    if not params:
        return
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "key")]
    if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values()):
        return
    unknown = [k for k in params if k not in accepted]
    if unknown:
        takes = f"its parameters: {', '.join(accepted)}" if accepted else "it takes no parameter"
        close = difflib.get_close_matches(unknown[0], accepted, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(f"metric '{spec.strip()}': {name} has no parameter '{unknown[0]}'{hint}; {takes}")


def _why_none_fits(spec: str, classes: Sequence[type[Metric]]) -> str:
    """Why a group selected no metric: the fields its metrics need, which no sample has."""
    wanted: list[str] = []
    for cls in classes:
        for f in [*cls.requires, *(" or ".join(g) for g in cls.requires_any)]:
            if f not in wanted:
                wanted.append(f)
    what = "the metrics" if spec == "all" else f"the {spec} metrics"
    return f"{what} need {', '.join(wanted)}, which no sample has ('{spec}' selects none)"


def _split_specs(text: str) -> list[str]:
    """Split 'a,b(x=1,y=2),c' at top-level commas."""
    parts: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def default_metrics(samples: Sequence[Sample]) -> list[Metric]:
    """The core metrics the data's fields allow: faithfulness, answer_relevancy, context_recall,
    and context_precision (with a reference) or context_precision_without_reference; plus
    abstention when the data marks a question out of scope (``Sample.out_of_scope``)."""
    candidates: list[Metric] = [Faithfulness(), AnswerRelevancy(), ContextPrecision(), ContextRecall()]
    chosen = [m for m in candidates if not samples or any(m.missing(s) is None for s in samples)]
    has_ref_cp = any(isinstance(m, ContextPrecision) and not isinstance(m, ContextPrecisionWithoutReference) for m in chosen)
    if not has_ref_cp:
        alt = ContextPrecisionWithoutReference()
        if not samples or any(alt.missing(s) is None for s in samples):
            chosen.insert(2, alt)
    if any(s.out_of_scope for s in samples):
        abstain = Abstention()
        if any(abstain.missing(s) is None for s in samples):
            chosen.append(abstain)
    return chosen or candidates


def check_threshold(spec: str, value: Any, where: str | None = None) -> tuple[Metric, float]:
    """The one check of a threshold on a metric's scores (``assert_scores``, the CLI's
    ``--fail-under``/``--fail-over`` and ``[tool.ragsight]``): the metric (a typo gets the close
    name) and the value as a float. A ConfigError when the value is not a finite number (a
    boolean is not one) or lies outside the range of scores (-1 to 1; "80" gets "did you mean
    0.8?"), since every sample would then fail, or pass, whatever it scored. ``where`` names the
    threshold in the message (default: ``threshold for 'SPEC'``)."""
    place = where or f"threshold for {spec!r}"
    metric = resolve_metrics([spec])[0]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"{place} must be a number, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{place} must be a number, not {value!r}")
    if not math.isfinite(value):  # every comparison with NaN is false: every sample would pass
        raise ConfigError(f"{place} is {value!r}; give a number between 0 and 1")
    if not -1.0 <= value <= 1.0:  # scores are fractions (cosine metrics: -1 to 1)
        hint = f"; did you mean {value / 100:g}?" if 1 < value <= 100 else ""
        what = f"threshold {value:g} for {spec!r}" if where is None else f"{where}: the threshold {value:g}"
        raise ConfigError(f"{what} is outside the range of its scores (0 to 1), so every sample would "
                          f"fail, or pass, whatever it scored{hint}")
    return metric, float(value)


def _installed(metrics: list[Metric], spec: str, left_out: dict[str, list[str]]) -> list[Metric]:
    """The metrics of ``all`` or a group whose optional packages are installed; the others are
    noted in ``left_out`` (extra -> keys), not chosen (a metric named on its own is kept, and the
    run's preflight names the extra to install)."""
    kept = []
    for m in metrics:
        missing = [extra for module, extra in m.packages if importlib.util.find_spec(module) is None]
        if missing:
            left_out.setdefault(missing[0], []).append(m.key)
        else:
            kept.append(m)
    return kept
