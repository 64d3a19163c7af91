"""What a JSON schema admits as a scalar: its enum members and JSON types (:func:`schema_scalars`),
shared by the web API grammar, its URL lexemes and the checker; and the fast mapping test the
builders use on schemas (loaded specs are made of ``MappingProxyType``/``dict``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from callbench.specs import schema_type

__all__ = ["is_map", "scalar_key", "scalars_memoized", "schema_keyword", "schema_scalars"]


def is_map(x: Any) -> bool:
    """``isinstance(x, Mapping)``, fast for the MappingProxyType/dict schemas specs are made of
    (the ABC check dominated grammar builds of the largest specs)."""
    t = type(x)
    return t is MappingProxyType or t is dict or (t not in _SCALAR_TYPES and isinstance(x, Mapping))


_SCALAR_TYPES = frozenset({str, int, float, bool, type(None), tuple, list})


def schema_keyword(schema: Any, key: str) -> tuple[Any, ...]:
    """The schemas listed under ``key`` (``allOf``, ``oneOf``, ``anyOf``); () when there are none."""
    v = schema.get(key) if is_map(schema) else None
    if not v:  # the common case: the keyword is absent
        return ()
    return tuple(s for s in v if is_map(s)) if isinstance(v, tuple | list) else ()


def schema_scalars(schema: Any, depth: int = 0) -> tuple[list[Any] | None, set[str]] | None:
    """(enum values or None, JSON types) a schema admits; None = unconstrained (any value).

    oneOf/anyOf without own type information unite their branches' scalars (so branch enums stay
    exact); objects and arrays are then taken from the merged shape/items of the whole schema.
    """
    if not is_map(schema) or depth > 16:
        return None
    nullable = schema.get("nullable") is True or schema.get("x-nullable") is True
    if "const" in schema:
        vals = [schema["const"]]
        return ([*vals, None] if nullable else vals), set()
    enum = schema.get("enum")
    if not (isinstance(enum, tuple | list) and enum):
        enum = next(
            (
                s["enum"]
                for s in schema_keyword(schema, "allOf")
                if isinstance(s.get("enum"), tuple | list) and s["enum"]
            ),
            None,
        )
    if isinstance(enum, tuple | list) and enum:
        vals = list(enum)
        types = schema_type(schema)
        extra = types & {"object", "array"}
        return ([*vals, None] if nullable and None not in vals else vals), extra
    branches = schema_keyword(schema, "oneOf") + schema_keyword(schema, "anyOf")
    own = any(k in schema for k in ("type", "properties", "items", "additionalProperties", "allOf"))
    if branches and not own:
        all_enums: list[Any] = []
        types: set[str] = set()
        has_enum = False
        for br in branches:
            sub = schema_scalars(br, depth + 1)
            if sub is None:
                return None
            e, t = sub
            if e is not None:
                has_enum = True
                all_enums += [v for v in e if v not in all_enums]
            types |= t
        if nullable:
            types.add("null")
        return (all_enums if has_enum else None), types
    types = schema_type(schema)
    if not types:
        return None
    return None, set(types)


#: The keywords :func:`schema_scalars` (and the ``schema_type`` it calls) read.
_SCALAR_KEYS = frozenset({
    "type", "const", "enum", "allOf", "oneOf", "anyOf", "properties", "additionalProperties", "items",
    "nullable", "x-nullable",
})


def scalar_key(schema: Any) -> tuple[Any, ...] | None:
    """What :func:`schema_scalars` reads of a flat ``schema`` (values scalars or lists of
    scalars), as a hashable key: two schemas with the same key have the same scalars. None
    for a nested schema (``allOf`` members, ``items`` ...) or any other value."""
    if not is_map(schema):
        return None
    out = []
    for k, v in schema.items():
        if k not in _SCALAR_KEYS:
            continue
        if isinstance(v, tuple | list):
            if not all(type(x) in _FLAT for x in v):
                return None
            v = tuple((type(x), x) for x in v)  # 1, 1.0 and True hash alike
        elif type(v) not in _FLAT:
            return None
        out.append((k, type(v), v))
    if len(out) > 1:
        out.sort(key=lambda kv: kv[0])  # the keywords in any order
    return tuple(out)


_FLAT = frozenset({str, int, float, bool, type(None)})


def scalars_memoized(schema: Any, memo: dict[int, Any]) -> Any:
    hit = memo.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = memo[id(schema)] = (schema, schema_scalars(schema))
    return hit[1]
