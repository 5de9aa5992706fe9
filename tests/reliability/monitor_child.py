"""A monitor in a process of its own, judged by the scripted world (slowed down by --delay seconds
a judge call), for the kill -9 tests: prints ``PORT n`` once it listens, stops on SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ragsight.judge import Judge, JudgeSpec, ScriptedProvider
from ragsight.monitor import EvalSettings, Monitor, MonitorConfig
from tests.fakes import scripted_world


def slowed(delay: float) -> ScriptedProvider:
    def wrap(f: Any) -> Any:
        def g(v: Any) -> Any:
            time.sleep(delay)
            return f(v)
        return g

    return ScriptedProvider({"extract_claims": wrap(scripted_world.extract_claims),
                             "verify_claims": wrap(scripted_world.verify_claims)}, model="scripted-world")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--sample", type=float, default=1.0)
    p.add_argument("--settle", type=float, default=0.3)
    p.add_argument("--max-open", type=float, default=2.0)
    args = p.parse_args()
    m = Monitor(MonitorConfig(store=args.store, port=args.port, sample=args.sample, seed=1, settle_s=args.settle, max_open_s=args.max_open,
                              tick_s=0.05, evaluation=EvalSettings(metrics=["faithfulness"], batch_size=4, poll_s=0.05,
                                                                   judge=JudgeSpec(Judge(slowed(args.delay))))))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    m.start()
    print(f"PORT {m.port}", flush=True)
    stop.wait()
    m.stop()
    print("STOPPED", flush=True)


if __name__ == "__main__":
    main()
