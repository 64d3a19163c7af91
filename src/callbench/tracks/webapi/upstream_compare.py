"""WAPIIBench's published comparison of a logged config with the expected one (compat scoring).

``evaluation.py`` (``_add_path_params``, ``_compare_configs``, ``_evaluate_sample``) and
``openapi_utils.py`` (``find_path_in_spec``, ``find_operation_in_path``, ``validate_argument``)
define the published verdicts; this module gives the same verdicts as callbench's
:class:`~callbench.tracks.webapi.scoring.SampleVerdict`, on the spec as openapi3-parser reads it
(``ApiSpec.document``: paths in spec order; each operation's parameters its own followed by the
path item's; a request body's properties those of its first media type, ``allOf`` merged):

* **paths**: the URL minus the first server's URL must *fully match* a path template in which
  every ``{name}`` stands for ``[^/?&]+`` and every other character is a regular expression
  (Slack's ``/chat.postMessage`` also matches ``/chatXpostMessage``; ``/x/`` is not ``/x``; a URL
  without the server, ``/x``, matches too). Several matches: fewest parameters first, then the
  longest template.
* **path parameters**: read from the URL by searching (not matching) the first path's template
  with each path parameter of its operations as ``[^/]+``; a config keeps a ``path_params`` of
  its own when its URL has none.
* **URL** correct when the expected path is among the matched ones, illegal when none matched;
  **method** correct when equal, illegal when no matched path has it.
* **arguments** in ``headers``, ``params``, ``path_params`` and ``data`` (``Accept`` and
  ``Content-Type`` headers not counted): an expected one is correct when Python ``==`` holds,
  else incorrect, or missing; an extra one is *unnecessary* when ``validate_argument`` allows it
  for the **expected** endpoint (``Accept``; ``Content-Type`` for put/post/patch; an apiKey's name
  where the key goes; ``Authorization`` for http and oauth2 schemes, not openIdConnect; the first
  parameter of that name in the path item, then in the operation, if its location is the field;
  a body property of the operation), else *illegal*. A field the logged config holds as
  ``null`` is skipped.

Differences, each where the published code raises instead of judging: a logged field that is
not an object (a body array a custom ``transformRequest`` left) counts as one illegal ``(body)``
argument; a cookie parameter or cookie apiKey named like an argument, a path template that is not
a valid regular expression, or a path parameter name that cannot name a group, is skipped.
Python's ``re`` stands in for the ``regex`` package (the same on these patterns).
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from callbench.specs import ApiSpec
from callbench.tracks.webapi.scoring import ArgumentVerdict, SampleVerdict, _compat_credential

__all__ = ["FIELDS", "PublishedSpec", "published_error", "published_spec", "published_verdict"]

FIELDS = ("headers", "params", "path_params", "data")
SPECIAL_HEADERS = ("Accept", "Content-Type")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")  # openapi3-parser's order
_FIELD_OF = {"header": "headers", "query": "params", "path": "path_params"}


@dataclass(frozen=True, eq=False)
class _Op:
    method: str
    parameters: tuple[tuple[str, str], ...]  # (name, location): the operation's, then the path item's
    body: tuple[str, ...] | None  # properties of the first media type; None: no body (or no content)


@dataclass(frozen=True, eq=False)
class _Path:
    url: str
    parameters: tuple[tuple[str, str], ...]
    operations: tuple[_Op, ...]
    pattern: re.Pattern[str] | None  # find_path_in_spec's pattern (None: not a regular expression)
    n_params: int

    def operation(self, method: str) -> _Op | None:
        return next((op for op in self.operations if op.method == method), None)


def _params(raw: Any) -> tuple[tuple[str, str], ...]:
    out = []
    for p in raw or ():
        if isinstance(p, Mapping) and isinstance(p.get("name"), str) and isinstance(p.get("in"), str):
            out.append((p["name"], p["in"]))
    return tuple(out)


def _body_properties(schema: Any, depth: int = 0) -> list[str]:
    if not isinstance(schema, Mapping) or depth > 32:
        return []
    names: list[str] = []
    for sub in schema.get("allOf") or ():
        names += [n for n in _body_properties(sub, depth + 1) if n not in names]
    names += [n for n in (schema.get("properties") or {}) if n not in names]
    return names


def _body(op: Mapping[str, Any]) -> tuple[str, ...] | None:
    body = op.get("requestBody")
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        return None
    first = next(iter(content.values()))
    return tuple(_body_properties(first.get("schema") if isinstance(first, Mapping) else None))


class PublishedSpec:
    """The parts of a spec the published scorer reads, as openapi3-parser gives them."""

    def __init__(self, spec: ApiSpec):
        doc = spec.document
        servers = doc.get("servers") or ()
        first = servers[0] if servers else None
        self.server = str(first.get("url", "")) if isinstance(first, Mapping) else ""
        paths = []
        for url, item in (doc.get("paths") or {}).items():
            if not isinstance(item, Mapping):
                continue
            level = _params(item.get("parameters"))
            ops = tuple(
                _Op(m, _params(item[m].get("parameters")) + level, _body(item[m]))
                for m in _METHODS
                if isinstance(item.get(m), Mapping)
            )
            text, n = re.subn(r"{.*?}", "[^/?&]+", str(url))
            try:
                pattern: re.Pattern[str] | None = re.compile(text)
            except re.error:
                pattern = None
            paths.append(_Path(str(url), level, ops, pattern, n))
        self.paths = tuple(paths)
        self.schemes = tuple(
            (s.get("type"), s.get("in"), s.get("name"))
            for s in (spec.security_schemes or {}).values()
            if isinstance(s, Mapping)
        )

    def find_paths(self, url: str) -> list[_Path]:
        rest = url.removeprefix(self.server)
        found = [p for p in self.paths if p.pattern is not None and p.pattern.fullmatch(rest)]
        return sorted(found, key=lambda p: (p.n_params, -len(p.url)))

    def add_path_params(self, config: dict[str, Any]) -> list[_Path]:
        """``_add_path_params``: the config's paths; ``path_params`` set from the first one."""
        url = config.get("url")
        if not config or "ERROR" in config or not isinstance(url, str):
            return []
        paths = self.find_paths(url)
        if not paths:
            return paths
        path = paths[0]
        pattern = path.url
        for op in path.operations:
            for name, location in op.parameters:
                if location == "path":
                    pattern = pattern.replace("{" + name + "}", f"(?P<{name}>[^/]+)")
        try:
            match = re.search(pattern, url)
        except re.error:
            match = None
        values = match.groupdict() if match is not None else {}
        if values:
            config["path_params"] = values
        return paths

    def legal(self, name: str, field: str, method: str, path: _Path | None) -> bool:
        """``validate_argument``: may ``name`` be sent in ``field`` to ``method`` on ``path``?"""
        if field == "headers" and name == "Accept":
            return True
        if field == "headers" and name == "Content-Type":
            return method in ("put", "post", "patch")
        for kind, where, key in self.schemes:
            if kind == "apiKey" and _FIELD_OF.get(str(where)) == field and key == name:
                return True
            if kind in ("http", "oauth2") and field == "headers" and name == "Authorization":
                return True
        if path is None:
            return False
        op = path.operation(method)
        if field == "data":
            return op is not None and op.body is not None and name in op.body
        if _first_named(path.parameters, name, field):
            return True
        return op is not None and _first_named(op.parameters, name, field)


def _first_named(params: tuple[tuple[str, str], ...], name: str, field: str) -> bool:
    """The first parameter called ``name`` decides: in ``field`` or not."""
    for pname, location in params:
        if pname == name:
            return _FIELD_OF.get(location) == field
    return False


_CACHE: dict[int, tuple[ApiSpec, PublishedSpec]] = {}
_LOCK = threading.Lock()


def published_spec(spec: ApiSpec) -> PublishedSpec:
    """The published scorer's view of ``spec`` (built once per spec)."""
    hit = _CACHE.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    view = PublishedSpec(spec)
    with _LOCK:
        _CACHE[id(spec)] = (spec, view)
    return view


def _expected(expected: dict[str, Any], view: PublishedSpec) -> tuple[dict[str, Any], _Path]:
    exp = copy.deepcopy(expected)
    paths = view.add_path_params(exp)
    if not paths:
        raise ValueError(
            f"expected URL {expected.get('url')!r} matches no path of the spec (published rules)"
        )
    return exp, paths[0]


def published_error(error: str, expected: dict[str, Any], spec: ApiSpec) -> SampleVerdict:
    """A non-executable sample: the expected arguments per field count as missing."""
    view = published_spec(spec)
    exp, _ = _expected(expected, view)
    counts: dict[str, int] = {}
    for field in FIELDS:
        value = exp.get(field)
        if isinstance(value, Mapping):
            n = len(value)
            if field == "headers":
                n -= sum(1 for k in SPECIAL_HEADERS if k in value)
            counts[field] = n
    return SampleVerdict(error=error, expected_counts=counts)


def published_verdict(expected: dict[str, Any], logged: dict[str, Any], spec: ApiSpec) -> SampleVerdict:
    """The published verdicts for the config mock.js logged (see the module docstring)."""
    view = published_spec(spec)
    exp, exp_path = _expected(expected, view)
    act = copy.deepcopy(logged)
    act_paths = view.add_path_params(act)
    method_sent = act.get("method")

    url = "correct" if any(p is exp_path for p in act_paths) else "illegal" if not act_paths else "wrong"
    if exp.get("method") == method_sent:
        method = "correct"
    elif not act_paths or all(p.operation(str(method_sent)) is None for p in act_paths):
        method = "illegal"
    else:
        method = "wrong"
    endpoint = (
        "correct" if url == method == "correct" else "illegal" if "illegal" in (url, method) else "wrong"
    )

    args: list[ArgumentVerdict] = []

    def add(field: str, name: str, verdict: str, expected_value: Any, actual: Any) -> None:
        if field == "headers" and name in SPECIAL_HEADERS:
            return  # present and right in every request: not counted
        cred = field in ("headers", "params") and _compat_credential(
            spec, "header" if field == "headers" else "query", name
        )
        args.append(ArgumentVerdict(field, name, verdict, expected_value, actual, cred))

    for field in [k for k in exp if k in FIELDS]:
        sent = act.get(field)
        for name, value in (exp[field] or {}).items():
            if isinstance(sent, Mapping) and name in sent:
                add(field, name, "correct" if sent[name] == value else "incorrect_value", value, sent[name])
            else:
                add(field, name, "missing", value, None)
    for field, sent in act.items():
        if sent is None or field not in FIELDS:
            continue
        known = exp.get(field) or {}
        if not isinstance(sent, Mapping):
            add(field, "(body)", "illegal", None, sent)  # the published code raises here
            continue
        for name, value in sent.items():
            if name not in known:
                legal = view.legal(name, field, str(exp["method"]), exp_path)
                add(field, name, "unnecessary" if legal else "illegal", None, value)

    n_correct = sum(1 for a in args if a.verdict == "correct")
    if endpoint == "correct" and n_correct == len(args):
        sample = "correct"
    elif endpoint == "illegal" or any(a.verdict == "illegal" for a in args):
        sample = "illegal"
    else:
        sample = "wrong"
    return SampleVerdict(url=url, method=method, endpoint=endpoint, sample=sample, arguments=args)
