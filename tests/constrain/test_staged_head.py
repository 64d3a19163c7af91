"""The staged head's fast route (plain path keys written from per-segment memos, one trie for
the three quotes) against the general route: the same terminals path by path, the same masks
as the single grammar, and the hole key it relies on (equal key => equal scalars)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callbench.constrain import GrammarOptions, build_webapi_grammar
from callbench.constrain.webapi_constraint import webapi_constraint
from callbench.constrain.webapi_grammar import _Builder, clear_grammar_cache, spec_model
from callbench.specs import build_spec
from callbench.specs.schema_scalars import scalar_key, schema_scalars

OK = {"200": {"description": "ok"}}


def _path_param(name: str, schema: dict) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": schema}


# Plain path keys (the fast route writes them) with holes typed alike, differently and by nested
# schemas, and keys with a query or fragment (the general route).
MIXED = {
    "openapi": "3.0.0",
    "info": {"title": "mixed holes", "version": "1"},
    "servers": [{"url": "https://mixed.example.com/api"}],
    "paths": {
        # the same hole in two operations, schemas equal but for the description: fast
        "/items/{id}": {
            "get": {"parameters": [_path_param("id", {"type": "integer", "description": "a"})], "responses": OK},
            "delete": {"parameters": [_path_param("id", {"description": "b", "type": "integer"})], "responses": OK},
        },
        # a path item's parameter shared by its operations, a hole inside a segment: fast
        "/files/{name}.{ext}": {
            "parameters": [
                _path_param("name", {"type": "string"}),
                _path_param("ext", {"type": "string", "enum": ["json", "csv"]}),
            ],
            "get": {"responses": OK},
            "head": {"responses": OK},
        },
        "/counts/{n}": {"get": {"parameters": [_path_param("n", {"type": "integer", "nullable": True})], "responses": OK}},
        # an enum in GET, free text in PUT: the schemas differ (merged by their scalars: a free hole)
        "/things/{kind}": {
            "get": {"parameters": [_path_param("kind", {"type": "string", "enum": ["a", "b"]})], "responses": OK},
            "put": {"parameters": [_path_param("kind", {"type": "string"})], "responses": OK},
        },
        # a nested hole schema (no scalar key: memoized by the schema itself)
        "/flags/{on}": {"get": {"parameters": [_path_param("on", {"allOf": [{"type": "boolean"}]})], "responses": OK}},
        # a fixed query and a query-dispatch fragment: general
        "/?action=list": {"get": {"responses": OK}},
        "/#Action=Describe": {"post": {"responses": OK}},
    },
}
FAST = {"/items/{id}", "/files/{name}.{ext}", "/counts/{n}", "/things/{kind}", "/flags/{on}"}


@pytest.fixture(scope="module")
def mixed():
    return build_spec(MIXED, Path("/mixed/openapi.json"), "mixed.json")


def _routes(spec, idents: tuple[str, ...]):
    """(fast, general) terminal definitions per quote of every path key (fast: None where the
    fast route does not apply)."""
    model = spec_model(spec)
    b = _Builder(spec, model, idents, GrammarOptions(staged=True))
    templates = model.templates()
    words = model.url_words(idents, b.opt.allow_url_query)
    out = {}
    for path in dict.fromkeys(op.path for op in spec.operations):
        fast = words._head_fast(b, templates, path)
        slow = words._head_slow(b, templates, path)
        defs = [None if r is None else {q: tuple(b.terms[t] for t in ts) for q, ts in r.items()} for r in (fast, slow)]
        out[path] = tuple(defs)
    return out


@pytest.mark.parametrize("idents", [(), ("token", "userId")])
def test_fast_route_writes_the_general_routes_terminals(mixed, idents):
    clear_grammar_cache()
    routes = _routes(mixed, idents)
    assert {p for p, (fast, _) in routes.items() if fast is not None} == FAST
    for path, (fast, slow) in routes.items():
        assert slow, path  # every key here has a piece form
        if fast is not None:
            assert fast == slow, path
    # the hole types reach the terminals: an integer id, an enum extension
    assert r"-?[0-9]+" in routes["/items/{id}"][0]["'"][1]
    assert "json|csv" in routes["/files/{name}.{ext}"][0]["'"][1]
    assert "a|b" not in routes["/things/{kind}"][0]["'"][1]  # the schemas differ: a free hole
    assert "true|false" in routes["/flags/{on}"][0]["'"][1]


def test_hole_schemas_merge_by_scalars():
    """A hole typed in several operations keeps the first schema when all of them admit the
    same scalars (equal scalar keys, or different keys with equal scalars), else none."""
    same_key = [{"type": "integer", "description": "a"}, {"type": "integer", "description": "b"}]
    same_scalars = [{"type": "string"}, {"type": "string", "nullable": False}]
    differ = [{"type": "string", "enum": ["a"]}, {"type": "string"}]
    paths = {}
    for name, (a, b) in {"k": same_key, "s": same_scalars, "d": differ}.items():
        paths[f"/{name}/{{x}}"] = {
            "get": {"parameters": [_path_param("x", a)], "responses": OK},
            "put": {"parameters": [_path_param("x", b)], "responses": OK},
        }
    spec = build_spec({**MIXED, "paths": paths}, Path("/merge/openapi.json"), "merge.json")
    t = spec_model(spec).templates()
    assert t.hole_schemas("/k/{x}")["x"]["description"] == "a"
    assert t.hole_schemas("/s/{x}")["x"] == {"type": "string"}
    assert t.hole_schemas("/d/{x}")["x"] is None


def test_fast_route_on_microsoft_graph(wild_specs_dir):
    """Every path key of Microsoft Graph v1.0 (11,000 operations): the fast route, where it
    applies, writes the general route's terminals."""
    from callbench.specs import load_spec

    path = wild_specs_dir / "microsoft.com" / "graph.json"
    if not path.exists():
        pytest.skip(f"{path} is not in the directory")
    clear_grammar_cache()
    routes = _routes(load_spec(path), ())
    fast = [p for p, (f, _) in routes.items() if f is not None]
    assert len(fast) > 0.9 * len(routes)
    assert all(routes[p][0] == routes[p][1] for p in fast)


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen"])
def test_mixed_head_masks_equal_the_single_grammar(mixed, real_vocab, vocab_name, full_setup_calls):
    """Both routes and the three-quote trie in one head: at every token of every synthesized
    call the staged mask is the single grammar's."""
    pytest.importorskip("llguidance")
    vocab = real_vocab(vocab_name)
    clear_grammar_cache()
    plain = build_webapi_grammar(mixed, setup="full", options=GrammarOptions(staged=False))
    staged = build_webapi_grammar(mixed, setup="full", options=GrammarOptions(staged=True))
    pc, sc = webapi_constraint(plain, mixed, name="plain"), webapi_constraint(staged, mixed, name="staged")
    calls = full_setup_calls(mixed, 5)
    assert len(calls) > 20
    accepted = 0
    for text in calls:
        a, b = pc.new_session(vocab, record=False), sc.new_session(vocab, record=False)
        for t in vocab.lltok.tokenize_str(text):
            ma, mb = a.mask(), b.mask()
            assert np.array_equal(ma, mb), (text, b.generated_bytes())
            if not ma[t]:
                break
            a.advance(t)
            b.advance(t)
        else:
            assert a.is_accepting() == b.is_accepting()
            accepted += a.is_accepting()
    assert accepted > 5


_scalar = st.one_of(st.sampled_from([0, 1, 1.0, True, False, None, "1", "a", ""]), st.text(max_size=3))
_flat_schema = st.dictionaries(
    st.sampled_from(["type", "enum", "const", "nullable", "x-nullable", "description", "format", "example"]),
    st.one_of(
        st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"]),
        st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1, max_size=3),
        st.lists(_scalar, max_size=3),
        _scalar,
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(_flat_schema, _flat_schema)
def test_equal_scalar_keys_mean_equal_scalars(a, b):
    ka, kb = scalar_key(a), scalar_key(b)
    assert ka is not None and kb is not None  # flat schemas always get a key
    if ka == kb:
        assert schema_scalars(a) == schema_scalars(b)
    assert scalar_key(dict(reversed(list(a.items())))) == ka  # keyword order does not matter


def test_scalar_key_refuses_nested_schemas():
    assert scalar_key({"allOf": [{"type": "integer"}]}) is None
    assert scalar_key({"type": "array", "items": {"type": "integer"}}) is None
    assert scalar_key({"enum": [{"a": 1}]}) is None
    assert scalar_key("string") is None
    assert scalar_key({"enum": [1]}) != scalar_key({"enum": [True]}) != scalar_key({"enum": [1.0]})
