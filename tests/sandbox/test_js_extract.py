"""Extraction of the first axios call from model output (tree-sitter based)."""

from __future__ import annotations

import pytest

from callbench.sandbox.js_extract import Extraction, extract_invocation, prepare_code, strip_fences
from callbench.sandbox.js_extract import _parses_cleanly as parses_cleanly


def ok(text: str) -> Extraction:
    ex = extract_invocation(text)
    assert ex.status == "ok", ex
    assert ex.call_start is not None and ex.call_end is not None
    assert text[ex.call_start : ex.call_end] == ex.call_text
    assert parses_cleanly(ex.code), ex.code
    return ex


# ----------------------------------------------------------------------------- basics


def test_plain_call_keeps_preceding_statements():
    text = "const axios = require('axios');\nconst id = 7;\naxios.get(`/u/${id}`);\n"
    ex = ok(text)
    assert ex.call_text == "axios.get(`/u/${id}`)"
    assert "const id = 7;" in ex.code
    assert ex.declared == ("axios", "id")


def test_trailing_second_call_and_junk_are_dropped():
    text = "axios.get('https://a');\naxios.post('https://b', {x: 1});\nsome trailing words )))"
    ex = ok(text)
    assert ex.call_text == "axios.get('https://a')"
    assert "axios.post" not in ex.code
    assert "trailing" not in ex.code


@pytest.mark.parametrize(
    "text",
    [
        "```js\naxios.get('https://a');\n```",
        "```javascript\naxios.get('https://a');\n```\n",
        "~~~js\naxios.get('https://a');\n~~~",
        "Here is the request:\n\n```javascript\naxios.get('https://a');\n```\n\nIt uses axios.post(x) under the hood.",
    ],
)
def test_fences_are_stripped(text):
    ex = ok(text)
    assert ex.call_text == "axios.get('https://a')"
    assert "```" not in ex.code and "~~~" not in ex.code


def test_closing_fence_only_continuation():
    # completion mode: the prompt opened the fence, the model closes it and explains
    text = "axios.get('https://a', { params: { q: 1 } });\n```\n\nThis calls axios.post(url) later."
    ex = ok(text)
    assert ex.call_text == "axios.get('https://a', { params: { q: 1 } })"
    assert ex.call_start == 0


def test_code_block_preferred_over_prose_mention():
    text = "Call axios.get(url) like this:\n```js\naxios.get('https://real');\n```"
    assert ok(text).call_text == "axios.get('https://real')"


def test_prose_around_unfenced_code():
    text = "Here is the code:\nconst axios = require('axios');\naxios.get('https://a');\nThis sends a GET request."
    ex = ok(text)
    assert ex.code.splitlines()[0] == "const axios = require('axios');"
    assert "Here" not in ex.code and "sends" not in ex.code


def test_sure_here_is_prose_line():
    text = "Sure! Here is how:\nconst axios = require('axios')\naxios({ method: 'post', url: 'https://a', data: { a: 1 } })"
    ex = ok(text)
    assert "Sure" not in ex.code
    assert ex.call_text.startswith("axios({")


def test_strip_fences_helper():
    assert strip_fences("```js\nx();\n```\ntext").strip() == "x();"
    assert strip_fences("plain();") == "plain();"


# ----------------------------------------------------------------------------- chains and wrappers


def test_then_chain_kept_in_statement():
    text = "axios.get('https://a')\n  .then(r => console.log(r.data))\n  .catch(e => console.error(e));\naxios.get('https://b');"
    ex = ok(text)
    assert ".catch(e => console.error(e))" in ex.code
    assert "https://b" not in ex.code


def test_top_level_await_kept():
    ex = ok("const res = await axios.post('https://a', { x: 1 });\nconsole.log(res.data);\n")
    assert ex.code.startswith("const res = await axios.post")
    assert "console.log" not in ex.code


def test_async_main_kept_through_invocation():
    text = (
        "const axios = require('axios');\n"
        "async function main() {\n  const r = await axios.get('https://a');\n  console.log(r.data);\n}\n"
        "const KEY = 'k';\n"
        "main();\n"
        "main();\n"
        "Explanation: ..."
    )
    ex = ok(text)
    assert ex.code.count("main();") == 1
    assert "const KEY = 'k';" in ex.code
    assert "Explanation" not in ex.code


def test_invocation_with_catch_and_require_main_guard():
    text = (
        "async function run() { await axios.get('https://a'); }\n"
        "if (require.main === module) {\n  run().catch(console.error);\n}\n"
    )
    ex = ok(text)
    assert "require.main === module" in ex.code


def test_uncalled_function_gets_invocation_appended():
    text = (
        "async function getUser(id) {\n  return axios.get(`https://a/users/${id}`);\n}\nconsole.log('done');"
    )
    ex = ok(text)
    assert ex.code.rstrip().endswith("getUser();")
    assert "console.log('done')" not in ex.code


def test_uncalled_arrow_and_object_method_and_class():
    assert (
        ok("const go = async () => { await axios.put('https://a', { x: 1 }); };")
        .code.rstrip()
        .endswith("go();")
    )
    assert (
        ok("const api = {\n  async list() { return axios.get('https://a'); }\n};")
        .code.rstrip()
        .endswith("api.list();")
    )
    cls = "class Client {\n  async list() { return axios.get('https://a'); }\n}"
    assert ok(cls).code.rstrip().endswith("new Client().list();")


def test_class_with_instance_and_method_call():
    text = (
        "class Client {\n  constructor(t) { this.http = axios.create({ baseURL: 'https://a' }); }\n"
        "  list() { return this.http.get('/items'); }\n}\n"
        "const c = new Client('t');\n"
        "c.list().then(console.log);\n"
        "junk junk junk"
    )
    ex = ok(text)
    assert ex.call_text == "this.http.get('/items')"
    assert "c.list().then(console.log);" in ex.code
    assert "junk" not in ex.code


def test_async_iife():
    text = "(async () => {\n  try {\n    await axios.get('https://a');\n  } catch (e) {}\n})();\nprose after"
    ex = ok(text)
    assert ex.code.rstrip().endswith("})();")


# ----------------------------------------------------------------------------- incomplete / no request


@pytest.mark.parametrize(
    "text",
    [
        "axios.get('https://api.example.com/v1/us",
        "const axios = require('axios');\naxios.get('https://a', { headers: { Auth",
        "axios.post('https://a', {\n  name: 'x',\n",
        "await axios.get('https://a', { params: { q: 1 } }",
        "```js\nconst api = axios.create({ baseURL: 'https://a' });\napi.get('/x', {",
    ],
)
def test_unfinished_call_is_incomplete(text):
    ex = extract_invocation(text)
    assert ex.status == "incomplete", ex
    assert ex.call_text is not None


@pytest.mark.parametrize(
    "text",
    [
        "fetch('https://a').then(r => r.json());",
        "",
        "I cannot help with that.",
        "Use `axios.get(url)` to call it.",
        "const api = axios.create({ baseURL: 'https://a' });",
        "axios.defaults.headers.common['Authorization'] = 'x';",
    ],
)
def test_no_request(text):
    ex = extract_invocation(text)
    assert ex.status == "no_request"
    assert ex.call_text is None and ex.call_start is None


def test_code_cut_after_the_call_is_repaired():
    ex = ok("axios.post('https://a', { a: 1 })\n  .then(r => {\n    console.log(r.da")
    assert ex.call_text == "axios.post('https://a', { a: 1 })"
    ex = ok(
        "async function main() {\n  try {\n    const r = await axios.get('https://a');\n    console.log(r.data."
    )
    assert "catch (_e) {}" in ex.code
    assert ex.code.rstrip().endswith("main();")


def test_cut_off_invocation_is_repaired():
    ex = ok("async function main() {\n  await axios.get('https://a');\n}\nmain().then(r => {\n  console.log(")
    assert ex.code.splitlines()[-1].startswith("main()")


def test_syntax_error_in_middle_is_not_incomplete():
    # a genuine syntax error (not a cut-off) runs and fails at runtime
    ex = extract_invocation("axios.get('https://a' 'b');\nconsole.log(1);")
    assert ex.status == "ok"


# ----------------------------------------------------------------------------- names, imports, offsets


def test_es_imports_rewritten():
    text = "import axios from 'axios';\nimport * as qs from 'qs';\nimport { a, b as c } from 'x';\nimport 'dotenv/config';\naxios.get('https://a');"
    ex = ok(text)
    assert "const axios = require('axios');" in ex.code
    assert "const qs = require('qs');" in ex.code
    assert "const { a, b: c } = require('x');" in ex.code
    assert "require('dotenv/config');" in ex.code
    assert "import" not in ex.code
    assert set(ex.declared) >= {"axios", "qs", "a", "c"}


def test_alias_names():
    assert (
        ok("import request from 'axios';\nrequest.post('https://a');").call_text
        == "request.post('https://a')"
    )
    assert ok("const ax = require('axios').default;\nax('https://a');").call_text == "ax('https://a')"
    assert ok("require('axios').get('https://a');").call_text == "require('axios').get('https://a')"
    assert ok("axios['delete']('https://a');").call_text == "axios['delete']('https://a')"
    assert ok("axios.default.get('https://a');").call_text == "axios.default.get('https://a')"


def test_instance_calls():
    text = "const api = axios.create({ baseURL: 'https://a' });\napi.defaults.headers.common['X'] = '1';\napi('/x');"
    assert ok(text).call_text == "api('/x')"
    text = "const api = axios.create({});\nconst v2 = api.create({});\nv2.patch('/y', {});"
    assert ok(text).call_text == "v2.patch('/y', {})"


def test_export_and_hashbang_stripped():
    text = "#!/usr/bin/env node\nexport const BASE = 'https://a';\nexport default async function main() { await axios.get(BASE); }\nexport { main };"
    ex = ok(text)
    assert "export" not in ex.code and "#!" not in ex.code
    assert ex.code.rstrip().endswith("main();")


def test_offsets_with_unicode_and_fences():
    text = "Voilà — le code :\n```js\n// héllo\naxios.get('https://a/ü');\n```"
    ex = ok(text)
    assert ex.call_text == "axios.get('https://a/ü')"
    assert text[ex.call_start : ex.call_end] == ex.call_text


def test_statements_joined_safely():
    # dropping prose between statements must not let ASI merge them into a call
    ex = ok("const o = { a: 1 }\nthis is prose\n(async () => { await axios.get('https://a'); })()")
    assert "const o = { a: 1 };" in ex.code


def test_prepare_code_keeps_everything():
    code, declared = prepare_code("import axios from 'axios';\naxios.get('a');\naxios.get('b');")
    # an ES module runs strict, as in Node
    assert code == "'use strict'; const axios = require('axios');\naxios.get('a');\naxios.get('b');"
    assert declared == ("axios",)
    code, declared = prepare_code("const x = 1;\nlet y;\nclass Z {}\nfunction f() {}")
    assert declared == ("x", "y", "Z")


def test_nul_byte_inside_a_string_does_not_stop_parsing():
    """tree-sitter stops at NUL; JavaScript allows it in a string. A broken chain after a complete
    call must still be trimmed, and the NUL kept in what runs."""
    from callbench.sandbox.js_extract import extract_invocation

    ex = extract_invocation("axios.get('https://x/a\x00b').finally(&")
    assert ex.status == "ok"
    assert "\x00" in ex.code and "&" not in ex.code
    assert ex.call_text == "axios.get('https://x/a\x00b')"
