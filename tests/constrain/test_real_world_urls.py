"""How real code writes the URL (real-world profile, the default): a query string in the URL,
URLs joined by ``+`` from strings and names in scope, names whose value the starter fixes
(``js_values``), a leading base expression of unknown value. Each accepted form has its rejected twin:
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
                    {"name": "$expand", "in": "query", "schema": {"type": "string"}},
                    {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
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
                "parameters": [
                    {"name": "market", "in": "query", "schema": {"type": "string"}},
                    {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["new", "newest", "de"]}},
                ],
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


def test_query_keys_may_be_percent_encoded(spec):
    """A key as the server decodes it: `%24expand` is `$expand`, `range%5Bbegin_at%5D` is
    `range[begin_at]` (APIs.guru's Azure and Google specs; wild_specs writes keys encoded)."""
    for key in ("$expand", "%24expand", "range%5Bbegin_at%5D", "range%5bbegin_at%5d", "range[begin_at%5D"):
        ok(spec, f"get('{BASE}/apod?api_key=k&{key}=x')")
        ok(spec, f"get(`{BASE}/apod?{key}=${{d}}&api_key=k`)")
    rejected(spec, f"get('{BASE}/apod?api_key=k&%2524expand=x')", "", at="524")  # %25 is no key's character
    rejected(spec, f"get('{BASE}/apod?api_key=k&%24expan=x')", "", at="=x")  # no such key


def test_spaces_after_a_url_that_could_go_on_with_plus(spec):
    """Where ``+`` could extend the URL (a query, a concatenated name at its end), spaces before
    the ``)``, ``,`` or ``}`` that follows are still code as usual (llguidance's lexer does not
    backtrack: the lexeme that ends the URL takes them)."""
    ok(spec, f"get('{BASE}/apod?api_key=k' )")
    ok(spec, f"get('{BASE}/apod?api_key=k'  , {{ params: {{ hd: true }} }})")
    ok(spec, f"get('{BASE}/apod?api_key=' + apiKey )")
    ok(spec, f"get('{BASE}/artists/' + id , {{ params: {{ api_key: apiKey }} }})")
    ok(spec, f"request({{ method: 'get', url: '{BASE}/apod?api_key=k' }})")
    ok(spec, f"request({{ url: '{BASE}/apod?api_key=k' , method: 'get' }})")


def test_query_values_are_typed_by_their_parameter(spec):
    """A query value in the URL is judged against its parameter's schema by the scorer, as in
    params: an enum, integer, number or boolean parameter takes only such a value there (found by
    test_no_underconstraint's random decodings: `responseDateTimeRenderOption=()?` on Sheets)."""
    ok(spec, f"get('{BASE}/apod?api_key=k&hd=true')")
    ok(spec, f"get('{BASE}/apod?hd=false&api_key=k&date')")
    ok(spec, f"get(`{BASE}/apod?api_key=k&hd=${{d}}`)")  # a name: its value cannot be seen
    ok(spec, f"get('{BASE}/apod?api_key=k&hd=' + d)")  # an expression ending the URL
    rejected(spec, f"get('{BASE}/apod?api_key=k&hd=maybe')", "", at="maybe")
    rejected(spec, f"get('{BASE}/apod?hd=true1&api_key=k')", "", at="1&")
    ok(spec, f"get('{BASE}/apod?api_key=k&date=any%20text:-)')")  # a string parameter: free text


def test_a_query_value_takes_its_own_operations_enum(spec):
    """One name, two operations, two enums: the grammar's key set is the spec's, so its value
    regex is their union; the key tracker holds the value to the operation's own, byte by byte
    (refused where no value of its enum starts so; at the end, where the value is not whole)."""
    ok(spec, f"get('{BASE}/apod?api_key=k&sort=desc')")
    ok(spec, f"get('{BASE}/artists/1/albums?sort=newest&api_key=k')")
    ok(spec, f"get('{BASE}/artists/1/albums?sort=new&api_key=k')")
    rejected(spec, f"get('{BASE}/apod?api_key=k&sort=newest')", "'n' in the URL is not one of the allowed values [asc, desc]", at="newest")
    rejected(spec, f"get('{BASE}/artists/1/albums?api_key=k&sort=asc')", "", at="asc")
    rejected(spec, f"get('{BASE}/apod?sort=de&api_key=k')", "'de' in the URL is not one", at="&api")
    ok(spec, f"get(`{BASE}/apod?api_key=k&sort=${{d}}`)")  # a name: unseen
    # a bare key is sent as `true`: an enum's key takes a value
    rejected(spec, f"get('{BASE}/apod?sort&api_key=k')", "", at="&api")
    rejected(spec, f"get('{BASE}/apod?api_key=k&hd')", "", at="')")


def test_query_keys_are_the_operations_own(spec):
    rejected(spec, f"get('{BASE}/apod?api_key=k&foo=1')", "query parameter 'foo' in the URL is not an argument of GET /apod", at="foo")
    # another path's key: the grammar takes the spec's query keys (one set for every path), the key
    # tracker the operation's, byte by byte (at the key's end no '=', '&' or quote could follow)
    rejected(spec, f"get('{BASE}/apod?market=ES&api_key=k')", "query parameter 'm...' in the URL is no argument of GET /apod", at="market")
    rejected(spec, f"get('{BASE}/apod?api_key=k&market')", "query parameter 'm...'", at="market")
    rejected(spec, f"get('{BASE}/apod?api_key=k&d%61te=1')", "", at="%61")  # 'a' encoded: still 'date'
    ok(spec, f"get('{BASE}/apod?api_key=k&%64ate=1')".replace("%64ate", "date"))
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


# -- (c) names whose value the starter fixes -----------------------------------------------------
STARTER = """
const url = "https://api.example.com/v1/apod?api_key=DEMO_KEY";
const urlLink = 'https://api.example.com/v1/apod?api_key=';
const BASEURL = "https://api.example.com/v1/search";
const APIKEY = "?api_key=k";
const HOSTNAME = 'https://api.example.com/v1';
const USER = 'u1';
const path = `/artists/${USER}/albums`;
const ARTISTS = "https://api.example.com/v1/artists";
const bad = "https://api.example.com/v1/apod?nope=1";
const gone = "https://api.example.com/v1/nowhere";
"""


@pytest.fixture(scope="module")
def known():
    from callbench.tracks.webapi.constraints import url_values_in_scope

    return url_values_in_scope(STARTER)


KIDS = (*IDS, "url", "urlLink", "BASEURL", "APIKEY", "HOSTNAME", "USER", "path", "ARTISTS", "bad", "gone", "query")


def test_static_values_of_the_starter():
    from callbench.sandbox.js_values import HOLE, url_values

    code = """
    const a = 'https://x.io/v1';
    let b = a + '/users/' + id + `?k=${KEY}`;
    var c = `${a}/repos`;
    d = "/top";
    const e = process.env.E || 'https://y.io';
    let f = 'https://z.io'; f = 'https://w.io';
    let g = 'https://z.io'; g += '/x';
    const h = 3;
    function inner() { const i = "https://i.io/" + a; }
    """
    v = url_values(code)
    assert v["a"] == "https://x.io/v1"
    assert v["b"] == f"https://x.io/v1/users/{HOLE}?k={HOLE}"
    assert v["c"] == "https://x.io/v1/repos"
    assert v["d"] == "/top"  # a plain assignment (sloppy code's global)
    assert v["i"] == "https://i.io/https://x.io/v1"
    for name in ("e", "f", "g", "h", "id", "KEY"):  # unknown, bound twice, changed, not a string
        assert name not in v, name


def test_static_values_of_a_class_s_own_properties():
    """A class field and a ``this.x = ...`` assignment are the names ``this.x``; a static field
    is not; two classes giving one property different values leave it out."""
    from callbench.sandbox.js_values import url_values

    code = """
    class Comments {
      baseUrl = 'https://youtube.googleapis.com/youtube/v3';
      static version = 'https://static.io';
      constructor() { this.root = 'https://www.dnd5eapi.co'; this.api = `${this.root}/api`; this.n = 3; }
      load = async (videoId) => { const u = `${this.baseUrl}/commentThreads`; axios.get(u); };
    }
    class Other { constructor() { this.host = 'https://a.io'; } }
    class Third { constructor() { this.host = 'https://b.io'; } bump() { this.root += '/x'; } }
    """
    v = url_values(code)
    assert v["this.baseUrl"] == "https://youtube.googleapis.com/youtube/v3"
    assert v["u"] == "https://youtube.googleapis.com/youtube/v3/commentThreads"
    assert v["this.api"] == "https://www.dnd5eapi.co/api"
    for name in ("this.version", "version", "this.n", "this.host", "this.root"):  # static, number, differing, changed
        assert name not in v, name


def test_a_name_holding_a_whole_url(spec, known):
    kw = {"ids": KIDS, "url_values": known}
    ok(spec, "get(url)", **kw)
    ok(spec, "get(url).then(r => r.data)", **kw)
    rejected(spec, "post(url)", "", **kw)  # the path does not allow POST
    rejected(spec, "get(gone)", "", at="gone", **kw)  # a path the spec lacks: not offered
    rejected(spec, "get(bad)", "", at="bad", **kw)  # a query key GET /apod does not declare
    # the key tracker reads the operation from the value
    g = build_webapi_grammar(spec, setup="full", identifiers=KIDS, url_values=known)
    t = make_key_tracker(g, spec)
    t.feed(b"get(url, ")
    assert t.operation_label == "GET /apod"


def test_a_name_going_on_into_the_query(spec, known):
    kw = {"ids": KIDS, "url_values": known}
    ok(spec, "get(urlLink + apiKey)", **kw)
    ok(spec, "get(BASEURL + APIKEY + '&q=' + query)", **kw)
    ok(spec, 'get(BASEURL + "?q=jazz&api_key=" + apiKey)', **kw)
    rejected(spec, "get(BASEURL + query)", "", at="query", **kw)  # nothing may extend the path
    rejected(spec, "get(BASEURL + '/x')", "", at="/x", **kw)
    rejected(spec, "get(BASEURL + APIKEY)", "q", at=")", **kw)  # the required q is missing
    rejected(spec, "get(urlLink + apiKey + '&nope=1')", "query parameter 'n...'", at="nope", **kw)


def test_a_name_holding_a_path_or_a_path_prefix(spec, known):
    kw = {"ids": KIDS, "url_values": known}
    ok(spec, "get(`${HOSTNAME}${path}`, { params: { api_key: apiKey } })", **kw)
    ok(spec, "get(`${ARTISTS}/${id}/albums?api_key=k`)", **kw)
    ok(spec, "get(`${ARTISTS}/abc`, { params: { api_key: apiKey } })", **kw)
    rejected(spec, "get(`${ARTISTS}/abc/nope`)", "matches no path", at="nope", **kw)
    rejected(spec, "get(`${ARTISTS}/artists/abc`)", "", **kw)  # its value already holds /artists
    rejected(spec, "post(`${HOSTNAME}${path}`)", "", **kw)
    g = build_webapi_grammar(spec, setup="full", identifiers=KIDS, url_values=known)
    t = make_key_tracker(g, spec)
    t.feed(b"get(`${ARTISTS}/x/albums`, ")
    assert t.operation_label == "GET /artists/{id}/albums"


# -- (d) a leading expression of unknown value -----------------------------------------------------
def test_an_unknown_base_holds_the_server_and_maybe_part_of_its_path(spec):
    ok(spec, "get(`${cfg}/artists/${id}?api_key=k`)")  # the whole server
    ok(spec, "get(`${cfg}/v1/artists/${id}?api_key=k`)")  # the host only: the server's /v1 follows
    ok(spec, "get(`${cfg}${d}/artists/x?api_key=k`)")  # two in a row: one base
    rejected(spec, "get(`${cfg}/nope`)", "matches no path", at="nope")  # the rest must be a path of the spec
    rejected(spec, "get(`${cfg}/v2/artists/x`)", "matches no path", at="2/")
    g = build_webapi_grammar(spec, setup="full", identifiers=IDS)
    for text in (b"get(`${cfg}/v1/artists/x/albums`, ", b"get(`${cfg}/artists/x/albums`, "):
        t = make_key_tracker(g, spec)
        t.feed(text)
        assert t.operation_label == "GET /artists/{id}/albums", text


def test_the_factory_passes_the_starters_url_values(spec):
    """ConstraintFactory (setup full) builds the grammar with the values the starter fixes for
    names in scope; the paper profile gets none."""
    from callbench.tracks.webapi.constraints import ConstraintFactory
    from callbench.tracks.webapi.dataset import WebApiTask

    task = WebApiTask(index=0, api="x", task="Get it.", config={"method": "get", "url": f"{BASE}/apod"})
    starter = f"const url = '{BASE}/apod?api_key=k';\nconst n = 3;\nfunction f() {{ return axios."
    factory = ConstraintFactory("full")
    factory.for_task(task, spec, starter)
    (key,) = factory._shared
    assert key[-1] == (("url", f"{BASE}/apod?api_key=k"),), key  # not `n` (no URL)
    paper = ConstraintFactory("full", GrammarOptions(profile="paper"))
    paper.for_task(task, spec, starter)
    (key,) = paper._shared
    assert key[-1] == ()


def test_an_unknown_base_joined_by_plus(spec):
    """BASE + '/path' reads as `${BASE}/path`: the name holds a server (or its host and first
    segments), the rest must be a path of the spec."""
    ok(spec, "get(cfg.root + '/artists/' + id + '/albums?api_key=k')")
    ok(spec, "get(cfg + '/v1/artists/' + id, { params: { api_key: apiKey } })")
    rejected(spec, "get(cfg.root + '/nope/' + id)", "its base cfg.root holding a server", at="nope")
    rejected(spec, "get(nope + '/artists/x')", "", at="nope")
    g = build_webapi_grammar(spec, setup="full", identifiers=IDS)
    t = make_key_tracker(g, spec)
    t.feed(b"get(cfg.root + '/artists/' + id + '/albums', ")
    assert t.operation_label == "GET /artists/{id}/albums"


def test_enum_values_are_held_where_the_spec_has_too_many_query_keys():
    """Above 4,000 characters of query keys (EC2-size specs) the grammar takes any key and free
    values in the URL; the key tracker then holds every enum value to its operation's enum."""
    params = [{"name": f"Filter.{i}.SomeRatherLongParameterName", "in": "query", "schema": {"type": "string"}} for i in range(200)]
    params.append({"name": "mode", "in": "query", "schema": {"type": "string", "enum": ["fast", "slow"]}})
    big = build_spec(
        {"openapi": "3.0.0", "info": {"title": "big", "version": "1"}, "servers": [{"url": BASE}],
         "paths": {"/things": {"get": {"parameters": params, "responses": {"200": {"description": "ok"}}}}}},
        Path("/big/openapi.json"), "big.json",
    )
    ok(big, f"get('{BASE}/things?mode=fast&Filter.7.SomeRatherLongParameterName=x')")
    rejected(big, f"get('{BASE}/things?mode=medium')", "not one of the allowed values", at="medium")
    rejected(big, f"get('{BASE}/things?nope=1')", "query parameter 'n...'", at="nope")
