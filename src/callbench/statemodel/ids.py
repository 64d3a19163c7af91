"""Where path-parameter values come from.

Three kinds of evidence, strongest first:

* **link** — an OpenAPI ``links`` entry on a response (``parameters: {petId: $response.body#/id}``)
  names the operation and parameter the value feeds;
* **name+schema** — the resource's id field (below) is returned by its create or list operations
  and its type agrees with the parameter's;
* **name** — the same, but the types differ (an integer field feeding a string parameter).

A resource's *id field* is found by name among the properties its create, read and list
entities share: the item parameter's own name (``username``), the parameter without the resource
word (``petId`` -> ``id``, ``task_gid`` -> ``gid``), its last word (``floating_ip`` -> ``ip``), then
``id``, ``gid``, ``uuid``, ``key``, ``slug``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from callbench.specs.openapi import Operation
from callbench.specs.schema import object_properties, schema_type

_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_FALLBACK = ("id", "gid", "uuid", "key", "slug")


def words(name: str) -> list[str]:
    return [w.lower() for w in _SPLIT.split(name) if w]


def id_candidates(param: str, resource: str) -> list[str]:
    """Field names that may hold the value of ``param`` for ``resource``, most likely first."""
    out = [param]
    ws = words(param)
    rest = [w for w in ws if w not in words(resource) and w not in (resource + "s",)]
    if rest and rest != ws:
        out += ["_".join(rest), "".join(rest)]
    if len(ws) > 1:
        out.append(ws[-1])  # floating_ip -> ip
    out += list(_FALLBACK)
    return list(dict.fromkeys(out))


def pick_id_field(params: list[str], resource: str, props: Mapping[str, Any]) -> str | None:
    for p in params:
        for cand in id_candidates(p, resource):
            if cand in props:
                return cand
    for cand in _FALLBACK:
        if cand in props:
            return cand
    return None


def scalar_type(schema: Any) -> str:
    t = schema_type(schema) - {"null"}
    for name in ("integer", "number", "string"):
        if name in t:
            return name
    return "string"


def types_agree(a: Any, b: Any) -> bool:
    ta, tb = schema_type(a) - {"null"}, schema_type(b) - {"null"}
    if not ta or not tb:
        return True
    return bool(ta & tb) or ("integer" in ta and "number" in tb) or ("number" in ta and "integer" in tb)


def link_sources(operations: tuple[Operation, ...]) -> dict[tuple[str, str], tuple[Operation, str]]:
    """(target operationId, parameter) -> (source operation, body field) from response ``links``.

    Only ``$response.body#/...`` expressions count; the field is the pointer's last segment (the
    entity's own property once a wrapper such as ``/data`` is stripped)."""
    out: dict[tuple[str, str], tuple[Operation, str]] = {}
    for op in operations:
        for code, resp in op.responses.items():
            if not (isinstance(resp, Mapping) and str(code).startswith("2")):
                continue
            links = resp.get("links")
            if not isinstance(links, Mapping):
                continue
            for link in links.values():
                if not isinstance(link, Mapping):
                    continue
                target = link.get("operationId")
                params = link.get("parameters")
                if not isinstance(target, str) or not isinstance(params, Mapping):
                    continue
                for pname, expr in params.items():
                    if isinstance(expr, str) and expr.startswith("$response.body#/"):
                        field = expr.split("#/", 1)[1].split("/")[-1]
                        name = str(pname).split(".", 1)[-1]  # "path.petId" -> "petId"
                        out.setdefault((target, name), (op, field))
    return out


def entity_props(schema: Any) -> Mapping[str, Any]:
    return object_properties(schema)
