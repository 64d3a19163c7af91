"""Call forms and value expressions of real code in the default CD profile (issue 29, item 2).

``axios.request({ method, url, ...config })``: the object starts with ``method`` and ``url`` in
either order (no ``method``: a GET), the method a literal naming a method the URL's path allows,
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
    f"request({{ url: '{BASE}/pets/7' }});",  # no method: axios' default GET
    f"request({{ url: '{BASE}/pets/7', params: {{}} }});",
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
    # no method is a GET: a path without GET needs its method
    assert not allowed(f"request({{ url: '{BASE}/messages', data: {{ To: 'a' }} }})")
    assert allowed(f"request({{ url: '{BASE}/messages', method: 'post', data: {{ To: 'a' }} }})")


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
    assert "required argument 'params'" in reason(f"request({{ url: '{BASE}/search' }})")
    assert "required argument 'q'" in reason(f"request({{ url: '{BASE}/search', method: 'get', params: {{}} }})")


def test_request_object_starts_with_method_and_url():
    """Other keys first are refused (documented): the operation, hence which keys are legal, is
    known only from the method and the URL; a config held in a variable cannot be checked."""
    why = reason(f"request({{ params: {{ limit: 1 }}, url: '{BASE}/pets' }})")
    assert "starts with method and url" in why, why
    assert not allowed(f"request({{ method: 'get', params: {{}}, url: '{BASE}/pets' }})")
    why = reason("request(cfg)")
    assert "a config held in a variable cannot be checked" in why, why
    assert not allowed(f"request({{ method: cfg.method, url: '{BASE}/pets' }})")
    assert not allowed("request({ method: 'get', url: cfg.url })")


def test_the_tracker_names_the_operation_of_a_request():
    g = build_webapi_grammar(PETS, setup="full", identifiers=IDENTS)
    for text, label in [
        (f"request({{ method: 'post', url: '{BASE}/pets', ", "POST /pets"),
        (f"request({{ url: '{BASE}/pets', method: 'post', ", "POST /pets"),
        (f"request({{ url: '{BASE}/pets/1', ", "GET /pets/{id}"),
        (f"request({{ url: `{BASE}/pets/${{id}}`, method: 'DELETE', ", "DELETE /pets/{id}"),
    ]:
        tr = make_key_tracker(g, PETS)
        tr.feed(text.encode())
        tr.feed(b"params:")  # a key: a URL without method is a GET from here on
        assert tr.operation_label == label, text
        assert tr.violation is None and not tr.lost
