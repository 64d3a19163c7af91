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

Values are drawn with ``synthesize_value`` and checked with the mock's own code as the program
sends them (:func:`callbench.mock.validate.sent_path_problem`, ``sent_query_problem``,
``sent_body_problem``: booleans in a path or query as ``true``/``false``, form fields as text, an
array as repeated fields, an object as JSON text); a value the mock would refuse is drawn again
(up to :data:`REDRAWS` times, from each top-level ``oneOf``/``anyOf`` branch in turn, the later
draws with more optional fields and without the spec's examples), so a synthesizer miss costs a
redraw instead of a task whose reference gets a 4xx. A create body never chooses the id of a live
object of its resource (409); a resampled test input is drawn without the examples (else most
inputs have no second value); an object bound to a path parameter has an id the parameter accepts
(one resource can be named by a count in one path and a 36-character id in another); a list under
a path value holds the objects created under that value, as in the mock. An operation for which no
draw is accepted (a ``oneOf`` whose branches accept the same bodies) is left out
(:attr:`SpecScenario.unfit`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Any

from callbench.mock.validate import sent_body_problem, sent_path_problem, sent_query_problem
from callbench.specs.openapi import ApiSpec, Operation
from callbench.specs.schema import object_properties
from callbench.specs.synthesize import synthesize_value
from callbench.statemodel.entity import WRAPPERS, entity, is_json, success
from callbench.statemodel.overlay import OperationModel, StateModel
from callbench.statemodel.paths import ident, param_of, path_params, segments
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

REDRAWS = 16  # values drawn per parameter before one the mock accepts is given up on


def fitting_value(
    schema: Mapping[str, Any],
    rng: Random,
    name: str,
    optional: float = 0.0,
    *,
    sent: Callable[[Any], Any] | None = None,
    check: Callable[[Any], str | None] | None = None,
    examples: bool = True,
) -> Any:
    """A value synthesized for ``schema`` that the mock accepts, drawn again with another seed
    when it does not (``synthesize_value`` misses some nested required properties and ``oneOf``
    branches). ``sent`` turns a drawn value into what the program sends (form fields as text);
    ``check`` is the mock's own verdict on the value as sent (default: the schema's, with
    ``jsonschema`` as the mock checks a JSON body). The second half of the draws takes optional
    properties more often (a required body whose fields are all optional cannot be empty on the
    wire) and leaves the spec's examples out (a create whose example id a live object has). ``examples=False``: never the spec's documented examples (another test input than the
    first, which is often the example). After :data:`REDRAWS` misses the last draw (the mock will answer 4xx and the
    reference be dropped)."""
    from callbench.mock.validate import problem

    if check is None:

        def check(v: Any) -> str | None:
            return problem(v, schema) if isinstance(schema, Mapping) and schema else None

    value = None
    shapes = _shapes(schema)
    for i in range(REDRAWS):
        late = i >= REDRAWS // 2
        opt = max(optional, 0.9) if late else optional
        shape = shapes[i % len(shapes)]
        value = synthesize_value(shape, seed=rng.randrange(1 << 31), name=name, optional=opt, examples=examples and not late)
        if sent is not None:
            value = sent(value)
        if check(value) is None:
            return value
    return value


def _shapes(schema: Any) -> list[Any]:
    """What to draw from, in turn: the schema, then each branch of its top-level ``oneOf``/``anyOf``
    with the rest of the schema (``synthesize_value`` always takes the first branch, so redraws
    alone never reach the others)."""
    if not isinstance(schema, Mapping):
        return [schema]
    out: list[Any] = [schema]
    for kw in ("oneOf", "anyOf"):
        branches = schema.get(kw)
        if not isinstance(branches, tuple | list) or len(branches) < 2:
            continue
        rest = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
        for b in branches:
            if isinstance(b, Mapping) and b:
                out.append({"allOf": [rest, b]} if rest else b)
    return out


def wire_value(value: Any) -> Any:
    """A value as a program writes it into a path or ``params=``: JSON booleans as ``true``/``false``
    (``requests`` and f-strings would write ``True``, which the mock reads as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [wire_value(v) for v in value]
    return value


def _form_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))  # an object: OpenAPI's default encoding of it in a form


def _form_fields(value: Any) -> dict[str, Any]:
    """A drawn body as form fields (``requests``' ``data=``): scalars as text, an array as a list
    (its key repeated on the wire), objects as JSON text; None left out."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in value.items():
        if v is None:
            continue
        out[k] = [_form_text(x) for x in v if x is not None] if isinstance(v, list) else _form_text(v)
    return out


class _Domain:
    """Draws a parameter's value with :func:`fitting_value`; ``fresh(value, world)``: why ``value``
    cannot be used in ``world`` (a client-chosen id a live object has already), or None."""

    def __init__(self, schema: Mapping[str, Any], name: str, optional: float = 0.0, *, sent=None, check=None, fresh=None):
        self.schema, self.name, self.optional = schema, name, optional
        self.sent, self.check, self.fresh = sent, check, fresh

    def _check(self, world: World | None):
        if self.fresh is None or world is None:
            return self.check

        def ok(v: Any) -> str | None:
            return self.fresh(v, world) or (self.check(v) if self.check is not None else None)

        return ok

    def __call__(self, rng: Random, world: World, objs: dict) -> Any:
        return fitting_value(self.schema, rng, self.name, self.optional, sent=self.sent, check=self._check(world))

    def perturb(self, rng: Random, value: Any) -> Any:
        """Another value for a resampled test case: drawn without the spec's examples (with them,
        most schemas give the same value every time and a task gets no second input set)."""
        return fitting_value(self.schema, rng, self.name, self.optional, sent=self.sent, check=self.check, examples=False)

    def feasible(self, rng: Random, rounds: int = 2) -> bool:
        """Whether some draw (``rounds`` times :data:`REDRAWS` of them) is a value the mock accepts."""
        from callbench.mock.validate import problem

        check = self.check or (lambda v: problem(v, self.schema) if isinstance(self.schema, Mapping) and self.schema else None)
        for _ in range(rounds):
            if check(fitting_value(self.schema, rng, self.name, self.optional, sent=self.sent, check=check)) is None:
                return True
        return False


_value_domain = _Domain


def _client_id(body: Any, field: str) -> Any:
    """The id a create body chooses itself, as the mock reads it (None: the mock makes one)."""
    if isinstance(body, dict) and len(body) == 1 and isinstance(next(iter(body.values())), dict) and next(iter(body)) in WRAPPERS:
        body = next(iter(body.values()))
    if isinstance(body, dict) and isinstance(body.get(field), str | int) and not isinstance(body.get(field), bool):
        return str(body[field])
    return None


_PRIVATE = ("_parents", "_by")  # what the abstract world keeps beside an object's body fields


def _body_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if k not in _PRIVATE}


class _MadeIds:
    """The first id the mock makes for an object created by each create operation (its kind:
    a count, a UUID, a hash, one fitting the entity's id schema), built once."""

    def __init__(self, spec: ApiSpec, model: StateModel):
        self.spec, self.model = spec, model
        self._app: Any = None
        self._ids: dict[str, Any] = {}

    def get(self, op_key: str) -> Any:
        if op_key not in self._ids:
            from callbench.mock.app import MockApp

            if self._app is None:
                self._app = MockApp(self.spec, self.model)
            om = next((o for o in self.model.operations if o.op == op_key), None)
            res = next((r for r in self.model.resources if om is not None and r.name == om.resource), None)
            op = self.spec.operation(om.method.lower(), om.path) if om is not None else None
            value = None
            if res is not None and op is not None:
                try:
                    value = self._app._id_value(res, entity(op), None)[1]
                except Exception:  # noqa: BLE001 - a kind we cannot tell: no filtering
                    value = None
            self._ids[op_key] = value
        return self._ids[op_key]


def _id_fits(p: Any, resource: str, field: str | None, made: _MadeIds):
    """``where`` of an object parameter in the path: the object's id (chosen by its create body, or
    of the kind the mock makes for its create operation) must be a value the parameter accepts
    (an API can name one resource by a count in one path and by a 36-character id in another)."""
    cache: dict[str, bool] = {}

    def where(o: AbsObject, world: World, objs: dict) -> bool:
        cid = _client_id(_body_attrs(o.attrs), field or "id")
        if cid is None:
            by = o.attrs.get("_by")
            cid = made.get(by) if isinstance(by, str) else None
            if cid is None:
                return True
            cid = str(cid)
        if cid not in cache:
            cache[cid] = sent_path_problem(p, cid) is None
        return cache[cid]

    return where


def _fresh_id(resource: str, field: str):
    """A create body must not choose the id of a live object of its resource (the mock answers 409)."""

    def fresh(body: Any, world: World) -> str | None:
        cid = _client_id(body, field)
        if cid is None:
            return None
        taken = {_client_id(_body_attrs(o.attrs), field) for o in world.live(resource)}
        return f"{resource} {cid!r} exists already" if cid in taken else None

    return fresh


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
    unfit: tuple[str, ...] = ()  # used operations left out: no value drawn for them is one the mock accepts


def json_body_schema(op: Operation) -> Mapping[str, Any] | None:
    if op.request_body is None:
        return None
    for mt, schema in op.request_body.content.items():
        if is_json(mt):
            return schema
    return None


def form_body_schema(op: Operation) -> Mapping[str, Any] | None:
    """The schema of a form-encoded body (``application/x-www-form-urlencoded``), if the operation takes one."""
    if op.request_body is None:
        return None
    for mt, schema in op.request_body.content.items():
        if mt.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded" and isinstance(schema, Mapping):
            return schema
    return None


def _effect(om: OperationModel, item: str | None, parents: list[str], scoped: tuple[str, ...] = ()):
    """``scoped``: the value parameters in the path (not the item's): the mock keeps a created
    object in the collection those values name and lists only that collection's objects, so the
    abstract world does the same."""
    res = om.resource
    role = om.role

    def scope(args: dict, objs: dict) -> dict[str, Any]:
        out: dict[str, Any] = {p: objs[p].oid for p in parents if p in objs}
        out.update({p: ("value", str(wire_value(args[p]))) for p in scoped if p in args})
        return out

    def effect(world: World, args: dict, objs: dict) -> Any:
        body = args.get("body") if isinstance(args.get("body"), dict) else {}
        if role == "create":
            return world.create(res, **body, _parents=scope(args, objs), _by=om.op)
        if role in ("update", "replace"):
            return world.update(objs[item], **body)
        if role == "read":
            return objs[item]
        if role == "list":
            want = scope(args, objs)
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


def _call_path(raw: str) -> str:
    """The URL a call writes for the spec's path key ``raw``. A key may carry a query
    (``/alerts?lat={lat}&lon={lon}``, weatherbit's): its fixed pairs stay in the URL (they tell
    the operation apart), its templated pairs are query parameters the call sends in ``params``
    (when the operation asks for them), so the URL leaves them out."""
    base, sep, query = raw.partition("?")
    if not sep:
        return raw
    fixed = [pair for pair in query.split("&") if pair and not re.search(r"\{[^{}]*\}", pair)]
    return base + ("?" + "&".join(fixed) if fixed else "")


def build_scenario(spec: ApiSpec, model: StateModel, *, name: str | None = None) -> SpecScenario:
    """A :class:`SpecScenario` with one API per used operation of ``model`` whose ids all have sources."""
    resources = {r.name: r for r in model.resources}
    apis: list[Api] = []
    infos: dict[str, OpInfo] = {}
    types: dict[str, ObjectType] = {}
    taken: set[str] = set()
    unfit: list[str] = []
    made_ids = _MadeIds(spec, model)
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
                r = resources[ids[pname].resource]
                p = op.parameter("path", pname)
                where_fits = _id_fits(p, r.name, r.id_field, made_ids) if p is not None and p.schema else None
                params.append(Param(pid, object_type=r.name, where=where_fits))
            else:
                p = op.parameter("path", pname)
                check = (lambda v, p=p: sent_path_problem(p, v)) if p is not None else None
                dom = _value_domain(p.schema if p else {}, pname, sent=wire_value, check=check)
                params.append(Param(pid, domain=dom, perturb=dom.perturb, describe=f"the {pname}"))
        query = [p for p in op.params_in("query") if p.required and p.name in om.values]
        qnames: dict[str, str] = {}
        for p in query:
            pid = ident(p.name)
            while pid in pnames.values() or pid in qnames.values() or pid == "body":
                pid += "_q"
            qnames[p.name] = pid
            where[pid] = ("query", p.name)
            dom = _value_domain(p.schema, p.name, sent=wire_value, check=lambda v, p=p: sent_query_problem(p, v))
            params.append(Param(pid, domain=dom, perturb=dom.perturb, describe=f"the {p.name}"))
        body = json_body_schema(op)
        form = form_body_schema(op) if body is None else None
        res_m = resources.get(om.resource or "")
        # a create whose body may choose the id: not one a live object has (409)
        fresh = _fresh_id(res_m.name, res_m.id_field) if om.role == "create" and res_m is not None and res_m.id_field else None
        if body is not None:
            check = lambda v, op=op: sent_body_problem(op, v)  # noqa: E731
            dom = _value_domain(body, "body", 0.3, check=check, fresh=fresh)
            params.append(Param("body", domain=dom, perturb=dom.perturb, describe="the request body"))
            where["body"] = ("body", "body")
        elif form is not None:
            check = lambda v, op=op: sent_body_problem(op, v, form=True)  # noqa: E731
            dom = _value_domain(form, "body", 0.3, sent=_form_fields, check=check, fresh=fresh)
            params.append(Param("body", domain=dom, perturb=dom.perturb, describe="the form fields"))
            where["body"] = ("form", "body")
        probe = Random(f"feasible:{om.op}")
        if any(isinstance(p.domain, _Domain) and not p.domain.feasible(probe) for p in params):
            # no draw is a value the mock accepts (a oneOf whose branches all accept the same
            # bodies, a pattern no string is found for): every reference calling it would be dropped
            unfit.append(om.op)
            continue
        raw = _call_path(om.path.split("#", 1)[0])  # a fragment label only tells operations apart in the spec
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
                _effect(om, item, parents, tuple(pnames[p] for p in path_ids if p not in ids and pnames[p] != item)),
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
        runtime=Runtime.http("mock", doc),
        initial=initial,
        spec=spec,
        model=model,
        ops=infos,
        unfit=tuple(unfit),
    )
