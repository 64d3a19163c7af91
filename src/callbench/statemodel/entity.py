"""Where the *entity* sits in an operation's JSON: the success response, and the object or
array inside it that describes the resource (many APIs wrap it: Asana's ``{"data": {...}}``,
Slack's ``{"ok": true, "channels": [...]}``).

Shared by inference (which fields an item has, which of them is its id) and the mock server
(where to put stored objects in a response).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from callbench.specs.openapi import Operation
from callbench.specs.schema import object_properties, schema_type
from callbench.statemodel.paths import singular

# Wrapper properties that commonly hold the entity or the page of entities, most likely first.
WRAPPERS = ("data", "result", "results", "items", "item", "records", "values", "value", "entries", "elements", "content")


@dataclass(frozen=True)
class Entity:
    """``path``: property names leading from the response body to the entity (``()``: the body
    itself); ``many``: the entity is an array of items (its schema is the item schema)."""

    status: str
    path: tuple[str, ...]
    schema: Mapping[str, Any]
    many: bool


def is_json(media_type: str) -> bool:
    bare = media_type.split(";", 1)[0].strip().lower()
    return bare == "application/json" or bare.endswith("+json") or bare == "*/*"


def success(op: Operation) -> tuple[str, Mapping[str, Any] | None]:
    """The lowest declared 2xx status (``"2XX"``/``default`` as 200) and its JSON schema, if any."""
    codes = sorted(c for c in op.responses if c[:1] == "2" and c[1:].isdigit())
    if not codes:
        codes = [c for c in op.responses if c.upper() == "2XX"] or [c for c in op.responses if c == "default"]
    if not codes:
        return ("200", None)
    code = codes[0]
    resp = op.responses.get(code) or {}
    status = code if code[1:].isdigit() else "200"
    content = resp.get("content") if isinstance(resp, Mapping) else None
    if isinstance(content, Mapping):
        for mt, media in content.items():
            if is_json(mt) and isinstance(media, Mapping) and isinstance(media.get("schema"), Mapping):
                return status, media["schema"]
    return status, None


def _items(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if "array" in schema_type(schema):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else {}
    return None


def _hint(path: str) -> str:
    """The last literal segment of ``path`` (a list response often keeps its items under it)."""
    for seg in reversed([s for s in path.split("/") if s]):
        if not seg.startswith("{"):
            return seg.split(".", 1)[0]
    return ""


def entity(op: Operation) -> Entity | None:
    """The entity of ``op``'s success response, or None when the response has no JSON schema.

    An array body is a page of items. An object body is unwrapped once: through a property named
    like the path's collection in the singular (DigitalOcean's ``{"droplet": {...}}``), a wrapper property
    (:data:`WRAPPERS`) holding an object or array, or through its only array-of-objects property
    (``{"channels": [...], "ok": true}``) of a GET on a literal path when it has exactly one, not counting hypermedia
    (``_links``, ``links``); a property named like the path's last literal segment
    (``{"lists": [...]}`` on ``/lists``) comes first.
    """
    status, schema = success(op)
    if schema is None:
        return None
    items = _items(schema)
    if items is not None:
        return Entity(status, (), items, True)
    props = object_properties(schema)
    hint = _hint(op.path)
    one = singular(hint)
    if one != hint and isinstance(props.get(one), Mapping) and "object" in schema_type(props[one]):
        return Entity(status, (one,), props[one], False)  # {"droplet": {...}} on /droplets
    for name in WRAPPERS:
        sub = props.get(name)
        if isinstance(sub, Mapping):
            items = _items(sub)
            if items is not None:
                return Entity(status, (name,), items, True)
            if "object" in schema_type(sub) or object_properties(sub):
                return Entity(status, (name,), sub, False)
    if isinstance(props.get(hint), Mapping) and (items := _items(props[hint])) is not None:
        return Entity(status, (hint,), items, True)  # {"lists": [...]} on /lists
    listing = op.method.lower() == "get" and not op.path.rstrip("/").endswith("}")
    arrays = [] if not listing else [
        (k, _items(v))
        for k, v in props.items()
        if isinstance(v, Mapping) and _items(v) is not None and not k.startswith("_") and k != "links"
    ]
    arrays = [(k, it) for k, it in arrays if it is not None and ("object" in schema_type(it) or object_properties(it))]
    if len(arrays) == 1:
        return Entity(status, (arrays[0][0],), arrays[0][1], True)
    return Entity(status, (), schema, False)
