"""Token healing at the prompt boundary, for backends that tokenize the prompt themselves.

Why: a prompt that ends inside what a tokenizer would normally write as one token leaves the model
in a state it rarely saw in training. The web API prompt ends with ``axios.``; Qwen's tokenizer
splits that as ``axios`` + ``.``, and after a bare ``.`` Qwen2.5-Coder's top token is ``axios``
again, so the completion reads ``axios.axios.get(...)``. Healing backs the prompt up by its last
token and makes the first generated tokens reproduce the removed text (``.get`` is then a normal
choice), so the model continues the same text but with its usual tokenization.

This module holds the backend-agnostic parts: :func:`heal_prompt` (which tokens to remove),
:class:`PrefixTable` (per vocabulary: which tokens are consistent with the bytes still owed) and
:class:`PrefixState` (one generation's progress through the owed bytes). With constrained
decoding, the grammar itself starts with the removed text instead
(:func:`callbench.constrain.healing.healed_constraint`), so one mask does both jobs.

Hand-written: llama-cpp-python and transformers have no token healing of their own (guidance has
one, but bound to its own model classes), and the rule is a few lines.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from callbench.errors import MissingExtraError

if TYPE_CHECKING:  # numpy comes with the backends' extras, not the core install
    import numpy as np


@dataclass(frozen=True)
class Healing:
    """A prompt backed up to a token boundary.

    ``ids``: the prompt's tokens without the removed ones. ``prefix``: the removed tokens' bytes,
    which the continuation must start with (empty: nothing was removed). ``text``: the same as str.
    """

    ids: list[int]
    prefix: bytes
    removed_tokens: int

    @property
    def text(self) -> str:
        return self.prefix.decode("utf-8")

    def as_record(self) -> dict[str, Any]:
        """What a backend stores with the output (so a reader can see what was healed)."""
        return {"removed": self.text, "tokens": self.removed_tokens}


def heal_prompt(ids: Sequence[int], token_bytes: Callable[[int], bytes], *, special: Iterable[int] = ()) -> Healing:
    """Remove the prompt's last token when it is ordinary text.

    Not removed: a special token (the prompt then ends at a structural boundary, e.g. a chat
    template's turn marker), a token without bytes, a lone token (nothing would be left to
    condition on) and a token whose bytes are not whole UTF-8 (the owed text must be a string, for
    the grammar literal and for stripping it off the decoded output).
    """
    ids = list(ids)
    if len(ids) < 2 or ids[-1] in set(special):
        return Healing(ids, b"", 0)
    data = token_bytes(ids[-1])
    if not data:
        return Healing(ids, b"", 0)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return Healing(ids, b"", 0)
    return Healing(ids[:-1], data, 1)


class PrefixTable:
    """Per vocabulary: for owed bytes ``p``, the tokens ``t`` with ``p.startswith(t)`` (a piece of
    the owed text) or ``t.startswith(p)`` (the rest of it and more). Cached per ``p``: a benchmark
    sees only a handful of distinct prompt endings."""

    def __init__(self, token_bytes: Sequence[bytes]):
        self.token_bytes = list(token_bytes)
        self.size = len(self.token_bytes)
        self._cache: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()

    def allowed(self, owed: bytes) -> np.ndarray:
        with self._lock:
            hit = self._cache.get(owed)
            if hit is not None:
                return hit
        import numpy as np

        first = owed[:1]
        out = np.zeros(self.size, dtype=np.bool_)
        for i, t in enumerate(self.token_bytes):
            # Cheap first-byte test before the two startswith calls (150k tokens per new ending).
            if t and t[:1] == first and (owed.startswith(t) or t.startswith(owed)):
                out[i] = True
        out.setflags(write=False)
        with self._lock:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[owed] = out
        return out


_TABLES: weakref.WeakKeyDictionary[Any, PrefixTable] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def prefix_table(owner: Any, token_bytes: Callable[[], Sequence[bytes]]) -> PrefixTable:
    """The one :class:`PrefixTable` of a tokenizer/model object (built on first use)."""
    with _TABLES_LOCK:
        hit = _TABLES.get(owner)
    if hit is None:
        hit = PrefixTable(token_bytes())
        with _TABLES_LOCK:
            _TABLES[owner] = hit
    return hit


class PrefixState:
    """One generation's progress through the owed bytes: :meth:`mask` while some are owed."""

    def __init__(self, table: PrefixTable, owed: bytes):
        self.table = table
        self.owed = owed

    @property
    def done(self) -> bool:
        return not self.owed

    def mask(self) -> np.ndarray:
        return self.table.allowed(self.owed)

    def advance(self, token: int) -> None:
        if not self.owed:
            return
        data = self.table.token_bytes[token] if 0 <= token < self.table.size else b""
        # A piece of the owed text leaves the rest owed; a token covering it settles the debt.
        self.owed = self.owed[len(data) :] if data and self.owed.startswith(data) and len(data) < len(self.owed) else b""


def strip_healed(text: str, healing: Healing | None) -> str:
    """The continuation of the *original* prompt: the output without the re-generated prefix.

    If generation stopped before the owed text was complete, nothing of the original prompt's
    continuation exists yet, so the result is empty.
    """
    if healing is None or not healing.prefix:
        return text
    owed = healing.text
    if text.startswith(owed):
        return text[len(owed) :]
    return ""


class LlamaCppPrefixProcessor:
    """llama-cpp-python logits processor that enforces the healed prefix (unconstrained runs).

    Like the constraint adapter, it learns the prompt length from its first call and advances on
    the tokens that appear after it; once the prefix is reproduced it leaves the logits alone.
    """

    def __init__(self, state: PrefixState):
        self.state = state
        self._seen: int | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._seen is None:
            self._seen = n
        elif n > self._seen:
            for token in list(input_ids[self._seen : n]):
                self.state.advance(int(token))
            self._seen = n
        if self.state.done:
            return scores
        from callbench.constrain.adapters.numpy_adapter import apply_mask

        return apply_mask(scores, self.state.mask())


class TorchPrefixProcessor:
    """The same for transformers, for one row (the HF backend hands each row its own processor,
    with the row's left padding stripped)."""

    def __init__(self, state: PrefixState):
        self.state = state
        self._seen: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        n = input_ids.shape[-1]
        if self._seen is None:
            self._seen = n
        elif n > self._seen:
            for token in input_ids[0, self._seen : n].tolist():
                self.state.advance(int(token))
            self._seen = n
        if self.state.done:
            return scores
        from callbench.constrain.adapters.torch_adapter import apply_mask

        return apply_mask(scores, self.state.mask()[None, :].copy())  # torch wants a writable array


def llama_token_bytes(llama: Any) -> list[bytes]:
    """Every token's bytes for a ``llama_cpp.Llama`` (special tokens: empty), from the constraint
    engine's vocabulary when llguidance is installed, else by detokenizing one token at a time."""
    try:
        from callbench.constrain.engine import vocab_for_llama

        return list(vocab_for_llama(llama).token_bytes)
    except (ImportError, MissingExtraError):  # no 'constrain' extra: the slow path
        pass
    return [llama.detokenize([i]) for i in range(llama.n_vocab())]


def hf_token_bytes(tokenizer: Any) -> list[bytes]:
    """Every token's bytes for a transformers tokenizer (llguidance's view when installed, else
    one ``decode`` per token, which is exact for whole-character tokens)."""
    try:
        from callbench.constrain.engine import vocab_for_hf

        return list(vocab_for_hf(tokenizer).token_bytes)
    except (ImportError, MissingExtraError):
        pass
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out = []
    for i in range(len(tokenizer)):
        text = "" if i in special else tokenizer.decode([i])
        out.append(b"" if "\ufffd" in text else text.encode("utf-8"))
    return out
