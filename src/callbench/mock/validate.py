"""Checking one request against its operation: parameters (present when required, of the declared
type, declared at all) and the JSON body (against the body schema, with ``jsonschema``).

Problems are :class:`RequestError` with the status to answer and a one-line reason: 400 for a
missing, undeclared or mistyped parameter and malformed JSON, 415 for a body type the operation
does not take, 422 for a body that parses but does not fit the schema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from jsonschema.exceptions import best_match

from callbench.services.json_http import strict_json
from callbench.specs.openapi import ApiSpec, Operation, Parameter
from callbench.specs.schema import schema_type, to_json_schema
from callbench.specs.validator import SpecValidator

IGNORED_HEADERS = ("accept", "content-type", "authorization")


class RequestError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


_VALIDATORS: dict[int, tuple[Any, Any]] = {}
_MAX_VALIDATORS = 20_000


def validator(schema: Mapping[str, Any]) -> Any:
    """A cached validator (:data:`SpecValidator`) for a resolved OpenAPI schema (keyed by
    identity; the schema is kept alive with it, so the id cannot be reused)."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        hit = (schema, SpecValidator(to_json_schema(schema)))
        _VALIDATORS[id(schema)] = hit
    return hit[1]


def problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """The most relevant validation error of ``value`` as ``at <path>: <message>``, or None."""
    try:
        err = best_match(validator(schema).iter_errors(value))
    except RecursionError:
        return "nested too deeply to check"
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path)
    msg = err.message if len(err.message) <= 200 else err.message[:197] + "..."
    return f"at /{where}: {msg}" if where else msg


def _scalar(text: str, schema: Mapping[str, Any]) -> Any:
    types = schema_type(schema) - {"null"}
    if "integer" in types and text.lstrip("-").isdigit():
        return int(text)
    if ("number" in types or "integer" in types) and text:
        try:
            value = float(text)
        except ValueError:
            return text
        if math.isfinite(value):
            return int(value) if value.is_integer() and "integer" in types else value
        return text
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    return text


def coerce(p: Parameter, values: list[str]) -> Any:
    """Wire text -> the typed value the schema describes (arrays split by the style's delimiter
    or given as repeated pairs)."""
    schema = p.schema or {}
    if "array" in schema_type(schema):
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
        parts = values if len(values) > 1 or p.delimiter is None else values[0].split(p.delimiter)
        return [_scalar(v, items) for v in parts]
    return _scalar(values[-1], schema)


def query_pairs(query: str) -> dict[str, list[str]]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, errors="strict", max_num_fields=200)
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, f"bad query string: {e}") from None
    out: dict[str, list[str]] = {}
    for k, v in pairs:
        out.setdefault(k, []).append(v)
    return out


def check_parameters(
    spec: ApiSpec, op: Operation, path_params: Mapping[str, str], query: dict[str, list[str]], headers: Any
) -> dict[str, Any]:
    """Typed values of the declared path, query and header parameters; raises on the first problem."""
    out: dict[str, Any] = {}
    for name in query:
        if not spec.is_legal_argument(op, "query", name):
            raise RequestError(400, f"query parameter '{name}' is not declared by {op.method.upper()} {op.path}")
    for p in op.parameters:
        if p.location == "path":
            raw = [path_params.get(p.name, "")]
        elif p.location == "query":
            raw = query.get(p.name) or []
        elif p.location == "header":
            if p.name.lower() in IGNORED_HEADERS:  # OpenAPI: such a definition SHALL be ignored
                continue
            got = headers.get_all(p.name) if headers is not None else None
            raw = list(got or [])
        else:
            continue
        if not raw:
            if p.required:
                raise RequestError(400, f"missing required {p.location} parameter '{p.name}'")
            continue
        out[p.name] = check_parameter(p, raw)
    return out


def check_parameter(p: Parameter, raw: list[str]) -> Any:
    """The typed value of one parameter sent as ``raw`` (its wire texts); raises when it does not fit."""
    value = coerce(p, raw)
    if p.schema:
        why = problem(value, p.schema)
        if why is not None:
            raise RequestError(400, f"{p.location} parameter '{p.name}': {why}")
    return value


def _form_value(text: str, schema: Mapping[str, Any]) -> Any:
    """One form value: an object (or anything that is not a scalar) is JSON text, OpenAPI's default
    encoding of such a property (``application/json``); text that is not JSON stays text (and so
    fails the schema's type)."""
    types = schema_type(schema) - {"null"}
    if types and not types & {"string", "integer", "number", "boolean"}:
        try:
            return strict_json(text)
        except (ValueError, RecursionError):
            return text
    return _scalar(text, schema)


def form_fields(pairs: list[tuple[str, str]], schema: Any) -> dict[str, Any]:
    """The typed fields of a form body (``application/x-www-form-urlencoded``): a property the
    schema declares as an array collects its repeated pairs (``users=a&users=b``, the form style
    exploded, OpenAPI's default), each item typed by ``items``; other properties take their last
    pair, typed by the property's schema (see :func:`_form_value`)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    out: dict[str, Any] = {}
    for k, v in pairs:
        ps = props.get(k) if isinstance(props.get(k), Mapping) else {}
        if "array" in schema_type(ps) and not schema_type(ps) - {"array", "null"}:
            items = ps.get("items") if isinstance(ps.get("items"), Mapping) else {}
            prev = out.get(k)
            out[k] = (prev if isinstance(prev, list) else []) + [_form_value(v, items)]
        else:
            out[k] = _form_value(v, ps)
    return out


def _media(op: Operation) -> tuple[str | None, str | None]:
    """The declared JSON and form media types of the body (None: not offered)."""
    js = form = None
    for mt in op.request_body.content if op.request_body else ():
        bare = mt.split(";", 1)[0].strip().lower()
        if js is None and (bare == "application/json" or bare.endswith("+json") or bare == "*/*"):
            js = mt
        elif form is None and bare == "application/x-www-form-urlencoded":
            form = mt
    return js, form




def check_body(op: Operation, content_type: str | None, raw: bytes) -> Any:
    """The parsed body (None when absent); raises on a missing, malformed or non-conforming one."""
    rb = op.request_body
    if not raw.strip():
        if rb is not None and rb.required:
            raise RequestError(400, f"missing request body: {op.method.upper()} {op.path} requires one")
        return None
    if rb is None or not rb.content:
        raise RequestError(400, f"{op.method.upper()} {op.path} takes no request body")
    js, form = _media(op)
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    if ctype == "application/x-www-form-urlencoded" and form is not None:
        schema = rb.content[form]
        try:
            pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict", max_num_fields=1000)
        except (ValueError, UnicodeDecodeError) as e:
            raise RequestError(400, f"malformed form body: {e}") from None
        body: Any = form_fields(pairs, schema)
    elif js is not None and (not ctype or ctype == "application/json" or ctype.endswith("+json")):
        schema = rb.content[js]
        try:
            body = strict_json(raw)
        except RecursionError:
            raise RequestError(400, "malformed JSON: nested too deeply") from None
        except (ValueError, UnicodeDecodeError) as e:
            raise RequestError(400, f"malformed JSON: {e}") from None
    else:
        offered = ", ".join(rb.content)
        raise RequestError(415, f"Content-Type {ctype or '(none)'!r} is not accepted here; send one of: {offered}")
    if isinstance(schema, Mapping) and schema:
        why = problem(body, schema)
        if why is not None:
            raise RequestError(422, f"request body {why}")
    return body


# -- what the mock says to a value as a program sends it --------------------------------------
# (the stateful tasks' programs use ``requests``: a value in an f-string path, ``params=``,
# ``json=`` or ``data=``); the generator draws argument values the mock accepts with these.


def _encoded(data: Mapping[str, Any]) -> str:
    """``data`` as ``requests`` encodes ``params=`` and ``data=`` (a list repeats its key, None is left out)."""
    from requests.models import RequestEncodingMixin

    return RequestEncodingMixin._encode_params(dict(data))


def sent_path_problem(p: Parameter, value: Any) -> str | None:
    """Why the mock refuses ``value`` written into the path (``f".../{value}"``) for ``p``, or None."""
    text = str(value)
    if not text or any(c in text for c in "/?#%"):
        return f"path parameter '{p.name}': {text!r} cannot be one path segment"
    try:
        check_parameter(p, [text])
    except RequestError as e:
        return e.message
    return None


def sent_query_problem(p: Parameter, value: Any) -> str | None:
    """Why the mock refuses ``value`` sent as ``params={name: value}`` for ``p``, or None."""
    raw = query_pairs(_encoded({p.name: value})).get(p.name) or []
    if not raw:
        return f"missing required query parameter '{p.name}'" if p.required else None
    try:
        check_parameter(p, raw)
    except RequestError as e:
        return e.message
    return None


def sent_body_problem(op: Operation, value: Any, *, form: bool = False) -> str | None:
    """Why the mock refuses ``value`` sent as ``json=value`` (``form``: ``data=value``), or None."""
    try:
        if form:
            if not isinstance(value, Mapping):
                return "a form body is a mapping of fields"
            raw = _encoded(value).encode("utf-8")
            check_body(op, "application/x-www-form-urlencoded", raw)
        else:
            raw = json.dumps(value, allow_nan=False).encode("utf-8")
            check_body(op, "application/json", raw)
    except (TypeError, ValueError) as e:
        return f"not JSON: {e}"
    except RequestError as e:
        return e.message
    return None
