"""Sub-command ``monitor``: online evaluation of a production RAG's traces (``ragsight monitor``),
what a monitor's store says (``ragsight monitor status``) and its alerts as an exit status for
cron and CI (``ragsight monitor check``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

from ..calls import parse_price_flags, prices_from_config
from ..embed import EmbedderSpec
from ..errors import ConfigError, RagsightError
from ..judge import JudgeSpec
from ..monitor import (
    Baseline,
    EvalSettings,
    Limits,
    Monitor,
    MonitorConfig,
    current_alerts,
    load_baseline,
    parse_address,
    parse_alert,
    parse_window,
    saved_baseline,
    settings_of,
    status,
    windows,
)
from ..store import Store
from ._common import EXIT_FAILED, EXIT_OK, add_store, open_existing, out, say

__all__ = ["register"]

EPILOG = """examples:
  ragsight monitor --otlp 127.0.0.1:4318 --store prod.db --sample 0.1 --judge openai:gpt-4o-mini \\
      --max-cost-per-day 5 --window 1h --alert "faithfulness<0.7" --webhook http://127.0.0.1:9000/hook
  ragsight monitor status --store prod.db --json
  ragsight monitor check --store prod.db --alert "faithfulness<0.7"      (exit 1 when an alert holds)
  ragsight monitor ... --metrics faithfulness --baseline RUN --baseline-store runs.db
      (alert when a window is significantly below the scores of a run 'ragsight evaluate' stored)
point an OpenTelemetry exporter at it: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces
(OpenInference or OpenLLMetry instrumentation). It runs until Ctrl-C or SIGTERM; a restart on the
same store goes on where it stopped. See docs/monitor.md."""


def register(sub: Any) -> None:
    p = sub.add_parser("monitor", help="evaluate production traces as they arrive (OTLP/HTTP), with alerts",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=["status", "check"],
                   help="status: the monitor's counts, windows and alerts; check: exit 1 when an alert holds "
                        "(default: run the monitor)")
    add_store(p)
    p.add_argument("--otlp", default="127.0.0.1:4318", metavar="HOST:PORT",
                   help="where to receive OTLP/HTTP traces (default 127.0.0.1:4318; another address needs --token)")
    p.add_argument("--token", help="a bearer token every request must carry (required off 127.0.0.1)")
    p.add_argument("--sample", type=float, default=1.0, metavar="RATE",
                   help="the share of requests judged, 0 to 1 (default 1); decided by the trace id and --seed")
    p.add_argument("--seed", type=int, default=0, help="the sampling seed (default 0)")
    p.add_argument("--metrics", action="append", help="comma-separated metric names or groups (default: core metrics)")
    p.add_argument("--judge", help="openai:MODEL, local (default), ... as for evaluate")
    p.add_argument("--base-url", help="OpenAI-compatible base URL for the judge (and the embedder)")
    p.add_argument("--embedder", help="openai:MODEL, local (default), ... as for evaluate")
    p.add_argument("--embedder-base-url", help="base URL for the embedder, if not --base-url")
    p.add_argument("--price", action="append", default=[], metavar="MODEL=IN/OUT",
                   help="a judge model's price in dollars per million input/output tokens")
    p.add_argument("--max-cost-per-day", type=float, metavar="USD",
                   help="stop judging for the rest of the UTC day once this much is spent")
    p.add_argument("--window", help="the window length: 30s, 15m, 1h, 1d (default 1h; status and check: the "
                                    "monitor's own)")
    p.add_argument("--alert", action="append", default=[], metavar="METRIC<VALUE",
                   help="alert when a window's mean is below VALUE (METRIC>VALUE: above); repeatable")
    p.add_argument("--min-scored", type=int, metavar="N",
                   help="scored samples a window needs before it can alert (default 10)")
    p.add_argument("--alert-p", type=float, metavar="P",
                   help="an alert when a window is worse than the previous one at this p (default 0.01)")
    p.add_argument("--baseline", metavar="RUN",
                   help="alert when a window is worse than this stored run's scores (an id, a prefix or last; "
                        "one-sided Welch t-test at --alert-p); check: instead of the monitor's own")
    p.add_argument("--baseline-store", metavar="PATH",
                   help="the store that holds the --baseline run (default: --store)")
    p.add_argument("--webhook", metavar="URL", help="POST each alert as JSON to this URL (retried)")
    p.add_argument("--settle", type=float, default=5.0, metavar="SECONDS",
                   help="a trace is complete when its root span ended and nothing came for this long (default 5)")
    p.add_argument("--batch-size", type=int, default=16, help="requests judged per micro-batch (default 16)")
    p.add_argument("--max-queue", type=int, default=10_000,
                   help="sampled requests waiting for the judge beyond which new ones are not evaluated")
    p.add_argument("--max-body-mb", type=float, default=8.0, help="the largest request body (default 8 MB)")
    p.add_argument("--max-spans", type=int, default=20_000, help="the most spans in one request (default 20000)")
    p.add_argument("--concurrency", type=int, help="samples in flight per batch")
    p.add_argument("--backend", choices=["local", "ray"], default="local", help="where batches run (as evaluate)")
    p.add_argument("--ray-address", metavar="ADDRESS", help="the Ray cluster for --backend ray")
    p.add_argument("--json", action="store_true", help="status and check: print JSON")
    p.set_defaults(func=cmd_monitor)


def cmd_monitor(args: argparse.Namespace) -> int:
    window_s = parse_window(args.window) if args.window is not None else None
    rules = [parse_alert(a) for a in args.alert]
    if args.alert_p is not None and not 0 < args.alert_p < 1:
        raise ConfigError(f"--alert-p takes a p-value between 0 and 1, not {args.alert_p:g}")
    if args.baseline_store and not args.baseline:
        raise ConfigError("--baseline-store names the store of a --baseline RUN; give the run too")
    if args.action == "status" and args.baseline:
        raise ConfigError("monitor status shows the alerts the monitor raised, with its own baseline; "
                          "try the baseline with 'monitor check --baseline RUN'")
    if args.action == "status":
        return _status(args, window_s)
    if args.action == "check":
        return _check(args, window_s, rules)
    args.window = args.window or "1h"
    return _run(args, window_s or 3600.0, rules)


def _status(args: argparse.Namespace, window_s: float | None) -> int:
    with open_existing(args.store) as st:
        info = status(st.conn, window_s=window_s)
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2, allow_nan=False))
        return EXIT_OK
    say(out, f"requests received {info['received']:,}; sampled {info['sampled']:,}; evaluated "
             f"{info['evaluated']:,}; pending {info['pending']:,}; not evaluated {info['not_evaluated']:,}; "
             f"unsampled {info['unsampled']:,}; not RAG requests {info['skipped']:,}; open {info['open']:,}",
        markup=False)
    for why, n in info["not_evaluated_reasons"].items():
        say(out, f"  not evaluated ({n:,}): {why}", markup=False)
    b = info["budget"]
    limit = "no limit" if b["limit_usd"] is None else f"limit ${b['limit_usd']:g}"
    say(out, f"spent today (UTC {b['day']}): ${b['spent_usd']:.4f} ({limit})", markup=False)
    for w in info["windows"][-12:]:
        parts = [f"{m} {_num(v['mean'])} [{_num(v['ci_low'])}, {_num(v['ci_high'])}] n={v['n_scored']}"
                 for m, v in sorted(w["metrics"].items())]
        say(out, f"{w['start']}  {sum(w['requests'].values()):,} requests  " + ("; ".join(parts) or "no scores yet"),
            markup=False)
    for a in info["alerts"][:20]:
        say(out, f"ALERT {a['kind']}: {a['message']}", markup=False)
    return EXIT_OK


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _check(args: argparse.Namespace, window_s: float | None, rules: list[Any]) -> int:
    """The alerts that hold now, read from the store's scores with the given rules and baseline
    (the monitor's own rules, baseline, window length, minimum and p when not given)."""
    with open_existing(args.store) as st:
        own = settings_of(st.conn)
        window_s = window_s or float(own.get("window_s") or 3600.0)
        ws = windows(st.conn, window_s)
        own_baseline = saved_baseline(st.conn)
    min_scored = args.min_scored if args.min_scored is not None else int(own.get("min_scored") or 10)
    alpha = args.alert_p if args.alert_p is not None else float(own.get("alpha") or 0.01)
    rules = rules or [parse_alert(r) for r in own.get("alerts") or []]  # none given: the monitor's own
    metrics = ",".join(args.metrics) if args.metrics else own.get("metrics")
    baseline = _baseline(args, metrics, min_scored) if args.baseline else own_baseline
    alerts = current_alerts(ws, rules, min_scored=min_scored, alpha=alpha, baseline=baseline)
    if args.json:
        print(json.dumps({"alerts": [a.to_dict() for a in alerts], "windows": len(ws),
                          "baseline_run": baseline.run_id if baseline is not None else None}, allow_nan=False))
    elif alerts:
        for a in alerts:
            say(out, f"ALERT {a.kind}: {a.message}", markup=False)
    else:
        say(out, f"no alert: {len(ws)} windows of {window_s:g} s read", markup=False)
    return EXIT_FAILED if alerts else EXIT_OK


def _run(args: argparse.Namespace, window_s: float, rules: list[Any]) -> int:
    host, port = parse_address(args.otlp)
    if not 0.0 <= args.sample <= 1.0:
        raise ConfigError(f"--sample takes a share from 0 to 1, not {args.sample:g}")
    if args.max_cost_per_day is not None and not args.max_cost_per_day > 0:
        raise ConfigError(f"--max-cost-per-day must be a positive number of dollars, not {args.max_cost_per_day:g}")
    for flag, value in (("--batch-size", args.batch_size), ("--max-queue", args.max_queue),
                        ("--max-spans", args.max_spans), ("--min-scored", 10 if args.min_scored is None else args.min_scored)):
        if value < 1:
            raise ConfigError(f"{flag} must be at least 1, not {value}")
    prices = {**prices_from_config(None), **parse_price_flags(args.price)}
    spec = JudgeSpec(args.judge, base_url=args.base_url, prices=prices)
    judge: Any = spec
    if args.backend == "local":  # one judge for every batch (the embedded model is loaded once)
        judge = JudgeSpec(spec.make(notice=lambda text: say(out, text, markup=False)), prices=prices)
    if args.max_cost_per_day is not None:
        _check_price(judge)
    metrics = ",".join(v for v in args.metrics if v.strip()) if args.metrics else None
    min_scored = 10 if args.min_scored is None else args.min_scored
    baseline = _baseline(args, metrics, min_scored) if args.baseline else None
    if baseline is not None:  # on stderr: the first line of stdout says where it listens
        print(f"ragsight monitor: {baseline.describe()}", file=sys.stderr, flush=True)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("ragsight.monitor").addHandler(handler)
    logging.getLogger("ragsight.monitor").setLevel(logging.INFO)
    config = MonitorConfig(
        store=args.store, host=host, port=port, sample=args.sample, seed=args.seed, settle_s=args.settle,
        window_s=window_s, alerts=tuple(rules), min_scored=min_scored,
        alpha=0.01 if args.alert_p is None else args.alert_p, baseline=baseline,
        webhook=args.webhook, token=args.token, max_queue=args.max_queue,
        limits=Limits(int(args.max_body_mb * 1024 * 1024), args.max_spans),
        evaluation=EvalSettings(metrics=metrics, judge=judge,
                                embedder=EmbedderSpec(args.embedder, base_url=args.embedder_base_url),
                                max_cost_per_day=args.max_cost_per_day, batch_size=args.batch_size,
                                backend=args.backend, ray_address=args.ray_address,
                                concurrency=args.concurrency))
    monitor = Monitor(config)
    stop = threading.Event()
    got: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        got.append(signum)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        monitor.start()
        shown = f"[{host}]" if ":" in host else host
        print(f"ragsight monitor: receiving OTLP traces on http://{shown}:{monitor.port}/v1/traces; store "
              f"{args.store}; sampling {args.sample:.0%} (seed {args.seed}); windows of {args.window}"
              + ("; a token is required" if args.token else ""), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        monitor.stop()
        for s, h in previous.items():
            signal.signal(s, h)
    with open_existing(args.store) as st:
        info = status(st.conn, window_s=window_s)
    print(f"ragsight monitor: stopped; {info['received']:,} requests stored, {info['evaluated']:,} evaluated, "
          f"{info['pending']:,} pending (the next start goes on with them)", flush=True)
    return EXIT_OK


def _baseline(args: argparse.Namespace, metrics: str | None, min_scored: int) -> Baseline:
    """The --baseline run read from its store (--baseline-store, else --store), checked against
    the monitor's metrics: a missing store, run or metric is a one-line error before anything."""
    path = args.baseline_store or args.store
    if path != ":memory:" and not os.path.exists(path):
        raise ConfigError(f"--baseline {args.baseline}: no store at {path}; give the store that holds the run "
                          "with --baseline-store")
    with Store(path, create=False) as st:
        return load_baseline(st, args.baseline, metrics=metrics, min_scored=min_scored)


def _check_price(judge: Any) -> None:
    from ..calls import price_for

    spec = judge if isinstance(judge, JudgeSpec) else JudgeSpec.of(judge)
    model = spec.model
    name = getattr(model, "name", model if isinstance(model, str) else None)
    plain = getattr(model, "model", None) if not isinstance(model, str) else (model or "").partition(":")[2]
    if price_for(name, plain, spec.price_table) is None:
        raise RagsightError(f"--max-cost-per-day needs the price of the judge {name or 'local'}, and it is not "
                            f"known; give it with --price {plain or 'MODEL'}=IN/OUT (dollars per million tokens)")
