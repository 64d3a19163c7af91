"""Check gold requests against their own spec.

:func:`audit_gold` (used when a task file is loaded): which expected arguments does the spec not
allow, and which required ones are missing? A benchmark that scores illegality must know where its
gold itself is illegal.

:func:`cross_check_config` is the fuller cross-check a generated or audited row goes through
(``callbench generate webapi``, ``callbench audit webapi``), one finding per problem, each of one
of :data:`SPEC_CLASSES`:

- ``query_in_url``: the URL carries a query string (the row convention puts query arguments in
  ``params``, where the scorer and the grammar read them);
- ``unknown_path``: the URL matches no path of the spec;
- ``unknown_method``: the path has no operation for the method;
- ``unknown_argument``: a ``params``/``headers``/``data`` entry the operation does not declare
  (credentials of the spec's security schemes are legal, and so are the transport headers any
  client may send, :data:`callbench.specs.openapi.TRANSPORT_HEADERS`: ``Accept``,
  ``Accept-Encoding``, ``Accept-Language``, ``Content-Type`` -- on a GET too -- and ``User-Agent``);
- ``missing_required``: a required query/header/cookie parameter or top-level body property absent;
- ``schema_violation``: a value its schema rejects (type, ``enum``, bounds, ``pattern``, nested
  required properties, undeclared properties where ``additionalProperties: false``), judged by
  JSON Schema on the value as the spec types it (query, path, header and form values travel as
  text and are read as the parameter's type first).

Both checks read URLs by the real-world rules (``ApiSpec.match(..., real_world=True)``, as the
strict scorer reads a task's expected URL): a host of the server host's registrable domain is
that server (``https://api.trello.com/1/boards`` on a spec whose server is
``https://trello.com/1``), and one trailing ``/`` more or less names the same path
(``either_slash``: the task's own URL; a model's trailing slash the spec lacks stays illegal);
both only where the exact rules match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from callbench.specs import ApiSpec
from callbench.specs.openapi import is_transport_header
from callbench.specs.schema import schema_type, to_json_schema
from callbench.tracks.webapi.dataset import WebApiTask
from callbench.tracks.webapi.scoring import undeclared_auth

_SPEC_LOC = {"headers": "header", "params": "query", "data": "body"}
SPEC_CLASSES = (
    "query_in_url",
    "unknown_path",
    "unknown_method",
    "unknown_argument",
    "missing_required",
    "schema_violation",
)
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class GoldIssue:
    task_id: str
    kind: str  # "illegal_argument" | "missing_required" | "no_operation"
    location: str
    name: str


def _match(spec: ApiSpec, cfg: Mapping[str, Any]) -> Any:
    """``spec.match`` with the request's query and headers where the loader takes them (they
    select query- and header-dispatched operations)."""
    params = cfg.get("params") if isinstance(cfg.get("params"), Mapping) else None
    headers = cfg.get("headers") if isinstance(cfg.get("headers"), Mapping) else {}
    try:
        return spec.match(cfg["method"], cfg["url"], params, headers=headers, real_world=True, either_slash=True)
    except TypeError:  # a loader without header-aware matching
        return spec.match(cfg["method"], cfg["url"], params)


def _match_paths(spec: ApiSpec, cfg: Mapping[str, Any]) -> list[Any]:
    params = cfg.get("params") if isinstance(cfg.get("params"), Mapping) else None
    headers = cfg.get("headers") if isinstance(cfg.get("headers"), Mapping) else {}
    try:
        return spec.match_paths(cfg["url"], params, headers=headers, real_world=True, either_slash=True)
    except TypeError:
        return spec.match_paths(cfg["url"], params)


def audit_gold(task: WebApiTask, spec: ApiSpec) -> list[GoldIssue]:
    cfg = task.config.as_dict()
    match = _match(spec, cfg)
    if match is None:
        return [GoldIssue(task.id, "no_operation", "url", cfg["url"])]
    op = match.operation
    issues: list[GoldIssue] = []
    for loc, spec_loc in _SPEC_LOC.items():
        values = cfg.get(loc)
        if isinstance(values, dict):
            issues += [
                GoldIssue(task.id, "illegal_argument", loc, k)
                for k in values
                if not spec.is_legal_argument(op, spec_loc, k)
                and not undeclared_auth(spec, loc, str(k))
                and not (loc == "headers" and is_transport_header(str(k)))
            ]
    for spec_loc, names in spec.required_arguments(op).items():
        loc = {"header": "headers", "query": "params", "body": "data"}.get(spec_loc)
        if loc is None:
            continue  # path parameters are in the URL by construction
        values = cfg.get(loc)
        have = set(values) if isinstance(values, dict) else set()
        if loc == "headers":
            have = {h.lower() for h in have}
        if loc == "params":  # a pair written in the URL is sent too (AWS's ?Action=X)
            try:
                have |= {k for k, _ in parse_qsl(urlsplit(str(cfg["url"])).query, keep_blank_values=True)}
            except ValueError:
                pass
        for name in sorted(names):
            if (name.lower() if loc == "headers" else name) not in have:
                issues.append(GoldIssue(task.id, "missing_required", loc, name))
    return issues


# ------------------------------------------------------------------------------- cross-check
@dataclass(frozen=True)
class CrossFinding:
    """One problem of a row: ``kind`` (one of :data:`SPEC_CLASSES`, or an execution class of
    :mod:`callbench.tracks.webapi.synthesis.crosscheck`), ``where`` (``config.params.limit``) and
    a one-line ``detail``."""

    kind: str
    where: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail}


def _coerce_text(value: Any, schema: Any, depth: int = 0) -> Any:
    """A value that travels as text (query, path, header, form field) read as its schema types
    it: ``"20"`` is 20 for an integer, ``"true"`` True for a boolean; arrays and objects item by
    item. Text that does not read as the type stays text (and the schema then rejects it)."""
    if not isinstance(schema, Mapping) or depth > 16:
        return value
    types = schema_type(schema)
    if isinstance(value, str):
        if types & {"integer", "number"} and "string" not in types:
            try:
                num = float(value)
            except ValueError:
                return value
            if num.is_integer() and ("integer" in types or re.fullmatch(r"-?\d+", value.strip())):
                return int(num)
            return num
        if "boolean" in types and "string" not in types and value in ("true", "false"):
            return value == "true"
        return value
    if isinstance(value, list):
        items = schema.get("items")
        return [_coerce_text(v, items, depth + 1) for v in value]
    if isinstance(value, Mapping):
        props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        return {k: _coerce_text(v, props.get(k), depth + 1) for k, v in value.items()}
    return value


def _wire_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _text_problem(value: Any, schema: Any) -> str | None:
    """:func:`schema_problem` for a value that travels as text (query, header, path): read as the
    schema types it first; an ``enum`` is kept when the text on the wire is one of its members'
    texts (specs write ``type: boolean, enum: ['false', 'true']``: the same wire values)."""
    enum = schema.get("enum") if isinstance(schema, Mapping) else None
    if isinstance(enum, tuple | list) and enum and not isinstance(value, list | dict):
        if _wire_text(value) in {_wire_text(e) for e in enum if e is not None}:
            return None
    return schema_problem(_coerce_text(value, schema), schema)


def schema_problem(value: Any, schema: Any, *, root_required: bool = True) -> str | None:
    """Why ``value`` breaks ``schema`` (an OpenAPI schema), in one line, or None. Formats are not
    judged; a schema JSON Schema cannot read judges nothing, nor does a pattern RE2 cannot run
    (see :mod:`callbench.specs.patterns`).
    ``root_required=False``: a required property missing at the top is not this check's finding
    (``missing_required`` reports it)."""
    if not isinstance(schema, Mapping) or not schema:
        return None
    try:
        from callbench.specs.validator import SpecValidator  # patterns on RE2 (linear time)

        js = to_json_schema(schema)
        errors = sorted(SpecValidator(js).iter_errors(value), key=lambda e: (len(e.absolute_path), str(e.message)))
        if not root_required:
            errors = [e for e in errors if not (e.validator == "required" and not e.absolute_path)]
    except Exception:  # noqa: BLE001 - an unreadable schema (bad regex, odd keyword) checks nothing
        return None
    if not errors:
        return None
    e = errors[0]
    at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
    message = " ".join(str(e.message).split())
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{at.lstrip('.') + ': ' if at else ''}{message}"


def _body_media(op: Any, headers: Mapping[str, Any]) -> str | None:
    for k, v in headers.items():
        if str(k).lower() == "content-type" and isinstance(v, str):
            return v.split(";", 1)[0].strip().lower()
    return None


def _cookies(headers: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in headers.items():
        if str(k).lower() == "cookie" and isinstance(v, str):
            for part in v.split(";"):
                name, eq, value = part.strip().partition("=")
                if name and eq:
                    out[name] = unquote(value)
    return out


def _only_fixed_pairs(spec: ApiSpec, config: Mapping[str, Any], query: str) -> bool:
    """Is the URL's query exactly pairs that the matched operation's path key fixes (AWS's
    ``/?Action=AssumeRole&Version=2011-06-15``)? Those belong in the URL: they name the operation."""
    method = str(config.get("method", "")).lower()
    params = config.get("params") if isinstance(config.get("params"), Mapping) else None
    headers = config.get("headers") if isinstance(config.get("headers"), Mapping) else {}
    try:
        m = spec.match(method, str(config.get("url")), params, headers=headers, real_world=True, either_slash=True)
    except TypeError:  # a loader without query-aware matching
        return False
    if m is None:
        return False
    fixed = {name for name, _ in spec.fixed_query(m.operation)}
    return bool(fixed) and {k for k, _ in parse_qsl(query, keep_blank_values=True)} <= fixed


def cross_check_config(config: Mapping[str, Any], spec: ApiSpec) -> list[CrossFinding]:
    """Every problem of the request ``config`` (a row's gold) against ``spec``; see the module
    docstring for the classes. An empty list: the row keeps its spec."""
    out: list[CrossFinding] = []
    url = config.get("url")
    method = str(config.get("method", "")).lower()
    if not isinstance(url, str) or not url:
        return [CrossFinding("unknown_path", "config.url", "no URL")]
    try:
        query = urlsplit(url.strip()).query
    except ValueError:
        query = ""
    if query and not _only_fixed_pairs(spec, config, query):
        out.append(CrossFinding("query_in_url", "config.url", f"the URL carries the query '{query[:80]}'; put it in config.params"))
    if not _match_paths(spec, config):
        out.append(CrossFinding("unknown_path", "config.url", f"'{url}' matches no path of the spec"))
        return out
    match = _match(spec, config)
    if match is None:
        allowed = sorted({m.upper() for pm in _match_paths(spec, config) for m in pm.operations})
        out.append(CrossFinding("unknown_method", "config.method", f"{method.upper()} is not defined for '{url}' (it allows {', '.join(allowed)})"))
        return out
    op = match.operation
    where_op = f"{op.method.upper()} {op.path}"
    params = config.get("params") if isinstance(config.get("params"), Mapping) else {}
    headers = config.get("headers") if isinstance(config.get("headers"), Mapping) else {}
    data = config.get("data")
    # arguments the spec lacks
    for loc, values in (("params", params), ("headers", headers)):
        for name in values:
            if loc == "headers" and str(name).lower() == "cookie":
                continue  # cookie parameters are checked one by one below
            if loc == "headers" and is_transport_header(str(name)):
                continue  # Accept, Content-Type, User-Agent...: any client may send them anywhere
            if not spec.is_legal_argument(op, _SPEC_LOC[loc], str(name)) and not undeclared_auth(spec, loc, str(name)):
                # an Authorization header on a spec declaring no security is real code's credential
                # (scored as undeclared, not illegal: issue 29), not a gold the spec refutes
                out.append(CrossFinding("unknown_argument", f"config.{loc}.{name}", f"not an argument of {where_op}"))
    if isinstance(data, Mapping):
        for name in data:
            if not spec.is_legal_argument(op, "body", str(name)):
                out.append(CrossFinding("unknown_argument", f"config.data.{name}", f"not a body property of {where_op}"))
    elif data is not None and op.request_body is None:
        out.append(CrossFinding("unknown_argument", "config.data", f"{where_op} takes no body"))
    cookies = _cookies(headers)
    for name in cookies:
        if op.parameter("cookie", name) is None and not spec.is_credential("cookie", name):
            out.append(CrossFinding("unknown_argument", f"config.headers.Cookie.{name}", f"not a cookie parameter of {where_op}"))
    # required arguments missing (a query pair written in the URL counts: it is on the wire)
    url_names = {k for k, _ in parse_qsl(query, keep_blank_values=True)}
    lower_headers = {str(h).lower() for h in headers}
    for p in op.parameters:
        if not p.required:
            continue
        if p.location == "query":
            present = p.name in params or p.name in url_names or (
                p.style == "deepObject" and any(str(k).startswith(p.name + "[") for k in params)
            )
            if not present and p.style in (None, "form") and p.explode is not False and "object" in schema_type(p.schema):
                present = True  # an exploded object travels as its properties: not checkable by name
            where = f"config.params.{p.name}"
        elif p.location == "header":
            present, where = p.name.lower() in lower_headers, f"config.headers.{p.name}"
        elif p.location == "cookie":
            present, where = p.name in cookies, f"config.headers.Cookie.{p.name}"
        else:
            continue  # path parameters are in the URL by construction
        if not present:
            out.append(CrossFinding("missing_required", where, f"required {p.location} parameter '{p.name}' of {where_op} is missing"))
    media = _body_media(op, headers)
    body_schema = op.body_schema(media) if op.request_body is not None else None
    if body_schema is None and op.request_body is not None:
        body_schema = op.body_schema()
    required_body = op.body_required(media) if op.request_body is not None and body_schema is not None else frozenset()
    if op.request_body is not None and op.request_body.required and data is None:
        out.append(CrossFinding("missing_required", "config.data", f"{where_op} requires a body"))
    elif required_body and isinstance(data, Mapping | type(None)):
        have = set(data) if isinstance(data, Mapping) else set()
        for name in sorted(required_body - have):
            out.append(CrossFinding("missing_required", f"config.data.{name}", f"required body property '{name}' of {where_op} is missing"))
    # values that break their schema
    for name, value in params.items():
        p = op.parameter("query", str(name))
        if p is None:
            continue
        wire = value
        if isinstance(value, str) and "array" in schema_type(p.schema):
            sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(p.style or "", ",")
            wire = value.split(sep) if value else []
        problem = _text_problem(wire, p.schema)
        if problem:
            out.append(CrossFinding("schema_violation", f"config.params.{name}", problem))
    for name, value in headers.items():
        p = op.parameter("header", str(name), case_insensitive=True)
        if p is None or str(name).lower() in ("accept", "content-type", "authorization"):
            continue
        wire = value.split(",") if isinstance(value, str) and "array" in schema_type(p.schema) else value
        problem = _text_problem(wire, p.schema)
        if problem:
            out.append(CrossFinding("schema_violation", f"config.headers.{name}", problem))
    for name, text in (match.path_params or {}).items():
        p = op.parameter("path", name)
        if p is None or not isinstance(text, str) or (p.style or "simple") != "simple":
            continue
        wire: Any = text.split(",") if "array" in schema_type(p.schema) else text
        problem = _text_problem(wire, p.schema)
        if problem:
            out.append(CrossFinding("schema_violation", f"config.url ({{{name}}})", problem))
    if data is not None and isinstance(body_schema, Mapping):
        value = _coerce_text(data, body_schema) if media in _FORM_TYPES else data
        problem = schema_problem(value, body_schema, root_required=not isinstance(data, Mapping))
        if problem:
            out.append(CrossFinding("schema_violation", "config.data", problem))
    return out
