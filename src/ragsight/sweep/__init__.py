"""Sweeps: run a RAG pipeline in many configurations on one test set and find the best one.

    result = await asweep("handbook.toml", store="runs.db")      # or sweep(...) synchronously
    report = build_report(Store("runs.db"), result.spec.name)
    print_sweep_report(report); write_sweep_html(report, "sweep.html")

The command line offers the same: ``ragsight sweep SWEEP.toml``, ``ragsight sweep --example`` and
``ragsight sweep report``; see ``docs/sweep.md``. A LangChain or LlamaIndex pipeline factory is
swept with ``sweep(..., factory=make_pipeline)`` or ``[pipeline] factory = "module:function"``.
"""

from ._answer import ConfigRun
from ._example import example_spec
from ._factory import SpanLocator
from ._html import render_sweep_html, write_sweep_html
from ._model import ConfigSummary, Effect, EffectStep, MetricComparison, SweepReport
from ._plan import SweepPlan, plan_sweep
from ._print import print_sweep_report
from ._questions import judged_ids
from ._report import build_report, sweep_names
from ._run import SweepResult, asweep, sweep
from ._spec import Configuration, GenerateSpec, SweepSpec, load_sweep

__all__ = [
    "ConfigRun",
    "ConfigSummary",
    "Configuration",
    "Effect",
    "EffectStep",
    "GenerateSpec",
    "MetricComparison",
    "SpanLocator",
    "SweepPlan",
    "SweepReport",
    "SweepResult",
    "SweepSpec",
    "asweep",
    "build_report",
    "example_spec",
    "judged_ids",
    "load_sweep",
    "plan_sweep",
    "print_sweep_report",
    "render_sweep_html",
    "sweep",
    "sweep_names",
    "write_sweep_html",
]
