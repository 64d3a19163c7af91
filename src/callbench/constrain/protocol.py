"""What a backend may ask of a constraint: the :class:`Constraint` protocol, and its one implementation.

Why a protocol: a track puts a constraint into ``ModelInput.constraint`` and three kinds of backend
consume it (llama.cpp and transformers in-process, a grammar-enforcing server such as vLLM). Each
backend needs exactly one thing from it: a logits processor for its tensors, or the request-body
fields that make the server enforce the grammar. Naming those two methods here, once, lets a
backend check what it was given (``isinstance(x, Constraint)``) and call it without knowing the
concrete class, and lets a test stand in for a constraint with a few lines.

Why one base (:class:`GrammarHooks`): the single grammar, the staged grammar and the per-sample view
of a shared grammar differ only in *which compiled grammar* serves a call (itself, its variant for
a healed prompt, the shared one) and in what a view remembers afterwards; the protocol's methods
are written once here on top of those two points. This module stays light (no numpy, no
llguidance): an unconstrained run imports the per-sample view without paying for the engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from callbench.errors import ConfigError

__all__ = [
    "Constraint",
    "GrammarHooks",
    "LogitsProcessor",
    "ProcessorKind",
    "Served",
    "ServerBody",
    "SessionGrammar",
    "require_constraint",
]

#: The in-process backends a constraint can build a logits processor for: ``"llamacpp"`` (the
#: target is a ``llama_cpp.Llama``; numpy logits, one sequence) and ``"hf"`` (the target is a
#: transformers tokenizer; torch logits, one session per batch row).
ProcessorKind = Literal["hf", "llamacpp"]

#: A logits processor: ``(input_ids, scores) -> scores``. The tensor types (numpy arrays, torch
#: tensors) belong to the backend's library, which this layer does not import: hence ``Any``.
LogitsProcessor = Callable[[Any, Any], Any]

#: Request-body fields (JSON values) that make a server enforce the grammar, merged into the
#: request at its top level as an OpenAI SDK's ``extra_body`` is.
ServerBody = dict[str, object]


@runtime_checkable
class Constraint(Protocol):
    """What every backend may call on ``ModelInput.constraint``, and nothing else.

    ``heal``: the text a backend removed from the end of the prompt (token healing); the
    constraint's language then starts with it, so one mask both re-writes the removed text and
    constrains what follows. ``""``: the prompt was not healed.
    """

    def processor(
        self, kind: ProcessorKind, target: object, *, heal: str = "", max_tokens: int | None = None
    ) -> LogitsProcessor:
        """A fresh logits processor for one generation with ``target`` (see :data:`ProcessorKind`).

        ``max_tokens``: the generation's budget of new tokens, so that the constraint closes its
        call within it (None: the masks are the grammar's alone).
        """
        ...

    def server_body(self, *, heal: str = "") -> ServerBody:
        """The request-body fields that make a grammar-enforcing server (vLLM) apply this constraint.

        A constraint that a server cannot enforce raises a one-line error naming itself.
        """
        ...


def require_constraint(value: object, owner: str) -> Constraint:
    """``value`` as a :class:`Constraint`, or a one-line :class:`ConfigError` naming ``owner``.

    Why an error rather than running unconstrained: a caller who believes the output was
    constrained would compare the wrong things.
    """
    if not isinstance(value, Constraint):
        raise ConfigError(
            f"{owner}: constraint {type(value).__name__} is not a callbench Constraint "
            "(it needs processor() and server_body(); see callbench.constrain.protocol)"
        )
    return value


class SessionGrammar(Protocol):
    """A compiled grammar as :class:`GrammarHooks` uses it (the engine's ``GrammarConstraint``)."""

    def make_processor(self, kind: ProcessorKind, target: object, *, max_tokens: int | None) -> LogitsProcessor:
        """A processor over fresh sessions of this grammar (this call's sessions are its last ones)."""
        ...

    def server_lark(self) -> str:
        """The grammar text a server receives (raises where the grammar cannot travel)."""
        ...


#: What the processor was built for, as :meth:`GrammarHooks._served` learns it.
Served = Literal["hf", "llamacpp", "server"]


class GrammarHooks(Constraint, ABC):
    """The :class:`Constraint` methods, written once for every grammar-backed constraint.

    A subclass says which compiled grammar serves a call (:meth:`_grammar_for`) and may remember
    what it served (:meth:`_served`); building the processor and the server body is the grammar's
    business (:class:`SessionGrammar`).
    """

    @abstractmethod
    def _grammar_for(self, heal: str) -> SessionGrammar:
        """The grammar for a prompt healed by ``heal`` (``""``: not healed)."""

    def _served(self, kind: Served) -> None:
        """Called for each call once its grammar is chosen: after the processor was built, before
        the server body is (a per-sample view records its sessions)."""

    def processor(
        self, kind: ProcessorKind, target: object, *, heal: str = "", max_tokens: int | None = None
    ) -> LogitsProcessor:
        proc = self._grammar_for(heal).make_processor(kind, target, max_tokens=max_tokens)
        self._served(kind)
        return proc

    def server_body(self, *, heal: str = "") -> ServerBody:
        from callbench.constrain.vllm import vllm_extra_body

        grammar = self._grammar_for(heal)
        self._served("server")
        body: ServerBody = dict(vllm_extra_body(grammar.server_lark()))
        return body
