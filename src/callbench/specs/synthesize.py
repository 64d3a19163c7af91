"""Synthesize valid (and deliberately invalid) requests for any operation of an OpenAPI spec.

What for: the loader, the constrained-decoding grammar and the scorer each read a spec their own
way; a request built from the spec alone, independently of all three, lets them be checked against
each other on thousands of real specs (``benchmarks/wild_specs.py``): a valid request must be
accepted by the grammar and scored correct against itself, an invalid one rejected and scored as
the error it is.

A request comes in the WAPIIBench row conventions: a ``config`` with ``method``, ``url`` (the
spec's first server + the path, path parameters filled in and serialized as their ``style`` says),
``params`` (query parameters as axios's ``params`` holds them: typed JSON values, or the strings a
``URL?query`` carries), ``headers`` (``Accept: 'application/json, text/plain, */*'``, header
parameters, the credential the operation's security requirement asks for with the dataset's
placeholder -- ``Bearer <token>``, ``Basic <credentials>``, ``<key>`` for an apiKey, a
``Cookie: name=<key>`` header for a cookie apiKey -- and ``Content-Type`` with a body) and
``data`` (the body; form bodies hold strings, as they travel). :class:`Invocation` adds the axios
code that sends it, in one of several :data:`STYLES`, as a whole program and as the text a model
writes after the starter in each setup (``full``: after ``axios.``; ``args``: after
``axios.<method>('<url>',``).

Values (deterministic for a seed): the schema's ``const``, an ``example``/``examples``/
``x-example``/``default`` that keeps the schema, an ``enum`` member, a value for the ``format``
(date-time, date, email, uuid, uri, ipv4, ...), a string for the ``pattern``
(:mod:`callbench.specs.synth_regex`), else a realistic value chosen by the name (``email``,
``first_name``, ``city``, ``limit``, ``page``, ``*_id``, ...), all kept within ``minimum``/
``maximum``/``multipleOf``/``minLength``/``maxLength``/``minItems``/``maxItems``.

Invalid variants (:data:`INVALID_KINDS`), each a separate request + code with the verdict it
should get (:class:`Expectation`): an unknown query parameter (argument *illegal*), a value of
the wrong JSON type (*incorrect_value*), a required argument left out (*missing*), a method the
URL does not have (method *illegal*) and a path the spec does not have (URL *illegal*).
"""

from __future__ import annotations

import json
import random
import re
import string
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from callbench.specs.openapi import ApiSpec, Operation, Parameter
from callbench.specs.patterns import compile_pattern
from callbench.specs.schema import (
    bounds_violation,
    json_type,
    object_properties,
    required_properties,
    schema_type,
)
from callbench.specs.synth_regex import RegexUnsupported, string_for_pattern

__all__ = [
    "DEFAULT_ACCEPT",
    "INVALID_KINDS",
    "STYLES",
    "Expectation",
    "Invocation",
    "RequestPlan",
    "SynthesisError",
    "invalid_invocations",
    "js_literal",
    "plan_request",
    "synthesize_value",
    "valid_invocations",
]

DEFAULT_ACCEPT = "application/json, text/plain, */*"
#: Code styles of a valid invocation. ``method``: ``axios.get(url, {params, headers})``;
#: ``template``: the same with a template-literal URL whose path parameters come from
#: ``definitions`` (``${id}``); ``config``: ``axios({method, url, ...})``; ``request``:
#: ``axios.request({...})``; ``url_query``: the query parameters written into the URL.
STYLES = ("method", "template", "config", "request", "url_query")
INVALID_KINDS = ("unknown_parameter", "wrong_type", "missing_required", "wrong_method", "unknown_path")
AXIOS_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
BODY_METHODS = ("post", "put", "patch")
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_STARTER = "// {task}\nconst axios = require('axios');\n\n"
# Characters left as they are in a path segment (RFC 3986 pchar minus the JS string quotes).
_PATH_SAFE = "-_.~!*(),;=:@+&"
_JS_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_HOLE_RX = re.compile(r"\{[^{}]*\}")  # a {name} hole of a path key's query
_RESERVED_JS = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false "
    "finally for function if import in instanceof new null return super switch this throw true try typeof "
    "var void while with yield let static implements interface package private protected public await "
    "arguments eval undefined NaN Infinity globalThis axios require module exports console process "
    "FormData URLSearchParams URL AbortController AbortSignal Buffer btoa atob setTimeout clearTimeout "
    "setInterval clearInterval setImmediate clearImmediate global __dirname __filename".split()
)


class SynthesisError(ValueError):
    """No request can be built for the operation (e.g. a pattern no string is found for)."""


# ============================================================================ values
_FIRST = ["Jane", "John", "Maria", "Ahmed", "Yuki", "Lena", "Carlos", "Priya", "Oliver", "Fatima"]
_LAST = ["Doe", "Smith", "Garcia", "Khan", "Tanaka", "Novak", "Silva", "Patel", "Brown", "Okafor"]
_CITIES = ["Berlin", "Lisbon", "Toronto", "Nairobi", "Osaka", "Austin", "Lyon", "Melbourne"]
_COUNTRIES = ["DE", "PT", "CA", "KE", "JP", "US", "FR", "AU"]
_WORDS = ["alpha", "report", "project", "invoice", "sample", "summary", "draft", "release", "review"]
_COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Enterprises"]
_TAGS = ["urgent", "billing", "internal", "beta", "archived", "featured"]
_STATUS = ["active", "pending", "open", "completed"]


def _norm(name: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", (name or "").lower())


def _words(name: str | None) -> list[str]:
    """``firstName`` / ``first_name`` / ``First-Name`` -> ``["first", "name"]``."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name or "")
    return [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]


def _string_by_name(name: str | None, rng: random.Random) -> str:
    n, w = _norm(name), _words(name)
    last = w[-1] if w else ""
    first, family = rng.choice(_FIRST), rng.choice(_LAST)
    if "email" in n or n == "mail":
        return f"{first.lower()}.{family.lower()}@example.com"
    if n in ("firstname", "givenname", "forename"):
        return first
    if n in ("lastname", "familyname", "surname"):
        return family
    if n in ("username", "login", "handle", "nickname"):
        return f"{first.lower()}{family.lower()[:3]}{rng.randint(1, 99)}"
    if "phone" in n or "mobile" in n or n == "fax":
        return f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    if "url" in n or "uri" in n or "link" in n or "website" in n or "href" in n:
        return f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1, 999)}"
    if "date" in n or n.endswith("time") or n.endswith("at") and len(n) > 3 and last == "at":
        return _date_time(rng) if "time" in n or last == "at" else _date(rng)
    if n in ("city", "town", "locality"):
        return rng.choice(_CITIES)
    if n in ("country", "countrycode", "region"):
        return rng.choice(_COUNTRIES)
    if n in ("currency", "currencycode"):
        return rng.choice(["USD", "EUR", "JPY", "GBP"])
    if n in ("lang", "language", "locale", "hl"):
        return rng.choice(["en-US", "de-DE", "fr-FR", "ja-JP"])
    if n in ("zip", "zipcode", "postalcode", "postcode"):
        return f"{rng.randint(10000, 99999)}"
    if "address" in n or n == "street":
        return f"{rng.randint(1, 250)} {rng.choice(['Main', 'Oak', 'Elm', 'Market'])} Street"
    if n in ("company", "organization", "organisation", "org", "companyname"):
        return rng.choice(_COMPANIES)
    if n in ("color", "colour"):
        return rng.choice(["red", "green", "blue", "#3366ff"])
    if n in ("password", "secret", "passphrase"):
        return "S3cure!pass" + str(rng.randint(10, 99))
    if "token" in n or n in ("apikey", "key", "cursor", "pagetoken", "nextpagetoken"):
        return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(16))
    if n in ("ip", "ipaddress", "ipv4"):
        return f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    if "uuid" in n or "guid" in n:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if last in ("id", "ids", "gid", "key", "sid", "uid") or n.endswith("id") and len(n) > 2:
        return str(rng.randint(10000, 999999))
    if n in ("name", "fullname", "displayname", "author", "owner", "contact", "assignee"):
        return f"{first} {family}"
    if n in ("title", "subject", "headline", "summary"):
        return f"Quarterly {rng.choice(_WORDS)} {rng.randint(1, 12)}"
    if n in ("description", "comment", "note", "notes", "message", "text", "body", "content", "bio"):
        return f"Please review the {rng.choice(_WORDS)} before Friday."
    if n in ("tag", "tags", "label", "labels", "category"):
        return rng.choice(_TAGS)
    if n in ("status", "state"):
        return rng.choice(_STATUS)
    if n in ("q", "query", "search", "term", "keyword", "keywords", "filter"):
        return rng.choice(["coffee", "weather berlin", "open invoices", "python"])
    if n in ("sort", "orderby", "order", "sortby"):
        return rng.choice(["name", "created_at", "updated"])
    if n in ("fields", "select", "expand", "include"):
        return rng.choice(["id,name", "id", "name"])
    if n in ("version", "apiversion"):
        return f"{rng.randint(1, 3)}.{rng.randint(0, 9)}"
    if n in ("timezone", "tz", "timezoneid"):
        return rng.choice(["Europe/Berlin", "America/New_York", "UTC"])
    if n in ("slug",):
        return f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}"
    if n in ("type", "kind", "format", "mode"):
        return rng.choice(["standard", "basic", "default"])
    if w:
        return f"{rng.choice(_WORDS)}-{rng.randint(100, 999)}"
    return f"{rng.choice(_WORDS)}-{rng.randint(100, 999)}"


def _date(rng: random.Random) -> str:
    return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _date_time(rng: random.Random) -> str:
    return f"{_date(rng)}T{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}:00Z"


def _by_format(fmt: str, rng: random.Random, name: str | None) -> str | None:
    f = fmt.lower()
    if f in ("date-time", "datetime", "date_time", "iso8601", "iso-8601", "timestamp"):
        return _date_time(rng)
    if f == "date":
        return _date(rng)
    if f == "time":
        return f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}:00"
    if f in ("email", "idn-email"):
        return f"{rng.choice(_FIRST).lower()}.{rng.choice(_LAST).lower()}@example.com"
    if f in ("uuid", "guid"):
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if f in ("uri", "url", "iri", "uri-reference", "iri-reference"):
        return f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1, 999)}"
    if f in ("hostname", "idn-hostname"):
        return f"{rng.choice(_WORDS)}.example.com"
    if f == "ipv4":
        return f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    if f == "ipv6":
        return f"2001:db8::{rng.randint(1, 0xFFFF):x}"
    if f == "byte":
        return "aGVsbG8gd29ybGQ="
    if f == "binary":
        return "hello world"
    if f == "password":
        return "S3cure!pass" + str(rng.randint(10, 99))
    if f == "duration":
        return f"PT{rng.randint(1, 59)}M"
    if f == "int64" or f == "int32":
        return str(rng.randint(1, 5000))
    return None


def _search(pattern: str, text: str) -> bool:
    """Does the spec's ``pattern`` match in ``text``? RE2, linear time; True for a pattern RE2
    cannot run (see :mod:`callbench.specs.patterns`: nothing checks it anywhere)."""
    return compile_pattern(pattern).search(text)


def _json_type(value: Any) -> str:
    """As :func:`callbench.specs.schema.json_type`, but a whole float (an example written 3.0) is an
    integer, as JSON Schema counts it."""
    return "integer" if isinstance(value, float) and value.is_integer() else json_type(value)


def _plain(value: Any) -> Any:
    """A frozen spec value (tuples, read-only mappings) as plain JSON."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _keeps(value: Any, schema: Mapping[str, Any], depth: int = 0) -> bool:
    """Does ``value`` keep ``schema`` (type, bounds, required keys, declared keys)? A cheap
    check for examples and defaults, not a validator: it errs on the side of 'no'."""
    if depth > 8:
        return False
    types = schema_type(schema)
    kind = _json_type(value)
    if types and not (kind in types or (kind == "integer" and "number" in types)):
        return False
    if not types and isinstance(value, Mapping | list) and not ("properties" in schema or "items" in schema):
        return depth == 0 and not schema  # free-form: fine only where nothing is said
    if bounds_violation(value, schema) is not None:
        return False
    if isinstance(value, Mapping):
        props = object_properties(schema)
        if not required_properties(schema) <= set(value):
            return False
        ap = schema.get("additionalProperties")
        if props and ap is not True and not isinstance(ap, Mapping) and not set(value) <= set(props):
            return False
        return all(_keeps(v, props[k], depth + 1) for k, v in value.items() if k in props and isinstance(props[k], Mapping))
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return all(_keeps(v, items, depth + 1) for v in value)
    if isinstance(value, str) and isinstance(schema.get("format"), str):
        fmt = schema["format"].lower()
        if fmt == "date-time" and not re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", value):
            return False
        if fmt == "date" and not re.fullmatch(r"\d{4}-\d\d-\d\d", value):
            return False
    return True


def _merge_all_of(schema: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """One flat schema from ``schema`` and its ``allOf`` members (own keywords win)."""
    out: dict[str, Any] = {}
    if depth > 8:
        return dict(schema)
    for sub in schema.get("allOf") or ():
        if isinstance(sub, Mapping):
            merged = _merge_all_of(sub, depth + 1)
            props = {**out.get("properties", {}), **dict(merged.get("properties") or {})}
            req = [*out.get("required", []), *[r for r in merged.get("required") or () if isinstance(r, str)]]
            out.update(merged)
            if props:
                out["properties"] = props
            if req:
                out["required"] = list(dict.fromkeys(req))
    own = {k: v for k, v in schema.items() if k != "allOf"}
    props = {**out.get("properties", {}), **dict(own.get("properties") or {})}
    req = [*out.get("required", []), *[r for r in own.get("required") or () if isinstance(r, str)]]
    out.update(own)
    if props:
        out["properties"] = props
    if req:
        out["required"] = list(dict.fromkeys(req))
    return out


class _Values:
    """Seeded value generator; ``optional`` in [0, 1]: the share of optional properties kept."""

    def __init__(self, rng: random.Random, optional: float = 0.5, max_depth: int = 5, use_examples: bool = True,
                 read_only: bool = False):
        self.rng = rng
        self.optional = optional
        self.max_depth = max_depth
        self.use_examples = use_examples
        self.read_only = read_only  # a response: optional readOnly properties are kept like the others

    def value(self, schema: Any, name: str | None = None, depth: int = 0, examples: tuple[Any, ...] = ()) -> Any:
        rng = self.rng
        if depth > self.max_depth + 8:  # a recursion no optional branch ends: stop it here
            return None
        if not isinstance(schema, Mapping) or not schema:
            for ex in examples:
                if isinstance(ex, str | int | float | bool):
                    return ex
            return _string_by_name(name, rng)
        if "const" in schema:
            return _plain(schema["const"])
        cands = list(examples)
        for key in ("example", "x-example", "default"):
            if key in schema:
                cands.append(schema[key])
        ex = schema.get("examples")
        if isinstance(ex, tuple | list):
            cands.extend(ex)
        if not self.use_examples:
            cands = []
        for c in cands:
            c = _plain(c)
            if c is not None and _keeps(c, schema):
                return c
        if "allOf" in schema:
            merged = _merge_all_of(schema)
            if "allOf" not in merged:
                return self.value(merged, name, depth)
        enum = schema.get("enum")
        if isinstance(enum, tuple | list) and enum:
            members = [_plain(v) for v in enum if v is not None]
            members = [v for v in members if bounds_violation(v, {k: v2 for k, v2 in schema.items() if k != "enum"}) is None] or members
            if members:
                return rng.choice(members)
        for kw in ("oneOf", "anyOf"):
            branches = [b for b in schema.get(kw) or () if isinstance(b, Mapping)]
            if branches and not any(k in schema for k in ("type", "properties", "items")):
                if depth >= self.max_depth and any(schema_type(b) == {"null"} for b in branches):
                    return None  # deep in a recursion: the null branch ends it
                # a typed branch first: an empty ``{}`` branch (anything) tells nothing
                usable = [b for b in branches if schema_type(b) != {"null"}] or branches
                usable = [b for b in usable if b] or usable
                return self.value(usable[0], name, depth + 1)
        types = schema_type(schema) - {"null"}
        declared = schema.get("type")
        order = [t for t in (declared if isinstance(declared, tuple | list) else [declared]) if t in types]
        order += [t for t in ("object", "array", "string", "integer", "number", "boolean") if t in types and t not in order]
        kind = order[0] if order else ("null" if schema_type(schema) == {"null"} else "string")
        if kind == "object":
            return self.obj(schema, depth)
        if kind == "array":
            return self.array(schema, name, depth)
        if kind == "integer":
            return self.integer(schema, name)
        if kind == "number":
            return self.number(schema, name)
        if kind == "boolean":
            return rng.random() < 0.7
        if kind == "null":
            return None
        return self.string(schema, name)

    # -- scalars -------------------------------------------------------------------------
    def string(self, schema: Mapping[str, Any], name: str | None) -> str:
        rng = self.rng
        lo = schema.get("minLength") if isinstance(schema.get("minLength"), int) else 0
        hi = schema.get("maxLength") if isinstance(schema.get("maxLength"), int) else None
        pattern = schema.get("pattern")
        fmt = schema.get("format")
        s = _by_format(fmt, rng, name) if isinstance(fmt, str) else None
        if s is None:
            s = _string_by_name(name, rng)
        if hi is not None and len(s) > hi:
            s = s[:hi] if hi > 0 else ""
        if len(s) < lo:
            s = s + "".join(rng.choice(string.ascii_lowercase) for _ in range(lo - len(s)))
        if isinstance(pattern, str) and (not compile_pattern(pattern).checked or not _search(pattern, s)):
            # the realistic value does not fit (or cannot be checked in linear time: a lookbehind,
            # a backreference): a string made from the pattern itself
            try:
                return string_for_pattern(pattern, rng, attempts=12, min_len=lo, max_len=hi)
            except RegexUnsupported:
                pass
        return s

    def _bounds(self, schema: Mapping[str, Any]) -> tuple[float | None, float | None]:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        lo = lo if isinstance(lo, int | float) and not isinstance(lo, bool) else None
        hi = hi if isinstance(hi, int | float) and not isinstance(hi, bool) else None
        emin, emax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(emin, int | float) and not isinstance(emin, bool):
            lo = emin if lo is None else max(lo, emin)
        if isinstance(emax, int | float) and not isinstance(emax, bool):
            hi = emax if hi is None else min(hi, emax)
        return lo, hi

    def integer(self, schema: Mapping[str, Any], name: str | None) -> int:
        n = _norm(name)
        lo, hi = self._bounds(schema)
        excl_lo = schema.get("exclusiveMinimum") is True or (
            isinstance(schema.get("exclusiveMinimum"), int | float) and lo == schema.get("exclusiveMinimum")
        )
        excl_hi = schema.get("exclusiveMaximum") is True or (
            isinstance(schema.get("exclusiveMaximum"), int | float) and hi == schema.get("exclusiveMaximum")
        )
        if n in ("limit", "pagesize", "perpage", "maxresults", "count", "size", "top", "per_page", "first"):
            v = self.rng.choice([10, 20, 25, 50])
        elif n in ("page", "pagenumber", "pageno"):
            v = self.rng.randint(1, 5)
        elif n in ("offset", "skip", "start"):
            v = self.rng.choice([0, 20, 40])
        elif n in ("year",):
            v = 2024
        elif n in ("month",):
            v = self.rng.randint(1, 12)
        elif n in ("age",):
            v = self.rng.randint(21, 70)
        elif n.endswith("id") or n in ("number", "no"):
            v = self.rng.randint(1000, 99999)
        else:
            v = self.rng.randint(1, 100)
        lo_i = None if lo is None else (int(lo) + 1 if excl_lo and float(lo).is_integer() else int(-(-lo // 1)))
        hi_i = None if hi is None else (int(hi) - 1 if excl_hi and float(hi).is_integer() else int(hi // 1))
        if lo_i is not None and v < lo_i:
            v = lo_i if hi_i is None else min(lo_i + self.rng.randint(0, 3), hi_i)
        if hi_i is not None and v > hi_i:
            v = hi_i if lo_i is None else max(hi_i - self.rng.randint(0, 3), lo_i)
        mult = schema.get("multipleOf")
        if isinstance(mult, int) and not isinstance(mult, bool) and mult > 0 and v % mult:
            up = v + (mult - v % mult)
            down = v - v % mult
            v = up if hi_i is None or up <= hi_i else down
        return int(v)

    def number(self, schema: Mapping[str, Any], name: str | None) -> float | int:
        n = _norm(name)
        lo, hi = self._bounds(schema)
        if "lat" in n:
            v: float = 48.8566
        elif "lon" in n or "lng" in n:
            v = 2.3522
        elif n in ("price", "amount", "total", "cost", "balance"):
            v = 19.99
        else:
            v = round(self.rng.uniform(1, 100), 2)
        if lo is not None and v <= lo:
            v = lo + 1 if hi is None or lo + 1 < hi else (lo + hi) / 2
        if hi is not None and v >= hi:
            v = hi - 1 if lo is None or hi - 1 > lo else (lo + hi) / 2
        mult = schema.get("multipleOf")
        if isinstance(mult, int | float) and not isinstance(mult, bool) and mult > 0:
            k = int(v / mult) or 1
            v = k * mult
            if isinstance(mult, int):
                v = int(v)
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        return v

    # -- containers ----------------------------------------------------------------------
    def array(self, schema: Mapping[str, Any], name: str | None, depth: int) -> list[Any]:
        lo = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        hi = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        if depth >= self.max_depth:
            n = lo
        else:
            n = max(lo, 1 if hi is None or hi >= 1 else 0)
            if hi is None or hi >= 2:
                n = max(n, self.rng.choice([1, 2]))
        items = schema.get("items")
        out: list[Any] = []
        singular = name[:-1] if name and name.endswith("s") else name
        tries = 0
        while len(out) < n and tries < n * 4 + 4:
            tries += 1
            v = self.value(items, singular, depth + 1)
            if schema.get("uniqueItems") and any(json.dumps(v, sort_keys=True) == json.dumps(x, sort_keys=True) for x in out):
                continue
            out.append(v)
        if len(out) > 1 and len({json.dumps(x, sort_keys=True) for x in out}) < len(out):
            out = out[:1] if lo <= 1 else out
        return out

    def obj(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        props = object_properties(schema)
        required = required_properties(schema)
        out: dict[str, Any] = {}
        for pname, pschema in props.items():
            if pname in required:
                pick = True
            elif depth >= self.max_depth or (not self.read_only and isinstance(pschema, Mapping) and pschema.get("readOnly") is True):
                pick = False
            else:
                pick = self.rng.random() < self.optional
            if pick:
                out[pname] = self.value(pschema, pname, depth + 1)
        ap = schema.get("additionalProperties")
        # required but undeclared (vestorly's ``name``): sent, as the spec requires it (callbench's
        # loader and grammar count a required name as part of the object even where
        # ``additionalProperties: false`` contradicts it)
        for pname in sorted(required - set(props)):
            out[pname] = self.value(ap if isinstance(ap, Mapping) else None, pname, depth + 1)
        if not props and depth < self.max_depth:
            ap = schema.get("additionalProperties")
            if ap is True or isinstance(ap, Mapping) or (ap is None and "properties" not in schema):
                if ap is not None:
                    out.setdefault("label", self.value(ap if isinstance(ap, Mapping) else None, "label", depth + 1))
        return out


def synthesize_value(schema: Any, *, seed: int = 0, name: str | None = None, optional: float = 0.5, examples: bool = True,
                     read_only: bool = False) -> Any:
    """A JSON value for ``schema`` (see the module docstring for where values come from).
    ``examples=False``: never the schema's ``example``/``examples``/``x-example``/``default`` (a
    value that differs from the documented one, such as a second test input). ``read_only``: the
    value is a response, whose optional ``readOnly`` properties are kept like the others (a
    request leaves them out)."""
    return _Values(random.Random(seed), optional, use_examples=examples, read_only=read_only).value(schema, name)


# ============================================================================ serialization
def _wire_text(value: Any) -> str:
    """A scalar as text on the wire (JavaScript ``String(v)``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _style(p: Parameter) -> tuple[str, bool]:
    default = {"query": "form", "cookie": "form", "path": "simple", "header": "simple"}[p.location]
    style = p.style if isinstance(p.style, str) else default
    explode = p.explode if isinstance(p.explode, bool) else style == "form"
    return style, explode


def serialize_query(p: Parameter, value: Any) -> dict[str, Any]:
    """Query parameter -> the entries axios's ``params`` holds for it, as its style says:
    ``form`` + explode (default): arrays stay arrays (repeated keys), object properties become
    parameters of their own; ``form`` without explode: ``a,b`` / ``k,v,k2,v2``;
    ``spaceDelimited``/``pipeDelimited``: ``a b`` / ``a|b``; ``deepObject``: ``name[k]`` keys."""
    style, explode = _style(p)
    if isinstance(value, dict):
        if style == "deepObject":
            return {f"{p.name}[{k}]": v for k, v in value.items()}
        if explode:
            return dict(value)
        return {p.name: ",".join(f"{k},{_wire_text(v)}" for k, v in value.items())}
    if isinstance(value, list) and not explode:
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(style, ",")
        return {p.name: sep.join(_wire_text(v) for v in value)}
    return {p.name: value}


def serialize_simple(p: Parameter, value: Any) -> str:
    """Header or path parameter text (``simple``; ``label``/``matrix`` for path)."""
    style, explode = _style(p)
    if isinstance(value, dict):
        pairs = [(str(k), _wire_text(v)) for k, v in value.items()]
        body = ",".join(f"{k}={v}" for k, v in pairs) if explode else ",".join(f"{k},{v}" for k, v in pairs)
    elif isinstance(value, list):
        items = [_wire_text(v) for v in value]
        if style == "label":
            return "." + ("." if explode else ",").join(items)
        if style == "matrix":
            return "".join(f";{p.name}={v}" for v in items) if explode else f";{p.name}=" + ",".join(items)
        return ",".join(items)
    else:
        body = _wire_text(value)
    if style == "label":
        return "." + body
    if style == "matrix":
        return f";{p.name}={body}"
    return body


# ============================================================================ the request
@dataclass
class RequestPlan:
    """One request for one operation, before it is written as code.

    ``config``: the WAPIIBench config (what the code sends). ``path_values``: path parameter ->
    the text in the URL (serialized, percent-encoded). ``body_media``: the chosen media type.
    ``raw``: location -> name -> the JSON value chosen before serialization (``query``, ``header``,
    ``path``, ``body``). ``credentials``: (location, name) of the credential entries added.
    """

    operation: Operation
    config: dict[str, Any]
    server: str
    path_values: dict[str, str] = field(default_factory=dict)
    body_media: str | None = None
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    credentials: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # optional parameters left out (cookies, ...)
    label: str | None = None  # the fragment label the URL carries (``#X-Amz-Target=Op``)
    # the fixed query of a query-dispatched path key as the code writes it in the URL
    # (``Action=AssumeRole``), and its names: ``config`` (the request as recorded) holds those
    # pairs in ``params``, where the sandbox's recorder puts a URL's query
    url_query: str = ""
    url_query_names: frozenset[str] = frozenset()

    def code_url(self, url: str | None = None) -> str:
        """``url`` (default: the config's) with the fixed query written before any fragment."""
        url = self.config["url"] if url is None else url
        if not self.url_query:
            return url
        head, sep, frag = url.partition("#")
        return head + ("&" if "?" in head else "?") + self.url_query + sep + frag

    def code_config(self) -> dict[str, Any]:
        """The config the code writes: without the ``params`` the URL already carries."""
        return _code_form(self, self.config)[0]


def _raw_param(spec: ApiSpec, op: Operation, p: Parameter) -> Mapping[str, Any]:
    """The parameter object as the document writes it (for its ``example``/``examples``)."""
    item = spec.document.get("paths", {}).get(op.path) if isinstance(spec.document.get("paths"), Mapping) else None
    if not isinstance(item, Mapping):
        return {}
    for holder in (item.get(op.method), item):
        if not isinstance(holder, Mapping):
            continue
        for raw in holder.get("parameters") or ():
            if isinstance(raw, Mapping) and raw.get("name") == p.name and raw.get("in") == p.location:
                return raw
    return {}


def _param_examples(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    if "example" in raw:
        out.append(raw["example"])
    if "x-example" in raw:
        out.append(raw["x-example"])
    ex = raw.get("examples")
    if isinstance(ex, Mapping):
        for v in ex.values():
            if isinstance(v, Mapping) and "value" in v:
                out.append(v["value"])
    return tuple(out)


def _credential_entries(spec: ApiSpec, op: Operation) -> list[tuple[str, str, str]]:
    """(location "headers"/"params"/"cookie", name, placeholder) of the first alternative of the
    operation's security requirement that a request can carry (``[]``: none)."""
    for req in op.security:
        if not req:
            continue
        out: list[tuple[str, str, str]] = []
        ok = True
        for scheme_name in req:
            scheme = spec.security_schemes.get(scheme_name)
            if not isinstance(scheme, Mapping):
                ok = False
                break
            kind = scheme.get("type")
            if kind == "apiKey":
                name, where = scheme.get("name"), scheme.get("in")
                if not isinstance(name, str) or not name or where not in ("header", "query", "cookie"):
                    ok = False
                    break
                out.append(({"header": "headers", "query": "params"}.get(where, "cookie"), name, "<key>"))
            elif kind == "http":
                how = str(scheme.get("scheme", "")).lower()
                value = {"bearer": "Bearer <token>", "basic": "Basic <credentials>"}.get(how)
                if value is None:
                    value = f"{how.capitalize() or 'Token'} <credentials>"
                out.append(("headers", "Authorization", value))
            elif kind in ("oauth2", "openIdConnect"):
                out.append(("headers", "Authorization", "Bearer <token>"))
            elif kind == "mutualTLS":
                continue
            else:
                ok = False
                break
        auth = {v for loc, n, v in out if loc == "headers" and n.lower() == "authorization"}
        if ok and len(auth) <= 1:
            return out
    return []


def _bare_media(mt: str) -> str:
    return mt.split(";", 1)[0].strip().lower()


def _choose_media(op: Operation) -> tuple[str, Mapping[str, Any]] | None:
    if op.request_body is None or not op.request_body.content:
        return None
    content = op.request_body.content
    for mt, schema in content.items():
        bare = _bare_media(mt)
        if bare == "application/json" or bare.endswith("+json"):
            return mt, schema
    for form in _FORM_TYPES:
        for mt, schema in content.items():
            if _bare_media(mt) == form:
                return mt, schema
    mt, schema = next(iter(content.items()))
    return mt, schema


def _content_type(mt: str) -> str:
    bare = _bare_media(mt)
    if bare in ("*/*", "") or bare.endswith("/*"):
        return "application/json" if bare in ("*/*", "application/*", "") else bare[:-1] + "octet-stream"
    return bare


def _stringify(value: Any) -> Any:
    """A form body as it travels: every leaf a string (the sandbox decodes it that way)."""
    if isinstance(value, dict):
        return {k: _stringify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify(v) for v in value]
    if value is None:
        return ""
    return _wire_text(value)


def _encode_segment(text: str) -> str:
    return quote(text, safe=_PATH_SAFE)


def _server(spec: ApiSpec) -> str:
    s = spec.servers[0] if spec.servers else "/"
    return "" if s == "/" else s.rstrip("/")


def plan_request(
    spec: ApiSpec,
    op: Operation,
    *,
    seed: int = 0,
    optional: float = 0.5,
    with_body: bool | None = None,
) -> RequestPlan:
    """A valid request for ``op``: every required parameter, each optional one with probability
    ``optional`` (cookie parameters only when required), the body when it is required, has
    required properties or ``with_body`` says so (None: with probability ``optional``), and the
    credential of the first alternative of the operation's security requirement."""
    rng = random.Random(f"{seed}:{op.method}:{op.path}")
    vals = _Values(rng, optional)
    raw: dict[str, dict[str, Any]] = {"query": {}, "header": {}, "path": {}, "cookie": {}, "body": {}}
    creds = _credential_entries(spec, op)
    cred_headers = {n.lower() for loc, n, _ in creds if loc == "headers"}
    cred_params = {n for loc, n, _ in creds if loc == "params"}
    if any(loc == "cookie" for loc, _, _ in creds):
        cred_headers.add("cookie")
    params: dict[str, Any] = {}
    headers: dict[str, Any] = {"Accept": DEFAULT_ACCEPT}
    cookies: list[str] = []
    dropped: list[str] = []
    for p in op.parameters:
        if p.location == "path":
            continue
        lname = p.name.lower()
        if p.location == "header" and lname in cred_headers:
            continue
        if p.location == "header" and lname in ("accept", "content-type") and not p.required:
            continue
        if p.location == "query" and p.name in cred_params:
            continue
        keep = p.required or (p.location != "cookie" and not p.deprecated and rng.random() < optional)
        if not keep:
            continue
        # a parameter where one of the spec's schemes puts a credential (Trello's ``token``)
        # holds the dataset's placeholder, as every credential does
        cred = p.location in ("query", "header") and spec.is_credential(p.location, p.name)
        if cred and not p.required:
            continue
        value = "<key>" if cred else vals.value(p.schema, p.name, 0, _param_examples(_raw_param(spec, op, p)))
        raw[p.location][p.name] = value
        if p.location == "query":
            params.update(serialize_query(p, value))
        elif p.location == "header":
            if lname in ("accept", "content-type"):  # one spelling: the conventional one
                headers.pop("Accept" if lname == "accept" else "Content-Type", None)
            headers[p.name] = serialize_simple(p, value)
        else:
            cookies.append(f"{p.name}={quote(_wire_text(value) if not isinstance(value, list | dict) else serialize_simple(p, value), safe='')}")
    for loc, name, placeholder in creds:
        if loc == "headers":
            headers[name] = placeholder
        elif loc == "params":
            params[name] = placeholder
        else:
            cookies.append(f"{name}={placeholder}")
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    # path: values must make the URL hit this operation (not a better-ranked template)
    server = _server(spec)
    path_values: dict[str, str] = {}
    url = None
    # A path key with a query string or a fragment (``/do?action=x``, ``/#Action=X``,
    # ``/#X-Amz-Target=Op``): the pairs it fixes travel as query parameters, a fragment that is a
    # label (it names the operation among several sending the same request) stays in the URL. The
    # loader says which is which (``fixed_query``/``fragment_label``) where it knows; else the
    # query string is read here and the fragment kept.
    path_part = _path_part(op.path)
    exact = path_part == op.path
    label = None
    url_items: list[str] = []
    if not exact:
        fixed_of = getattr(spec, "fixed_query", None)
        label_of = getattr(spec, "fragment_label", None)
        if fixed_of is not None and label_of is not None:
            pairs = list(fixed_of(op))
            label = label_of(op)
        else:
            _, _, frag = op.path.partition("#")
            query = op.path.partition("#")[0].partition("?")[2]
            pairs = [(k, v) for k, _, v in (x.partition("=") for x in query.split("&")) if k]
            label = frag or None
        # The pairs the path key writes (its query string, and the ``name=value`` items of a
        # query-dispatch fragment) go into the URL, as the grammar writes them (its ``url_plan``):
        # the URL then names the operation by itself. Bare fragment names (``#ResourceArn``)
        # travel in ``params``.
        key_query = op.path.partition("#")[0].partition("?")[2]
        key_frag = op.path.partition("#")[2] if label is None else ""
        # (a bare fragment name, ``#cors``, is that name with a value of its parameter's schema)
        written = [x for x in key_query.split("&") if x] + [
            x if "=" in x else f"{x}={{{unquote(x)}}}" for x in key_frag.split("&") if x
        ]
        in_url: set[str] = set()
        for item in dict.fromkeys(written):
            k, eq, v = item.partition("=")
            name = unquote(k)
            if _HOLE_RX.search(v):
                p = op.parameter("query", name)
                chosen = vals.value(p.schema if p is not None else None, name)
                raw["query"][name] = chosen
                v = _HOLE_RX.sub(lambda _m, c=chosen: quote(_wire_text(c), safe=""), v)
            url_items.append(f"{k}{eq}{v}")
            in_url.add(name)
            params[name] = unquote(v.replace("+", " "))  # the string the URL sends
        for k, v in pairs:
            if k in params or k in in_url:
                continue
            if v is None:
                p = op.parameter("query", k)
                v = vals.value(p.schema if p is not None else None, k)
                raw["query"][k] = v
                if p is not None:
                    params.update(serialize_query(p, v))
                    continue
            params[k] = v
    for attempt in range(6):
        prng = random.Random(f"{seed}:{op.method}:{op.path}:path:{attempt}")
        pv = _Values(prng, optional)
        path_values = {}
        for p in op.params_in("path"):
            examples = _param_examples(_raw_param(spec, op, p)) if attempt == 0 else ()
            value = pv.value(p.schema, p.name, 0, examples)
            text = serialize_simple(p, value)
            if not text or text in (".", ".."):
                text = f"{_norm(p.name) or 'id'}{prng.randint(1, 999)}"
            raw["path"][p.name] = value
            path_values[p.name] = _encode_segment(text)
        candidate = server + (_fill(path_part, path_values) or "/") + (f"#{label}" if label else "")
        try:
            m = spec.match(op.method, candidate, params)
        except TypeError:  # a loader without query-aware matching
            m = spec.match(op.method, candidate)
        if (m is not None and (m.operation is op or _twins(m.operation, op))) or (not exact and m is None):
            url = candidate
            break
        other = m.operation if m is not None else None
    if url is None:
        where = f"another operation ({other.method.upper()} {other.path})" if other is not None else "no operation"
        raise SynthesisError(
            f"{op.method.upper()} {op.path}: no path values found whose URL the spec maps to this operation "
            f"(the URLs tried match {where})"
        )
    config: dict[str, Any] = {"method": op.method, "url": url}
    if params:
        config["params"] = params
    config["headers"] = headers
    body_media = None
    chosen = _choose_media(op)
    if chosen is not None:
        mt, schema = chosen
        rb = op.request_body
        assert rb is not None
        need = rb.required or bool(required_properties(schema))
        if need or (with_body if with_body is not None else rng.random() < optional) or op.method in BODY_METHODS:
            body = vals.value(schema, None, 0) if isinstance(schema, Mapping) and schema else {}
            ctype = _content_type(mt)
            if _bare_media(ctype) in _FORM_TYPES:
                body = _stringify(body)
            elif not (ctype == "application/json" or ctype.endswith("+json")) and isinstance(body, dict | list):
                pass  # a structured body under another media type: sent as the object
            body_media = ctype
            for k in [k for k in headers if k.lower() == "content-type"]:
                del headers[k]
            headers["Content-Type"] = ctype
            config["data"] = body
            raw["body"] = body if isinstance(body, dict) else {"(body)": body}
    return RequestPlan(
        op, config, server, path_values, body_media, raw, [(loc, n) for loc, n, _ in creds], dropped, label,
        "&".join(url_items), frozenset(unquote(x.partition("=")[0]) for x in url_items),
    )


def _twins(a: Operation, b: Operation) -> bool:
    """Do two operations send the same requests (same method, same path but for the names of
    its parameters: googleapis' ``/v1/{name}:run`` and ``/v1/{workspace}:run``)? No URL can pick
    one: a request for either is scored against the one the spec lists first."""
    return a.method == b.method and _HOLE_RX.sub("{}", a.path) == _HOLE_RX.sub("{}", b.path)


def _path_part(path: str) -> str:
    """A path key without the fragment or query string some specs put in it."""
    return path.partition("#")[0].partition("?")[0]


def _fill(path: str, values: Mapping[str, str]) -> str:
    return re.sub(r"\{([^{}]*)\}", lambda m: values.get(m.group(1), m.group(0)), path)


# ============================================================================ JavaScript
def _js_str(value: str, q: str = "'") -> str:
    body = json.dumps(value, ensure_ascii=False)[1:-1]
    if q != '"':
        body = body.replace('\\"', '"').replace(q, "\\" + q)
    if q == "`":
        body = body.replace("${", "\\${")
    return q + body + q


def _js_key(key: str, q: str) -> str:
    return key if _JS_IDENT.match(key) and key not in ("__proto__",) else _js_str(key, q)


def js_literal(value: Any, q: str = "'", indent: int | None = None, level: int = 0) -> str:
    """``value`` as a JavaScript literal: ``q``-quoted strings, bare keys where they are
    identifiers; one key per line with ``indent`` spaces (None: on one line)."""
    if isinstance(value, str):
        return _js_str(value, q)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        parts = [f"{_js_key(str(k), q)}: {js_literal(v, q, indent, level + 1)}" for k, v in value.items()]
    else:
        if not value:
            return "[]"
        parts = [js_literal(v, q, indent, level + 1) for v in value]
    o, c = ("{", "}") if isinstance(value, Mapping) else ("[", "]")
    if indent is None or not isinstance(value, Mapping):
        return o + (" " if o == "{" else "") + ", ".join(parts) + (" " if o == "{" else "") + c
    pad, end = " " * indent * (level + 1), " " * indent * level
    return o + "\n" + ",\n".join(pad + p for p in parts) + "\n" + end + c


@dataclass
class Expectation:
    """The verdict an invalid request should get when scored against the valid one.

    ``sample``: the sample verdicts allowed; ``endpoint``/``url``/``method``: the endpoint
    verdicts (None: not looked at); ``argument``: (location, name, verdict) that must be among
    the argument verdicts."""

    sample: tuple[str, ...]
    url: str | None = None
    method: str | None = None
    argument: tuple[str, str, str] | None = None


@dataclass
class Invocation:
    """A request and the axios code that sends it.

    ``kind``: "valid" or one of :data:`INVALID_KINDS`; ``style``: one of :data:`STYLES`.
    ``config``: what the code sends. ``expected``: the config it is scored against (itself for
    a valid one, the valid request for an invalid one). ``program``: the whole program (starter +
    code). ``completion_full``: the text after ``axios.`` (None for ``axios(config)``).
    ``completion_args``: the text after ``axios.<method>('<url>',`` (None when the code does not
    start that way). ``definitions``: variables in scope (template style). ``grammar_setups``:
    the setups whose grammar claims to cover this code (an empty tuple: none does, e.g.
    ``axios.request``). ``allow_url_query``: the grammar option the code needs.
    ``description``: what the variant is (for reports)."""

    kind: str
    style: str
    operation: Operation
    config: dict[str, Any]
    expected: dict[str, Any]
    program: str
    completion_full: str | None
    completion_args: str | None
    definitions: dict[str, Any] | None = None
    grammar_setups: tuple[str, ...] = ()
    allow_url_query: bool = False
    expect: Expectation | None = None
    description: str = ""
    # the URL the code writes in ``axios.<method>('<url>',`` when it is not ``config["url"]``
    # (a query-dispatched operation's fixed query written in the URL): the ``args`` starter's URL
    args_url: str | None = None

    @property
    def starter_url(self) -> str:
        """The URL of the ``args`` setup's starter ``axios.<method>('<url>',``."""
        return self.args_url or self.config["url"]


def _task_text(op: Operation) -> str:
    text = " ".join((op.summary or op.operation_id or f"{op.method.upper()} {op.path}").split())
    return text[:200]


def _code_headers(cfg: dict[str, Any]) -> dict[str, Any]:
    """The headers the code writes: axios adds the default ``Accept`` by itself."""
    return {k: v for k, v in (cfg.get("headers") or {}).items() if not (k == "Accept" and v == DEFAULT_ACCEPT)}


def _code_args(cfg: dict[str, Any], method: str, *, q: str, indent: int | None, keep_params: bool = True) -> list[str]:
    headers = _code_headers(cfg)
    options: dict[str, Any] = {}
    if keep_params and cfg.get("params"):
        options["params"] = cfg["params"]
    if headers:
        options["headers"] = headers
    args: list[str] = []
    if method in BODY_METHODS:
        if "data" in cfg:
            args.append(js_literal(cfg["data"], q, indent))
        elif options:
            args.append("undefined")
    elif "data" in cfg:
        options["data"] = cfg["data"]
    if options:
        args.append(js_literal(options, q, indent))
    return args


_URL_SLOT = "__callbench_url_slot__"


def _method_call(cfg: dict[str, Any], url_literal: str, *, q: str, indent: int | None, keep_params: bool = True) -> tuple[str, str | None]:
    """(text after ``axios.``, text after ``axios.<method>(<url>,`` or None when no comma follows).
    A method axios has no shortcut for (``trace``, ``connect``) is written
    ``request({method, url, ...})`` (``axios.trace`` is undefined), with no ``args`` text."""
    method = cfg["method"]
    if method not in AXIOS_METHODS:
        options: dict[str, Any] = {"method": method, "url": _URL_SLOT}
        if keep_params and cfg.get("params"):
            options["params"] = cfg["params"]
        if headers := _code_headers(cfg):
            options["headers"] = headers
        if "data" in cfg:
            options["data"] = cfg["data"]
        lit = js_literal(options, q, indent)
        slot = js_literal(_URL_SLOT, q, None)
        assert lit.count(slot) == 1, lit  # the slot's text is unique, and a plain string literal
        return f"request({lit.replace(slot, url_literal)});\n", None
    args = _code_args(cfg, method, q=q, indent=indent, keep_params=keep_params)
    full = f"{method}({', '.join([url_literal, *args])});\n"
    rest = (" " + ", ".join(args) + ");\n") if args else None
    return full, rest


def _ident_for(name: str, taken: set[str]) -> str:
    words = _words(name) or ["value"]
    ident = words[0] + "".join(w.capitalize() for w in words[1:])
    if not _JS_IDENT.match(ident) or ident in _RESERVED_JS:
        ident = "param" + ident.capitalize() if _JS_IDENT.match("param" + ident.capitalize()) else "param"
    base, i = ident, 2
    while ident in taken:
        ident, i = f"{base}{i}", i + 1
    taken.add(ident)
    return ident


def _query_string(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(``a=1&t=x&t=y``, the params as the URL carries them: strings, repeated keys as lists)."""
    parts: list[str] = []
    seen: dict[str, Any] = {}
    for k, v in params.items():
        items = v if isinstance(v, list) else [v]
        for item in items:
            parts.append(f"{quote(str(k), safe='')}={quote(_wire_text(item), safe='')}")
        if isinstance(v, list):
            seen[k] = [_wire_text(x) for x in v] if len(v) != 1 else _wire_text(v[0])
        else:
            seen[k] = _wire_text(v)
    return "&".join(parts), seen


def _program(completion_full: str | None, whole: str | None, task: str) -> str:
    starter = _STARTER.replace("{task}", task)
    if completion_full is not None:
        return starter + "axios." + completion_full
    return starter + (whole or "")


def valid_invocations(spec: ApiSpec, op: Operation, *, seed: int = 0, styles: tuple[str, ...] = STYLES) -> list[Invocation]:
    """Valid requests for ``op`` in the given code styles: ``method`` twice (required arguments
    only, then with optional ones), then one per other style (``url_query`` only when there are
    query parameters)."""
    task = _task_text(op)
    out: list[Invocation] = []
    minimal = plan_request(spec, op, seed=seed, optional=0.0, with_body=None)
    fuller = plan_request(spec, op, seed=seed + 1, optional=0.6, with_body=True)
    m = op.method
    for style in styles:
        if style == "method":
            for plan, q, indent, what in ((minimal, "'", None, "required only"), (fuller, '"', 2, "with optional arguments")):
                cfg = plan.config
                code_cfg, code_url = _code_form(plan, cfg)
                full, rest = _method_call(code_cfg, _js_str(code_url, q), q=q, indent=indent)
                args_text = rest
                setups = ("full", "args") if rest is not None else ("full",)
                out.append(
                    Invocation("valid", "method", op, cfg, cfg, _program(full, None, task), full, args_text,
                               grammar_setups=setups if m in AXIOS_METHODS else (), description=what,
                               args_url=code_url if code_url != cfg["url"] else None)
                )
        elif style == "template":
            cfg = fuller.config
            defs: dict[str, Any] = {}
            taken: set[str] = set()
            values = {}
            for p in op.params_in("path"):
                ident = _ident_for(p.name, taken)
                defs[ident] = fuller.path_values[p.name]
                values[p.name] = "${" + ident + "}"
            tmpl = fuller.code_url(fuller.server + (_fill(_path_part(op.path), values) or "/") + (f"#{fuller.label}" if fuller.label else ""))
            body = json.dumps(tmpl, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("`", "\\`")
            # keep the ${ident} holes: json.dumps leaves `$` and braces as they are
            full, _ = _method_call(_code_form(fuller, cfg)[0], "`" + body + "`", q="'", indent=None)
            out.append(
                Invocation("valid", "template", op, cfg, cfg, _program(full, None, task), full, None,
                           definitions=defs or None, grammar_setups=("full",) if m in AXIOS_METHODS else (),
                           description="template-literal URL")
            )
        elif style in ("config", "request"):
            cfg = fuller.config
            body = {k: v for k, v in cfg.items() if k != "headers"}
            headers = _code_headers(cfg)
            ordered: dict[str, Any] = {"method": cfg["method"], "url": cfg["url"]}
            if "params" in body:
                ordered["params"] = body["params"]
            if headers:
                ordered["headers"] = headers
            if "data" in body:
                ordered["data"] = body["data"]
            lit = js_literal(ordered, "'", 2)
            if style == "config":
                whole = f"axios({lit});\n"
                out.append(Invocation("valid", "config", op, cfg, cfg, _program(None, whole, task), None, None,
                                      description="axios(config)"))
            else:
                full = f"request({lit});\n"
                out.append(Invocation("valid", "request", op, cfg, cfg, _program(full, None, task), full, None,
                                      description="axios.request(config)"))
        elif style == "url_query":
            base = fuller.config
            if not base.get("params"):
                continue
            _, as_sent = _query_string(base["params"])
            cfg = {k: v for k, v in base.items()}
            cfg["params"] = as_sent
            # a query-dispatched operation's fixed pairs first (the grammar's URL starts with them)
            code_cfg, code_url = _code_form(fuller, base)
            qs, _ = _query_string(code_cfg.get("params") or {})
            head, sep, frag = code_url.partition("#")  # the query goes before a fragment label
            if qs:
                head += ("&" if "?" in head else "?") + qs
            url_lit = _js_str(head + sep + frag, "'")
            full, _ = _method_call(base, url_lit, q="'", indent=None, keep_params=False)
            out.append(
                Invocation("valid", "url_query", op, cfg, cfg, _program(full, None, task), full, None,
                           grammar_setups=("full",) if m in AXIOS_METHODS else (), allow_url_query=True,
                           description="query parameters in the URL")
            )
    return out


# ============================================================================ invalid variants
def _unknown_name(op: Operation) -> str:
    names = {p.name for p in op.parameters}
    name, i = "cbUnknownParam", 2
    while name in names:
        name, i = f"cbUnknownParam{i}", i + 1
    return name


def _wrong_value(schema: Any) -> Any | None:
    """A value of another JSON type than ``schema`` admits (None: no such scalar pick)."""
    if not isinstance(schema, Mapping):
        return None
    types = schema_type(schema) - {"null"}
    if not types:
        return None
    if types <= {"integer", "number"}:
        return "not-a-number"
    if types == {"boolean"}:
        return "maybe"
    if types == {"string"}:
        enum = schema.get("enum")
        return 12345 if not enum else 12345
    if types == {"array"}:
        return None
    if types == {"object"}:
        return "not-an-object"
    return None


def _code_form(plan: RequestPlan | None, cfg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``cfg`` as the code writes it, and its URL: the fixed query of a query-dispatched path key
    moves from ``params`` into the URL (see :attr:`RequestPlan.url_query`) when ``cfg`` still
    carries those pairs as the plan made them (a variant that dropped or changed one keeps it
    in ``params``)."""
    if plan is None or not plan.url_query_names:
        return cfg, cfg["url"]
    params = cfg.get("params") if isinstance(cfg.get("params"), dict) else {}
    base = plan.config.get("params") or {}
    if any(n not in params or params[n] != base.get(n) for n in plan.url_query_names):
        return cfg, cfg["url"]
    out = dict(cfg)
    rest = {k: v for k, v in params.items() if k not in plan.url_query_names}
    if rest:
        out["params"] = rest
    else:
        out.pop("params", None)
    return out, plan.code_url(cfg["url"])


def _invocation_from(plan_cfg: dict[str, Any], expected: dict[str, Any], op: Operation, kind: str, expect: Expectation,
                     description: str, *, args_ok: bool, url_override: str | None = None,
                     plan: RequestPlan | None = None) -> Invocation:
    method = plan_cfg["method"]
    code_cfg, url = _code_form(plan, plan_cfg)
    if plan is not None and plan.url_query_names and url == plan_cfg["url"]:
        args_ok = False  # without its fixed query the URL names no operation: no args starter
    url = url_override or url
    full, rest = _method_call(code_cfg, _js_str(url, "'"), q="'", indent=None)
    setups = ("full", "args") if args_ok and rest is not None else ("full",)
    return Invocation(kind, "method", op, plan_cfg, expected, _program(full, None, _task_text(op)), full,
                      rest if args_ok else None, grammar_setups=setups if method in AXIOS_METHODS else (),
                      expect=expect, description=description, args_url=url if url != plan_cfg["url"] else None)


def invalid_invocations(spec: ApiSpec, op: Operation, *, seed: int = 0) -> list[Invocation]:
    """One invalid variant per kind of :data:`INVALID_KINDS` that applies to ``op`` (e.g. no
    ``missing_required`` for an operation without required arguments), each in the ``method``
    style and scored against the valid request it was derived from."""
    base = plan_request(spec, op, seed=seed + 2, optional=0.3, with_body=None)
    exp = base.config
    out: list[Invocation] = []
    cred_names = {n for _, n in base.credentials}

    # unknown parameter: an extra query parameter no spec declares
    name = _unknown_name(op)
    cfg = _copy(exp)
    cfg.setdefault("params", {})[name] = "surprise"
    out.append(_invocation_from(cfg, exp, op, "unknown_parameter",
                                Expectation(("illegal",), argument=("params", name, "illegal")),
                                f"unknown query parameter '{name}'", plan=base, args_ok=True))

    # wrong type: a scalar argument given a value of another JSON type
    wt = _wrong_type_variant(spec, op, base, cred_names)
    if wt is not None:
        out.append(wt)

    # missing required: a required query/header parameter or body property left out
    mr = _missing_variant(op, base, cred_names)
    if mr is not None:
        out.append(mr)

    # wrong method: a method this URL does not have
    for m in AXIOS_METHODS:
        # headers too: they select header-dispatched operations (``#Content-Type`` labels)
        if m == op.method or _match(spec, m, exp["url"], exp.get("params"), exp.get("headers")) is not None:
            continue
        if _match(spec, op.method, exp["url"], exp.get("params"), exp.get("headers")) is None:
            break
        cfg = _copy(exp)
        cfg["method"] = m
        if m not in BODY_METHODS and op.method in BODY_METHODS and "data" in cfg:
            pass  # the body moves into the config (axios.get(url, {data}))
        out.append(_invocation_from(cfg, exp, op, "wrong_method",
                                    Expectation(("illegal",), method="illegal"),
                                    f"method {m.upper()} on a URL that lacks it", plan=base, args_ok=False))
        break

    # unknown path
    for i in range(6):
        tail = f"/cb-no-such-path-{i}/zz{i}/qq"
        url = base.server + tail
        if spec.match_paths(url):
            continue
        cfg = _copy(exp)
        cfg["url"] = url
        out.append(_invocation_from(cfg, exp, op, "unknown_path",
                                    Expectation(("illegal",), url="illegal"),
                                    f"path {tail} that the spec lacks", plan=base, args_ok=False))
        break
    return out


def _match(spec: ApiSpec, method: str, url: str, params: Any, headers: Any = None) -> Any:
    try:
        return spec.match(method, url, params, headers=headers if isinstance(headers, dict) else {})
    except TypeError:  # a loader without query- and header-aware matching
        return spec.match(method, url)


def _copy(cfg: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(cfg))


def _wrong_type_variant(spec: ApiSpec, op: Operation, base: RequestPlan, cred_names: set[str]) -> Invocation | None:
    exp = base.config
    # query and header parameters first (their grammar values are typed), then body properties
    for p in op.parameters:
        if p.location not in ("query", "header") or p.name in cred_names:
            continue
        if p.location == "header" and p.name.lower() in ("accept", "content-type", "authorization", "cookie"):
            continue
        style, explode = _style(p)
        if p.location == "query" and style in ("deepObject",):
            continue
        wrong = _wrong_value(p.schema)
        if wrong is None:
            continue
        loc = "params" if p.location == "query" else "headers"
        if loc == "headers" and not isinstance(wrong, str):
            continue  # a header travels as text: 12345 is the string '12345'
        exp2 = _copy(exp)
        if p.name not in (exp2.get(loc) or {}):  # the parameter must be one the task asks for
            good = _Values(random.Random(f"wrong:{p.name}")).value(p.schema, p.name)
            entries = serialize_query(p, good) if loc == "params" else {p.name: serialize_simple(p, good)}
            if p.name not in entries:
                continue
            exp2.setdefault(loc, {})[p.name] = entries[p.name]
        cfg = _copy(exp2)
        cfg[loc][p.name] = wrong
        return _invocation_from(cfg, exp2, op, "wrong_type",
                                Expectation(("wrong", "illegal"), argument=(loc, p.name, "incorrect_value")),
                                f"{p.location} parameter '{p.name}' = {wrong!r}", plan=base, args_ok=True)
    data = exp.get("data")
    media = base.body_media or ""
    if isinstance(data, dict) and _bare_media(media) not in _FORM_TYPES:
        props = op.body_properties()
        for key in list(data):
            wrong = _wrong_value(props.get(key))
            if wrong is None:
                continue
            cfg = _copy(exp)
            cfg["data"][key] = wrong
            return _invocation_from(cfg, exp, op, "wrong_type",
                                    Expectation(("wrong", "illegal"), argument=("data", key, "incorrect_value")),
                                    f"body property '{key}' = {wrong!r}", plan=base, args_ok=True)
    return None


def _missing_variant(op: Operation, base: RequestPlan, cred_names: set[str]) -> Invocation | None:
    exp = base.config
    for p in op.parameters:
        if not p.required or p.location not in ("query", "header") or p.name in cred_names:
            continue
        if p.location == "header" and p.name.lower() in ("accept", "content-type", "authorization", "cookie"):
            continue  # the scorer ignores Accept/Content-Type; credentials are not parameters
        if p.location == "query" and p.name in base.url_query_names:
            continue  # without a name its path key fixes, the request is another operation's (S3 ?cors)
        loc = "params" if p.location == "query" else "headers"
        cfg = _copy(exp)
        entries = cfg.get(loc) or {}
        if p.name not in entries:
            continue  # e.g. an exploded object parameter: no entry of its own
        del entries[p.name]
        if not entries and loc == "params":
            cfg.pop("params", None)
        return _invocation_from(cfg, exp, op, "missing_required",
                                Expectation(("wrong", "illegal"), argument=(loc, p.name, "missing")),
                                f"required {p.location} parameter '{p.name}' left out", plan=base, args_ok=True)
    data = exp.get("data")
    if isinstance(data, dict) and base.body_media and _bare_media(base.body_media) not in _FORM_TYPES:
        for key in sorted(op.body_required()):
            if key in data:
                cfg = _copy(exp)
                del cfg["data"][key]
                return _invocation_from(cfg, exp, op, "missing_required",
                                        Expectation(("wrong", "illegal"), argument=("data", key, "missing")),
                                        f"required body property '{key}' left out", plan=base, args_ok=True)
    return None
