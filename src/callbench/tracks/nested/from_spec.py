"""Nested call-sequence tasks generated from an OpenAPI spec, executed against its stateful mock.

The traces are the stateful track's (issue 16, part 3): the same scenario built from the spec and
its state model (:func:`~callbench.tracks.stateful.spec_scenario.build_scenario`), sampled by the
same trace sampler (energy or random) without control flow, so every trace is a straight call
sequence. Each call becomes one NESTFUL v2 call; an object a call takes (``pet_1['id']`` in the
stateful program) becomes a reference to the call that returned it (``"$var_1.id$"``, or
``"$var_2.0.id$"`` for the first item of a list), every other value a literal.

**Name links** (:func:`name_links`): where no API takes an object (RPC-style paths such as
Slack's, which path-based inference cannot link), a call's argument takes a field of an earlier
call's JSON response that matches it by name and schema (``"channel": "$var_1.channel.id$"``;
:mod:`callbench.statemodel.name_links`); every other spec's rows are unchanged.

**Field links** (:func:`field_links`, read-only specs such as Spotify's, issue 29): nothing is
created, so the stateful traces never read an object. There traces follow :func:`link_graph`:
every scalar field of a response, inside arrays and nested objects (:func:`deep_fields`), may feed
a later path, query or body parameter, by the spec's OpenAPI ``links``, by name, by resource or by
schema (:func:`field_link`); the reference addresses the field (``"$var_1.artists.0.id$"``: dict
keys and list indices separated by dots, as :func:`~callbench.tracks.nested.references.lookup`
walks them). The mock serves those rows from a seeded catalogue (``seeded_catalog``,
:mod:`callbench.mock.app`), so the album's ``artists[0].id`` is an artist the next call fetches.

**Tools** (:func:`spec_tools`): one per API of the scenario, named as the scenario names it (the
operationId made an identifier). Arguments: the path parameters and required query parameters
under their names in the spec, and the JSON body, its top-level properties as arguments when the
body is an object whose property names clash with no parameter (else one ``body`` argument).
A call's output is what the stateful program keeps: the entity the response is about (the body
without its wrapper, e.g. ``{"data": ...}``), the JSON body for actions, ``{"status_code": N}`` for
deletes and bodiless answers. ``output_parameters`` lists the entity's top-level fields (and,
for lists, ``0.<field>`` ... ``9.<field>``), the keys the reference-aware grammar lets a
reference name.

**Execution** (:class:`SpecExecutor`): a fresh :class:`~callbench.mock.MockService` per sequence,
seeded by the task's seed, on loopback; each call's references are resolved, the arguments mapped
back to path, query and body, and the request sent over HTTP. A 4xx/5xx answer is a failed call
(``HTTP 404: no pet '7'``). The gold answer is the last call's output (as the MathQA tasks),
recorded by running the gold sequence; a sequence with a failing call is dropped.

**Files**: ``X.jsonl`` and, beside it, ``X.openapi/`` with the spec, the state model and
``source.json`` (:mod:`callbench.tracks.stateful.spec_bench`); each row names that folder
(``"openapi": {"folder": "X.openapi", "seed": N}``), so the file and its folder are a
self-contained benchmark.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.specs.schema import object_properties, schema_type
from callbench.tools import ToolSpec
from callbench.tracks.nested.executor import CallError, CallOutcome, SequenceResult, run_calls
from callbench.tracks.nested.references import (
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    ReferenceResolutionError,
    ValueTooLargeError,
    json_size,
    resolve,
)
from callbench.tracks.nested.schema import NestedTask, ToolCall
from callbench.tracks.stateful.program import Call
from callbench.tracks.stateful.sampling import sample_program
from callbench.tracks.stateful.spec_scenario import OpInfo, SpecScenario

LIST_REFS = 10  # list outputs: items 0..LIST_REFS-1 can be referenced
_JSON_TYPES = {"integer", "number", "string", "boolean", "array", "object", "null"}


# -- tools -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolShape:
    """How one tool's arguments map onto its operation: argument -> (location, name in the spec);
    ``flat_body``: the body's properties are arguments (else one ``body`` argument)."""

    info: OpInfo
    args: dict[str, tuple[str, str]]
    flat_body: bool
    spec: dict[str, Any]  # the ToolSpec as a row stores it
    form: bool = False  # the body is sent form-encoded
    # name links (specs whose paths show none, see :func:`name_links`): the response fields a later
    # call may take an argument from (reference key -> schema; the output is the whole JSON body)
    links: Mapping[str, Any] = field(default_factory=dict)
    arg_schemas: Mapping[str, Any] = field(default_factory=dict)  # argument -> its schema in the spec
    # field links only: required header parameters (an API key, a version: dodo.ac's X-API-KEY),
    # which are the harness's to send, not the model's (see :func:`_required_headers`)
    headers: tuple[tuple[str, str], ...] = ()


def _param_doc(schema: Any, description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    t = schema.get("type") if isinstance(schema, Mapping) else None
    nullable = isinstance(schema, Mapping) and schema.get("nullable") is True
    # a type the grammar can check (param_kinds); a nullable or multi-typed one takes any value
    if isinstance(t, str) and t in _JSON_TYPES and not nullable:
        out["type"] = t
    elif isinstance(t, (list, tuple)) and all(isinstance(x, str) and x in _JSON_TYPES for x in t):
        out["type"] = list(t)
    enum = schema.get("enum") if isinstance(schema, Mapping) else None
    if isinstance(enum, (list, tuple)) and len(enum) <= 20 and all(isinstance(x, (str, int, float, bool)) for x in enum):
        out["enum"] = list(enum)
    desc = description or (schema.get("description") if isinstance(schema, Mapping) else "") or ""
    if desc:
        out["description"] = " ".join(str(desc).split())[:200]
    return out


def _body_schema(sc: SpecScenario, info: OpInfo) -> Any:
    op = sc.spec.operation(info.method.lower(), info.path)
    from callbench.tracks.stateful.spec_scenario import form_body_schema, json_body_schema

    if op is None:
        return None
    return json_body_schema(op) if info.params.get("body", ("", ""))[0] == "body" else form_body_schema(op)


def _entity_schema(sc: SpecScenario, info: OpInfo) -> Any:
    from callbench.statemodel.entity import entity

    op = sc.spec.operation(info.method.lower(), info.path)
    ent = entity(op) if op is not None else None
    return ent.schema if ent is not None else None


def name_links(sc: SpecScenario) -> bool:
    """Whether ``sc``'s calls are linked by name and schema (:mod:`~callbench.statemodel.name_links`):
    only where path-based inference links nothing (no API takes an object, e.g. Slack's RPC paths),
    so the rows of every spec with path links stay exactly as they were."""
    return not any(p.is_object for api in sc.apis for p in api.params)


def field_links(sc: SpecScenario) -> bool:
    """Whether ``sc``'s calls are linked by response fields (:func:`field_link`): a read-only spec,
    one in which most APIs that take an object take one of a resource no API creates (Spotify's
    albums, artists, shows: only tracks are "created", added to a playlist). There the stateful
    traces, which read only objects they created, carry almost no reference. A spec in which no
    API takes an object (ids are plain path values: BBC's, Stack Exchange's) uses field links
    where at least two thirds of its APIs are GETs, and name links otherwise (Slack's RPC methods,
    43 % GETs); a CRUD spec (most object-taking APIs on created resources) keeps its path links."""
    if name_links(sc):
        return 3 * sum(sc.ops[a.name].op.startswith("GET ") for a in sc.apis) >= 2 * len(sc.apis) > 0
    created = {sc.ops[a.name].resource for a in sc.apis if sc.ops[a.name].role == "create"}
    takes = [p.object_type for a in sc.apis for p in a.params if p.is_object]
    return sum(t not in created for t in takes) > len(takes) / 2


_WIDENED: dict[int, tuple[SpecScenario, SpecScenario]] = {}  # id(scenario) -> (scenario, widened)
_UNSOURCED = "path parameter '"  # how inference's reasons for a GET left out for want of an id source begin


def readonly_scenario(sc: SpecScenario) -> SpecScenario:
    """``sc`` itself, or for a :func:`field_links` spec the scenario with the GET operations that
    inference left unused for want of a source of their path's id ("path parameter 'id' names a
    track, but no create or list operation returns 'id'"; BBC's "... but no id-like field among its
    response fields", where the id is a ``pid``): there the id is a value (drawn, or taken from a
    field of an earlier response), the mock's seeded catalogue answers it. The same model gives the same scenario (generation and
    :func:`task_scenario` both call this), so the model file is not changed."""
    hit = _WIDENED.get(id(sc))
    if hit is not None and hit[0] is sc:
        return hit[1]
    out = sc
    if field_links(sc):
        from callbench.statemodel.paths import path_params
        from callbench.tracks.stateful.spec_scenario import build_scenario

        ops = []
        for om in sc.model.operations:
            if not om.used and om.op.startswith("GET ") and om.reason.startswith(_UNSOURCED):
                params = path_params(om.op.split(" ", 1)[1])
                om = om.model_copy(update={"used": True, "ids": {}, "preconditions": [],
                                           "values": [*om.values, *[x for x in params if x not in om.values]]})
            ops.append(om)
        if ops != list(sc.model.operations):
            model = sc.model.model_copy(update={"operations": ops})
            out = build_scenario(sc.spec, model, name=sc.name)
    with _LOCK:
        _WIDENED[id(sc)] = (sc, out)
        _WIDENED.setdefault(id(out), (out, out))
    return out


def tool_shapes(sc: SpecScenario) -> dict[str, ToolShape]:
    """One :class:`ToolShape` per API of ``sc`` (catalog order = the scenario's API order)."""
    from callbench.statemodel.name_links import response_fields

    by_name = name_links(sc)
    by_fields = field_links(sc)
    out: dict[str, ToolShape] = {}
    for api in sc.apis:
        info = sc.ops[api.name]
        op = sc.spec.operation(info.method.lower(), info.path)
        props: dict[str, Any] = {}
        required: list[str] = []
        args: dict[str, tuple[str, str]] = {}
        schemas: dict[str, Any] = {}
        for pid, (loc, name) in info.params.items():
            if loc in ("body", "form"):
                continue
            p = op.parameter(loc, name) if op is not None else None
            schema = p.schema if p is not None else {}
            if pid in info.id_fields:
                res = next((x.object_type for x in api.params if x.name == pid), None)
                doc = _param_doc(schema, f"the {info.id_fields[pid]} of a {str(res).replace('_', ' ')}")
            else:
                doc = _param_doc(schema, p.description if p is not None and getattr(p, "description", None) else "")
            props[name] = doc
            required.append(name)
            args[name] = (loc, name)
            schemas[name] = schema
        body = _body_schema(sc, info) if "body" in info.params else None
        form = info.params.get("body", ("", ""))[0] == "form"
        flat = False
        if body is not None:
            bprops = object_properties(body) if isinstance(body, Mapping) else {}
            breq = set(body.get("required") or []) if isinstance(body, Mapping) else set()
            flat = bool(bprops) and not (set(bprops) & set(args)) and all(isinstance(k, str) and k for k in bprops)
            if flat:
                for k, v in bprops.items():
                    if form:  # form fields are text; an array is a list of texts (its key repeated on the wire)
                        kind = {"type": "array", "items": {"type": "string"}} if "array" in schema_type(v) else {"type": "string"}
                        props[k] = {**kind, "description": _param_doc(v).get("description", "a form field")}
                    else:
                        props[k] = _param_doc(v)
                    args[k] = ("form" if form else "body", k)
                    schemas[k] = v
                required += [k for k in bprops if k in breq]
            else:
                # not an object with properties (an array, a oneOf...): one argument of the body's own type
                props["body"] = {**_param_doc(body, "the form fields" if form else "the JSON request body")}
                args["body"] = ("form" if form else "body", "body")
                required.append("body")
        ent = _entity_schema(sc, info) if api.returns in ("object", "objects") else None
        fields = [k for k in object_properties(ent) if isinstance(k, str)] if isinstance(ent, Mapping) else []
        res = sc.model.resource(info.resource) if api.returns in ("object", "objects") else None
        if res is not None and res.id_field and res.id_field not in fields:  # the mock always sets the id
            fields.insert(0, res.id_field)
        if api.returns == "objects":
            outputs = {f"{i}.{k}": {"description": f"{k} of item {i}"} for i in range(LIST_REFS) for k in fields}
        elif api.returns == "object":
            eprops = object_properties(ent) if isinstance(ent, Mapping) else {}
            outputs = {k: _param_doc(eprops.get(k, {})) for k in fields}
        elif info.role == "delete":
            outputs = {"status_code": {"type": "integer", "description": "the HTTP status code"}}
        else:
            outputs = {}
        links: Mapping[str, Any] = {}
        if by_fields and info.role != "delete":  # field links: every scalar field of the whole JSON body
            links = deep_fields(op)
            # types only: a response has up to FIELD_KEYS of them, their descriptions would swell every prompt
            outputs = {k: {x: y for x, y in _param_doc(v).items() if x != "description"} for k, v in links.items()}
        elif by_name and not outputs and info.role != "delete":  # the JSON body's linkable fields
            links = response_fields(op)
            outputs = {k: _param_doc(v) for k, v in links.items()}
        what = f"{info.method} {info.path}"
        desc = info.summary or (f"{info.role} {info.resource.replace('_', ' ')}" if info.resource else info.role)
        spec = {
            "name": api.name,
            "description": f"{desc.rstrip('.')} ({what})",
            "parameters": {"type": "object", "properties": props, "required": required},
            "output_parameters": {"type": "object", "properties": outputs},
        }
        headers = _required_headers(op, api.name) if by_fields else ()
        out[api.name] = ToolShape(info, args, flat, spec, form, links, schemas, headers)
    return out


def _required_headers(op: Any, api: str) -> tuple[tuple[str, str], ...]:
    """A value for each required header parameter of ``op`` that the mock accepts (drawn from its
    schema, seeded by the API and the name, so every call sends the same): a credential or a
    version the spec declares as a parameter rather than a security scheme. The task's calls do
    not name it, as they name no credential."""
    from callbench.mock.validate import IGNORED_HEADERS, RequestError, check_parameter
    from callbench.tracks.stateful.spec_scenario import fitting_value

    out: list[tuple[str, str]] = []
    for p in op.params_in("header") if op is not None else ():
        if not p.required or p.name.lower() in IGNORED_HEADERS:
            continue

        def check(v: Any, p: Any = p) -> str | None:
            try:
                check_parameter(p, [_text(v)])
            except RequestError as exc:
                return exc.message
            return None

        value = fitting_value(p.schema or {"type": "string"}, Random(f"header:{api}:{p.name}"), p.name, check=check)
        out.append((p.name, _text(value)))
    return tuple(out)


def spec_tools(sc: SpecScenario) -> list[ToolSpec]:
    """The spec's operations as the nested track's tool descriptions (what the reference-aware
    grammar, :func:`~callbench.constrain.nested_grammar.build_nested_grammar`, takes)."""
    return [ToolSpec.model_validate(s.spec) for s in tool_shapes(sc).values()]


# -- execution ---------------------------------------------------------------------------------
class SpecExecutor:
    """Runs call sequences against a fresh mock of ``sc`` per sequence (interface of
    :class:`~callbench.tracks.nested.executor.NestedExecutor`)."""

    def __init__(self, sc: SpecScenario, *, seed: int = 0, call_timeout_s: float = 10.0,
                 max_value_chars: int = MAX_VALUE_CHARS, max_value_depth: int = MAX_VALUE_DEPTH):
        self.sc = sc
        self.seed = seed
        self.timeout = call_timeout_s
        self.shapes = tool_shapes(sc)
        self.catalog = field_links(sc)  # a read-only spec's mock serves a seeded catalogue (callbench.mock.app)
        self.max_value_chars = max_value_chars
        self.max_value_depth = max_value_depth

    def run(self, calls: list[ToolCall], tools: list[ToolSpec] | None = None, *, deadline: float | None = None) -> SequenceResult:
        from callbench.mock import MockService

        with MockService(self.sc.spec, self.sc.model, seed=self.seed, seeded_catalog=self.catalog) as svc:
            return run_calls(calls, lambda call, env: self._one(svc.port, call, env), deadline)

    def _one(self, port: int, call: ToolCall, env: dict[str, Any]) -> CallOutcome:
        shape = self.shapes.get(call.name)
        if shape is None:
            return CallOutcome(call.label, call.name, None, CallError(f"UnknownTool: no operation '{call.name}' in the spec"))
        try:
            args = resolve(call.arguments, env, max_chars=self.max_value_chars, max_depth=self.max_value_depth)
        except ReferenceResolutionError as exc:
            return CallOutcome(call.label, call.name, None, CallError(f"{type(exc).__name__}: {exc}"))
        try:
            target, body = self._request(shape, args)
        except ValueError as exc:
            return CallOutcome(call.label, call.name, args, CallError(str(exc)))
        try:
            status, payload = _http(port, shape.info.method, target, body, self.timeout, form=shape.form, extra_headers=shape.headers)
        except (OSError, http.client.HTTPException) as exc:
            return CallOutcome(call.label, call.name, args, CallError(f"ConnectionError: {exc}"))
        if status >= 400:
            reason = payload.get("error") if isinstance(payload, dict) else None
            return CallOutcome(call.label, call.name, args, CallError(f"HTTP {status}: {reason or 'error'}"))
        output = self._output(shape, status, payload)
        try:
            json_size(output, self.max_value_chars, self.max_value_depth, f"the output of '{call.name}'")
        except ValueTooLargeError as exc:
            output = CallError(f"{type(exc).__name__}: {exc}")
        return CallOutcome(call.label, call.name, args, output)

    def _request(self, shape: ToolShape, args: dict[str, Any]) -> tuple[str, Any]:
        unknown = [k for k in args if k not in shape.args]
        if unknown:
            raise ValueError(f"UnknownArgument: '{call_name(shape)}' has no argument '{unknown[0]}'")
        path = shape.info.path.split("#", 1)[0]
        query: list[tuple[str, str]] = []
        body: Any = None
        for k, v in args.items():
            loc, name = shape.args[k]
            if loc == "path":
                path = path.replace("{" + name + "}", urllib.parse.quote(_text(v), safe=""))
            elif loc == "query":
                for item in v if isinstance(v, list) else [v]:
                    query.append((name, _text(item)))
            elif shape.flat_body:
                body = {} if body is None else body
                body[name] = ([_text(x) for x in v] if isinstance(v, list) else _text(v)) if shape.form else v
            else:
                body = v
        if re.search(r"\{[^{}]+\}", path):
            missing = re.search(r"\{([^{}]+)\}", path).group(1)  # type: ignore[union-attr]
            raise ValueError(f"MissingArgument: '{call_name(shape)}' needs '{missing}'")
        if shape.flat_body and body is None and any(loc in ("body", "form") for loc, _ in shape.args.values()) and not shape.form:
            body = {}
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        return target, body

    @staticmethod
    def _output(shape: ToolShape, status: int, payload: Any) -> Any:
        if shape.info.role == "delete" or payload is None:
            return {"status_code": status}
        if shape.links:  # name links: references name fields of the whole body
            return payload
        if shape.spec["output_parameters"]["properties"] and shape.info.entity_path:
            for key in shape.info.entity_path:  # the entity, as the stateful program keeps it
                if not isinstance(payload, dict) or key not in payload:
                    return payload
                payload = payload[key]
        return payload

    def close(self) -> None:
        pass

    def __enter__(self) -> SpecExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call_name(shape: ToolShape) -> str:
    return shape.info.api


def _json_typed(sc: SpecScenario, shape: ToolShape, loc: str, name: str, value: Any) -> Any:
    """A path or query value as its tool declares it: the stateful programs send a boolean as the
    text ``"true"``/``"false"`` (what the mock reads), a tool call passes the boolean itself."""
    if not (isinstance(value, str) and value in ("true", "false")):
        return value
    op = sc.spec.operation(shape.info.method.lower(), shape.info.path)
    prm = op.parameter(loc, name) if op is not None else None
    return value == "true" if prm is not None and schema_type(prm.schema) - {"null"} == {"boolean"} else value


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return "" if v is None else str(v)


def _http(port: int, method: str, target: str, body: Any, timeout: float, *, form: bool = False,
          extra_headers: tuple[tuple[str, str], ...] = ()) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {**dict(extra_headers), "Accept": "application/json"}
        data = None
        if body is not None and form:
            fields = body if isinstance(body, dict) else {}
            pairs = [(k, _text(x)) for k, v in fields.items() for x in (v if isinstance(v, list) else [v])]  # an array: its key repeated
            data = urllib.parse.urlencode(pairs).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, target, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        status = resp.status
    finally:
        conn.close()
    if not raw:
        return status, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


# -- tasks from traces -------------------------------------------------------------------------
_EXPR = re.compile(r"^([A-Za-z_]\w*)(?:\[(\d+)\])?$")


@dataclass
class NestedSpecOptions:
    n: int = 100
    seed: int = 0
    sampler: str = "energy"
    min_calls: int = 2
    max_calls: int = 6
    distractors: int = 3
    reuse: float = 30.0  # data-flow boost of the sampler (see sampling.choose): calls tend to take earlier results
    candidates: int = 50  # traces sampled per attempt until one has a reference between calls
    max_attempts_factor: int = 10


def _words(shape: ToolShape, sc: SpecScenario) -> str:
    info = shape.info
    noun = (info.resource or "item").replace("_", " ")
    return {
        "create": f"create {'an' if noun[:1] in 'aeiou' else 'a'} {noun}",
        "read": f"fetch the {noun}",
        "list": f"list the {noun}s",
        "update": f"update the {noun}",
        "replace": f"replace the {noun}",
        "delete": f"delete the {noun}",
    }.get(info.role, (info.summary or f"call {info.op}").rstrip(".")[:1].lower() + (info.summary or f"call {info.op}").rstrip(".")[1:])


def _ordinal(i: int) -> str:
    return {0: "first", 1: "second", 2: "third"}.get(i, f"item {i + 1}")


def trace_to_task(sc: SpecScenario, shapes: dict[str, ToolShape], program, task_id: str, seed: int, rng: Random,
                  distractors: int, folder: str) -> dict[str, Any] | None:
    """The nested row of a straight-line program (None when a reference cannot be expressed)."""
    labels: dict[str, int] = {}  # program variable -> call number
    calls: list[dict[str, Any]] = []
    steps: list[str] = []
    by_name = name_links(sc)
    for k, step in enumerate(program.steps, 1):
        if not isinstance(step, Call):
            return None
        shape = shapes[step.api]
        api = sc.api(step.api)
        args: dict[str, Any] = {}
        refs: list[str] = []
        values: dict[str, Any] = {}
        for p in api.params:
            loc, name = shape.info.params[p.name]
            if p.is_object:
                m = _EXPR.match(step.described.get(p.name, ""))
                if m is None or m.group(1) not in labels:
                    return None
                idx = m.group(2)
                if idx is not None and int(idx) >= LIST_REFS:
                    return None
                field = shape.info.id_fields[p.name]
                args[name] = f"$var_{labels[m.group(1)]}.{idx + '.' if idx is not None else ''}{field}$"
                src = labels[m.group(1)]
                what = (p.object_type or "item").replace("_", " ")
                refs.append(f"the {what} from step {src}" if idx is None else f"the {_ordinal(int(idx))} {what} listed in step {src}")
            else:
                if step.args.get(p.name) not in program.inputs:
                    return None
                value = program.inputs[step.args[p.name]]
                if loc in ("path", "query"):
                    value = _json_typed(sc, shape, loc, name, value)
                if loc in ("body", "form") and shape.flat_body:
                    if not isinstance(value, dict) or any(k2 not in shape.args or shape.args[k2][0] != loc for k2 in value):
                        return None  # not an object, or keys the schema does not declare (additionalProperties)
                    for bk, bv in value.items():
                        args[bk] = bv
                        values[bk] = bv
                else:
                    args[name] = value
                    values[name] = value
        if by_name:
            refs += _link_by_name(shapes, shape, calls, args, values)
        labels[step.out] = k
        calls.append({"name": step.api, "label": f"$var_{k}", "arguments": args})
        text = _words(shape, sc)
        if refs:
            text += " (" + "; ".join(refs) + ")"
        if values:
            text += " with " + ", ".join(f"{k2} = {json.dumps(v, ensure_ascii=False)}" for k2, v in values.items())
        steps.append(f"{k}. {text[:1].upper()}{text[1:]}.")
    return _task_row(sc, shapes, calls, steps, task_id, seed, rng, distractors, folder)


def _task_row(sc: SpecScenario, shapes: dict[str, ToolShape], calls: list[dict[str, Any]], steps: list[str], task_id: str,
              seed: int, rng: Random, distractors: int, folder: str) -> dict[str, Any]:
    """The nested row of ``calls`` (the question lists ``steps``; the catalog: the tools called and
    ``distractors`` others)."""
    used = list(dict.fromkeys(c["name"] for c in calls))
    others = [a.name for a in sc.apis if a.name not in used]
    extra = rng.sample(others, min(distractors, len(others)))
    catalog = [shapes[a.name].spec for a in sc.apis if a.name in set(used) | set(extra)]
    title = sc.spec.title or sc.name
    api_name = title if title.lower().endswith("api") else f"{title} API"
    question = (
        f"Using the {api_name}, do the following in order, and answer with what the last step returns.\n"
        + "\n".join(steps)
    )
    return {
        "id": task_id,
        "input": question,
        "output": calls,
        "tools": catalog,
        "gold_answer": None,
        "domain": "api",
        "source": f"openapi:{sc.name}",
        "openapi": {"folder": folder, "seed": seed},
    }


def _link_by_name(shapes: dict[str, ToolShape], shape: ToolShape, calls: list[dict[str, Any]], args: dict[str, Any],
                  values: dict[str, Any]) -> list[str]:
    """Name links (:mod:`~callbench.statemodel.name_links`): each argument of ``shape``
    (a path or query parameter, a property of a flat body; drawn or not) that a field of an earlier
    call's response matches by name and schema takes that field, from the latest such call, as a
    reference; ``args`` and ``values`` are changed in place. Returns the question's phrases."""
    from callbench.statemodel.name_links import link_field

    refs: list[str] = []
    for arg, (loc, _) in shape.args.items():
        if loc in ("body", "form") and not shape.flat_body:
            continue
        for j in range(len(calls), 0, -1):
            key = link_field(shapes[calls[j - 1]["name"]].links, arg, shape.arg_schemas.get(arg))
            if key is not None:
                args[arg] = f"$var_{j}.{key}$"
                values.pop(arg, None)
                what = " ".join(w for w in key.replace("_", " ").split(".") if not w.isdigit())
                refs.append(f"{arg}: the {what} from step {j}")
                break
    return refs


# -- field links (read-only specs) ---------------------------------------------------------------
FIELD_DEPTH = 5  # segments of a field key at most (albums.items.0.artists.0.id): the mock synthesizes 5 levels
FIELD_KEYS = 150  # keys per response at most (shallow ones first)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")  # a key segment a reference can spell (no dot, '$', quote)
# container names that say nothing about what their items are (``albums.items.0.id`` is an album's id)
_GENERIC = frozenset({
    "items", "item", "data", "results", "result", "values", "value", "records", "entries", "list", "content",
    "objects", "body", "response", "nodes", "node", "edges", "elements", "hits", "page", "payload", "rows",
})
# formats too common to tell two ids apart (a date is no one's id)
_COMMON_FORMATS = frozenset({"date", "date-time", "time", "uri", "url", "email", "int32", "int64", "float", "double",
                             "byte", "binary", "password", "hostname", "ipv4", "ipv6", "uri-reference"})


def deep_fields(op: Any) -> dict[str, Mapping[str, Any]]:
    """Every scalar field of ``op``'s success response, inside objects and arrays (an array by its
    first item): reference key (``id``, ``artists.0.id``, ``albums.items.0.id``) -> the field's
    schema; at most :data:`FIELD_DEPTH` segments, :data:`FIELD_KEYS` keys, a recursive schema
    walked once per branch. Keys are in the schema's order, a parent's fields before deeper ones."""
    from callbench.statemodel.entity import success
    from callbench.statemodel.name_links import SCALARS

    if op is None:
        return {}
    _, schema = success(op)
    out: dict[str, Mapping[str, Any]] = {}
    level: list[tuple[Any, tuple[str, ...], frozenset[int]]] = [(schema, (), frozenset())]
    while level and len(out) < FIELD_KEYS:  # breadth first: shallow keys first
        nxt: list[tuple[Any, tuple[str, ...], frozenset[int]]] = []
        for sch, path, seen in level:
            if not isinstance(sch, Mapping) or id(sch) in seen or len(path) > FIELD_DEPTH:
                continue
            t = schema_type(sch)
            if path and len(t) == 1 and t <= SCALARS:
                if len(out) < FIELD_KEYS:
                    out[".".join(path)] = sch
                continue
            inner = seen | {id(sch)}
            props = object_properties(sch)
            if props:
                nxt += [(v, (*path, k), inner) for k, v in props.items() if isinstance(k, str) and _KEY.match(k)]
            elif t == {"array"} and isinstance(sch.get("items"), Mapping) and sch.get("maxItems") != 0:
                nxt.append((sch["items"], (*path, "0"), inner))
        level = nxt
    return out


def _noun(word: str | None) -> str | None:
    """``Albums`` -> ``album``, ``categories`` -> ``category``, ``album_id`` -> ``albumid``: the
    singular as inference names resources (:func:`~callbench.statemodel.paths.singular`),
    lower case, without ``_``/``-``."""
    from callbench.statemodel.paths import singular

    if not word:
        return None
    return re.sub(r"[^a-z0-9]", "", singular(word).lower()) or None


def key_owner(key: str, resource: str | None) -> str | None:
    """What ``key``'s object is (:func:`_noun`): its nearest container named by something other
    than a position or a generic word (``albums.items.0.id`` -> ``album``, ``artists.0.id`` ->
    ``artist``), else ``resource`` (the response's own resource: ``id`` of an album read)."""
    for seg in reversed(key.split(".")[:-1]):
        if seg.isdigit() or seg.lower() in _GENERIC:
            continue
        return _noun(seg)
    return _noun(resource)


def arg_resource(sc: SpecScenario, shape: ToolShape, arg: str) -> str | None:
    """The resource whose id ``arg`` takes (:func:`_noun`): the state model's id source of a path
    parameter (``GET /artists/{id}``: artist), else what the name says (``artist_id``, ``artistIds``),
    else, for a path parameter, the path segment before it (``/artists/{id}/albums``: artist)."""
    info = shape.info
    loc, name = shape.args[arg]
    if loc == "path":
        for pid, (ploc, pname) in info.params.items():
            if ploc == "path" and pname == name and pid in info.id_fields:
                obj = next((p.object_type for p in sc.api(info.api).params if p.name == pid), None)
                if obj:
                    return _noun(obj)
    m = re.fullmatch(r"(.+?)[_-]?(?:id|Id|ID|ids|Ids|IDs)", name)
    if m:
        return _noun(m.group(1))
    if loc == "path":
        m = re.search(r"/([^/{}]+)/\{" + re.escape(name) + r"\}", info.path.split("#", 1)[0])
        if m:
            return _noun(m.group(1))
    return None


def _id_like(name: str) -> bool:
    return bool(re.search(r"(?:^|[_-]|[a-z])(?:id|Id|ID)s?$", name)) or name.lower() in ("id", "ids")


def _distinctive(schema: Any) -> tuple[str, str] | None:
    """What sets an id's schema apart from any string: its pattern, or a format no date or URL has."""
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("pattern"), str) and schema["pattern"]:
        return ("pattern", schema["pattern"])
    fmt = schema.get("format")
    return ("format", fmt) if isinstance(fmt, str) and fmt and fmt not in _COMMON_FORMATS else None


def field_link(fields: Mapping[str, Mapping[str, Any]], resource: str | None, arg: str, schema: Any,
               want: str | None, *, in_body: bool = False) -> list[str]:
    """The keys of ``fields`` (a :func:`deep_fields` result of an operation about ``resource``) that
    argument ``arg`` (with ``schema``, taking an id of ``want``) may take its value from, best
    first. Each must :func:`~callbench.statemodel.name_links.fits` the argument (one
    scalar type, the argument's constraints all the field's own; or, for a path or query
    parameter, be an integer where the argument is a string without constraints: the id's text,
    ``/questions/{ids}``) and match it

    1. **by name**: the field is named as the argument (``user_id`` -> ``user_id``; not a bare
       ``id``, which every object has), for a path or query parameter or an id in the body
       (``in_body``: a body's ``name`` or ``description`` is the caller's to choose, not a copy);
    2. **by resource**: the field is the ``id`` (or ``<resource>_id``) of an object of ``want``
       (:func:`key_owner`: ``artists.0.id`` for an artist's id);
    3. **by schema**: both are ids (their names end in ``id``) whose schemas share a distinctive
       ``pattern`` or ``format`` (a uuid), and no resource says otherwise.

    Shallower keys first within a rule."""
    from callbench.statemodel.name_links import COMBINATORS, CONSTRAINT_KEYWORDS, fits, scalar_type

    def fitting(f: Mapping[str, Any]) -> bool:
        if fits(f, schema):
            return True
        return (not in_body and scalar_type(f) == "integer" and isinstance(schema, Mapping) and scalar_type(schema) == "string"
                and not any(k in schema for k in (*CONSTRAINT_KEYWORDS, *COMBINATORS)))

    ranked: list[tuple[int, int, str]] = []
    mark = _distinctive(schema)
    for key, f in fields.items():
        if not fitting(f):
            continue
        leaf = key.rsplit(".", 1)[-1]
        leafn = re.sub(r"[^a-z0-9]", "", leaf.lower())
        owner = key_owner(key, resource)
        if leafn not in ("id", "ids") and leafn == re.sub(r"[^a-z0-9]", "", arg.lower()) and (not in_body or _id_like(arg)):
            rule = 1
        elif want and leafn in ("id", f"{want}id") and owner == want:
            rule = 2
        elif mark and _id_like(leaf) and _id_like(arg) and _distinctive(f) == mark and (not want or not owner or owner == want):
            rule = 3
        else:
            continue
        ranked.append((rule, key.count("."), key))
    return [k for _, _, k in sorted(ranked)]


def _pointer_key(expr: Any) -> str | None:
    """``$response.body#/artists/0/id`` -> ``artists.0.id`` (an OpenAPI runtime expression into the
    response body, RFC 6901 escapes undone); None for any other expression."""
    if not isinstance(expr, str) or not expr.startswith("$response.body#/"):
        return None
    segs = [x.replace("~1", "/").replace("~0", "~") for x in expr[len("$response.body#/"):].split("/")]
    return ".".join(segs) if segs and all(_KEY.match(x) or x.isdigit() for x in segs) else None


def spec_links(sc: SpecScenario, shapes: Mapping[str, ToolShape]) -> dict[tuple[str, str], dict[str, str]]:
    """The spec's own OpenAPI ``links`` (Link Objects of a success response): (source tool, target
    tool) -> {target argument: source key}. A link names its target by ``operationId`` (or an
    ``operationRef`` ``#/paths/<path>/<method>``) and each parameter by a ``$response.body#/...``
    expression (``path.``/``query.`` prefixes allowed); only keys the source's response has
    (:func:`deep_fields`) and arguments the target has are kept."""
    from callbench.statemodel.entity import success

    by_opid = {sh.info.operation_id: name for name, sh in shapes.items() if sh.info.operation_id}
    by_op = {sh.info.op.split("#", 1)[0].lower(): name for name, sh in shapes.items()}
    out: dict[tuple[str, str], dict[str, str]] = {}
    for src, sh in shapes.items():
        op = sc.spec.operation(sh.info.method.lower(), sh.info.path)
        if op is None or not sh.links:
            continue
        resp = op.responses.get(success(op)[0]) or {}
        links = resp.get("links") if isinstance(resp, Mapping) else None
        for link in (links or {}).values() if isinstance(links, Mapping) else ():
            if not isinstance(link, Mapping) or not isinstance(link.get("parameters"), Mapping):
                continue
            dst = by_opid.get(link.get("operationId"))
            ref = link.get("operationRef")
            if dst is None and isinstance(ref, str) and ref.startswith("#/paths/"):
                path, _, method = ref[len("#/paths/"):].rpartition("/")
                dst = by_op.get(f"{method} {path.replace('~1', '/').replace('~0', '~')}".lower())
            if dst is None or dst == src:
                continue
            for pname, expr in link["parameters"].items():
                name = str(pname).split(".", 1)[1] if str(pname).startswith(("path.", "query.", "header.", "cookie.")) else str(pname)
                key = _pointer_key(expr)
                if key is not None and key in sh.links and name in shapes[dst].args:
                    out.setdefault((src, dst), {})[name] = key
    return out


@dataclass(frozen=True)
class LinkGraph:
    """Which argument of which tool may take which field of which tool's response: ``edges[dst][arg]``
    = [(src, [keys, best first]), ...]; ``sources``: the tools some other tool's argument links to."""

    edges: Mapping[str, Mapping[str, list[tuple[str, list[str]]]]]
    sources: tuple[str, ...]


def link_graph(sc: SpecScenario, shapes: Mapping[str, ToolShape]) -> LinkGraph:
    """Field links between the tools of ``sc`` (OpenAPI ``links`` first, then :func:`field_link`)."""
    declared = spec_links(sc, shapes)
    edges: dict[str, dict[str, list[tuple[str, list[str]]]]] = {}
    for dst, dsh in shapes.items():
        for arg, (loc, _) in dsh.args.items():
            if loc in ("body", "form") and not dsh.flat_body:
                continue
            want = arg_resource(sc, dsh, arg)
            for src, ssh in shapes.items():
                if src == dst or not ssh.links:
                    continue
                keys = [declared[(src, dst)][arg]] if arg in declared.get((src, dst), {}) else []
                found = field_link(ssh.links, ssh.info.resource, arg, dsh.arg_schemas.get(arg), want, in_body=loc in ("body", "form"))
                keys += [k for k in found if k not in keys]
                if keys:
                    edges.setdefault(dst, {}).setdefault(arg, []).append((src, keys))
    sources = sorted({src for d in edges.values() for lst in d.values() for src, _ in lst})
    return LinkGraph(edges, tuple(sources))


def _bracketed(key: str) -> str:
    """``albums.items.0.id`` -> ``albums.items[0].id``, ``0.year`` -> ``[0].year`` (how the task
    text shows a field)."""
    return re.sub(r"(?:^|\.)(\d+)(?=\.|$)", r"[\1]", key)


def _literal_args(sc: SpecScenario, shape: ToolShape, rng: Random) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Drawn values for every argument of ``shape``'s operation (path, required query, body), as a
    tool call passes them; (arguments, the values the text names). None when a body cannot be
    given as the tool's arguments."""
    from callbench.mock.validate import sent_path_problem
    from callbench.tracks.stateful.scenario import World
    from callbench.tracks.stateful.spec_scenario import fitting_value, wire_value

    info = shape.info
    op = sc.spec.operation(info.method.lower(), info.path)
    args: dict[str, Any] = {}
    for p in sc.api(info.api).params:
        loc, name = info.params[p.name]
        if p.is_object:  # a literal id: a seeded catalogue names an object by any id its path accepts
            prm = op.parameter("path", name) if op is not None else None
            sch = prm.schema if prm is not None and prm.schema else {"type": "string"}
            check = (lambda v, prm=prm: sent_path_problem(prm, v)) if prm is not None else None
            value = fitting_value(sch, rng, name, sent=wire_value, check=check)
        else:
            value = p.domain(rng, World(), {}) if p.domain is not None else None
        if loc in ("path", "query"):
            value = _json_typed(sc, shape, loc, name, value)
        if loc in ("body", "form") and shape.flat_body:
            if not isinstance(value, dict) or any(k not in shape.args or shape.args[k][0] != loc for k in value):
                return None
            args.update(value)
        else:
            args[name] = value
    return args, dict(args)


def linked_task(sc: SpecScenario, shapes: dict[str, ToolShape], graph: LinkGraph, rng: Random, n_calls: int,
                task_id: str, seed: int, distractors: int, folder: str) -> tuple[dict[str, Any] | None, str]:
    """A row whose calls follow :func:`link_graph` (read-only specs): the first call's arguments
    drawn, each later call an operation some argument of which takes a field of an earlier call's
    response (from the latest such call; its other arguments drawn), ``n_calls`` calls or fewer
    where no operation links on. (row, "") or (None, why)."""
    if not graph.sources:
        return None, "no field links between operations"
    chosen: list[str] = [rng.choice(graph.sources)]
    while len(chosen) < n_calls:
        options = sorted({dst for dst, by_arg in graph.edges.items() if dst not in chosen
                          for lst in by_arg.values() for src, _ in lst if src in chosen})
        if not options:
            break
        chosen.append(rng.choice(options))
    if len(chosen) < 2:
        return None, "no reference between calls"
    calls: list[dict[str, Any]] = []
    steps: list[str] = []
    for k, name in enumerate(chosen, 1):
        shape = shapes[name]
        drawn = _literal_args(sc, shape, rng)
        if drawn is None:
            return None, "reference not expressible"
        args, values = drawn
        refs: list[str] = []
        for arg, lst in graph.edges.get(name, {}).items():
            srcs = dict(lst)
            j = next((j for j in range(k - 1, 0, -1) if chosen[j - 1] in srcs), None)
            if j is None:
                continue
            key = srcs[chosen[j - 1]][0]
            args[arg] = f"$var_{j}.{key}$"
            values.pop(arg, None)
            refs.append(f"{arg}: the {_bracketed(key)} of step {j}'s answer")
        calls.append({"name": name, "label": f"$var_{k}", "arguments": args})
        # the operation's summary where it has one: a read-only API has many lists of one resource
        text = shape.info.summary.rstrip(".") if shape.info.summary else _words(shape, sc)
        if refs:
            text += " (" + "; ".join(refs) + ")"
        if values:
            text += " with " + ", ".join(f"{k2} = {json.dumps(v, ensure_ascii=False)}" for k2, v in values.items())
        steps.append(f"{k}. {text[:1].upper()}{text[1:]}.")
    return _task_row(sc, shapes, calls, steps, task_id, seed, rng, distractors, folder), ""


def generate_nested_from_spec(
    sc: SpecScenario, folder: str, opts: NestedSpecOptions, *, on_task: Callable[[int, int], None] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``opts.n`` rows (gold answers recorded by execution against the mock), and counts of what
    was dropped. Row *i* draws from its own seed, so the first rows of a larger ``n`` are the same."""
    if opts.min_calls < 1 or opts.max_calls < opts.min_calls:
        raise ConfigError(f"--min-calls {opts.min_calls} --max-calls {opts.max_calls}: need 1 <= min-calls <= max-calls")
    sc = readonly_scenario(sc)
    shapes = tool_shapes(sc)
    # name-linked specs (no API takes an object): every transition pair is (none, API) and carries no
    # data flow; weighing candidates by the kept rows' coverage steers the energy sampler away from
    # the few APIs whose responses link to others (Slack: 54 rows in 1,000 attempts), so there only
    # calls that failed weigh (the kept rows' pairs are still counted)
    by_name = name_links(sc)
    graph = link_graph(sc, shapes) if field_links(sc) else None
    counts: Counter = Counter()  # transition pairs of the kept rows
    failed: Counter = Counter()  # pairs whose call failed in a gold run (sampling energy only)
    rows: list[dict[str, Any]] = []
    dropped: Counter = Counter()
    attempt = 0
    while len(rows) < opts.n and attempt < opts.n * opts.max_attempts_factor:
        rng = Random(f"nested-spec:{opts.seed}:{attempt}")
        attempt += 1
        n_calls = rng.randint(opts.min_calls, opts.max_calls)
        row, why = None, "no trace"
        for _ in range(opts.candidates):  # sampling costs little: draw until a trace is a nested one
            if graph is not None:  # a read-only spec: calls linked by response fields
                program, seed = None, rng.randrange(1 << 31)
                row, why = linked_task(sc, shapes, graph, rng, n_calls, f"{sc.name}_nested_{len(rows) + 1:03d}", seed,
                                       opts.distractors, folder)
                if row is not None:
                    break
                if why == "no field links between operations":
                    break  # no draw can do better
                continue
            trial = failed + Counter() if by_name else counts + failed
            program = sample_program(sc, rng, n_calls=n_calls, sampler=opts.sampler, counts=trial, p_loop=0.0, p_branch=0.0, alternatives=0, reuse=opts.reuse)
            if program is None or len(program.steps) < opts.min_calls:
                why = "too short"
                continue
            seed = rng.randrange(1 << 31)
            row = trace_to_task(sc, shapes, program, f"{sc.name}_nested_{len(rows) + 1:03d}", seed, rng, opts.distractors, folder)
            if row is None:
                why = "reference not expressible"
            elif not any("$var_" in json.dumps(c["arguments"]) for c in row["output"]):
                why, row = "no reference between calls", None
            else:
                break
        if row is None:
            dropped[why] += 1
            continue
        calls = [ToolCall.model_validate(c) for c in row["output"]]
        ex = SpecExecutor(sc, seed=seed)
        first, again = ex.run(calls), ex.run(calls)
        if not first.ok:
            i, bad = next((i, c) for i, c in enumerate(first.calls) if not c.ok)
            # the energy sampler favours pairs no kept row covers; a call that cannot succeed (a
            # schema whose pattern no value fits) would be drawn again and again: weigh it down
            if program is not None:
                failed[tuple(program.pairs[i])] += 3
            dropped[f"gold call fails: {str(bad.output.message).split(':')[0]}"] += 1
            continue
        if json.dumps(_plain(first.final), sort_keys=True) != json.dumps(_plain(again.final), sort_keys=True):
            dropped["not deterministic"] += 1
            continue
        row["gold_answer"] = first.final
        rows.append(row)
        if program is None:
            counts.update((c["name"],) for c in row["output"])  # field links: the operations called
        elif by_name:
            counts.update(tuple(p) for p in program.pairs)
        else:
            counts = trial - failed
        if on_task:
            on_task(len(rows), opts.n)
    return rows, {"attempts": attempt, "dropped": dict(dropped), "pairs_covered": len(counts)}


def _plain(v: Any) -> Any:
    return v.to_json() if isinstance(v, CallError) else v


# -- loading (the nested track) ------------------------------------------------------------------
_LOCK = threading.Lock()


def task_scenario(task: NestedTask, data_file: Path) -> tuple[SpecScenario, int] | None:
    """(scenario, seed) of a row made from a spec (its ``openapi`` field), None for other rows."""
    meta = (task.model_extra or {}).get("openapi")
    if meta is None:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("folder"), str) or not isinstance(meta.get("seed"), int):
        raise DataError(f"{data_file}: task {task.id}: field 'openapi' needs 'folder' (string) and 'seed' (integer)")
    from callbench.tracks.stateful.spec_bench import load_folder

    folder = (data_file.parent / meta["folder"]).resolve()
    if folder.parent != data_file.parent.resolve():
        raise DataError(f"{data_file}: task {task.id}: openapi.folder must name a folder beside the file, not {meta['folder']!r}")
    with _LOCK:
        sc = load_folder(folder)
    return readonly_scenario(sc), meta["seed"]


def write_rows(rows: list[dict[str, Any]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
