"""WAPIIBench's constrained-decoding method, rebuilt for comparison in the benchmark.

The published method turns a spec into regular expressions for the allowed calls and, at every
decoding step, walks the vocabulary in descending score order, appending each candidate token to
the text so far and asking the ``regex`` module for a *partial* match, until one candidate fits
(greedy decoding needs one). Its cost depends on how many candidates fail before one fits, which
is why a per-step time budget (``timeout_s``) exists and why timeouts are counted.

The regex covers the same calls as :mod:`callbench.constrain.webapi_grammar` for the ``full``
setup: ``<method>('<server><path with typed holes>'[, <data>][, <config>])`` with keys from the
operation's parameters in any order (repeatable, as a regex cannot forbid repeats), typed values,
and free text after the call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import regex as re

from callbench.specs import ApiSpec, Operation, schema_type

_WS = r"\s*"
_STR = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)"""
_INT = r"-?\d+"
_NUM = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_BOOL = r"(?:true|false)"
_IDENT = r"[A-Za-z_$][A-Za-z0-9_$]*"
_PATH_HOLE = r"[A-Za-z0-9_.~:<>%-]+"


def _alt(parts: list[str]) -> str:
    parts = list(dict.fromkeys(p for p in parts if p))
    if not parts:
        return r"(?!)"
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _key(name: str) -> str:
    quoted = [rf"'{re.escape(name)}'", rf'"{re.escape(name)}"']
    if re.fullmatch(_IDENT, name):
        quoted.append(re.escape(name))
    return _alt(quoted)


def _value(schema: Any, depth: int) -> str:
    """A JS literal for a schema; deeper than ``depth`` any object/array is just ``{}``/``[]``."""
    types = schema_type(schema) if schema is not None else set()
    alts = [_IDENT]  # variables in value position
    if not types or "string" in types:
        alts.append(_STR)
    if not types or "integer" in types:
        alts.append(_INT)
    if not types or "number" in types:
        alts.append(_NUM)
    if not types or "boolean" in types:
        alts.append(_BOOL)
    if not types or "null" in types:
        alts.append("null")
    if not types or "array" in types:
        items = schema.get("items") if hasattr(schema, "get") else None
        inner = _value(items, depth - 1) if depth > 0 else r"(?!)"
        alts.append(rf"\[{_WS}(?:{inner}(?:{_WS},{_WS}{inner})*{_WS},?)?{_WS}\]")
    if not types or "object" in types:
        props = (schema.get("properties") if hasattr(schema, "get") else None) or {}
        if depth > 0 and props:
            alts.append(_object({k: v for k, v in props.items()}, depth - 1))
        else:
            alts.append(rf"\{{{_WS}\}}")
    return _alt(alts)


def _object(fields: dict[str, Any], depth: int) -> str:
    if not fields:
        return rf"\{{{_WS}\}}"
    kv = _alt([rf"{_key(name)}{_WS}:{_WS}{_value(schema, depth)}" for name, schema in fields.items()])
    return rf"\{{{_WS}(?:{kv}(?:{_WS},{_WS}{kv})*{_WS},?)?{_WS}\}}"


def _url(spec: ApiSpec, op: Operation) -> str:
    servers = _alt([re.escape(s.rstrip("/")) for s in spec.servers if s != "/"] or [""])
    path = re.escape(op.path)
    for p in op.params_in("path"):
        hole = _INT if "integer" in schema_type(p.schema) else _PATH_HOLE
        path = path.replace(re.escape("{" + p.name + "}"), hole)
    return servers + path


def _call_args(spec: ApiSpec, op: Operation, depth: int) -> str:
    params = {p.name: p.schema for p in op.params_in("query")}
    headers = {p.name: p.schema for p in op.params_in("header")}
    headers.setdefault("Authorization", {"type": "string"})
    headers.setdefault("Accept", {"type": "string"})
    config_fields: dict[str, Any] = {}
    if params:
        config_fields["params"] = {"type": "object", "properties": params}
    config_fields["headers"] = {"type": "object", "properties": headers}
    if op.method in ("post", "put", "patch"):
        headers.setdefault("Content-Type", {"type": "string"})
        body = op.body_properties()
        data = _object(dict(body), depth) if body else rf"(?:null|undefined|\{{{_WS}\}})"
        config = _object(config_fields, depth + 1)
        return rf"(?:{_WS},{_WS}{data}(?:{_WS},{_WS}{config})?)?"
    return rf"(?:{_WS},{_WS}{_object(config_fields, depth + 1)})?"


def build_baseline_regex(spec: ApiSpec, *, depth: int = 2) -> str:
    """One regex for the text after ``axios.``: the call, then ``;`` or ``.then(`` etc., then anything."""
    calls = []
    for op in spec.operations:
        url = _url(spec, op)
        calls.append(rf"{op.method}\({_WS}(?:'{url}'|\"{url}\"|`{url}`){_call_args(spec, op, depth)}{_WS}\)")
    return rf"{_alt(calls)}(?:;|\.then\(|\.catch\(|\.finally\()[\s\S]*"


@dataclass
class BaselineStep:
    token_id: int | None  # None: timed out or nothing fits (unsatisfiable)
    checked: int  # candidates tried
    seconds: float
    timed_out: bool


class RegexBaseline:
    """Greedy next-token choice by partial regex matching in score order (the published method)."""

    def __init__(self, pattern: str, token_strings: list[str], *, timeout_s: float = 2.0):
        self.compiled = re.compile(pattern)
        self.tokens = token_strings
        self.timeout_s = timeout_s

    def fits(self, text: str, timeout: float | None = None) -> bool:
        return self.compiled.fullmatch(text, partial=True, timeout=timeout) is not None

    def next_token(self, completion: str, order: Any) -> BaselineStep:
        """Try candidates in ``order`` (token ids, best first) until one keeps a partial match."""
        t0 = time.perf_counter()
        checked = 0
        for tid in order:
            tok = self.tokens[int(tid)]
            if not tok:
                continue
            checked += 1
            remaining = self.timeout_s - (time.perf_counter() - t0)
            if remaining <= 0:
                return BaselineStep(None, checked, time.perf_counter() - t0, True)
            try:
                ok = self.fits(completion + tok, timeout=remaining)
            except TimeoutError:
                return BaselineStep(None, checked, time.perf_counter() - t0, True)
            if ok:
                return BaselineStep(int(tid), checked, time.perf_counter() - t0, False)
        return BaselineStep(None, checked, time.perf_counter() - t0, False)
