"""The machine as the bench scripts read it around a measurement: the 1-minute load average (and
waiting for it to fall), this process's resident memory."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path


def load1() -> float:
    return os.getloadavg()[0]


def wait_for_quiet(limit: float | None, max_wait: float) -> float:
    """Wait until the 1-minute load is below ``limit`` (at most ``max_wait`` s); return the load."""
    if not limit:
        return load1()
    t0 = time.monotonic()
    while load1() >= limit and time.monotonic() - t0 < max_wait:
        time.sleep(10)
    ld = load1()
    if ld >= limit:
        print(f"  (load still {ld:.2f} after waiting {max_wait:.0f} s; measuring anyway)")
    return ld


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def rss_mb() -> float:
    """This process's resident memory now (VmRSS), in MB; the peak where /proc is not there."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return peak_mb()
