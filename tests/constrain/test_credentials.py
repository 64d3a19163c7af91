"""Required credentials under constrained decoding (GrammarOptions.require_credentials).

An operation whose effective security requirement is not optional must carry one accepted
credential, in the place its scheme names, with the placeholder value (`Bearer <token>`,
`Basic <credentials>`, `<key>`). Checked through `check_continuation`, i.e. the llguidance matcher
and the key tracker byte by byte, as in decoding.

These are the rules of ``credential_rule="placeholder", real_world=False`` (the default before issue 29);
the default rule now takes any string or expression as the value, tested in
tests/constrain/test_real_world_calls.py.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from callbench.constrain import GrammarOptions, build_webapi_grammar, check_continuation, make_key_tracker
from callbench.specs import build_spec
from callbench.specs.credentials import credential_requirement

pytest.importorskip("llguidance")

BASE = "https://api.example.com/v1"
OK = {"200": {"description": "ok"}}


def _spec(schemes: dict, paths: dict, security: list | None = None):
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "creds", "version": "1"},
        "servers": [{"url": BASE}],
        "components": {"securitySchemes": schemes},
        "paths": paths,
    }
    if security is not None:
        doc["security"] = security
    return build_spec(doc, Path("/creds/openapi.yaml"), "creds.yaml")


# bearer (global), with an optional-security and an explicitly open operation
BEARER_SPEC = _spec(
    {"bearer": {"type": "http", "scheme": "bearer"}},
    {
        "/items": {
            "get": {
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": OK,
            },
            "post": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"name": {"type": "string"}}}
                        }
                    }
                },
                "responses": OK,
            },
        },
        "/public": {"get": {"security": [], "responses": OK}},
        "/maybe": {"get": {"security": [{}, {"bearer": []}], "responses": OK}},
    },
    security=[{"bearer": []}],
)

# credentials in other places: apiKey in query, in header, in a cookie; basic; a choice of places
KEY_SPEC = _spec(
    {
        "qkey": {"type": "apiKey", "in": "query", "name": "api_key"},
        "hkey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        "ckey": {"type": "apiKey", "in": "cookie", "name": "session"},
        "basic": {"type": "http", "scheme": "basic"},
        "oauth": {"type": "oauth2", "flows": {}},
    },
    {
        "/q": {"get": {"security": [{"qkey": []}], "responses": OK}},
        "/h": {"get": {"security": [{"hkey": []}], "responses": OK}},
        "/c": {"get": {"security": [{"ckey": []}], "responses": OK}},
        "/b": {"get": {"security": [{"basic": []}], "responses": OK}},
        "/either": {
            "get": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "security": [{"oauth": []}, {"qkey": []}],
                "responses": OK,
            }
        },
        "/both": {"get": {"security": [{"oauth": [], "qkey": []}], "responses": OK}},
    },
)

AUTH = "{ headers: { Authorization: 'Bearer <token>' } }"
PLACEHOLDER = GrammarOptions(credential_rule="placeholder", real_world=False)  # the rules before issue 29


def ok(spec, text: str, **kw) -> None:
    kw.setdefault("options", PLACEHOLDER)
    r = check_continuation(spec, text, **kw)
    assert r.allowed, (text, r.reason, r.offset)


def rejected(spec, text: str, reason: str, at: str | None = None, **kw) -> None:
    kw.setdefault("options", PLACEHOLDER)
    r = check_continuation(spec, text, **kw)
    assert not r.allowed, text
    assert r.reason is not None and reason in r.reason, (r.reason, reason)
    if at is not None:
        assert r.offset == text.index(at), (r.offset, text[r.offset or 0 :])


# ------------------------------------------------------------------------------ bearer
def test_bearer_credential_is_required():
    s = BEARER_SPEC
    rejected(s, f"get('{BASE}/items');", "GET /items needs a config with headers: Authorization", at=")")
    rejected(s, f"get('{BASE}/items', {{ params: {{ limit: 1 }} }});", "required argument 'headers' missing")
    rejected(
        s,
        f"get('{BASE}/items', {{ headers: {{ Accept: 'application/json' }} }});",
        "required credential 'Authorization' (value 'Bearer <token>') missing before '}' in headers of GET /items",
    )
    rejected(s, f"post('{BASE}/items', {{ name: 'n' }});", "POST /items needs a config with headers", at=")")


@pytest.mark.parametrize(
    "value",
    ["'Bearer <token>'", '"Bearer <token>"', "`Bearer <token>`"],
    ids=["single", "double", "backtick"],
)
def test_bearer_placeholder_in_any_quote_is_accepted(value):
    ok(BEARER_SPEC, f"get('{BASE}/items', {{ headers: {{ Authorization: {value} }} }});")
    ok(
        BEARER_SPEC,
        f"get('{BASE}/items', {{ headers: {{ 'authorization': {value} }}, params: {{ limit: 2 }} }});",
    )
    ok(BEARER_SPEC, f"post('{BASE}/items', {{ name: 'n' }}, {{ headers: {{ AUTHORIZATION: {value} }} }});")
    ok(
        BEARER_SPEC,
        f" {{ name: 'n' }}, {{ headers: {{ Authorization: {value} }} }});",
        setup="args",
        method="post",
        url=f"{BASE}/items",
    )


@pytest.mark.parametrize(
    "value", ["'Bearer abc123'", "'<token>'", "'bearer <token>'", "'Bearer  <token>'", "''", "null"]
)
def test_any_other_value_is_rejected(value):
    rejected(
        BEARER_SPEC,
        f"get('{BASE}/items', {{ headers: {{ Authorization: {value} }} }});",
        "value of 'Authorization' in headers of GET /items does not match its schema "
        "(expected the credential placeholder 'Bearer <token>')",
    )


def test_identifiers_in_scope_may_hold_the_token():
    kw = {"identifiers": ("token",)}
    ok(BEARER_SPEC, f"get('{BASE}/items', {{ headers: {{ Authorization: `Bearer ${{token}}` }} }});", **kw)
    ok(BEARER_SPEC, f"get('{BASE}/items', {AUTH});", **kw)
    # a bare identifier cannot be told to hold 'Bearer …'; unknown names are no identifiers
    rejected(
        BEARER_SPEC,
        f"get('{BASE}/items', {{ headers: {{ Authorization: token }} }});",
        "value of 'Authorization'",
        **kw,
    )
    rejected(
        BEARER_SPEC,
        f"get('{BASE}/items', {{ headers: {{ Authorization: `Bearer ${{other}}` }} }});",
        "value of",
        **kw,
    )


def test_optional_and_open_operations_are_not_forced():
    for path in ("/maybe", "/public"):
        ok(BEARER_SPEC, f"get('{BASE}{path}');")
        ok(BEARER_SPEC, f"get('{BASE}{path}', {AUTH});")
        ok(
            BEARER_SPEC, f"get('{BASE}{path}', {{ headers: {{ Authorization: 'Bearer abc' }} }});"
        )  # free value
    assert credential_requirement(BEARER_SPEC, BEARER_SPEC.match("get", f"{BASE}/maybe").operation) == ()


def test_switch_off_restores_optional_credentials():
    off = GrammarOptions(require_credentials=False)
    ok(BEARER_SPEC, f"get('{BASE}/items');", options=off)
    ok(BEARER_SPEC, f"get('{BASE}/items', {{ headers: {{ Authorization: 'Bearer abc' }} }});", options=off)
    on = build_webapi_grammar(BEARER_SPEC, setup="full")
    g_off = build_webapi_grammar(BEARER_SPEC, setup="full", options=off)
    assert on is not g_off and on.lark != g_off.lark
    assert "require_credentials=True" in repr(GrammarOptions())  # part of the run fingerprint
    assert "require_credentials=False" in repr(off)


# ------------------------------------------------------------------------------ other places
def test_api_key_in_query():
    s = KEY_SPEC
    rejected(s, f"get('{BASE}/q');", "GET /q needs a config with params: api_key", at=")")
    rejected(
        s, f"get('{BASE}/q', {{ params: {{}} }});", "required credential 'api_key' (value '<key>') missing"
    )
    rejected(
        s,
        f"get('{BASE}/q', {{ headers: {{ api_key: '<key>' }} }});",
        "argument 'api_key' is not allowed in headers",
    )
    rejected(
        s,
        f"get('{BASE}/q', {{ params: {{ api_key: 'abc' }} }});",
        "expected the credential placeholder '<key>'",
    )
    ok(s, f"get('{BASE}/q', {{ params: {{ api_key: '<key>' }} }});")
    ok(s, f'get("{BASE}/q", {{ "params": {{ "api_key": "<key>" }} }});')
    ok(s, f"get('{BASE}/q', {{ params: {{ api_key: apiKey }} }});", identifiers=("apiKey",))


def test_api_key_in_header_cookie_and_basic():
    s = KEY_SPEC
    ok(s, f"get('{BASE}/h', {{ headers: {{ 'x-api-key': '<key>' }} }});")
    rejected(s, f"get('{BASE}/h', {{ headers: {{}} }});", "required credential 'X-API-Key'")
    ok(s, f"get('{BASE}/c', {{ headers: {{ Cookie: 'session=<key>' }} }});")
    rejected(s, f"get('{BASE}/c', {{ headers: {{ Cookie: '<key>' }} }});", "placeholder 'session=<key>'")
    ok(s, f"get('{BASE}/b', {{ headers: {{ Authorization: 'Basic <credentials>' }} }});")
    rejected(s, f"get('{BASE}/b', {AUTH});", "placeholder 'Basic <credentials>'")


def test_one_of_several_places():
    s = KEY_SPEC
    url = f"get('{BASE}/either'"
    ok(s, f"{url}, {AUTH});")
    ok(s, f"{url}, {{ params: {{ api_key: '<key>', limit: 1 }} }});")
    ok(s, f"{url}, {{ params: {{ limit: 1 }}, headers: {{ Authorization: 'Bearer <token>' }} }});")
    rejected(
        s, f"{url});", "needs a config with a credential (headers.authorization or params.api_key)", at=")"
    )
    rejected(
        s,
        f"{url}, {{}});",
        "credential missing (needs headers.authorization or params.api_key) before '}' in config",
    )
    # headers closed without a credential: params may still bring it ...
    ok(s, f"{url}, {{ headers: {{ 'X-Trace': 't' }}, params: {{ api_key: '<key>' }} }});")
    # ... but once both are closed without one, the second close is refused (no dead end later)
    text = f"{url}, {{ headers: {{ 'X-Trace': 't' }}, params: {{ limit: 1 }} }});"
    r = check_continuation(s, text, options=PLACEHOLDER)
    assert not r.allowed and "no credential left possible" in (r.reason or "")
    assert r.offset == text.index("} });")
    # a place given as an identifier may hold the credential
    ok(s, f"{url}, {{ headers: hdrs }});", identifiers=("hdrs",))


def test_alternative_needing_two_credentials():
    s = KEY_SPEC
    url = f"get('{BASE}/both'"
    rejected(s, f"{url}, {AUTH});", "required argument 'params' missing")
    ok(s, f"{url}, {{ headers: {{ Authorization: 'Bearer <token>' }}, params: {{ api_key: '<key>' }} }});")


def test_requirement_forms():
    s = KEY_SPEC
    both = credential_requirement(s, s.match("get", f"{BASE}/both").operation)
    assert [sorted(c.atom for c in alt) for alt in both] == [
        [("headers", "authorization"), ("params", "api_key")]
    ]
    either = credential_requirement(s, s.match("get", f"{BASE}/either").operation)
    assert [[c.atom for c in alt] for alt in either] == [
        [("headers", "authorization")],
        [("params", "api_key")],
    ]
    # an http scheme without a placeholder convention: the header is required, any string value
    digest = _spec(
        {"d": {"type": "http", "scheme": "digest"}, "b": {"type": "http", "scheme": "bearer"}},
        {"/x": {"get": {"security": [{"d": []}, {"b": []}], "responses": OK}}},
    )
    rejected(digest, f"get('{BASE}/x');", "needs a config with headers: Authorization")
    ok(digest, f"get('{BASE}/x', {{ headers: {{ Authorization: 'Digest username=\"u\"' }} }});")
    # an undeclared scheme makes the requirement unforceable: nothing is required
    odd = _spec({}, {"/x": {"get": {"security": [{"nope": []}], "responses": OK}}})
    assert credential_requirement(odd, odd.operations[0]) == ()
    ok(odd, f"get('{BASE}/x');")


def test_random_walks_never_dead_end_on_a_choice_of_places():
    """Byte-level random walks under grammar ∩ tracker on the either-place operation: some byte is
    always allowed and every finished call carries a credential and passes the checker."""
    pytest.importorskip("numpy")
    from callbench.constrain.check import matcher_for

    from .test_key_tracker import byte_walk

    closed = 0
    for seed in range(30):
        rng = random.Random(seed)
        g = build_webapi_grammar(KEY_SPEC, setup="args", method="get", url=f"{BASE}/either", options=PLACEHOLDER)
        m, t = matcher_for(g), make_key_tracker(g, KEY_SPEC)
        out = bytearray()
        byte_walk(m, t, out, rng, limit=400, bias=(0.3, 200))
        if t.done:
            closed += 1
            text = out.decode("utf-8", "replace")
            assert "<token>" in text or "<key>" in text, text
            r = check_continuation(KEY_SPEC, text, setup="args", method="get", url=f"{BASE}/either", options=PLACEHOLDER)
            assert r.allowed, (text, r.reason)
    assert closed >= 15


# ------------------------------------------------------------------------------ real specs
@pytest.mark.needs_data
def test_real_specs_require_the_bearer_token(wapii_specs):
    a = "https://app.asana.com/api/1.0"
    asana, slack = wapii_specs["asana"], wapii_specs["slack"]
    rejected(
        asana,
        f"get('{a}/attachments', {{ params: {{ parent: '1' }} }});",
        "required argument 'headers' missing",
    )
    ok(
        asana,
        f"get('{a}/attachments', {{ params: {{ parent: '1' }}, headers: {{ Authorization: 'Bearer <token>' }} }});",
    )
    # Slack's scope 'none' still names the oauth2 scheme
    rejected(slack, "get('https://slack.com/api/auth.test');", "needs a config with headers: Authorization")
    ok(slack, f"get('https://slack.com/api/auth.test', {AUTH});")
    cal = "https://www.googleapis.com/calendar/v3"
    rejected(
        wapii_specs["google_calendar_v3"],
        f"get('{cal}/users/me/calendarList', {{ headers: {{ Authorization: 'Bearer x' }} }});",
        "placeholder",
    )


# ------------------------------------------------------------------------------ the prompt
def test_v2_prompt_states_the_convention_the_grammar_enforces():
    """v2 tells the model what CD requires (a credential, its place and placeholder); v1, the
    published prompt, only names the placeholders."""
    from callbench.specs.credentials import API_KEY, BASIC, BEARER
    from callbench.tracks.templates import load_templates

    files = ("instructions.md", "full.js", "args.js", "chat_system.md", "chat_user.md")
    v1 = load_templates("callbench.tracks.webapi.prompts", "v1", files)
    v2 = load_templates("callbench.tracks.webapi.prompts", "v2", files)
    text = v2["instructions.md"]
    for value in (*BEARER.values, *BASIC.values, *API_KEY.values):
        assert f"'{value}'" in text, value
    assert "Authorization: 'Bearer <token>'" in text and "requires authentication" in text
    assert "Bearer <token>" not in v1["instructions.md"]
    for name in ("{syntax}", "{api}", "{extra}"):
        assert name in text
    assert {k: v for k, v in v2.items() if k != "instructions.md"} == {
        k: v for k, v in v1.items() if k != "instructions.md"
    }
