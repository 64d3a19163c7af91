"""Token budget: a constrained generation ends with a complete call within ``max_tokens``.

Why: a grammar alone says what may come next, not how long it takes to finish. A model that keeps
writing inside an opened string (or pads whitespace) until ``max_tokens`` leaves an unfinished call
that cannot run. With a budget, the last tokens of a generation are spent closing the call.

How (see :class:`BudgetKeeper`, used by :class:`~callbench.constrain.engine.ConstraintSession`):

* A **plan** is a byte string after which the grammar accepts, found by a depth-first search that
  consumes single-byte tokens on a copy of the llguidance matcher (preferring bytes that close
  things: ``)]}`` and quotes first, whitespace last; bytes that leave the mask unchanged, like
  string content, only a few in a row) and asks a copy of the token filter about every byte, then
  spends its remaining node budget on a shorter plan (branch and bound). Plans are short, not
  always shortest (an object with a required key may get optional keys first). Every byte-level
  BPE vocabulary has a token per byte, so a plan is always spellable; its cost in tokens is the
  fewest vocabulary tokens that spell it (a small dynamic programme).
* **Window.** While more than ``window`` tokens remain (default 96), nothing happens: no search,
  masks identical to a session without a budget. From then on every mask is the grammar's mask
  restricted to tokens after which a completion within the remaining budget is *known*: the
  prefixes of the current plan whose rest fits, EOS once the grammar accepts, and the model's own
  favourite (best score within the grammar's mask, or ``top``) when the current plan still
  finishes the text after it (the usual case for string content: ~0.1 ms) or a search from there
  finds a plan that fits. Whatever the model then picks, a plan that fits exists after it, so the
  text is accepted when the budget runs out.
* **Guarantee and its one condition.** Inside the window the argument above is exact. It needs a
  plan that fits at window entry; the session records ``budget_infeasible`` if the plan it found
  does not fit (it then follows that plan anyway) or if the search found none (that step's mask is
  left as the grammar's, and the search is retried next step). With ``max_tokens <= window`` the
  window is the whole generation, so the condition is about the empty output.

Why not decide per token over the whole vocabulary, or start only when "close to the end": how
many tokens a completion needs after a token is not bounded by the need before it (one letter can
pick an operation with a required body), so a sound "close to the end" test needs that number for
every allowed token (up to 152k per step, ~5 µs each with llguidance's API: most of a second per
step). A fixed window with plan-following keeps the far steps free and the near steps exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DEFAULT_WINDOW", "BudgetKeeper", "CompletionPlanner", "planner_for"]

#: Tokens before ``max_tokens`` from which masks keep a completion within the budget reachable.
DEFAULT_WINDOW = 96

# Bytes the plan search tries, in order: closers, quotes and separators first (they finish
# things), then digits and names (to fill required values and keys), whitespace last.
_PREFERENCE = (
    b")]}'\"`;,:0"
    + b"abcdefghijklmnopqrstuvwxyz"
    + b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    + b"123456789_$.-+/@#%&*=<>?!|^~[{("
    + b" \n\t\r\\"
)
# ... then every other byte (the middle of a UTF-8 character needs a continuation byte).
_PREFERENCE += bytes(b for b in range(256) if b not in _PREFERENCE)
# Bytes in a row that leave the grammar's mask unchanged (string content, digits) a plan may use.
_IDLE_RUN = 4
# Search nodes spent on verifying the model's favourite token (per step, in the window).
_CANDIDATE_NODES = 300
# Time caps of one search: a plan (window entry, or after an unverified token), a candidate.
_PLAN_SECONDS = 0.2
_CANDIDATE_SECONDS = 0.02
# Longest vocabulary token considered when costing a plan (longer ones only ever save tokens).
_MAX_PIECE = 24


class CompletionPlanner:
    """Per-vocabulary tables for plans: the single-byte token of each byte, and tokens by bytes."""

    def __init__(self, vocab: Any):
        self.vocab = vocab
        byte_token: dict[int, int] = {}
        by_bytes: dict[bytes, list[int]] = {}
        for tid, data in enumerate(vocab.token_bytes):
            if not data or len(data) > _MAX_PIECE:
                continue
            by_bytes.setdefault(data, []).append(tid)
            if len(data) == 1:
                byte_token.setdefault(data[0], tid)
        self.byte_token = byte_token
        self.by_bytes = by_bytes
        self.order = [(b, byte_token[b], bytes((b,))) for b in _PREFERENCE if b in byte_token]
        ids = np.array([tid for _, tid, _ in self.order], dtype=np.int64)
        self._order_ids = list(range(len(self.order)))
        self._word_of, self._bit_of = ids // 32, (ids % 32).astype(np.int32)

    # -- searching ----------------------------------------------------------------------------

    def search(
        self,
        matcher: Any,
        token_filter: Any,
        *,
        max_bytes: int,
        max_nodes: int = 2_000,
        improve: bool = False,
        max_seconds: float | None = None,
    ) -> bytes | None:
        """A byte string after which ``matcher`` accepts, every byte allowed by ``token_filter``.

        Depth-first over single-byte tokens on a copy (the arguments are not changed), backtracking
        with ``rollback``. At each node the grammar's mask gives the candidate bytes; they are tried
        in preference order, first those after which the mask changes (progress: a string closes,
        a key grows), then at most ``_IDLE_RUN`` in a row of those after which it does not (string
        content, more digits), so the search does not loop inside a string. None when nothing is
        found within ``max_bytes`` bytes or ``max_nodes`` nodes (a node costs ~10-50 µs).
        ``improve``: after the first plan, spend the nodes left on a shorter one (branch and bound).
        ``max_seconds`` caps the time the same way (masks of a 152k vocabulary can cost 0.3 ms).
        """
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        m = matcher.deep_copy()
        if m.is_error():
            return None
        buf = np.zeros(self.vocab.mask_words, dtype=np.int32)
        order, word_of, bit_of = self._order_ids, self._word_of, self._bit_of

        byte_token = self.byte_token

        def expand(filt: Any, idle: int) -> tuple[list[Any], list[int], int, Any]:
            m.unsafe_compute_mask_ptr(buf.ctypes.data, buf.nbytes)
            ok = (buf[word_of] >> bit_of) & 1
            cands: list[Any] = [i for i in order if ok[i]]
            # The filter's own suggestion first (a required key it is still waiting for), as one
            # multi-byte step: tried in byte order, such a key may come after every optional one.
            hint = getattr(filt, "closing_hint", None)
            text = hint() if callable(hint) else None
            if text and all(b in byte_token for b in text):
                cands.insert(0, bytes(text))
            return cands, [], hash(buf.tobytes()), (filt, idle)

        path = bytearray()
        steps: list[int] = []  # bytes each pushed frame added to ``path`` (a hint adds several)
        # a frame: candidates to try (progress pass), idle candidates, mask hash, (filter, idle run)
        frames = [expand(token_filter.clone() if token_filter is not None else None, 0)]
        nodes = 1
        best: bytes | None = None
        while True:
            if m.is_accepting():
                # Branch and bound: keep it, then look for a shorter one with the nodes left.
                best = bytes(path)
                max_bytes = len(path) - 1
                if not improve or max_bytes < 0:
                    return best
            cands, idle_cands, sig, (filt, idle) = frames[-1]
            pushed = False
            while len(path) < max_bytes and (cands or idle_cands):
                from_idle = not cands
                i = idle_cands.pop(0) if from_idle else cands.pop(0)
                if isinstance(i, bytes):  # the filter's hint: several bytes in one step
                    if len(path) + len(i) > max_bytes or (filt is not None and not filt.allows(i)):
                        continue
                    eaten = m.try_consume_tokens([byte_token[b] for b in i])
                    if eaten != len(i):
                        if eaten:
                            m.rollback(eaten)
                        continue
                    nxt = None
                    if filt is not None:
                        nxt = filt.clone()
                        nxt.feed(i)
                    nodes += 1
                    path.extend(i)
                    steps.append(len(i))
                    frames.append(expand(nxt, 0))
                    pushed = True
                    break
                b, tid, one = self.order[i]
                if filt is not None and not filt.allows(one):
                    continue
                if m.try_consume_tokens([tid]) != 1:
                    continue
                nxt = None
                if filt is not None:
                    nxt = filt.clone()
                    nxt.feed(one)
                child = expand(nxt, 0)
                nodes += 1
                if child[2] == sig:  # no progress: keep for later, and not too many in a row
                    child = (child[0], child[1], child[2], (nxt, idle + 1))
                    if not from_idle:
                        m.rollback(1)
                        if idle < _IDLE_RUN:
                            idle_cands.append(i)
                        continue
                path.append(b)
                steps.append(1)
                frames.append(child)
                pushed = True
                break
            if nodes > max_nodes or (deadline is not None and time.perf_counter() > deadline):
                return best
            if not pushed:
                frames.pop()
                if not frames:
                    return best
                n = steps.pop()
                del path[-n:]
                m.rollback(n)

    def suffix_costs(self, plan: bytes) -> list[int]:
        """``costs[i]``: the fewest vocabulary tokens spelling ``plan[i:]`` (``costs[len] == 0``)."""
        n = len(plan)
        costs = [0] * (n + 1)
        by_bytes = self.by_bytes
        for i in range(n - 1, -1, -1):
            best = n - i  # one token per byte always works
            for k in range(1, min(_MAX_PIECE, n - i) + 1):
                if plan[i : i + k] in by_bytes:
                    c = 1 + costs[i + k]
                    if c < best:
                        best = c
            costs[i] = best
        return costs


def planner_for(vocab: Any) -> CompletionPlanner:
    """The vocabulary's planner (built once, ~0.1 s for 152k tokens, kept on the vocabulary)."""
    planner = getattr(vocab, "_budget_planner", None)
    if planner is None:
        planner = CompletionPlanner(vocab)
        vocab._budget_planner = planner
    return planner


class BudgetKeeper:
    """The budget state of one session: the current plan and what the window did.

    ``restrict`` narrows a grammar mask in the window; ``advance`` follows the chosen token.
    Statistics: ``forced_steps`` (window steps where the mask lost tokens the grammar allowed),
    ``window_steps``, ``searches``, ``infeasible`` (the closing cost did not fit at window entry).
    """

    def __init__(self, planner: CompletionPlanner, max_tokens: int, window: int = DEFAULT_WINDOW):
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.planner = planner
        self.max_tokens = int(max_tokens)
        self.window = int(window)
        self.plan: bytes | None = None  # from the current state; None = not known
        self.costs: list[int] = []
        self._candidates: dict[int, tuple[bytes, list[int]]] = {}
        self.forced_steps = 0
        self.window_steps = 0
        self.searches = 0
        self.infeasible = False

    def _search(
        self, matcher: Any, token_filter: Any, remaining: int, max_nodes: int = 3_000, improve: bool = True
    ) -> tuple[bytes, list[int]] | None:
        self.searches += 1
        plan = self.planner.search(
            matcher,
            token_filter,
            max_bytes=min(1024, max(8, 8 * remaining)),
            max_nodes=max_nodes,
            improve=improve,
            max_seconds=_PLAN_SECONDS if improve else _CANDIDATE_SECONDS,
        )
        if plan is None:
            return None
        return plan, self.planner.suffix_costs(plan)

    def _still_completes(self, matcher: Any, token_filter: Any, plan: bytes) -> bool:
        """Does ``plan`` still finish the text from this (copied) state? The common case for a
        candidate that only adds content (string text, digits): the current plan survives it."""
        byte_token = self.planner.byte_token
        ids = [byte_token.get(b) for b in plan]
        if None in ids or matcher.try_consume_tokens(ids) != len(ids) or not matcher.is_accepting():
            return False
        return token_filter is None or not plan or token_filter.allows(plan)

    def restrict(
        self,
        allowed: np.ndarray,
        matcher: Any,
        token_filter: Any,
        generated: int,
        eos_ids: tuple[int, ...],
        token_bytes: list[bytes],
        top: int | None,
        scores: np.ndarray | Callable[[], np.ndarray] | None,
    ) -> np.ndarray:
        """``allowed`` narrowed to tokens after which a completion within the budget is known."""
        remaining = self.max_tokens - generated  # tokens still to come, this one included
        if remaining > self.window:
            return allowed
        remaining = max(remaining, 1)
        self.window_steps += 1
        self._candidates = {}
        if self.plan is None:
            found = self._search(matcher, token_filter, remaining)
            if found is None:
                self.infeasible = True
                return allowed  # nothing known: leave the grammar's mask as it is
            self.plan, self.costs = found
            if self.costs[0] > remaining:
                self.infeasible = True
        plan, costs = self.plan, self.costs
        out = np.zeros_like(allowed)
        if not plan:  # the grammar accepts: stopping is always within budget
            out[list(eos_ids)] = True
        by_bytes = self.planner.by_bytes
        slack_ok = remaining - 1
        fallback: tuple[int, int] | None = None  # (rest cost, token) of the plan's best first token
        for k in range(1, min(_MAX_PIECE, len(plan)) + 1):
            ids = by_bytes.get(plan[:k])
            if ids is None:
                continue
            for tid in ids:
                if tid < allowed.size and allowed[tid]:
                    if costs[k] <= slack_ok:
                        out[tid] = True
                    elif fallback is None or costs[k] < fallback[0]:
                        fallback = (costs[k], tid)
        if not out.any() and fallback is not None:  # infeasible budget: still follow the plan
            out[fallback[1]] = True
        best = self._preferred(allowed, out, top, scores)
        if best is not None:
            data = token_bytes[best]
            if data:
                m = matcher.deep_copy()
                if m.consume_token(best):
                    f = token_filter.clone() if token_filter is not None else None
                    if f is not None:
                        f.feed(data)
                    found = None
                    if costs[0] <= slack_ok and self._still_completes(m.deep_copy(), f, plan):
                        found = (plan, costs)
                    elif slack_ok > 0:
                        found = self._search(m, f, slack_ok, max_nodes=_CANDIDATE_NODES, improve=False)
                    if found is not None and found[1][0] <= slack_ok:
                        out[best] = True
                        self._candidates[best] = found
        if not out.any():
            return allowed
        if int(out.sum()) < int(allowed.sum()):
            self.forced_steps += 1
        return out

    @staticmethod
    def _preferred(
        allowed: np.ndarray,
        out: np.ndarray,
        top: int | None,
        scores: np.ndarray | Callable[[], np.ndarray] | None,
    ) -> int | None:
        """The model's favourite grammar-allowed token, if it is not already in ``out``."""
        if scores is not None:
            values = scores() if callable(scores) else scores
            values = np.asarray(values)
            n = min(values.shape[-1], allowed.size)
            masked = np.where(allowed[:n], values[:n], -np.inf)
            best = int(np.argmax(masked))
            if not np.isfinite(masked[best]):
                return None
        elif top is not None and 0 <= top < allowed.size and allowed[top]:
            best = int(top)
        else:
            return None
        return None if out[best] else best

    def advance(self, token: int, data: bytes) -> None:
        """Follow the generated token: the plan's rest, the verified candidate's plan, or unknown."""
        found = self._candidates.pop(token, None)
        self._candidates = {}
        if found is not None:
            self.plan, self.costs = found
        elif self.plan is not None and data and self.plan.startswith(data):
            k = len(data)
            self.plan, self.costs = self.plan[k:], self.costs[k:]
        else:
            self.plan, self.costs = None, []

    def summary(self) -> dict[str, Any]:
        return {
            "budget_forced_steps": self.forced_steps,
            "budget_window_steps": self.window_steps,
            "budget_infeasible": self.infeasible,
        }
