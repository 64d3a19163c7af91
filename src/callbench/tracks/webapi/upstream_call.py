"""The code WAPIIBench's published scorer runs for a model's answer (compat scoring).

``evaluation.py`` does not run the whole program. It builds the program text (completion models:
the starter plus the generated text, which keeps the closing fence its stop string ends with;
OpenAI chat models: the starter's lines before its last one, then the answer from its first
``axios.`` on), and ``_extract_axios_call`` cuts the first axios call out of it *by text*: from
the first ``axios.`` to the first cut point found, trying them in this order -- ``.then``,
``.catch``, ``.finally`` (each replaced by ``;``), ``});``, ``}\\n);``, ``);``, ``;`` (kept),
``\\naxios.``, the fence (dropped). No ``axios.`` is an absent request, no cut point an
incomplete one. The cut text runs under Node as a CommonJS script right after ``mock.js``, which
declares ``axios``, ``MockAdapter``, ``mock`` and ``fs``.

Compat scoring runs exactly that text in the sandbox (:func:`published_call`), so it sees what
the published scorer sees: everything before the first ``axios.`` is gone (definitions, a
``const`` the call uses), a later ``.then`` in the text can pull in a second statement (and its
request), a call without ``;`` or ``)`` after it is incomplete, and code Node would not start as
a script (``import``, ``await`` outside a function, a second ``const axios``) is a runtime error
(:func:`script_error`); a name the text assigns without declaring it is a global under Node's
sloppy mode, and the script the sandbox runs declares it up front (:func:`sandbox_script`), so it
is a binding of the sample's own whatever mode the sandbox runs the text in. Reimplemented
from the published code's behaviour, not copied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from callbench.sandbox.js_extract import implicit_globals, script_problem

__all__ = [
    "CUT_POINTS",
    "PRELUDE_NAMES",
    "PublishedCall",
    "published_call",
    "published_chat_program",
    "published_program",
    "script_error",
]

# In the order evaluation.py tries them: the first one found after "axios." wins.
CUT_POINTS = (".then", ".catch", ".finally", "});", "}\n);", ");", ";", "\naxios.", "```")
_REPLACED = (".then", ".catch", ".finally")  # -> ";\n"
_KEPT = ("});", "}\n);", ");", ";")  # kept, plus "\n"
# What mock.js declares before the call (a second declaration is a SyntaxError under Node).
PRELUDE_NAMES = ("axios", "MockAdapter", "mock", "fs")
_STOP = "\n```\n"  # the generation stop string of the published scorer


@dataclass(frozen=True)
class PublishedCall:
    """The text the published scorer runs (``code``), or why it runs nothing (``error``: the
    scorer's ``no_request`` or ``incomplete_request``)."""

    code: str | None
    error: str | None = None


def published_program(starter: str, output: str, mode: str) -> str:
    """The program text evaluation.py builds from an answer. Completions: the starter and the
    generated text up to the stop string (which ends the text: a closing fence, its line break
    dropped as evaluation.py drops it). Chat answers: as evaluation.py does for OpenAI models,
    the starter's lines before its last one, then the answer from its first ``axios.``, or the
    whole starter and the answer without a leading ``\\`\\`\\`javascript`` line when the answer has
    no ``axios.``."""
    if mode == "chat":
        at = output.find("axios.")
        if at >= 0:
            return starter[: starter.rfind("\n") + 1] + output[at:]
        return starter + output.removeprefix("```javascript\n")
    stop = output.find(_STOP)
    if stop >= 0:
        output = output[: stop + len(_STOP)]
    code = starter + output
    return code[:-1] if code.endswith("```\n") else code


# evaluation.py's role-marker cut for in-process chat answers (first match anywhere, once).
_ROLE_MARKER = re.compile(r"\s*(?:#+ )?(?:Assistant|Response):\s*")


def published_chat_program(starter: str, prompt_decoded: str, answer: str) -> str | None:
    """The program text evaluation.py's ``generate()`` builds for an in-process chat model (a
    Hugging Face model with ``-instruct`` in its name): its output is the whole sequence decoded
    without special tokens -- the rendered prompt (``prompt_decoded``), then the answer, which the
    ``\\n```\\n`` stop string ends. The program starts at the first occurrence of the starter (in
    the prompt's user turn). If the starter's last line (``axios.``, ``axios.get('<url>',``) occurs
    again later (the answer repeats it), everything between its first and its last occurrence is
    cut out; otherwise the first ``Assistant:``/``Response:`` marker and the whitespace around it
    are removed (a template whose turns are not written that way -- ChatML's ``assistant\\n`` --
    keeps its role line in the program). A trailing fence's line break is dropped.

    None where the decoded text does not contain the starter at all: upstream's ``str.index``
    raises there and its run stops; callbench scores such an answer as an absent request."""
    stop = answer.find(_STOP)
    if stop >= 0:
        answer = answer[: stop + len(_STOP)]
    text = prompt_decoded + answer
    at = text.find(starter)
    if at < 0:
        return None
    code = text[at:]
    last_line = starter[starter.rfind("\n") + 1 :]
    first, last = code.find(last_line), code.rfind(last_line)
    if first != last:
        code = code[:first] + code[last:]
    else:
        code = _ROLE_MARKER.sub("", code, count=1)
    return code[:-1] if code.endswith("```\n") else code


def published_call(program: str) -> PublishedCall:
    """evaluation.py's ``_extract_axios_call``: the first axios call, cut by text."""
    start = program.find("axios.")
    if start == -1:
        return PublishedCall(None, "no_request")
    offset = start + len("axios.")
    for cut in CUT_POINTS:
        at = program.find(cut, offset)
        if at != -1:
            break
    else:
        return PublishedCall(None, "incomplete_request")
    if cut in _REPLACED:
        tail = ";\n"
    elif cut in _KEPT:
        tail = cut + "\n"
    else:
        tail = ""
    return PublishedCall(program[start:at] + tail)


def script_error(call: str) -> str | None:
    """Why Node would refuse to start the call as the script after mock.js (one line), or None."""
    return script_problem(call, PRELUDE_NAMES)


def sandbox_script(call: str) -> str:
    """The cut text as the sandbox runs it: Node runs the script in sloppy mode, where assigning
    an undeclared name makes a global variable; here such names are declared up front (``var
    cfg;``), so they are the sample's own bindings in strict code too (a text that opens with
    'use strict' runs strict in the sandbox), and the rest of the text is unchanged."""
    names = [n for n in implicit_globals(call) if n not in PRELUDE_NAMES]
    return (f"var {', '.join(names)};\n" if names else "") + call
