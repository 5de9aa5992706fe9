#!/usr/bin/env bash
# Set up ragsight with its test dependencies, then lint, type-check and run the whole test suite,
# the embedded judge included. Extra arguments go to pytest (e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/ci_system_deps.sh   # Chromium for the HTML report's browser test (Debian; needs root)
.venv/bin/ruff check src tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q -rs "$@"
