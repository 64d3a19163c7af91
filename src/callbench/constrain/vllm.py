"""The same grammar, sent to a vLLM server instead of applied in-process.

vLLM's OpenAI-compatible server enforces a grammar given per request in the body's
``structured_outputs`` object (vLLM >= 0.12; introduced in 0.10.2/0.11)::

    {"structured_outputs": {"grammar": "<grammar text>"}}

which ``callbench.models.openai_compat`` sends when the model is configured with
``extra_body=vllm_extra_body(lark)``. Which engine enforces it is a *server* setting: start vLLM with
``--structured-outputs-config.backend guidance`` so llguidance (the library the in-process engine
uses) interprets the grammar exactly as :class:`~callbench.constrain.engine.GrammarConstraint` does.
With the default ``auto`` backend, vLLM may hand a grammar to xgrammar, which expects GBNF/EBNF and
would at best convert the Lark text lossily.

How vLLM's guidance backend reads the text: it calls ``llguidance.grammar_from("grammar", text)``,
which treats the text as Lark when a line starts with ``start:`` or ``%llguidance``, and otherwise
tries to convert it from GBNF. To make the Lark reading certain regardless of how the grammar is
laid out, a ``%llguidance {}`` header line is prepended when neither marker is present.

Older servers (vLLM < 0.12) used top-level fields instead, removed in 0.12::

    {"guided_grammar": "<grammar text>", "guided_decoding_backend": "guidance"}

(the per-request backend field was honoured by the V0 engine only; V1 servers take the backend from
``--guided-decoding-backend guidance``). ``vllm_extra_body(lark, legacy=True)`` produces that form.

A :class:`~callbench.constrain.engine.TokenFilter` cannot be sent to a server: only the grammar is
enforced there, so server-side and in-process results differ wherever a filter would have vetoed.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LARK_HEADER", "vllm_extra_body", "vllm_grammar_text"]

#: Prepended when the grammar text does not already announce itself as Lark.
LARK_HEADER = "%llguidance {}\n"

# The test llguidance (and hence vLLM's guidance backend) applies to tell Lark from GBNF.
_LARK_MARKER = re.compile(r"(?m)^\s*(%llguidance\b|start\s*:)")


def vllm_grammar_text(lark: str) -> str:
    """``lark`` as sent to vLLM: unchanged if it is recognisably Lark, else with :data:`LARK_HEADER`."""
    return lark if _LARK_MARKER.search(lark) else LARK_HEADER + lark


def vllm_extra_body(lark: str, *, legacy: bool = False) -> dict[str, Any]:
    """Request-body fields asking a vLLM OpenAI-compatible server to enforce the Lark grammar ``lark``.

    Current vLLM: ``{"structured_outputs": {"grammar": text}}``. ``legacy=True`` gives the pre-0.12
    form ``{"guided_grammar": text, "guided_decoding_backend": "guidance"}``. The server should run
    the guidance backend (see the module docstring).
    """
    text = vllm_grammar_text(lark)
    if legacy:
        return {"guided_grammar": text, "guided_decoding_backend": "guidance"}
    return {"structured_outputs": {"grammar": text}}
