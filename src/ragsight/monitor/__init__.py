"""Online evaluation: ``ragsight monitor``. An OTLP/HTTP receiver stores production spans (each
committed before it is acknowledged), groups them into requests by the conventions
``ragsight import-traces`` reads, samples them deterministically, judges the sample in the
background in micro-batches through :func:`ragsight.run.aevaluate` within a daily budget, and
reads per-window means with their CIs and alerts. Needs ``ragsight[monitor]``; see
docs/monitor.md.

    monitor = Monitor(MonitorConfig(store="prod.db", sample=0.1, alerts=[parse_alert("faithfulness<0.7")]))
    monitor.start(); ...; monitor.stop()
"""

from ._baseline import Baseline, load_baseline, saved_baseline
from ._evaluator import EvalSettings, Evaluator
from ._ledger import is_sampled
from ._ledger import settings as settings_of
from ._monitor import Monitor, MonitorConfig
from ._otlp import DecodeError, TooLarge, decode_request, proto
from ._receiver import Limits, Receiver, parse_address
from ._sinks import AlertSinks
from ._status import current_alerts, status
from ._windows import (
    Alert,
    AlertRule,
    MetricWindow,
    Window,
    find_alerts,
    parse_alert,
    parse_window,
    windows,
)

__all__ = [
    "Alert",
    "AlertRule",
    "AlertSinks",
    "Baseline",
    "DecodeError",
    "EvalSettings",
    "Evaluator",
    "Limits",
    "MetricWindow",
    "Monitor",
    "MonitorConfig",
    "Receiver",
    "TooLarge",
    "Window",
    "current_alerts",
    "decode_request",
    "find_alerts",
    "is_sampled",
    "load_baseline",
    "parse_address",
    "parse_alert",
    "parse_window",
    "proto",
    "saved_baseline",
    "settings_of",
    "status",
    "windows",
]
