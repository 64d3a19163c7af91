"""Constrained decoding: grammars, key tracking and checks for model-written API calls."""

from callbench.constrain.check import CheckResult, check_continuation, check_invocation
from callbench.constrain.engine import (
    ConstraintSession,
    GrammarConstraint,
    InvalidGrammarError,
    TokenFilter,
    TokenVocab,
    vocab_for_hf,
    vocab_for_llama,
    vocab_for_lltokenizer,
    vocab_from_tiktoken_file,
)
from callbench.constrain.key_tracker import KeyTracker, make_key_tracker
from callbench.constrain.label_tracker import LabelTracker, make_label_tracker
from callbench.constrain.nested_grammar import NestedGrammar, NestedGrammarError, build_nested_grammar
from callbench.constrain.sampling import sample_under_grammar
from callbench.constrain.vllm import vllm_extra_body
from callbench.constrain.webapi_grammar import (
    GrammarError,
    GrammarOptions,
    WebApiGrammar,
    build_webapi_grammar,
)

__all__ = [
    "CheckResult",
    "ConstraintSession",
    "GrammarConstraint",
    "InvalidGrammarError",
    "TokenVocab",
    "sample_under_grammar",
    "vllm_extra_body",
    "vocab_for_hf",
    "vocab_for_llama",
    "vocab_for_lltokenizer",
    "vocab_from_tiktoken_file",
    "GrammarError",
    "GrammarOptions",
    "KeyTracker",
    "LabelTracker",
    "NestedGrammar",
    "NestedGrammarError",
    "build_nested_grammar",
    "make_label_tracker",
    "TokenFilter",
    "WebApiGrammar",
    "build_webapi_grammar",
    "check_continuation",
    "check_invocation",
    "make_key_tracker",
]
