"""Token healing under constrained decoding: the grammar starts with the text the prompt gave back.

When a backend heals the prompt boundary (:mod:`callbench.models.healing`), the first generated
tokens must reproduce the removed text, and what follows must still obey the constraint. Rather than
stacking a second mask on the grammar's, the derived constraint's grammar is
``start: "<removed text>" <original start>``: llguidance then computes one exact mask for both, and
a token that covers the removed text *and more* (``.get`` after a removed ``.``) is allowed exactly
when its overflow is allowed. The token filter (key tracker) was written for the text after the
original prompt, so it is wrapped to skip the removed bytes (:class:`SkipPrefixFilter`).

The derivation lives with the grammar it derives (``GrammarConstraint.healed``, which a staged
constraint refines), because every constraint takes ``heal`` through the
:class:`~callbench.constrain.protocol.Constraint` protocol and the engine cannot import this
module back; the names here are the healing vocabulary's public home.
"""

from __future__ import annotations

from callbench.constrain.engine import GrammarConstraint, SkipPrefixFilter, healed_lark

__all__ = ["SkipPrefixFilter", "healed_constraint", "healed_lark"]


def healed_constraint(constraint: GrammarConstraint, prefix: str) -> GrammarConstraint:
    """The constraint for a prompt healed by ``prefix`` (cached per constraint and prefix: a run
    sees few distinct prompt endings, and each derived grammar is compiled once)."""
    return constraint.healed(prefix)
