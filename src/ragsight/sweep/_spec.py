"""A sweep definition: what is varied, over which documents and test set, measured how.

The same definition is a Python dict, a TOML file or a YAML file::

    name = "handbook"
    documents = "handbook/"                 # what the reference pipeline indexes
    testset = "testset.jsonl"               # one test set for every configuration
    metrics = ["span_hit_rate", "span_recall", "span_mrr", "span_ndcg", "faithfulness"]
    judge_questions = 5                     # judge metrics on the first 5 questions in scope
    judge_out_of_scope = 2                  # and the first 2 out of scope (default: judge_questions)
    baseline = {chunk_size = 256, top_k = 3, retrieval = "dense"}

    [pipeline]                              # "reference" (default), or a target:
    # target = "my_rag:answer"              #   fn(question, **config)
    # target = "http://localhost:8000/ask"  #   with request_template = {...}
    # target = "cmd:python my_rag.py"       #   {"question", "config"} on stdin
    # target = "callable"                   #   the function given to sweep(..., target=fn)
    # or a LangChain / LlamaIndex pipeline factory:
    # factory = "my_rag:make_pipeline"      #   make_pipeline(**config) -> LCEL runnable or query engine
    # factory = "callable"                  #   the function given to sweep(..., factory=fn)
    # framework, input_key, answer_key, ids #   the adapter's options (docs/integrations/)

    [fixed]                                 # settings shared by every configuration
    chunk_overlap = 32
    generator = "local"

    [grid]                                  # every combination of these
    chunk_size = [256, 512]
    top_k = [3, 5]
    retrieval = ["dense", "fusion"]

    # or a list of configurations (the thesis's Table 3), each over [fixed]:
    # [[configurations]]
    # top_k = 3
    # chunk_size = 512

A test set that does not exist yet is generated once from the documents when ``[generate]``
says how (``size``, ``seed``, ``chunk_size``...), and written to ``testset``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, MissingExtraError
from ..pipeline import PipelineConfig
from ._factory import FACTORY_OPTIONS, FRAMEWORKS

__all__ = ["Configuration", "GenerateSpec", "SweepSpec", "load_sweep"]

# The most configurations a sweep expands to (each is a run of the whole test set); checked on
# the grid's shape before anything is expanded, so a grid of 10^8 never reaches memory.
MAX_CONFIGURATIONS = 10_000
# The most values a YAML sweep file may expand to once its aliases are followed (an alias bomb:
# nine levels of nine aliases make 387 million values from a 1 kB file).
MAX_YAML_VALUES = 100_000
DEFAULT_TARGET_TIMEOUT_S = 60.0

DEFAULT_METRICS = ("span_hit_rate", "span_recall", "span_precision", "span_mrr", "span_ndcg",
                   "faithfulness", "answer_relevancy")
_KEYS = {"name", "documents", "testset", "generate", "pipeline", "fixed", "grid", "configurations",
         "baseline", "metrics", "judge_questions", "judge_out_of_scope", "judge", "embedder", "base_url",
         "concurrency"}


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Configuration:
    """One point of the sweep: its settings (fixed ones included), a short label naming only
    what the sweep varies, and an id stable across runs (a hash of the settings)."""

    params: Mapping[str, Any]
    varied: tuple[str, ...]

    @property
    def id(self) -> str:
        return hashlib.sha256(_canon(dict(self.params)).encode()).hexdigest()[:10]

    @property
    def label(self) -> str:
        keys = self.varied or tuple(self.params)
        return " ".join(f"{k}={self.params.get(k)}" for k in keys) or "default"

    def matches(self, partial: Mapping[str, Any]) -> bool:
        return all(self.params.get(k) == v for k, v in partial.items())


@dataclass(frozen=True)
class GenerateSpec:
    """How to generate the test set once: ``ragsight generate``'s settings."""

    size: int = 20
    seed: int = 0
    chunk_size: int = 60
    chunk_overlap: int = 0
    generator: str | None = None
    types: str | None = None

    def __post_init__(self) -> None:
        for name, low in (("size", 1), ("seed", 0), ("chunk_size", 1), ("chunk_overlap", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"sweep: generate.{name} must be a whole number of at least {low}, not {v!r}")
        for name in ("generator", "types"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise ConfigError(f"sweep: generate.{name} must be a string, not {v!r}")


@dataclass(frozen=True)
class SweepSpec:
    """A parsed, checked sweep definition (see the module docstring)."""

    name: str
    configurations: tuple[Configuration, ...]
    baseline_index: int = 0
    documents: tuple[str, ...] = ()
    testset: str | None = None
    generate: GenerateSpec | None = None
    target: str | None = None  # None (and no factory): the reference pipeline
    request_template: Mapping[str, Any] | None = None
    factory: str | None = None  # a LangChain / LlamaIndex pipeline factory, module:function
    factory_options: Mapping[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    judge_questions: int | None = None
    judge_out_of_scope: int | None = None
    judge: str | None = None
    embedder: str | None = None
    base_url: str | None = None
    concurrency: int = 4
    target_timeout: float = 60.0  # seconds one question may take a target ([pipeline] timeout)
    base_dir: str = "."
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> bool:
        return self.target is None and self.factory is None

    @property
    def baseline(self) -> Configuration:
        return self.configurations[self.baseline_index]

    @property
    def varied(self) -> tuple[str, ...]:
        return self.configurations[0].varied if self.configurations else ()

    def path(self, p: str) -> str:
        return p if os.path.isabs(p) else os.path.normpath(os.path.join(self.base_dir, p))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: str | os.PathLike[str] = ".") -> SweepSpec:
        unknown = sorted(str(k) for k in set(data) - _KEYS)
        if unknown:
            raise ConfigError(f"sweep: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}")
        _check_strings(data)
        name = str(data.get("name") or "sweep")
        pipeline = data.get("pipeline", "reference")
        target: str | None = None
        template = None
        target_timeout = DEFAULT_TARGET_TIMEOUT_S
        factory: str | None = None
        options: dict[str, Any] = {}
        if isinstance(pipeline, str):
            target = None if pipeline == "reference" else pipeline
        elif isinstance(pipeline, Mapping):
            extra = sorted(set(pipeline) - {"target", "request_template", "timeout", "factory", *FACTORY_OPTIONS})
            if extra:
                raise ConfigError(f"sweep: [pipeline] takes target (with request_template and timeout) or factory "
                                  f"(with {', '.join(FACTORY_OPTIONS)}), not {', '.join(extra)}")
            target = pipeline.get("target") or None
            if target is not None and not isinstance(target, str):
                raise ConfigError("sweep: pipeline.target is module:function, http(s)://URL or cmd:COMMAND")
            if "timeout" in pipeline:
                t = pipeline["timeout"]
                if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 86_400:
                    raise ConfigError(f"sweep: pipeline.timeout is the seconds one question may take the "
                                      f"target, a number above 0 (at most a day), not {t!r}")
                target_timeout = float(t)
            template = pipeline.get("request_template")
            if template is not None and not isinstance(template, Mapping):
                raise ConfigError("sweep: pipeline.request_template must be a table (a JSON object)")
            factory = pipeline.get("factory") or None
            options = {k: pipeline[k] for k in FACTORY_OPTIONS if pipeline.get(k) is not None}
            if factory is not None and target is not None:
                raise ConfigError("sweep: [pipeline] takes a target or a factory, not both")
            if options and factory is None:
                raise ConfigError(f"sweep: [pipeline] {', '.join(options)} go with a factory")
            if factory is not None and not isinstance(factory, str):
                raise ConfigError("sweep: pipeline.factory is 'module:function' (or 'callable')")
            for k, v in options.items():
                if not isinstance(v, str):
                    raise ConfigError(f"sweep: pipeline.{k} must be a string, not {type(v).__name__}")
            if options.get("framework") not in (None, *FRAMEWORKS):
                raise ConfigError(f"sweep: pipeline.framework must be {' or '.join(FRAMEWORKS)}, "
                                  f"not {options['framework']!r}")
        else:
            raise ConfigError("sweep: pipeline must be 'reference' or a table with target or factory")
        fixed = data.get("fixed") or {}
        grid = data.get("grid") or {}
        listed = data.get("configurations") or []
        if not isinstance(fixed, Mapping):
            raise ConfigError("sweep: fixed must be a table of settings")
        fixed = dict(fixed)
        if not isinstance(grid, Mapping) or isinstance(listed, (str, bytes)) or not isinstance(listed, Sequence):
            raise ConfigError("sweep: grid must be a table of lists; configurations a list of tables")
        configs = expand(fixed, grid, listed)
        if target is None and factory is None:
            for c in configs:
                try:
                    PipelineConfig.from_mapping(c.params)
                except ConfigError as exc:
                    raise ConfigError(f"sweep configuration '{c.label}': {exc}") from None
        baseline_index = 0
        base = data.get("baseline")
        if base is not None:
            if not isinstance(base, Mapping):
                raise ConfigError("sweep: baseline must be a table of settings, e.g. {top_k = 3}")
            hits = [i for i, c in enumerate(configs) if c.matches(base)]
            if not hits:
                raise ConfigError(f"sweep: no configuration matches the baseline {dict(base)}")
            if len(hits) > 1:
                raise ConfigError(f"sweep: {len(hits)} configurations match the baseline {dict(base)}; "
                                  "name more settings")
            baseline_index = hits[0]
        docs = data.get("documents") or ()
        documents = (docs,) if isinstance(docs, str) else tuple(str(d) for d in docs)
        gen = data.get("generate")
        generate = None
        if gen is not None:
            if not isinstance(gen, Mapping):
                raise ConfigError("sweep: generate must be a table (size, seed, ...)")
            try:
                generate = GenerateSpec(**dict(gen))
            except TypeError as exc:
                raise ConfigError(f"sweep: generate: {exc}") from None
        metrics = data.get("metrics") or DEFAULT_METRICS
        if isinstance(metrics, str):
            metrics = [m.strip() for m in metrics.split(",") if m.strip()]
        jq = data.get("judge_questions")
        jo = data.get("judge_out_of_scope", jq)
        for key, v in (("judge_questions", jq), ("judge_out_of_scope", jo)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ConfigError(f"sweep: {key} must be an integer >= 0 (or left out for all)")
        if target is None and factory is None and not documents:
            raise ConfigError("sweep: the reference pipeline needs documents (a folder or files)")
        testset = data.get("testset")
        if testset is None and generate is None:
            raise ConfigError("sweep: give a testset file, or [generate] to make one from the documents")
        if generate is not None and testset is None:
            testset = f"{name}.testset.jsonl"
        return cls(
            name=name, configurations=tuple(configs), baseline_index=baseline_index,
            documents=documents, testset=str(testset) if testset else None, generate=generate,
            target=target, request_template=template, factory=factory, factory_options=options, metrics=tuple(metrics), judge_questions=jq,
            judge_out_of_scope=jo,
            judge=data.get("judge"), embedder=data.get("embedder"), base_url=data.get("base_url"),
            concurrency=_concurrency(data.get("concurrency")), base_dir=str(base_dir), raw=dict(data),
            target_timeout=target_timeout,
        )


def _concurrency(value: Any) -> int:
    if value is None:
        return 4
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
        raise ConfigError(f"sweep: concurrency must be a whole number from 1 to 1024, not {value!r}")
    return value


def _check_strings(data: Mapping[str, Any]) -> None:
    for key in ("name", "testset", "judge", "embedder", "base_url"):
        v = data.get(key)
        if v is not None and not isinstance(v, str):
            raise ConfigError(f"sweep: {key} must be a string, not {type(v).__name__}")
    docs = data.get("documents")
    if docs is not None and not isinstance(docs, str) and (
            not isinstance(docs, Sequence) or not all(isinstance(d, str) for d in docs)):
        raise ConfigError("sweep: documents must be a path or a list of paths")
    metrics = data.get("metrics")
    if metrics is not None and not isinstance(metrics, str) and (
            not isinstance(metrics, Sequence) or not all(isinstance(m, str) for m in metrics)):
        raise ConfigError("sweep: metrics must be a list of metric names")


def expand(fixed: Mapping[str, Any], grid: Mapping[str, Any],
           listed: Sequence[Mapping[str, Any]]) -> list[Configuration]:
    """The configurations: every combination of the grid's values (in the order written, the
    last key varying fastest), then the listed ones, each over the fixed settings."""
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"sweep: grid.{key} must be a non-empty list of values")
    size = len(listed) + (math.prod(len(v) for v in grid.values()) if grid else 0)
    if size > MAX_CONFIGURATIONS:  # counted before anything is expanded
        shape = " x ".join(f"{len(v)} {k}" for k, v in grid.items())
        raise ConfigError(f"sweep: {size:,} configurations ({shape}{' + listed' if listed else ''}) is more "
                          f"than the {MAX_CONFIGURATIONS:,} a sweep runs; each is a run of the whole test set. "
                          "Split the grid, or list the configurations you mean")
    points: list[dict[str, Any]] = []
    if grid:
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            points.append({**fixed, **dict(zip(keys, combo))})
    for item in listed:
        if not isinstance(item, Mapping):
            raise ConfigError("sweep: each configurations entry must be a table of settings")
        points.append({**fixed, **dict(item)})
    if not points:
        points.append(dict(fixed))
    varied = tuple(k for k in dict.fromkeys(k for p in points for k in p)
                   if len({_canon(p.get(k)) for p in points}) > 1)
    configs = [Configuration(p, varied) for p in points]
    seen: dict[str, str] = {}
    for c in configs:
        if c.id in seen:
            raise ConfigError(f"sweep: configuration '{c.label}' is given twice")
        seen[c.id] = c.label
    return configs


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError as exc:
            raise MissingExtraError("reading a TOML sweep on Python 3.10", "sweep", "tomli") from exc
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc}).") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except RecursionError:
        raise InputError(f"{path}: nests too deeply to read.") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtraError("reading a YAML sweep", "sweep", "yaml") from exc
    try:
        text = path.read_text("utf-8")
        _check_yaml_size(yaml.compose(text, Loader=yaml.SafeLoader), path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({exc}).") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except RecursionError:
        raise InputError(f"{path}: nests too deeply to read.") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a sweep file holds a mapping (name, grid, ...), not {type(data).__name__}")
    return data


def _check_yaml_size(root: Any, path: Path) -> None:
    """Refuse a YAML document whose aliases expand to more than MAX_YAML_VALUES values, or that
    refers to itself, before it is constructed (sizes shared through aliases counted once per
    use, from the node graph)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise InputError(f"{path}: the YAML refers to itself (an alias inside its own anchor); "
                             "write the values out")
        active.add(key)
        total = 1
        value = getattr(node, "value", None)
        if isinstance(value, list):
            for item in value:
                for child in (item if isinstance(item, tuple) else (item,)):
                    total += size(child)
                    if total > MAX_YAML_VALUES:
                        raise InputError(f"{path}: the YAML expands to more than {MAX_YAML_VALUES:,} values "
                                         "(anchors and aliases repeated inside each other); write the "
                                         "sweep out plainly")
        active.discard(key)
        sizes[key] = total
        return total

    if root is not None:
        size(root)


def load_sweep(source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec) -> SweepSpec:
    """A sweep from a dict, a ``.toml`` or ``.yaml``/``.yml`` file, or a SweepSpec. Relative
    paths in a file are taken from the file's folder."""
    if isinstance(source, SweepSpec):
        return source
    if isinstance(source, Mapping):
        return SweepSpec.from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise InputError(f"{path}: no such sweep file (.toml, .yaml or .yml).")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        data = _read_toml(path)
    elif suffix in (".yaml", ".yml"):
        data = _read_yaml(path)
    else:
        raise InputError(f"{path}: a sweep file is .toml, .yaml or .yml, not '{suffix}'.")
    try:
        return SweepSpec.from_dict(data, base_dir=path.parent)
    except (ConfigError, InputError, MissingExtraError):
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError) as exc:
        # a value of a shape no check above expected: the file's fault, said as such
        raise ConfigError(f"{path}: not a usable sweep file ({type(exc).__name__}: {str(exc)[:200]}); "
                          "see docs/sweep.md for its keys") from None
