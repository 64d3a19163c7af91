"""Call forms and value expressions of real code in the default CD profile (issue 29, item 2).

``axios.request({ method, url, ...config })``: the object starts with ``method`` and ``url`` in
either order (both required), the method a literal naming a method the URL's path allows,
then the operation's config keys (``params``, ``headers``, ``auth``, ``data`` as its body). The
key tracker learns the operation from the two literals, whichever comes first, and checks the
rest of the object as the operation's config (unique keys, required keys, credentials). Checked
through ``check_continuation`` (the llguidance matcher and the key tracker byte by byte); the
paper profile (``--cd-profile paper``) refuses every form here, as WAPIIBench's CD does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llguidance")

from callbench.constrain import (  # noqa: E402
    GrammarOptions,
    build_webapi_grammar,
    check_continuation,
    make_key_tracker,
)
from callbench.specs import build_spec  # noqa: E402

OK = {"200": {"description": "ok"}}
DEFAULT = GrammarOptions()
PAPER = GrammarOptions(profile="paper")
IDENTS = ("token", "cfg", "id", "name", "user", "message", "qs")
BASE = "https://api.pets.io/v1"


def _spec(doc: dict, name: str):
    full = {"openapi": "3.0.0", "info": {"title": name, "version": "1"}, **doc}
    return build_spec(full, Path(f"/{name}/openapi.yaml"), f"{name}.yaml")


def _str(**extra):
    return {"type": "string", **extra}


PETS = _spec(
    {
        "servers": [{"url": BASE}],
        "paths": {
            "/pets": {
                "get": {
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                        {"name": "q", "in": "query", "schema": _str()},
                        {"name": "kind", "in": "query", "schema": _str(enum=["cat", "dog"])},
                    ],
                    "responses": OK,
                },
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {"name": _str(), "tag": _str(), "age": {"type": "integer"}},
                                }
                            }
                        },
                    },
                    "responses": OK,
                },
            },
            "/pets/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": _str()}],
                "get": {"responses": OK},
                "delete": {"responses": OK},
            },
            "/search": {
                "get": {
                    "parameters": [{"name": "q", "in": "query", "required": True, "schema": _str()}],
                    "responses": OK,
                }
            },
            "/messages": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {
                                "schema": {
                                    "type": "object",
                                    "required": ["To"],
                                    "properties": {"To": _str(), "Body": _str(), "photo": _str()},
                                }
                            }
                        }
                    },
                    "responses": OK,
                }
            },
        },
    },
    "pets",
)


def check(text: str, options: GrammarOptions = DEFAULT, idents=IDENTS):
    return check_continuation(PETS, text, identifiers=idents, options=options)


def allowed(text: str, **kw) -> bool:
    return check(text, **kw).allowed


def reason(text: str, **kw) -> str:
    r = check(text, **kw)
    assert not r.allowed, text
    return r.reason or ""


# ------------------------------------------------------------------------------ axios.request({...})
REQUESTS = [
    f"request({{ method: 'get', url: '{BASE}/pets', params: {{ limit: 3, kind: 'cat' }} }});",
    f"request({{ url: '{BASE}/pets', method: 'POST', data: {{ name: 'rex', age: 3 }} }})",
    f"request({{ url: '{BASE}/pets/7', method: 'get' }});",
    f"request({{ url: '{BASE}/pets/7', method: 'get', params: {{}} }});",
    f"request({{ method: \"delete\", url: `{BASE}/pets/${{id}}` }});",
    f"request({{ 'method': 'post', \"url\": '{BASE}/pets', data: {{ name }}, }},)",
    f"request({{\n  method: 'post',\n  url: '{BASE}/pets',\n  data: {{ name: 'rex' }},\n  headers: {{ Accept: 'application/json' }}\n}}).then(r => r.data);",
    f"request({{ method: 'get', url: '{BASE}/search', params: {{ q: 'x' }} }})",
    f"request({{ url: '{BASE}/search', method: 'Get', params: {{ q: name }} }})",
]


@pytest.mark.parametrize("text", REQUESTS)
def test_request_config_object_forms_are_accepted(text):
    r = check(text)
    assert r.allowed, (text, r.reason, r.offset)


@pytest.mark.parametrize("text", REQUESTS)
def test_request_form_is_refused_by_the_paper_profile(text):
    r = check(text, options=PAPER)
    assert not r.allowed and r.offset == 0
    assert "--cd-profile paper" in (r.reason or "")


def test_request_method_must_be_one_the_path_allows():
    # method first: only that method's URLs follow
    why = reason(f"request({{ method: 'delete', url: '{BASE}/pets' }})")
    assert "matches no path with method delete (/pets allows get, post)" in why, why
    why = reason(f"request({{ method: 'put', url: '{BASE}/pets' }})")
    assert "method 'put' of axios.request is not one the spec defines (delete, get, post)" in why, why
    # URL first: only the methods of the operations the URL can name
    why = reason(f"request({{ url: '{BASE}/pets', method: 'delete' }})")
    assert "method 'delete' is not allowed" in why and "get, post" in why
    assert not allowed(f"request({{ url: '{BASE}/pets/1', method: 'post' }})")
    assert not allowed(f"request({{ method: 'trace', url: '{BASE}/pets' }})")
    # ASCII case only: (?i) folds 'ſ' (long s) to 's', and axios knows no method 'poſt'
    assert not allowed(f"request({{ method: 'poſt', url: '{BASE}/pets', data: {{ name: 'x' }} }})")
    assert allowed(f"request({{ method: 'PoSt', url: '{BASE}/pets', data: {{ name: 'x' }} }})")
    # the method is required (axios' GET default is not offered: documented)
    assert not allowed(f"request({{ url: '{BASE}/pets/7' }})")
    assert not allowed(f"request({{ url: '{BASE}/pets/7', params: {{}} }})")
    assert not allowed(f"request({{ url: '{BASE}/messages', data: {{ To: 'a' }} }})")
    assert allowed(f"request({{ url: '{BASE}/messages', method: 'post', data: {{ To: 'a' }} }})")


def _at(text: str) -> int | None:
    r = check(text)
    assert not r.allowed, text
    return r.offset


def test_request_url_query_keys_are_judged_as_written():
    """A query key in the request form's URL is refused at its first byte no key of the
    operation starts with (never first at the closing quote: constrained decoding could not close
    the string then). URL first, the key must start one some method of the path takes, and the
    method literal one whose operation takes the keys."""
    # method first: the operation is known
    assert allowed(f"request({{ method: 'get', url: '{BASE}/pets?limit=3&kind=cat' }})")
    bad = f"request({{ method: 'post', url: '{BASE}/pets?limit=2', data: {{ name: 'x' }} }})"
    assert _at(bad) == bad.index("limit")
    assert "query parameter 'l...' in the URL is no argument of POST /pets" in reason(bad)
    # URL first: /pets's GET takes limit; POST takes no query, so its method is refused at 'p'
    assert allowed(f"request({{ url: '{BASE}/pets?limit=3', method: 'get' }})")
    assert allowed(f"request({{ url: '{BASE}/pets?limit=3', method: 'GET' }})")
    post = f"request({{ url: '{BASE}/pets?limit=3', method: 'post', data: {{ name: 'x' }} }})"
    assert _at(post) == post.index("post")
    bad = f"request({{ url: '{BASE}/search?limit=2', method: 'get' }})"  # no method of /search takes it
    assert _at(bad) == bad.index("limit")


def test_request_refuses_what_the_spec_forbids():
    head = f"request({{ method: 'get', url: '{BASE}/pets'"
    # an undeclared config key, an undeclared params key, a wrong value type
    assert "config key 'foo' is not allowed" in reason(f"{head}, foo: 1 }})")
    assert "argument 'nope' is not allowed in params of GET /pets" in reason(f"{head}, params: {{ nope: 1 }} }})")
    assert not allowed(f"{head}, params: {{ kind: 'bird' }} }})")
    # a GET of a path without a body takes no data
    assert not allowed(f"{head}, data: {{ name: 'x' }} }})")
    # a URL the spec does not have
    assert "matches no path" in reason(f"request({{ method: 'get', url: '{BASE}/owners' }})")
    assert not allowed("request({ url: 'https://evil.example.com/v1/pets' })")


def test_request_keys_are_unique_and_required_ones_given():
    # the key tracker follows the object as the operation's config
    assert "given twice" in reason(f"request({{ method: 'get', url: '{BASE}/pets', params: {{}}, params: {{}} }})")
    assert not allowed(f"request({{ method: 'get', url: '{BASE}/pets', method: 'get' }})")
    assert not allowed(f"request({{ url: '{BASE}/pets', url: '{BASE}/pets' }})")
    # POST /pets needs its body (name required), GET /search its q
    why = reason(f"request({{ method: 'post', url: '{BASE}/pets' }})")
    assert "required argument 'data' missing" in why, why
    why = reason(f"request({{ method: 'post', url: '{BASE}/pets', data: {{ tag: 'a' }} }})")
    assert "required argument 'name' missing" in why, why
    assert "required argument 'params'" in reason(f"request({{ url: '{BASE}/search', method: 'get' }})")
    assert "required argument 'q'" in reason(f"request({{ url: '{BASE}/search', method: 'get', params: {{}} }})")


def test_request_object_starts_with_method_and_url():
    """Other keys first are refused (documented): the operation, hence which keys are legal, is
    known only from the method and the URL; a config held in a variable is taken only where the
    starter states it whole (request_configs, below)."""
    why = reason(f"request({{ params: {{ limit: 1 }}, url: '{BASE}/pets' }})")
    assert "starts with method and url" in why, why
    assert not allowed(f"request({{ method: 'get', params: {{}}, url: '{BASE}/pets' }})")
    why = reason("request(cfg)")
    assert "a config held in a variable is taken only where the starter binds it" in why, why
    assert not allowed(f"request({{ method: cfg.method, url: '{BASE}/pets' }})")
    assert not allowed("request({ method: 'get', url: cfg.url })")


@pytest.mark.parametrize("options", [DEFAULT, GrammarOptions(staged=True)])
def test_request_url_built_with_plus_is_refused(options):
    """A URL the grammar may write as pieces joined by ``+`` names its operation only once
    complete; in the request form the first piece's closing quote is where the operation is
    taken (the staged grammar switches there), so the tracker refuses the ``+`` (a template
    literal says the same)."""
    for text in [
        f"request({{ method: 'get', url: '{BASE}/pets/' + id }})",
        f"request({{ url: '{BASE}/pets/' + id, method: 'get' }})",
    ]:
        r = check(text, options=options)
        assert not r.allowed and r.offset is not None and text[r.offset] == "+", (text, r.reason, r.offset)
    assert allowed(f"request({{ method: 'get', url: `{BASE}/pets/${{id}}` }})", options=options)


def test_the_tracker_names_the_operation_of_a_request():
    g = build_webapi_grammar(PETS, setup="full", identifiers=IDENTS)
    for text, label in [
        (f"request({{ method: 'post', url: '{BASE}/pets', ", "POST /pets"),
        (f"request({{ url: '{BASE}/pets', method: 'post', ", "POST /pets"),
        (f"request({{ url: '{BASE}/pets/1', method: `get`, ", "GET /pets/{id}"),
        (f"request({{ url: `{BASE}/pets/${{id}}`, method: 'DELETE', ", "DELETE /pets/{id}"),
    ]:
        tr = make_key_tracker(g, PETS)
        tr.feed(text.encode())
        tr.feed(b"params:")
        assert tr.operation_label == label, text
        assert tr.violation is None and not tr.lost


# ------------------------------------------------------------------------------ value expressions
PETS_URL = f"get('{BASE}/pets', "
MSG_URL = f"post('{BASE}/messages', "

VALUES = [
    # a string written as a concatenation of literals, numbers and names in scope
    f"{PETS_URL}{{ params: {{ q: '#' + name }} }});",
    f"{PETS_URL}{{ params: {{ q: 'from:' + user.name + ' -is:retweet' }} }});",
    f"{PETS_URL}{{ params: {{ q: `x${{name}}` + 1 + \"y\" }} }});",
    f"{PETS_URL}{{ params: {{ q: name +\n    'z' }} }});",
    # an array index in a member chain
    f"{PETS_URL}{{ params: {{ q: message.photo[0].file_id }} }});",
    f"{PETS_URL}{{ params: {{ q: `${{message.photo[12].id}}` }} }});",
    # a form-encoded body as real code writes it
    f"{MSG_URL}new URLSearchParams({{ To: 'a', Body: name }}));",
    f"{MSG_URL}new URLSearchParams({{ To: 'a' }}).toString(), {{ headers: {{}} }});",
    f"{MSG_URL}qs.stringify({{ To: message.to, photo: message.photo[0].id }}));",
    f"request({{ method: 'post', url: '{BASE}/messages', data: new URLSearchParams({{ To: name }}).toString() }});",
]


@pytest.mark.parametrize("text", VALUES)
def test_value_expressions_are_accepted(text):
    r = check(text)
    assert r.allowed, (text, r.reason, r.offset)


@pytest.mark.parametrize("text", VALUES)
def test_value_expressions_are_refused_by_the_paper_profile(text):
    assert not allowed(text, options=PAPER)


def test_value_expressions_still_refuse_what_the_spec_forbids():
    # a concatenation only of names in scope, only where the schema takes a string (not an enum)
    assert not allowed(f"{PETS_URL}{{ params: {{ q: 'a' + nope }} }});")
    assert not allowed(f"{PETS_URL}{{ params: {{ limit: 1 + name }} }});")
    assert not allowed(f"{PETS_URL}{{ params: {{ kind: 'c' + 'at' }} }});")
    assert not allowed(f"{PETS_URL}{{ params: {{ q: 'a' + }} }});")
    # an index: a number in brackets after a name in scope
    assert not allowed(f"{PETS_URL}{{ params: {{ q: nope[0] }} }});")
    assert not allowed(f"{PETS_URL}{{ params: {{ q: message['photo'] }} }});")
    assert not allowed(f"{PETS_URL}{{ params: {{ q: message[name] }} }});")
    # form bodies: the object is the body (declared keys, required ones, once each)
    assert "argument 'Nope' is not allowed" in reason(f"{MSG_URL}new URLSearchParams({{ Nope: 1 }}));")
    assert "required argument 'To' missing" in reason(f"{MSG_URL}new URLSearchParams({{ Body: 'x' }}));")
    assert "given twice" in reason(f"{MSG_URL}new URLSearchParams({{ To: 'a', To: 'b' }}));")
    # only where the operation takes a form body, and qs only when it is in scope
    assert not allowed(f"post('{BASE}/pets', new URLSearchParams({{ name: 'x' }}));")
    assert not allowed(f"{MSG_URL}qs.stringify({{ To: 'a' }}));", idents=("name",))
    assert not allowed(f"{MSG_URL}JSON.stringify({{ To: 'a' }}));")
    assert not allowed(f"{MSG_URL}new URLSearchParams({{ To: 'a' }}).foo());")


@pytest.mark.parametrize(
    "text",
    [
        f"{PETS_URL}{{ params: {{ q: 'a' + name, q: 'b' }} }});",
        f"{PETS_URL}{{ params: {{ q: message.photo[0].id, q: 'b' }} }});",
        f"{MSG_URL}new URLSearchParams({{ To: 'a' }}), {{ params: {{}}, params: {{}} }});",
        f"{MSG_URL}new URLSearchParams({{ To: 'a' }}).toString(), {{ headers: {{}}, headers: {{}} }});",
        f"request({{ method: 'post', url: '{BASE}/messages', data: qs.stringify({{ To: 'a' }}), data: {{}} }});",
    ],
)
def test_the_tracker_follows_value_expressions(text):
    """After each expression the key tracker is still in step: a key given twice is caught."""
    why = reason(text)
    assert "given twice" in why, why


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen"])
def test_request_and_value_expressions_pass_real_vocabulary_masks(vocab_name, real_vocab):
    """Token by token through the engine's mask (grammar and key tracker), as decoding sees them."""
    from callbench.constrain import GrammarConstraint

    vocab = real_vocab(vocab_name)
    g = build_webapi_grammar(PETS, setup="full", identifiers=IDENTS)
    for text in [REQUESTS[1], REQUESTS[6], VALUES[1], VALUES[4], VALUES[7], VALUES[9]]:
        s = GrammarConstraint(g.lark, lambda: make_key_tracker(g, PETS)).new_session(vocab, record=False)
        for t in vocab.lltok.tokenize_str(text):
            assert s.mask()[t], (vocab_name, text, s.generated_bytes(), vocab.token_bytes[t])
            s.advance(t)
        assert s.generated_bytes() == text.encode() and s.is_accepting(), (vocab_name, text)


# ------------------------------------------------------------------------------ staged grammars, size
STAGED = GrammarOptions(staged=True)


@pytest.mark.parametrize("text", [*REQUESTS, *VALUES[6:]])
def test_a_staged_grammar_takes_the_request_form_as_the_single_grammar_does(text):
    """The staged head offers the request form (method first: the method's URLs; URL first:
    each path followed by the methods it allows), and the operation's own grammar takes over at
    the closing quote of the second of the two."""
    plain, staged = check(text), check(text, options=STAGED)
    assert plain.allowed and staged.allowed, (text, plain.reason, staged.reason)


@pytest.mark.parametrize(
    "text",
    [
        f"request({{ method: 'delete', url: '{BASE}/pets' }})",
        f"request({{ url: '{BASE}/pets', method: 'delete' }})",
        f"request({{ url: '{BASE}/pets' }})",
        f"request({{ method: 'post', url: '{BASE}/pets', data: {{ tag: 'a' }} }})",
        f"request({{ method: 'get', url: '{BASE}/pets', params: {{}}, params: {{}} }})",
    ],
)
def test_a_staged_grammar_refuses_what_the_single_grammar_refuses(text):
    plain, staged = check(text), check(text, options=STAGED)
    assert not plain.allowed and not staged.allowed, text
    assert plain.offset == staged.offset, (text, plain.reason, staged.reason)


def test_the_request_form_is_left_out_above_the_operation_bound(monkeypatch):
    """Above REQUEST_FORM_MAX_OPERATIONS (Microsoft Graph's staged head would not fit llguidance's
    16-bit symbols with it) neither the plain nor the staged grammar offers it."""
    from callbench.constrain import webapi_grammar as wg

    text = f"request({{ method: 'get', url: '{BASE}/pets' }})"
    assert allowed(text)
    monkeypatch.setattr(wg, "REQUEST_FORM_MAX_OPERATIONS", len(PETS.operations) - 1)
    wg.clear_grammar_cache()
    try:
        assert not allowed(text) and not allowed(text, options=STAGED)
        assert allowed(f"get('{BASE}/pets')") and allowed(f"get('{BASE}/pets')", options=STAGED)
    finally:
        monkeypatch.undo()
        wg.clear_grammar_cache()


def test_tracker_shortcuts_and_sensitivity_hold_on_the_new_forms():
    """At every token of the request form and the value expressions: ``allows`` (memos, shortcuts)
    equals the plain scan, and a token outside ``sensitive`` (which the engine never asks
    about) is one the plain scan allows: the `+` after a request URL, `new`, `[0]`, `(` ... are
    all covered."""
    import random

    from callbench.constrain.engine import is_sensitive, vocab_for_lltokenizer
    from callbench.testing.gpt2 import gpt2_lltokenizer

    vocab = vocab_for_lltokenizer(gpt2_lltokenizer())
    struct = set(b"'\"`,{}()[]:;+.")
    probe = [i for i, d in enumerate(vocab.token_bytes) if d and struct & set(d)]
    rng = random.Random(29)
    g = build_webapi_grammar(PETS, setup="full", identifiers=IDENTS)
    texts = [
        *REQUESTS,
        *VALUES,
        f"request({{ method: 'get', url: '{BASE}/pets/' + id }})",
        f"request({{ url: `{BASE}/pets/${{id}}`, method: 'get', params: {{ q: 'a' + name }} }})",
        f"request({{ method: 'post', url: '{BASE}/messages', headers: {{ 'Content-Type': 'a/b' }}, data: new URLSearchParams({{ To: 'a' }}) }})",
        f"{MSG_URL}qs.stringify({{ To: 'a' }}), {{ headers: {{ 'Content-Type': 'text/plain' }} }});",
    ]
    checked = vetoed = 0
    for text in texts:
        tr = make_key_tracker(g, PETS)
        for tok in vocab.lltok.tokenize_str(text):
            if not tr.active():
                break
            sens = tr.sensitive
            for i in rng.sample(probe, 300):
                data = vocab.token_bytes[i]
                plain = tr._scan(data)
                assert tr.allows(data) == plain, (text, tr.context(), data)
                if not is_sensitive(sens, data):
                    assert plain, ("outside sensitive but vetoed", text, tr.context(), data)
                checked += 1
                vetoed += not plain
            tr.feed(vocab.token_bytes[tok])
    assert checked > 10_000 and vetoed > 0


def test_a_form_body_goes_with_a_form_content_type_only():
    """``new URLSearchParams(...)`` under any other Content-Type sends text the operation cannot
    read (the scorer's illegal body; found by the random decodings of
    tests/constrain/test_no_underconstraint.py): beside a form body the key tracker takes only a
    form Content-Type (or none, or a name in scope, whose value cannot be seen), in either order
    in the request form. Other bodies keep any Content-Type string (WAPIIBench's golds write
    application/json on Slack's form-only operations)."""
    form_ct = "'Content-Type': 'application/x-www-form-urlencoded'"
    assert allowed(f"{MSG_URL}new URLSearchParams({{ To: 'a' }}), {{ headers: {{ {form_ct} }} }});")
    assert allowed(f"{MSG_URL}qs.stringify({{ To: 'a' }}), {{ headers: {{ 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }} }});")
    assert allowed(f"{MSG_URL}new URLSearchParams({{ To: 'a' }}), {{ headers: {{ 'Content-Type': name }} }});")
    # "${" in a '...'/"..." literal is two characters, not a template's hole (a random decoding of
    # Slack's reminders.add wrote " Family ... ${': cro" and passed as unseen)
    # a literal \x00/\x01 byte is text too (the tracker marks holes with them; a random decoding of
    # Slack's calls.end wrote one into its Content-Type and passed as unseen)
    for ct in ("'text/plain'", "'application/json'", "`x/${name}`", '" x ${y"', "'a${b}'", "'a\x01b'", "'\x00'"):
        bad = f"{MSG_URL}new URLSearchParams({{ To: 'a' }}), {{ headers: {{ 'Content-Type': {ct} }} }});"
        if ct.startswith("`"):
            assert allowed(bad), ct  # a template's value cannot be seen
            continue
        assert "needs a form Content-Type" in reason(bad), ct
    head = f"request({{ method: 'post', url: '{BASE}/messages', "
    assert "needs a form Content-Type" in reason(f"{head}headers: {{ 'CONTENT-TYPE': 'text/plain' }}, data: new URLSearchParams({{ To: 'a' }}) }})")
    assert "needs a form Content-Type" in reason(f"{head}data: qs.stringify({{ To: 'a' }}), headers: {{ 'Content-Type': 'a/b' }} }})")
    assert allowed(f"{head}headers: {{ {form_ct} }}, data: new URLSearchParams({{ To: 'a' }}).toString() }})")
    # an object body keeps any Content-Type string, as before
    assert allowed(f"{MSG_URL}{{ To: 'a' }}, {{ headers: {{ 'Content-Type': 'application/json' }} }});")
    assert allowed(f"post('{BASE}/pets', {{ name: 'x' }}, {{ headers: {{ 'Content-Type': 'text/x-anything' }} }});")


def test_accepted_forms_run_and_score_legal():
    """Every accepted call of this file runs in the JS sandbox and the strict scorer finds no
    illegal argument, URL or method (the grammar admits only legal calls)."""
    from callbench.sandbox import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    prelude = (
        "const axios = require('axios');\nconst qs = require('querystring');\n"
        "const token = 't', cfg = { method: 'get', url: 'u' }, id = '7', name = 'rex';\n"
        "const user = { name: 'u' }, message = { to: 'b', photo: Array.from({ length: 13 }, () => ({ id: 'p', file_id: 'f' })) };\naxios."
    )
    with JsSandbox() as sb:
        for text in [*REQUESTS, *VALUES]:
            assert allowed(text), text
            res = sb.run(prelude + text)
            assert res.status == "ok", (text, res.error)
            v = compare_requests({"method": res.request["method"], "url": res.request["url"]}, res.request, PETS, "strict")
            bad = [a for a in v.arguments if a.verdict == "illegal"]
            assert v.url != "illegal" and v.method != "illegal" and not bad, (text, res.request, v.as_dict())


# ------------------------------------------------------------------------------ request(config)
CONFIG_STARTER = (
    "const axios = require('axios');\n"
    "let config = {\n  method: 'post',\n  maxBodyLength: Infinity,\n"
    f"  url: '{BASE}/pets',\n  headers: {{ 'Content-Type': 'application/json' }},\n"
    "  data: { name: 'rex', age: 3 },\n};\n// {task}\naxios."
)


def _configs(starter: str):
    from callbench.tracks.webapi.constraints import in_scope, request_configs_in_scope

    return request_configs_in_scope(starter, PETS), tuple(sorted(in_scope(starter)))


def _check_config_call(starter: str, text: str, options: GrammarOptions = DEFAULT):
    configs, idents = _configs(starter)
    return check_continuation(PETS, text, identifiers=idents, options=options, request_configs=configs)


def test_request_of_a_config_the_starter_states_is_a_call():
    """``axios.request(config)`` where the starter binds ``config`` to a whole literal config
    the spec allows (Pizzawookiee/CS411-Team4's Spotify call): the request is the one the code
    states, checked when the name is offered; a transport option may be any expression."""
    assert _configs(CONFIG_STARTER)[0] == ("config",)
    for text in ["request(config)", "request( config ).then((r) => console.log(r.data));", "request(config);"]:
        res = _check_config_call(CONFIG_STARTER, text)
        assert res.allowed, (text, res.reason)
    # another name in scope, or a different call on the name, is no such call
    starter = CONFIG_STARTER.replace("// {task}", "const other = 1;\n// {task}")
    assert not _check_config_call(starter, "request(other)").allowed
    assert not _check_config_call(CONFIG_STARTER, "post(config)").allowed
    assert not _check_config_call(CONFIG_STARTER, "request(config, config)").allowed
    # the paper profile has no request form at all
    assert not _check_config_call(CONFIG_STARTER, "request(config)", PAPER).allowed


@pytest.mark.parametrize(
    "change",
    [
        (f"url: '{BASE}/pets'", f"url: '{BASE}/cats'"),  # a path the spec lacks
        ("method: 'post'", "method: 'put'"),  # a method the path lacks
        ("data: { name: 'rex', age: 3 }", "data: { age: 3 }"),  # the body's required name left out
        ("data: { name: 'rex', age: 3 }", "data: { name: 'rex', colour: 'red' }"),  # an undeclared property
        ("data: { name: 'rex', age: 3 }", "data: { name: petName }"),  # a value the code does not state
        ("data: { name: 'rex', age: 3 }", "data: { name: `${x}` }"),  # a template with a hole
        ("maxBodyLength: Infinity,", "...defaults,"),  # a spread: the config is not all stated
        # options that rewrite what is sent: a body the spec refuses would go out
        ("maxBodyLength: Infinity,", "transformRequest: [() => JSON.stringify({ colour: 'red' })],"),
        ("maxBodyLength: Infinity,", "paramsSerializer: () => 'nope=1',"),
        ("maxBodyLength: Infinity,", "adapter: custom,"),
        ("// {task}", "config.method = 'delete';\n// {task}"),  # changed after its declaration
        ("// {task}", "function f(config) {}\n// {task}"),  # the name bound again
    ],
)
def test_request_of_a_config_is_refused_unless_the_spec_allows_all_it_states(change):
    starter = CONFIG_STARTER.replace(*change)
    assert starter != CONFIG_STARTER
    assert _configs(starter)[0] == ()
    res = _check_config_call(starter, "request(config)")
    assert not res.allowed
    assert "literal config the spec allows" in (res.reason or "")


def test_a_request_config_is_held_to_the_grammars_own_rules():
    """A config is offered only where the grammar takes the same object written out: an
    operation whose security is required needs its credential in the config as in a literal
    call (the data check alone does not require credentials)."""
    from callbench.tracks.webapi.constraints import in_scope, request_configs_in_scope

    secured = _spec(
        {
            "servers": [{"url": BASE}],
            "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}},
            "security": [{"key": []}],
            "paths": {"/pets": {"get": {"responses": OK}}},
        },
        "secured",
    )
    bare = f"const axios = require('axios');\nconst config = {{ method: 'get', url: '{BASE}/pets' }};\naxios."
    keyed = bare.replace("url:", "params: { api_key: 'k' }, url:")
    assert request_configs_in_scope(bare, secured) == ()
    assert request_configs_in_scope(keyed, secured) == ("config",)
    off = GrammarOptions(require_credentials=False)
    assert request_configs_in_scope(bare, secured, off) == ("config",)
    res = check_continuation(secured, "request(config)", identifiers=tuple(in_scope(keyed)), request_configs=("config",))
    assert res.allowed, res.reason


def test_request_configs_read_literal_values_only():
    from callbench.sandbox.js_values import request_configs

    code = (
        "const a = { url: 'https://x.io/p', method: 'GET', params: { n: 0x10, f: 1.5, ok: true, no: null, l: [1, 'b'] }, timeout: t };\n"
        "const b = { url: 'u', 'headers': { \"X-Key\": 'k' } };\n"
        "const c = { method: 'get' };\n"  # no url: no whole config
        "const d = { url: 'u', [k]: 1 };\n"  # a computed key
        "const e = { url: 'u', url: 'v' };\n"  # a key given twice
        "const f = { url: 'u', method };\n"  # a shorthand name
        "const g = { url: 'u', auth: { username: 'a', password: 'b' } };\n"  # sends a header the dict would not show
        "const h = { url: '/p', baseURL: 'https://x.io' };\n"
    )
    assert request_configs(code) == {
        "a": {"url": "https://x.io/p", "method": "GET", "params": {"n": 16, "f": 1.5, "ok": True, "no": None, "l": [1, "b"]}},
        "b": {"url": "u", "headers": {"X-Key": "k"}},
    }


def test_a_request_config_call_runs_and_scores_legal():
    """The accepted ``request(config)`` sends the stated request, which the strict scorer finds
    legal (no illegal URL, method or argument)."""
    from callbench.sandbox import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    assert _check_config_call(CONFIG_STARTER, "request(config);").allowed
    with JsSandbox() as sb:
        res = sb.run(CONFIG_STARTER + "request(config);")
    assert res.status == "ok", res.error
    assert res.request["method"].lower() == "post" and res.request["url"] == f"{BASE}/pets"
    v = compare_requests({"method": "post", "url": f"{BASE}/pets"}, res.request, PETS, "strict")
    assert v.url != "illegal" and v.method != "illegal"
    assert not [a for a in v.arguments if a.verdict == "illegal"], v.as_dict()


def test_the_factory_offers_the_starters_request_configs(monkeypatch):
    """ConstraintFactory (setup full, real-world profile) builds the grammar with the configs
    the starter states; the paper profile and setup args get none."""
    import callbench.constrain.webapi_grammar as webapi_grammar
    from callbench.tracks.webapi.constraints import ConstraintFactory
    from callbench.tracks.webapi.dataset import WebApiTask

    built = []
    real_build = webapi_grammar.build_webapi_grammar

    def build(*args, **kw):
        built.append(g := real_build(*args, **kw))
        return g

    monkeypatch.setattr(webapi_grammar, "build_webapi_grammar", build)
    task = WebApiTask(index=0, api="pets", task="Add a pet.", config={"method": "post", "url": f"{BASE}/pets"})
    for options, setup, want in [(DEFAULT, "full", ("config",)), (PAPER, "full", ()), (DEFAULT, "args", ())]:
        built.clear()
        ConstraintFactory(setup, options).for_task(task, PETS, CONFIG_STARTER)
        assert [g.request_configs for g in built] == [want], (options.profile, setup)


# ------------------------------------------------------------------------------ blanks before the closing quote
def test_spaces_before_a_urls_closing_quote_are_taken_as_the_url_parser_drops_them():
    """``'.../json? '`` (hoangdathp99/React_weather_app's OpenCage calls): Node's URL parser
    drops the trailing spaces before axios appends ``params``, so the request is the URL's
    without them; the grammar takes them before the closing quote (real-world profile only),
    the key tracker reads the URL without them. Spaces anywhere else stay refused."""
    for text in [
        f"get('{BASE}/pets? ', {{ params: {{ limit: 2 }} }})",
        f"get('{BASE}/pets  ')",
        f'get("{BASE}/pets?limit=2 ")',
        f"get(`{BASE}/pets/${{id}} `)",
        f"request({{ method: 'get', url: '{BASE}/pets? ' }})",
    ]:
        res = check(text)
        assert res.allowed, (text, res.reason)
        assert not check(text, options=PAPER).allowed, text
    for text in [
        f"get('{BASE}/pets? nope')",  # a key that starts with a space
        f"get('{BASE}/pets?  limit=2')",
        f"get('{BASE}/pe ts')",
        f"get('{BASE}/pets?nope=1 ')",  # an undeclared key, spaces or not
        f"post('{BASE}/pets ')",  # the body the operation requires is still required
    ]:
        assert not allowed(text), text


def test_a_url_with_trailing_spaces_runs_and_scores_legal():
    from callbench.sandbox import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    text = f"get('{BASE}/pets? ', {{ params: {{ limit: 2 }} }});"
    assert allowed(text)
    with JsSandbox() as sb:
        res = sb.run("const axios = require('axios');\naxios." + text)
    assert res.status == "ok", res.error
    assert res.request["url"] == f"{BASE}/pets" and res.request["params"] == {"limit": 2}
    v = compare_requests({"method": "get", "url": f"{BASE}/pets"}, res.request, PETS, "strict")
    assert v.url != "illegal" and not [a for a in v.arguments if a.verdict == "illegal"], v.as_dict()
