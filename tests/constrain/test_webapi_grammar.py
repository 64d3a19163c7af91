"""The web API grammar: what it accepts, what it rejects and why, and that it stays small and fast.

Most cases run on a small inline spec (no data needed); the last ones build the grammars of the
real WAPIIBench specs and check size, build time and llguidance's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.constrain import (
    GrammarError,
    GrammarOptions,
    build_webapi_grammar,
    check_continuation,
    check_invocation,
)
from callbench.constrain.check import matcher_for
from callbench.constrain.webapi_grammar import clear_grammar_cache
from callbench.specs import build_spec

llguidance = pytest.importorskip("llguidance")

BASE = "https://api.example.com/v1"
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "tiny", "version": "1"},
    "servers": [{"url": BASE}],
    "components": {
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "key": {"type": "apiKey", "in": "query", "name": "api_key"},
        },
        "schemas": {
            "Node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                },
            },
        },
    },
    "paths": {
        "/items": {
            "get": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "lines", "in": "query", "schema": {"type": "integer"}},
                    {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
                    {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "count": {"type": "integer"},
                                    "ratio": {"type": "number", "nullable": True},
                                    "active": {"type": "boolean"},
                                    "meta": {"type": "object"},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "extras": {
                                        "type": "object",
                                        "properties": {"size": {"type": "integer"}},
                                        "additionalProperties": {"type": "string"},
                                    },
                                    "node": {"$ref": "#/components/schemas/Node"},
                                    "kind": {"oneOf": [{"enum": ["a", "b"]}, {"type": "integer"}]},
                                },
                            }
                        }
                    }
                },
                "responses": {"201": {"description": "ok"}},
            },
        },
        "/items/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "get": {"responses": {"200": {"description": "ok"}}},
            "delete": {"responses": {"204": {"description": "ok"}}},
        },
        "/search": {
            "get": {
                "parameters": [{"name": "q", "in": "query", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/users/me": {"get": {"responses": {"200": {"description": "ok"}}}},
        "/users/{user}": {
            "parameters": [{"name": "user", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "parameters": [{"name": "fields", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            },
        },
        "/reports/{kind}": {
            "parameters": [
                {"name": "kind", "in": "path", "required": True, "schema": {"enum": ["daily", "weekly"]}}
            ],
            "get": {"responses": {"200": {"description": "ok"}}},
        },
    },
}


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/tiny/openapi.yaml"), "tiny.yaml")


def ok(spec, text: str, **kw) -> None:
    r = check_continuation(spec, text, **kw)
    assert r.allowed, (text, r.reason, r.offset)


def rejected(spec, text: str, reason: str, at: str | None = None, **kw) -> None:
    """Rejected, with a reason containing ``reason``, at the first character of ``at``."""
    r = check_continuation(spec, text, **kw)
    assert not r.allowed, text
    assert r.reason is not None and reason in r.reason, (r.reason, reason)
    if at is not None:
        assert r.offset == text.index(at), (r.offset, text[r.offset or 0 :])


# ------------------------------------------------------------------------------ accepted
@pytest.mark.parametrize(
    "text",
    [
        f"get('{BASE}/items');",
        f'get("{BASE}/items", {{ params: {{ limit: 5, order: "asc", tags: ["x", \'y\'] }} }});',
        f"get(`{BASE}/items`, {{'params': {{'limit': '5'}}, \"headers\": {{authorization: 'Bearer t', 'x-trace': 'abc'}}}})",
        f"get('{BASE}/items/42', {{ params: {{ api_key: 'k' }} }}).then(r => console.log(r.data));",
        f"get('{BASE}/items/42')\n  .catch(console.error)",
        f"get('{BASE}/users/me', {{}},);",
        f"get('{BASE}/users/<user-id>', {{ params: {{ fields: 'a,b' }} }});",
        f"get('{BASE}/reports/weekly');",
        f"delete('{BASE}/items/7');",
        f"post('{BASE}/items', {{ name: 'n', count: 3, ratio: null, active: true, kind: 'a' }});",
        f"post('{BASE}/items', {{ kind: 2, name: 'n', meta: {{ any: [1, {{ deep: true }}], 'x-y': null }} }});",
        f"post('{BASE}/items', {{ name: 'n', labels: {{ team: 'core', 'with space': 'v' }} }}, {{ headers: {{ 'Content-Type': 'application/json' }} }});",
        f"post('{BASE}/items', {{ name: 'n', node: {{ name: 'a', children: [{{ name: 'b', children: [] }}] }} }});",
        f"post(\n  '{BASE}/items',\n  {{\n    name: 'n',\n    count: 1,\n  }},\n);\nconsole.log('free text after the call {{ }} ]');",
        f"get('{BASE}/search', {{ params: {{ q: 'x' }} }})",
        f"post('{BASE}/items', {{ name: 'quote \\' and \\\\ and \\n' }});",
        f'post("{BASE}/items", {{ "name": "unicode ✓ 名前" }});',
    ],
)
def test_legal_calls_are_accepted(spec, text):
    ok(spec, text)


def test_args_setup_starts_after_the_fixed_url(spec):
    kw = {"setup": "args", "method": "post", "url": f"{BASE}/items"}
    ok(spec, " { name: 'x' }, { headers: { Authorization: 'Bearer t' } });", **kw)
    rejected(spec, " { count: 1 });", "required argument 'name' missing", at="}", **kw)
    ok(spec, "\n  {name: 'x'},\n);", **kw)
    kw = {"setup": "args", "method": "get", "url": f"{BASE}/items/5"}
    ok(spec, ");", **kw)
    ok(spec, " { params: { api_key: 'k' } });", **kw)


def test_args_setup_needs_an_operation_of_the_spec(spec):
    with pytest.raises(GrammarError, match="matches no path"):
        build_webapi_grammar(spec, setup="args", method="get", url=f"{BASE}/nope")
    with pytest.raises(GrammarError, match="POST is not defined"):
        build_webapi_grammar(spec, setup="args", method="post", url=f"{BASE}/items/1")
    with pytest.raises(GrammarError):
        build_webapi_grammar(spec, setup="args")


# ------------------------------------------------------------------------------ rejected
def test_wrong_method_for_a_url(spec):
    # POST /items exists, but no path starts /items/ for POST (a trailing slash is matched
    # exactly, issue 26, in both profiles)
    for options in (GrammarOptions(profile="paper"), GrammarOptions()):
        rejected(spec, f"post('{BASE}/items/1', {{}});", "matches no path with method post", at="/1'", options=options)
    rejected(spec, f"patch('{BASE}/items', {{}});", "method 'patch' is not defined for any URL", at="atch")
    rejected(spec, f"fetch('{BASE}/items');", "not an axios request method", at="fetch")


def test_trailing_slash_the_spec_lacks(spec):
    # both profiles match paths exactly (WAPIIBench's scorer, issue 26); only a task's own URL
    # (setup args' fixed URL) is read with one slash more or less
    for options in (GrammarOptions(profile="paper"), GrammarOptions()):
        rejected(spec, f"get('{BASE}/items/42/');", "matches no path", at="/');", options=options)
        rejected(spec, f"get('{BASE}/items/42//');", "matches no path", at="//');", options=options)


def test_nonexistent_url(spec):
    rejected(spec, f"get('{BASE}/nope');", f"URL '{BASE}/nope' matches no path with method get", at="nope")
    rejected(spec, "get('https://evil.example.org/v1/items');", "matches no path with method get")


def test_path_parameter_types(spec):
    rejected(spec, f"get('{BASE}/items/abc');", "is not an integer")
    rejected(spec, f"get('{BASE}/reports/monthly');", "path parameter 'kind' = 'monthly'", at="monthly")
    ok(spec, f"get('{BASE}/reports/daily');")


def test_query_string_in_url(spec):
    """The default (real-world) profile takes a query in the URL; the paper profile does not."""
    text = f"get('{BASE}/items?limit=5');"
    rejected(spec, text, "has a query string", at="?", options=GrammarOptions(allow_url_query=False))
    rejected(spec, text, "has a query string", at="?", options=GrammarOptions(profile="paper"))
    ok(spec, text, options=GrammarOptions(allow_url_query=True))
    ok(spec, text)
    # still only the operation's own query parameters
    rejected(spec, f"get('{BASE}/items?limits=5');", "query parameter 'limits'", at="s=5")


def test_illegal_parameter_name(spec):
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ foo: 1 }} }});",
        "argument 'foo' is not allowed in params of GET /items",
        at="foo",
    )
    rejected(
        spec,
        f"get('{BASE}/items', {{ headers: {{ 'X-Other': 1 }} }});",
        "argument 'X-Other' is not allowed in headers",
    )
    rejected(spec, f"get('{BASE}/items', {{ timeout: 5 }});", "config key 'timeout' is not allowed")
    rejected(
        spec,
        f"post('{BASE}/items', {{ name: 'n', extra: 1 }});",
        "argument 'extra' is not allowed in data of POST /items",
    )
    rejected(
        spec,
        f"post('{BASE}/items', {{ name: 'n', node: {{ name: 'a', bad: 1 }} }});",
        "key 'bad' is not allowed",
    )


def test_wrong_value_type(spec):
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ limit: 'ten' }} }});",
        "value of 'limit' in params of GET /items does not match its schema (expected integer)",
        at="ten'",
    )
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ order: 'up' }} }});",
        "expected one of 'asc', 'desc'",
        at="up'",
    )
    rejected(spec, f"post('{BASE}/items', {{ name: 1 }});", "value of 'name' in data of POST /items")
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', count: 1.5 }});", "expected integer")
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', labels: {{ a: 1 }} }});", "value of 'a'")
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', kind: 'c' }});", "value of 'kind'")
    # numeric strings count as the number they spell (on/off by option)
    ok(spec, f"get('{BASE}/items', {{ params: {{ limit: '5' }} }});")
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ limit: '5' }} }});",
        "expected integer",
        options=GrammarOptions(numeric_strings=False),
    )


def test_duplicate_key(spec):
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ limit: 1, limit: 2 }} }});",
        "key 'limit' given twice in params of GET /items",
    )
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ 'order': 'asc', \"order\": 'desc' }} }});",
        "key 'order' given twice",
    )
    rejected(
        spec,
        f"get('{BASE}/items', {{ headers: {{ 'X-Trace': 'a', 'x-trace': 'b' }} }});",
        "key 'x-trace' given twice in headers",
    )
    rejected(
        spec, f"get('{BASE}/items', {{ params: {{}}, params: {{}} }});", "key 'params' given twice in config"
    )
    rejected(
        spec, f"post('{BASE}/items', {{ name: 'n', labels: {{ a: 'x', a: 'y' }} }});", "key 'a' given twice"
    )


def test_missing_required_key(spec):
    rejected(
        spec,
        f"post('{BASE}/items', {{ count: 1 }});",
        "required argument 'name' missing before '}' in data of POST /items",
    )
    rejected(
        spec,
        f"post('{BASE}/items', {{ name: 'n', node: {{ children: [] }} }});",
        "required argument 'name' missing",
    )
    rejected(
        spec,
        f"get('{BASE}/search', {{ params: {{}} }});",
        "required argument 'q' missing before '}' in params of GET /search",
    )
    rejected(
        spec,
        f"get('{BASE}/search', {{ headers: {{}} }});",
        "required argument 'params' missing before '}' in config",
    )
    rejected(spec, f"get('{BASE}/search');", "GET /search needs a config with params: q", at=")")
    rejected(spec, f"post('{BASE}/items');", "POST /items needs data", at=")")
    rejected(spec, f"post('{BASE}/items', undefined);", "data of POST /items does not match")


def test_arguments_and_tail(spec):
    rejected(spec, f"get('{BASE}/items', {{}}, {{}});", "takes no argument 3")
    rejected(spec, f"get('{BASE}/items')foo", "only ';'")
    ok(spec, f"get('{BASE}/items');anything at all")
    rejected(spec, f"get('{BASE}/items', {{", "the call is incomplete")
    r = check_continuation(spec, f"get('{BASE}/items', {{")
    assert r.offset == len(r.call or "")


def test_identifiers(spec):
    kw = {"identifiers": ("itemId", "token", "trueish")}
    ok(
        spec,
        f"get(`{BASE}/items/${{itemId}}`, {{ headers: {{ Authorization: `Bearer ${{token}}` }} }});",
        **kw,
    )
    ok(spec, f"post('{BASE}/items', {{ name: token, active: trueish, count: itemId }});", **kw)
    ok(spec, f"post('{BASE}/items', {{ name: 'x', active: true }});", **kw)
    rejected(spec, f"get(`{BASE}/items/${{other}}`);", "'${other}' in URL", at="other", **kw)
    rejected(spec, f"post('{BASE}/items', {{ name: token }});", "value of 'name'")  # no identifiers given


def test_bounds(spec):
    deep = "{ name: 'a', children: [" * 4 + "{ name: 'z' }" + "] }" * 4
    ok(spec, f"post('{BASE}/items', {{ name: 'n', node: {deep} }});")
    tight = GrammarOptions(max_depth=2)
    # a recursive schema has no depth bound (JSON Schema sets none): one recursive rule
    ok(spec, f"post('{BASE}/items', {{ name: 'n', node: {deep * 1} }});", options=tight)
    deeper = "{ name: 'a', children: [" * 12 + "{ name: 'z' }" + "] }" * 12
    ok(spec, f"post('{BASE}/items', {{ name: 'n', node: {deeper} }});")
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', node: {{ children: [{{ name: 1 }}] }} }});", "value of 'name'")
    # free-form values keep max_depth: a free-form object nested 5 deep is refused under 2
    free = "{ a: { b: { c: { d: { e: 1 } } } } }"
    ok(spec, f"post('{BASE}/items', {{ name: 'n', meta: {free} }});")
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', meta: {free} }});", "does not match", options=tight)
    rejected(
        spec,
        f"get('{BASE}/items', {{ params: {{ tags: ['a', 'b', 'c'] }} }});",
        "an array holds at most 2 items",
        at="'c'",
        options=GrammarOptions(max_array_items=2),
    )
    ok(
        spec,
        f"get('{BASE}/items', {{ params: {{ tags: ['a', 'b'] }} }});",
        options=GrammarOptions(max_array_items=2),
    )
    rejected(
        spec,
        f"post('{BASE}/items', {{ name: 'abcdef' }});",
        "value of 'name'",
        options=GrammarOptions(max_string_len=5),
    )


def test_whitespace_is_bounded(spec):
    """A few spaces, or one line break and indentation: no padding runs, no blank lines."""
    ok(spec, f"get('{BASE}/items',{' ' * 4}{{}});")
    rejected(spec, f"get('{BASE}/items',{' ' * 5}{{}});", "more than 4 spaces or tabs", at=" {")
    ok(spec, f"get('{BASE}/items',\t\t{{\r\n{' ' * 32}params: {{ limit: 1 }},\n}});")
    rejected(spec, f"get('{BASE}/items', {{\n{' ' * 33}}});", "more than 32 spaces or tabs of indentation")
    rejected(spec, f"get('{BASE}/items', {{\n\n}});", "a second line break in a row", at="\n}")
    rejected(spec, f"get('{BASE}/items'){' ' * 5};", "only ';'")  # after the call, too
    wide = GrammarOptions(space_max=8, indent_max=40)
    ok(spec, f"get('{BASE}/items',{' ' * 8}{{\n{' ' * 40}}});", options=wide)
    rejected(spec, f"get('{BASE}/items',{' ' * 9}{{}});", "more than 8 spaces", options=wide)


def test_lexer_ambiguities(spec):
    """Terminals that match the same text are resolved by the parser, not by lexer priority."""
    body = f"post('{BASE}/items', {{{{ name: 'n', extras: {{{{ {{}} }}}} }}}});"
    ok(spec, body.format("size: 1"))  # declared key: its own schema
    rejected(spec, body.format("size: 'x'"), "value of 'size'")  # ... not the free keys' schema
    ok(spec, body.format("other: 'x'"))  # free key
    rejected(spec, body.format("other: 1"), "value of 'other'")
    ok(spec, body.format("'size': 2, sizes: 'x'"))
    kw = {"identifiers": ("nullish", "trueValue")}
    ok(spec, f"post('{BASE}/items', {{ name: 'n', ratio: nullish, active: trueValue }});", **kw)
    ok(spec, f"post('{BASE}/items', {{ name: 'n', ratio: null, active: true }});", **kw)
    rejected(spec, f"post('{BASE}/items', {{ name: 'n', active: trueV }});", "value of 'active'", **kw)


def test_full_setup_can_fix_the_method(spec):
    g = build_webapi_grammar(spec, setup="full", method="delete")
    m = matcher_for(g)
    assert m.consume_tokens(list(f"delete('{BASE}/items/1');".encode())) and m.is_accepting()
    assert not matcher_for(g).consume_tokens(list(b"get("))
    with pytest.raises(GrammarError, match="no operation with method"):
        build_webapi_grammar(spec, setup="full", method="patch")


def test_shadowed_urls_take_the_better_template(spec):
    # /users/me is its own operation (no query parameters); /users/{user} takes `fields`.
    rejected(
        spec,
        f"get('{BASE}/users/me', {{ params: {{ fields: 'x' }} }});",
        "argument 'fields' is not allowed in params of GET /users/me",
    )
    ok(spec, f"get('{BASE}/users/mex', {{ params: {{ fields: 'x' }} }});")


def test_check_invocation_finds_the_call(spec):
    code = f"// task\nconst axios = require('axios');\n\naxios.get('{BASE}/items', {{ params: {{ limit: 1, limit: 2 }} }});\nfoo();"
    r = check_invocation(spec, code)
    assert not r.allowed and "given twice" in (r.reason or "")
    assert r.call is not None and r.call.startswith("get(")
    # refused at the first byte after which only the given key can follow: 'lim' (not 'lines')
    assert r.call[(r.offset or 0) - 2 :].startswith("limit: 2")
    good = f"const axios = require('axios');\naxios.post('{BASE}/items', {{ name: 'n' }}).then(r => r);"
    assert check_invocation(spec, good).allowed
    args = check_invocation(spec, good, setup="args", method="post", url=f"{BASE}/items")
    assert args.allowed and args.call == " { name: 'n' })"
    assert not check_invocation(spec, "no code here").allowed
    other = check_invocation(spec, good, setup="args", method="post", url=f"{BASE}/other")
    assert not other.allowed and "fixed starter" in (other.reason or "")


def test_grammar_is_cached_and_deterministic(spec):
    a = build_webapi_grammar(spec, setup="full")
    assert build_webapi_grammar(spec, setup="full") is a
    clear_grammar_cache()
    b = build_webapi_grammar(spec, setup="full")
    assert b is not a and b.lark == a.lark
    x = build_webapi_grammar(spec, setup="args", method="get", url=f"{BASE}/items/1")
    y = build_webapi_grammar(spec, setup="args", method="get", url=f"{BASE}/items/2")
    assert x.lark is y.lark and x.url != y.url  # one grammar per operation
    assert llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(a.lark)) == ""


# ------------------------------------------------------------------------------ real specs
@pytest.mark.needs_data
def test_real_spec_grammars_are_small_and_valid(wapii_specs, data_root):
    """Size and validity; build time is a benchmark figure (benchmarks/constraints.py,
    benchmarks/wild_specs.py, benchmarks/bounded_work_timings.py), not a unit test's verdict."""
    from callbench.specs import load_spec

    specs = dict(wapii_specs)
    specs["petstore"] = load_spec(
        data_root / "wapiibench" / "openapi" / "test" / "petstore-expanded-modified.yaml"
    )
    clear_grammar_cache()
    for name, s in specs.items():
        g = build_webapi_grammar(s, setup="full")
        assert len(g.lark) < 400_000, (name, len(g.lark))
        err = llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(g.lark))
        assert err == "", (name, err[:500])
        for op in s.operations[:: max(1, len(s.operations) // 10)]:
            url = s.servers[0] + op.path.replace("{", "").replace("}", "")
            if s.match(op.method, url) is None or s.match(op.method, url).operation is not op:
                continue
            a = build_webapi_grammar(s, setup="args", method=op.method, url=url)
            assert llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(a.lark)) == ""


@pytest.mark.needs_data
def test_real_spec_negative_cases(wapii_specs):
    asana, slack = wapii_specs["asana"], wapii_specs["slack"]
    a = "https://app.asana.com/api/1.0"
    rejected(
        asana,
        f"get('{a}/attachments', {{ params: {{ parent: '1', foo: 1 }} }});",
        "argument 'foo' is not allowed in params of GET /attachments",
    )
    rejected(
        asana, f"get('{a}/attachments', {{ params: {{ parent: '1', limit: 'ten' }} }});", "expected integer"
    )
    rejected(
        asana, f"get('{a}/attachments', {{ params: {{ limit: 5 }} }});", "required argument 'parent' missing"
    )
    rejected(asana, f"patch('{a}/attachments');", "method 'patch' is not defined for any URL")
    rejected(
        asana,
        f"delete('{a}/attachments');",
        "matches no path with method delete (/attachments allows get, post)",
    )
    rejected(
        slack,
        "post('https://slack.com/api/chat.postMessage', { text: 'hi' });",
        "required argument 'channel' missing before '}' in data of POST /chat.postMessage",
    )
    rejected(
        slack,
        "post('https://slack.com/api/chat.postMessage', { channel: 'C', channel: 'D' });",
        "key 'channel' given twice",
    )
    ok(
        slack,
        "post('https://slack.com/api/chat.postMessage', { channel: 'C', text: 'hi' }, { headers: { Authorization: 'Bearer <token>' } });",
    )
