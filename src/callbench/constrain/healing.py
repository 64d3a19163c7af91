"""Token healing under constrained decoding: the grammar starts with the text the prompt gave back.

When a backend heals the prompt boundary (:mod:`callbench.models.healing`), the first generated
tokens must reproduce the removed text, and what follows must still obey the constraint. Rather than
stacking a second mask on the grammar's, the derived constraint's grammar is
``start: "<removed text>" <original start>``: llguidance then computes one exact mask for both, and
a token that covers the removed text *and more* (``.get`` after a removed ``.``) is allowed exactly
when its overflow is allowed. The token filter (key tracker) was written for the text after the
original prompt, so it is wrapped to skip the removed bytes (:class:`SkipPrefixFilter`).
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from dataclasses import replace
from typing import Any

from callbench.constrain.engine import GrammarConstraint, TokenFilter
from callbench.constrain.staged import StagedGrammarConstraint

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
    def sensitive(self) -> Any:
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


_DERIVED: weakref.WeakKeyDictionary[GrammarConstraint, dict[str, GrammarConstraint]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def for_healed_prompt(constraint: Any, heal: str) -> tuple[Any, dict[str, Any]]:
    """The object whose backend hooks to call for a prompt healed by ``heal``, and the keywords
    to call them with: a plain grammar constraint is replaced by its healed variant, a wrapper
    (a track's per-sample constraint) is asked to heal itself."""
    if not heal:
        return constraint, {}
    if isinstance(constraint, GrammarConstraint):
        return healed_constraint(constraint, heal), {}
    return constraint, {"heal": heal}


def healed_constraint(constraint: GrammarConstraint, prefix: str) -> GrammarConstraint:
    """The constraint for a prompt healed by ``prefix`` (cached per constraint and prefix: a run
    sees few distinct prompt endings, and each derived grammar is compiled once)."""
    if not prefix:
        return constraint
    with _LOCK:
        per = _DERIVED.setdefault(constraint, {})
        hit = per.get(prefix)
    if hit is not None:
        return hit
    factory = constraint.filter_factory
    skip = len(prefix.encode("utf-8"))
    filter_factory = (lambda: SkipPrefixFilter(factory(), skip)) if factory is not None else None
    name = f"{constraint.name}+heal{prefix!r}"
    derived: GrammarConstraint
    if isinstance(constraint, StagedGrammarConstraint):
        staged = constraint.staged
        derived = StagedGrammarConstraint(
            replace(
                staged,
                head_lark=healed_lark(staged.head_lark, prefix),
                tail_lark=lambda key, tail=staged.tail_lark: healed_lark(tail(key), prefix),
                skip=staged.skip + skip,
            ),
            filter_factory,
            name=name,
            exact=constraint.exact,
        )
    else:
        derived = GrammarConstraint(healed_lark(constraint.lark, prefix), filter_factory, name=name, exact=constraint.exact)
    with _LOCK:
        per[prefix] = derived
    return derived
