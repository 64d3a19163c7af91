"""``$label.key$`` references between calls.

Published rows use whole-argument references (``"arg_1": "$var_1.result$"``); we also resolve them
inside lists/objects, nested paths (``$var_2.result.items.0$``: dict keys, then list indices) and
references embedded in a longer string (substituted with ``str(value)``). Labels are compared in
canonical form, so ``$var1.x$`` and ``$var_1.x$`` are the same reference.
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


def resolve(value: Any, env: dict[str, Any]) -> Any:
    """``value`` with every reference replaced by the value it points to in ``env`` (label -> output)."""
    if isinstance(value, str):
        ref = parse_reference(value)
        if ref is not None:
            return lookup(ref, env)
        return REF.sub(lambda m: str(lookup(parse_reference(m.group(0)), env)), value)  # type: ignore[arg-type]
    if isinstance(value, dict):
        return {k: resolve(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, env) for v in value]
    if isinstance(value, tuple):
        return tuple(resolve(v, env) for v in value)
    return value
