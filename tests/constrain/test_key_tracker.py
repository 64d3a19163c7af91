"""The key tracker: uniqueness and required keys, exact for tokens holding several structural
characters, cheap independent clones, and the `sensitive`/`active` fast-path contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.constrain import TokenFilter, build_webapi_grammar, make_key_tracker
from callbench.specs import build_spec

BASE = "https://api.example.com/v1"
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "tracker", "version": "1"},
    "servers": [{"url": BASE}],
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                },
            }
        },
    },
    "paths": {
        "/items": {
            "get": {
                "parameters": [
                    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "limits", "in": "query", "schema": {"type": "string"}},
                    {"name": "X-Req", "in": "header", "required": True, "schema": {"type": "string"}},
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
                                    "color": {"type": "string"},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "node": {"$ref": "#/components/schemas/Node"},
                                },
                            }
                        }
                    }
                },
                "responses": {"201": {"description": "ok"}},
            },
        },
        "/items/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "put": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"color": {"type": "string"}}}
                        }
                    }
                },
                "responses": {"200": {"description": "ok"}},
            },
        },
    },
}


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/tracker/openapi.yaml"), "tracker.yaml")


def tracker(spec, prefix: str = "", **kw):
    g = build_webapi_grammar(spec, setup=kw.pop("setup", "full"), **kw)
    t = make_key_tracker(g, spec)
    assert isinstance(t, TokenFilter)
    t.feed(prefix.encode())
    assert t.violation is None, t.violation
    return t


POST = f"post('{BASE}/items', "


def test_multi_structural_tokens_are_judged_exactly(spec):
    t = tracker(spec, POST + "{ count: 1")
    assert not t.allows(b" }")
    assert not t.allows(b"})")
    assert not t.allows(b"});\n")
    assert t.allows(b", name: 'x' }")
    assert t.allows(b", name: 'x' });")
    t = tracker(spec, POST + "{ labels: { a: 'x")
    assert t.allows(b"'}")  # closes the free-form labels object only
    assert not t.allows(b"'} }")  # ... and then the body, which still lacks `name`
    assert not t.allows(b"'}})")
    assert t.allows(b"', b: 'y'}, name: 'n'})")
    assert not t.allows(b"', a: 'y")  # `a` again inside labels (free keys are unique too)


def test_duplicate_keys_all_quote_styles(spec):
    t = tracker(spec, POST + "{ name: 'x', count: 1")
    for tok in (b", count:", b', "count"', b", 'count'", b",count ", b",\n  count"):
        assert not t.allows(tok), tok
    assert t.allows(b", color: 'red'")
    assert t.allows(b", 'color")


def test_partial_keys_that_can_only_repeat_are_refused(spec):
    t = tracker(spec, POST + "{ name: 'x', count: 1, ")
    assert t.allows(b"c")  # could still be `color`
    assert t.allows(b"co")
    assert not t.allows(b"cou")  # only `count`, already given
    assert not t.allows(b"'cou")
    assert t.allows(b"'col")
    # a prefix that is itself a used key may still grow into a longer one
    g = tracker(spec, f"get('{BASE}/items', {{ params: {{ q: 'x', limit: 1, ")
    assert g.allows(b"limit")  # -> limits
    assert not g.allows(b"limit:")
    assert not g.allows(b"'limit'")
    assert g.allows(b"limits:")


def test_every_key_used_leaves_only_the_close(spec):
    t = tracker(spec, f"put('{BASE}/items/1', {{ color: 'red', ")
    assert not t.allows(b"'")  # no unused key left to start
    assert not t.allows(b"c")
    assert t.allows(b"}")


def test_required_keys_at_every_level(spec):
    get = f"get('{BASE}/items', "
    assert not tracker(spec, get + "{ params: { limit: 1").allows(b" }")
    assert not tracker(spec, get + "{ params: { q: 'x' }").allows(b" }")  # config needs headers (X-Req)
    assert tracker(spec, get + "{ params: { q: 'x' }, headers: { 'x-req': 'r'").allows(b"' } })")
    node = POST + "{ name: 'n', node: { name: 'a', children: [{ children: [] "
    assert not tracker(spec, node).allows(b"}")
    assert tracker(spec, node).allows(b", name: 'b' }")


def test_headers_are_case_insensitive(spec):
    t = tracker(spec, f"get('{BASE}/items', {{ params: {{ q: 'x' }}, headers: {{ 'X-Req': 'a', ")
    assert not t.allows(b"'x-req'")
    assert not t.allows(b"'X-REQ")
    assert t.allows(b"Authorization: 'Bearer t'")
    t.feed(b"authorization: 'Bearer t', ")
    assert not t.allows(b"AUTHORIZATION:")


def test_strings_with_quotes_escapes_and_templates(spec):
    # `name` is missing throughout, so closing the body is what must be refused
    t = tracker(spec, POST + "{ count: 1, color: 'it\\'s } ")  # JS: 'it\'s } (escaped quote)
    assert t.allows(b"})")  # still inside the string
    assert not t.allows(b"'})")
    t = tracker(spec, POST + '{ count: 1, color: "a\\\\')  # JS: "a\\ (escaped backslash)
    assert not t.allows(b'"})')  # this quote closes the string, then `}` closes the body
    assert t.allows(b'\\"})')  # an escaped quote keeps the string open
    t = tracker(spec, POST + "{ count: 1, color: `x ${id} ")
    assert t.allows(b"})")  # outside a hole, } is text in a template literal
    assert not t.allows(b"`})")


def test_clone_is_independent(spec):
    t = tracker(spec, POST + "{ name: 'x'")
    c = t.clone()
    c.feed(b", count: 1")
    assert not c.allows(b", count")
    assert t.allows(b", count")
    t.feed(b", color: 'c'")
    assert c.allows(b", color")
    assert not t.allows(b", color")
    assert c.violation is None and t.violation is None


def test_inactive_after_the_call_and_on_unknown_urls(spec):
    t = tracker(spec, POST + "{ name: 'x' })")
    assert t.done and not t.active()
    assert t.allows(b"; { a: 1, a: 2 }")
    lost = tracker(spec, f"get('{BASE}/nope', ")  # the grammar would have stopped this
    assert not lost.active() and lost.allows(b"anything")


def test_urls_with_template_holes_resolve_the_operation(spec):
    t = tracker(spec, f"put(`{BASE}/items/${{id}}`, {{ color: 'x'", identifiers=("id",))
    assert t.operation_label == "PUT /items/{id}"
    assert not t.allows(b", color")


def test_args_setup_starts_in_the_arguments(spec):
    t = tracker(spec, " { count: 1", setup="args", method="post", url=f"{BASE}/items")
    assert not t.allows(b" })")
    assert t.allows(b", name: 'a' })")
    t = tracker(spec, "", setup="args", method="put", url=f"{BASE}/items/1")
    assert t.allows(b");")


PROBES = [
    b"'X-Req'",  # a header again, in another case
    b" X",
    b"'x-",
    b"'\\u0063ount'",  # `count` spelt with an escape
    b"\"\\u006eame\":",
    b"lim",
    b" lim",
    b"'lim",
    b"na",
    b" limits:",
    b"'}, ",
    b"', name",
    b"', co",
    b"', 'co",
    b"}, node: {}",
    b" {}",
    b"{ name: 'a' }",
    b"limit",
    b"count",
    b"name",
    b"x",
    b"123",
    b" word",
    b"-",
    b".",
    b"}",
    b"'",
    b'"',
    b"`",
    b", ",
    b"})",
    b"'}",
    b", count:",
    b"\\",
    "é".encode(),
    b"\x00",
]


def test_sensitive_bytes_contract(spec):
    """In every state, a token outside the current ``sensitive`` set/class is allowed (the
    engine's fast path), and every verdict equals a fresh scan; the values stay few (all listed
    in ``all_sensitive``); inside a string value only a closing quote followed by code that closes
    an object or starts a key is sensitive."""
    from callbench.constrain.engine import is_sensitive

    texts = [
        POST + "{ name: 'x', count: 1, labels: { a: 'b', 'c d': 'e' }, node: { name: 'n', children: [] } });",
        f"get('{BASE}/items', {{ params: {{ q: 'x', limit: 2, limits: 'y' }}, headers: {{ 'X-Req': 'r', Authorization: `t` }} }});",
        POST + '{ count: 1, color: "c", name: "n" });',
        POST + "{ 'count': 1, \"name\": `n`, node: { \"name\": 'm' } });",
    ]
    sets = set()
    for text in texts:
        data = text.encode()
        t = tracker(spec)
        declared = set(t.all_sensitive)
        for i in range(len(data)):
            sens = t.sensitive
            for part in sens if isinstance(sens, tuple) else (sens,):
                assert part in declared, sens
            sets.add(sens)
            for p in PROBES:
                assert t.allows(p) == t._scan(p), (data[:i], p)
                if not is_sensitive(sens, p):
                    assert t.allows(p), (data[:i], p, sens)
            t.feed(data[i : i + 1])
            assert t.violation is None
        assert t.sensitive == frozenset() and not t.active()
    parts = {part for s in sets for part in (s if isinstance(s, tuple) else (s,))}
    assert parts <= declared and len(declared) < 100  # tables prebuilt per vocabulary, few
    assert {ord(c) for c in "{}[](),:'\"` \n"} <= max((s for s in sets if isinstance(s, frozenset)), key=len)
    inside = tracker(spec, POST + "{ name: 'abc")
    assert not is_sensitive(inside.sensitive, b"'") and not is_sensitive(inside.sensitive, b"',")
    assert not is_sensitive(inside.sensitive, b"}") and not is_sensitive(inside.sensitive, b"' + '}")
    assert is_sensitive(inside.sensitive, b"'}") and is_sensitive(inside.sensitive, b"', c")


def test_allows_is_fast_inside_strings(spec, monkeypatch):
    """Inside a string value a token without a quote or an escape changes no state: allowed
    without scanning its bytes. Checked by counting scans, not by timing (a busy machine must not
    fail it); the time per token is a benchmark figure (benchmarks/constraints.py)."""
    t = tracker(spec, POST + "{ name: 'a long string value")
    scans = []
    for name in ("_scan", "_memo_scan"):
        original = getattr(type(t), name)

        def counted(self, data, _original=original, _name=name):
            scans.append(_name)
            return _original(self, data)

        monkeypatch.setattr(type(t), name, counted)
    tokens = [f" word{i}".encode() for i in range(20000)]
    assert all(t.allows(x) for x in tokens)
    assert scans == []
    t.allows(b"', count: 1 }")
    assert scans  # a token with the quote is scanned: the counting sees scans


STRUCTURAL = frozenset(b"{}[](),:'\"")


def byte_walk(matcher, tracker, out: bytearray, rng, *, limit: int, bias: tuple[float, int]) -> None:
    """Extend ``out`` one byte at a time under grammar ∩ tracker until the call is done or ``limit``
    bytes, asserting some byte is always allowed. Structural bytes are preferred with probability
    ``bias[0] + len(out) / bias[1]`` (at most 0.9), so walks close their objects sooner or later."""
    import numpy as np

    while len(out) < limit and not tracker.done:
        bits = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        cands = [b for b in range(256) if bits[b] and tracker.allows(bytes([b]))]
        assert cands, f"dead end after {bytes(out)!r}"
        pick = [c for c in cands if c in STRUCTURAL]
        b = rng.choice(pick) if pick and rng.random() < min(0.9, bias[0] + len(out) / bias[1]) else rng.choice(cands)
        assert matcher.consume_token(b)
        tracker.feed(bytes([b]))
        out.append(b)


def test_grammar_and_tracker_never_dead_end(spec):
    """Random byte-level walks under grammar ∩ tracker: some byte is always allowed, and every
    call that gets closed passes the checker (so the tracker never steers into a dead end)."""
    import random

    pytest.importorskip("numpy")
    from callbench.constrain import check_continuation
    from callbench.constrain.check import matcher_for

    starts = [POST.encode(), f"get('{BASE}/items', ".encode(), f"put('{BASE}/items/1', ".encode(), b""]
    closed = 0
    for seed in range(40):
        rng = random.Random(seed)
        g = build_webapi_grammar(spec, setup="full")
        m, t = matcher_for(g), make_key_tracker(g, spec)
        out = bytearray(starts[seed % len(starts)])
        assert m.consume_tokens(list(out))
        t.feed(bytes(out))
        byte_walk(m, t, out, rng, limit=300, bias=(0.2, 300))
        if t.done:
            closed += 1
            r = check_continuation(spec, out.decode("utf-8", "replace"))
            assert r.allowed, (bytes(out), r.reason)
    assert closed >= 20


def test_string_suffix_memo_is_exact(wapii_tasks, wapii_specs):
    """allows() memoises verdicts (inside strings on the bytes from the closing quote on; between
    tokens on the bytes after leading whitespace); at every step of real gold decodes, for every
    quote- or whitespace-bearing token, it must equal the plain scan."""
    import pytest

    pytest.importorskip("llguidance")
    from callbench.constrain.engine import vocab_for_lltokenizer
    from callbench.constrain.webapi_grammar import build_webapi_grammar
    from callbench.testing.gpt2 import gpt2_lltokenizer
    from callbench.tracks.webapi.prompting import reference_completion

    vocab = vocab_for_lltokenizer(gpt2_lltokenizer())
    quoted = [b for b in vocab.token_bytes if b and (b"'" in b or b'"' in b or b"`" in b or b[:1] in (b" ", b"\n"))]
    checked = 0
    for api in ("slack", "asana"):
        spec = wapii_specs[api]
        g = build_webapi_grammar(spec, setup="full")
        for task in [t for t in wapii_tasks if t.api == api][:6]:
            tr = make_key_tracker(g, spec)
            for tok in vocab.lltok.tokenize_str(reference_completion(task, "full")):
                if tr.active():
                    for b in quoted[::12]:  # every 12th such token: ~8,000 checks
                        assert tr.allows(b) == tr._scan(b), (task.id, b)
                        checked += 1
                tr.feed(vocab.token_bytes[tok])
    assert checked > 5_000
