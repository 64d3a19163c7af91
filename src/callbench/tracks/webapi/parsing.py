"""Turn a model's raw output into the JavaScript program that will run in the sandbox.

Completion models continue the starter code, so the program is ``starter + output``. Chat models
answer in their own way: usually a fenced block that repeats the whole snippet, sometimes only the
continuation, sometimes prose around it. We take the first fenced block (or the whole answer),
then decide whether it is a full program or a continuation of the starter. Cutting whatever
follows the first Axios call is the sandbox's job (by parsing, not by markers).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL)
_REQUIRE_AXIOS = re.compile(
    r"^[ \t]*(?:(?:const|let|var)\s+axios\s*=\s*require\(\s*['\"]axios['\"]\s*\)\s*;?"
    r"|import\s+axios\s+from\s+['\"]axios['\"]\s*;?)[ \t]*$",
    re.MULTILINE,
)
_CHAT_ROLE = re.compile(r"^\s*(?:#+\s*)?(?:assistant|response)\s*:\s*", re.IGNORECASE)


def first_code_block(text: str) -> str:
    """The first fenced block's body (an unterminated fence runs to the end), else the text."""
    m = _FENCE.search(text)
    if m:
        return m.group(2)
    return _CHAT_ROLE.sub("", text, count=1)


def _header(starter: str) -> str:
    """The starter's lines before its final (open) line: task comment and axios import."""
    idx = starter.rfind("\n")
    return starter[: idx + 1] if idx >= 0 else ""


def program_from_completion(starter: str, output: str) -> str:
    """A completion continues the starter directly; a closing fence ends the code."""
    end = output.find("```")
    if end >= 0:
        output = output[:end]
    return starter + output


def program_from_chat(starter: str, output: str) -> str:
    """Rebuild a runnable program from a chat answer.

    * The block contains its own ``axios`` call -> it is a whole program: keep it, dropping its
      own ``require('axios')``/``import`` lines and putting the starter's header in front (so the
      import exists exactly once).
    * Otherwise it continues the starter's last line (e.g. ``get('https://...', {...})`` after
      ``axios.``) -> append it to the starter.
    """
    code = first_code_block(output).strip("\n")
    last_line = starter[starter.rfind("\n") + 1 :]
    if re.search(r"\baxios\s*[.(]", code):
        # Some chat models repeat the starter's open last line and then its continuation.
        body = _REQUIRE_AXIOS.sub("", code)
        return _header(starter) + body.lstrip("\n") + "\n"
    stripped = code.lstrip()
    # A continuation that repeats a prefix of the open line (e.g. "axios." is implied).
    if last_line and stripped.startswith(last_line.strip()):
        stripped = stripped[len(last_line.strip()) :]
    return starter + stripped + ("\n" if not stripped.endswith("\n") else "")


def assemble_program(starter: str, output: str, mode: str) -> str:
    if mode == "chat":
        return program_from_chat(starter, output)
    return program_from_completion(starter, output)
