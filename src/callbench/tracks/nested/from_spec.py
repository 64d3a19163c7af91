"""Nested call-sequence tasks generated from an OpenAPI spec, executed against its stateful mock.

The traces are the stateful track's (issue 16, part 3): the same scenario built from the spec and
its state model (:func:`~callbench.tracks.stateful.infer.scenario.build_scenario`), sampled by the
same trace sampler (energy or random) without control flow, so every trace is a straight call
sequence. Each call becomes one NESTFUL v2 call; an object a call takes (``pet_1['id']`` in the
stateful program) becomes a reference to the call that returned it (``"$var_1.id$"``, or
``"$var_2.0.id$"`` for the first item of a list), every other value a literal.

**Name links** (:func:`name_links`): where no API takes an object (RPC-style paths such as
Slack's, which path-based inference cannot link), a call's argument takes a field of an earlier
call's JSON response that matches it by name and schema (``"channel": "$var_1.channel.id$"``;
:mod:`callbench.tracks.stateful.infer.name_links`); every other spec's rows are unchanged.

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
from callbench.tracks.nested.executor import CallError, CallOutcome, SequenceResult, run_calls
from callbench.tracks.nested.references import (
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    ReferenceResolutionError,
    ValueTooLargeError,
    json_size,
    resolve,
)
from callbench.tracks.nested.schema import NestedTask, ToolCall, ToolSpec
from callbench.tracks.stateful.infer.scenario import OpInfo, SpecScenario
from callbench.tracks.stateful.program import Call
from callbench.tracks.stateful.sampling import sample_program

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
    from callbench.tracks.stateful.infer.scenario import _form_body, _json_body

    if op is None:
        return None
    return _json_body(op) if info.params.get("body", ("", ""))[0] == "body" else _form_body(op)


def _entity_schema(sc: SpecScenario, info: OpInfo) -> Any:
    from callbench.tracks.stateful.infer.entity import entity

    op = sc.spec.operation(info.method.lower(), info.path)
    ent = entity(op) if op is not None else None
    return ent.schema if ent is not None else None


def name_links(sc: SpecScenario) -> bool:
    """Whether ``sc``'s calls are linked by name and schema (:mod:`~callbench.tracks.stateful.infer.name_links`):
    only where path-based inference links nothing (no API takes an object, e.g. Slack's RPC paths),
    so the rows of every spec with path links stay exactly as they were."""
    return not any(p.is_object for api in sc.apis for p in api.params)


def tool_shapes(sc: SpecScenario) -> dict[str, ToolShape]:
    """One :class:`ToolShape` per API of ``sc`` (catalog order = the scenario's API order)."""
    from callbench.tracks.stateful.infer.name_links import response_fields

    by_name = name_links(sc)
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
        if by_name and not outputs and info.role != "delete":  # the JSON body's linkable fields
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
        out[api.name] = ToolShape(info, args, flat, spec, form, links, schemas)
    return out


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
        self.max_value_chars = max_value_chars
        self.max_value_depth = max_value_depth

    def run(self, calls: list[ToolCall], tools: list[ToolSpec] | None = None, *, deadline: float | None = None) -> SequenceResult:
        from callbench.mock import MockService

        with MockService(self.sc.spec, self.sc.model, seed=self.seed) as svc:
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
            status, payload = _http(port, shape.info.method, target, body, self.timeout, form=shape.form)
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


def _http(port: int, method: str, target: str, body: Any, timeout: float, *, form: bool = False) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Accept": "application/json"}
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
    """Name links (:mod:`~callbench.tracks.stateful.infer.name_links`): each argument of ``shape``
    (a path or query parameter, a property of a flat body; drawn or not) that a field of an earlier
    call's response matches by name and schema takes that field, from the latest such call, as a
    reference; ``args`` and ``values`` are changed in place. Returns the question's phrases."""
    from callbench.tracks.stateful.infer.name_links import link_field

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


def generate_nested_from_spec(
    sc: SpecScenario, folder: str, opts: NestedSpecOptions, *, on_task: Callable[[int, int], None] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``opts.n`` rows (gold answers recorded by execution against the mock), and counts of what
    was dropped. Row *i* draws from its own seed, so the first rows of a larger ``n`` are the same."""
    if opts.min_calls < 1 or opts.max_calls < opts.min_calls:
        raise ConfigError(f"--min-calls {opts.min_calls} --max-calls {opts.max_calls}: need 1 <= min-calls <= max-calls")
    shapes = tool_shapes(sc)
    # name-linked specs (no API takes an object): every transition pair is (none, API) and carries no
    # data flow; weighing candidates by the kept rows' coverage steers the energy sampler away from
    # the few APIs whose responses link to others (Slack: 54 rows in 1,000 attempts), so there only
    # calls that failed weigh (the kept rows' pairs are still counted)
    by_name = name_links(sc)
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
            failed[tuple(program.pairs[i])] += 3
            dropped[f"gold call fails: {str(bad.output.message).split(':')[0]}"] += 1
            continue
        if json.dumps(_plain(first.final), sort_keys=True) != json.dumps(_plain(again.final), sort_keys=True):
            dropped["not deterministic"] += 1
            continue
        row["gold_answer"] = first.final
        rows.append(row)
        if by_name:
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
    return sc, meta["seed"]


def write_rows(rows: list[dict[str, Any]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
