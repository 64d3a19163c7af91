"""Red team: sloppy CommonJS and the ways of reaching the call added with it (issue 29, item 1).

Sample code now runs sloppy (as Node runs CommonJS) with a hoisted `var` for undeclared
assignments, an empty read-only `fs`, `process.env` and request stand-ins from the variables in
scope, invoked factories, the call run alone (``reached_by == "call"``) and tolerance of a
starter's own earlier requests (``call_from``).  Each test is a hostile sample that tries to use
one of these to get a request scored that the picked call did not make, to leave state for the
next sample, to read a host file or to change the frozen intrinsics; after each, a clean sample
in the same sandbox must give exactly the result it gives alone.
"""

from __future__ import annotations

import pytest

from callbench.sandbox import JsSandbox

GOLD = "https://api.example.com/v1/items"
WRONG = "https://api.example.com/v1/WRONG"
EVIL = "https://api.example.com/v1/DELETE_ALL"
SITE = f"axios.delete('{WRONG}');"
# a clean sample that would show leaks: names a hostile sample may try to leave behind
CLEAN = (
    f"axios.get('{GOLD}', {{ params: {{ q: [typeof leak, typeof leaked, typeof polluted, typeof ({{}}).polluted,"
    " typeof globalThis.leak, Object.getOwnPropertyNames(globalThis).length, typeof eval('1'),"
    " String(undefined), String(NaN), [Object, Object.prototype, JSON, Array.prototype, Function.prototype,"
    " globalThis, require('fs')].every(Object.isFrozen), Object.keys.name, JSON.parse.name].join(',') } });\nconsole.log(require('fs').existsSync('/x'));"
)


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=2.0, kill_grace_s=2.0) as s:
        yield s


@pytest.fixture(scope="module")
def clean_alone():
    """The clean sample's result in a sandbox of its own."""
    with JsSandbox(timeout_s=2.0) as s:
        r = s.run(CLEAN)
    assert r.status == "ok" and r.request["url"] == GOLD
    assert r.request["params"]["q"].startswith("undefined,undefined,undefined,undefined,undefined,")
    return r


def contained(sb: JsSandbox, clean_alone, r) -> None:
    """`r` scored nothing as GOLD, and the next sample runs as it does alone."""
    assert r.status in ("ok", "rejected", "runtime_error", "no_request"), (r.status, r.error)
    assert r.request is None or r.request["url"] != GOLD, (r.status, r.requests)
    next_is_clean(sb, clean_alone)


def next_is_clean(sb: JsSandbox, clean_alone) -> None:
    after = sb.run(CLEAN)
    got = (after.status, after.request, after.requests, after.console, after.error)
    assert got == (clean_alone.status, clean_alone.request, clean_alone.requests, clean_alone.console, clean_alone.error)


# ----------------------------------------------------------------------------- sloppy-only routes

# `t` is a candidate call token: each route sends GOLD with it as the last argument
SEND = f"try {{ Reflect.apply(axios.get, axios, ['{GOLD}', t]); }} catch (e) {{}}"
CALLERS = (
    "const seen = []; let f = me; for (let i = 0; i < 20 && f; i++) {"
    " try { seen.push(...Array.from(f.arguments || [])); f = f.caller; } catch (e) { break; } }"
    f" for (const t of seen) {{ {SEND} }}"
)

ROUTES = {
    # sloppy `this` of a plain call is the global object: frozen, and no runner on it
    "this_is_the_global": (
        "const g = (function () { return this; })();\n"
        "g.leak = 1; try { Object.defineProperty(g, 'leaked', { value: 1 }); } catch (e) {}\n"
        "for (const k of Reflect.ownKeys(g)) { const t = g[k]; " + SEND + " }\n" + SITE
    ),
    # a `with` Proxy sees every name the call looks up, the random mark's included ...
    "with_proxy_takes_the_mark_name": (
        "const P = new Proxy({}, { has(t, k) { return String(k).startsWith('__cb_'); },\n"
        f"  get(t, k) {{ return function () {{ const t = String(k); {SEND} return t; }}; }} }});\n"
        f"with (P) {{ {SITE} }}"
    ),
    # ... and can read it, but the name leads nowhere without direct eval
    "with_proxy_reads_the_mark_name": (
        "let name = null; const P = new Proxy({}, { has(t, k) { if (String(k).startsWith('__cb_')) name = String(k);"
        " return false; } });\n"
        "with (P) { " + SITE + " }\n"
        "for (const make of [() => eval(name), () => (0, eval)(name), () => Function('return ' + name)()]) {"
        " try { const t = make()(); " + SEND + " } catch (e) {} }"
    ),
    # a `with` Proxy puts its own `axios` under the picked call
    "with_proxy_substitutes_axios": (
        "const ax = require('ax' + 'ios');\n"
        "const P = new Proxy({}, { has(t, k) { return k === 'axios'; },\n"
        f"  get() {{ return {{ delete(u, t) {{ return ax.get('{GOLD}', t); }} }}; }} }});\n"
        f"with (P) {{ {SITE} }}"
    ),
    # Annex B: function declarations in blocks try to replace the bindings the call uses
    "annex_b_block_functions": (
        "const ax = require('ax' + 'ios');\n"
        f"{{ function require(n) {{ return {{ delete(u, t) {{ return ax.get('{GOLD}', t); }} }}; }} }}\n"
        f"if (true) {{ function axios2() {{}} }}\n{{ function __callbench_rt() {{ return 1; }} }}\n{SITE}"
    ),
    # callers of the sample's functions the harness and the stand-in call: all strict (null)
    "caller_from_a_then_callback": (
        f"Promise.resolve().then(function me() {{ {CALLERS} }});\n{SITE}"
    ),
    "caller_from_to_json_value_of_and_to_primitive": (
        f"function me() {{ {CALLERS} return 'x'; }}\n"
        f"axios.delete('{WRONG}', {{ params: {{ a: {{ toJSON: me }}, b: {{ valueOf: me, toString: me }},"
        " c: { [Symbol.toPrimitive]: me } }, data: { toJSON: me } });"
    ),
    "caller_from_a_proxy_config": (
        f"function me() {{ {CALLERS} }}\n"
        f"axios.delete('{WRONG}', new Proxy({{}}, {{ get(t, k) {{ me(); return undefined; }},"
        " has() { me(); return false; }, ownKeys() { me(); return []; } }));"
    ),
    "caller_from_a_deferred_handler": (
        "const app = require('express')();\n"
        f"app.get('/x', function me(req, res) {{ {CALLERS}\n  return axios.delete('{WRONG}');\n}});\n"
    ),
    # sloppy `arguments` aliases parameters: rewriting the sample's own never reaches a token
    "arguments_aliasing": (
        "function me(a, b) { arguments[0] = arguments[1]; for (const t of [a, b, ...arguments]) { " + SEND + " } }\n"
        "me(1, 2);\nfor (let i = 0; i < arguments.length; i++) { arguments[i] = undefined; }\n" + SITE
    ),
    # the names the harness binds and its appended `var`s: assigned in sloppy code
    "assign_harness_bindings": (
        f"__callbench_rt = {{ scope() {{ return {{ url: '{GOLD}' }}; }}, defer(f) {{ return f; }} }};\n"
        "module = null; exports = null; undefined = 'x'; NaN = 1; eval = function () { return 'hijacked'; };\n"
        "__cb_mark_0000000000000000 = function () { return 1; };\n" + SITE
    ),
    "shadow_undefined_and_nan": (
        f"var undefined = '{GOLD}', NaN = 1, Infinity = 2;\n"
        "function f(u = undefined) { return u; }\n"
        "const t = f(); " + SEND + "\n" + SITE
    ),
    "sloppy_eval_declares_vars": (
        "(0, eval)('var leaked = 1'); try { eval('var leak = 1; this.polluted = 1'); } catch (e) {}\n"
        "Function('leak = 2; this.polluted = 3')();\n" + SITE
    ),
    # the sandbox's own helper (a binding of every sample): pointed at shared objects, or flooded
    "rt_helper_on_shared_objects": (
        "for (const o of [Object, JSON, Array.prototype, Promise, globalThis, require('fs'), process.env]) {\n"
        "  for (const k of ['keys', 'parse', 'map', 'resolve', 'readFileSync', 'eval']) {\n"
        "    try { __callbench_rt.fillMethod(o, k, 'vv', () => []); } catch (e) {}\n"
        "    try { __callbench_rt.deferMethod(o, k, 'v', () => []); } catch (e) {}\n  }\n}\n" + SITE
    ),
    "rt_defer_flood": (
        "function d() { __callbench_rt.defer(d)(); __callbench_rt.defer(d); }\n"
        "for (let i = 0; i < 5000; i++) __callbench_rt.defer(d);\n" + SITE
    ),
    "rt_fill_method_on_axios": f"__callbench_rt.fillMethod(axios, 'get', 'vv', () => ['{GOLD}']);\naxios.get();",
    # the virtual file system: nothing of the host, nothing written
    "fs_reads_host_files": (
        "const fs = require('fs'); const fsp = require('node:fs/promises'); let t = '';\n"
        "for (const p of ['/etc/passwd', '../../../../etc/passwd', '/proc/self/environ', 'file:///etc/passwd',\n"
        "  __filename, '/sandbox/../etc/hostname', '\\\\..\\\\..\\\\etc\\\\passwd', Buffer.from('/etc/passwd')]) {\n"
        "  try { t += fs.readFileSync(p, 'utf8'); } catch (e) { t += e.code; }\n"
        "  try { t += fs.readdirSync(p); } catch (e) { t += e.code; }\n"
        "}\n"
        "for (const w of [() => fs.writeFileSync('/tmp/leak', 'x'.repeat(1 << 20)), () => fs.symlinkSync('/etc/passwd', 'l'),\n"
        "  () => fs.mkdirSync('/tmp/d'), () => fs.appendFileSync('leak', 'x')]) { try { w(); } catch (e) { t += e.code; } }\n"
        "try { fs.readFileSync = () => 'x'; fs.promises.readFile = null; Object.defineProperty(fs, 'leak', { value: 1 }); } catch (e) {}\n"
        "fsp.readFile('/etc/passwd').catch(() => {});\n"
        f"axios.delete('{WRONG}', {{ params: {{ t: t.slice(0, 500) }} }});"
    ),
    # process.env answers from the definitions: its prototype is the frozen Object.prototype
    "process_env_prototype_pollution": (
        "process.env.__proto__.polluted = 1; process.env['__proto__'] = { polluted: 1 };\n"
        "try { Object.setPrototypeOf(process.env, { polluted: 1 }); } catch (e) {}\n"
        "try { Object.prototype.polluted = 1; } catch (e) {}\n"
        "const { polluted } = process.env;\n" + SITE
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_sloppy_route_scores_nothing_and_leaves_nothing(sb, clean_alone, route):
    r = sb.run(ROUTES[route], {"url": WRONG})
    contained(sb, clean_alone, r)
    if r.status == "ok":
        assert r.request["url"] == WRONG, (route, r.requests)


def test_the_file_system_shows_nothing_of_the_host(sb, clean_alone):
    r = sb.run(ROUTES["fs_reads_host_files"])
    assert r.status == "ok" and r.request["url"] == WRONG
    t = r.request["params"]["t"]
    # every read is ENOENT and every write EROFS: no file content, not even of the sandbox's own file
    assert "root:" not in t and set(t.replace("ENOENT", "").replace("EROFS", "")) == set(), t
    contained(sb, clean_alone, r)


# ----------------------------------------------------------------------------- the starter's requests

STARTER = (
    "const axios = require('axios');\n"
    "axios.get('https://api.example.com/v1/ping');\n"
    "function refresh() {\n  return axios.get('https://api.example.com/v1/refresh');\n}\n"
    "async function search(q) {\n  // Search items\n  const res = await axios."
)

ANSWER_FIRST = {
    # before this fix each of these was "ok" with GOLD scored: the answer's own request, sent
    # another way before its call, was taken for one of the starter's (they were all tolerated)
    "after_the_call": f"get('{GOLD}', {{ params: {{ q }} }});\n}}\nrequire('ax' + 'ios').delete('{EVIL}');\nsearch('x');\n",
    "in_the_calls_arguments": (
        f"get((await require('ax' + 'ios').delete('{EVIL}'), '{GOLD}'), {{ params: {{ q }} }});\n}}\nsearch('x');\n"
    ),
    # the starter's own call re-routed through the answer's stand-in for axios (the token a
    # starter's call passes marks only a request made straight from that call)
    "a_starter_call_rerouted": (
        f"get('{GOLD}', {{ params: {{ q }} }});\n}}\n"
        "const real = axios; const evil = require('ax' + 'ios');\n"
        f"axios = {{ get(u, t) {{ return evil.delete('{EVIL}', t); }} }};\n"
        "refresh(); axios = real; search('x');\n"
    ),
}


@pytest.mark.parametrize("alone", [False, True])
@pytest.mark.parametrize("route", sorted(ANSWER_FIRST))
def test_the_answers_own_earlier_request_is_not_the_starters(sb, clean_alone, route, alone):
    starter = STARTER
    if route == "a_starter_call_rerouted":
        starter = starter.replace("const axios = require('axios');\n", "")  # `axios` is the sandbox's binding
    r = sb.run(starter + ANSWER_FIRST[route], {"q": "cats"}, call_from=len(starter), alone=alone)
    assert EVIL in [q["url"] for q in r.requests], r.requests
    assert r.status == "rejected" and r.request is None, (r.status, r.error, r.requests)
    assert "came from neither it nor the starter's own calls" in r.error
    contained(sb, clean_alone, r)


def test_the_starters_own_requests_still_come_first(sb, clean_alone):
    completion = f"get('{GOLD}', {{ params: {{ q }} }});\n}}\nrefresh().then(() => search('x'));\n"
    r = sb.run(STARTER + completion, {"q": "cats"}, call_from=len(STARTER))
    assert r.status == "ok", (r.status, r.error)
    assert [q["url"][-7:] for q in r.requests] == ["v1/ping", "refresh", "1/items"]
    assert r.scored == 2 and r.request["params"] == {"q": "x"} and r.reached_by == "program"
    # no starter token or its name in what the code can see or what is reported
    assert "__cb_starter_" not in r.code and all("from_starter" not in q for q in r.requests)
    next_is_clean(sb, clean_alone)


def test_the_starter_token_name_leads_nowhere(sb, clean_alone):
    """The starter token's random name is in the source the sample can read, like the mark's;
    without direct eval it reaches neither binding."""
    completion = (
        f"get('{WRONG}');\n}}\n"
        "const names = search.toString().match(/__cb_\\w+/g) || (arguments.callee.toString().match(/__cb_\\w+/g) || []);\n"
        "for (const name of names) for (const make of [() => eval(name), () => (0, eval)(name), () => Function('return ' + name)()]) {\n"
        f"  try {{ const t = make()(); Reflect.apply(axios.get, axios, ['{GOLD}', t]); }} catch (e) {{}}\n}}\n"
        "search('x');\n"
    )
    r = sb.run(STARTER + completion, {"q": "cats"}, call_from=len(STARTER))
    assert r.status in ("ok", "no_request", "rejected"), (r.status, r.error)
    assert all(q["url"] != GOLD for q in r.requests)
    contained(sb, clean_alone, r)


@pytest.mark.parametrize("ping", ["", "axios.get('https://api.example.com/v1/ping');\n"])
def test_the_call_alone_scores_only_the_calls_own_request(sb, clean_alone, ping):
    """The program fails on purpose so that the call runs alone: a request sent another way in the
    call's own statement is not taken for the call's, with or without starter calls (before this
    fix, with the starter's `ping` the call alone was "ok" with reached_by "call": the alias
    request before it was tolerated as if the starter had sent it)."""
    starter = (
        "const axios = require('axios');\n" + ping + "notDefined.start();\nasync function f(q) {\n  const r = await axios."
    )
    completion = f"delete((require('ax' + 'ios').get('{EVIL}'), '{WRONG}'));\n"
    r = sb.run(starter + completion, {"q": "cats"}, call_from=len(starter), alone=True)
    # the call alone is rejected, so the program's own result stands (its error; with the
    # starter's ping, "no_request": only the starter's own call sent one)
    assert r.status == ("no_request" if ping else "runtime_error"), (r.status, r.error, r.requests)
    assert r.request is None and r.reached_by is None
    contained(sb, clean_alone, r)


def test_a_rejected_program_gets_no_second_chance_alone(sb, clean_alone):
    """The call alone runs only when the program reached no request or failed before it: a program
    rejected for an earlier request of its own is not run again in the call-alone scope."""
    starter = "const axios = require('axios');\nasync function f(q) {\n  const r = await axios."
    completion = f"get('{GOLD}', {{ params: {{ q }} }});\n}}\nrequire('ax' + 'ios').delete('{EVIL}');\nf('x').then(() => {{ throw new Error('x'); }});\n"
    r = sb.run(starter + completion, {"q": "cats"}, call_from=len(starter), alone=True)
    assert r.status == "rejected" and r.request is None and r.reached_by is None, (r.status, r.error)
    assert [q["url"] for q in r.requests] == [EVIL, GOLD]
    contained(sb, clean_alone, r)
