"""Read a JSON list of tool calls out of whatever a model wrote.

Models wrap the list in prose, code fences or tool-call tags, answer with a single object instead
of a list, or run out of tokens mid-list. We look for the first JSON value that parses as calls,
trying (in order) tool-call tags, fenced blocks, and the raw text from its first ``[`` or ``{``;
a truncated list keeps the complete calls it holds (``raw_decode`` on each element).
"""

from __future__ import annotations

import json
import re
from typing import Any

_TAGS = re.compile(
    r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)|<\|tool_call\|>\s*(.*?)\s*(?:<\|/tool_call\|>|$)|\[TOOL_CALLS\]\s*(.*)",
    re.DOTALL,
)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)(?:```|$)", re.DOTALL)
_DECODER = json.JSONDecoder()


def _as_calls(value: Any) -> list[dict] | None:
    if isinstance(value, dict):
        if "name" in value:
            return [value]
        for key in ("calls", "tool_calls", "function_calls", "answer"):
            if isinstance(value.get(key), list):
                return _as_calls(value[key])
        return None
    if isinstance(value, list) and all(isinstance(c, dict) for c in value):
        out = []
        for c in value:
            if "function" in c and isinstance(c["function"], dict):  # OpenAI tool-call shape
                fn = c["function"]
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        return None
                c = {"name": fn.get("name"), "label": c.get("label"), "arguments": args or {}}
            out.append(c)
        return out
    return None


def _truncated_list(text: str, start: int) -> list[dict] | None:
    """Complete objects of a list that was cut off (e.g. by the token limit)."""
    i = start + 1
    items: list[Any] = []
    while i < len(text):
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            break
        try:
            value, i = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        items.append(value)
    return _as_calls(items) if items else None


def _from_text(text: str) -> list[dict] | None:
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = _DECODER.raw_decode(text, m.start())
        except json.JSONDecodeError:
            if text[m.start()] == "[":
                calls = _truncated_list(text, m.start())
                if calls:
                    return calls
            continue
        calls = _as_calls(value)
        if calls is not None:
            return calls
    return None


def parse_calls(text: str) -> list[dict] | None:
    """The calls in ``text``, or None (a parse error)."""
    tagged = [next(g for g in m.groups() if g is not None) for m in _TAGS.finditer(text)]
    if tagged:
        calls: list[dict] = []
        for chunk in tagged:
            found = _from_text(chunk)
            if found is None:
                return None
            calls.extend(found)
        return calls
    for m in _FENCE.finditer(text):
        found = _from_text(m.group(1))
        if found is not None:
            return found
    return _from_text(text)
