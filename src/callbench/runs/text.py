"""Text the run store can write: every string made UTF-8 encodable (see :mod:`callbench.runs.store`
for why and how). A leaf module: the store, the run identity and the CLI all need it."""

from __future__ import annotations

from typing import Any, overload


@overload
def encodable(value: str) -> str: ...
@overload
def encodable(value: object) -> Any: ...


def encodable(value: object) -> Any:
    """``value`` with every string (dict keys too) made UTF-8 encodable, as the module doc says.

    Surrogate pairs become their character; lone surrogates become ``\\udXXX`` escape text.
    Tuples come back as lists (as JSON writes them). Strings without surrogates are returned as is.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            return joined.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(v) for v in value]
    return value


def encodable_object(value: dict[str, Any]) -> dict[str, Any]:
    """:func:`encodable` of a JSON object: an object again (its values any JSON value)."""
    out: dict[str, Any] = encodable(value)
    return out
