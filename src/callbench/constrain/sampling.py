"""Sampling texts from a constraint with no model at all: random choices under the mask.

Why: property tests of a grammar builder need many strings that the *engine* lets through, in
order to check them with an independent parser (does every constrained output parse, validate
against the spec, never repeat a key...). With random logits, every allowed token is equally
likely at every step, so the samples wander into corners a real model would rarely visit.

The draw is equivalent to i.i.d. continuous random logits followed by masked argmax (the winner is
uniform over the allowed tokens) but costs one ``flatnonzero`` instead of a 50k-150k normal draw per
step. Grammars with unbounded free-text parts will mostly run to ``max_tokens`` (EOS is one token
among thousands), so bound them, or accept truncated samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from callbench.constrain.engine import (
    GrammarConstraint,
    TokenVocab,
    vocab_for_hf,
    vocab_for_lltokenizer,
)

__all__ = ["mask_time_profile", "resolve_vocab", "sample_under_grammar"]


def resolve_vocab(tokenizer: Any) -> TokenVocab:
    """A :class:`TokenVocab` from a ``TokenVocab``, an ``llguidance.LLTokenizer`` or an HF fast tokenizer."""
    if isinstance(tokenizer, TokenVocab):
        return tokenizer
    if type(tokenizer).__name__ == "LLTokenizer":
        return vocab_for_lltokenizer(tokenizer)
    return vocab_for_hf(tokenizer)


def _random_walks(constraint: GrammarConstraint, vocab: TokenVocab, n: int, seed: int, max_tokens: int):
    """Yield ``n`` finished sessions, each decoded with uniformly random choices among allowed tokens."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        session = constraint.new_session(vocab, record=False)
        for _ in range(max_tokens):
            allowed = session.mask(top=int(rng.integers(vocab.size)))
            choices = np.flatnonzero(allowed)
            session.advance(int(choices[rng.integers(choices.size)]))
            if session.done:
                break
        yield session


def sample_under_grammar(
    constraint: GrammarConstraint,
    tokenizer: Any,
    n: int,
    seed: int,
    max_tokens: int,
) -> list[str]:
    """``n`` texts decoded under ``constraint`` with random token choices (seeded, reproducible).

    ``tokenizer``: a ``TokenVocab``, an ``llguidance.LLTokenizer`` or an HF fast tokenizer.
    Each text is what was generated before EOS (or before ``max_tokens`` ran out), decoded as UTF-8
    (an incomplete trailing character becomes U+FFFD). Sessions are not recorded in the
    constraint's statistics.
    """
    vocab = resolve_vocab(tokenizer)
    return [
        s.generated_bytes().decode("utf-8", errors="replace")
        for s in _random_walks(constraint, vocab, n, seed, max_tokens)
    ]


def mask_time_profile(
    constraint: GrammarConstraint,
    tokenizer: Any,
    n: int = 20,
    seed: int = 0,
    max_tokens: int = 150,
) -> dict[str, Any]:
    """Per-step mask cost over ``n`` random walks: how expensive is this constraint on this vocabulary?

    Random walks linger in the widest states (free text, string values), so this is closer to a
    worst case than to what a model's greedy decoding costs. The first step of each walk is
    reported apart (``first_ms_median``): it includes llguidance's lazy lexer set-up.
    """
    vocab = resolve_vocab(tokenizer)
    steps: list[float] = []
    first: list[float] = []
    finished = unsatisfiable = 0
    for session in _random_walks(constraint, vocab, n, seed, max_tokens):
        first.extend(session.mask_times[:1])
        steps.extend(session.mask_times[1:])
        finished += session.done
        unsatisfiable += session.unsatisfiable
    ms = np.asarray(steps, dtype=np.float64) * 1000.0
    return {
        "vocab_size": vocab.size,
        "walks": n,
        "steps": int(ms.size),
        "mask_ms_median": round(float(np.median(ms)), 4) if ms.size else 0.0,
        "mask_ms_p99": round(float(np.percentile(ms, 99)), 4) if ms.size else 0.0,
        "mask_ms_max": round(float(ms.max()), 4) if ms.size else 0.0,
        "mask_ms_mean": round(float(ms.mean()), 4) if ms.size else 0.0,
        "first_ms_median": round(float(np.median(first)) * 1000.0, 4) if first else 0.0,
        "finished": finished,
        "unsatisfiable": unsatisfiable,
    }
