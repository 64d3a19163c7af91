"""Spec retrieval for ``--context rag`` and ``--context spec-excerpt`` (the WAPIIBench paper's RAG
settings).

Documents are the spec's operations. What the model reads is :func:`operation_excerpt`, the
compact text a developer reads in an endpoint's documentation (method and path, summary,
description, parameters with location/type/required/enum, request body fields); what the query
is matched against is the endpoint's names and summary (:func:`_index_text`). The query is the
task text; similarity is BM25 (``rank-bm25``, the optional ``rag`` extra, imported lazily). The paper's
retriever prepends the top-5 endpoints, cut at 30,000 characters; :func:`rag_context` does the
same, cutting at an endpoint boundary.

Everything here is deterministic (ties go to spec order) and cached: one index per spec, one
result per (spec, query, k, max_chars).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from callbench.errors import MissingExtraError
from callbench.specs import ApiSpec, Operation, object_properties, required_properties, schema_type

# Names the retrieval method in a run's identity; bump it when the ranking changes.
RETRIEVER = "bm25-okapi/1"
DEFAULT_K = 5
DEFAULT_MAX_CHARS = 30_000
_DESC_CHARS = 300  # an operation's description, shortened
_FIELD_DESC_CHARS = 120  # a parameter's or body field's description, shortened
_ENUM_SHOWN = 12
_BODY_DEPTH = 2  # body fields shown to this nesting depth (Asana wraps bodies in {"data": {...}})
_BODY_FIELDS = 60


def require_rank_bm25(what: str = "--context rag") -> None:
    """Fail before a run starts (one line, with the install command) when the extra is missing."""
    try:
        import rank_bm25  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("rank-bm25", "rag", what=what) from exc


# -- rendering -------------------------------------------------------------------------------
def _short(text: Any, limit: int) -> str:
    """One line: whitespace collapsed, cut at a word boundary with an ellipsis."""
    s = " ".join(str(text or "").split())
    if len(s) <= limit:
        return s
    cut = s[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",.;:") + " …"


def _type_text(schema: Mapping[str, Any]) -> str:
    types = sorted(schema_type(schema) - {"null"})
    if types == ["array"]:
        items = schema.get("items")
        inner = sorted(schema_type(items) - {"null"}) if isinstance(items, Mapping) else []
        return f"array of {'|'.join(inner)}" if inner else "array"
    return "|".join(types) if types else "any"


def _enum_text(schema: Mapping[str, Any]) -> str:
    values = schema.get("enum")
    if values is None and isinstance(schema.get("items"), Mapping):
        values = schema["items"].get("enum")
    if not isinstance(values, list | tuple) or not values:
        return ""
    shown = ", ".join(str(v) for v in values[:_ENUM_SHOWN])
    more = f", … ({len(values)} values)" if len(values) > _ENUM_SHOWN else ""
    return f"; one of: {shown}{more}"


def _field_line(name: str, where: str, schema: Mapping[str, Any], required: bool, description: Any) -> str:
    req = ", required" if required else ""
    desc = _short(description or schema.get("description"), _FIELD_DESC_CHARS)
    desc = f": {desc}" if desc else ""
    return f"- {name} ({where}{_type_text(schema)}{req}{_enum_text(schema)}){desc}"


def _body_lines(schema: Mapping[str, Any], prefix: str, depth: int, out: list[str], seen: frozenset[int]) -> None:
    if depth > _BODY_DEPTH or id(schema) in seen:
        return
    seen = seen | {id(schema)}
    required = required_properties(schema)
    for name, sub in sorted(object_properties(schema).items()):
        if len(out) >= _BODY_FIELDS:
            return
        if not isinstance(sub, Mapping) or sub.get("readOnly"):
            continue
        out.append(_field_line(prefix + name, "", sub, name in required, None))
        if "object" in schema_type(sub):
            _body_lines(sub, f"{prefix}{name}.", depth + 1, out, seen)


def operation_excerpt(op: Operation) -> str:
    """An endpoint's documentation as a developer reads it; the same text for the same spec."""
    lines = [f"{op.method.upper()} {op.path}"]
    if op.summary:
        lines.append(_short(op.summary, _DESC_CHARS))
    desc = _short(op.description, _DESC_CHARS)
    if desc and desc != lines[-1]:
        lines.append(desc)
    params = [p for p in op.parameters if not p.deprecated]
    if params:
        lines.append("Parameters:")
        lines += [_field_line(p.name, f"{p.location}, ", p.schema, p.required, p.description) for p in params]
    body = op.body_schema()
    if op.request_body is not None and body is not None:
        media = next(iter(op.request_body.content), "")
        for mt in op.request_body.content:
            if body is op.request_body.content[mt]:
                media = mt
                break
        req = ", required" if op.request_body.required else ""
        lines.append(f"Request body ({media}{req}):")
        fields: list[str] = []
        _body_lines(body, "", 1, fields, frozenset())
        lines += fields or [f"- ({_type_text(body)})"]
    return "\n".join(lines)


# -- retrieval -------------------------------------------------------------------------------
_STOP = frozenset(
    "a an and are as at be by for from how i in into is it its me my of on or that the this to "
    "with all any can do does get set use using want will would you your".split()
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Words, camelCase and snake_case split, lower-cased, a plural 's' dropped, stop words out:
    task texts say "events of a calendar", paths say ``/calendars/{calendarId}/events``."""
    out = []
    for word in _WORD.findall(_CAMEL.sub(" ", text)):
        w = word.lower()
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if w not in _STOP:
            out.append(w)
    return out


def _index_text(op: Operation) -> str:
    """What an endpoint is matched on: its names and summary, not every parameter's description
    (long, shared boilerplate such as Asana's ``opt_fields`` text drowns the words that tell
    endpoints apart: the top-5 hit rate on WAPIIBench is 95.4 % this way, 93.4 % on the excerpt)."""
    body = " ".join(op.body_properties().keys()) if op.body_schema() is not None else ""
    return " ".join([
        op.operation_id or "", *op.tags, op.method, op.path, op.summary, _short(op.description, _DESC_CHARS),
        *(p.name for p in op.parameters), body,
    ])


class _Index:
    def __init__(self, spec: ApiSpec):
        from rank_bm25 import BM25Okapi

        self.operations = spec.operations
        self.excerpts = tuple(operation_excerpt(op) for op in self.operations)
        docs = [tokenize(_index_text(op)) for op in self.operations]
        self.bm25 = BM25Okapi([d or ["_"] for d in docs])

    def top(self, query: str, k: int) -> list[int]:
        scores = self.bm25.get_scores(tokenize(query))
        order = sorted(range(len(self.operations)), key=lambda i: (-float(scores[i]), i))
        return order[:k]


_INDEX_LOCK = threading.Lock()


@lru_cache(maxsize=16)
def _index(spec: ApiSpec) -> _Index:  # ApiSpec hashes by identity; load_spec returns one per file version
    with _INDEX_LOCK:
        require_rank_bm25()
        return _Index(spec)


@lru_cache(maxsize=4096)
def retrieve(spec: ApiSpec, query: str, k: int = DEFAULT_K) -> tuple[Operation, ...]:
    """The ``k`` operations most similar to ``query``, best first (ties: spec order)."""
    if not spec.operations or k <= 0:
        return ()
    idx = _index(spec)
    return tuple(idx.operations[i] for i in idx.top(query, k))


def join_excerpts(excerpts: list[str], max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Excerpts in order, blank-line separated, cut at ``max_chars`` at an endpoint boundary:
    an endpoint that would cross the limit is left out with all after it (half an endpoint's
    parameter list misleads more than none). Only a first endpoint longer than the limit is cut
    inside, at a line boundary, so the context is never empty."""
    out: list[str] = []
    size = 0
    for text in excerpts:
        extra = len(text) + (2 if out else 0)
        if size + extra > max_chars:
            if not out:
                cut = text[:max_chars]
                out.append(cut.rsplit("\n", 1)[0] if "\n" in cut else cut)
            break
        out.append(text)
        size += extra
    return "\n\n".join(out)


@lru_cache(maxsize=4096)
def rag_context(spec: ApiSpec, query: str, k: int = DEFAULT_K, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The paper's RAG context: the top-``k`` endpoints for the task, cut at ``max_chars``."""
    if not spec.operations or k <= 0:
        return ""
    idx = _index(spec)
    return join_excerpts([idx.excerpts[i] for i in idx.top(query, k)], max_chars)


def gold_operation(spec: ApiSpec, method: str, url: str) -> Operation | None:
    """The operation the expected request hits (None when no operation matches)."""
    match = spec.match(method, url)
    return match.operation if match is not None else None


def base_url(spec: ApiSpec) -> str | None:
    """The spec's first absolute server URL (variables at their defaults), or None."""
    return next((s for s in spec.servers if "://" in s), None)
