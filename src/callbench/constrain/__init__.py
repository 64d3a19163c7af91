"""Constrained decoding: grammars, key tracking and checks for model-written API calls.

Names are imported on first use (PEP 562): an unconstrained run imports a submodule such as
``per_sample`` and must not pay for numpy and every grammar module at startup.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "CheckResult": "check",
    "check_continuation": "check",
    "check_invocation": "check",
    "Constraint": "protocol",
    "ConstraintSession": "engine",
    "GrammarConstraint": "engine",
    "InvalidGrammarError": "engine",
    "TokenFilter": "engine",
    "TokenVocab": "engine",
    "vocab_for_hf": "engine",
    "vocab_for_llama": "engine",
    "vocab_for_lltokenizer": "engine",
    "vocab_from_tiktoken_file": "engine",
    "KeyTracker": "key_tracker",
    "make_key_tracker": "key_tracker",
    "LabelTracker": "label_tracker",
    "make_label_tracker": "label_tracker",
    "NestedGrammar": "nested_grammar",
    "NestedGrammarError": "nested_grammar",
    "build_nested_grammar": "nested_grammar",
    "sample_under_grammar": "sampling",
    "vllm_extra_body": "vllm",
    "GrammarError": "webapi_grammar",
    "GrammarOptions": "webapi_grammar",
    "WebApiGrammar": "webapi_grammar",
    "build_webapi_grammar": "webapi_grammar",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'callbench.constrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"callbench.constrain.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
