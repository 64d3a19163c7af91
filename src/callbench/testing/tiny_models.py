"""A tiny, random GPT-2 (and a tiny random T5, for the encoder-decoder path) with the real GPT-2
tokenizer, for tests of the in-process Hugging Face backend and of constrained decoding on top of it.

Such tests need a model that loads in milliseconds, runs without a network, and has a *realistic*
byte-level BPE vocabulary so that token boundaries look like those of real models. The weights are
random (seeded), so the text is gibberish, but greedy decoding is deterministic, which is all the
tests need. The BPE files come from :func:`callbench.testing.gpt2.gpt2_bpe_files`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from callbench.errors import MissingExtraError
from callbench.testing.gpt2 import gpt2_bpe_files

__all__ = ["TINY_CHAT_TEMPLATE", "build_tiny_gpt2", "build_tiny_t5", "gpt2_tokenizer"]

# A minimal ChatML-like template so chat mode can be exercised; it only needs to be deterministic.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def gpt2_tokenizer(dest: Path) -> Any:
    """The real GPT-2 BPE tokenizer (50,257 tokens) as a transformers fast tokenizer, offline: the
    files of :func:`gpt2_bpe_files` copied into ``dest`` as ``vocab.json``/``merges.txt``.

    Loading from the directory (rather than passing file names to the constructor) works across
    transformers 4.x and 5.x, whose tokenizer constructors take different arguments."""
    try:
        from transformers import GPT2TokenizerFast
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    vocab, merges = gpt2_bpe_files()
    shutil.copyfile(vocab, dest / "vocab.json")
    shutil.copyfile(merges, dest / "merges.txt")
    return GPT2TokenizerFast.from_pretrained(dest)


def build_tiny_gpt2(dest: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """Write a 2-layer, 32-wide random GPT-2 plus its tokenizer to ``dest``; return ``dest``.

    ``chat_template`` adds :data:`TINY_CHAT_TEMPLATE` to the tokenizer (chat mode needs one).
    The same ``seed`` gives the same weights, so outputs are comparable across test sessions.
    """
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc

    tokenizer = gpt2_tokenizer(dest)
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


def build_tiny_t5(dest: Path, *, seed: int = 0, chat_template: bool = False) -> Path:
    """Write a 2+2-layer, 32-wide random T5 (encoder-decoder) plus a GPT-2 BPE tokenizer to
    ``dest``; return ``dest``.

    Shaped like CodeT5+ 220M/770M (a ``T5ForConditionalGeneration`` with a byte-level BPE
    tokenizer, not T5's SentencePiece): a ``<pad>`` token is added to the GPT-2 vocabulary and,
    as in T5 and CodeT5+, is also the decoder start token; ``<|endoftext|>`` is EOS. ``hf:dest``
    then loads it as a seq2seq model. The same ``seed`` gives the same weights.
    ``chat_template`` adds :data:`TINY_CHAT_TEMPLATE` (off by default: CodeT5+ has none).
    """
    try:
        import torch
        from transformers import T5Config, T5ForConditionalGeneration
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc

    tokenizer = gpt2_tokenizer(dest)
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    if chat_template:
        tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        dropout_rate=0.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config).eval()
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest
