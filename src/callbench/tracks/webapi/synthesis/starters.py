"""Starter-code styles of generated rows (``--starter``).

- ``plain``: no ``starter_code``: the row gets WAPIIBench's starter (task comment, ``require``,
  ``axios.``), as the 395 WAPIIBench rows do.
- ``function``: the call inside an async function whose arguments are the operation's path
  parameters; their values come from ``definitions`` (the sandbox passes a definition to the
  argument of the same name) and the task text names the arguments instead of stating the values.
- ``method``: the same inside a method of an API client class whose constructor sets
  ``this.baseUrl`` to the spec's server.

``mixed`` picks one per row. A real-world starter ends at ``axios.`` with its scopes still open;
the sandbox closes them (see README, "Real-world starter code").
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

STARTERS = ("plain", "function", "method")
STARTER_CHOICES = (*STARTERS, "mixed")
_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false finally for "
    "function if import in instanceof new null return super switch this throw true try typeof var void while with "
    "yield let static implements interface package private protected public await arguments eval undefined NaN "
    "Infinity axios require module exports console process response data result url".split()
)


@dataclass
class Starter:
    style: str
    code: str | None  # None: the default (WAPIIBench) starter
    definitions: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, str] = field(default_factory=dict)  # path parameter -> JS argument name


def _words(text: str) -> list[str]:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def camel(text: str, fallback: str) -> str:
    """``pet_id`` / ``Pet-Id`` -> ``petId``; a JavaScript identifier, never a reserved word."""
    words = [w.lower() for w in _words(text)]
    ident = words[0] + "".join(w.capitalize() for w in words[1:]) if words else fallback
    if not re.match(r"[A-Za-z_$]", ident):
        ident = fallback + ident.capitalize()
    if ident in _RESERVED:
        ident = ident + "Value"
    return ident


def pascal(text: str, fallback: str) -> str:
    words = _words(text)
    ident = "".join(w[:1].upper() + w[1:] for w in words) or fallback
    return ident if re.match(r"[A-Za-z_$]", ident) else fallback + ident


def function_name(op: Any) -> str:
    base = op.operation_id or f"{op.method} {' '.join(s for s in op.path.split('/') if s and '{' not in s)}"
    return camel(base, "callApi")[:60]


def make_starter(style: str, op: Any, path_values: dict[str, str], *, api_title: str, server: str) -> Starter:
    if style == "plain":
        return Starter("plain", None)
    taken: set[str] = set()
    args: dict[str, str] = {}
    for name in path_values:
        ident, i = camel(name, "param"), 2
        base = ident
        while ident in taken:
            ident, i = f"{base}{i}", i + 1
        taken.add(ident)
        args[name] = ident
    defs = {args[n]: v for n, v in path_values.items()}
    fname = function_name(op)
    if fname in taken:
        fname = fname + "Request"
    params = ", ".join(args.values())
    if style == "function":
        code = (
            "const axios = require('axios');\n\n"
            f"async function {fname}({params}) {{\n"
            "  // {task}\n"
            "  const response = await axios."
        )
    elif style == "method":
        cls = pascal(api_title, "Api")[:40] + "Client"
        base_url = server.replace("\\", "\\\\").replace("'", "\\'")
        code = (
            "const axios = require('axios');\n\n"
            f"class {cls} {{\n"
            "  constructor() {\n"
            f"    this.baseUrl = '{base_url}';\n"
            "  }\n\n"
            f"  async {fname}({params}) {{\n"
            "    // {task}\n"
            "    return axios."
        )
    else:
        raise ValueError(f"unknown starter style {style!r}")
    return Starter(style, code, defs, args)


def choose_style(choice: str, rng: random.Random) -> str:
    return rng.choice(STARTERS) if choice == "mixed" else choice
