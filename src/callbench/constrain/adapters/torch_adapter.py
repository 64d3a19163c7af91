"""Masking torch logits, and the transformers ``LogitsProcessor`` built on it.

transformers calls a processor once per step with the whole batch: ``input_ids`` (batch, length),
prompt (left-padded to a common width) followed by what was generated, and ``scores`` (batch, vocab).
The processor keeps one session per row, created at the first call, when the prompt width is
learnt; afterwards the columns past the last seen width are exactly the new tokens, so left padding
never reaches a session. A row whose session has ended (it produced EOS) is passed through
untouched: ``generate`` keeps scoring it but discards what it picks.

Not supported: beam search or any reordering of rows between steps (a session follows a row index),
which callbench never uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from callbench.constrain.engine import ConstraintSession, TokenVocab, register_adapter
from callbench.errors import MissingExtraError

try:
    import torch
    from transformers import LogitsProcessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError("transformers", "hf") from exc


def fit_width(allowed: np.ndarray, width: int) -> np.ndarray:
    """``allowed`` cut or padded (with False) to ``width`` columns along its last axis."""
    n = allowed.shape[-1]
    if n == width:
        return allowed
    if n > width:
        return allowed[..., :width]
    pad = np.zeros((*allowed.shape[:-1], width - n), dtype=bool)
    return np.concatenate([allowed, pad], axis=-1)


def apply_mask(scores: Any, allowed: np.ndarray) -> Any:
    """``scores`` with -inf wherever ``allowed`` (numpy bool, (vocab,) or (batch, vocab)) is False.

    The mask is moved to the logits' device once per step; columns beyond the mask are disallowed.
    Returns a new tensor (``masked_fill``), leaving the input intact.
    """
    mask = torch.from_numpy(np.ascontiguousarray(fit_width(allowed, scores.shape[-1])))
    mask = mask.to(scores.device, non_blocking=True)
    return scores.masked_fill(~mask, float("-inf"))


class TorchLogitsProcessor(LogitsProcessor):
    """One constraint session per batch row; see the module docstring for the conventions."""

    def __init__(self, new_session: Callable[[], ConstraintSession], vocab: TokenVocab):
        self._new_session = new_session
        self.vocab = vocab
        self.sessions: list[ConstraintSession] | None = None
        self.prompt_width: int | None = None
        self._seen = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        batch, length = input_ids.shape
        if self.sessions is None:
            self.sessions = [self._new_session() for _ in range(batch)]
            self.prompt_width = self._seen = length
        elif len(self.sessions) != batch:
            raise ValueError(
                f"constrained decoding: batch changed from {len(self.sessions)} to {batch} rows "
                "(beam search and row reordering are not supported)"
            )
        elif length > self._seen:
            new = input_ids[:, self._seen : length].tolist()
            for session, tokens in zip(self.sessions, new, strict=True):
                for token in tokens:
                    session.advance(token)
            self._seen = length
        live = [i for i, s in enumerate(self.sessions) if not s.done]
        if not live:
            return scores
        width = scores.shape[-1]
        tops = scores.argmax(dim=-1).tolist()
        allowed = np.ones((batch, width), dtype=bool)
        for i in live:
            # The row's logits are copied to numpy only if the session asks (near its budget's end).
            row = self._row_scores(scores, i)
            allowed[i] = fit_width(self.sessions[i].mask(top=tops[i], scores=row), width)
        return apply_mask(scores, allowed)

    @staticmethod
    def _row_scores(scores: Any, i: int) -> Callable[[], np.ndarray]:
        return lambda: scores[i].detach().float().cpu().numpy()


register_adapter("torch", TorchLogitsProcessor)
