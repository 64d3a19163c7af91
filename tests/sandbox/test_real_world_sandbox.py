"""Real-world starter code in the sandbox (issue 14, part 1): the axios call sits inside a
function, a class method, a promise executor or a callback of another library, with scopes still
open after it.  The program is completed, the way to the call is invoked with the definitions and
what the starter itself defines, other modules are inert stand-ins (noted in the result), and
hostile code inside a callback stays contained."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from callbench.sandbox import JsSandbox, node_script
from callbench.sandbox.js_extract import extract_invocation

ACCEPT = "application/json, text/plain, */*"


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=2.0) as s:
        yield s


def ok(sb: JsSandbox, code: str, definitions: dict | None = None):
    r = sb.run(code, definitions)
    assert r.status == "ok", (r.status, r.error, r.code)
    assert len(r.requests) >= 1
    return r


# ----------------------------------------------------------------------------- the shapes


def test_function_with_module_constant_and_argument_by_name(sb):
    starter = (
        "const axios = require('axios');\nconst BASE = 'https://api.giphy.com/v1';\n\n"
        "function searchGifs(term, limit) {\n  // Search GIFs\n  return axios."
    )
    completion = "get(`${BASE}/gifs/search`, { params: { api_key: apiKey, q: term, limit } });\n"
    r = ok(sb, starter + completion, {"apiKey": "K", "term": "cats", "limit": 10})
    assert r.request["method"] == "get"
    assert r.request["url"] == "https://api.giphy.com/v1/gifs/search"
    # the function's arguments nobody passed come from the definitions of the same name
    assert r.request["params"] == {"api_key": "K", "q": "cats", "limit": 10}
    assert r.stubbed_modules == []


def test_async_function_with_open_try_block(sb):
    starter = (
        "const axios = require('axios');\nasync function notify(chatId, text) {\n  try {\n"
        "    // Send it\n    await axios."
    )
    completion = "post('https://api.telegram.org/botT/sendMessage', { chat_id: chatId, text });\n"
    r = ok(sb, starter + completion, {"chatId": 1234, "text": "hi"})
    assert r.request["url"] == "https://api.telegram.org/botT/sendMessage"
    assert r.request["data"] == {"chat_id": 1234, "text": "hi"}
    assert "catch (_e) {}" in r.code


def test_class_method_with_base_url_from_the_constructor(sb):
    starter = (
        "const axios = require('axios');\n\nclass GiphyClient {\n  constructor(apiKey) {\n"
        "    this.apiKey = apiKey;\n    this.baseUrl = 'https://api.giphy.com/v1';\n  }\n\n"
        "  async trending(limit = 25) {\n    // Trending GIFs\n    const { data } = await axios."
    )
    completion = "get(`${this.baseUrl}/gifs/trending`, { params: { api_key: this.apiKey, limit } });\n"
    r = ok(sb, starter + completion, {"apiKey": "KEY"})
    assert r.request["url"] == "https://api.giphy.com/v1/gifs/trending"
    # constructor argument by name from the definitions; the method's default stays
    assert r.request["params"] == {"api_key": "KEY", "limit": 25}


def test_promise_executor_inside_a_method(sb):
    starter = (
        "const axios = require('axios');\nclass Bot {\n  constructor(token) {\n"
        "    this.baseUrl = `https://api.telegram.org/bot${token}`;\n  }\n  chatInfo(chatId) {\n"
        "    return new Promise((resolve, reject) => {\n      // Chat info\n      axios."
    )
    completion = "post(`${this.baseUrl}/getChat`, { chat_id: chatId }).then(resolve).catch(reject);\n"
    r = ok(sb, starter + completion, {"token": "123:ABC", "chatId": 42})
    assert r.request["method"] == "post"
    assert r.request["url"] == "https://api.telegram.org/bot123:ABC/getChat"
    assert r.request["data"] == {"chat_id": 42}
    assert len(r.requests) == 1  # the executor ran once (by the Promise), not again at the end


def test_express_route_callback_runs_and_module_is_noted(sb):
    starter = (
        "const axios = require('axios');\nconst express = require('express');\nconst app = express();\n"
        "app.use(express.json());\n\napp.get('/gif/:id', async (req, res) => {\n  try {\n"
        "    // Fetch the GIF\n    const response = await axios."
    )
    completion = "get('https://api.giphy.com/v1/gifs/abc', { params: { api_key: apiKey } });\n"
    r = ok(sb, starter + completion, {"apiKey": "K"})
    assert r.request["url"] == "https://api.giphy.com/v1/gifs/abc"
    assert r.request["params"] == {"api_key": "K"}
    assert r.stubbed_modules == ["express"]


def test_route_callback_using_the_request_stand_in(sb):
    """`req` is an inert stand-in: reading from it works (its values read as '0')."""
    starter = (
        "const axios = require('axios');\nconst app = require('express')();\n"
        "app.post('/users/:id', async (req, res) => {\n  const { name } = req.body;\n  // Update\n  await axios."
    )
    completion = "put(`https://api.example.com/users/${req.params.id}`, { name: String(name) });\nres.json({ ok: true });\n"
    r = ok(sb, starter + completion)
    assert r.request["method"] == "put"
    assert r.request["url"] == "https://api.example.com/users/0"


def test_ws_handlers_nested_callbacks(sb):
    starter = (
        "const axios = require('axios');\nconst WebSocket = require('ws');\n"
        "const wss = new WebSocket.Server({ port: 8080 });\n\nwss.on('connection', (socket) => {\n"
        "  socket.on('message', async (message) => {\n    const { tag } = JSON.parse(message);\n"
        "    // Random sticker\n    const result = await axios."
    )
    completion = "get('https://api.giphy.com/v1/stickers/random', { params: { tag: 'dog' } });\n"
    r = ok(sb, starter + completion)
    assert r.request["params"] == {"tag": "dog"}
    assert r.stubbed_modules == ["ws"]


def test_timer_and_error_first_callbacks(sb):
    r = ok(
        sb,
        "const axios = require('axios');\nsetTimeout(() => {\n  // later\n  axios.get('https://xkcd.com/1000/info.0.json');\n",
    )
    assert r.request["url"] == "https://xkcd.com/1000/info.0.json"
    # an error-first callback handed to an inert module gets a null error
    code = (
        "const axios = require('axios');\nconst redis = require('redis').createClient();\n"
        "redis.get('key', (err, value) => {\n  if (err) throw err;\n  axios.get('https://a.example/x');\n"
    )
    r = ok(sb, code)
    assert r.request["url"] == "https://a.example/x"
    assert r.stubbed_modules == ["redis"]


def test_helper_functions_lodash_and_local_files(sb):
    starter = (
        "import axios from 'axios';\nimport _ from 'lodash';\nconst config = require('./config');\n"
        "const RAPIDAPI_HOST = 'medium2.p.rapidapi.com';\n\n"
        "function rapidHeaders(key) {\n  return { 'x-rapidapi-key': key, 'x-rapidapi-host': RAPIDAPI_HOST };\n}\n\n"
        "async function userId(username, opts = {}) {\n  const retries = _.get(opts, 'retries', 3);\n"
        "  // Look up the user\n  const { data } = await axios."
    )
    completion = "get(`https://${RAPIDAPI_HOST}/user/id_for/${username}`, { headers: rapidHeaders(key) });\n"
    r = ok(sb, starter + completion, {"username": "nishu", "key": "K"})
    assert r.request["url"] == "https://medium2.p.rapidapi.com/user/id_for/nishu"
    assert r.request["headers"]["x-rapidapi-key"] == "K"
    assert r.request["headers"]["x-rapidapi-host"] == "medium2.p.rapidapi.com"
    assert r.stubbed_modules == ["lodash", "./config"]


def test_nested_function_iife_lambda_and_object_method(sb):
    nested = "const axios = require('axios');\nfunction outer() {\n  async function inner(zone) {\n    const r = await axios."
    r = ok(sb, nested + "get(`http://worldtimeapi.org/api/timezone/${zone}`);\n", {"zone": "Europe/Berlin"})
    assert r.request["url"] == "http://worldtimeapi.org/api/timezone/Europe/Berlin"
    iife = "const axios = require('axios');\n(async () => {\n  const { data } = await axios."
    assert ok(sb, iife + "get('https://api.apis.guru/v2/list.json');\n").request["url"].endswith("/list.json")
    lam = "const axios = require('axios');\nexports.handler = async (event) => {\n  const response = await axios."
    assert (
        ok(sb, lam + "get('https://api.apis.guru/v2/metrics.json');\n")
        .request["url"]
        .endswith("/metrics.json")
    )
    obj = "const axios = require('axios');\nconst api = {\n  async provider(name) {\n    return axios."
    r = ok(sb, obj + "get(`https://api.apis.guru/v2/${name}.json`);\n", {"name": "googleapis.com"})
    assert r.request["url"] == "https://api.apis.guru/v2/googleapis.com.json"


def test_completion_that_closes_its_scopes_and_goes_on(sb):
    starter = "const axios = require('axios');\nconst app = require('express')();\napp.get('/x', async (req, res) => {\n  const r = await axios."
    closed = "get('https://a.example/x');\n  res.json(r.data);\n});\n\napp.listen(3000, () => console.log('up'));\n"
    r = ok(sb, starter + closed)
    assert r.request["url"] == "https://a.example/x" and len(r.requests) == 1
    cut = "get('https://a.example/y');\n  res.json(r.da"  # the completion stopped at the token limit
    assert ok(sb, starter + cut).request["url"] == "https://a.example/y"


def test_inert_module_stand_in_never_throws(sb):
    code = """
const m = require('some-sdk');
const client = new m.Client({ key: 'k' });
const a = client.a.b.c().d(1, 2)[0];
const conn = await m.connect('x');
const chained = await m.query().where().limit(3).exec();
const value = await client.get('x').then((v) => v.y);
for (const item of m.list()) {}
const [first, second] = m.pair();
const text = `${m.url}/x` + m.id;
const n = Number(m.count) + 1;
delete m.x; m.y = 2; m.z.w = 3;
const json = JSON.stringify({ a: m.thing, b: 1 });
const parsed = JSON.parse(m.payload);
await axios.get('https://a.example/' + typeof conn + '/' + text + '/' + n + '/' + json);
"""
    r = sb.run(code, extract=False)
    assert r.status == "ok", r.error
    assert r.error is None
    assert r.request["url"] == 'https://a.example/function/0/x0/1/{"b":1}'
    assert r.stubbed_modules == ["some-sdk"]


def test_loop_over_a_stand_in_result_reaches_the_call(sb):
    code = (
        "const axios = require('axios');\nconst db = require('pg');\n\nasync function sync() {\n"
        "  const rows = await db.query('SELECT id FROM users');\n  for (const row of rows) {\n"
        "    await axios.post('https://a.example/rows', { id: String(row.id) });\n"
    )
    r = ok(sb, code)
    assert r.request["data"] == {"id": "0"} and r.stubbed_modules == ["pg"]


def test_refused_builtins_still_end_the_sample(sb):
    r = sb.run("const cp = require('child_process');\nfunction f() {\n  axios.get('https://a.example/');\n")
    assert r.status == "runtime_error"
    assert "require('child_process') is not allowed" in r.error
    assert r.stubbed_modules == []
    # the file system is modelled (empty, read-only), not an inert stand-in: requiring it is no error
    r = sb.run("const fs = require('fs');\nfunction f() {\n  axios.get('https://a.example/');\n")
    assert r.status == "ok" and r.stubbed_modules == []


# ----------------------------------------------------------------------------- definitions colliding with the starter


@pytest.mark.parametrize(
    "declaration",
    [
        "const token = 'starter';",
        "let token = 'starter';",
        "var token = 'starter';",
        "const { token } = { token: 'starter' };",
        "class token {}",
    ],
)
def test_definition_declared_by_the_starter_is_no_syntax_error(sb, declaration):
    starter = f"const axios = require('axios');\n{declaration}\nasync function go() {{\n  await axios."
    completion = "get('https://a.example/x', { headers: { Authorization: String(token).slice(0, 7) } });\n"
    r = sb.run(starter + completion, {"token": "from-definitions"})
    assert r.status == "ok", (r.status, r.error)
    if declaration.startswith("class"):
        assert r.request["headers"]["Authorization"] == "class t"
    else:
        assert r.request["headers"]["Authorization"] == "starter"  # the starter's own declaration wins


def test_definition_shadowed_inside_the_function(sb):
    code = "const axios = require('axios');\nfunction go() {\n  const token = 'inner';\n  return axios.get('https://a.example/', { params: { token } });\n"
    assert ok(sb, code, {"token": "outer"}).request["params"] == {"token": "inner"}


# ----------------------------------------------------------------------------- programs that cannot be completed


@pytest.mark.parametrize(
    "code",
    [
        "function search(term) {\n  const req = term ?\n    axios.get('https://a.example/x');\n",
        "const pick = useV2 ? axios.get('https://a.example/x');\n",
        "app.get('/x', (req, res) => {\n  const r = cond ?\n    axios.get('https://a.example/x');\n",
    ],
)
def test_uncompletable_program_is_one_status(sb, code):
    ex = extract_invocation(code)
    assert ex.status == "incomplete_program", ex
    r = sb.run(code)
    assert r.status == "incomplete_program"
    assert r.error.startswith(
        "the code around the first axios call cannot be completed into a runnable program"
    )
    assert r.request is None and r.requests == []


def test_cut_off_call_is_still_incomplete(sb):
    r = sb.run("function f() {\n  axios.get('https://a.example/x', { params: {")
    assert r.status == "incomplete"


# ----------------------------------------------------------------------------- hostile code inside a callback


ROUTE = "const axios = require('axios');\nconst app = require('express')();\napp.get('/x', async (req, res) => {\n  await axios."


def _clean_after(sb: JsSandbox) -> None:
    r = sb.run("axios.get('https://clean.example/');")
    assert r.status == "ok" and r.requests == [r.request] and r.console == []
    assert r.request["url"] == "https://clean.example/"


def test_callback_cannot_read_files_or_spawn(sb):
    for bad, error in (
        # the file system is empty: a host file is never there (Node's error for a missing file)
        ("require('fs').readFileSync('/etc/passwd', 'utf8')", "Error: ENOENT: no such file or directory, open '/etc/passwd'"),
        ("require('fs').writeFileSync('/tmp/x', 'a')", "Error: EROFS: read-only file system, open '/tmp/x'"),
        ("require('child_process').execSync('id')", "Error: require('child_process') is not allowed in the sandbox"),
    ):
        r = sb.run(
            ROUTE.replace("await axios.", f"const x = {bad};\n  await axios.")
            + "get('https://a.example/');\n"
        )
        assert r.status == "runtime_error" and r.error == error, (bad, r.error)
        assert r.requests == []
    _clean_after(sb)


def test_callback_cannot_run_after_its_turn(sb):
    # (the extractor drops what follows the call, so the hostile part comes before it)
    hostile = (
        "const ax = [axios][0];\n"
        "  setInterval(() => { ax.get('https://evil.example/later'); console.log('tick'); }, 1);\n"
        "  __callbench_rt.defer(function f() { __callbench_rt.defer(f, ''); console.log('again'); }, '');\n"
        "  Promise.resolve().then(() => new Promise(() => {}));\n"
        "  await axios."
    )
    r = sb.run(ROUTE.replace("await axios.", hostile) + "get('https://a.example/first');\n")
    assert r.status == "ok"
    assert r.request["url"] == "https://a.example/first"
    # bounded: the run ends after at most 100 timer/deferred steps, whatever keeps rescheduling
    assert 1 < len(r.requests) <= 101 and "tick" in r.console  # counted, not timed
    # a deferred callback that defers itself again: bounded the same way
    r = sb.run(
        ROUTE.replace("await axios.", hostile.replace("setInterval", "clearInterval"))
        + "get('https://a.example/first');\n"
    )
    assert r.status == "ok" and r.request["url"] == "https://a.example/first"
    assert 1 < r.console.count("again") <= 100 and "tick" not in r.console
    # nothing it scheduled runs during the next sample
    _clean_after(sb)
    _clean_after(sb)


def test_callback_cannot_tamper_with_shared_state(sb):
    for bad in (
        "Object.prototype.polluted = 1;",
        "globalThis.leak = __callbench_rt;",
        "JSON.stringify = () => 'x';",
    ):
        # strict (the file's directive): the write throws and ends the sample
        r = sb.run("'use strict';\n" + ROUTE.replace("await axios.", f"{bad}\n  await axios.") + "get('https://a.example/');\n")
        assert r.status in ("runtime_error", "rejected"), (bad, r.status)
        assert r.requests == []
        _clean_after(sb)
        # sloppy (CommonJS as Node runs it): the write fails silently and changes nothing
        probe = "get('https://a.example/' + [typeof ({}).polluted, typeof globalThis.leak, JSON.stringify(1)].join());\n"
        r = sb.run(ROUTE.replace("await axios.", f"{bad}\n  await axios.") + probe)
        assert r.status == "ok" and r.request["url"] == "https://a.example/undefined,undefined,1", (bad, r.status, r.error)
        _clean_after(sb)


def test_callback_cannot_forge_the_scored_request(sb):
    """A request made first, from elsewhere, is not taken for the marked call."""
    r = sb.run(
        ROUTE.replace("await axios.", "await axios.get('https://evil.example/first');\n  await axios.")
        + "get('https://a.example/');\n"
    )
    # the first call in the text is the one marked: the evil call *is* the extracted call here
    assert r.request["url"] == "https://evil.example/first"
    sneaky = ROUTE.replace(
        "await axios.", "await (0, axios['g' + 'et'])('https://evil.example/first');\n  await axios."
    )
    r = sb.run(sneaky + "get('https://a.example/');\n")
    assert r.status == "rejected" and r.request is None
    _clean_after(sb)


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_node_runs_the_same_completed_program(sb, tmp_path):
    """The completed and rewritten program is plain JavaScript: real Node, with the same
    stand-in, captures the same request (definitions included)."""
    code = (
        "const axios = require('axios');\nconst express = require('express');\nconst app = express();\n"
        "class Client {\n  constructor(apiKey) {\n    this.apiKey = apiKey;\n    this.baseUrl = 'https://api.giphy.com/v1';\n  }\n"
        "  search(q) {\n    return new Promise((resolve) => {\n      app.get('/s', async (req, res) => {\n"
        "        const r = await axios.get(`${this.baseUrl}/gifs/search`, { params: { api_key: this.apiKey, q } });\n"
    )
    defs = {"apiKey": "K", "q": "cats"}
    script = tmp_path / "program.js"  # a file: the script is over the 128 KiB a single argument may hold
    script.write_text(node_script(code, defs), encoding="utf-8")
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=30, check=True)
    data = json.loads(out.stdout)
    r = ok(sb, code, defs)
    assert r.request["params"] == {"api_key": "K", "q": "cats"}
    assert [json.loads(json.dumps(q)) for q in data["requests"]] == r.requests


@pytest.mark.parametrize(
    ("code", "url"),
    [
        (
            "class Api {\n  constructor() { this.base = 'https://a.example'; }\n"
            "  handler = async (req) => {\n    await axios.get(this.base + '/field');\n",
            "https://a.example/field",
        ),
        (
            "module.exports = {\n  async handler(event) {\n    return axios.get('https://a.example/m');\n",
            "https://a.example/m",
        ),
        (
            "exports.Client = class {\n  list() {\n    return axios.get('https://a.example/c');\n",
            "https://a.example/c",
        ),
        (
            "const api = {\n  list: async () => {\n    await axios.get('https://a.example/o');\n",
            "https://a.example/o",
        ),
    ],
)
def test_class_fields_and_exported_objects(sb, code, url):
    assert ok(sb, code).request["url"] == url


def test_blanks_around_a_url_are_not_part_of_its_query(sb):
    """Node's URL parser (axios' http adapter parses the URL before it appends ``params``)
    drops leading and trailing spaces and control characters, and tabs and newlines anywhere:
    ``'.../json? '`` with params sends ``/json?key=...``, not a query key ``' '``
    (hoangdathp99/React_weather_app's OpenCage call; checked against real axios 1.21.1)."""
    r = ok(sb, "const axios = require('axios');\naxios.get(\"https://api.x.io/geocode/v1/json? \", { params: { key: 'k', q: 'Hanoi' } });")
    assert r.request["url"] == "https://api.x.io/geocode/v1/json"
    assert r.request["params"] == {"key": "k", "q": "Hanoi"}
    r = ok(sb, "const axios = require('axios');\naxios.get(' https://api.x.io/a\\n/b?q=1\\t ');")
    assert (r.request["url"], r.request["params"]) == ("https://api.x.io/a/b", {"q": "1"})
    # a blank inside the query stays part of it (the parser percent-encodes it)
    r = ok(sb, "const axios = require('axios');\naxios.get('https://api.x.io/a? b=1');")
    assert r.request["params"] == {" b": "1"}
