"""Task text: the deterministic template writer and the check every text must pass.

The template (offline, the default) says what the operation does (its summary, else the first
sentence of its description, else its operationId in words) and then every value the gold request carries, with the argument's name,
where it goes and the value in the form the request carries it: ``Create a pet, with query
parameters `limit` = 20, `q` = 'cats' and with the body `name` = 'Fido', `tag.color` = 'red'.`` A value a real-world starter
passes in (a function argument holding a path value) is named, not stated.

:func:`missing_values` is the deterministic completeness check the LLM writer's texts go through
too: every string value must appear verbatim, every number as a number (``20``, not ``200``), each
member of a scalar array likewise; a boolean, null or empty value needs its argument's name; a
value held by a starter argument needs the argument's name in backticks or as a word.
:func:`text_problems` rejects texts that are empty, too long or contain code.
"""

from __future__ import annotations

import json
import re
from typing import Any

from callbench.tracks.webapi.synthesis.gold import Fact, GoldRequest

MAX_TEXT_CHARS = 1500
_LOCATION_WORDS = {"path": "path parameter", "query": "query parameter", "header": "header", "cookie": "cookie"}


def render_value(value: Any) -> str:
    """A value as a task text writes it: strings quoted, numbers and booleans bare, scalar
    arrays as ``['a', 'b']``, anything else as JSON."""
    if isinstance(value, str):
        return f'"{value}"' if "'" in value else f"'{value}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _action(op: Any) -> str:
    text = " ".join((op.summary or "").split()) or " ".join(re.sub(r"<[^>]+>", " ", op.description or "").split())
    if text:
        first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].rstrip(".!?")
        text = first if len(first) <= 160 else first[:157].rsplit(" ", 1)[0] + "..."
    elif op.operation_id:
        words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", op.operation_id)
        text = " ".join(re.split(r"[^A-Za-z0-9]+", words)).strip().lower() or op.operation_id
    else:
        text = f"call {op.method.upper()} {op.path}"
    return text[:1].upper() + text[1:]


def template_text(gold: GoldRequest, arguments: dict[str, str] | None = None) -> str:
    """The template writer's text for ``gold``; ``arguments``: path parameter -> the starter's
    argument that holds its value. Values are grouped by where they go: ``..., with path parameter
    `id` = '7'; query parameters `limit` = 20, `q` = 'cats'; header `X-Trace` = 'a1' and the body
    `name` = 'Fido'.``"""
    arguments = arguments or {}
    groups: dict[str, list[str]] = {}
    body: list[str] = []
    for f in gold.facts:
        if f.location == "path" and f.name in arguments:
            groups.setdefault("path", []).append(f"`{f.name}` from the argument `{arguments[f.name]}`")
        elif f.location == "body":
            if f.name != "(body)":
                body.append(f"`{f.name}` = {render_value(f.value)}")
            elif f.value in ({}, []):
                body.append(f"empty ({render_value(f.value)})")
            else:
                body.append(f"value {render_value(f.value)}")
        else:
            groups.setdefault(f.location, []).append(f"`{f.name}` = {render_value(f.value)}")
    parts = []
    for loc in ("path", "query", "header", "cookie"):
        items = groups.get(loc)
        if items:
            word = _LOCATION_WORDS[loc] + ("s" if len(items) > 1 else "")
            parts.append(f"{word} " + ", ".join(items))
    text = _action(gold.operation)
    if parts:
        text += ", with " + "; ".join(parts)
    if body:
        text += (" and" if parts else ",") + " with the body " + ", ".join(body)
    return " ".join(text.split()) + "."


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


def _number_in(value: int | float, text: str) -> bool:
    forms = {json.dumps(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w]|\.\d)", text) for f in forms)


def _scalar_stated(value: Any, text: str) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return _number_in(value, text)
    if isinstance(value, str):
        return bool(value) and value in text
    return False


def _name_words(name: str) -> list[str]:
    last = re.split(r"[.\[\]]", name.rstrip("]"))
    last_name = [p for p in last if p and not p.isdigit()]
    return [last_name[-1]] if last_name else [name]


def missing_values(text: str, facts: list[Fact], arguments: dict[str, str] | None = None) -> list[str]:
    """What ``text`` fails to state (empty: complete). One line per missing value."""
    arguments = arguments or {}
    out: list[str] = []
    for f in facts:
        if f.location == "path" and f.name in arguments:
            if not _word_in(arguments[f.name], text):
                out.append(f"the argument `{arguments[f.name]}` (holding path parameter {f.name}) is not named")
            continue
        v = f.value
        if isinstance(v, list) and v and all(not isinstance(x, dict | list) for x in v):
            lost = [x for x in v if not (_scalar_stated(x, text) or (isinstance(x, bool) and _word_in(str(x).lower(), text)))]
            if lost:
                out.append(f"{f.location} value {f.name} = {render_value(v)}: {render_value(lost[0])} is not in the text")
            continue
        if _scalar_stated(v, text):
            continue
        if f.name == "(body)" and v in ({}, [], ""):
            if json.dumps(v) in text or re.search(r"\bempty\b[^.]*\bbody\b|\bbody\b[^.]*\bempty\b", text, re.IGNORECASE):
                continue
            out.append("the request has an empty body, which the text does not say")
            continue
        if isinstance(v, bool | type(None)) or v in ("", [], {}):
            if any(_word_in(w, text) or _word_in(" ".join(re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", w).replace("_", " ").split()), text)
                   for w in _name_words(f.name)):
                continue
            out.append(f"{f.location} value {f.name} = {render_value(v)}: the argument is not named")
            continue
        out.append(f"{f.location} value {f.name} = {render_value(v)} is not in the text")
    return out


def text_problems(text: str) -> list[str]:
    """Why ``text`` cannot be a task text at all (empty, too long, code)."""
    t = text.strip()
    if not t:
        return ["the text is empty"]
    out = []
    if len(t) > MAX_TEXT_CHARS:
        out.append(f"the text is {len(t)} characters long (at most {MAX_TEXT_CHARS})")
    if "```" in t or re.search(r"\baxios\s*[.(]|\brequire\s*\(|=>|\bfunction\s*\(", t):
        out.append("the text contains code")
    return out
