"""Schema bounds in strict scoring: a value outside the spec's bounds is illegal (strict only).

Every expected verdict below is worked out by hand from the tiny spec and the rules in
docs/webapi-scoring.md ("Values outside the schema's bounds"); none is copied from the code.
The spec: ``POST /tasks`` (body ``priority`` integer 1..5, ``title`` string 1..10 characters,
``tags`` array of at most 2 strings each ``^[a-z]+$``, ``color`` enum red/green, ``ratio`` number
with exclusiveMaximum 1 in 3.0's boolean form, ``score`` with 3.1's numeric exclusiveMinimum 0,
``kind`` string ``const: task``) and ``GET /tasks`` (query ``limit`` integer maximum 100,
``order`` enum asc/desc, header ``X-Trace`` pattern ``^t-[0-9]+$``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.specs import build_spec
from callbench.specs.schema import bounds_violation
from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import SampleVerdict, compare_requests

URL = "https://api.example.com/v1/tasks"

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "bounds", "version": "1"},
    "servers": [{"url": "https://api.example.com/v1"}],
    "paths": {
        "/tasks": {
            "get": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                    {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string", "pattern": "^t-[0-9]+$"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "priority": {"type": "integer", "minimum": 1, "maximum": 5},
                                    "title": {"type": "string", "minLength": 1, "maxLength": 10},
                                    "tags": {
                                        "type": "array",
                                        "maxItems": 2,
                                        "items": {"type": "string", "pattern": "^[a-z]+$"},
                                    },
                                    "color": {"type": "string", "enum": ["red", "green"]},
                                    "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
                                    "score": {"type": "number", "exclusiveMinimum": 0},
                                    "kind": {"type": "string", "const": "task"},
                                    "meta": {
                                        "type": "object",
                                        "properties": {"level": {"type": "integer", "maximum": 3}},
                                    },
                                },
                            }
                        }
                    }
                },
                "responses": {"200": {"description": "ok"}},
            },
        }
    },
}


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/bounds/openapi.yaml"), "bounds.yaml")


def _post(**data):
    return {"method": "post", "url": URL, "data": data}


def _args(v: SampleVerdict) -> dict[str, tuple[str, bool]]:
    return {f"{a.location}.{a.name}": (a.verdict, a.out_of_bounds is not None) for a in v.arguments}


def test_priority_9_with_maximum_5(spec):
    # Expected priority 3, generated 9 (maximum 5): a wrong value in both modes; in strict it is
    # also out of the spec's bounds, so the sample is illegal; compat reproduces the published
    # scorer, which only compares values: wrong.
    expected, actual = _post(priority=3), _post(priority=9)
    strict = compare_requests(expected, actual, spec, "strict")
    assert _args(strict) == {"data.priority": ("incorrect_value", True)}
    assert strict.arguments[0].out_of_bounds == "priority: 9 is above the maximum 5"
    assert strict.endpoint == "correct" and strict.sample == "illegal"
    compat = compare_requests(expected, actual, spec, "compat")
    assert _args(compat) == {"data.priority": ("incorrect_value", False)}
    assert compat.sample == "wrong"
    # The same value as an extra argument: strict illegal (not unnecessary); compat unnecessary.
    extra = compare_requests(_post(title="x"), _post(title="x", priority=9), spec, "strict")
    assert _args(extra) == {"data.title": ("correct", False), "data.priority": ("illegal", True)}
    assert extra.sample == "illegal"
    extra_compat = compare_requests(_post(title="x"), _post(title="x", priority=9), spec, "compat")
    assert _args(extra_compat) == {"data.title": ("correct", False), "data.priority": ("unnecessary", False)}
    assert extra_compat.sample == "wrong"
    # In bounds: wrong, not illegal.
    inside = compare_requests(expected, _post(priority=5), spec, "strict")
    assert _args(inside) == {"data.priority": ("incorrect_value", False)} and inside.sample == "wrong"
    # The stored row round-trips, and the aggregate counts the sample as illegal.
    assert SampleVerdict.from_dict(strict.as_dict()) == strict
    assert "out_of_bounds" not in inside.as_dict()["arguments"][0]
    m = aggregate([strict, inside], "strict")
    assert m["illegal_implementations_t"] == 0.5 and m["wrong_implementations_t"] == 0.5


@pytest.mark.parametrize(
    "field,value,reason",
    [
        ("title", "", "title: '' is shorter than minLength 1"),
        ("title", "a" * 11, "title: 11 characters, longer than maxLength 10"),
        ("tags", ["a", "b", "c"], "tags: 3 items, more than maxItems 2"),
        ("tags", ["ok", "Not-OK"], "tags: [1]: 'Not-OK' does not match the pattern '^[a-z]+$'"),
        ("color", "blue", "color: 'blue' is not one of the allowed values ['red', 'green']"),
        ("ratio", 1, "ratio: 1 is above the exclusive maximum 1"),
        ("score", 0, "score: 0 is not above the exclusive minimum 0"),
        ("kind", "job", "kind: 'job' is not the only allowed value 'task'"),
        ("meta", {"level": 4}, "meta: level: 4 is above the maximum 3"),
        ("priority", 0, "priority: 0 is below the minimum 1"),
    ],
)
def test_each_bound_in_a_body(spec, field, value, reason):
    expected = _post(**{field: "__gold__"})
    v = compare_requests(expected, _post(**{field: value}), spec, "strict")
    assert [a.out_of_bounds for a in v.arguments] == [reason]
    assert v.sample == "illegal"
    assert compare_requests(expected, _post(**{field: value}), spec, "compat").sample == "wrong"


@pytest.mark.parametrize(
    "field,value",
    [("title", "a" * 10), ("tags", ["ab", "cd"]), ("color", "green"), ("ratio", 0.99), ("score", 0.01),
     ("kind", "task"), ("meta", {"level": 3, "other": 99}), ("priority", 1),
     # another type than the schema's is a wrong value, not a bound: not judged here
     ("priority", "high"), ("tags", "abc"), ("color", 3), ("title", None)],
)
def test_values_inside_the_bounds_or_of_another_type_are_not_illegal(spec, field, value):
    v = compare_requests(_post(**{field: "__gold__"}), _post(**{field: value}), spec, "strict")
    assert [a.out_of_bounds for a in v.arguments] == [None]
    assert v.sample == "wrong"


def test_query_and_header_values_are_read_as_typed_and_as_sent(spec):
    get = lambda **kw: {"method": "get", "url": URL, **kw}  # noqa: E731
    # "500" in a query string is the integer 500: above the maximum 100
    v = compare_requests(get(params={"limit": 50}), get(params={"limit": "500"}), spec, "strict")
    assert _args(v) == {"params.limit": ("incorrect_value", True)} and v.sample == "illegal"
    assert v.arguments[0].out_of_bounds == "limit: 500 is above the maximum 100"
    # an extra query parameter the spec allows, with a value outside its enum
    v = compare_requests(get(params={"limit": 50}), get(params={"limit": 50, "order": "up"}), spec, "strict")
    assert _args(v) == {"params.limit": ("correct", False), "params.order": ("illegal", True)}
    # header names case-insensitive (strict), value against the pattern
    v = compare_requests(get(headers={"X-Trace": "t-1"}), get(headers={"x-trace": "trace-1"}), spec, "strict")
    assert _args(v) == {"headers.X-Trace": ("incorrect_value", True)} and v.sample == "illegal"
    # 12 sent as a header is the string "12" on the wire: a string-typed pattern judges that
    v = compare_requests(get(headers={"X-Trace": "t-1"}), get(headers={"X-Trace": 12}), spec, "strict")
    assert _args(v) == {"headers.X-Trace": ("incorrect_value", True)}
    # in bounds: wrong
    v = compare_requests(get(params={"limit": 50}), get(params={"limit": "100", "order": "desc"}), spec, "strict")
    assert _args(v) == {"params.limit": ("incorrect_value", False), "params.order": ("unnecessary", False)}
    assert v.sample == "wrong"


def test_a_correct_value_is_never_rejudged(spec):
    # gold against gold stays correct even where the gold itself breaks the bounds
    v = compare_requests(_post(priority=9), _post(priority=9), spec, "strict")
    assert _args(v) == {"data.priority": ("correct", False)} and v.sample == "correct"


def test_bounds_violation_unit():
    assert bounds_violation(9, {"type": "integer", "maximum": 5}) == "9 is above the maximum 5"
    assert bounds_violation(5, {"type": "integer", "maximum": 5, "exclusiveMaximum": True}) == "5 is above the exclusive maximum 5"
    assert bounds_violation(True, {"type": "integer", "maximum": 0}) is None  # a boolean is not a number
    assert bounds_violation(None, {"type": "integer", "maximum": 0}) is None
    # anyOf: broken only when every branch admitting the type breaks its bounds
    any_of = {"anyOf": [{"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 10}, {"type": "string"}]}
    assert bounds_violation(7, any_of) == "7 is above the maximum 5"
    assert bounds_violation(12, any_of) is None and bounds_violation("x", any_of) is None
    assert bounds_violation(7, {"allOf": [{"minimum": 0}, {"maximum": 6}]}) == "7 is above the maximum 6"
    # a pattern Python cannot compile is not judged; a huge string is not matched
    assert bounds_violation("a", {"type": "string", "pattern": "(?<"}) is None
    assert bounds_violation("A" * 20_000, {"type": "string", "pattern": "^[a-z]*$"}) is None
    # a cyclic schema terminates
    node: dict = {"type": "object", "properties": {}}
    node["properties"]["child"] = node
    deep: dict = {}
    cur = deep
    for _ in range(50):
        cur["child"] = {}
        cur = cur["child"]
    assert bounds_violation(deep, node) is None


def test_gold_values_keep_their_bounds(wapii_tasks, wapii_specs):
    """No gold value of the 395 WAPIIBench tasks breaks its spec's bounds (if one did, a model
    copying the gold would be scored correct while another that sends it as an extra would be
    illegal). Note asana_65 / asana_109: the gold sends ``include`` as an array where the spec
    types it as a string enum -- a type mismatch, which bounds do not judge."""
    from callbench.tracks.webapi.scoring import LOCATIONS, _with_path_params, out_of_bounds

    problems = []
    for t in wapii_tasks:
        spec = wapii_specs[t.api]
        cfg, matches = _with_path_params(t.config.as_dict(), spec)
        op = next((m.operations[cfg["method"]] for m in matches if cfg["method"] in m.operations), None)
        for loc in LOCATIONS:
            values = cfg.get(loc)
            for name, value in (values or {}).items() if isinstance(values, dict) else ():
                problem = out_of_bounds(spec, op, loc, name, value)
                if problem:
                    problems.append((t.id, loc, problem))
    assert problems == []
