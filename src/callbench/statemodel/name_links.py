"""Links between calls by name and schema, for specs whose paths show none (RPC-style APIs).

Path-based inference (:mod:`.ids`) finds where an id comes from only when a path template names
an item (``/pets/{petId}``). An RPC-style API (Slack: ``POST /conversations.create`` answers
``{"channel": {"id": ...}}``, ``POST /conversations.archive`` takes a form field ``channel``) has
no such path, so no operation takes an object and no trace has a reference between calls. This
module finds the other kind of link: a field of an operation's success response and an argument
of another operation that match by **name** and **schema**:

* a top-level scalar field and an argument of the same name (``ts`` -> ``ts``);
* the ``id`` of a top-level object, or of the first item of a top-level array of objects, and an
  argument named like that property (``channel.id`` -> ``channel``, ``user.id`` -> ``user``;
  ``channel.0.id`` where the spec declares ``channel`` as an array).

Schemas match when both are one scalar JSON type (not nullable, no ``oneOf``/``anyOf``/``allOf`` on
the argument) and every constraint the argument puts on its value (``enum``, ``pattern``,
``format``, lengths, bounds) is the field's own, so a value the response carries is one the
argument accepts. What the API does with such a value is not modelled (no state): the mock keeps
none for actions and accepts any value its schema admits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callbench.specs.schema import object_properties, required_properties, schema_type
from callbench.statemodel.entity import success

SCALARS = frozenset({"string", "integer", "number", "boolean"})
CONSTRAINT_KEYWORDS = ("enum", "const", "pattern", "format", "minLength", "maxLength", "minimum", "maximum",
                "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
COMBINATORS = ("oneOf", "anyOf", "allOf", "not")


def scalar_type(schema: Any) -> str | None:
    """The one scalar JSON type of ``schema``, None when it admits null, several types or a
    non-scalar."""
    t = schema_type(schema)
    return next(iter(t)) if len(t) == 1 and t <= SCALARS else None


def response_fields(op: Any) -> dict[str, Mapping[str, Any]]:
    """Linkable fields of ``op``'s success response: reference key (``ts``, ``channel.id``,
    ``channel.0.id``) -> the field's schema. Empty when the response has no JSON object schema.
    Only fields every response has: required at each level (the mock leaves optional ones out at
    random), an array that may hold items (the mock fills one or two)."""
    if op is None:
        return {}
    _, schema = success(op)
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    required = required_properties(schema)
    for name, sub in object_properties(schema).items():
        if name not in required or not isinstance(name, str) or not name.isidentifier() or not isinstance(sub, Mapping):
            continue
        if scalar_type(sub):
            out[name] = sub
            continue
        t = schema_type(sub)
        if t == {"object"}:
            inner, key = sub, f"{name}.id"
        elif t == {"array"} and isinstance(sub.get("items"), Mapping) and sub.get("maxItems") != 0:
            inner, key = sub["items"], f"{name}.0.id"
        else:
            continue
        idf = object_properties(inner).get("id")
        if isinstance(idf, Mapping) and scalar_type(idf) and "id" in required_properties(inner):
            out[key] = idf
    return out


def fits(field: Mapping[str, Any], argument: Any) -> bool:
    """Whether every value of ``field``'s schema is one ``argument``'s schema accepts (the checks
    above: one scalar type, the argument's constraints all the field's own)."""
    if not isinstance(argument, Mapping) or any(k in argument for k in COMBINATORS):
        return False
    t = scalar_type(field)
    if t is None or t != scalar_type(argument):
        return False
    return all(k not in argument or (k in field and field[k] == argument[k]) for k in CONSTRAINT_KEYWORDS)


def candidates(argument: str) -> tuple[str, ...]:
    """Response keys that an argument named ``argument`` may take its value from, best first."""
    return (argument, f"{argument}.id", f"{argument}.0.id")


def link_field(fields: Mapping[str, Mapping[str, Any]], argument: str, schema: Any) -> str | None:
    """The key of ``fields`` (a :func:`response_fields` result) that ``argument`` (with ``schema``)
    can take its value from, or None."""
    for key in candidates(argument):
        f = fields.get(key)
        if f is not None and fits(f, schema):
            return key
    return None
