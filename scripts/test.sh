#!/usr/bin/env bash
# Set up ragsight with its test dependencies, then lint, type-check and run the whole test suite,
# the embedded judge included, and list the 25 slowest tests. Extra arguments go to pytest
# (e.g. -m "not slow"; -n 0 runs in one process).
# Two workers (pytest-xdist): one loads the embedded model and runs every test that needs it, and
# the Ray tests, one after the other; the other worker runs the rest (tests/model_fixtures.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/ci_system_deps.sh   # Chromium for the HTML report's browser test (Debian; needs root)
.venv/bin/ruff check src tests bench
.venv/bin/mypy
# Bytecode is written (into __pycache__ folders, which git ignores) even where the environment says
# PYTHONDONTWRITEBYTECODE: without it, every run rewrites and compiles some 450 test and ragsight
# modules again, and every ragsight command a test starts compiles ragsight again.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest -q -rs --durations=25 -n 2 --dist loadgroup "$@"
