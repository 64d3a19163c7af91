"""How real code writes the URL (real-world profile, the default): a query string in the URL,
URLs joined by ``+`` from strings and names in scope. Each accepted form has its rejected twin:
a path the spec lacks, a method the path does not allow, a query key the operation does not
declare, a concatenation that would put an unknown segment into the path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.constrain import GrammarOptions, check_continuation
from callbench.constrain.check import matcher_for
from callbench.constrain.key_tracker import make_key_tracker
from callbench.constrain.webapi_grammar import build_webapi_grammar
from callbench.specs import build_spec

pytest.importorskip("llguidance")

BASE = "https://api.example.com/v1"
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "urls", "version": "1"},
    "servers": [{"url": BASE}],
    "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}},
    "security": [{"key": []}],
    "paths": {
        "/apod": {
            "get": {
                "parameters": [
                    {"name": "date", "in": "query", "schema": {"type": "string"}},
                    {"name": "hd", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "range", "in": "query", "style": "deepObject",
                     "schema": {"type": "object", "properties": {"begin_at": {"type": "string"}}}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/search": {
            "get": {
                "parameters": [{"name": "q", "in": "query", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/artists/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"responses": {"200": {"description": "ok"}}},
        },
        "/artists/{id}/albums": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "parameters": [{"name": "market", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            },
        },
        "/items/{n}": {
            "parameters": [{"name": "n", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "delete": {"responses": {"204": {"description": "gone"}}},
        },
    },
}
IDS = ("apiKey", "id", "d", "params", "cfg")


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/urls/openapi.json"), "urls.json")


def ok(spec, text: str, ids=IDS, **kw) -> None:
    r = check_continuation(spec, text, identifiers=ids, **kw)
    assert r.allowed, (text, r.reason, r.offset)


def rejected(spec, text: str, reason: str, at: str | None = None, ids=IDS, **kw) -> None:
    r = check_continuation(spec, text, identifiers=ids, **kw)
    assert not r.allowed, text
    assert r.reason is not None and reason in r.reason, (r.reason, reason)
    if at is not None:
        assert r.offset == text.index(at), (r.offset, text[r.offset or 0 :], r.reason)


# -- (a) a query string in the URL ---------------------------------------------------------------
def test_query_in_the_url_is_the_default(spec):
    ok(spec, f"get('{BASE}/apod?api_key=DEMO_KEY')")
    ok(spec, f"get('{BASE}/apod?api_key=DEMO_KEY&date=2017-08-03&hd=true');")
    ok(spec, f"get(`{BASE}/apod?api_key=${{apiKey}}&date=${{d}}`)")
    ok(spec, f"get('{BASE}/apod?range[begin_at]=2021&api_key=k')")  # a deepObject member
    ok(spec, f'get("{BASE}/search?", {{ params: {{ q: "x", api_key: apiKey }} }})')  # a bare '?'
    # the paper profile keeps WAPIIBench's rule: query parameters go in params
    rejected(spec, f"get('{BASE}/apod?api_key=k')", "has a query string", at="?", options=GrammarOptions(profile="paper"))


def test_query_keys_are_the_operations_own(spec):
    rejected(spec, f"get('{BASE}/apod?api_key=k&foo=1')", "query parameter 'foo' in the URL is not an argument of GET /apod", at="foo")
    rejected(spec, f"get('{BASE}/apod?market=ES&api_key=k')", "query parameter 'market'", at="market")  # another path's
    rejected(spec, f"get(`{BASE}/apod?api_key=${{apiKey}}&${{d}}x=1`)", "", at="x=1")  # a key half a hole


def test_credential_in_the_url_satisfies_the_requirement(spec):
    ok(spec, f"get('{BASE}/apod?api_key=' + apiKey)")
    # no credential anywhere: refused at the call's end, with the credential named
    rejected(spec, f"get('{BASE}/apod?date=' + d)", "api_key", at=")")
    # a required query parameter given in the URL is given
    ok(spec, f"get('{BASE}/search?q=jazz&api_key=' + apiKey)")
    rejected(spec, f"get('{BASE}/search?api_key=' + apiKey)", "q", at=")")


def test_a_whole_query_identifier_is_an_opaque_params(spec):
    """`?${params}` (an identifier holding a whole query): accepted as a params identifier is,
    its keys (credential and required parameters included) unseen."""
    ok(spec, f"get(`{BASE}/search?${{params}}`)")
    ok(spec, f"get('{BASE}/search?' + params)")
    ok(spec, f"get('{BASE}/search?' + params + '&api_key=k')")
    rejected(spec, f"get(`{BASE}/search?${{nope}}`)", "not a known identifier")


# -- (b) URLs joined by + --------------------------------------------------------------------------
def test_concatenation_in_the_places_of_template_holes(spec):
    ok(spec, f"get('{BASE}/artists/' + id + '/albums?market=ES&api_key=k')")
    ok(spec, f'get("{BASE}/artists/" + id + "/albums", {{ params: {{ api_key: apiKey }} }})')
    ok(spec, f"get('{BASE}/artists/' + cfg.artist.id + '?api_key=' + cfg.key)")  # member chains
    ok(spec, f"get('{BASE}/apod?api_key=' + apiKey + '&date=' + d)")
    ok(spec, f"get('{BASE}/apod?range[begin_at]=' + d + '&api_key=' + apiKey)")
    ok(spec, f"delete('{BASE}/items/' + id, {{ params: {{ api_key: apiKey }} }})")
    # the path's last hole at the URL's end: the same URL with its closing quote right after text
    ok(spec, f"get('{BASE}/artists/abc', {{ params: {{ api_key: apiKey }} }})")
    ok(spec, f"get('{BASE}/artists/' + id, {{ params: {{ api_key: apiKey }} }})")


def test_concatenation_cannot_reach_past_the_spec(spec):
    rejected(spec, f"get('{BASE}/artistz/' + id)", "matches no path", at="z")
    rejected(spec, f"get('{BASE}/apod' + d)", "", at="+")  # an unknown segment appended to a path
    rejected(spec, f"get('{BASE}/artists/' + id + d)", "", at="d)")  # two names in a row: no quote between
    rejected(spec, f"get('{BASE}/artists/' + nope)", "not a known identifier", at="nope")
    rejected(spec, f"post('{BASE}/artists/' + id)", "method 'post'", at="post")
    rejected(spec, f"get('{BASE}/items/' + id)", "matches no path with method get (/items/{n} allows delete)", at="items")
    rejected(spec, f"get('{BASE}/artists/' + id + '/albums?ids=' + d)", "query parameter 'ids'", at="ids")


def test_concatenation_names_the_operation_for_the_key_tracker(spec):
    """The tracker learns the operation from a concatenated URL: a repeated key is still refused."""
    rejected(
        spec,
        f"get('{BASE}/artists/' + id + '/albums', {{ params: {{ market: 'ES', market: 'FR', api_key: apiKey }} }})",
        "given twice",
    )
    g = build_webapi_grammar(spec, setup="full", identifiers=IDS)
    t = make_key_tracker(g, spec)
    t.feed(f"get('{BASE}/artists/' + id + '/albums', ".encode())
    assert t.operation_label == "GET /artists/{id}/albums"


def test_concatenation_is_real_world_only(spec):
    rejected(spec, f"get('{BASE}/artists/' + id)", "", at="' + id", options=GrammarOptions(profile="paper"))


def test_no_dead_end_after_a_concatenated_url(spec):
    """Byte-level walk: after `'...' + id` both `)` and `+ '` stay possible (the lexer does not
    backtrack, so a hole that went on with a quote would swallow the URL's end)."""
    g = build_webapi_grammar(spec, setup="full", identifiers=IDS)
    for text in (f"get('{BASE}/artists/' + id", f"get('{BASE}/artists/abc'", f"get('{BASE}/apod?api_key=' + apiKey"):
        for end in (")", ", {})", " + '/albums')" if "artists/' + id" in text else ")"):
            m = matcher_for(g)
            full = (text + end).encode()
            assert all(m.consume_token(b) for b in full), (text + end)
            assert m.is_accepting(), text + end
