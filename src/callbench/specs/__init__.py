"""OpenAPI specs: loading, ``$ref`` resolution, URL matching and argument legality.

See :mod:`callbench.specs.openapi` for the model and :mod:`callbench.specs.schema` for the
cycle-safe schema helpers.
"""

from callbench.specs.openapi import (
    ApiSpec,
    Operation,
    OperationMatch,
    Parameter,
    PathMatch,
    RequestBody,
    build_spec,
    clear_spec_cache,
    load_spec,
)
from callbench.specs.schema import (
    object_properties,
    required_properties,
    schema_type,
    subschemas,
    to_json_schema,
    walk_schema,
)

__all__ = [
    "ApiSpec",
    "Operation",
    "OperationMatch",
    "Parameter",
    "PathMatch",
    "RequestBody",
    "build_spec",
    "clear_spec_cache",
    "load_spec",
    "object_properties",
    "required_properties",
    "schema_type",
    "subschemas",
    "to_json_schema",
    "walk_schema",
]
