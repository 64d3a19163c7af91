"""Red team: the scored call's mark cannot be had from sample code (issue 28, hostile item 4).

The sandbox scores the first recorded request only when the call the extractor picked made it.
Every sample here has the picked call send WRONG while it tries, by some route, to get a GOLD
request it makes elsewhere counted as the picked call's: through `arguments`, its own source
text and eval, patched builtins, stack traces, getters and Proxies on what it passes in,
`arguments.callee.caller`, Symbol hooks, or a function it puts in place of axios's own.  None may
be scored as GOLD; honest code is scored as before.
"""

from __future__ import annotations

import json

import pytest

from callbench.sandbox import JsSandbox

GOLD = "https://api.example.com/v1/items"
WRONG = "https://api.example.com/v1/WRONG"
# the call every hostile sample below ends with: the one the extractor picks
SITE = f"axios.delete('{WRONG}');"
# sends GOLD with `t` as an extra last argument, the way the old per-run marker travelled
SEND = f"Reflect.apply(axios.get, axios, ['{GOLD}', t])"
# the name of the harness's binding, read from the code's own source text
NAME = r"(main.toString().match(/__cb_mark_\w+/) || ['none'])[0]"

ROUTES = {
    "arguments_last": f"const t = arguments[arguments.length - 1];\n{SEND};\n{SITE}",
    "arguments_each": (
        f"for (const t of Array.from(arguments)) {{ try {{ {SEND}; }} catch (e) {{}} }}\n{SITE}"
    ),
    "arguments_json_and_strings": (
        "const seen = [];\nfor (const a of arguments) { try { seen.push(JSON.stringify(a), String(a)); } catch (e) {} }\n"
        f"const t = seen.join(' ');\n{SEND};\n{SITE}"
    ),
    "source_and_direct_eval": (
        f"async function main() {{ let t; try {{ t = eval({NAME}); t = typeof t === 'function' ? t() : t; }}"
        f" catch (e) {{ t = e.message; }} {SEND}; return axios.delete('{WRONG}'); }}\nmain();"
    ),
    "source_and_indirect_eval": (
        f"async function main() {{ let t; try {{ t = (0, eval)({NAME})(); }} catch (e) {{ t = e.message; }}"
        f" {SEND}; return axios.delete('{WRONG}'); }}\nmain();"
    ),
    "source_and_function_constructor": (
        f"async function main() {{ let t; try {{ t = Function('return ' + {NAME})()(); }} catch (e) {{ t = e.message; }}"
        f" {SEND}; return axios.delete('{WRONG}'); }}\nmain();"
    ),
    "function_prototype_call_patched": (
        "let t;\ntry { Function.prototype.call = function (...a) { t = a[a.length - 1]; return Reflect.apply(this, a[0], a.slice(1)); }; } catch (e) {}\n"
        f"try {{ Object.defineProperty(Function.prototype, 'apply', {{ value() {{ t = arguments[1]; }} }}); }} catch (e) {{}}\n"
        f"try {{ Function.prototype.bind = function () {{ t = arguments; return this; }}; }} catch (e) {{}}\n"
        f"{SITE}\n"
    ),
    "builtins_the_standin_uses_patched": (
        "let t;\n"
        "try { Array.prototype.slice = function () { t = this[this.length - 1]; return []; }; } catch (e) {}\n"
        "try { Reflect.apply = function (f, th, a) { t = a[a.length - 1]; }; } catch (e) {}\n"
        "try { Object.defineProperty = function (o, k, d) { t = d && d.value; return o; }; } catch (e) {}\n"
        "try { WeakMap.prototype.get = function () { return true; }; WeakMap.prototype.has = () => true; } catch (e) {}\n"
        "try { Object.prototype.__lookupGetter__ = () => 1; Object.defineProperty(Object.prototype, 'token', { get() { return t; } }); } catch (e) {}\n"
        f"{SEND};\n{SITE}"
    ),
    "error_stack_and_prepare_stack_trace": (
        "let t;\n"
        "try { Error.prepareStackTrace = (e, frames) => { t = frames.map(f => [f.getFunction && f.getFunction(), f.getThis && f.getThis()]); return ''; }; } catch (e) {}\n"
        "try { Error.stackTraceLimit = Infinity; } catch (e) {}\n"
        f"const cfg = {{ get headers() {{ const h = {{}}; Error.captureStackTrace(h); t = t || h.stack;"
        f" try {{ t = eval((String(h.stack).match(/__cb_mark_\\w+/) || ['none'])[0]); }} catch (e) {{}} {SEND}; return {{}}; }} }};\n"
        f"axios.delete('{WRONG}', cfg);"
    ),
    "getter_on_config": (
        f"let t;\nconst cfg = {{ get params() {{ {SEND}; return undefined; }} }};\naxios.delete('{WRONG}', cfg);"
    ),
    "proxy_config": (
        f"let t, fired = false;\nconst cfg = new Proxy({{}}, {{ get(target, key) {{ if (!fired) {{ fired = true; t = arguments;"
        f" {SEND}; }} return undefined; }}, ownKeys() {{ return []; }} }});\naxios.delete('{WRONG}', cfg);"
    ),
    "arguments_callee_caller": (
        "let t;\n"
        "const steal = Function('var c = arguments.callee.caller; var seen = []; while (c && seen.length < 20) "
        "{ seen.push(c); try { var a = c.arguments; if (a && a.length) return a[a.length - 1]; } catch (e) {} c = c.caller; } return null;');\n"
        f"try {{ t = arguments.callee; }} catch (e) {{}}\n"
        f"const cfg = {{ get params() {{ t = steal(); {SEND}; return undefined; }} }};\naxios.delete('{WRONG}', cfg);"
    ),
    "symbol_to_primitive_url": (
        f"let t;\nconst url = {{ [Symbol.toPrimitive]() {{ {SEND}; return '{WRONG}'; }} }};\naxios.delete(url);"
    ),
    # a function of the code's own where the picked call finds axios.delete: it is handed the
    # call token, but a request it makes is not one the picked call made straight
    "wrapper_in_place_of_the_method": (
        "const real = axios.get;\n"
        f"axios.delete = function (u, t) {{ return Reflect.apply(real, axios, ['{GOLD}', t]); }};\n{SITE}"
    ),
    "proxy_in_place_of_the_method": (
        "axios.delete = new Proxy(axios.delete, { apply(target, self, args) {\n"
        f"  const t = args[args.length - 1];\n  {SEND};\n  return Reflect.apply(target, self, args.slice(0, -1));\n}} }});\n{SITE}"
    ),
    "proxy_in_place_of_axios": (
        "const realAxios = axios;\n"
        "axios = new Proxy(realAxios, { get(target, key) { if (key !== 'delete') return target[key];\n"
        f"  return function (u, t) {{ return Reflect.apply(realAxios.get, realAxios, ['{GOLD}', t]); }}; }} }});\n{SITE}"
    ),
    "the_method_itself_recursing_with_a_named_frame": (
        # frames named like the picked call's, to pass the stack for its own
        "const real = axios.get;\nlet depth = 0;\n"
        "function g(u, t) {\n"
        f"  if (t && depth > 12) return Reflect.apply(real, axios, ['{GOLD}', t]);\n"
        f"  depth++;\n  return axios.delete('{WRONG}');\n}}\n"
        "Object.defineProperty(g, 'name', { value: 'eval' });\n"
        "axios.delete = g;\ng();"
    ),
    "frame_names_with_newlines": (
        "const real = axios.get;\n"
        "const fake = new Error().stack;\n"
        "const trap = function (u, t) { return Reflect.apply(real, axios, ['" + GOLD + "', t]); };\n"
        "Object.defineProperty(trap, 'name', { value: 'x (' + fake + ')\\n    at eval' });\n"
        f"axios.delete = trap;\n{SITE}"
    ),
    "symbol_hooks_patched": (
        "let t;\n"
        "try { Object.defineProperty(Array, Symbol.species, { get() { t = 1; return Array; } }); } catch (e) {}\n"
        "try { Object.defineProperty(Object.prototype, Symbol.toStringTag, { get() { t = this; return 'X'; } }); } catch (e) {}\n"
        "try { Object.defineProperty(Object.prototype, Symbol.iterator, { get() { t = this; } }); } catch (e) {}\n"
        f"{SEND};\n{SITE}"
    ),
}


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=2.0, kill_grace_s=2.0) as s:
        yield s


def assert_gold_not_scored(r) -> None:
    """GOLD was sent, but not by the picked call: it must not be the scored request."""
    if r.status == "ok":
        assert r.request is not None and r.request["url"] != GOLD, r.requests
        assert r.request["method"] == "delete"
    else:
        assert r.request is None, (r.status, r.request)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_route_to_the_mark_does_not_score(sb, route):
    r = sb.run(ROUTES[route])
    assert_gold_not_scored(r)
    if r.requests and r.requests[0]["url"] == GOLD:
        # GOLD went first, from elsewhere: the picked call's request is not the first one
        assert r.status == "rejected", (r.status, r.error)
    # the sandbox serves the next honest sample as before
    ok = sb.run(f"axios.get('{GOLD}', {{ params: {{ n: 1 }} }});")
    assert ok.status == "ok" and ok.request["url"] == GOLD and ok.request["params"] == {"n": 1}


def test_reflect_apply_exploit_from_the_issue_is_rejected(sb):
    code = (
        f"Reflect.apply(axios.get, axios, ['{GOLD}', arguments[arguments.length-1]]); axios.delete('{WRONG}')"
    )
    r = sb.run(code)
    assert r.status == "rejected" and r.request is None
    assert "did not come from the extracted axios call" in (r.error or "")
    assert [q["url"] for q in r.requests] == [GOLD, WRONG]  # kept for inspection, not scored


def test_the_sample_function_has_no_extra_argument(sb):
    # the harness adds nothing to what `arguments` holds: a marked run sees what an unmarked one does
    probe = "axios.get('{u}', {{ params: {{ n: arguments.length, kinds: Array.from(arguments, a => typeof a).join() }} }});"
    marked = sb.run(probe.format(u=GOLD))
    unmarked = sb.run(probe.format(u=GOLD), extract=False)
    assert marked.status == unmarked.status == "ok"
    assert marked.request["params"] == unmarked.request["params"]


def test_the_name_in_the_source_leads_nowhere(sb):
    # a function holding the picked call shows the harness's name in its source; no lookup finds it
    code = (
        "async function main() {\n"
        f"  const n = {NAME};\n"
        "  const found = [];\n"
        "  try { found.push(typeof eval(n)); } catch (e) { found.push(e.name); }\n"
        "  try { found.push(typeof (0, eval)(n)); } catch (e) { found.push(e.name); }\n"
        "  try { found.push(typeof Function('return ' + n)()); } catch (e) { found.push(e.name); }\n"
        "  try { found.push(typeof globalThis[n]); } catch (e) { found.push(e.name); }\n"
        f"  return axios.get('{GOLD}', {{ params: {{ named: n !== 'none', found: found.join() }} }});\n"
        "}\nmain();"
    )
    r = sb.run(code)
    assert r.status == "ok", r.error
    assert r.request["params"]["named"] in (True, "true")
    assert r.request["params"]["found"] == "ReferenceError,ReferenceError,ReferenceError,undefined"


def test_eval_still_evaluates_code(sb):
    r = sb.run(
        "const base = eval(\"'https://api.example.com' + '/v1'\");\n"
        "eval('var local = 1');\n"
        "axios.get(base + '/items', { params: { v: eval('[1, 2].length'), empty: typeof eval('') } });"
    )
    assert r.status == "ok", r.error
    assert r.request["url"] == GOLD and r.request["params"] == {"v": 2, "empty": "undefined"}


def test_a_kept_call_token_marks_nothing(sb):
    # a function the code put in place of axios.delete receives what the picked call passes;
    # handing it on to axios later, from elsewhere, marks nothing
    code = (
        "const real = axios.get;\nlet t;\n"
        "axios.delete = function (u, token) { t = token; return Promise.resolve({}); };\n"
        f"setTimeout(() => Reflect.apply(real, axios, ['{GOLD}', t]), 0);\n"
        f"axios.delete('{WRONG}');"
    )
    r = sb.run(code)
    assert r.status == "rejected" and r.request is None
    assert [q["url"] for q in r.requests] == [GOLD]


def test_a_bound_method_in_place_sends_what_the_call_made(sb):
    # no function of the code's own runs in between: the request is the picked call's own
    r = sb.run(f"axios.delete = axios.get.bind(axios, '{GOLD}');\naxios.delete({{ params: {{ a: 1 }} }});")
    assert r.status == "ok" and r.request["url"] == GOLD and r.request["method"] == "get"


def test_picked_call_deep_in_the_stack(sb):
    # up to the stack trace limit the picked call is matched, wherever it sits
    code = "function f(n) { return n ? f(n - 1) : axios.get('" + GOLD + "'); }\nf(30);"
    r = sb.run(code)
    assert r.status == "ok" and r.request["url"] == GOLD
    # a stack as deep as the trace limit could hide a frame: never matched (fails closed)
    r = sb.run(code.replace("f(30)", "f(60)"))
    assert r.status == "rejected" and r.request is None


def test_picked_call_in_a_timer_and_a_callback(sb):
    r = sb.run(f"setTimeout(() => {{ [1].forEach(() => axios.get('{GOLD}')); }}, 5);")
    assert r.status == "ok" and r.request["url"] == GOLD
    r = sb.run(f"Promise.resolve().then(async () => {{ await null; return axios.get('{GOLD}'); }});")
    assert r.status == "ok" and r.request["url"] == GOLD


@pytest.mark.parametrize(
    "shape",
    [
        "axios.get('{u}')",
        "axios['get']('{u}')",
        "axios.get?.('{u}')",
        "axios?.get('{u}')",
        "axios({{ url: '{u}' }})",
        "axios.request({{ url: '{u}' }})",
        "axios.create({{}}).get('{u}')",
        "axios.create({{}}).delete('{u}')",
        "axios.delete('{u}')",
        "axios['delete']('{u}')",
        "axios.postForm('{u}', {{ a: 1 }})",
        "axios.get('{u}', {{ params: {{ q: 'x' }} }}, /* extra */)",
        "const é = 'ü';\naxios.get('{u}', {{ headers: {{ 'X-A': é + '\u2028' + '😀' }} }})",
        "const s = '\\r\\n\\u2028';\r\naxios\r\n.get(\u2028'{u}')",
        "await axios\n  .get(\n    '{u}',\n  )",
        "async function main() {{ return axios.get('{u}'); }}\nmain()",
        "for (const u of ['{u}', '{w}']) await axios.get(u)",
    ],
)
def test_honest_call_shapes_are_scored(sb, shape):
    r = sb.run(shape.format(u=GOLD, w=WRONG) + ";")
    assert r.status == "ok", (r.status, r.error, r.code)
    assert r.request["url"] == GOLD
    assert "__callbench_mark" not in r.code and "__cb_mark" not in r.code  # the stored code is the sample's


def test_track_verdict_for_the_issue_exploit(tmp_path, data_root):
    """Through the web API track: the exploit is an error verdict, the honest call correct."""
    from callbench.models.base import ModelOutput
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    spec = data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
    url = "https://petstore.swagger.io/v2/pets"
    row = {
        "index": 0,
        "api": "petstore",
        "task": "List 5 pets.",
        "spec": str(spec),
        "config": {"method": "get", "url": url, "params": {"limit": 5}},
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(row))
    track = WebApiTrack(WebApiOptions(tasks_file=str(tasks)))
    try:
        (sample,) = track.load_samples()
        # completion mode: the prompt ends in `axios.`, the output goes on from there
        hostile = (
            "constructor;\n"
            f"Reflect.apply(axios.get, axios, ['{url}', {{ params: {{ limit: 5 }} }}, arguments[arguments.length - 1]]);\n"
            f"axios.delete('{url}/1');"
        )
        res = track.evaluate(sample, ModelOutput(text=hostile, mode="completion"))
        assert res.verdicts["strict"].get("sample") != "correct"
        assert "did not come from the extracted axios call" in (res.error or "")
        honest = f"get('{url}', {{ params: {{ limit: 5 }} }});"
        ok = track.evaluate(sample, ModelOutput(text=honest, mode="completion"))
        assert ok.status == "ok" and ok.verdicts["strict"]["sample"] == "correct"
    finally:
        track.close()


# A function put in place of axios.delete keeps the token; once the picked call has returned,
# a function made to read like the call's frame (its script named like the sample's own by a
# sourceURL comment, its name and the position of its axios call copied from the stack) is
# called from the very place the function holding the picked call was.
MIMIC = r"""//# sourceURL=app.js
const real = axios.get;
let tok, line;
axios.delete = function (u, t) { tok = t; line = new Error().stack.split('\n')[2]; return Promise.resolve({}); };
function makeT() {
  const m = line.match(/^    at (.*) \((.*):(\d+):(\d+)\)$/);
  const L = Number(m[3]), C = Number(m[4]);
  const body = 'return function () {' + '\n'.repeat(L - 3) + ' '.repeat(C - 1) +
    "real('GOLD', tok); };\n//# sourceURL=" + m[2];
  const T = Function('real', 'tok', body)(real, tok);
  Object.defineProperty(T, 'name', { value: m[1] });
  return T;
}
function runner() {
  for (let i = 0; i < 2; i++) {
    try { (i === 0 ? site : makeT())(); } catch (e) { console.log('blocked: ' + e.name + ': ' + e.message); }
  }
}
runner();
function site() { return axios.delete('WRONG'); }
""".replace("GOLD", GOLD).replace("WRONG", WRONG)


def test_a_frame_made_to_read_like_the_call_is_refused(sb):
    r = sb.run(MIMIC)
    assert_gold_not_scored(r)
    assert r.requests == []  # the look-alike was never made
    assert any("blocked: SyntaxError" in line and "sourceURL" in line for line in r.console), r.console


def test_code_made_at_run_time_works_without_a_script_name(sb):
    r = sb.run(
        "const add = new Function('a', 'b', 'return a + b');\n"
        "const AsyncFn = Object.getPrototypeOf(async function () {}).constructor;\n"
        "const fetchLater = new AsyncFn('return 4');\n"
        f"axios.get('{GOLD}', {{ params: {{ s: add(1, 2), f: add instanceof Function, "
        "c: (function () {}).constructor === Function, a: fetchLater instanceof AsyncFn } });"
    )
    assert r.status == "ok", r.error
    assert r.request["params"] == {"s": 3, "f": True, "c": True, "a": True}
