"""Reaching the call in real-world programs (issue 29, item 1): CommonJS runs sloppy as Node runs
it, exported factories and the methods of what they return are invoked, Express/Koa requests and
`process.env` answer from the variables in scope, `fs` is an empty read-only file system, a
starter's own earlier requests are not scored, and when the whole program still cannot reach the
call, the completed call statement runs alone (``reached_by``).  Each starter is modelled on a
failing case of the issue; the sandbox's guarantees are checked again in sloppy mode."""

from __future__ import annotations

import pytest

from callbench.sandbox import JsSandbox
from callbench.sandbox.js_extract import answer_offset, extract_invocation

GIPHY = "https://api.giphy.com/v1/gifs/search"


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=2.0) as s:
        yield s


def scored(sb: JsSandbox, starter: str, completion: str, definitions: dict | None = None, **kw):
    r = sb.run(starter + completion, definitions, call_from=len(starter), **kw)
    assert r.status == "ok", (r.status, r.error, r.code)
    return r


# ----------------------------------------------------------------------------- 1. sloppy CommonJS


def test_a_reserved_word_of_strict_mode_is_an_identifier(sb):
    starter = (
        "const axios = require('axios');\nconst package = require('./package.json');\n"
        "const interface = 'cli';\n\nfunction search(term) {\n  // Search GIFs\n  return axios."
    )
    completion = f"get('{GIPHY}', {{ params: {{ q: term, ua: interface }} }});\n"
    r = scored(sb, starter, completion, {"term": "cats"})
    assert r.request["params"] == {"q": "cats", "ua": "cli"} and r.reached_by == "program"


def test_an_undeclared_assignment_is_seen_by_later_code(sb):
    starter = (
        "const axios = require('axios');\n\nbaseUrl = 'https://api.giphy.com/v1';\n"
        "settings = { limit: 10 };\n[first, second] = ['cats', 'dogs'];\n"
        "function search() {\n  // Search GIFs\n  return axios."
    )
    completion = "get(`${baseUrl}/gifs/search`, { params: { q: first, limit: settings.limit } });\n"
    r = scored(sb, starter, completion)
    assert r.request["url"] == GIPHY and r.request["params"] == {"q": "cats", "limit": 10}
    # each name got a `var` of the sample's own function, at the end (hoisted: no position moves)
    assert r.code.rstrip().endswith("var baseUrl, settings, first, second;")


@pytest.mark.parametrize(
    "head", ["'use strict';\nconst axios = require('axios');\n", "import axios from 'axios';\n"]
)
def test_a_strict_file_and_an_es_module_stay_strict(sb, head):
    r = sb.run(head + "baseUrl = 'https://a.example';\naxios.get(baseUrl);")
    assert r.status == "runtime_error" and r.error == "ReferenceError: baseUrl is not defined"
    r = sb.run(head + "const package = 1;\naxios.get('https://a.example/' + package);")
    assert r.status == "runtime_error" and "strict mode reserved word" in r.error


def test_top_level_this_is_module_exports(sb):
    r = sb.run("this.base = 'https://a.example';\naxios.get(module.exports.base + '/' + (this === exports));")
    assert r.status == "ok" and r.request["url"] == "https://a.example/true"


def test_undeclared_names_do_not_reach_the_next_sample(sb):
    first = sb.run("leaked = 'secret';\nglobalThis.alsoLeaked = 1;\naxios.get('https://a.example/' + leaked);")
    assert first.status == "ok" and first.request["url"] == "https://a.example/secret"
    r = sb.run("axios.get('https://a.example/' + typeof leaked + typeof alsoLeaked);")
    assert r.request["url"] == "https://a.example/undefinedundefined"


WRITES = [
    "Object.prototype.polluted = 1;",
    "Array.prototype.push = function () { return 0; };",
    "JSON.stringify = () => '{}';",
    "globalThis.foo = 1;",
    "Math.random = () => 4;",
    "delete Array.prototype.map;",
    "Promise.prototype.then = function () {};",
    "Function('return this')().foo = 1;",
    "this.constructor.constructor('return globalThis')().foo = 1;",
    "require('fs').readFileSync = () => 'host file';",
    "Object.getPrototypeOf(async function () {}).x = 1;",
]
READ_BACK = (
    "[typeof ({}).polluted, [1].push(2), JSON.stringify({ a: 1 }), typeof globalThis.foo, typeof Math.random(),"
    " typeof [].map, typeof Promise.prototype.then, Object.keys(axios.defaults.headers.common).join('+'),"
    " (() => { try { return require('fs').readFileSync('/etc/passwd'); } catch (e) { return e.code; } })()].join(' ')"
)
CLEAN = "undefined 2 {\"a\":1} undefined number function function Accept+Content-Type ENOENT"


@pytest.mark.parametrize("write", WRITES)
def test_sloppy_writes_to_shared_state_fail_silently_and_change_nothing(sb, write):
    """Sloppy code writing to a frozen builtin is not stopped by a TypeError any more: the write
    fails silently.  Nothing changes, neither in the sample itself nor in the next one, and the
    integrity check after the sample finds the context intact (no rebuild was needed)."""
    starts = sb.worker_starts
    r = sb.run(f"{write}\naxios.get('https://a.example/', {{ params: {{ seen: {READ_BACK} }} }});")
    assert r.status == "ok", (write, r.error)
    assert r.request["params"]["seen"] == CLEAN, write
    after = sb.run(f"axios.get('https://a.example/', {{ params: {{ seen: {READ_BACK} }} }});")
    assert after.request["params"]["seen"] == CLEAN, write
    assert sb.worker_starts == starts


def test_the_integrity_check_still_catches_what_a_freeze_cannot_stop():
    """A change no freeze prevents (a shared regex rewritten in place) is still found after a
    sloppy sample.  The test keeps RegExp.prototype.compile and the shared regexes from before
    the lockdown and hands them to the sample, as if it had reached both."""
    import json

    from py_mini_racer import MiniRacer

    from callbench.sandbox._engine import harness_source, standin_source

    mr = MiniRacer()
    try:
        mr.eval(standin_source() + "\n" + harness_source())
        mr.eval(
            "const R = __callbench;\n"
            "const SHARED = __callbenchStandin.shared.filter(x => x instanceof RegExp);\n"
            "const COMPILE = RegExp.prototype.compile;"
        )
        mr.eval("__callbenchLockdown({})")

        def run(code: str) -> dict:
            mr.eval(f"R.start({json.dumps(code)}, null, [], {{}}, null)")
            return json.loads(mr.eval("R.settle()"))

        sloppy_write = run("Array.prototype.push = null;\nundeclared = 1;\naxios.get('https://a.example/' + undeclared);\nvar undeclared;")
        assert sloppy_write["intact"] is True and sloppy_write["error"] is None  # silent, and nothing changed
        damaged = run(
            "for (const r of SHARED) { try { COMPILE.call(r, '^$'); } catch (e) {} }\n"
            "Object.prototype.x = 1;\naxios.get('https://a.example/');"
        )
        assert damaged["intact"] is False and damaged["damage"] == "a shared regex was changed"
    finally:
        mr.close()


# ----------------------------------------------------------------------------- 2. factories and what they return


FACTORY = (
    "const axios = require('axios');\nconst API = 'https://api.etherscan.io/api';\n\n"
    "module.exports = function (apiKey) {\n  return {\n    balance(address) {\n"
    "      return new Promise(function (resolve, reject) {\n        // Get the balance\n        axios."
)


def test_an_exported_factory_and_the_method_it_returns_are_invoked(sb):
    completion = (
        "get(API, { params: { module: 'account', action: 'balance', address, tag: 'latest', apikey: apiKey } })"
        ".then(function (res) { resolve(res.data.result); }).catch(reject);\n"
    )
    r = scored(sb, FACTORY, completion, {"apiKey": "KEY", "address": "0xde0b"})
    assert r.request["url"] == "https://api.etherscan.io/api"
    # the factory's and the method's arguments come from the variables in scope, by name
    assert r.request["params"] == {
        "module": "account", "action": "balance", "address": "0xde0b", "tag": "latest", "apikey": "KEY"
    }
    assert r.reached_by == "program" and len(r.requests) == 1


@pytest.mark.parametrize(
    "starter",
    [
        # a factory function declaration whose object's async method holds the call
        "const axios = require('axios');\nfunction createClient(apiKey) {\n  const base = 'https://api.example.com';\n"
        "  return {\n    async user(id) {\n      // Get the user\n      const { data } = await axios.",
        # an arrow factory returning an object of arrows
        "const axios = require('axios');\nconst base = 'https://api.example.com';\n"
        "module.exports = (apiKey) => ({\n  user: async (id) => {\n    // Get the user\n    const { data } = await axios.",
        # exports.name = factory, nested in a factory
        "const axios = require('axios');\nconst base = 'https://api.example.com';\n"
        "exports.client = function (apiKey) {\n  return {\n    users() {\n      return {\n        get(id) {\n"
        "          // Get the user\n          return axios.",
    ],
    ids=["declaration", "arrow", "nested"],
)
def test_factory_shapes(sb, starter):
    completion = "get(`${base}/users/${id}`, { headers: { Authorization: `Bearer ${apiKey}` } });\n"
    r = scored(sb, starter, completion, {"apiKey": "K", "id": 7})
    assert r.request["url"] == "https://api.example.com/users/7"
    assert r.request["headers"]["Authorization"] == "Bearer K"


def test_a_method_the_code_calls_itself_runs_once(sb):
    starter = (
        "const axios = require('axios');\nfunction client(key) {\n  return {\n    search(q) {\n"
        "      // Search\n      return axios."
    )
    completion = f"get('{GIPHY}', {{ params: {{ api_key: key, q }} }});\n  }}\n  }};\n}}\nclient('K1').search('own');\n"
    r = scored(sb, starter, completion, {"key": "K", "q": "cats"})
    assert [q["params"]["q"] for q in r.requests] == ["own"]


# ----------------------------------------------------------------------------- 3. Express and Koa requests


def test_an_express_handler_reads_the_body_from_the_variables_in_scope(sb):
    starter = (
        "const axios = require('axios');\nconst express = require('express');\nconst router = express.Router();\n\n"
        "router.post('/tweets', async (req, res) => {\n  const hashtag = req.body.hashtag.replace('#', '');\n"
        "  const { count } = req.query;\n  const lang = req.headers.lang;\n"
        "  // Search tweets\n  const response = await axios."
    )
    completion = (
        "get('https://api.twitter.com/1.1/search/tweets.json', { params: { q: hashtag, count, lang, "
        "user: req.params.user, via: req.get('via') } });\n"
    )
    defs = {"hashtag": "#cats", "count": 5, "user": "jack", "via": "api", "lang": "en"}
    r = scored(sb, starter, completion, defs)
    assert r.request["params"] == {"q": "cats", "count": 5, "lang": "en", "user": "jack", "via": "api"}
    assert r.stubbed_modules == ["express"]


def test_a_koa_handler_reads_ctx_from_the_variables_in_scope(sb):
    starter = (
        "const axios = require('axios');\nconst Router = require('@koa/router');\nconst router = new Router();\n\n"
        "router.get('/weather/:city', async (ctx) => {\n  const { city } = ctx.params;\n"
        "  const units = ctx.request.query.units;\n  // Current weather\n  const { data } = await axios."
    )
    completion = "get('https://api.openweathermap.org/data/2.5/weather', { params: { q: city, units, appid: key } });\n"
    r = scored(sb, starter, completion, {"city": "Oslo", "units": "metric", "key": "K"})
    assert r.request["params"] == {"q": "Oslo", "units": "metric", "appid": "K"}


def test_a_request_value_not_in_scope_is_an_inert_stand_in(sb):
    starter = (
        "const axios = require('axios');\nconst app = require('express')();\napp.get('/x', (req, res) => {\n"
        "  const n = String(req.body.missing.trim());\n  // Call\n  axios."
    )
    r = scored(sb, starter, "get('https://a.example/x', { params: { n } });\n")
    assert r.request["params"] == {"n": "0"}


# ----------------------------------------------------------------------------- 4. fs and process.env


def test_a_config_file_read_fails_as_in_node_and_the_code_goes_on(sb):
    starter = (
        "const axios = require('axios');\nconst fs = require('fs');\nconst path = require('path');\n\n"
        "let config;\ntry {\n  config = JSON.parse(fs.readFileSync(path.join(__dirname, 'config.json'), 'utf8'));\n"
        "} catch (err) {\n  console.log(err.code, err.message);\n  config = { limit: 10 };\n}\n\n"
        "function search(q) {\n  // Search GIFs\n  return axios."
    )
    r = scored(sb, starter, f"get('{GIPHY}', {{ params: {{ q, limit: config.limit }} }});\n", {"q": "cats"})
    assert r.request["params"] == {"q": "cats", "limit": 10}
    assert r.console[0].startswith("ENOENT ENOENT: no such file or directory, open ")
    assert r.stubbed_modules == ["path"]  # fs is modelled, not an inert stand-in


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("require('fs').readFileSync('/etc/passwd', 'utf8')", "ENOENT no such file or directory, open '/etc/passwd'"),
        ("require('fs').statSync('/')", "ENOENT no such file or directory, stat '/'"),
        ("require('fs').readdirSync('.')", "ENOENT no such file or directory, scandir '.'"),
        ("require('node:fs').writeFileSync('/tmp/x', 'a')", "EROFS read-only file system, open '/tmp/x'"),
        ("require('fs').mkdirSync('/tmp/d')", "EROFS read-only file system, mkdir '/tmp/d'"),
        ("require('fs').unlinkSync('/etc/hosts')", "EROFS read-only file system, unlink '/etc/hosts'"),
        ("String(require('fs').existsSync('/etc/passwd'))", None),
    ],
)
def test_the_file_system_is_empty_and_read_only(sb, call, expected):
    code = (
        f"let out;\ntry {{ out = {call}; }} catch (e) {{ out = e.code + ' ' + e.message.slice(e.code.length + 2); }}\n"
        "axios.get('https://a.example/', { params: { out } });"
    )
    r = sb.run(code)
    assert r.status == "ok", r.error
    assert r.request["params"]["out"] == (expected if expected is not None else "false")


def test_callbacks_promises_and_streams_of_the_file_system(sb):
    code = (
        "const fs = require('fs');\nconst fsp = require('fs/promises');\nconst seen = [];\n"
        "fs.readFile('./key.txt', 'utf8', (err, data) => { seen.push('cb:' + err.code + ':' + data); });\n"
        "fs.writeFile('./out.txt', 'x', (err) => { seen.push('w:' + err.code); });\n"
        "fs.exists('./key.txt', (yes) => { seen.push('exists:' + yes); });\n"
        "fs.createReadStream('./big.csv').on('error', (err) => { seen.push('stream:' + err.code); });\n"
        "(async () => {\n  try { await fsp.readFile('./key.txt'); } catch (e) { seen.push('p:' + e.code); }\n"
        "  try { await fs.promises.appendFile('./log', 'x'); } catch (e) { seen.push('pa:' + e.code); }\n"
        "  await null; await null;\n  axios.get('https://a.example/', { params: { seen: seen.sort().join(',') } });\n})();"
    )
    r = sb.run(code)
    assert r.status == "ok", r.error
    assert r.request["params"]["seen"] == (
        "cb:ENOENT:undefined,exists:false,p:ENOENT,pa:EROFS,stream:ENOENT,w:EROFS"
    )


def test_process_env_answers_from_the_variables_in_scope(sb):
    starter = (
        "require('dotenv').config();\nconst axios = require('axios');\nconst { GIPHY_API_KEY, LIMIT } = process.env;\n"
        "const rating = process.env.RATING || 'g';\n\nasync function search(q) {\n  // Search GIFs\n  const res = await axios."
    )
    completion = f"get('{GIPHY}', {{ params: {{ api_key: GIPHY_API_KEY, q, limit: Number(LIMIT), rating }} }});\n"
    r = scored(sb, starter, completion, {"GIPHY_API_KEY": "K", "LIMIT": 10, "q": "cats"})
    assert r.request["params"] == {"api_key": "K", "q": "cats", "limit": 10, "rating": "g"}
    # as in Node, every value is a string, and a name not in scope is undefined
    r = sb.run("axios.get('https://a.example/', { params: { t: typeof process.env.LIMIT, m: String(process.env.NOPE) } });", {"LIMIT": 10})
    assert r.request["params"] == {"t": "string", "m": "undefined"}


# ----------------------------------------------------------------------------- 5. a starter declaring a definition's name


@pytest.mark.parametrize(
    "declaration",
    [
        "const path = require('path');",
        "import path from 'path';",
        "let path = '/users';",
        "var path = '/users';",
        "const { join, resolve: path } = require('path');",
        "function path() { return '/users'; }",
    ],
)
def test_a_starter_declaring_a_name_the_definitions_also_give_runs(sb, declaration):
    starter = (
        f"{declaration}\nconst axios = require('axios');\n\nasync function list(id) {{\n  // List it\n  const r = await axios."
    )
    r = scored(sb, starter, "get('https://a.example/items', { params: { id } });\n", {"path": "/defs", "id": 3})
    assert r.request["params"] == {"id": 3}


# ----------------------------------------------------------------------------- 6. the call alone


BROWSER = (
    "const axios = require('axios');\nconst BASE = 'https://api.giphy.com/v1';\n"
    "const input = document.querySelector('#search');\n\ninput.addEventListener('keyup', async (event) => {\n"
    "  const q = event.target.value.trim();\n  const url = `${BASE}/gifs/search`;\n  // Search GIFs\n"
    "  const res = await axios."
)
BROWSER_CALL = "get(url, { params: { api_key: apiKey, q, limit: 10 } });\n"


def test_when_the_program_cannot_reach_the_call_the_call_runs_alone(sb):
    defs = {"apiKey": "K", "q": "cats"}
    r = scored(sb, BROWSER, BROWSER_CALL, defs, alone=True)
    assert r.reached_by == "call"
    assert r.request["url"] == GIPHY
    # the starter's top-level definitions and the declarations on the way ran; `q` in scope won
    assert r.request["params"] == {"api_key": "K", "q": "cats", "limit": 10}
    # without the second route the program's own error stands
    r = sb.run(BROWSER + BROWSER_CALL, defs, call_from=len(BROWSER))
    assert r.status == "runtime_error" and "document is not defined" in r.error and r.reached_by is None


def test_a_call_in_an_async_iife_pushed_into_promises(sb):
    starter = (
        "const axios = require('axios');\nconst promises = [];\nfor (const tag of hashtags) {\n"
        "  promises.push((async () => {\n    // Search GIFs\n    const res = await axios."
    )
    completion = f"get('{GIPHY}', {{ params: {{ api_key: apiKey, q: tag }} }});\n"
    r = scored(sb, starter, completion, {"apiKey": "K", "tag": "cats"}, alone=True)
    assert r.reached_by == "call" and r.request["params"] == {"api_key": "K", "q": "cats"}
    r = scored(sb, starter, completion, {"apiKey": "K", "hashtags": ["dogs"]}, alone=True)
    assert r.reached_by == "program" and r.request["params"] == {"api_key": "K", "q": "dogs"}


def test_the_call_alone_when_no_request_was_made(sb):
    starter = (
        "const axios = require('axios');\nconst emitter = new (require('events'))();\n"
        "if (process.env.NODE_ENV === 'production') {\n  emitter.on('search', async (q) => {\n"
        "    // Search GIFs\n    const res = await axios."
    )
    r = scored(sb, starter, f"get('{GIPHY}', {{ params: {{ q }} }});\n", {"q": "cats"}, alone=True)
    assert r.reached_by == "call" and r.request["params"] == {"q": "cats"}


def test_a_call_that_fails_alone_too_keeps_the_programs_error(sb):
    starter = "const axios = require('axios');\nundefinedClient.start();\nasync function f() {\n  const r = await axios."
    r = sb.run(starter + "get(missingUrl);\n", None, call_from=len(starter), alone=True)
    assert r.status == "runtime_error" and "undefinedClient is not defined" in r.error
    assert r.reached_by is None


def test_the_call_alone_is_marked_like_the_program(sb):
    """The call alone is checked like the whole program: a request the code sends another way
    before it is never scored as the call's (the sample is rejected)."""
    gold, wrong = "https://api.example.com/v1/items", "https://api.example.com/v1/WRONG"
    code = (
        "const ax = require('ax' + 'ios');\nconst early = ax.get('" + gold + "');\n"
        "notDefined();\nasync function f() {\n  return axios.delete('" + wrong + "');\n}\n"
    )
    r = sb.run(code, alone=True)
    assert r.status == "rejected" and all(q["url"] != gold or r.request is None for q in r.requests)
    assert r.request is None
    ex = extract_invocation(code, alone=True)
    assert ex.status == "ok" and "await (async function () {" in ex.code and ex.mark is not None


def test_the_call_alone_from_an_unrunnable_statement_is_no_program():
    ex = extract_invocation("function f() {\n  if (axios.get('https://a.example/')) {}\n}\n", alone=True)
    assert ex.status == "incomplete_program" and "cannot run alone" in ex.error


# ----------------------------------------------------------------------------- 7. the completion's request is scored


STARTER_ALL = (
    "const axios = require('axios');\nconst BASE = 'https://api.giphy.com/v1';\n\n"
    "axios.all([\n  axios.get(`${BASE}/gifs/trending`, { params: { api_key: apiKey } }),\n"
    "  axios.get(`${BASE}/stickers/trending`, { params: { api_key: apiKey } }),\n])\n"
    "  .then(axios.spread((gifs, stickers) => console.log(gifs.status, stickers.status)));\n\n"
    "async function search(q) {\n  // Search GIFs\n  const res = await axios."
)


def test_the_starters_own_earlier_requests_are_not_scored(sb):
    completion = "get(`${BASE}/gifs/search`, { params: { api_key: apiKey, q } });\n"
    r = scored(sb, STARTER_ALL, completion, {"apiKey": "K", "q": "cats"})
    assert [q["url"] for q in r.requests] == [
        "https://api.giphy.com/v1/gifs/trending", "https://api.giphy.com/v1/stickers/trending", GIPHY
    ]
    assert r.scored == 2 and r.request == r.requests[2] and r.request["params"] == {"api_key": "K", "q": "cats"}
    assert r.sent[r.scored]["url"].startswith(GIPHY)
    # without knowing where the answer starts, the starter's first call is taken for the answer's
    r = sb.run(STARTER_ALL + completion, {"apiKey": "K", "q": "cats"})
    assert r.request["url"] == "https://api.giphy.com/v1/gifs/trending"


def test_an_answer_call_that_never_runs_is_no_request(sb):
    completion = "get(`${BASE}/gifs/search`);\n  }\n}\nif (false) search('x');\n"
    starter = STARTER_ALL.replace("async function search(q) {\n  // Search GIFs\n  const res = await axios.",
                                  "function search(q) {\n  if (q === 'never') {\n    return axios.")
    r = sb.run(starter + completion, {"apiKey": "K"}, call_from=len(starter))
    assert r.status == "no_request" and "only the starter's own calls did" in r.error
    assert r.request is None and len(r.requests) == 2


def test_without_starter_calls_an_earlier_request_is_still_rejected(sb):
    starter = "const axios = require('axios');\nasync function f() {\n  const r = await axios."
    completion = "get('https://a.example/' + (await require('ax' + 'ios').get('https://evil.example/')).status);\n"
    r = sb.run(starter + completion, None, call_from=len(starter))
    assert r.status == "rejected" and r.request is None


@pytest.mark.parametrize(
    ("starter", "program", "expected"),
    [
        ("const a = 1;\naxios.", "const a = 1;\naxios.get('x');", len("const a = 1;\naxios.")),
        # a chat answer repeating the code: the starter's open line again, after its header
        ("const a = 1;\naxios.all([axios.get(u)]);\n  const r = await axios.",
         "const a = 1;\naxios.all([axios.get(u)]);\nasync function f() {\n  const r = await axios.get('x');\n}",
         len("const a = 1;\naxios.all([axios.get(u)]);\nasync function f() {\n  ")),
        ("const a = 1;\naxios.", "const b = 2;\naxios.get('x');", None),
        # a bare `axios.` line is not looked for: the answer's first `axios.` need not be its call
        ("const a = 1;\n  axios.", "const a = 1;\nfunction f() {\n  axios({ url: 'x' }).then(() => axios.get('y'));\n}",
         len("const a = 1;\n")),
        ("", "axios.get('x')", None),
    ],
)
def test_answer_offset(starter, program, expected):
    assert answer_offset(starter, program) == expected


# ----------------------------------------------------------------------------- the mark in sloppy mode

GOLD = "https://api.example.com/v1/items"
WRONG = "https://api.example.com/v1/WRONG"
SEND = f"Reflect.apply(axios.get, axios, ['{GOLD}', t])"
COLLECT = (
    "let f = arguments.callee; const seen = [];\n"
    "  for (let i = 0; i < 20 && f; i++) { try { seen.push(...Array.from(f.arguments || [])); f = f.caller; }"
    " catch (e) { break; } }\n"
    f"  for (const t of seen) {{ try {{ {SEND}; }} catch (e) {{}} }}\n"
)
SLOPPY_ROUTES = {
    # what sloppy code has and strict code lacks: fn.caller, fn.arguments, arguments.callee, with
    "caller_chain_from_a_getter": (
        f"function main() {{\n  return axios.delete('{WRONG}', {{ get params() {{\n  {COLLECT}  return {{}}; }} }});\n}}\nmain();"
    ),
    "caller_chain_from_an_interceptor": (
        f"axios.interceptors.request.use(function (c) {{\n  {COLLECT}  return c;\n}});\n"
        f"function main() {{ return axios.delete('{WRONG}'); }}\nmain();"
    ),
    "caller_chain_from_a_transform": (
        f"function main() {{ return axios.delete('{WRONG}', {{ transformRequest: [function (d) {{\n  {COLLECT}"
        "  return d; }] }); }\nmain();"
    ),
    "arguments_of_the_function_holding_the_call": (
        f"function main() {{\n  return axios.delete('{WRONG}', (() => {{ for (const t of Array.from(main.arguments)) "
        f"{{ try {{ {SEND}; }} catch (e) {{}} }} return {{}}; }})());\n}}\nmain();"
    ),
    "with_over_the_arguments": (
        f"with (arguments) {{ for (let i = 0; i < length; i++) {{ const t = arguments[i]; try {{ {SEND}; }} catch (e) {{}} }} }}\n"
        f"axios.delete('{WRONG}');"
    ),
}


@pytest.mark.parametrize("route", sorted(SLOPPY_ROUTES))
def test_sloppy_code_cannot_get_another_request_marked(sb, route):
    r = sb.run(SLOPPY_ROUTES[route])
    assert r.request is None or r.request["url"] != GOLD, (route, r.status, r.requests)
    assert r.status in ("ok", "rejected", "runtime_error"), (route, r.status, r.error)
    if r.status == "ok":
        assert r.request["url"] == WRONG
    # honest code still is scored
    ok = sb.run(f"axios.get('{GOLD}');")
    assert ok.status == "ok" and ok.request["url"] == GOLD


def test_a_chat_answer_repeating_the_starters_requests_scores_its_own_call(sb):
    """A chat answer that repeats the whole program, the starter's `axios.all` included: the call
    scored is the one on the starter's open line, not the repeated earlier request."""
    from callbench.tracks.webapi.parsing import assemble_program

    body = STARTER_ALL.split("const axios = require('axios');\n", 1)[1].replace(
        "const res = await axios.", f"const res = await axios.get('{GIPHY}', {{ params: {{ api_key: apiKey, q }} }});\n}}\n"
    )
    answer = "```javascript\nconst axios = require('axios');\n" + body + "```"
    program = assemble_program(STARTER_ALL, answer, "chat")
    offset = answer_offset(STARTER_ALL, program)
    r = sb.run(program, {"apiKey": "K", "q": "cats"}, call_from=offset)
    assert r.status == "ok", (r.status, r.error)
    assert r.request["url"] == GIPHY and r.request["params"] == {"api_key": "K", "q": "cats"}


def test_run_many_runs_the_call_alone_in_turn(sb):
    """In a batch, a sample whose program cannot reach the call runs the call alone while the
    others go on; every sample gets its own result, as when run one by one."""
    fail_starter = "const axios = require('axios');\nnotDefined.start();\nasync function f(q) {\n  const r = await axios."
    items = []
    for k in range(6):
        starter = fail_starter if k % 2 == 0 else "const axios = require('axios');\nasync function f(q) {\n  const r = await axios."
        code = starter + f"get('https://a.example/{k}', {{ params: {{ q }} }});\n"
        items.append((code, {"q": f"q{k}"}, len(starter), True))
    items.append(("no code here", None, None, True))
    batch = dict(sb.run_many(items))
    assert sorted(batch) == list(range(len(items)))
    for k in range(6):
        r = batch[k]
        assert r.status == "ok" and r.request["url"] == f"https://a.example/{k}" and r.request["params"] == {"q": f"q{k}"}
        assert r.reached_by == ("call" if k % 2 == 0 else "program")
        single = sb.run(items[k][0], items[k][1], call_from=items[k][2], alone=True)
        assert (single.status, single.request, single.reached_by) == (r.status, r.request, r.reached_by)
    assert batch[6].status == "no_request"


def test_a_call_alone_that_hangs_keeps_the_programs_result():
    starter = "const axios = require('axios');\nnotDefined.start();\nasync function f() {\n  const r = await axios."
    code = starter + "get((() => { while (true) {} })());\n"
    with JsSandbox(timeout_s=0.3, kill_grace_s=2.0) as s:
        r = s.run(code, None, call_from=len(starter), alone=True)
        assert r.status == "runtime_error" and "notDefined is not defined" in r.error and r.reached_by is None
        after = s.run("axios.get('https://a.example/');")
        assert after.status == "ok"


def test_a_destructured_options_parameter_is_filled_from_the_variables_in_scope(sb):
    """`constructor({ bearerToken })` (and a renamed or defaulted property) called by the sandbox:
    an object of the variables in scope of those names, not undefined (a TypeError)."""
    starter = (
        "const axios = require('axios');\n\nclass TwitterClient {\n"
        "  constructor({ bearerToken, base: root = 'https://api.twitter.com/2', limit = 5 }) {\n"
        "    this.headers = { Authorization: `Bearer ${bearerToken}` };\n    this.root = root;\n    this.limit = limit;\n  }\n\n"
        "  user(name) {\n    // Look up the user\n    return axios."
    )
    completion = "get(`${this.root}/users/by/username/${name}`, { params: { max: this.limit }, headers: this.headers });\n"
    r = scored(sb, starter, completion, {"bearerToken": "AAAA", "name": "jack"})
    assert r.request["url"] == "https://api.twitter.com/2/users/by/username/jack"
    assert r.request["params"] == {"max": 5} and r.request["headers"]["Authorization"] == "Bearer AAAA"
    assert r.reached_by == "program"
    # a renamed property takes the local name's value first
    r = scored(sb, starter, completion, {"bearerToken": "AAAA", "name": "jack", "root": "https://x.example/2"})
    assert r.request["url"] == "https://x.example/2/users/by/username/jack"
