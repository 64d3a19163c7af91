"""The names visible where a starter ends (`callbench.sandbox.js_scope.visible_names`), and the
grammar check with those names as the identifiers in scope (`constraints.in_scope`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.sandbox.js_extract import MAX_CODE_CHARS, MAX_NESTING
from callbench.sandbox.js_scope import visible_names
from callbench.tracks.webapi.constraints import in_scope


def names(code: str) -> set[str]:
    out = visible_names(code)
    assert list(out) == sorted(set(out)), out  # sorted, once each
    return set(out)


# ------------------------------------------------------------------------------ parameters
def test_parameters_of_every_enclosing_function():
    code = (
        "const a = 1;\n"
        "module.exports = function (apiKey) {\n"
        "  return { balance(address) { return new Promise(function (resolve, reject) { axios."
    )
    assert names(code) == {"a", "apiKey", "address", "resolve", "reject", "this", "process"}


def test_arrow_parameters_and_express_handler_params():
    assert names("module.exports = async (chat_id, text) => {\n  await axios.") == {"chat_id", "text", "process"}
    # the function runs after `f` is set; an initializer that is no function runs before
    assert names("const f = x => axios.") == {"f", "x", "process"}
    assert names("const { data: g } = await (async () => { return axios.") == {"process"}
    assert names("const rs = ids.map((id) => axios.") == {"id", "process"}  # a callback runs first
    assert names("const r = await new Promise((resolve) => { axios.") == {"resolve", "process"}
    assert names("let h = { m: function () { const r = axios.") == {"h", "this", "process"}
    assert names("const K = class { get(id) { return axios.") == {"K", "id", "this", "process"}
    assert names("const outer = () => { ids.map((id) => axios.") == {"outer", "id", "process"}
    express = "const app = express();\napp.get('/s/:id', async (req, res) => {\n  const r = await axios."
    assert names(express) == {"app", "req", "res", "process"}  # r: the cut is inside its declaration
    koa = "router.get('/', async (ctx, next) => { ctx.body = await axios."
    assert names(koa) == {"ctx", "next", "process"}


def test_destructured_and_defaulted_parameters():
    code = "function search({ q, page = 1, opts: { lang } }, [first, ...rest], limit = 10) {\n  axios."
    assert names(code) == {"search", "q", "page", "lang", "first", "rest", "limit", "this", "process"}
    # a parameter list the text cuts off has no body to close: nothing of it is listed
    assert names("function f(a, b = axios.") == {"process"}


# ------------------------------------------------------------------------------ blocks
def test_block_scoping_sibling_blocks_and_declarations_after_the_cut():
    code = (
        "function other(secret) { const hidden = 1; }\n"
        "const before = 1;\n"
        "if (x) { const sibling = 2; let sib2; class C {} }\n"
        "{ const inner = 3;\n"
        "  const b = 1, partial = axios."
    )
    got = names(code)
    assert {"before", "inner", "b", "other"} <= got
    for absent in ("secret", "hidden", "sibling", "sib2", "C", "partial"):
        assert absent not in got, absent
    # what follows the cut in the original file is not visible at the cut
    file = "const early = 1;\nasync function main() { await axios.get(u) }\nconst later = 2;\n"
    cut = file.index("get(u)")
    assert names(file[:cut]) == {"early", "main", "this", "process"}


def test_var_hoists_to_the_function_and_function_declarations_hoist():
    code = (
        "function f() {\n"
        "  if (ok) { var hoisted = 1; let blocked = 2; function annexB() {} }\n"
        "  for (var i = 0; i < 3; i++) {}\n"
        "  for (var k in obj) {}\n"
        "  function helper() { var notMine = 1; }\n"
        "  axios."
    )
    got = names(code)
    assert {"f", "hoisted", "annexB", "i", "k", "helper"} <= got
    assert "blocked" not in got and "notMine" not in got


def test_loop_and_catch_bindings():
    code = (
        "async function run(items) {\n"
        "  for (const item of items) {\n"
        "    for (let j = 0; j < 2; j++) {\n"
        "      try { await x(); } catch (err) {\n"
        "        axios."
    )
    assert names(code) == {"run", "items", "item", "j", "err", "this", "process"}
    # a catch parameter or loop variable the cut is not inside is not visible
    assert names("try {} catch (e) {}\nfor (const v of vs) {}\naxios.") == {"process"}
    assert names("switch (k) { case 1: const c1 = 1; break; case 2: axios.") == {"c1", "process"}


# ------------------------------------------------------------------------------ this
def test_this_in_methods_and_functions_not_at_top_level():
    cls = "class Api {\n  constructor() { this.baseUrl = 'u'; }\n  async get(id) {\n    return axios."
    assert names(cls) == {"Api", "id", "this", "process"}
    field = "class Api { baseUrl = 'u'; load = async (videoId) => { const res = await axios."
    assert names(field) == {"Api", "videoId", "this", "process"}  # arrow in a class field: the instance
    assert "this" in names("const o = { m() { axios.")
    assert "this" in names("class K { static { axios.")
    assert "this" in names("const F = function named(p) { axios.") and "named" in names("const F = function named(p) { axios.")
    # arrow functions inherit `this`: at top level there is none to list
    assert "this" not in names("const h = async () => { axios.")
    assert "this" not in names("axios.")
    assert "this" not in names("class K extends axios.")  # not inside the class body


# ------------------------------------------------------------------------------ top level
def test_imports_requires_and_exports():
    code = (
        "import axios, { foo as bar, baz } from 'axios';\nimport * as ns from 'x';\nimport def from 'y';\n"
        "const { a, b: renamed, ...others } = require('z');\n"
        "export const e1 = 1;\nexport default function dflt() {}\n"
        "axios."
    )
    assert names(code) == {"bar", "baz", "ns", "def", "a", "renamed", "others", "e1", "dflt", "process"}


def test_implicit_globals_of_sloppy_code_only():
    sloppy = "token = 'abc';\nfunction init() { client = 1; }\nfunction f(p) { p = 2; }\naxios."
    assert names(sloppy) == {"token", "client", "init", "f", "process"}
    assert names("'use strict';\ntoken = 'abc';\naxios.") == {"process"}
    assert names("import x from 'x';\ntoken = 'abc';\naxios.") == {"x", "process"}  # a module is strict


def test_axios_is_never_listed_and_process_always_is():
    assert names("const axios = require('axios');\nconst http = axios.create();\naxios.") == {"http", "process"}
    assert names("") == {"process"}


# ------------------------------------------------------------------------------ robustness
def test_deeply_nested_cut():
    depth = 60
    code = "".join(f"function f{i}(p{i}) {{ const c{i} = {i}; if (x) {{ " for i in range(depth)) + "axios."
    got = names(code)
    assert {f"p{i}" for i in range(depth)} <= got and {f"c{i}" for i in range(depth)} <= got
    assert {f"f{i}" for i in range(depth)} <= got


def test_a_template_literal_and_a_do_loop_around_the_cut():
    assert names("const s = `a ${ (() => { let z = 1; return axios.") == {"z", "process"}
    assert names("foo(function () { do { var k = 2; axios.") == {"k", "this", "process"}


def test_unparsable_input_gives_what_can_be_read():
    assert names("}}}}} ((( <<< axios.") == {"process"}
    assert names("\x00\x01 @@@ #!") == {"process"}
    assert names("// a comment ending the text axios.") == {"process"}
    # brackets the parser cannot close: the flattened ERROR is read leniently
    assert {"broken", "zz"} <= names("foo(a b { const broken = 1; function (zz) { axios.")


def test_every_prefix_of_a_file_gives_names_of_that_prefix():
    """Cut anywhere (mid-token, mid-string, mid-comment): no error, and every name listed is
    ``this``, ``process`` or a name written in the text before the cut."""
    import re

    file = (
        "import x from 'x';\nconst BASE = 'https://api.example.com/v1'; // a comment\n"
        "class Api {\n  constructor(key) { this.key = key; }\n"
        "  async search({ q, page = 1 }) {\n    const url = `${BASE}/search?q=${q}`;\n"
        "    try { return (await axios.get(url, { params: { page } })).data; } catch (err) { return null; }\n"
        "  }\n}\nmodule.exports = (app) => app.get('/s', async (req, res) => res.json(await new Api(1).search(req.query)));\n"
    )
    for cut in range(len(file) + 1):
        prefix = file[:cut]
        got = names(prefix)
        written = set(re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*", prefix))
        assert got - {"this", "process"} <= written, (cut, got - written)


def test_over_budget_input_gives_no_names():
    assert visible_names("const a = 1;\n" + "x" * MAX_CODE_CHARS + "\naxios.") == ()
    assert visible_names("const a = 1;\n" + "(" * (MAX_NESTING + 1) + "axios.") == ()
    assert visible_names("const a = 1;\n" + "(" * 10 + "axios.") == ("a", "process")


# ------------------------------------------------------------------------------ in_scope
def test_in_scope_drops_this_and_process_for_the_paper_profile():
    method = "class Api { get(id) { const q = 1;\n  axios."
    assert in_scope(method) == {"Api", "id", "q", "this", "process"}
    assert in_scope(method, real_world=False) == {"Api", "id", "q"}
    # WAPIIBench's starters are top-level code: their names are the top-level declarations
    wapii = "const petId = 7;\n// Fetch\nconst axios = require('axios');\naxios."
    assert in_scope(wapii, real_world=False) == {"petId"}
    assert in_scope("") == set()


# ------------------------------------------------------------------------------ the grammar
def _spec():
    from callbench.specs import build_spec

    ok = {"200": {"description": "ok"}}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "scope", "version": "1"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": {
            "/search": {"get": {"parameters": [
                {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "page", "in": "query", "schema": {"type": "integer"}},
            ], "responses": ok}},
            "/items/{id}": {"get": {"parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
            ], "responses": ok}},
            "/items/search": {"get": {"parameters": [
                {"name": "q", "in": "query", "schema": {"type": "string"}},
            ], "responses": ok}},
        },
    }
    return build_spec(doc, Path("/scope/openapi.yaml"), "scope.yaml")


EXPRESS = (
    "const axios = require('axios');\nconst app = require('express')();\n"
    "function other(secret) { return secret; }\n"
    "app.get('/search', async (req, res) => {\n  if (req.query.all) { const sibling = 1; }\n"
    "  const { data } = await axios."
)
CLASS = (
    "const axios = require('axios');\n"
    "class Items {\n  constructor() { this.baseUrl = 'https://api.example.com/v1'; }\n"
    "  async get(id) {\n    return axios."
)


def _check(starter: str, call: str):
    pytest.importorskip("llguidance")
    from callbench.constrain.check import check_continuation

    return check_continuation(_spec(), call, identifiers=tuple(sorted(in_scope(starter))))


def test_the_grammar_accepts_a_handlers_req_and_a_methods_this():
    r = _check(EXPRESS, "get('https://api.example.com/v1/search', { params: { q: req.query.q, page: req.query.page } });")
    assert r.allowed, r.reason
    r = _check(CLASS, "get(`${this.baseUrl}/items/${id}`);")
    assert r.allowed, r.reason
    r = _check(CLASS, "get(`https://api.example.com/v1/items/${this.itemId}`);")
    assert r.allowed, r.reason
    r = _check(EXPRESS, "get('https://api.example.com/v1/search', { params: { q: process.env.DEFAULT_Q } });")
    assert r.allowed, r.reason
    r = _check(EXPRESS, "get(`https://api.example.com/v1/items/${req.params.id}`);")
    assert r.allowed, r.reason
    r = _check(CLASS, "get(`https://api.example.com/v1/items/${process.env.ITEM_ID}`);")
    assert r.allowed, r.reason
    # before visible_names, the names inside the handler were not in scope
    from callbench.constrain.check import check_continuation
    from callbench.sandbox import prepare_code

    top_level_only = tuple(n for n in prepare_code(EXPRESS)[1] if n != "axios")
    old = check_continuation(_spec(), "get('https://api.example.com/v1/search', { params: { q: req.query.q } });",
                             identifiers=top_level_only)
    assert not old.allowed


def test_the_grammar_still_rejects_names_not_visible_at_the_cut():
    for name in ("secret", "sibling", "data", "later"):  # sibling function, sibling block, mid-declaration, after
        r = _check(EXPRESS, f"get('https://api.example.com/v1/search', {{ params: {{ q: {name} }} }});")
        assert not r.allowed, name
    # `this` is not in scope inside an arrow handler at top level
    r = _check(EXPRESS, "get('https://api.example.com/v1/search', { params: { q: this.q } });")
    assert not r.allowed
    # and a wrong path or an undeclared argument stays illegal whatever the scope
    assert not _check(CLASS, "get(`${this.baseUrl}/nope/${id}`);").allowed
    assert not _check(EXPRESS, "get('https://api.example.com/v1/search', { params: { q: req.query.q, nope: 1 } });").allowed


def test_literal_paths_stay_writable_with_names_in_scope():
    """Every starter now has names in scope (``process`` at least): a literal URL -- a fixed
    segment beside a path hole, a hole's literal value -- must still be accepted with them."""
    for starter in (EXPRESS, CLASS, "axios."):
        for call in ("get('https://api.example.com/v1/items/search');",
                     "get('https://api.example.com/v1/items/abc');",
                     "get('https://api.example.com/v1/search', { params: { q: 'cats' } });"):
            r = _check(starter, call)
            assert r.allowed, (starter[-20:], call, r.reason)
