"""Each operation's role from its method and where its path sits among the resources.

| path | GET | POST | PUT | PATCH | DELETE |
| --- | --- | --- | --- | --- | --- |
| item ``/pets/{petId}`` | read (action if it returns an array) | update | replace | update | delete |
| collection ``/pets`` | list (array response) | create | action | action | action |
| under a collection ``/pets/findByStatus`` | list (array response) | action | action | action | action |
| under an item ``/pets/{petId}/uploadImage`` | action (read) | action | action | action | action |

Everything else is an *action* on no resource. A GET on a collection whose response is a single
object, and a POST on a collection whose response is an array, are actions too.
"""

from __future__ import annotations

from dataclasses import dataclass

from callbench.specs.openapi import Operation
from callbench.statemodel.entity import entity
from callbench.statemodel.paths import join, norm, param_of, segments

_ITEM = {"get": "read", "post": "update", "put": "replace", "patch": "update", "delete": "delete"}


@dataclass(frozen=True)
class RoleGuess:
    role: str
    resource: str | None
    note: str = ""


def classify(op: Operation, items: dict[str, str], collections: dict[str, str]) -> RoleGuess:
    """``items``/``collections``: path -> resource name (from :func:`paths.shapes`)."""
    m, path = op.method.lower(), norm(op.path)
    ent = entity(op)
    many = ent is not None and ent.many
    if path in items:
        if m == "get" and many:
            return RoleGuess("action", items[path], "GET on an item path returns an array, not the item")
        role = _ITEM.get(m, "action")
        note = "POST on an item path read as an update" if m == "post" else ""
        return RoleGuess(role, items[path], note)
    if path in collections:
        res = collections[path]
        if m == "get":
            return RoleGuess("list", res) if many else RoleGuess("action", res, "GET on a collection returns no array")
        if m == "post":
            if many:
                return RoleGuess("action", res, "POST on a collection returns an array (bulk create?)")
            return RoleGuess("create", res)
        return RoleGuess("action", res, f"{m.upper()} on a whole collection")
    segs = segments(path)
    if len(segs) >= 2 and not param_of(segs[-1]):
        parent = join(segs[:-1])
        if parent in collections:
            res = collections[parent]
            if m == "get" and many:
                return RoleGuess("list", res, f"a filtered list ({segs[-1]})")
            return RoleGuess("action", res, f"'{segs[-1]}' under the {res} collection")
        if parent in items:
            return RoleGuess("action", items[parent], f"'{segs[-1]}' on one {items[parent]}")
    return RoleGuess("action", None, "the path is neither a collection nor an item")
