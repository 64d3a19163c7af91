"""A JSON Schema validator for a spec's schemas whose pattern keywords run on RE2.

jsonschema runs ``pattern`` and ``patternProperties`` (and the ``additionalProperties`` check that
reads them) with Python's backtracking ``re``: a body checked against ``^(a+)+$`` froze the mock
server. :data:`SpecValidator` is Draft 2020-12 with these keywords on RE2 (linear time; the
ECMA-262 reading and the fallback are :mod:`callbench.specs.patterns`'). The mock's request
validation and the cross-check of generated tasks (``callbench audit``) both use it.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, _keywords, validators
from jsonschema.exceptions import ValidationError

from callbench.specs.patterns import compile_pattern

__all__ = ["SpecValidator"]


def _pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not compile_pattern(patrn).search(instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, pattern_properties: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in pattern_properties.items():
        compiled = compile_pattern(patrn)
        for k, v in instance.items():
            if compiled.search(k):
                yield from validator.descend(v, subschema, path=k, schema_path=patrn)


def _additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Any:
    if "patternProperties" not in schema:  # no pattern involved: jsonschema's own keyword
        yield from _keywords.additionalProperties(validator, ap, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    compiled = [compile_pattern(p) for p in schema["patternProperties"]]
    extras = {k for k in instance if k not in properties and not any(c.search(k) for c in compiled)}
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        joined = ", ".join(repr(each) for each in sorted(extras))
        patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
        verb = "does" if len(extras) == 1 else "do"
        yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")


#: Draft 2020-12 with the pattern keywords on RE2.
SpecValidator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
