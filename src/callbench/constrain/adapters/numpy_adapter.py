"""Masking numpy logits, and the llama-cpp-python logits processor built on it.

llama-cpp-python calls each processor with *all* token ids so far (prompt + generated) and a float32
view of the next-token logits, before its sampler chain runs (greedy or otherwise). The processor
therefore learns the prompt length from its first call and, on every later call, feeds the tokens
that appeared since the previous one to the session before asking for the next mask. One processor
serves exactly one generation: the backend asks the constraint for a fresh one each time.

The final generated token is never shown to a processor (generation ends right after it is
sampled), so a session's state lags one token behind the output; EOS ends generation anyway.
"""

from __future__ import annotations

import numpy as np

from callbench.constrain.engine import ConstraintSession, register_adapter


def apply_mask(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Set ``scores`` to -inf wherever ``allowed`` is False, in place, and return ``scores``.

    ``allowed`` covers the tokenizer's vocabulary; logits beyond it (a padded embedding) are
    disallowed, and mask entries beyond the logits are ignored. Works on strided views (llama.cpp
    hands a field of a record array), which is why ``np.copyto`` is used rather than fancy indexing.
    """
    width = scores.shape[-1]
    n = min(width, allowed.shape[-1])
    np.copyto(scores[..., :n], -np.inf, where=~allowed[..., :n])
    if n < width:
        scores[..., n:] = -np.inf
    return scores


class LlamaCppLogitsProcessor:
    """``(input_ids, scores) -> scores`` for one llama-cpp-python generation under one session."""

    def __init__(self, session: ConstraintSession):
        self.session = session
        self.prompt_len: int | None = None
        self._seen = 0

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self.prompt_len is None:
            self.prompt_len = self._seen = n
        elif n > self._seen:
            for token in np.asarray(input_ids[self._seen : n]).tolist():
                self.session.advance(token)
            self._seen = n
        if self.session.done:
            return scores
        # The logits go along so that, near the end of a budget, the model's favourite allowed
        # token is kept whenever it still fits (read only there).
        allowed = self.session.mask(top=int(np.argmax(scores)), scores=scores)
        return apply_mask(scores, allowed)


register_adapter("numpy", LlamaCppLogitsProcessor)
