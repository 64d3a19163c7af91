"""The constraint for a web API grammar: one llguidance grammar, or a staged one for big specs.

:func:`webapi_constraint` is what a track, a benchmark or the checker builds from
:func:`~callbench.constrain.webapi_grammar.build_webapi_grammar`'s result: a
:class:`~callbench.constrain.engine.GrammarConstraint` with the key tracker as its filter, or,
when the grammar is staged (``GrammarOptions.staged``), a
:class:`~callbench.constrain.staged.StagedGrammarConstraint` whose head is the URLs and whose
tails are the operations' own grammars, the operation named by the key tracker's reading of
the URL (the same reading that picks the operation's keys, so grammar and tracker agree).
"""

from __future__ import annotations

from collections.abc import Hashable

from callbench.constrain.engine import GrammarConstraint
from callbench.constrain.key_tracker import KeyTracker, make_key_tracker
from callbench.constrain.staged import StagedGrammar, StagedGrammarConstraint
from callbench.constrain.webapi_grammar import WebApiGrammar
from callbench.specs import ApiSpec

__all__ = ["UrlResolver", "staged_parts", "webapi_constraint"]

#: the bytes at which the operation becomes known: the quotes that can close a URL, and (a URL
#: written by concatenation, ``'...?key=' + key``, real-world profile) the ``,`` or ``)`` after it
_URL_QUOTES = b"'\"`,)"


class UrlResolver:
    """Names the operation once the URL is read: at its closing quote, or where a ``+`` may still
    go on (real-world profile) at the ``,`` or ``)`` after it (a :class:`Resolver`)."""

    __slots__ = ("_tracker",)

    def __init__(self, tracker: KeyTracker):
        self._tracker = tracker

    def feed(self, data: bytes) -> None:
        self._tracker.feed(data)

    def clone(self) -> UrlResolver:
        return UrlResolver(self._tracker.clone())

    def resolved(self) -> Hashable | None:
        args = self._tracker.args
        return id(args.operation) if args is not None else None

    def failed(self) -> str | None:
        if self._tracker.args is None and self._tracker.lost:
            return "the URL names no operation of the spec"
        return None


def staged_parts(grammar: WebApiGrammar, spec: ApiSpec) -> StagedGrammar:
    """The head, tails and resolver of a staged web API grammar."""
    if not grammar.staged:
        raise ValueError("the grammar is not staged")
    ops = {id(op): op for op in spec.operations}
    return StagedGrammar(
        head_lark=grammar.lark,
        tail_lark=lambda key: grammar.tail_lark(ops[key]),  # type: ignore[index]
        resolver=lambda: UrlResolver(make_key_tracker(grammar, spec)),
        triggers=_URL_QUOTES,
    )


def webapi_constraint(grammar: WebApiGrammar, spec: ApiSpec, *, name: str = "", exact: bool = True) -> GrammarConstraint:
    """The constraint (key tracker included) for ``grammar``: staged where the grammar is."""

    def factory() -> KeyTracker:
        return make_key_tracker(grammar, spec)

    if grammar.staged:
        return StagedGrammarConstraint(staged_parts(grammar, spec), factory, name=name, exact=exact)
    return GrammarConstraint(grammar.lark, factory, name=name, exact=exact)
