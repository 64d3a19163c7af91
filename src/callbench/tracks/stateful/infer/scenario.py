"""From spec + state model to the track's :class:`~callbench.tracks.stateful.scenario.Scenario`, so
the existing sampler, renderer and oracles can run on any spec.

The mapping, per part of the scenario model:

* **object types**: one per resource that a used operation returns; ``ref`` is
  ``{var}['<id_field>']``, so an object parameter renders as ``pet_1['id']``.
* **APIs**: one per *used* operation. Parameters: an object parameter per id source (the path
  parameter takes the id of a live object of that resource), a value parameter per other path
  parameter and required query parameter (drawn from its schema with ``synthesize_value``), and
  ``body`` for a JSON request body (required fields always, optional ones at random). Template:
  ``requests.<method>(f"{BASE_URL}<path>", params=..., json=$body).json()`` with the response's
  wrapper subscripts (``["data"]``); deletes return ``.status_code``.
* **returns**: create/read/update/replace -> ``object`` of the resource, list -> ``objects``,
  delete and action -> ``value``.
* **effects** on the abstract world: create adds an object (attributes: the body, and the parent
  objects of a nested collection), update/replace merge the body, delete kills the object, list
  returns the live objects (of the same parents for a nested list), read returns its target,
  actions change nothing.
* **target**: the item the path names (read, update, replace, delete, action on an item).
* **runtime**: ``requests`` programs against ``BASE_URL``, service ``"mock"``:
  :mod:`callbench.tracks.stateful.execution` starts a :class:`~callbench.mock.MockService` of
  :attr:`SpecScenario.spec` and :attr:`SpecScenario.model` per test case (seeded by the case's
  ``service_seed``) on a Unix socket the sandbox forwards.

The result is a :class:`SpecScenario`: a :class:`Scenario` that also holds the spec, the model and,
per API, the operation it calls (:class:`OpInfo`), which the nested tasks built from the same
traces (:mod:`callbench.tracks.nested.from_spec`) need.

Values are drawn with ``synthesize_value`` and checked against their schema (``jsonschema``, as
the mock checks requests); a value that does not fit is drawn again with another seed (up to
:data:`REDRAWS` times), so a synthesizer miss (a nested required property, a ``oneOf`` branch)
costs a redraw instead of a task whose reference gets a 422.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Any

from callbench.specs.openapi import ApiSpec, Operation
from callbench.specs.schema import object_properties
from callbench.specs.synthesize import synthesize_value
from callbench.tracks.stateful.infer.entity import entity, is_json, success
from callbench.tracks.stateful.infer.overlay import OperationModel, StateModel
from callbench.tracks.stateful.infer.paths import ident, param_of, path_params, segments
from callbench.tracks.stateful.scenario import (
    AbsObject,
    Api,
    Initial,
    ObjectType,
    Param,
    Runtime,
    Scenario,
    World,
)

REDRAWS = 8  # values drawn per parameter before one that fits its schema is given up on


def fitting_value(schema: Mapping[str, Any], rng: Random, name: str, optional: float = 0.0) -> Any:
    """A value synthesized for ``schema`` that validates against it (drawn again with another seed
    when it does not: ``synthesize_value`` misses some nested required properties and ``oneOf``
    branches); after :data:`REDRAWS` misses the last draw (the mock will answer 4xx and the
    reference be dropped)."""
    from callbench.mock.validate import problem

    value = None
    for _ in range(REDRAWS):
        value = synthesize_value(schema, seed=rng.randrange(1 << 31), name=name, optional=optional)
        if not isinstance(schema, Mapping) or not schema or problem(value, schema) is None:
            return value
    return value


def _value_domain(schema: Mapping[str, Any], name: str, optional: float = 0.0):
    def draw(rng: Random, world: World, objs: dict) -> Any:
        return fitting_value(schema, rng, name, optional)

    return draw


@dataclass(frozen=True)
class OpInfo:
    """The operation behind one API of a :class:`SpecScenario`.

    ``params``: API parameter -> (location ``path``/``query``/``body``, name in the spec);
    ``entity_path``: keys from the response body to the entity (``("data",)``); ``id_fields``:
    object parameter -> the id field of its resource (what the path takes from the object)."""

    api: str
    op: str  # "METHOD /path" as in the spec
    operation_id: str | None
    role: str
    resource: str | None
    params: dict[str, tuple[str, str]]
    entity_path: tuple[str, ...] = ()
    id_fields: dict[str, str] = field(default_factory=dict)
    summary: str = ""

    @property
    def method(self) -> str:
        return self.op.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.op.split(" ", 1)[1]


@dataclass(frozen=True)
class SpecScenario(Scenario):
    """A scenario built from an OpenAPI spec and its state model (service ``"mock"``)."""

    spec: Any = None  # ApiSpec
    model: Any = None  # StateModel
    ops: dict[str, OpInfo] = field(default_factory=dict)  # API name -> operation


def _json_body(op: Operation) -> Mapping[str, Any] | None:
    if op.request_body is None:
        return None
    for mt, schema in op.request_body.content.items():
        if is_json(mt):
            return schema
    return None


def _form_body(op: Operation) -> Mapping[str, Any] | None:
    """The schema of a form-encoded body (``application/x-www-form-urlencoded``), if the operation takes one."""
    if op.request_body is None:
        return None
    for mt, schema in op.request_body.content.items():
        if mt.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded" and isinstance(schema, Mapping):
            return schema
    return None


def _form_domain(schema: Mapping[str, Any]):
    """Form fields as text (``true``/``false``, numbers): the scalar properties of a value drawn for
    ``schema`` (a form carries no nested values)."""

    def draw(rng: Random, world: World, objs: dict) -> Any:
        value = fitting_value(schema, rng, "body", 0.3)
        if not isinstance(value, dict):
            return {}
        out = {}
        for k, v in value.items():
            if isinstance(v, bool):
                out[k] = "true" if v else "false"
            elif isinstance(v, (int, float, str)):
                out[k] = str(v) if not isinstance(v, str) else v
        return out

    return draw


def _effect(om: OperationModel, item: str | None, parents: list[str]):
    res = om.resource
    role = om.role

    def effect(world: World, args: dict, objs: dict) -> Any:
        body = args.get("body") if isinstance(args.get("body"), dict) else {}
        if role == "create":
            return world.create(res, **body, _parents={p: objs[p].oid for p in parents if p in objs})
        if role in ("update", "replace"):
            return world.update(objs[item], **body)
        if role == "read":
            return objs[item]
        if role == "list":
            want = {p: objs[p].oid for p in parents if p in objs}
            return [o for o in world.live(res) if not want or o.attrs.get("_parents") == want]
        if role == "delete":
            world.delete(objs[item])
            return 204
        return None

    return effect


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _not_first(world: World, objs: dict[str, AbsObject]) -> bool:
    """A read that takes no object (``GET /store/inventory``, a list) only once the program holds
    an object: a program of such reads alone changes nothing, its dead reads are pruned down to one
    call, and with no input it has no resampled test case (the energy sampler, which favours the
    pairs no kept task covers, would otherwise keep drawing exactly those programs)."""
    return any(o.expr is not None for o in world.live())


def _alive(world: World, objs: dict[str, AbsObject]) -> bool:
    return all(o.alive for o in objs.values())


def build_scenario(spec: ApiSpec, model: StateModel, *, name: str | None = None) -> SpecScenario:
    """A :class:`SpecScenario` with one API per used operation of ``model`` whose ids all have sources."""
    resources = {r.name: r for r in model.resources}
    apis: list[Api] = []
    infos: dict[str, OpInfo] = {}
    types: dict[str, ObjectType] = {}
    taken: set[str] = set()
    for om in model.operations:
        op = spec.operation(om.method.lower(), om.path)
        if op is None or not om.used:
            continue
        ids = {p: s for p, s in om.ids.items() if resources.get(s.resource) and resources[s.resource].id_field}
        path_ids = path_params(om.path)
        if any(p not in ids and p not in om.values for p in path_ids):
            continue
        params: list[Param] = []
        pnames: dict[str, str] = {}
        where: dict[str, tuple[str, str]] = {}
        for pname in path_ids:
            pid = ident(pname)
            while pid in pnames.values() or pid == "body":
                pid += "_p"
            pnames[pname] = pid
            where[pid] = ("path", pname)
            if pname in ids:
                params.append(Param(pid, object_type=ids[pname].resource))
            else:
                p = op.parameter("path", pname)
                params.append(Param(pid, domain=_value_domain(p.schema if p else {}, pname), describe=f"the {pname}"))
        query = [p for p in op.params_in("query") if p.required and p.name in om.values]
        qnames: dict[str, str] = {}
        for p in query:
            pid = ident(p.name)
            while pid in pnames.values() or pid in qnames.values() or pid == "body":
                pid += "_q"
            qnames[p.name] = pid
            where[pid] = ("query", p.name)
            params.append(Param(pid, domain=_value_domain(p.schema, p.name), describe=f"the {p.name}"))
        body = _json_body(op)
        form = _form_body(op) if body is None else None
        if body is not None:
            params.append(Param("body", domain=_value_domain(body, "body", 0.3), describe="the request body"))
            where["body"] = ("body", "body")
        elif form is not None:
            params.append(Param("body", domain=_form_domain(form), describe="the form fields"))
            where["body"] = ("form", "body")
        raw = om.path.split("#", 1)[0]  # a fragment label only tells operations apart in the spec
        path = re.sub(r"\{([^{}]+)\}", lambda m, names=pnames: "{$" + names[m.group(1)] + "}", raw)
        args = [f'f"{{BASE_URL}}{path}"']
        if query:
            args.append("params={" + ", ".join(f'"{p.name}": ${qnames[p.name]}' for p in query) + "}")
        if body is not None:
            args.append("json=$body")
        elif form is not None:
            args.append("data=$body")
        call = f"requests.{om.method.lower()}({', '.join(args)})"
        ent = entity(op)
        res = resources.get(om.resource or "")
        item = pnames.get(path_ids[-1]) if path_ids and param_of(segments(om.path)[-1]) else None
        parents = [pnames[p] for p in path_ids if p in ids and pnames[p] != item]
        # a list filtered by a query value on an entity field (findByStatus?status=...) returns the
        # objects whose stored field matches, which the abstract world cannot know (the mock
        # synthesizes the fields a body leaves out): its result is a plain value, never indexed
        filtered = om.role == "list" and ent is not None and any(p.name in object_properties(ent.schema) for p in query)
        # what the mock answers: no body for a 204, nor for an action whose success declares no JSON
        ok_status, ok_schema = success(op)
        no_entity_body = ok_status == "204"
        no_body = no_entity_body or ok_schema is None
        if om.role in ("create", "read", "update", "replace", "list") and not filtered and not no_entity_body and res is not None and res.id_field and ent is not None:
            returns = "objects" if om.role == "list" else "object"
            template = call + ".json()" + "".join(f'["{k}"]' for k in ent.path)
            rtype: str | None = res.name
            types.setdefault(res.name, ObjectType(res.name, f"a {res.name} ({res.id_field}: its id)", ref=f"{{var}}['{res.id_field}']", noun=res.name.replace("_", " ")))
        else:
            returns, rtype = "value", None
            template = call + (".status_code" if om.role == "delete" or no_body else ".json()")
        for s in ids.values():
            r = resources[s.resource]
            types.setdefault(r.name, ObjectType(r.name, f"a {r.name} ({r.id_field}: its id)", ref=f"{{var}}['{r.id_field}']", noun=r.name.replace("_", " ")))
        api_name = ident(om.id or f"{om.method.lower()}_{om.path}")
        while api_name in taken:
            api_name += "_"
        taken.add(api_name)
        target = item if item in {p.name for p in params if p.is_object} else None
        infos[api_name] = OpInfo(
            api_name,
            om.op,
            om.id,
            om.role,
            om.resource,
            where,
            tuple(ent.path) if ent is not None else (),
            {pnames[p]: resources[s.resource].id_field or "id" for p, s in ids.items()},
            (op.summary or "").strip(),
        )
        noun = (om.resource or "result").replace("_", " ")
        phrase = {
            "create": f"create {_a(noun)}",
            "read": f"fetch the {noun} {{{target}}}" if target else f"fetch {_a(noun)}",
            "list": f"list the {noun}s",
            "update": f"update the {noun} {{{target}}}" if target else f"update {_a(noun)}",
            "replace": f"replace the {noun} {{{target}}}" if target else f"replace {_a(noun)}",
            "delete": f"delete the {noun} {{{target}}}" if target else f"delete {_a(noun)}",
        }.get(om.role, (op.summary or f"call {om.op}").rstrip(".").replace("{", "(").replace("}", ")"))
        # every argument is named in the text: the parent items of a nested path, then the values
        for p in params:
            if p.is_object and p.name != target:
                phrase += f" (for the {(p.object_type or '').replace('_', ' ')} {{{p.name}}})"
        values = [p.name for p in params if not p.is_object]
        if values:
            phrase += " with " + ", ".join(f"{{{v}}}" for v in values)
        out = ident((om.resource or "result") + ("s" if returns == "objects" else "")) if om.role in ("create", "list") else ident(f"{om.role}_{om.resource or 'result'}")
        apis.append(
            Api(
                api_name,
                tuple(params),
                template,
                _effect(om, item, parents),
                returns,  # type: ignore[arg-type]
                out,
                phrase,
                target=target,
                returns_type=rtype,
                precondition=_alive if om.writes or any(p.is_object for p in params) else _not_first,
                writes=om.writes,
            )
        )
    lines = []
    for a in apis:  # what a program needs to call each operation: path, query, body, where the entity is
        info = infos[a.name]
        parts = [f"{info.role}{' ' + info.resource if info.resource else ''}"]
        query_names = [n for loc, n in info.params.values() if loc == "query"]
        if query_names:
            parts.append("query " + ", ".join(f"`{n}`" for n in query_names))
        if "body" in info.params:
            parts.append("JSON body")
        if a.returns in ("object", "objects"):
            where = "".join(f'["{k}"]' for k in info.entity_path)
            what = "a list of " + (info.resource or "item") + "s" if a.returns == "objects" else "the " + (info.resource or "item")
            rid = resources[a.returns_type].id_field if a.returns_type in resources else None
            parts.append(f"returns {what}" + (f" at `.json(){where}`" if where else "") + (f" (id field `{rid}`)" if rid else ""))
        elif a.template.endswith(".status_code"):
            parts.append("answers without a body (programs keep `.status_code`)")
        lines.append(f"- `{info.op.split('#', 1)[0]}`: " + "; ".join(parts))
    doc = "\n".join(lines)

    def initial(rng: Random) -> Initial:
        return Initial(World(), {}, service_seed=rng.randrange(1 << 31))

    return SpecScenario(
        name=ident(name or model.title or "openapi").lower(),
        description=f"{model.title}: a stateful mock of the spec {model.spec}; programs use requests.",
        object_types=tuple(types.values()),
        apis=tuple(apis),
        runtime=Runtime(
            setup="import requests\n",
            finalize=None,
            call_roots=("requests",),
            doc="`requests` is imported and `BASE_URL` is preloaded.\n\n" + doc,
            service="mock",
            requires=(("requests", "stateful"),),
        ),
        initial=initial,
        spec=spec,
        model=model,
        ops=infos,
    )
