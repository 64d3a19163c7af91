"""Helpers for walking resolved (possibly cyclic) OpenAPI schemas safely.

Resolved schemas are read-only mappings that may form cycles (see :mod:`callbench.specs.refs`),
so every walker here is bounded: either by ``max_depth`` or by the ids already on the path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from callbench.specs.patterns import compile_pattern
from callbench.specs.refs import thaw

# Keywords whose value is one schema, a list of schemas, or a name -> schema map.
_ONE = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

# OpenAPI-only or annotation keywords that JSON Schema validators should not see.
_DROP = frozenset(
    {
        "nullable",
        "discriminator",
        "xml",
        "example",
        "externalDocs",
        "readOnly",
        "writeOnly",
        "deprecated",
        "x-nullable",
    }
)


def subschemas(schema: Any) -> Iterator[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """Yield ``(relative_path, child_schema)`` for the direct child schemas of ``schema``."""
    if not isinstance(schema, Mapping):
        return
    for kw in _ONE:
        v = schema.get(kw)
        if isinstance(v, Mapping):
            yield (kw,), v
        elif kw == "items" and isinstance(v, tuple | list):  # draft-4 tuple form
            for i, s in enumerate(v):
                if isinstance(s, Mapping):
                    yield (kw, i), s
    for kw in _MANY:
        v = schema.get(kw)
        if isinstance(v, tuple | list):
            for i, s in enumerate(v):
                if isinstance(s, Mapping):
                    yield (kw, i), s
    for kw in _MAPS:
        v = schema.get(kw)
        if isinstance(v, Mapping):
            for name, s in v.items():
                if isinstance(s, Mapping):
                    yield (kw, name), s


def walk_schema(schema: Any, max_depth: int = 32) -> Iterator[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """Pre-order ``(path, schema)`` walk that never loops.

    A schema already on the current path (a recursion) is not entered again, and nothing
    deeper than ``max_depth`` nested schemas is yielded. Shared (non-recursive) sub-schemas are
    yielded once per place they occur.
    """
    if not isinstance(schema, Mapping):
        return
    on_path: set[int] = set()

    def rec(node: Mapping[str, Any], path: tuple[Any, ...], depth: int):
        yield path, node
        if depth >= max_depth:
            return
        on_path.add(id(node))
        for rel, child in subschemas(node):
            if id(child) not in on_path:
                yield from rec(child, path + rel, depth + 1)
        on_path.discard(id(node))

    yield from rec(schema, (), 0)


def json_type(value: Any) -> str:
    """The JSON type of a Python value (a float is always 'number')."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array"


def _intersect(a: set[str], b: set[str]) -> set[str]:
    out = a & b
    if "number" in a and "integer" in b or "integer" in a and "number" in b:
        out.add("integer")
    return out


def schema_type(schema: Any, _depth: int = 0) -> set[str]:
    """The JSON types a schema admits; an empty set means "unconstrained".

    Handles ``type`` strings and lists, 3.0 ``nullable: true`` (adds ``"null"``), enum/const
    only schemas (types of the listed values), ``allOf`` (intersection) and ``oneOf``/``anyOf``
    (union). With no type information at all, ``properties``/``additionalProperties`` imply
    ``object`` and ``items`` implies ``array``, because that is how real specs use them.
    """
    if not isinstance(schema, Mapping) or _depth > 32:
        return set()
    types: set[str] | None = None
    t = schema.get("type")
    if isinstance(t, str):
        types = {"string" if t == "file" else t}
    elif isinstance(t, tuple | list) and t:
        types = {str(x) for x in t}
    elif "const" in schema:
        types = {json_type(schema["const"])}
    elif isinstance(schema.get("enum"), tuple | list) and schema["enum"]:
        types = {json_type(v) for v in schema["enum"]}
    for sub in schema.get("allOf") or ():
        st = schema_type(sub, _depth + 1)
        if st:
            types = set(st) if types is None else _intersect(types, st)
    if types is None:
        for kw in ("oneOf", "anyOf"):
            subs = schema.get(kw)
            if isinstance(subs, tuple | list) and subs:
                union: set[str] = set()
                for sub in subs:
                    st = schema_type(sub, _depth + 1)
                    if not st:  # one unconstrained branch makes the whole union unconstrained
                        union = set()
                        break
                    union |= st
                if union:
                    types = union if types is None else _intersect(types, union)
    if types is None:
        if "properties" in schema or "additionalProperties" in schema:
            types = {"object"}
        elif "items" in schema:
            types = {"array"}
        else:
            return set()
    if types and (schema.get("nullable") is True or schema.get("x-nullable") is True):
        types.add("null")
    return types


def object_properties(schema: Any, max_depth: int = 16) -> Mapping[str, Mapping[str, Any]]:
    """Property name -> schema, merging ``allOf`` members and the union of ``oneOf``/``anyOf``.

    Own properties win over ``allOf`` ones, which win over alternative branches.
    """
    out: dict[str, Mapping[str, Any]] = {}

    def rec(node: Any, depth: int, seen: frozenset[int]) -> None:
        if not isinstance(node, Mapping) or depth > max_depth or id(node) in seen:
            return
        seen = seen | {id(node)}
        props = node.get("properties")
        if isinstance(props, Mapping):
            for k, v in props.items():
                out.setdefault(k, v)
        for kw in ("allOf", "oneOf", "anyOf"):
            for sub in node.get(kw) or ():
                rec(sub, depth + 1, seen)

    rec(schema, 0, frozenset())
    return MappingProxyType(out)


def required_properties(schema: Any, max_depth: int = 16) -> frozenset[str]:
    """Names required whatever branch is taken: own + ``allOf`` ∪, ``oneOf``/``anyOf`` ∩."""

    def rec(node: Any, depth: int, seen: frozenset[int]) -> frozenset[str]:
        if not isinstance(node, Mapping) or depth > max_depth or id(node) in seen:
            return frozenset()
        seen = seen | {id(node)}
        own = node.get("required")
        req = {x for x in own if isinstance(x, str)} if isinstance(own, tuple | list) else set()
        for sub in node.get("allOf") or ():
            req |= rec(sub, depth + 1, seen)
        for kw in ("oneOf", "anyOf"):
            subs = [s for s in node.get(kw) or () if isinstance(s, Mapping)]
            if subs:
                common = set(rec(subs[0], depth + 1, seen))
                for s in subs[1:]:
                    common &= rec(s, depth + 1, seen)
                req |= common
        return frozenset(req)

    return rec(schema, 0, frozenset())


def allows_additional_properties(schema: Any, max_depth: int = 16) -> bool:
    """True only when the schema (or an allOf member) *explicitly* admits unnamed properties."""
    if not isinstance(schema, Mapping) or max_depth < 0:
        return False
    ap = schema.get("additionalProperties")
    if ap is True or isinstance(ap, Mapping):
        return True
    return any(allows_additional_properties(s, max_depth - 1) for s in schema.get("allOf") or ())



# -- value bounds ---------------------------------------------------------------------------
#: Strings longer than this are not matched against a ``pattern`` (a spec's regex on a model's
#: text). Patterns run on RE2 (linear time, :mod:`callbench.specs.patterns`); the bound only
#: keeps one check's cost small.
MAX_PATTERN_SUBJECT = 10_000


def _same(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, ``1 == 1.0``, containers compared deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _admits(types: set[str], value: Any) -> bool:
    kind = json_type(value)
    return not types or kind in types or (kind == "integer" and "number" in types)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bounds_violation(value: Any, schema: Any, max_depth: int = 16) -> str | None:
    """Why ``value`` breaks the bounds ``schema`` sets, in one line, or None when it keeps them.

    The bounds: ``enum``/``const``; ``minimum``/``maximum`` and ``exclusiveMinimum``/
    ``exclusiveMaximum`` (numeric, 3.1; boolean, 3.0) on numbers; ``minLength``/``maxLength``
    and ``pattern`` (a search, as in JSON Schema) on strings; ``minItems``/``maxItems`` on arrays.
    Array ``items`` and object ``properties`` are checked inside, ``allOf`` members all apply,
    and ``anyOf``/``oneOf`` are broken only when every branch that admits the value's type breaks
    its bounds. Types themselves are not judged (a string where the spec says integer is a
    matter of value comparison, not of bounds): a schema whose type does not admit the value
    sets it no bounds (not even ``enum``), a keyword applies only to values of its type, and
    ``null`` is never out of bounds. Read the value the way the spec types it first
    (query strings are strings). Bounded by ``max_depth`` nested schemas (cyclic schemas stop).
    """
    return _violation(value, schema, max_depth, "")


def _violation(value: Any, schema: Any, depth: int, where: str) -> str | None:
    if not isinstance(schema, Mapping) or depth < 0 or value is None:
        return None
    if not _admits(schema_type(schema), value):
        return None  # a value of another type than the schema's: not a matter of bounds
    at = f"{where}: " if where else ""
    enum = schema.get("enum")
    if isinstance(enum, tuple | list) and enum and not any(_same(value, e) for e in enum):
        shown = ", ".join(_short(e, 20) for e in list(enum)[:8]) + (", ..." if len(enum) > 8 else "")
        return f"{at}{_short(value)} is not one of the allowed values [{shown}]"
    if "const" in schema and not _same(value, schema["const"]):
        return f"{at}{_short(value)} is not the only allowed value {_short(schema['const'])}"
    if _number(value):
        excl_min, excl_max = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if _number(lo) and (value < lo or (excl_min is True and value == lo)):
            return f"{at}{_short(value)} is below the {'exclusive ' if excl_min is True else ''}minimum {lo}"
        if _number(hi) and (value > hi or (excl_max is True and value == hi)):
            return f"{at}{_short(value)} is above the {'exclusive ' if excl_max is True else ''}maximum {hi}"
        if _number(excl_min) and value <= excl_min:
            return f"{at}{_short(value)} is not above the exclusive minimum {excl_min}"
        if _number(excl_max) and value >= excl_max:
            return f"{at}{_short(value)} is not below the exclusive maximum {excl_max}"
    elif isinstance(value, str):
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if _number(lo) and len(value) < lo:
            return f"{at}{_short(value)} is shorter than minLength {lo}"
        if _number(hi) and len(value) > hi:
            return f"{at}{len(value)} characters, longer than maxLength {hi}"
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and len(value) <= MAX_PATTERN_SUBJECT:
            if not compile_pattern(pattern).search(value):
                return f"{at}{_short(value)} does not match the pattern {_short(pattern, 60)}"
    elif isinstance(value, list | tuple):
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        if _number(lo) and len(value) < lo:
            return f"{at}{len(value)} items, fewer than minItems {lo}"
        if _number(hi) and len(value) > hi:
            return f"{at}{len(value)} items, more than maxItems {hi}"
        items = schema.get("items")
        for i, item in enumerate(value):
            sub = items if isinstance(items, Mapping) else (
                items[i] if isinstance(items, tuple | list) and i < len(items) else None
            )
            problem = _violation(item, sub, depth - 1, f"{where}[{i}]")
            if problem:
                return problem
    elif isinstance(value, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, item in value.items():
                problem = _violation(item, props.get(key), depth - 1, f"{where}.{key}" if where else str(key))
                if problem:
                    return problem
    for sub in schema.get("allOf") or ():
        problem = _violation(value, sub, depth - 1, where)
        if problem:
            return problem
    for kw in ("anyOf", "oneOf"):
        subs = [s for s in schema.get(kw) or () if isinstance(s, Mapping) and _admits(schema_type(s), value)]
        if subs:
            problems = [_violation(value, s, depth - 1, where) for s in subs]
            if all(problems):
                return problems[0]
    return None

# -- conversion to plain JSON Schema --------------------------------------------------------
def _graph_info(root: Mapping[str, Any]) -> tuple[set[int], set[int]]:
    """(cut points, ids from which a cycle is reachable) for the schema graph under ``root``.

    Cut points are the targets of DFS back edges: every cycle contains one, and a recursion
    level passes exactly one per turn, so counting them measures recursion depth. An iterative
    Tarjan SCC pass (no recursion limit trouble on deep specs) finds who can reach a cycle.
    """
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    on_path: set[int] = set()
    stack: list[int] = []
    succ: dict[int, list[int]] = {}
    cuts: set[int] = set()
    reaches: set[int] = set()
    counter = 0
    work: list[tuple[Mapping[str, Any], Iterator[tuple[Any, Mapping[str, Any]]]]] = []

    def push(node: Mapping[str, Any]) -> None:
        nonlocal counter
        i = id(node)
        index[i] = low[i] = counter
        counter += 1
        stack.append(i)
        on_stack.add(i)
        on_path.add(i)
        succ[i] = []
        work.append((node, subschemas(node)))

    push(root)
    while work:
        node, it = work[-1]
        i = id(node)
        advanced = False
        for _, child in it:
            c = id(child)
            succ[i].append(c)
            if c not in index:
                push(child)
                advanced = True
                break
            if c in on_path:
                cuts.add(c)
            if c in on_stack:
                low[i] = min(low[i], index[c])
        if advanced:
            continue
        work.pop()
        on_path.discard(i)
        if work:
            parent = id(work[-1][0])
            low[parent] = min(low[parent], low[i])
        if low[i] == index[i]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == i:
                    break
            members = set(comp)
            is_cyclic = len(comp) > 1 or i in succ[i]
            if is_cyclic or any(s in reaches for m in comp for s in succ[m] if s not in members):
                reaches |= members
    return cuts, reaches


def to_json_schema(schema: Any, max_depth: int = 8) -> dict[str, Any] | bool:
    """Convert a resolved OpenAPI 3.0/3.1 schema into a plain JSON Schema (2020-12) dict.

    ``nullable: true`` becomes a ``"null"`` type (or an ``anyOf`` with null), boolean
    ``exclusiveMinimum``/``exclusiveMaximum`` become numeric, ``type: file`` becomes string, and
    OpenAPI-only keywords (discriminator, xml, example, readOnly, ``x-*``...) are dropped.

    Recursion: ``max_depth`` bounds how many times a recursive schema may re-enter itself
    (one count per turn of a cycle); the next entry is replaced by ``{}`` (accept anything).
    Non-recursive parts are never cut, however deep. Identical sub-results are shared between places in the
    returned dict (it is a DAG), so treat it as read-only or ``copy.deepcopy`` it first.
    """
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping):
        return {}
    cuts, reaches = _graph_info(schema)
    memo: dict[tuple[int, int], dict[str, Any]] = {}

    def conv(node: Any, depth: int) -> Any:
        if not isinstance(node, Mapping):
            return thaw(node) if not isinstance(node, bool) else node
        i = id(node)
        if i in cuts:
            if depth >= max_depth:
                return {}
            depth += 1
        key = (i, depth if i in reaches else -1)
        hit = memo.get(key)
        if hit is not None:
            return hit
        out: dict[str, Any] = {}
        memo[key] = out
        for k, v in node.items():
            if k in _DROP or k.startswith("x-"):
                continue
            if k in _MAPS and isinstance(v, Mapping):
                out[k] = {name: conv(s, depth) for name, s in v.items()}
            elif k in _MANY and isinstance(v, tuple | list):
                out[k] = [conv(s, depth) for s in v]
            elif k == "items" and isinstance(v, tuple | list):
                out["prefixItems"] = [conv(s, depth) for s in v]
            elif k in _ONE and isinstance(v, Mapping | bool):
                out[k] = conv(v, depth)
            elif k == "type" and v == "file":
                out[k] = "string"
            else:
                out[k] = thaw(v)
        for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if isinstance(out.get(excl), bool):
                flag = out.pop(excl)
                if flag and bound in out:
                    out[excl] = out.pop(bound)
        if node.get("nullable") is True or node.get("x-nullable") is True:
            t = out.get("type")
            if isinstance(t, str):
                out["type"] = [t, "null"] if t != "null" else t
            elif isinstance(t, list):
                if "null" not in t:
                    t.append("null")
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
            if "const" in out:
                out["anyOf"] = [{"const": out.pop("const")}, {"type": "null"}]
            elif t is None and any(k in out for k in ("allOf", "oneOf", "anyOf", "not")):
                inner = dict(out)
                out.clear()
                out["anyOf"] = [inner, {"type": "null"}]
        return out

    return conv(schema, 0)


__all__ = [
    "allows_additional_properties",
    "bounds_violation",
    "object_properties",
    "required_properties",
    "schema_type",
    "subschemas",
    "to_json_schema",
    "walk_schema",
]
