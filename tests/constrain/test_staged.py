"""The staged web API grammar (URLs first, then the operation's own grammar) against the single
grammar: the same masks, token by token, on real tokenizers; rollback across the switch;
budgets, healing and the checker; and the sizes that made it necessary (Microsoft Graph)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from callbench.constrain import GrammarOptions, build_webapi_grammar, check_continuation
from callbench.constrain.webapi_constraint import webapi_constraint
from callbench.constrain.webapi_grammar import STAGED_MIN_OPERATIONS, clear_grammar_cache
from callbench.errors import CallbenchError
from callbench.specs import build_spec

pytest.importorskip("llguidance")

BASE = "https://api.example.com/v1"
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "staged", "version": "1"},
    "servers": [{"url": BASE}],
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/users": {
            "get": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            }
                        }
                    },
                },
                "responses": {"201": {"description": "ok"}},
            },
        },
        # /users/me shadows /users/{id} for GET: the same URL text, two operations
        "/users/me": {"get": {"responses": {"200": {"description": "ok"}}}},
        "/users/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "parameters": [{"name": "fields", "in": "query", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {"responses": {"204": {"description": "gone"}}},
            "patch": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}}
                        }
                    }
                },
                "responses": {"200": {"description": "ok"}},
            },
        },
        "/users/{id}/posts/": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "get": {"security": [], "responses": {"200": {"description": "ok"}}},
        },
    },
}


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/staged/openapi.json"), "staged.json")


def _pair(spec):
    clear_grammar_cache()
    plain = build_webapi_grammar(spec, setup="full", options=GrammarOptions(staged=False))
    staged = build_webapi_grammar(spec, setup="full", options=GrammarOptions(staged=True))
    assert not plain.staged and staged.staged
    return webapi_constraint(plain, spec, name="plain"), webapi_constraint(staged, spec, name="staged")


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen"])
def test_masks_equal_the_single_grammar_along_real_calls(spec, real_vocab, vocab_name, full_setup_calls):
    """At every token of every synthesized call (valid and invalid ones, tokenized as the
    tokenizer does), the staged mask (grammar and key tracker) is the single grammar's."""
    vocab = real_vocab(vocab_name)
    plain_c, staged_c = _pair(spec)
    steps = switched = 0
    calls = full_setup_calls(spec, 3)
    assert len(calls) > 20
    for text in calls:
        tokens = list(vocab.lltok.tokenize_str(text))
        a = plain_c.new_session(vocab, record=False)
        b = staged_c.new_session(vocab, record=False)
        for t in tokens:
            ma, mb = a.mask(), b.mask()
            diff = np.flatnonzero(ma != mb)
            assert diff.size == 0, (text, b.generated_bytes(), [vocab.token_bytes[i] for i in diff[:5]])
            steps += 1
            if not ma[t]:
                break
            a.advance(t)
            b.advance(t)
            assert a.unsatisfiable == b.unsatisfiable
        else:
            assert a.is_accepting() == b.is_accepting()
            switched += b._matcher.stage == "tail"
    assert steps > 500 and switched > 10


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen"])
def test_masks_equal_on_random_walks(spec, real_vocab, vocab_name):
    """Random walks under the single grammar, biased towards tokens that close the URL and go
    on (the tokens the staged head cannot judge alone): same masks at every step."""
    vocab = real_vocab(vocab_name)
    plain_c, staged_c = _pair(spec)
    rng = np.random.default_rng(7)
    quotes = np.array([any(q in d[:-1] for q in b"'\"`") for d in vocab.token_bytes])
    for _ in range(12):
        a = plain_c.new_session(vocab, record=False)
        b = staged_c.new_session(vocab, record=False)
        for _ in range(40):
            ma, mb = a.mask(), b.mask()
            assert np.array_equal(ma, mb), b.generated_bytes()
            pick = np.flatnonzero(ma & quotes)
            if pick.size == 0 or rng.random() < 0.5:
                pick = np.flatnonzero(ma)
            t = int(pick[rng.integers(pick.size)])
            a.advance(t)
            b.advance(t)
            if a.done:
                break


def test_rollback_across_the_switch_returns_to_the_head(spec, real_vocab):
    vocab = real_vocab("gpt2")
    _, staged_c = _pair(spec)
    text = f"delete('{BASE}/users/42', {{ headers: {{ Authorization: 'Bearer <token>' }} }})"
    tokens = list(vocab.lltok.tokenize_str(text))
    m = staged_c.new_session(vocab, record=False)._matcher
    assert m.try_consume_tokens(tokens) == len(tokens) and m.is_accepting() and m.stage == "tail"
    url_end = next(i for i in range(len(tokens)) if b"'" in b"".join(vocab.token_bytes[t] for t in tokens[: i + 1])[8:])
    m.rollback(len(tokens) - url_end)  # back to before the token that closes the URL
    assert m.stage == "head" and not m.is_accepting()
    # now another operation on the same path: PATCH is not DELETE, but the URL is its
    assert m.try_consume_tokens(tokens[url_end:]) == len(tokens) - url_end and m.is_accepting()
    copy = m.deep_copy()
    copy.rollback(len(tokens))
    assert copy.stage == "head" and m.stage == "tail"


def test_checker_agrees_with_the_single_grammar(spec, full_setup_calls):
    """check_continuation (byte by byte) gives the same verdict and offset either way."""
    clear_grammar_cache()
    for text in full_setup_calls(spec, 3):
        one = check_continuation(spec, text, options=GrammarOptions(staged=False))
        two = check_continuation(spec, text, options=GrammarOptions(staged=True))
        assert (one.allowed, one.offset) == (two.allowed, two.offset), text


def test_budget_closes_the_call_under_a_staged_grammar(spec, real_vocab):
    """The budget planner searches through the switch: a walk with max_tokens ends accepted."""
    vocab = real_vocab("gpt2")
    _, staged_c = _pair(spec)
    rng = np.random.default_rng(1)
    for _ in range(3):
        s = staged_c.new_session(vocab, record=False, max_tokens=60)
        for _ in range(60):
            allowed = s.mask()
            choices = np.flatnonzero(allowed)
            s.advance(int(choices[rng.integers(choices.size)]))
            if s.done:
                break
        assert s.is_accepting() or s.done, s.generated_bytes()
        assert not s.unsatisfiable, s.error


def test_healed_staged_constraint_skips_the_prefix(spec, real_vocab):
    from callbench.constrain.healing import healed_constraint

    vocab = real_vocab("gpt2")
    _, staged_c = _pair(spec)
    healed = healed_constraint(staged_c, ".")
    text = f".get('{BASE}/users/me', {{ headers: {{ Authorization: 'Bearer <token>' }} }})"
    s = healed.new_session(vocab, record=False)
    for t in vocab.lltok.tokenize_str(text):
        assert s.mask()[t], s.generated_bytes()
        s.advance(t)
    assert s.is_accepting() and s._matcher.stage == "tail"
    # /users/me takes no query: the tail (GET /users/me, not /users/{id}) refuses params
    bad = f".get('{BASE}/users/me', {{ params: {{ fields: 'x' }}"
    s = healed.new_session(vocab, record=False)
    ok = True
    for t in vocab.lltok.tokenize_str(bad):
        if not s.mask()[t]:
            ok = False
            break
        s.advance(t)
    assert not ok


def test_staged_is_automatic_for_big_specs_and_refuses_vllm(spec, monkeypatch):
    import callbench.constrain.webapi_grammar as wg

    clear_grammar_cache()
    assert not build_webapi_grammar(spec, setup="full").staged
    assert STAGED_MIN_OPERATIONS >= 1000
    monkeypatch.setattr(wg, "STAGED_MIN_OPERATIONS", 3)
    clear_grammar_cache()
    g = build_webapi_grammar(spec, setup="full")
    assert g.staged
    with pytest.raises(CallbenchError, match="staged"):
        webapi_constraint(g, spec, name="x").server_body()
    clear_grammar_cache()


def test_graph_fits_only_staged(wild_specs_dir):
    """Microsoft Graph (11,000 operations): its single grammar is beyond llguidance's limits,
    the staged head compiles and one operation's call is accepted through the switch."""
    from callbench.constrain.check import matcher_for
    from callbench.specs import load_spec

    path = wild_specs_dir / "microsoft.com" / "graph.json"
    if not path.exists():
        pytest.skip(f"{path} is not in the directory")
    spec = load_spec(path)
    g = build_webapi_grammar(spec, setup="full")
    assert g.staged and len(g.lark) < 1_000_000
    ok = check_continuation(
        spec,
        "get('https://graph.microsoft.com/v1.0/me/messages', { params: { $top: 5 } })",
    )
    assert ok.allowed, ok.reason
    bad = check_continuation(
        spec, "get('https://graph.microsoft.com/v1.0/me/messages', { params: { nope: 1 } })"
    )
    assert not bad.allowed
    m = matcher_for(g)
    assert m.stage == "head"
