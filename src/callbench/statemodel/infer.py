"""``infer_model(spec)``: the whole state model from a spec, as :class:`overlay.StateModel`.

Steps: resources from paths (:mod:`.paths`), roles (:mod:`.roles`), id fields and sources
(:mod:`.ids`), then per operation its preconditions (every item its path names must exist), its
required body fields, its effect and whether generated programs can use it (and why not).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from callbench.specs.openapi import ApiSpec, Operation
from callbench.statemodel.entity import entity, is_json
from callbench.statemodel.ids import (
    entity_props,
    link_sources,
    pick_id_field,
    scalar_type,
    types_agree,
)
from callbench.statemodel.overlay import (
    IdSource,
    OperationModel,
    Precondition,
    Resource,
    StateModel,
)
from callbench.statemodel.paths import join, norm, param_of, path_params, segments, shapes
from callbench.statemodel.roles import classify

_EFFECT = {"create": "create", "update": "update", "replace": "replace", "delete": "delete", "read": "none", "list": "none"}
_READ_METHODS = ("get", "head", "options", "trace")


def op_key(op: Operation) -> str:
    return f"{op.method.upper()} {op.path}"


def _param_schema(op: Operation, name: str) -> Mapping[str, Any]:
    p = op.parameter("path", name)
    return p.schema if p is not None else {}


def _body_note(op: Operation) -> str | None:
    """Why the request body rules the operation out, or None."""
    if op.request_body is None or not op.request_body.content:
        return None
    media = list(op.request_body.content)
    if any(is_json(m) or m.split(";")[0].strip().lower() == "application/x-www-form-urlencoded" for m in media):
        return None
    return f"request body is only {', '.join(media)} (programs and the mock send JSON or form data)"


def infer_model(
    spec: ApiSpec, *, spec_label: str | None = None, resources: list[Resource] | None = None
) -> StateModel:
    """The state model of ``spec``. ``resources``: a user's resource entries (from a model file);
    they replace the inferred ones with the same name, their paths steer the roles, and their
    ``id_field`` is trusted even where the responses declare no schema."""
    ops = spec.operations
    user = {r.name: r for r in resources or []}
    found = shapes(list(dict.fromkeys(norm(p) for p in spec.paths)))
    items = {p: r.name for r in found.values() for p in r.items}
    collections = {p: r.name for r in found.values() for p in r.collections}
    for r in user.values():
        items.update({norm(p): r.name for p in r.items})
        collections.update({norm(p): r.name for p in r.collections})
    guesses = {op_key(op): classify(op, items, collections) for op in ops}

    # id fields: the item parameter's name among the fields the resource's entities share
    props_of: dict[str, dict[str, Any]] = {}
    for op in ops:
        g = guesses[op_key(op)]
        if g.resource and g.role in ("create", "read", "list", "update", "replace"):
            ent = entity(op)
            props = props_of.setdefault(g.resource, {})
            if ent is not None:
                for k, v in entity_props(ent.schema).items():
                    props.setdefault(k, v)
    out_resources: list[Resource] = []
    for shape in found.values():
        if shape.name in user:
            continue
        props = props_of.get(shape.name, {})
        params = [segments(p)[-1][1:-1] for p in shape.items]
        field = pick_id_field(params, shape.name, props)
        pschema = _param_schema_any(ops, shape.items)
        id_type = scalar_type(props[field]) if field and field in props else scalar_type(pschema)
        parent = None
        for item in shape.items:
            for i, s in enumerate(segments(item)[:-1]):
                if param_of(s) and join(segments(item)[: i + 1]) in items:
                    parent = items[join(segments(item)[: i + 1])]
        out_resources.append(
            Resource(name=shape.name, collections=shape.collections, items=shape.items, id_field=field, id_type=id_type, parent=parent)
        )
    out_resources += list(user.values())
    by_name = {r.name: r for r in out_resources}

    # operations that hand out a resource's ids: its create and list operations returning the field
    # (or, for a resource the user described, any create or list without a response schema)
    producers: dict[str, list[str]] = {}
    for op in ops:
        g = guesses[op_key(op)]
        res = by_name.get(g.resource or "")
        if res is None or g.role not in ("create", "list") or res.id_field is None:
            continue
        ent = entity(op)
        if (ent is not None and res.id_field in entity_props(ent.schema)) or (ent is None and res.name in user):
            producers.setdefault(res.name, []).append(op.operation_id or op_key(op))
    links = link_sources(ops)

    out_ops: list[OperationModel] = []
    for op in ops:
        g = guesses[op_key(op)]
        ids: dict[str, IdSource] = {}
        values: list[str] = []
        pre: list[Precondition] = []
        problems: list[str] = []
        segs = segments(op.path)
        for i, s in enumerate(segs):
            pname = param_of(s)
            if pname is None:
                values += [p for p in path_params(s) if p not in values]  # inside a segment: {sha}.{diffType}
                continue
            prefix = join(segs[: i + 1])
            rname = items.get(prefix)
            if rname is None:
                values.append(pname)
                continue
            res = by_name[rname]
            link = links.get((op.operation_id or "", pname))
            pschema = _param_schema(op, pname)
            if link is not None:
                src_op, field = link
                ids[pname] = IdSource(resource=rname, field=field, by="link", from_=[src_op.operation_id or op_key(src_op)])
            elif res.id_field and producers.get(rname):
                agree = types_agree(props_of.get(rname, {}).get(res.id_field), pschema)
                ids[pname] = IdSource(
                    resource=rname, field=res.id_field, by="name+schema" if agree else "name", from_=producers[rname]
                )
            else:
                if res.id_field:
                    why = f"no create or list operation returns '{res.id_field}'"
                elif not props_of.get(rname):
                    why = "its create, read and list responses declare no JSON schema, so no id field is visible"
                else:
                    why = "no id-like field among its response fields"
                problems.append(f"path parameter '{pname}' names a {rname}, but {why}")
            if not (g.role == "create" and rname == g.resource):
                pre.append(Precondition(exists=rname, param=pname))
        values += [
            p.name
            for p in op.parameters
            if p.location in ("query", "header")
            and p.required
            and not spec.is_credential(p.location, p.name)
            and not (p.location == "header" and p.name.lower() in ("accept", "content-type", "authorization"))
        ]
        required_body = sorted(spec.required_arguments(op)["body"])
        reason = g.note
        used = True
        if op.deprecated:
            used, reason = False, "deprecated"
        elif (note := _body_note(op)) is not None:
            used, reason = False, note
        elif problems:
            used, reason = False, "; ".join(problems)
        effect = _EFFECT.get(g.role) or ("none" if op.method.lower() in _READ_METHODS else "unknown")
        out_ops.append(
            OperationModel(
                op=op_key(op),
                id=op.operation_id,
                role=g.role,  # type: ignore[arg-type]
                resource=g.resource,
                used=used,
                reason=reason,
                ids=ids,
                values=values,
                required_body=required_body,
                preconditions=pre,
                effect=effect,  # type: ignore[arg-type]
                writes=op.method.lower() not in _READ_METHODS,
            )
        )
    label = spec_label or Path(spec.source).name
    return StateModel(spec=label, title=spec.title, resources=out_resources, operations=out_ops)


def _param_schema_any(ops: tuple[Operation, ...], item_paths: list[str]) -> Mapping[str, Any]:
    for op in ops:
        if norm(op.path) in item_paths:
            name = segments(op.path)[-1][1:-1]
            p = op.parameter("path", name)
            if p is not None:
                return p.schema
    return {}
