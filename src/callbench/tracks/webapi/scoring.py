"""Compare a captured request with the expected one and the API's spec.

Two modes:

``compat`` here applies the published WAPIIBench scorer's definitions to the request callbench's
own run recorded. Runs score compat with the published scorer end to end wherever it can run
(:mod:`callbench.tracks.webapi.upstream_scorer`: the text it cuts, mock.js's log, its path
matching); this function is compat for the other tasks (own starters, synthesized tasks, specs
without exactly one server). The definitions:
  * URL verdict: *correct* if the expected path template is among the templates the actual URL
    matches, *illegal* if the actual URL matches no template, else *wrong*. Method verdict:
    *correct* if equal, *illegal* if no matched template has that method, else *wrong*.
  * Arguments live in four locations: ``headers``, ``params`` (query), ``path_params`` (values
    taken from the URL via the first matching template) and ``data`` (body). Expected arguments are
    *correct*, *incorrect_value* or *missing*; extra ones are *unnecessary* if the spec allows them
    for the **expected** endpoint, else *illegal*. The ``Accept`` and ``Content-Type`` headers are
    ignored (matched case-sensitively). Values compare with Python ``==`` on decoded JSON
    (so ``50 != "50"`` but ``True == 1``).
  * A sample is *correct* if the endpoint is correct and every counted argument has the correct
    value; *illegal* if the endpoint or any argument is illegal; otherwise *wrong*.

``strict`` (default) keeps those definitions and fixes these points:
  * values compare schema-aware: where the spec types a parameter as integer/number/boolean, a
    string that spells the same value is equal (query strings and form bodies carry only strings);
    booleans never equal numbers; query, path and header values are also equal when they are the
    same string on the wire (``159874`` vs ``'159874'``);
  * header names compare case-insensitively (HTTP semantics), also for the ignored headers;
  * the ignored headers are all the transport headers any client may send
    (:data:`~callbench.specs.openapi.TRANSPORT_HEADERS`): besides ``Accept`` and ``Content-Type``
    (on any method), ``User-Agent``, ``Accept-Encoding`` and ``Accept-Language`` where the
    operation does not declare them (they describe the client, not the call; GitHub's API wants
    a ``User-Agent`` its spec does not declare); a declared one is an argument like any other;
  * URLs are read by the real-world rules (:meth:`ApiSpec.match_paths`' ``real_world``): a host
    of the server host's registrable domain is that server (``api.trello.com`` for a spec whose
    server is ``trello.com``), where the exact rules match nothing; the task's own URL (and a
    request to exactly that URL) also with one trailing ``/`` more or less -- any other trailing
    slash the spec does not have stays an illegal URL, as issue 26 decided;
  * extra arguments are judged legal or illegal against the spec of the **generated** endpoint
    (falling back to the expected one when the generated endpoint does not exist);
  * an extra query parameter or header written as ``key: null`` is ignored (axios sends nothing);
    in a body it is counted, since JSON bodies carry the null;
  * a value must keep the bounds the spec's schema sets for it (``enum``/``const``, ``minimum``/
    ``maximum``/``exclusive*``, ``minLength``/``maxLength``, ``pattern``, ``minItems``/``maxItems``,
    also inside arrays and objects: :func:`callbench.specs.schema.bounds_violation`), read as the
    spec types it (in query, path and headers: the string sent on the wire). An extra argument
    the spec allows but whose value breaks its bounds is *illegal*, not *unnecessary*; an expected
    argument with such a value stays *incorrect_value* (it is still the argument the task asked
    for) and is marked ``out_of_bounds``, which makes the sample *illegal*. Bounds are judged
    against the generated endpoint's spec, like legality; a correct value is never re-judged
    (gold against gold stays correct);
  * an array parameter's value is read as the items it sends: a string joined
    by its delimiter (``'snippet,id'`` for style form without explode, ``|`` for pipeDelimited)
    or a lone item (form with explode) is an array.

In both modes the URL's own query pairs count as ``params`` (``'/x?a=1'`` and ``params: {a: 1}``
send the same request, and the recorder files a URL's query under ``params``), and a URL matches
a path key that fixes a query (``/?action=balance``, APIs.guru's
``/#Action=X``) only when the request carries those pairs, in the URL or in ``params``; a path
key with a fragment label that names a header (AWS' ``/#X-Amz-Target=Svc.Op``) matches a URL
without the fragment (axios never sends one) when the request carries that header.

Credentials in ``strict`` (real code passes keys and variables, so a credential present in its
place does not make the call wrong; issue 29):
  * an expected credential argument is *correct* whatever its value, when the request carries a
    non-empty string there, keeping the expected value's scheme word where it has one
    (``'Bearer <token>'`` takes ``'Bearer ' + token`` or ``'bearer ee97'``, not ``'Basic dTpw'``
    nor ``'ee97'``); the argument is noted ``credential value not compared`` when the values differ;
  * a security requirement is an OR of alternatives (each an AND of schemes): expected credentials
    that are missing are *correct* when the request carries every credential of another accepted
    alternative of the generated endpoint (an API key in the query instead of an OAuth
    ``Authorization`` header; a declared conventional credential parameter such as Google's
    ``key`` counts as one, see :func:`callbench.specs.credentials.credential_requirement`);
    the alternative's own arguments are then part of that verdict (noted
    ``credential alternative: params.key``), not extra arguments;
  * on a spec that declares no security scheme at all (GitHub's in the APIs.guru directory), an
    ``Authorization`` header is a credential nobody declared: an extra one is *unnecessary*
    (noted ``undeclared credential``), not *illegal*, and an expected one compares as above.
An expected credential sent with an empty or non-string value, or with another scheme word, is
*incorrect_value* as before; compat keeps the published rules (values compared with ``==``).

Both modes mark each header/query argument that is a *credential* (where one of the spec's
security schemes puts one: the ``Authorization`` header for http/oauth2/openIdConnect, an apiKey's
name in its place; compat compares the names exactly, strict header names case-insensitively), so
that :func:`correct_except_credentials` can tell samples that fail only on credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from callbench.specs import ApiSpec, schema_type
from callbench.specs.credentials import credential_requirement
from callbench.specs.openapi import is_transport_header
from callbench.specs.schema import bounds_violation

Scoring = Literal["strict", "compat"]
SCORING_MODES: tuple[str, ...] = ("strict", "compat")
LOCATIONS = ("headers", "params", "path_params", "data")
_SPEC_LOCATION = {"headers": "header", "params": "query", "path_params": "path", "data": "body"}
SPECIAL_HEADERS = ("Accept", "Content-Type")

# Error verdicts of samples whose code produced no request to compare.
ERROR_VERDICTS = ("timeout", "unsatisfiable", "no_request", "incomplete_request", "runtime_error")


@dataclass
class ArgumentVerdict:
    location: str
    name: str
    verdict: str  # correct | incorrect_value | missing | unnecessary | illegal
    expected: Any = None
    actual: Any = None
    credential: bool | None = None  # a security scheme's credential? None: scored before this was kept
    # strict: why the actual value breaks the spec's schema bounds (one line), else None
    out_of_bounds: str | None = None
    # strict: how a credential was judged when not by its value (see the module docstring)
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "location": self.location,
            "name": self.name,
            "verdict": self.verdict,
            "expected": self.expected,
            "actual": self.actual,
            "credential": self.credential,
        }
        if self.out_of_bounds is not None:  # stored rows without bounds problems stay as they were
            out["out_of_bounds"] = self.out_of_bounds
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass
class SampleVerdict:
    """Everything the aggregate metrics need about one sample."""

    error: str | None = None
    url: str | None = None
    method: str | None = None
    endpoint: str | None = None
    sample: str = "nonexecutable"
    arguments: list[ArgumentVerdict] = field(default_factory=list)
    # For non-executable samples: expected argument counts per location (WAPIIBench keeps these).
    expected_counts: dict[str, int] = field(default_factory=dict)
    # compat only: the published scorer never sees this sample (its code ran without error and
    # sent no request, so no config file was written): it is in no figure, no denominator.
    dropped: bool = False

    def as_dict(self) -> dict[str, Any]:
        out = {
            "error": self.error,
            "url": self.url,
            "method": self.method,
            "endpoint": self.endpoint,
            "sample": self.sample,
            "arguments": [a.as_dict() for a in self.arguments],
            "expected_counts": self.expected_counts,
        }
        if self.dropped:  # stored rows of other samples stay as they were
            out["dropped"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleVerdict:
        return cls(
            error=d.get("error"),
            url=d.get("url"),
            method=d.get("method"),
            endpoint=d.get("endpoint"),
            sample=d.get("sample", "nonexecutable"),
            arguments=[ArgumentVerdict(**a) for a in d.get("arguments", [])],
            expected_counts=dict(d.get("expected_counts", {})),
            dropped=bool(d.get("dropped", False)),
        )


def correct_except_credentials(v: SampleVerdict) -> bool | None:
    """Is the request right in every respect but its credentials? Endpoint correct and every
    counted argument correct, credential arguments (missing, wrong or extra) not looked at.
    Correct samples are included. None when a non-correct argument was scored before credentials
    were marked (old runs), so the answer is unknown."""
    if v.error is not None or v.endpoint != "correct":
        return False
    unknown = False
    for a in v.arguments:
        if a.verdict == "correct" or a.credential:
            continue
        if a.credential is None:
            unknown = True
            continue
        return False
    return None if unknown else True


def _is_special(name: str, mode: Scoring, op: Any = None) -> bool:
    """A header that is not an argument of the call. Compat: ``Accept`` and ``Content-Type``
    (exact names). Strict: those two (any case) and the other transport headers any client may
    send (:data:`~callbench.specs.openapi.TRANSPORT_HEADERS`: ``User-Agent``, ``Accept-Encoding``,
    ``Accept-Language``) where ``op`` does not declare them as header parameters."""
    if mode == "compat":
        return name in SPECIAL_HEADERS
    low = name.lower()
    if low in ("accept", "content-type"):
        return True
    return is_transport_header(low) and (op is None or op.parameter("header", name, case_insensitive=True) is None)


def _with_path_params(
    config: dict[str, Any], spec: ApiSpec, mode: Scoring = "compat", expected: bool = False
) -> tuple[dict[str, Any], list[Any]]:
    """Copy of ``config`` with ``path_params`` from its first matching template, and all matches.

    The query (the URL's own and ``params``) takes part in matching: a path key that fixes query
    pairs (``/?action=balance``) matches only a request carrying them. The URL's query pairs are
    read as ``params`` (they are the same query on the wire; the recorder does the same to the
    request the code sends), so ``'/?action=balance'`` and ``params: {action: 'balance'}`` are the
    same argument. (Both modes: no WAPIIBench row has a query in its URL, so compat's figures are
    those of the published scorer.)

    Strict reads URLs by the real-world rules (``ApiSpec.match_paths(..., real_world=True)``: a
    host of the server's registrable domain). ``expected`` (the task's own URL, or a URL equal to
    it): also one trailing ``/`` more or less (``either_slash``), in both modes where nothing else
    matches (a real-world row's gold: without it there is no expected template to score against).
    A trailing slash the spec lacks in any other URL stays illegal (issue 26)."""
    out = dict(config)
    url = config.get("url")
    params = config.get("params") if isinstance(config.get("params"), dict) else None
    headers = config.get("headers") if isinstance(config.get("headers"), dict) else {}
    matches = []
    if isinstance(url, str) and url:
        real = mode == "strict"
        matches = spec.match_paths(url, params, headers=headers, real_world=real)
        if not matches and expected:
            matches = spec.match_paths(url, params, headers=headers, real_world=True, either_slash=True)
    if matches and matches[0].path_params:
        out["path_params"] = dict(matches[0].path_params)
    if isinstance(url, str) and "?" in url:
        try:
            query = urlsplit(url.strip()).query
        except ValueError:
            query = ""
        pairs: dict[str, Any] = {}
        for k, v in parse_qsl(query, keep_blank_values=True):
            pairs[k] = (
                [*pairs[k], v] if isinstance(pairs.get(k), list) else [pairs[k], v] if k in pairs else v
            )
        if pairs and (params is not None or config.get("params") is None):
            out["params"] = {**pairs, **(params or {})}
    return out, matches


def _same_url(actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Does the request go to the task's own URL (scheme, host, path; the query aside)? Then it
    is read as the expected URL is (:func:`_with_path_params`' ``expected``)."""
    a, e = actual.get("url"), expected.get("url")
    if not isinstance(a, str) or not isinstance(e, str):
        return False
    try:
        pa, pe = urlsplit(a.strip()), urlsplit(e.strip())
    except ValueError:
        return False
    return (pa.scheme.lower(), pa.netloc.lower(), pa.path) == (pe.scheme.lower(), pe.netloc.lower(), pe.path)


def expected_argument_counts(expected: dict[str, Any], spec: ApiSpec, mode: Scoring) -> dict[str, int]:
    """Argument counts per location, special headers excluded (used for non-executable samples)."""
    exp, matches = _with_path_params(expected, spec, mode, expected=True)
    op = matches[0].operations.get(str(exp.get("method", "")).lower()) if matches else None
    counts: dict[str, int] = {}
    for loc in LOCATIONS:
        value = exp.get(loc)
        if isinstance(value, dict):
            n = len(value)
            if loc == "headers":
                n -= sum(1 for k in value if _is_special(k, mode, op))
            counts[loc] = n
    return counts


def error_verdict(error: str, expected: dict[str, Any], spec: ApiSpec, mode: Scoring) -> SampleVerdict:
    if error not in ERROR_VERDICTS:
        raise ValueError(f"unknown error verdict {error!r}")
    return SampleVerdict(error=error, expected_counts=expected_argument_counts(expected, spec, mode))


# ---------------------------------------------------------------- value comparison


def _strict_equal(a: Any, b: Any) -> bool:
    """Deep equality that keeps booleans apart from numbers (Python's ``True == 1`` is a quirk)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _coerce(value: Any, schema: Any) -> Any:
    """Read a string the way the spec's type says (query strings and form bodies are all strings)."""
    if schema is None:
        return value
    types = schema_type(schema)
    if isinstance(value, str):
        if types & {"integer", "number"}:
            try:
                num = float(value)
            except ValueError:
                pass
            else:
                if "integer" in types and num.is_integer():
                    return int(num)
                if "number" in types:
                    return num
        if "boolean" in types and value in ("true", "false"):
            return value == "true"
    if isinstance(value, list) and "array" in types:
        items = schema.get("items") if hasattr(schema, "get") else None
        return [_coerce(v, items) for v in value]
    if isinstance(value, dict) and "object" in types and hasattr(schema, "get"):
        props = schema.get("properties") or {}
        return {k: _coerce(v, props.get(k)) for k, v in value.items()}
    return value


def _wire(value: Any) -> Any:
    """A query, path or header value as axios puts it on the wire (JavaScript ``String(v)``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def values_equal(expected: Any, actual: Any, schema: Any, mode: Scoring, location: str = "data") -> bool:
    """Compat: Python ``==``. Strict: equal after reading both as the spec's type; for query, path
    and header values also equal when they are the same string on the wire (``159874`` and
    ``'159874'`` send identical requests)."""
    if mode == "compat":
        return expected == actual
    if _strict_equal(_coerce(expected, schema), _coerce(actual, schema)):
        return True
    if location in ("params", "path_params", "headers") and not isinstance(expected, dict | list):
        return _strict_equal(_wire(expected), _wire(actual))
    return False


def _as_wire_array(value: Any, spec_op: Any, location: str, name: str) -> Any:
    """An array parameter's value as the items it sends (strict): a string joined by the
    parameter's delimiter (``'snippet,id'`` without explode) is its items, a lone item (form
    with explode: one ``name=value`` pair) is a one-item array; other values are kept."""
    if (
        location not in ("params", "headers", "path_params")
        or spec_op is None
        or isinstance(value, list | dict)
    ):
        return value
    param = spec_op.parameter(_SPEC_LOCATION[location], name, case_insensitive=(location == "headers"))
    if param is None or not isinstance(param.schema, Mapping) or "array" not in schema_type(param.schema):
        return value
    if value is None:
        return value
    delim = param.delimiter
    if delim is not None and isinstance(value, str):
        return value.split(delim) if value else []
    return [value]


def _flatten_deep_objects(values: Any, op: Any) -> Any:
    """``params`` with each deepObject-style object parameter's value written as the pairs it
    sends (``filter: {a: 1}`` -> ``'filter[a]': 1``), so both spellings compare equal (strict)."""
    if op is None or not isinstance(values, dict):
        return values
    out: dict[str, Any] = {}
    for k, v in values.items():
        p = op.parameter("query", k)
        if isinstance(v, dict) and p is not None and p.style == "deepObject":
            for sub, x in v.items():
                out.setdefault(f"{k}[{sub}]", x)
        else:
            out[k] = v
    return out


def _param_schema(spec: ApiSpec, op: Any, location: str, name: str) -> Any:
    if op is None:
        return None
    if location == "data":
        props = op.body_properties()
        return props.get(name)
    param = op.parameter(_SPEC_LOCATION[location], name, case_insensitive=(location == "headers"))
    return param.schema if param is not None else None


# ---------------------------------------------------------------- legality


def _compat_legal(spec: ApiSpec, op: Any, location: str, name: str, method: str) -> bool:
    """The published rule: Accept always; Content-Type for put/post/patch; credentials of any
    security scheme; otherwise the parameter (exact name) or body property of the expected op."""
    if location == "headers" and name == "Accept":
        return True
    if location == "headers" and name == "Content-Type":
        return method in ("put", "post", "patch")
    if op is None:
        return False
    if location in ("headers", "params") and _compat_credential(spec, _SPEC_LOCATION[location], name):
        return True
    if location == "data":
        return name in op.body_properties()
    return op.parameter(_SPEC_LOCATION[location], name, case_insensitive=False) is not None


def _compat_credential(spec: ApiSpec, location: str, name: str) -> bool:
    """Published rule, names compared exactly: apiKey -> its name in its location; http, oauth2
    and openIdConnect -> the header ``Authorization``."""
    for scheme in spec.security_schemes.values():
        kind = scheme.get("type")
        if kind == "apiKey" and scheme.get("in") == location and scheme.get("name") == name:
            return True
        if kind in ("http", "oauth2", "openIdConnect") and location == "header" and name == "Authorization":
            return True
    return False


def _is_credential(spec: ApiSpec, location: str, name: str, mode: Scoring) -> bool:
    """Is ``name`` in ``location`` a place one of the spec's security schemes puts a credential?
    Strict: also ``Authorization`` on a spec declaring no scheme (:func:`undeclared_auth`)."""
    if location not in ("headers", "params"):
        return False
    if mode == "compat":
        return _compat_credential(spec, _SPEC_LOCATION[location], name)
    return spec.is_credential(_SPEC_LOCATION[location], name) or undeclared_auth(spec, location, name)


def undeclared_auth(spec: ApiSpec, location: str, name: str) -> bool:
    """An ``Authorization`` header on a spec that declares no security scheme (strict)."""
    return location == "headers" and name.lower() == "authorization" and not spec.security_schemes


_SCHEME_WORD = re.compile(r"([A-Za-z][A-Za-z0-9_-]*) +\S")


def credential_value_ok(expected: Any, actual: Any) -> bool:
    """Strict: does ``actual`` stand in a credential's place as well as ``expected``? A non-empty
    string, starting with the expected value's scheme word (``Bearer``, ``Basic``, compared
    case-insensitively) where the expected value has one; the secret itself is not compared."""
    if not isinstance(actual, str) or not actual.strip():
        return False
    m = _SCHEME_WORD.match(expected) if isinstance(expected, str) else None
    if m is None:
        return True
    word = m.group(1).lower()
    head = actual.strip().split(" ", 1)
    return len(head) == 2 and head[0].lower() == word and bool(head[1].strip())


def _credential_alternative(
    spec: ApiSpec, op: Any, act: dict[str, Any]
) -> tuple[str, list[tuple[str, str]]] | None:
    """The first accepted security alternative of ``op`` whose credentials the request ``act``
    all carries (non-empty strings in their places), as (its description, (location, key as
    written) of each), or None."""
    if op is None:
        return None
    for alt in credential_requirement(spec, op, real=True):
        found: list[tuple[str, str]] = []
        for cred in alt:
            values = act.get(cred.loc)
            key = _find_key(values, cred.name, cred.loc == "headers") if isinstance(values, dict) else None
            if key is None or not credential_value_ok(None, values[key]):
                break
            found.append((cred.loc, key))
        else:
            return ", ".join(f"{loc}.{key}" for loc, key in found), found
    return None


def _strict_legal(spec: ApiSpec, op: Any, location: str, name: str) -> bool:
    if op is None:
        return False
    return spec.is_legal_argument(op, _SPEC_LOCATION[location], name)


def out_of_bounds(spec: ApiSpec, op: Any, location: str, name: str, value: Any) -> str | None:
    """Why ``value`` of argument ``name`` breaks the bounds of its schema in ``op`` (one line,
    prefixed with the argument), or None: no schema, no bounds, or kept. The value is read as the
    spec types it; a query, path or header value as it goes on the wire (a string: ``12`` is
    ``"12"``), then read as the spec types it."""
    schema = _param_schema(spec, op, location, name)
    if not isinstance(schema, Mapping) or not schema:
        return None
    value = _as_wire_array(value, op, location, name)
    if location in ("params", "path_params", "headers"):
        value = _wire(value)
    problem = bounds_violation(_coerce(value, schema), schema)
    return None if problem is None else f"{name}: {problem}"


# ---------------------------------------------------------------- comparison


def _find_key(d: dict[str, Any], name: str, case_insensitive: bool) -> str | None:
    if name in d:
        return name
    if case_insensitive:
        low = name.lower()
        for k in d:
            if k.lower() == low:
                return k
    return None


def compare_requests(
    expected: dict[str, Any], actual: dict[str, Any], spec: ApiSpec, mode: Scoring = "strict"
) -> SampleVerdict:
    """Verdicts for an executed sample whose code produced the request ``actual``."""
    exp, exp_matches = _with_path_params(expected, spec, mode, expected=True)
    act, act_matches = _with_path_params(actual, spec, mode, expected=_same_url(actual, expected))
    if not exp_matches:
        raise ValueError(f"expected URL {expected.get('url')!r} matches no path of the spec {spec.source}")
    exp_path = exp_matches[0]
    exp_method = exp["method"]
    exp_op = exp_path.operations.get(exp_method)
    act_method = str(act.get("method", "get")).lower()

    act_templates = [m.template for m in act_matches]
    if exp_path.template in act_templates:
        url = "correct"
    elif not act_matches:
        url = "illegal"
    else:
        url = "wrong"
    if act_method == exp_method:
        method = "correct"
    elif not act_matches or all(act_method not in m.operations for m in act_matches):
        method = "illegal"
    else:
        method = "wrong"
    if url == "correct" and method == "correct":
        endpoint = "correct"
    elif url == "illegal" or method == "illegal":
        endpoint = "illegal"
    else:
        endpoint = "wrong"

    # The operation extra arguments are judged against.
    act_op = None
    for m in act_matches:
        if act_method in m.operations:
            act_op = m.operations[act_method]
            break
    judge_op = exp_op if mode == "compat" else (act_op or exp_op)

    # strict: expected credentials the request leaves out, satisfied by another alternative
    alternative: tuple[str, list[tuple[str, str]]] | None = None
    if mode == "strict":
        left_out = [
            (loc, name)
            for loc in ("headers", "params")
            if isinstance(exp.get(loc), dict)
            for name in exp[loc]
            if _is_credential(spec, loc, name, mode)
            and not (loc == "headers" and _is_special(name, mode, exp_op))
            and _find_key(act.get(loc) if isinstance(act.get(loc), dict) else {}, name, loc == "headers") is None
        ]
        if left_out:
            alternative = _credential_alternative(spec, judge_op, act)
    consumed = {(loc, key) for loc, key in alternative[1]} if alternative else set()

    args: list[ArgumentVerdict] = []
    for loc in LOCATIONS:
        exp_values = exp.get(loc)
        act_values = act.get(loc)
        if exp_values is not None and not isinstance(exp_values, dict):
            exp_values = {"(body)": exp_values}
        if act_values is not None and not isinstance(act_values, dict):
            # A non-object body (string, array) cannot be matched by name: one illegal argument.
            act_values = {"(body)": act_values}
        exp_values = exp_values or {}
        act_values = act_values or {}
        if loc == "params" and mode == "strict":
            exp_values = _flatten_deep_objects(exp_values, exp_op)
            act_values = _flatten_deep_objects(act_values, judge_op)
        ci = loc == "headers" and mode == "strict"
        matched: set[str] = set()
        for name, exp_value in exp_values.items():
            if loc == "headers" and _is_special(name, mode, exp_op):
                continue
            cred = _is_credential(spec, loc, name, mode)
            key = _find_key(act_values, name, ci)
            if key is None:
                if cred and alternative is not None:  # another accepted alternative stands in
                    shown = {f"{lo}.{k}": act[lo][k] for lo, k in alternative[1]}
                    note = f"credential alternative: {alternative[0]}"
                    args.append(ArgumentVerdict(loc, name, "correct", exp_value, shown, cred, None, note))
                    continue
                args.append(ArgumentVerdict(loc, name, "missing", exp_value, None, cred))
                continue
            matched.add(key)
            schema = _param_schema(spec, exp_op, loc, name)
            exp_cmp, act_cmp = exp_value, act_values[key]
            if mode == "strict":
                exp_cmp = _as_wire_array(exp_cmp, exp_op, loc, name)
                act_cmp = _as_wire_array(act_cmp, exp_op, loc, name)
            ok = values_equal(exp_cmp, act_cmp, schema, mode, loc)
            note = None
            if not ok and cred and mode == "strict" and credential_value_ok(exp_value, act_values[key]):
                ok, note = True, "credential value not compared"
            verdict = "correct" if ok else "incorrect_value"
            bounds = None
            if not ok and mode == "strict" and name != "(body)":
                bounds = out_of_bounds(spec, judge_op, loc, name, act_values[key])
            args.append(ArgumentVerdict(loc, name, verdict, exp_value, act_values[key], cred, bounds, note))
        for name, act_value in act_values.items():
            if name in matched or (loc == "headers" and _is_special(name, mode, judge_op)):
                continue
            if _find_key(exp_values, name, ci) is not None:
                continue
            if act_value is None and mode == "strict" and loc in ("params", "headers"):
                continue  # axios sends no `key: null` query parameter or header; compat counts it
            if (loc, name) in consumed:
                continue  # a credential of the alternative an expected credential's verdict holds
            bounds = None
            note = None
            if mode == "compat":
                legal = _compat_legal(spec, judge_op, loc, name, exp_method)
            else:
                legal = _strict_legal(spec, judge_op, loc, name)
                if not legal and judge_op is not None and undeclared_auth(spec, loc, name):
                    legal, note = True, "undeclared credential"
                if legal and name != "(body)":
                    bounds = out_of_bounds(spec, judge_op, loc, name, act_value)
                    legal = bounds is None
            cred = _is_credential(spec, loc, name, mode)
            verdict = "unnecessary" if legal else "illegal"
            args.append(ArgumentVerdict(loc, name, verdict, None, act_value, cred, bounds, note))

    n_counted = len(args)
    n_correct = sum(1 for a in args if a.verdict == "correct")
    if endpoint == "correct" and n_correct == n_counted:
        sample = "correct"
    elif endpoint == "illegal" or any(a.verdict == "illegal" or a.out_of_bounds for a in args):
        sample = "illegal"
    else:
        sample = "wrong"
    return SampleVerdict(url=url, method=method, endpoint=endpoint, sample=sample, arguments=args)
