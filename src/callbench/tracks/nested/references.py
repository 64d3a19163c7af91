"""``$label.key$`` references between calls.

Published rows use whole-argument references (``"arg_1": "$var_1.result$"``); we also resolve them
inside lists/objects, nested paths (``$var_2.result.items.0$``: dict keys, then list indices) and
references embedded in a longer string (substituted with ``str(value)``). Labels are compared in
canonical form, so ``$var1.x$`` and ``$var_1.x$`` are the same reference.

Resolution is bounded (:data:`MAX_VALUE_CHARS`, :data:`MAX_VALUE_DEPTH`): a chain of references can
double a value at every call (two references to the previous output in one argument, or a
``var_result`` holding the previous one twice, whose JSON doubles although memory does not), so
40 calls would ask for terabytes. Past the bound the call fails with :class:`ValueTooLargeError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from callbench.errors import CallbenchError
from callbench.tracks.nested.schema import canonical_label

REF = re.compile(r"\$([A-Za-z_]\w*)((?:\.[^.$\s]+)*)\$")


class ReferenceResolutionError(CallbenchError):
    """A reference cannot be resolved."""


class UnknownLabelError(ReferenceResolutionError):
    pass


class UnknownKeyError(ReferenceResolutionError):
    pass


class FailedReferenceError(ReferenceResolutionError):
    """The referenced call failed; its error propagates explicitly."""


class ValueTooLargeError(ReferenceResolutionError):
    """A resolved value (or a tool's output) is larger or deeper than the executor accepts."""


# Far above any published argument or output (numbers, short lists and strings), far below memory.
MAX_VALUE_CHARS = 1_000_000
MAX_VALUE_DEPTH = 32


def json_size(value: Any, limit: int = MAX_VALUE_CHARS, max_depth: int = MAX_VALUE_DEPTH, what: str = "the value") -> int:
    """About how many characters ``value`` takes as JSON, counting a shared part every time it
    appears (as JSON writes it). Walks iteratively and stops as soon as ``limit`` or ``max_depth``
    is passed (:class:`ValueTooLargeError`), so the walk itself is bounded too."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() // 3 + 2  # ~ digits (a bit is 0.3 digits)
        elif isinstance(v, float):
            total += 24
        elif isinstance(v, (dict, list, tuple)):
            if depth > max_depth:
                raise ValueTooLargeError(f"{what}: nested deeper than {max_depth} levels")
            if isinstance(v, dict):
                total += 2 + sum(len(str(k)) + 4 for k in v) if len(v) <= limit else limit + 1
                children = v.values()
            else:
                total += 2 + len(v)
                children = v
            if total <= limit:
                stack.extend((c, depth + 1) for c in children)
        else:
            total += 16
        if total > limit:
            raise ValueTooLargeError(f"{what}: more than {limit:,} characters as JSON")
    return total


@dataclass(frozen=True)
class Reference:
    label: str  # canonical
    path: tuple[str, ...]
    text: str

    def __str__(self) -> str:
        return self.text


def parse_reference(text: str) -> Reference | None:
    """The reference if ``text`` is exactly one ``$label[.key...]$``, else None."""
    m = REF.fullmatch(text.strip()) if isinstance(text, str) else None
    if not m:
        return None
    path = tuple(p for p in m.group(2).split(".") if p)
    return Reference(canonical_label(m.group(1)), path, text.strip())


def find_references(value: Any) -> list[Reference]:
    """Every reference anywhere in ``value`` (strings, lists, dict values), in order."""
    out: list[Reference] = []
    if isinstance(value, str):
        for m in REF.finditer(value):
            out.append(parse_reference(m.group(0)))  # type: ignore[arg-type]
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(find_references(v))
    elif isinstance(value, (list, tuple)):
        for v in value:
            out.extend(find_references(v))
    return out


def lookup(ref: Reference, env: dict[str, Any]) -> Any:
    if ref.label not in env:
        known = ", ".join(sorted(env)) or "none"
        raise UnknownLabelError(f"{ref}: unknown label '{ref.label}' (known: {known})")
    value = env[ref.label]
    if getattr(value, "is_call_error", False):
        raise FailedReferenceError(f"{ref}: call '{ref.label}' failed ({value.message})")
    walked = ref.label
    for key in ref.path:
        if isinstance(value, dict):
            if key not in value:
                raise UnknownKeyError(
                    f"{ref}: '{walked}' has no key '{key}' (keys: {', '.join(map(str, value)) or 'none'})"
                )
            value = value[key]
        elif isinstance(value, (list, tuple)):
            try:
                value = value[int(key)]
            except (ValueError, IndexError):
                raise UnknownKeyError(
                    f"{ref}: '{walked}' is a list of {len(value)}; '{key}' is not an index in it"
                ) from None
        else:
            raise UnknownKeyError(f"{ref}: '{walked}' is a {type(value).__name__}, it has no key '{key}'")
        walked += f".{key}"
    return value


def resolve(value: Any, env: dict[str, Any], *, max_chars: int = MAX_VALUE_CHARS, max_depth: int = MAX_VALUE_DEPTH) -> Any:
    """``value`` with every reference replaced by the value it points to in ``env`` (label -> output),
    at most ``max_chars`` (as JSON) and ``max_depth`` levels: else :class:`ValueTooLargeError`."""
    what = "the call's arguments (references resolved)"
    left = [max_chars]  # characters that embedded substitutions may still add

    def text_of(m: re.Match[str]) -> str:
        found = lookup(parse_reference(m.group(0)), env)  # type: ignore[arg-type]
        json_size(found, max_chars, max_depth, what)  # before str(): str of a shared structure explodes
        text = str(found)
        left[0] -= len(text)
        if left[0] < 0:
            raise ValueTooLargeError(f"{what}: more than {max_chars:,} characters as JSON")
        return text

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            ref = parse_reference(v)
            if ref is not None:
                return lookup(ref, env)
            return REF.sub(text_of, v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        return v

    out = walk(value)
    json_size(out, max_chars, max_depth, what)
    return out
