"""Convert a raw Swagger 2.0 document into the equivalent raw OpenAPI 3.0 document.

Only what the callbench model needs is converted faithfully: servers, parameters, request
bodies (``in: body`` and ``in: formData``), responses, security schemes and schema refs.
Working on the raw dict keeps one resolution/freezing path for both spec generations.
"""

from __future__ import annotations

from typing import Any

from callbench.errors import SpecError

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
_REF_PREFIXES = (
    ("#/definitions/", "#/components/schemas/"),
    ("#/parameters/", "#/components/parameters/"),
    ("#/responses/", "#/components/responses/"),
)
# Keys of a Swagger non-body parameter that belong in the 3.0 parameter's ``schema``.
_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)
_FLOWS = {
    "implicit": ("implicit", ("authorizationUrl",)),
    "password": ("password", ("tokenUrl",)),
    "application": ("clientCredentials", ("tokenUrl",)),
    "accessCode": ("authorizationCode", ("authorizationUrl", "tokenUrl")),
}


def _rewrite(node: Any) -> Any:
    """Deep-copy with local refs re-pointed, ``x-nullable`` -> ``nullable``, file -> binary."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                for old, new in _REF_PREFIXES:
                    if v.startswith(old):
                        v = new + v[len(old) :]
                        break
                out[k] = v
            elif k == "x-nullable":
                out["nullable"] = v
            else:
                out[k] = _rewrite(v)
        if out.get("type") == "file":
            out["type"] = "string"
            out.setdefault("format", "binary")
        return out
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def _param_schema(param: dict[str, Any]) -> dict[str, Any]:
    return _rewrite({k: param[k] for k in _SCHEMA_KEYS if k in param})


def convert_swagger2(doc: dict[str, Any], label: str) -> dict[str, Any]:
    """Return a new OpenAPI 3.0.3 dict equivalent to the Swagger 2.0 ``doc``."""
    global_params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    consumes_all = doc.get("consumes") or ["application/json"]
    produces_all = doc.get("produces") or ["application/json"]

    def deref_param(p: Any, where: str) -> dict[str, Any]:
        if isinstance(p, dict) and isinstance(p.get("$ref"), str) and p["$ref"].startswith("#/parameters/"):
            name = p["$ref"][len("#/parameters/") :].replace("~1", "/").replace("~0", "~")
            if name not in global_params:
                raise SpecError(
                    f"{label}: {where}: $ref '{p['$ref']}' does not resolve: no '{name}' in parameters"
                )
            return global_params[name]
        if not isinstance(p, dict):
            raise SpecError(f"{label}: {where}: parameter is not a mapping")
        return p

    def conv_param(p: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in p:
            return _rewrite(p)
        out = {
            k: p[k]
            for k in ("name", "in", "description", "required", "deprecated", "allowEmptyValue")
            if k in p
        }
        out["schema"] = _param_schema(p)
        fmt = p.get("collectionFormat")
        if fmt == "multi":
            out["style"], out["explode"] = "form", True
        elif p.get("type") == "array" and p.get("in") in ("query", "path", "header", "formData"):
            # Swagger 2 arrays default to csv (``a,b``): OpenAPI 3 form/simple without explode
            style = {"ssv": "spaceDelimited", "pipes": "pipeDelimited"}.get(str(fmt))
            if style is None:
                style = "form" if p.get("in") in ("query", "formData") else "simple"
            out["style"], out["explode"] = style, False
        for k, v in p.items():
            if k.startswith("x-"):
                out[k] = v
        return out

    def conv_response(r: Any, produces: list[str]) -> Any:
        if not isinstance(r, dict) or "$ref" in r:
            return _rewrite(r)
        out: dict[str, Any] = {"description": r.get("description", "")}
        if "schema" in r:
            schema = _rewrite(r["schema"])
            out["content"] = {ct: {"schema": schema} for ct in produces}
        if isinstance(r.get("headers"), dict):
            out["headers"] = {
                name: {"description": h.get("description", ""), "schema": _param_schema(h)}
                for name, h in r["headers"].items()
                if isinstance(h, dict)
            }
        return out

    servers: list[dict[str, str]]
    base = doc.get("basePath") or ""
    if doc.get("host"):
        schemes = doc.get("schemes") or ["https"]
        servers = [{"url": f"{s}://{doc['host']}{base}"} for s in schemes]
    else:
        servers = [{"url": base or "/"}]

    components: dict[str, Any] = {}
    if isinstance(doc.get("definitions"), dict):
        components["schemas"] = _rewrite(doc["definitions"])
    plain = {
        k: conv_param(v)
        for k, v in global_params.items()
        if isinstance(v, dict) and v.get("in") not in ("body", "formData")
    }
    if plain:
        components["parameters"] = plain
    if isinstance(doc.get("responses"), dict):
        components["responses"] = {k: conv_response(v, produces_all) for k, v in doc["responses"].items()}
    schemes_out = {}
    for name, sd in (doc.get("securityDefinitions") or {}).items():
        if not isinstance(sd, dict):
            continue
        kind = sd.get("type")
        if kind == "basic":
            schemes_out[name] = {"type": "http", "scheme": "basic"}
        elif kind == "apiKey":
            schemes_out[name] = {k: sd[k] for k in ("type", "name", "in", "description") if k in sd}
        elif kind == "oauth2":
            flow, urls = _FLOWS.get(sd.get("flow", ""), ("implicit", ("authorizationUrl",)))
            body = {u: sd.get(u, "") for u in urls}
            body["scopes"] = sd.get("scopes") or {}
            schemes_out[name] = {"type": "oauth2", "flows": {flow: body}}
        else:
            schemes_out[name] = dict(sd)
    if schemes_out:
        components["securitySchemes"] = schemes_out

    paths: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            paths[path] = item
            continue
        new_item: dict[str, Any] = {k: v for k, v in item.items() if k not in _METHODS and k != "parameters"}
        shared = item.get("parameters") or []
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            merged: dict[tuple[Any, Any], dict[str, Any]] = {}
            raw_of: dict[tuple[Any, Any], Any] = {}
            for group, plist in (
                ("parameters", shared),
                (f"{method}.parameters", op.get("parameters") or []),
            ):
                for i, p in enumerate(plist):
                    real = deref_param(p, f"paths.{path}.{group}[{i}]")
                    key = (real.get("name"), real.get("in"))
                    merged[key] = real
                    raw_of[key] = p
            new_op = {
                k: _rewrite(v)
                for k, v in op.items()
                if k not in ("parameters", "responses", "consumes", "produces")
            }
            consumes = op.get("consumes") or consumes_all
            produces = op.get("produces") or produces_all
            params, form_props, form_required = [], {}, []
            has_file = False
            for key, p in merged.items():
                where_in = p.get("in")
                if where_in == "body":
                    cts = [c for c in consumes if "json" in c] or list(consumes)
                    schema = _rewrite(p.get("schema") or {})
                    new_op["requestBody"] = {
                        "content": {ct: {"schema": schema} for ct in cts},
                        "required": bool(p.get("required", False)),
                    }
                    if "description" in p:
                        new_op["requestBody"]["description"] = p["description"]
                elif where_in == "formData":
                    prop = _param_schema(p)
                    if "description" in p:
                        prop["description"] = p["description"]
                    form_props[p.get("name")] = prop
                    has_file = has_file or p.get("type") == "file"
                    if p.get("required"):
                        form_required.append(p.get("name"))
                else:
                    raw = raw_of[key]
                    is_ref = isinstance(raw, dict) and "$ref" in raw and p.get("name") is not None
                    params.append(_rewrite(raw) if is_ref else conv_param(p))
            if form_props:
                declared = [
                    c for c in consumes if c in ("multipart/form-data", "application/x-www-form-urlencoded")
                ]
                multipart = has_file or (declared[:1] == ["multipart/form-data"])
                ct = "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
                schema: dict[str, Any] = {"type": "object", "properties": form_props}
                if form_required:
                    schema["required"] = form_required
                new_op["requestBody"] = {"content": {ct: {"schema": schema}}, "required": bool(form_required)}
            if params:
                new_op["parameters"] = params
            if isinstance(op.get("responses"), dict):
                new_op["responses"] = {k: conv_response(v, produces) for k, v in op["responses"].items()}
            new_item[method] = new_op
        paths[path] = new_item

    out: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": doc.get("info") or {},
        "servers": servers,
        "paths": paths,
    }
    if components:
        out["components"] = components
    for k in ("security", "tags", "externalDocs"):
        if k in doc:
            out[k] = doc[k]
    for k, v in doc.items():
        if isinstance(k, str) and k.startswith("x-"):
            out[k] = v
    return out
