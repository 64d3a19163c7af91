"""What the mock does with a request that passed validation, by the operation's role in the
state model (:mod:`callbench.statemodel`).

* **create** stores a new object: the response entity synthesized from its schema (seeded by the
  server seed, the resource and the id), the request-body fields the entity declares on top, the
  id either taken from the body (a client-chosen id such as a user name; a duplicate is 409) or
  generated (integers count 1, 2, 3 per resource; strings are a hash of seed, resource and count).
* **read** returns the stored object, **list** the stored objects of the resource (only those
  created under the same nested collection; query parameters naming an entity field filter by
  equality), **update**/**replace** merge the body fields into it, **delete** removes it.
* every operation first checks its preconditions: each item its path names must exist (404).
* **action** (and any operation the model does not use) answers a response synthesized from its
  schema, seeded by the server seed and the request, and changes nothing.

Responses are the entity put where the response schema keeps it (``{"data": ...}``), the rest of
the body synthesized, so they conform to the declared schema.

**Seeded catalogue** (``seeded_catalog=True``; off by default, the nested tasks of read-only specs
turn it on, :mod:`callbench.tracks.nested.from_spec`): a read-only API (Spotify's) serves data it
never created. There every resource with an id field is a catalogue in which every id its path
accepts names an object: a read (or a precondition) of an id the store does not hold answers the
object synthesized from the seed, the resource and that id (its id field set to the id), so the
same id is the same object in every call; an update or replace stores the merged catalogue object
(a created object is stored as before and wins over the catalogue's); a list, like an action,
answers a response synthesized from its schema (and the request). Synthesized answers then keep every optional property (not half of them at random), so
a field a response declares is there (``readOnly`` ones included: RAWG's ids are): an album's
``artists[0].id`` is present, and the artist it names is one ``GET /artists/{id}`` answers.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from callbench.mock.store import Store
from callbench.mock.validate import RequestError, check_body, check_parameters, problem, query_pairs
from callbench.specs.openapi import ApiSpec, Operation
from callbench.specs.schema import object_properties, schema_type
from callbench.specs.synthesize import synthesize_value
from callbench.statemodel.entity import WRAPPERS, Entity, entity, success
from callbench.statemodel.overlay import OperationModel, Resource, StateModel
from callbench.statemodel.paths import param_of, segments


def _seed(*parts: Any) -> int:
    text = json.dumps(parts, sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _synth(schema: Any, seed: int, name: str | None = None, optional: float = 0.5) -> Any:
    if not isinstance(schema, Mapping) or not schema:
        return {}
    # optional=1.0 (a seeded catalogue): every declared field of a response, its readOnly ones too
    return synthesize_value(schema, seed=seed, name=name, optional=optional, read_only=optional >= 1.0)


def _set(body: Any, path: tuple[str, ...], value: Any) -> Any:
    if not path:
        return value
    if not isinstance(body, dict):
        body = {}
    node = body
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return body


class MockApp:
    """The routing-independent part of the mock: one per server instance."""

    def __init__(self, spec: ApiSpec, model: StateModel, seed: int = 0, *, seeded_catalog: bool = False):
        self.spec = spec
        self.model = model
        self.seed = seed
        self.store = Store()
        self._ops = {f"{o.method} {o.path}": o for o in model.operations}
        self._res = {r.name: r for r in model.resources}
        # the catalogue's resources (see the module docstring): none unless seeded_catalog
        self.catalog = frozenset(r.name for r in model.resources if r.id_field) if seeded_catalog else frozenset()
        self._optional = 1.0 if seeded_catalog else 0.5  # share of optional properties synthesized answers keep

    # -- routing -------------------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: str, headers: Any, raw: bytes
    ) -> tuple[int, Any, list[tuple[str, str]]]:
        if any(s in (".", "..") for s in path.split("/")):
            raise RequestError(400, "path segments '.' and '..' are not allowed")
        matches = self.spec.match_paths(path)
        if not matches:
            raise RequestError(404, f"no operation matches the path {path!r}")
        m = method.lower()
        lookup = "get" if m == "head" else m
        found = next(((pm, pm.operations[lookup]) for pm in matches if lookup in pm.operations), None)
        if found is None:
            allowed = sorted({k.upper() for pm in matches for k in pm.operations})
            raise _MethodNotAllowed(method, allowed)
        pm, op = found
        params = check_parameters(self.spec, op, pm.path_params, query_pairs(query), headers)
        body = check_body(op, headers.get("Content-Type") if headers is not None else None, raw)
        om = self._ops.get(f"{op.method.upper()} {op.path}")
        status, payload = self._apply(op, om, pm.path_params, params, body)
        return status, payload, []

    # -- semantics -----------------------------------------------------------------------
    def _apply(
        self, op: Operation, om: OperationModel | None, path_params: Mapping[str, str], params: dict, body: Any
    ) -> tuple[int, Any]:
        for pre in om.preconditions if om else ():
            key = path_params.get(pre.param)
            if key is None or (self.store.get(pre.exists, key) is None and pre.exists not in self.catalog):
                raise RequestError(404, f"no {pre.exists} {key!r}")
        res = self._res.get(om.resource or "") if om else None
        role = om.role if om and om.used and res is not None and res.id_field else "action"
        ent = entity(op)
        status = int(success(op)[0])
        item_param = _item_param(op.path)
        if role == "create":
            obj = self._create(op, res, ent, path_params, body)
            return status, self._wrap(op, ent, obj, res)
        if role in ("read", "update", "replace", "delete"):
            key = path_params.get(item_param or "")
            obj = self.store.get(res.name, key) if key is not None else None
            if obj is None and key is not None and res.name in self.catalog:
                obj = self._catalog_item(res, ent, key)
                if role in ("update", "replace"):
                    self.store.insert(res.name, key, _scope(op.path, path_params, res) or "{}", obj)
            if obj is None:
                raise RequestError(404, f"no {res.name} {key!r}")
            if role in ("update", "replace"):
                obj = self._merge(res, ent, obj, body)
                self.store.put(res.name, key, obj)
            elif role == "delete":  # the answer is what the schema declares, not the removed object
                self.store.delete(res.name, key)
                _, schema = success(op)
                if status == 204 or schema is None:
                    return status, None
                return status, _synth(schema, _seed(self.seed, op.method, op.path, "deleted"), optional=self._optional)
            return status, self._wrap(op, ent, obj, res)
        if role == "list" and res.name not in self.catalog:
            scope = _scope(op.path, path_params, res)
            objs = self.store.list(res.name, scope)
            fields = object_properties(ent.schema) if ent else {}
            for name, value in params.items():
                p = op.parameter("query", name)
                if p is not None and name in fields and not isinstance(value, list | dict):
                    objs = [o for o in objs if isinstance(o, dict) and o.get(name) == value]
            return status, self._wrap(op, ent, objs, res)
        # an action, or an operation the model does not use: a synthesized answer, no state change
        if status == 204:
            return status, None
        _, schema = success(op)
        if schema is None:
            return status, None
        return status, _synth(schema, _seed(self.seed, op.method, op.path, dict(path_params), params, body), optional=self._optional)

    def _catalog_item(self, res: Resource, ent: Entity | None, key: str) -> Any:
        """The catalogue's object ``key`` of ``res``: synthesized from the seed, the resource and the
        id (every optional property kept), its id field the id (a number where the id is one)."""
        schema = ent.schema if ent else {}
        obj = _synth(schema, _seed(self.seed, res.name, key, "catalog"), res.name, optional=1.0)
        if not isinstance(obj, dict):
            obj = {}
        field = res.id_field or "id"
        typed: Any = key
        fschema = object_properties(schema).get(field)
        if re.fullmatch(r"-?[0-9]{1,18}", key) and (res.id_type in ("integer", "number") or (isinstance(fschema, Mapping) and schema_type(fschema) & {"integer", "number"})):
            typed = int(key)
        obj[field] = typed
        return obj

    def _id_value(self, res: Resource, ent: Entity | None, body: Any) -> tuple[str, Any]:
        field = res.id_field or "id"
        if isinstance(body, dict) and len(body) == 1 and isinstance(next(iter(body.values())), dict) and next(iter(body)) in WRAPPERS:
            body = next(iter(body.values()))
        if isinstance(body, dict) and field in body and isinstance(body[field], str | int) and not isinstance(body[field], bool):
            return str(body[field]), body[field]
        n = self.store.next_number(res.name)
        fschema = object_properties(ent.schema).get(field, {}) if ent else {}
        if res.id_type in ("integer", "number"):
            return str(n), n
        if isinstance(fschema, Mapping) and fschema.get("format") == "uuid":
            value = str(uuid.UUID(int=_seed(self.seed, res.name, n) << 64 | n, version=4))
        elif isinstance(fschema, Mapping) and (schema_type(fschema) & {"integer"}):
            return str(n), n
        else:
            value = f"{_seed(self.seed, res.name, n):016x}"[:16]
            if isinstance(fschema, Mapping) and fschema and problem(value, fschema) is not None:
                value = self._fitting_id(res, fschema, n, value)
        return value, value

    def _fitting_id(self, res: Resource, fschema: Mapping[str, Any], n: int, fallback: str) -> str:
        """A string id the entity's id schema accepts (a pattern, a length) for the ``n``-th object,
        one no stored object has; ``fallback`` when none is found."""
        bare = {k: v for k, v in fschema.items() if k not in ("example", "examples", "x-example", "default")}  # one per object
        for attempt in range(8):
            v = _synth(bare, _seed(self.seed, res.name, n, "id", attempt), res.id_field)
            if isinstance(v, str) and v and problem(v, fschema) is None and self.store.get(res.name, v) is None:
                return v
        return fallback

    def _create(self, op: Operation, res: Resource, ent: Entity | None, path_params: Mapping[str, str], body: Any) -> Any:
        key, typed = self._id_value(res, ent, body)
        schema = ent.schema if ent else {}
        obj = _synth(schema, _seed(self.seed, res.name, key), res.name)
        if not isinstance(obj, dict):
            obj = {}
        obj = self._merge(res, ent, obj, body)
        props = object_properties(schema)
        for pname, value in path_params.items():  # the parent ids, where the entity has a field for them
            if pname in props and problem(value, props[pname]) is None:
                obj[pname] = value
        obj[res.id_field or "id"] = typed
        if not self.store.insert(res.name, key, _scope(op.path, path_params, res) or "{}", obj):
            raise RequestError(409, f"{res.name} {key!r} exists already")
        return obj

    def _merge(self, res: Resource, ent: Entity | None, obj: Any, body: Any) -> Any:
        """Body fields the entity declares (and whose values fit its schema) replace the stored ones."""
        if not isinstance(body, dict) or not isinstance(obj, dict):
            return obj
        out = copy.deepcopy(obj)
        props = object_properties(ent.schema) if ent else {}
        if len(body) == 1:  # a wrapped request body ({"data": {...}}) the entity does not declare
            (key, inner), = body.items()
            if key in WRAPPERS and key not in props and isinstance(inner, dict):
                body = inner
        for k, v in body.items():
            if k == res.id_field and k in out:
                continue
            if k in props and problem(v, props[k]) is None:
                out[k] = v
        return out

    def _conform(self, res: Resource, ent: Entity | None, obj: Any) -> Any:
        """A stored object as this operation's entity schema has it: the stored fields that fit
        the schema's properties over a synthesized base (an API's read and create schemas differ)."""
        if ent is None or not isinstance(obj, dict):
            return obj
        props = object_properties(ent.schema)
        if not props or problem(obj, ent.schema) is None:
            return obj
        field = res.id_field or "id"
        key = obj.get(field)
        base = _synth(ent.schema, _seed(self.seed, res.name, str(key), "view"), res.name)
        if not isinstance(base, dict):
            return obj
        for k, v in obj.items():
            if k in props and problem(v, props[k]) is None:
                base[k] = v
        if field in obj and (field in props or ent.schema.get("additionalProperties") is not False):
            # the object's own id, even where this schema leaves it out or types it otherwise: a
            # synthesized one would name no stored object (a later call gets 404), a missing one
            # leaves the client nothing to refer to the object by
            base[field] = obj[field]
        return base

    def _wrap(self, op: Operation, ent: Entity | None, value: Any, res: Resource | None = None) -> Any:
        if ent is None:
            return value
        if res is not None:
            value = [self._conform(res, ent, v) for v in value] if isinstance(value, list) else self._conform(res, ent, value)
        if not ent.path:
            return value
        _, schema = success(op)
        outer = _synth(schema, _seed(self.seed, op.method, op.path, "envelope"), optional=self._optional)
        return _set(outer if isinstance(outer, dict) else {}, ent.path, value)


class _MethodNotAllowed(RequestError):
    def __init__(self, method: str, allowed: list[str]):
        super().__init__(405, f"method {method} not allowed here; allowed: {', '.join(allowed)}")
        self.allowed = allowed


def _item_param(path: str) -> str | None:
    segs = segments(path)
    return param_of(segs[-1]) if segs else None


def _scope(path: str, path_params: Mapping[str, str], res: Resource) -> str | None:
    """The scope of the collection ``path`` sits in (None: every object of the resource)."""
    item = _item_param(path)
    names = [p for p in path_params if p != item]
    if not names:
        return None
    return json.dumps({k: path_params[k] for k in sorted(names)}, sort_keys=True)
