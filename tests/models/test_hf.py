"""The transformers backend on a tiny random GPT-2 (fast: builds in a few seconds, runs on CPU).

The weights are random, so the text is gibberish; the tests check the plumbing that matters for
the benchmark: determinism of greedy decoding, batching with left padding giving the same answers
as one-by-one calls, stop strings, token accounting, chat templates and the constraint hook.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from callbench.errors import ConfigError, MissingExtraError
from callbench.models.base import GenerationConfig, ModelInput
from callbench.models.registry import load_model

PROMPTS = ["def add(a, b):", "import requests\n\nresponse = requests.get(", "x"]


def _inp(prompt: str, constraint=None) -> ModelInput:
    return ModelInput(
        sample_id=prompt[:8],
        prompt=prompt,
        messages=[{"role": "user", "content": prompt}],
        constraint=constraint,
    )


def _gen(backend, inp, **cfg):
    return asyncio.run(backend.generate(inp, GenerationConfig(**cfg)))


def _batch(backend, inputs, **cfg):
    return asyncio.run(backend.generate_batch(inputs, GenerationConfig(**cfg)))


@pytest.fixture(scope="module")
def backend(tiny_gpt2_dir):
    return load_model(f"hf:{tiny_gpt2_dir}", device="cpu")


def test_missing_extra_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtraError) as err:
        load_model("hf:/nowhere")
    assert err.value.extra == "hf"


def test_bad_target_and_options(tmp_path, tiny_gpt2_dir):
    with pytest.raises(ConfigError, match="not a local model directory"):
        load_model(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ConfigError, match="unknown option"):
        load_model(f"hf:{tiny_gpt2_dir}", batchsize=2)
    with pytest.raises(ConfigError, match="unknown dtype"):
        load_model(f"hf:{tiny_gpt2_dir}", dtype="float7")
    with pytest.raises(ConfigError, match="cannot load"):
        load_model(f"hf:{tmp_path}")


def test_capabilities(backend):
    assert backend.max_concurrency == 1 and backend.steerable
    assert backend.mode == "completion" and backend.modes == ("completion", "chat")
    assert backend.identity.endswith("[completion,heal]")


def test_greedy_generate_is_deterministic(backend):
    first = _gen(backend, _inp(PROMPTS[0]), max_tokens=8)
    second = _gen(backend, _inp(PROMPTS[0]), max_tokens=8)
    assert first.text == second.text and first.text
    assert first.mode == "completion"
    assert first.completion_tokens == 8 and first.finish_reason == "length"
    assert first.prompt_tokens == len(backend.tokenizer(PROMPTS[0])["input_ids"])
    assert first.latency_s > 0


def test_batch_matches_single_calls(backend):
    """Left padding must not change answers: a batch equals the same prompts one by one."""
    singles = [_gen(backend, _inp(p), max_tokens=6).text for p in PROMPTS]
    batched = _batch(backend, [_inp(p) for p in PROMPTS], max_tokens=6)
    assert [o.text for o in batched] == singles
    assert [o.prompt_tokens for o in batched] == [len(backend.tokenizer(p)["input_ids"]) for p in PROMPTS]
    assert all(o.extra["batch_size"] == 3 for o in batched)
    assert _batch(backend, [], max_tokens=6) == []


def test_batch_is_chunked(tiny_gpt2_dir):
    small = load_model(f"hf:{tiny_gpt2_dir}", device="cpu", batch_size="2")
    outs = _batch(small, [_inp(p) for p in PROMPTS], max_tokens=4)
    assert [o.extra["batch_size"] for o in outs] == [2, 2, 1]


def test_stop_string_truncates(backend):
    full = _gen(backend, _inp(PROMPTS[1]), max_tokens=10).text
    stop = full[3:5]
    out = _gen(backend, _inp(PROMPTS[1]), max_tokens=10, stop=(stop,))
    assert out.text == full[: full.index(stop)]
    assert out.finish_reason == "stop"
    assert out.completion_tokens < 10


def test_sampling_is_seeded(backend):
    a = _gen(backend, _inp(PROMPTS[0]), max_tokens=8, temperature=1.0, seed=3)
    b = _gen(backend, _inp(PROMPTS[0]), max_tokens=8, temperature=1.0, seed=3)
    assert a.text == b.text


class ForceToken:
    """A stand-in constraint: allows exactly one token at every step, and logs what it was shown."""

    def __init__(self, text: str):
        self.text = text
        self.seen_lengths: list[int] = []

    def server_body(self, *, heal=""):
        raise AssertionError("an in-process backend asks for no server body")

    def processor(self, kind, tokenizer, *, heal="", max_tokens=None):
        assert kind == "hf"
        import torch
        from transformers import LogitsProcessor

        token = tokenizer(self.text, add_special_tokens=False)["input_ids"][0]
        seen = self.seen_lengths

        class Force(LogitsProcessor):
            def __call__(self, input_ids, scores):
                assert input_ids.shape[0] == 1
                seen.append(input_ids.shape[1])
                forced = torch.full_like(scores, float("-inf"))
                forced[:, token] = 0.0
                return forced

        return Force()


def test_constraint_forces_token(backend):
    piece = " zebra"
    token = backend.tokenizer(piece, add_special_tokens=False)["input_ids"][0]
    expected = backend.tokenizer.decode([token]) * 5
    out = _gen(backend, _inp(PROMPTS[0], ForceToken(piece)), max_tokens=5)
    assert out.text == expected and out.extra["constrained"]


def test_constraint_per_row_in_a_batch(backend):
    """Only the constrained row is forced, and its processor sees its own unpadded row."""
    constraint = ForceToken(" zebra")
    inputs = [_inp(PROMPTS[1]), _inp(PROMPTS[2], constraint)]
    free = _gen(backend, inputs[0], max_tokens=4).text
    outs = _batch(backend, inputs, max_tokens=4)
    assert outs[0].text == free and not outs[0].extra["constrained"]
    token = backend.tokenizer(" zebra", add_special_tokens=False)["input_ids"][0]
    assert outs[1].text == backend.tokenizer.decode([token]) * 4
    prompt_len = len(backend.tokenizer(PROMPTS[2])["input_ids"])
    assert constraint.seen_lengths == [prompt_len + k for k in range(4)]


def test_constraint_without_hook_is_rejected(backend):
    with pytest.raises(ConfigError, match="constraint object is not a callbench Constraint"):
        _gen(backend, _inp("x", constraint=object()), max_tokens=2)


def test_chat_mode_uses_template(tiny_gpt2_dir):
    chat = load_model(f"hf:{tiny_gpt2_dir}", mode="chat", device="cpu")
    out = _gen(chat, _inp("hi"), max_tokens=4)
    assert out.mode == "chat"
    rendered = chat.tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert rendered.endswith("<|assistant|>")
    assert out.prompt_tokens == len(chat.tokenizer(rendered, add_special_tokens=False)["input_ids"])


def test_chat_mode_without_template_is_a_config_error(tmp_path):
    pytest.importorskip("transformers")
    from callbench.testing.tiny_models import build_tiny_gpt2

    try:
        path = build_tiny_gpt2(tmp_path / "plain", chat_template=False)
    except ConfigError as exc:
        pytest.skip(str(exc))
    with pytest.raises(ConfigError, match="chat template"):
        load_model(f"hf:{path}", mode="chat", device="cpu")
    assert load_model(f"hf:{path}", device="cpu").mode == "completion"


def test_tiny_model_is_reproducible(tmp_path, tiny_gpt2_dir):
    """The builder is seeded: a second build answers exactly like the session fixture."""
    from callbench.testing.tiny_models import build_tiny_gpt2

    other = load_model(f"hf:{build_tiny_gpt2(tmp_path / 'again')}", device="cpu")
    first = load_model(f"hf:{tiny_gpt2_dir}", device="cpu")
    assert (
        _gen(other, _inp(PROMPTS[0]), max_tokens=6).text == _gen(first, _inp(PROMPTS[0]), max_tokens=6).text
    )


# -- token healing and prefilled chat (issue 9) -------------------------------------------------------

AXIOS_PROMPT = "// list the channels\nconst axios = require('axios');\n\naxios."


def _heal_inp(prompt: str = AXIOS_PROMPT, constraint=None, prefix: str | None = None) -> ModelInput:
    inp = _inp(prompt, constraint)
    inp.heal_boundary = True
    inp.assistant_prefix = prefix
    return inp


def test_healing_backs_the_prompt_up_and_forces_the_removed_text(backend):
    """GPT-2 splits 'axios.' as 'ax' 'ios' '.', like Qwen: the '.' is given back, the prompt is one
    token shorter, and the first generated token must start with '.' (or be a piece of it)."""
    n_full = len(backend.tokenizer(AXIOS_PROMPT)["input_ids"])
    out = _gen(backend, _heal_inp(), max_tokens=4)
    assert out.extra["token_healing"] == {"removed": ".", "tokens": 1}
    assert out.prompt_tokens == n_full - 1 and out.mode == "completion"
    ids, healing = backend._prompt_ids(_heal_inp())
    proc = backend._row_processor(_heal_inp(), healing, 4)
    torch = pytest.importorskip("torch")
    scores = proc(torch.tensor([ids]), torch.zeros((1, len(backend.tokenizer))))
    finite = torch.isfinite(scores[0]).nonzero().flatten().tolist()
    assert finite and all(backend.tokenizer.decode([t]).startswith(".") for t in finite)
    # The inputs that do not ask for healing, and a backend with it switched off, are unchanged.
    assert "token_healing" not in _gen(backend, _inp(AXIOS_PROMPT), max_tokens=2).extra


def test_healing_can_be_switched_off(tiny_gpt2_dir):
    plain = load_model(f"hf:{tiny_gpt2_dir}", device="cpu", token_healing=False)
    assert plain.identity.endswith("[completion]")
    assert "token_healing" not in _gen(plain, _heal_inp(), max_tokens=2).extra


def test_healed_grammar_starts_with_the_removed_text(backend):
    """Under constrained decoding the grammar is healed too: the continuation (after the removed
    '.') is exactly the grammar's language, whatever the random model prefers."""
    pytest.importorskip("llguidance")
    import re

    from callbench.constrain.engine import GrammarConstraint

    constraint = GrammarConstraint('start: "get(" /[0-9]{1,3}/ ")"')
    out = _gen(backend, _heal_inp(constraint=constraint), max_tokens=12)
    assert out.extra["token_healing"]["removed"] == "."
    assert re.fullmatch(r"get\([0-9]{1,3}\)", out.text), out.text
    assert constraint.sessions == []  # the healed variant ran, not the original grammar


def test_prefilled_chat_continues_the_assistant_prefix(tiny_gpt2_dir):
    """Chat mode with an answer start: the template is rendered, the prefix appended, and the
    output is a continuation (mode 'completion'); 'auto' picks chat when the track prefills."""
    auto = load_model(f"hf:{tiny_gpt2_dir}", device="cpu")
    assert auto.mode == "completion"
    auto.prefer_chat_template()
    assert auto.mode == "chat" and auto.identity.endswith("[chat,heal]")
    inp = _heal_inp(prompt="ignored in chat mode", prefix="```javascript\n" + AXIOS_PROMPT)
    inp.template_messages = [{"role": "user", "content": "the instructions, without the starter"}]
    rendered = auto.tokenizer.apply_chat_template(inp.template_messages, tokenize=False, add_generation_prompt=True)
    out = _gen(auto, inp, max_tokens=3)
    assert out.mode == "completion" and out.extra["token_healing"]["removed"] == "."
    n = len(auto.tokenizer(rendered + inp.assistant_prefix, add_special_tokens=False)["input_ids"])
    assert out.prompt_tokens == n - 1
    # Without an answer start the chat answer is free (and parsed by the track).
    assert _gen(auto, _inp("hi"), max_tokens=2).mode == "chat"
