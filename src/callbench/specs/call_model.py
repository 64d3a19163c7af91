"""What one operation's axios call may hold, read from the spec: the keys of each object literal
(:class:`ObjShape`), the arguments after the URL (:class:`OpArgs`: body, ``config`` with
``params``/``headers``, credentials), how a path key's URL carries its fixed query
(:class:`UrlPlan`), all computed once per spec by :class:`SpecModel`.

Independent of grammar text: the web API grammar (:mod:`callbench.constrain.webapi_grammar`) is
written from these shapes and its key tracker (:mod:`callbench.constrain.key_tracker`) follows the
same ones, so both agree on every object's keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from callbench.specs.credentials import (
    ANY_CREDENTIAL,
    BASIC,
    Credential,
    credential_names,
    credential_requirement,
)
from callbench.specs.openapi import ApiSpec, Operation, Parameter, exploded_object_params, split_path_key
from callbench.specs.schema import allows_additional_properties, required_properties, schema_type
from callbench.specs.schema_scalars import is_map, schema_keyword, schema_scalars

__all__ = [
    "AXIOS_AUTH",
    "BODY_METHODS",
    "DELIMITED",
    "NO",
    "ObjShape",
    "OpArgs",
    "SpecModel",
    "UrlPlan",
    "fixed_query_names",
    "form_only_types",
    "url_plan",
]

BODY_METHODS = ("post", "put", "patch")
_DEEP_REST = re.compile(r"[^\[\]]*\]")  # the rest of a deepObject member key after ``name[``


@dataclass(frozen=True)
class UrlPlan:
    """How the grammar writes one path key's URL: ``path`` (the path part, ``{holes}`` kept),
    ``query`` (the ``name=value`` items written after ``?``, holes kept: the path key's own query
    and the ``name=value`` pairs of a query-dispatch fragment such as ``#Action=X``), ``label``
    (a fragment label written after ``#``; a bare fragment name such as S3's ``#cors`` is written
    ``cors=<value>``, its value typed by the parameter's schema, so that the URL names the
    operation), ``in_url``: query names the URL carries (so ``params`` need not repeat them),
    ``in_params``: fixed names required in ``params`` (none today: every fixed name is written in
    the URL)."""

    path: str
    query: tuple[str, ...] = ()
    label: str | None = None
    in_url: frozenset[str] = frozenset()
    in_params: frozenset[str] = frozenset()


def url_plan(spec: ApiSpec, op: Operation) -> UrlPlan:
    """The :class:`UrlPlan` of ``op``'s path key (grammar and key tracker share it)."""
    path, query, frag = split_path_key(op.path)
    if query is None and frag is None:
        return UrlPlan(path)
    items = [x for x in (query or "").split("&") if x]
    label = spec.fragment_label(op)
    in_params: set[str] = set()
    if frag and label is None:
        for x in frag.split("&"):
            if "=" in x:
                items.append(x)
            elif x:  # a fixed name with any value (``#ResourceArn``, S3's ``#cors``): a typed hole
                from urllib.parse import unquote

                items.append(f"{x}={{{unquote(x)}}}")
    in_url = frozenset(x.partition("=")[0] for x in items)
    return UrlPlan(path, tuple(dict.fromkeys(items)), label, in_url, frozenset(in_params - in_url))


_FIXED_NAMES: dict[int, tuple[ApiSpec, frozenset[str]]] = {}


def fixed_query_names(spec: ApiSpec) -> frozenset[str]:
    """The query names any path key of ``spec`` fixes (:attr:`UrlPlan.in_url`: S3's
    ``/{Bucket}#cors`` written ``?cors=...``), cached per spec."""
    hit = _FIXED_NAMES.get(id(spec))
    if hit is None or hit[0] is not spec:
        if len(_FIXED_NAMES) > 64:
            _FIXED_NAMES.clear()
        names = frozenset(n for op in spec.operations for n in url_plan(spec, op).in_url)
        hit = _FIXED_NAMES[id(spec)] = (spec, names)
    return hit[1]


class _No:
    """Marker: undeclared keys are not allowed."""

    def __repr__(self) -> str:
        return "NO"


NO = _No()
_STRING = MappingProxyType({"type": "string"})


@dataclass(eq=False)
class ObjShape:
    """The keys one object literal may hold.

    ``props`` maps each declared key to its value descriptor: a schema mapping, another
    ObjShape, or None (any value). ``extra`` is the descriptor for undeclared keys, or ``NO``.
    ``required`` keys must appear before ``}`` (only keys the grammar can produce). ``ci``: keys
    compare case-insensitively (HTTP headers); ``required`` then holds lowercase names.
    ``patterns``: (prefix, descriptor) of undeclared keys ``prefix + text + "]"`` (no ``[``/``]``
    in the text) that are allowed: the members of a deepObject query parameter whose schema
    allows additional properties (``pass_through[search]``), as the scorer reads them.
    """

    kind: str  # "config" | "params" | "headers" | "data" | "object" | "empty"
    props: dict[str, Any]
    required: frozenset[str] = frozenset()
    extra: Any = NO
    ci: bool = False
    _lower: dict[str, str] | None = field(default=None, repr=False)
    patterns: tuple[tuple[str, Any], ...] = ()
    #: a request body the operation takes only form-encoded (``application/x-www-form-urlencoded``):
    #: under ``real_world`` it may be written ``new URLSearchParams({...})`` or ``qs.stringify({...})``
    form: bool = False

    @property
    def closed(self) -> bool:
        """Only the declared keys are allowed."""
        return self.extra is NO and not self.patterns

    def norm(self, key: str) -> str:
        return key.lower() if self.ci else key

    def declared(self, key: str) -> str | None:
        """The declared key a written key names (case-folded for headers), or None."""
        if not self.ci:
            return key if key in self.props else None
        if self._lower is None:
            self._lower = {k.lower(): k for k in self.props}
        return self._lower.get(key.lower())

    def child(self, key: str) -> Any:
        """Descriptor of the value under ``key`` (``NO`` if the key is not allowed)."""
        name = self.declared(key)
        if name is not None:
            return self.props[name]
        for prefix, desc in self.patterns:
            if key.startswith(prefix) and key.endswith("]") and _DEEP_REST.fullmatch(key, len(prefix)):
                return desc
        return self.extra


#: axios' ``auth`` config option (``credential_rule="callbench"``): a Basic ``Authorization``
#: header, where the operation accepts one alone or the spec declares no security scheme
AXIOS_AUTH = ObjShape("object", {"username": ANY_CREDENTIAL, "password": ANY_CREDENTIAL})


@dataclass(frozen=True, eq=False)
class OpArgs:
    """Positional arguments of one operation's call after the URL.

    ``data``: descriptor of the data argument (post/put/patch), None when the method takes none.
    ``config``: the config object's shape. ``*_mandatory``: the argument must be written (the
    body has required properties / required query or header parameters or credentials exist).
    ``credentials``: the accepted alternatives of a required security requirement (empty when
    none is required). ``cred_any``: what is left to choose after the atoms every alternative
    needs (those are required keys): satisfied when one set's atoms are all given; empty when
    the required keys settle it. Only the key tracker can check it.
    """

    operation: Operation
    label: str  # "GET /attachments"
    data: Any
    config: ObjShape
    data_mandatory: bool
    config_mandatory: bool
    credentials: tuple[tuple[Credential, ...], ...] = ()
    cred_any: tuple[frozenset[tuple[str, str]], ...] = ()


DELIMITED = "x-callbench-delimited"  # key of a query value descriptor: (delimiter, item schema)


class SpecModel:
    """Object shapes of one spec's calls, computed lazily and cached; shared by grammar and tracker.

    Thread-safe for reads after construction of each entry (entries are immutable once made; a
    race only computes an entry twice).
    """

    def __init__(self, spec: ApiSpec):
        self.spec = spec
        self._shapes: dict[int, ObjShape] = {}
        self._items: dict[int, Any] = {}
        self._unions: dict[tuple[int, ...], Mapping[str, Any]] = {}
        # axios.request({...}) config shapes per OpArgs (kept with it): (args, grammar's, tracker's)
        self._requests: dict[int, tuple[OpArgs, ObjShape, ObjShape]] = {}
        self._ops: dict[tuple[int, bool, bool], OpArgs] = {}
        self._query: dict[int, Any] = {}
        self._given: dict[tuple[int, frozenset[str]], OpArgs] = {}
        self._scalars: dict[int, tuple[Any, Any]] = {}
        self._keep: list[Any] = []  # keeps schemas alive so their ids stay unique

    # -- schema helpers ----------------------------------------------------------------
    def union(self, schemas: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        """One descriptor for several alternative schemas (one cached ``anyOf`` per set)."""
        uniq = list({id(s): s for s in schemas}.values())
        if not uniq:
            return None
        if len(uniq) == 1:
            return uniq[0]
        key = tuple(sorted(id(s) for s in uniq))
        hit = self._unions.get(key)
        if hit is None:
            hit = self._unions[key] = MappingProxyType({"anyOf": tuple(uniq)})
            self._keep.append(uniq)
        return hit

    def _collect(self, schema: Any) -> tuple[dict[str, list[Mapping[str, Any]]], list[Any], bool]:
        """(name -> alternative schemas, additionalProperties values, saw any properties)."""
        props: dict[str, list[Mapping[str, Any]]] = {}
        extras: list[Any] = []
        seen: set[int] = set()

        def rec(node: Any, depth: int) -> None:
            if not is_map(node) or depth > 16 or id(node) in seen:
                return
            seen.add(id(node))
            p = node.get("properties")
            if isinstance(p, Mapping):
                for k, v in p.items():
                    if is_map(v):
                        lst = props.setdefault(k, [])
                        if all(v is not x for x in lst):
                            lst.append(v)
                    else:
                        props.setdefault(k, [])
            if "additionalProperties" in node:
                extras.append(node["additionalProperties"])
            for kw in ("allOf", "oneOf", "anyOf"):
                for sub in schema_keyword(node, kw):
                    rec(sub, depth + 1)

        rec(schema, 0)
        return props, extras, bool(props)

    def shape(self, schema: Any) -> ObjShape:
        """Shape of a nested object schema: declared properties (allOf merged, oneOf/anyOf
        united; a property declared differently in several members takes any of its schemas),
        plus any key when ``additionalProperties`` allows it or no property is declared at all
        (a free-form object)."""
        if not is_map(schema):
            return ObjShape("object", {}, extra=None)
        hit = self._shapes.get(id(schema))
        if hit is not None:
            return hit
        props, extras, any_props = self._collect(schema)
        declared = {k: self.union(v) for k, v in props.items()}
        extra: Any = NO
        explicit = [e for e in extras if e is not False and e is not None]
        if explicit:
            maps = [e for e in explicit if isinstance(e, Mapping)]
            extra = self.union(maps) if maps and len(maps) == len(explicit) else None
        elif not any_props and False not in extras:
            extra = None
        req = required_properties(schema)
        if extra is NO and False not in extras:  # required though undeclared (vestorly's `name`):
            for name in sorted(req - declared.keys()):  # part of the object, any value
                declared[name] = None
        req = frozenset(req if extra is not NO else req & declared.keys())
        out = ObjShape("object", declared, req, extra)
        self._shapes[id(schema)] = out
        self._keep.append(schema)
        return out

    def items(self, schema: Any) -> Any:
        """Descriptor of an array schema's items (branches united; None = any value)."""
        if not is_map(schema):
            return None
        key = id(schema)
        if key in self._items:
            return self._items[key]
        found: list[Mapping[str, Any]] = []
        seen: set[int] = set()

        def rec(node: Any, depth: int) -> None:
            if not is_map(node) or depth > 16 or id(node) in seen:
                return
            seen.add(id(node))
            it = node.get("items")
            if is_map(it):
                found.append(it)
            elif isinstance(it, tuple | list):
                found.extend(x for x in it if is_map(x))
            for kw in ("allOf", "oneOf", "anyOf"):
                for sub in schema_keyword(node, kw):
                    rec(sub, depth + 1)

        rec(schema, 0)
        out = self.union(found)
        self._items[key] = out
        self._keep.append(schema)
        return out

    def scalars(self, schema: Mapping[str, Any]) -> tuple[list[Any] | None, set[str]] | None:
        """:func:`schema_scalars` of ``schema``, computed once per schema (callers must not
        change the result)."""
        hit = self._scalars.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        out = schema_scalars(schema)
        self._scalars[id(schema)] = (schema, out)
        return out

    def query_value(self, param: Parameter) -> Any:
        """Descriptor of a query parameter's value as the request may write it. An array
        parameter (style form, spaceDelimited or pipeDelimited) also takes one item alone (a
        one-item array on the wire), and without ``explode`` a string of items joined by its
        delimiter (``part: 'snippet,id'``); :attr:`Parameter.delimiter` says which."""
        schema = param.schema
        if not schema:
            return None
        if "array" not in schema_type(schema):
            return schema
        key = id(param)
        if key in self._query:
            return self._query[key]
        item = self.items(schema)
        out: Any
        if item is None:
            out = None  # items of any value: one item alone is any value too
        else:
            desc: dict[str, Any] = {"anyOf": (schema, item)}
            delim = param.delimiter
            if delim is not None:
                desc[DELIMITED] = (delim, item)
            out = MappingProxyType(desc)
        self._query[key] = out
        self._keep.append((param, out))
        return out

    # -- operations ----------------------------------------------------------------------
    def op_args(
        self, op: Operation, credentials: str = "required", url_query: bool = False, transport: bool = False
    ) -> OpArgs:
        """Arguments of ``op``'s call, mirroring :meth:`ApiSpec.is_legal_argument`, plus the
        credentials (:attr:`GrammarOptions.credentials`): ``"required"``, the credential its
        security requirement asks for; ``"paper"``, WAPIIBench's keys (:meth:`_paper_credentials`).

        ``url_query`` (``GrammarOptions.allow_url_query``): the URL may carry query parameters,
        so required ones do not make ``params`` (or ``config``) mandatory in the grammar; the key
        tracker checks them once it has read the URL (:meth:`given_in_url`).

        ``transport`` (``GrammarOptions.real_world``): the transport headers any client may send
        (:data:`callbench.specs.openapi.TRANSPORT_HEADERS`: ``Accept``, ``Accept-Encoding``,
        ``Accept-Language``, ``Content-Type`` on any method, ``User-Agent``) are allowed in
        ``headers`` with any string value where the operation does not declare them."""
        key = (id(op), credentials, url_query, transport)
        hit = self._ops.get(key)
        if hit is not None:
            return hit
        spec = self.spec
        label = f"{op.method.upper()} {op.path}"
        # params: query parameters + apiKey-in-query credentials
        params: dict[str, Any] = {p.name: self.query_value(p) for p in op.params_in("query")}
        patterns: list[tuple[str, Any]] = []
        for p in op.params_in("query"):  # deepObject: each property is its own pair, name[prop]
            if p.style == "deepObject" and isinstance(p.schema, Mapping):
                for prop, sub in self.shape(p.schema).props.items():
                    params.setdefault(f"{p.name}[{prop}]", sub)
                if allows_additional_properties(p.schema):  # any other name[prop]: any value
                    patterns.append((f"{p.name}[", None))
        exploded = exploded_object_params(op)  # style form + explode: each property is its own pair
        for p in exploded:
            for prop, sub in self.shape(p.schema).props.items():
                params.setdefault(prop, sub)
        headers: dict[str, Any] = {}
        for p in op.params_in("header"):  # an array header travels as 'a,b' (style simple) too
            headers[p.name] = self.query_value(p) if p.schema else None
        plan = url_plan(spec, op)
        params_req = set(
            p.name for p in op.params_in("query") if p.required and p.name not in plan.in_url and p not in exploded
        )
        for p in exploded:  # a required exploded object: its required properties
            if p.required:
                params_req.update(n for n in required_properties(p.schema) if n in params)
        for name in plan.in_params:  # a fixed query name without value: the call must send it
            params.setdefault(name, _STRING)
            params_req.add(name)
        headers_req = set(p.name.lower() for p in op.params_in("header") if p.required)
        alts = credential_requirement(spec, op, real=credentials == "any") if credentials in ("required", "any") else ()
        basic_auth = False
        if credentials == "any":  # any string or expression in each credential's place
            # axios' `auth: {username, password}` sends the Basic Authorization header: one more
            # way to give an alternative that is that header alone
            basic = [a for a in alts if len(a) == 1 and a[0].atom == ("headers", "authorization") and a[0].value == BASIC]
            basic_auth = bool(basic)
            alts = (*alts, *([(Credential("config", "auth", None),)] if basic else []))
            alts = tuple(dict.fromkeys(tuple(replace(c, value=ANY_CREDENTIAL) for c in alt) for alt in alts))
        if credentials == "paper":
            for loc, name, required in self._paper_credentials(op):
                target = headers if loc == "headers" else params
                if loc == "headers":  # a declared header of another spelling keeps its spelling
                    name = next((k for k in target if k.lower() == name.lower()), name)
                target.setdefault(name, _STRING)
                if required:
                    (headers_req if loc == "headers" else params_req).add(name.lower() if loc == "headers" else name)
        cred_any: tuple[frozenset[tuple[str, str]], ...] = ()
        if alts:
            values: dict[tuple[str, str], Credential] = {}
            for alt in alts:
                for c in alt:
                    had = values.get(c.atom)
                    if had is None:
                        values[c.atom] = c
                    elif had.value is not None and c.value is not None:
                        values[c.atom] = replace(had, value=had.value.union(c.value))
                    else:  # a free string form among them: any string
                        values[c.atom] = replace(had, value=None)
            for c in values.values():
                if c.loc == "config":
                    continue  # `auth`: a config key (below)
                target = headers if c.loc == "headers" else params
                name = c.name
                if c.loc == "headers":  # a declared header of another spelling keeps its spelling
                    name = next((k for k in target if k.lower() == c.name.lower()), c.name)
                target[name] = c.value if c.value is not None else _STRING
            sets = [frozenset(c.atom for c in alt) for alt in alts]
            common = frozenset.intersection(*sets)
            for loc, name in common:
                (headers_req if loc == "headers" else params_req).add(name)
            rest = tuple(dict.fromkeys(s - common for s in sets))
            cred_any = () if any(not r for r in rest) else rest
        creds = credential_names(spec)
        if not spec.security_schemes and credentials != "paper":
            # a spec declaring no security scheme (GitHub's in the APIs.guru directory) still
            # serves calls carrying one: the header is allowed, with any value (the scorer
            # records it as undeclared, not illegal)
            creds.setdefault("header", []).append("Authorization")
        # a credential the operation does not require: any string (the value form of the
        # required ones under credential_rule="callbench": also an expression)
        free = ANY_CREDENTIAL if credentials == "any" else _STRING
        for name in creds.get("query", ()):
            params.setdefault(name, free)
        lower = {k.lower() for k in headers}
        has_body = op.request_body is not None
        implied = ["Accept", *creds.get("header", ())]
        if op.method in BODY_METHODS or has_body or transport:
            implied.append("Content-Type")
        if transport:
            implied += ["Accept-Encoding", "Accept-Language", "User-Agent"]
        cred_headers = {n.lower() for n in creds.get("header", ())}
        for name in implied:
            if name.lower() not in lower:
                headers[name] = free if name.lower() in cred_headers else _STRING
                lower.add(name.lower())
        pshape = ObjShape("params", params, frozenset(params_req), patterns=tuple(dict.fromkeys(patterns)))
        hshape = ObjShape("headers", headers, frozenset(headers_req), ci=True)
        data = self.body(op)
        cprops: dict[str, Any] = {"params": pshape, "headers": hshape}
        if basic_auth or (credentials == "any" and not spec.security_schemes):
            cprops["auth"] = AXIOS_AUTH
        if op.method not in BODY_METHODS and has_body:
            cprops["data"] = data
        creq = frozenset(
            k for k, s in (("params", pshape), ("headers", hshape)) if s.required and not (url_query and k == "params")
        )
        config = ObjShape("config", cprops, creq)
        data_mandatory = isinstance(data, ObjShape) and bool(data.required)
        out = OpArgs(
            operation=op,
            label=label,
            data=data if op.method in BODY_METHODS else None,
            config=config,
            data_mandatory=op.method in BODY_METHODS and data_mandatory,
            # under url_query a credential alternative all in params may come in the URL: the key
            # tracker decides once it has read the URL (given_in_url)
            config_mandatory=bool(creq)
            or (bool(cred_any) and not (url_query and any(all(loc == "params" for loc, _ in a) for a in cred_any))),
            credentials=alts,
            cred_any=cred_any,
        )
        self._ops[key] = out
        return out

    def _paper_credentials(self, op: Operation) -> list[tuple[str, str, bool]]:
        """WAPIIBench's credential keys for ``op``: (place, name, required) per scheme named by
        the global or the operation's requirement (see :attr:`GrammarOptions.credential_rule`);
        a cookie apiKey, which the paper's code would put in a header of its name, is left out
        (its value travels in ``Cookie``)."""
        top = self.spec.document.get("security")
        names: dict[str, None] = {}
        for reqs in (top if isinstance(top, (list, tuple)) else (), op.security):
            for req in reqs:
                if isinstance(req, Mapping):
                    names.update(dict.fromkeys(str(n) for n in req))
        out: list[tuple[str, str, bool]] = []
        for scheme_name in names:
            scheme = self.spec.security_schemes.get(scheme_name)
            scheme = scheme if isinstance(scheme, Mapping) else {}
            if scheme.get("type") == "apiKey" and isinstance(scheme.get("name"), str) and scheme.get("name"):
                if scheme.get("in") not in ("header", "query"):
                    continue
                out.append(("headers" if scheme["in"] == "header" else "params", scheme["name"], len(names) == 1))
            else:
                out.append(("headers", "Authorization", len(names) == 1))
        return out

    def given_in_url(self, args: OpArgs, names: frozenset[str]) -> OpArgs:
        """``args`` once the URL's query is known (``allow_url_query``): the query names it
        carries are no longer required in ``params`` (nor is a credential it carries: Trello's
        ``?key=..&token=..``), and ``params`` (hence ``config``) is mandatory again when required
        query parameters are left."""
        key = (id(args), names)
        hit = self._given.get(key)
        if hit is not None:
            return hit
        params = args.config.props["params"]
        left = frozenset(params.required - names)
        pshape = ObjShape("params", params.props, left, patterns=params.patterns) if left != params.required else params
        cprops = {**args.config.props, "params": pshape}
        hshape = cprops["headers"]
        creq = frozenset(k for k, s in (("params", pshape), ("headers", hshape)) if s.required)
        config = ObjShape("config", cprops, creq)
        cred_any = args.cred_any  # a credential alternative the URL's query already carries
        if any(all(loc == "params" and n in names for loc, n in alt) for alt in cred_any):
            cred_any = ()
        out = replace(args, config=config, config_mandatory=bool(creq) or bool(cred_any), cred_any=cred_any)
        self._given[key] = out
        self._keep.append((args, out))
        return out

    def request_config(self, args: OpArgs) -> ObjShape:
        """The config object of ``axios.request({...})`` for ``args``' operation, less its
        ``method`` and ``url``: the config's keys, and the body as ``data`` (required where the
        positional form requires the data argument). The key tracker adds ``method``/``url``
        (:meth:`request_tracked`)."""
        hit = self._requests.get(id(args))
        if hit is not None and hit[0] is args:
            return hit[1]
        props = dict(args.config.props)
        req = set(args.config.required)
        if args.operation.method in BODY_METHODS:
            props["data"] = args.data
            if args.data_mandatory:
                req.add("data")
        shape = ObjShape("config", props, frozenset(req))
        tracked = ObjShape("config", {"method": _STRING, "url": _STRING, **props}, frozenset(req))
        self._requests[id(args)] = (args, shape, tracked)
        return shape

    def request_tracked(self, args: OpArgs) -> ObjShape:
        """:meth:`request_config` with ``method`` and ``url`` (the object the key tracker follows)."""
        self.request_config(args)
        return self._requests[id(args)][2]

    def body(self, op: Operation) -> Any:
        """Descriptor of the request body: an ObjShape for object bodies (keys exactly as
        ``is_legal_argument`` allows them), the schema for other bodies, an empty shape when the
        operation declares no body."""
        if op.request_body is None:
            return ObjShape("empty", {})
        schema = op.body_schema()
        if not isinstance(schema, Mapping):
            return ObjShape("data", {})
        if not any(k in schema for k in _SHAPING_KEYWORDS):  # untyped (``{}``, a description): any JSON value
            return _ANY_BODY
        types = schema_type(schema)
        props, _, any_props = self._collect(schema)
        if not any_props and types and "object" not in types:
            return schema
        declared = {k: self.union(v) for k, v in props.items()}
        extra: Any = NO
        if allows_additional_properties(schema):
            ap = schema.get("additionalProperties")
            extra = ap if isinstance(ap, Mapping) else None
        req = op.body_required()
        for name in sorted(req - declared.keys()):  # required though undeclared: legal, any value
            declared[name] = None
        return ObjShape("data", declared, frozenset(req), extra, form=bool(form_only_types(op)))


def form_only_types(op: Operation) -> tuple[str, ...]:
    """The media types of ``op``'s request body when every one is a form
    (``application/x-www-form-urlencoded``, parameters allowed), else ``()``: such a body may be
    written ``new URLSearchParams({...})`` under ``real_world`` (a ``Content-Type`` header beside
    such a body must then be a form type: the key tracker checks it)."""
    content = op.request_body.content if op.request_body is not None else {}
    types = tuple(str(mt) for mt in content)
    if types and all(mt.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded" for mt in types):
        return types
    return ()


# keywords that say something about a body's shape; a body schema with none of them (``{}``, only a
# description: orthanc's DICOM queries) takes any JSON value, as the synthesizer and scorer read it
_SHAPING_KEYWORDS = frozenset(
    {"type", "properties", "additionalProperties", "allOf", "oneOf", "anyOf", "items", "enum", "const", "required", "not"}
)
_ANY_BODY: Mapping[str, Any] = MappingProxyType({})
