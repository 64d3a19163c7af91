"""The gold request of a generated row: the valid-invocation synthesizer's request for an
operation (:func:`callbench.specs.synthesize.plan_request`: realistic values, the credential the
security scheme declares as a placeholder, WAPIIBench's ``Accept``/``Content-Type`` conventions),
cut to a difficulty, and the list of values a task text has to state (:class:`Fact`).

Difficulty (:data:`DIFFICULTIES`) says how many optional arguments the request carries and how
deep the body goes:

====== ============================ ================================================
level  optional query/header params body
====== ============================ ================================================
easy   none                         required properties only (at every depth)
medium up to 2                      optional properties up to depth 2, at most 3 per object
hard   up to 5                      optional properties up to depth 3, at most 6 per object
====== ============================ ================================================

Depth counts object levels (a top-level body property is depth 1; arrays add none). Cutting only
removes optional parameters and optional properties, so the request stays valid; required ones
and their required sub-properties are always kept. ``mixed`` picks one of the three per row.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from callbench.specs import ApiSpec, Operation
from callbench.specs.schema import object_properties, required_properties, schema_type
from callbench.specs.synthesize import RequestPlan, plan_request, serialize_query


@dataclass(frozen=True)
class Difficulty:
    optional_params: int
    body_depth: int
    body_optional: int  # optional properties kept per object


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty(0, 0, 0),
    "medium": Difficulty(2, 2, 3),
    "hard": Difficulty(5, 3, 6),
}
DIFFICULTY_CHOICES = (*DIFFICULTIES, "mixed")


@dataclass(frozen=True)
class Fact:
    """One value the gold request carries and a task text must state: ``location`` (path, query,
    header, cookie, body), ``name`` (dotted for nested body values: ``data.items[0].name``) and
    the ``value`` as the request carries it (path values decoded from the URL)."""

    location: str
    name: str
    value: Any

    def as_dict(self) -> dict[str, Any]:
        return {"location": self.location, "name": self.name, "value": self.value}


@dataclass
class GoldRequest:
    operation: Operation
    config: dict[str, Any]
    plan: RequestPlan
    difficulty: str
    facts: list[Fact] = field(default_factory=list)
    path_values: dict[str, str] = field(default_factory=dict)  # path parameter -> decoded text


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _object_schema(schema: Any, depth: int = 0) -> Mapping[str, Any] | None:
    """The schema whose properties describe an object value: the schema itself, else (as the
    synthesizer chooses) the first non-null ``oneOf``/``anyOf`` branch."""
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    if object_properties(schema):
        return schema
    for kw in ("oneOf", "anyOf"):
        branches = [b for b in schema.get(kw) or () if isinstance(b, Mapping) and schema_type(b) != {"null"}]
        if branches:
            return _object_schema(branches[0], depth + 1)
    return schema


def _array_items(schema: Any) -> Any:
    s = _object_schema(schema)
    items = s.get("items") if isinstance(s, Mapping) else None
    if items is None and isinstance(schema, Mapping):
        for kw in ("oneOf", "anyOf"):
            for b in schema.get(kw) or ():
                if isinstance(b, Mapping) and isinstance(b.get("items"), Mapping):
                    return b["items"]
    return items


def prune_body(value: Any, schema: Any, level: Difficulty, rng: random.Random, depth: int = 1) -> Any:
    """``value`` with optional properties cut to ``level`` (see the module docstring)."""
    if isinstance(value, list):
        items = _array_items(schema)
        return [prune_body(v, items, level, rng, depth) for v in value]
    if not isinstance(value, dict):
        return value
    s = _object_schema(schema)
    props = object_properties(s) if s is not None else {}
    if not props:
        return value  # free-form: nothing to say what is optional
    required = required_properties(s)
    optional = [k for k in value if k in props and k not in required]
    keep_optional: set[str] = set()
    if depth <= level.body_depth and level.body_optional > 0 and optional:
        keep_optional = set(rng.sample(optional, min(len(optional), level.body_optional)))
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in props and k not in required and k not in keep_optional:
            continue
        out[k] = prune_body(v, props.get(k), level, rng, depth + 1)
    return out


def _body_schema(op: Operation, media: str | None) -> Any:
    try:
        return op.body_schema(media) if media else op.body_schema()
    except Exception:  # noqa: BLE001
        return None


def gold_request(spec: ApiSpec, op: Operation, *, seed: int, difficulty: str) -> GoldRequest:
    """The gold request for ``op`` at ``difficulty`` (a name of :data:`DIFFICULTIES`). Raises
    :class:`callbench.specs.synthesize.SynthesisError` when no valid request can be built."""
    level = DIFFICULTIES[difficulty]
    rng = random.Random(f"gold:{seed}:{op.method}:{op.path}")
    plan = plan_request(spec, op, seed=seed, optional=0.0 if difficulty == "easy" else 1.0, with_body=None)
    config = _copy(plan.config)
    cred = {(loc, n.lower() if loc == "headers" else n) for loc, n in plan.credentials}
    fixed = {k for k, _ in spec.fixed_query(op)} if hasattr(spec, "fixed_query") else set()
    # optional query/header parameters: keep at most level.optional_params of them
    present: list[tuple[str, Any, list[str]]] = []  # (location, parameter, config keys it wrote)
    for p in op.parameters:
        if p.required or p.location not in ("query", "header"):
            continue
        raw = plan.raw.get(p.location, {})
        if p.name not in raw:
            continue
        if p.location == "query":
            if p.name in fixed or ("params", p.name) in cred:
                continue
            keys = [k for k in serialize_query(p, raw[p.name]) if k in (config.get("params") or {})]
            present.append(("params", p, keys))
        else:
            if ("headers", p.name.lower()) in cred or p.name.lower() in ("accept", "content-type"):
                continue
            present.append(("headers", p, [k for k in config.get("headers", {}) if k.lower() == p.name.lower()]))
    keep = set(rng.sample(range(len(present)), min(len(present), level.optional_params))) if present else set()
    for i, (loc, _p, keys) in enumerate(present):
        if i in keep:
            continue
        for k in keys:
            config.get(loc, {}).pop(k, None)
    # a query-dispatched operation (AWS ``/#Action=X``, S3 ``/{Bucket}#cors``): the pairs its path
    # key fixes are written in the URL, which then names the operation (the grammar's form, and the
    # args setup's starter URL); the scorer reads a URL's query as params in both modes
    fixed = plan.url_query_names
    if fixed and all(n in (config.get("params") or {}) for n in fixed):
        config["url"] = plan.code_url(config["url"])
        for n in fixed:
            config["params"].pop(n)
    if "params" in config and not config["params"]:
        del config["params"]
    if "data" in config:
        config["data"] = prune_body(config["data"], _body_schema(op, plan.body_media), level, rng)
    path_values = {name: unquote(text) for name, text in plan.path_values.items()}
    gold = GoldRequest(op, config, plan, difficulty, path_values=path_values)
    gold.facts = facts_of(gold)
    return gold


def _leaves(value: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out += _leaves(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(value, list) and value and any(isinstance(v, dict | list) for v in value):
        out = []
        for i, v in enumerate(value):
            out += _leaves(v, f"{prefix}[{i}]")
        return out
    return [(prefix, value)]


def facts_of(gold: GoldRequest) -> list[Fact]:
    """The values a task text must state: path values, query parameters, header and cookie
    parameters, body leaves (scalar arrays as one value). Credentials (placeholders the prompt
    explains), ``Accept`` and ``Content-Type`` are not task content."""
    cfg = gold.config
    cred = {(loc, n.lower()) for loc, n in gold.plan.credentials}
    out = [Fact("path", name, text) for name, text in gold.path_values.items()]
    for k, v in (cfg.get("params") or {}).items():
        if ("params", k.lower()) not in cred:
            out.append(Fact("query", k, v))
    for k, v in (cfg.get("headers") or {}).items():
        low = k.lower()
        if low in ("accept", "content-type", "cookie") or ("headers", low) in cred:
            continue
        out.append(Fact("header", k, v))
    for k, v in (gold.plan.raw.get("cookie") or {}).items():
        if ("cookie", k.lower()) not in cred:
            out.append(Fact("cookie", k, v))
    if "data" in cfg:
        data = cfg["data"]
        if isinstance(data, dict | list):
            out += [Fact("body", name or "(body)", v) for name, v in _leaves(data, "")]
        else:
            out.append(Fact("body", "(body)", data))
    return out
