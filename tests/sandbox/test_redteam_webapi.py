"""Red-team samples against the web API track's V8 sandbox, extractor and spec matcher.

Each test feeds hostile model output (or a hostile spec) and checks that it is contained:
it cannot score by leaving work behind, changing shared state, reaching the recorder, making
the extractor and V8 disagree about the scored call, stalling extraction, or hanging the
path matcher.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from py_mini_racer import MiniRacer

from callbench.sandbox import JsSandbox
from callbench.sandbox._engine import harness_source, standin_source
from callbench.sandbox.js_extract import MAX_CODE_CHARS, extract_invocation
from callbench.specs import load_spec
from callbench.specs.openapi import _Pieces

GOLD = "https://api.example.com/v1/items"
WRONG = "https://api.example.com/v1/WRONG"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=1.0, kill_grace_s=1.0) as s:
        yield s


def gold_ok(sb: JsSandbox, n: int = 3) -> None:
    for i in range(n):
        r = sb.run(f"axios.get('{GOLD}', {{ params: {{ page: {i} }} }});")
        assert r.status == "ok", (r.status, r.error)
        assert r.request is not None and r.request["url"] == GOLD and r.request["params"] == {"page": i}


# ----------------------------------------------------------------------------- 1. microtasks

# Ways to reach Promise without writing an async keyword or `.then`.
PROMISE = [
    "globalThis['Prom' + 'ise']",
    "Function('return Prom' + 'ise')()",
    "Object.getPrototypeOf(Function('return (as' + 'ync () => {})')()()).constructor",
]


@pytest.mark.parametrize("promise", PROMISE)
def test_endless_microtasks_are_charged_to_the_sample_that_queued_them(sb, promise):
    hostile = f"const P = {promise};\nconst spin = () => {{ P.resolve()['then'](spin); }};\nspin();\naxios.get('{GOLD}');"
    r = sb.run(hostile)
    # its jobs must run before its result is taken: it never finishes, so it cannot score
    assert r.status == "timeout" and r.request is None
    gold_ok(sb)  # and nothing it queued runs during the samples after it


def test_jobs_queued_without_async_keywords_run_before_the_result(sb):
    code = (
        "const P = globalThis['Prom' + 'ise'];\n"
        "const cfg = { params: { a: 1 } };\n"
        "let n = 0;\n"
        f"axios.get('{GOLD}', cfg), P.resolve()['then'](function later() {{\n"
        "  if (++n < 50) { P.resolve()['then'](later); return; }\n"
        f"  cfg.params.a = 2; console.log('late'); axios.delete('{WRONG}');\n"
        "});"
    )
    r = sb.run(code)
    assert r.status == "ok"
    # the late job is part of this sample's result, and cannot rewrite the request already recorded
    assert [q["url"] for q in r.requests] == [GOLD, WRONG]
    assert r.request["params"] == {"a": 1}
    assert r.console == ["late"]
    gold_ok(sb)


# ----------------------------------------------------------------------------- 2. shared regexes


def test_regexp_compile_is_removed(sb):
    r = sb.run(
        f"axios.get('{GOLD}', {{ params: {{ t: typeof RegExp.prototype.compile, c: 'compile' in /x/ }} }});"
    )
    assert r.status == "ok"
    assert r.request["params"] == {"t": "undefined", "c": False}


def test_form_bodies_stay_right_after_a_regex_rewrite_attempt(sb):
    hostile = (
        "const shared = (globalThis.__callbenchStandin || { shared: [] }).shared;\n"
        "for (const x of shared) if (x instanceof RegExp) { try { x.compile('^$'); } catch (e) {} }\n"
        "try { /a/.compile('b'); } catch (e) {}\n"
        f"axios.get('{GOLD}');"
    )
    sb.run(hostile)
    form = f"axios.post('{GOLD}', 'a=b%3Dc&d=1', {{ headers: {{ 'Content-Type': '{FORM}' }} }});"
    for _ in range(150):
        r = sb.run(form)
        assert r.status == "ok" and r.request["data"] == {"a": "b=c", "d": "1"}


def _lockdown_with_backdoor() -> MiniRacer:
    """A locked-down context in which the test (not a sample) kept the shared regexes and
    RegExp.prototype.compile from before the lockdown: as if a sample had reached both."""
    mr = MiniRacer()
    mr.eval(standin_source() + "\n" + harness_source())
    mr.eval(
        "const R = __callbench;\n"
        "const SHARED = __callbenchStandin.shared.filter(x => x instanceof RegExp);\n"
        "const COMPILE = RegExp.prototype.compile;"
    )
    mr.eval("__callbenchLockdown({})")
    return mr


def _run_in(mr: MiniRacer, code: str) -> dict:
    mr.eval(f"R.start({json.dumps(code)}, null, [], {{}}, null)")
    return json.loads(mr.eval("R.settle()"))


def test_integrity_check_catches_a_rewritten_shared_regex():
    mr = _lockdown_with_backdoor()
    try:
        form = f"axios.post('{GOLD}', 'a=1', {{ headers: {{ 'Content-Type': '{FORM}' }} }})"
        before = _run_in(mr, form)
        assert before["intact"] is True
        assert before["requests"][0]["data"] == {"a": "1"}
        assert mr.eval("SHARED.length") >= 2
        mr.eval("for (const r of SHARED) { try { COMPILE.call(r, '^$'); } catch (e) {} }")
        after = _run_in(mr, form)
        assert after["intact"] is False
        assert after["damage"] == "a shared regex was changed"
    finally:
        mr.close()


def test_lockdown_shares_no_unchecked_internal_state():
    with JsSandbox() as s:
        info = s.start().worker_info["lockdown"]
    assert info["regexes"] >= 2  # URL_RE, FORM_RE (and the harness's own) are fingerprinted
    assert info["internal_state"] == []  # no shared Map/Set/Date/buffer a freeze leaves mutable
    assert info["unfrozen"] == []


# ----------------------------------------------------------------------------- 3. the recorder


def test_sample_cannot_start_a_run_of_its_own(sb):
    code = f"__callbench.start(\"axios.get('{GOLD}')\", null, [], {{}}, false);\naxios.delete('{WRONG}');"
    r = sb.run(code)
    # whatever is scored must be what this sample did, never the injected run's request
    assert all(q["url"] != GOLD for q in r.requests)
    assert r.status == "runtime_error" and "__callbench is not defined" in (r.error or "")
    gold_ok(sb)


@pytest.mark.parametrize(
    "reach",
    [
        "globalThis.__callbench",
        "Function('return this')().__callbench",
        "global['__callbench' + 'Standin']",
        "globalThis.__callbenchLockdown",
    ],
)
def test_runner_and_standin_are_not_on_the_global_object(sb, reach):
    code = (
        "const names = Object.getOwnPropertyNames(globalThis).filter(n => /callbench/i.test(n)).join(',') || 'none';\n"
        f"axios.get('{GOLD}', {{ params: {{ names, reached: typeof ({reach}) }} }});"
    )
    r = sb.run(code)
    assert r.status == "ok"
    assert r.request["params"] == {"names": "none", "reached": "undefined"}


# ----------------------------------------------------------------------------- 4. extractor vs V8


@pytest.mark.parametrize(
    "code",
    [
        f"\\u0061xios.get('{WRONG}');\naxios.get('{GOLD}');",  # escape in an identifier: the same binding in V8
        f"\\u{{61}}xios.get('{WRONG}');\naxios.get('{GOLD}');",
        f"const \u0430xios = axios;\n\u0430xios.get('{WRONG}');\naxios.get('{GOLD}');",  # Cyrillic а alias
        f"const client = axios;\nclient['get']('{WRONG}');\naxios.get('{GOLD}');",
    ],
)
def test_extractor_sees_the_call_v8_makes_first(sb, code):
    ex = extract_invocation(code)
    r = sb.run(code)
    assert r.status == "ok", r.error
    assert r.request["url"] == WRONG
    assert ex.call_text is not None and WRONG in ex.call_text  # the stored call is the scored one


@pytest.mark.parametrize(
    "code",
    [
        f"const ax = require('ax' + 'ios');\nax.get('{WRONG}');\naxios.get('{GOLD}');",
        f"const {{ get }} = axios;\nget('{WRONG}');\naxios.get('{GOLD}');",
        f"axios.get('{GOLD}', {{ params: {{ x: (axios.delete('{WRONG}'), 1) }} }});",
        f"[axios][0].delete('{WRONG}');\naxios.get('{GOLD}');",
    ],
)
def test_first_request_from_another_call_is_rejected(sb, code):
    r = sb.run(code)
    assert r.status == "rejected"
    assert r.request is None
    assert r.error is not None and "did not come from the extracted axios call" in r.error
    assert f"'{GOLD}'" in r.error  # names the call the extractor picked
    assert [q["url"] for q in r.requests][0] == WRONG  # kept for inspection, not scored


def test_rejected_sample_gets_an_error_verdict_in_the_track(tmp_path, data_root):
    from callbench.models.base import ModelOutput
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    spec = data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
    row = {
        "index": 0,
        "api": "petstore",
        "task": "List 5 pets.",
        "spec": str(spec),
        "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets", "params": {"limit": 5}},
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(row))
    track = WebApiTrack(WebApiOptions(tasks_file=str(tasks)))
    try:
        (sample,) = track.load_samples()
        hostile = (
            "get('https://petstore.swagger.io/v2/pets', { params: { limit: 5, x: "
            "(require('ax' + 'ios').delete('https://petstore.swagger.io/v2/pets/1'), undefined) } });"
        )
        res = track.evaluate(sample, ModelOutput(text=hostile, mode="completion"))
        assert res.status == "runtime_error"
        assert "did not come from the extracted axios call" in res.error
        assert res.verdicts["strict"]["error"] == "runtime_error"
        honest = "get('https://petstore.swagger.io/v2/pets', { params: { limit: 5 } });"
        ok = track.evaluate(sample, ModelOutput(text=honest, mode="completion"))
        assert ok.status == "ok" and ok.verdicts["strict"]["sample"] == "correct"
    finally:
        track.close()


# ----------------------------------------------------------------------------- 5. extraction budget


def test_thirty_thousand_nested_braces_are_rejected_as_such(sb):
    code = "{" * 30_000 + f"axios.get('{GOLD}');" + "}" * 30_000
    ex = extract_invocation(code)
    assert ex.status == "rejected" and "nested more than" in (ex.error or "")
    r = sb.run(code)
    assert r.status == "rejected" and "nested more than" in (r.error or "")
    r = sb.run(code, extract=False)  # the budget holds for code run as-is too
    assert r.status == "rejected"


def test_oversized_code_is_rejected_as_such(sb):
    code = f"axios.get('{GOLD}');\n" + "// padding\n" * (MAX_CODE_CHARS // 10)
    ex = extract_invocation(code)
    assert ex.status == "rejected" and "characters long" in (ex.error or "")
    assert sb.run(code).status == "rejected"


@pytest.mark.parametrize(
    ("code", "call"),
    [
        # a left-deep `+` chain puts the call 20,000 levels down: found without walking up parents
        (f"axios.get('{GOLD}')" + " + 1" * 20_000 + ";", f"axios.get('{GOLD}')"),
        # 10,000 chained create() calls: decided in one pass, not by recursion
        (
            "axios" + ".create()" * 10_000 + f".get('{GOLD}');",
            "axios" + ".create()" * 10_000 + f".get('{GOLD}')",
        ),
        # a 11,000-link .then chain on the invocation: callee roots are looked up once each
        (
            f"async function main() {{ await axios.get('{GOLD}'); }}\nmain()" + ".then(f)" * 11_000 + ";",
            f"axios.get('{GOLD}')",
        ),
    ],
    ids=["plus-chain", "create-chain", "then-chain"],
)
def test_long_chains_without_brackets_are_analysed(code, call):
    ex = extract_invocation(code)
    assert ex.status == "ok" and ex.call_text == call


# ----------------------------------------------------------------------------- 6. array bodies


@pytest.mark.parametrize(
    ("data_js", "expected"),
    [
        ("[1, 2]", [1, 2]),
        ("[{ id: 1, tags: ['a'] }]", [{"id": 1, "tags": ["a"]}]),
        ("JSON.stringify([true, null])", [True, None]),
        ("'[not json'", "[not json"),
    ],
)
def test_top_level_array_body_is_recorded_as_an_array(sb, data_js, expected):
    r = sb.run(f"axios.post('{GOLD}', {data_js});")
    assert r.status == "ok" and r.request["data"] == expected


def test_array_body_scores_against_an_array_body(sb, tmp_path):
    from callbench.tracks.webapi.scoring import compare_requests

    f = tmp_path / "items.yaml"
    f.write_text(
        "openapi: 3.0.0\ninfo: {title: items, version: '1'}\nservers: [{url: 'https://api.example.com/v1'}]\n"
        "paths:\n  /items:\n    post:\n      requestBody:\n        content:\n          application/json:\n"
        "            schema: {type: array, items: {type: integer}}\n      responses: {'200': {description: ok}}\n"
    )
    spec = load_spec(f)
    expected = {"method": "post", "url": GOLD, "data": [1, 2]}
    recorded = sb.run(f"axios.post('{GOLD}', [1, 2]);").request
    assert compare_requests(expected, recorded, spec).sample == "correct"
    assert compare_requests(expected, {**recorded, "data": "[1,2]"}, spec).sample != "correct"


# ----------------------------------------------------------------------------- 7. spec path matching

SPEC = """openapi: 3.0.0
info: {{title: hostile, version: '1'}}
servers:
  - url: https://{host}.example.com/v1
paths:
  {path}:
    get:
      responses: {{'200': {{description: ok}}}}
"""
LETTERS = [f"p{i}" for i in range(30)]


def _spec(tmp_path, path: str, host: str = "api"):
    f = tmp_path / "hostile.yaml"
    f.write_text(SPEC.format(path=json.dumps(path), host=host))
    return load_spec(f)


@pytest.mark.timeout(60)  # a hang guard only: matching is linear by construction
def test_thirty_adjacent_parameters_in_one_segment(tmp_path):
    template = "/x/" + "".join("{" + p + "}" for p in LETTERS) + ".json"
    spec = _spec(tmp_path, template)
    assert spec.match_paths("https://api.example.com/v1/x/" + "a" * 5_000) == []  # no ".json": no match
    (m,) = spec.match_paths("https://api.example.com/v1/x/" + "b" * 40 + ".json")
    assert m.template == template
    assert m.path_params == {**{p: "b" for p in LETTERS[1:]}, "p0": "b" * 11}  # greedy, as a regex would


@pytest.mark.timeout(60)
def test_thirty_dash_separated_parameters(tmp_path):
    template = "/x/" + "-".join("{" + p + "}" for p in LETTERS) + ".json"
    spec = _spec(tmp_path, template)
    # many ways to split and no ".json" at the end: what keeps a backtracking regex busy for minutes
    assert spec.match_paths("https://api.example.com/v1/x/" + "a-" * 40 + "!") == []
    assert (
        spec.match_paths("https://api.example.com/v1/x/" + "-".join(["a"] * 29) + ".json") == []
    )  # a dash short
    (m,) = spec.match_paths("https://api.example.com/v1/x/" + "a-" * 40 + "!.json")
    assert m.path_params["p0"] == "-".join(["a"] * 12)  # greedy, as a regex would
    assert [m.path_params[p] for p in LETTERS[1:]] == ["a"] * 28 + ["!"]


@pytest.mark.timeout(60)
def test_many_server_variables_in_the_host(tmp_path):
    host = "".join("{" + p + "}" for p in LETTERS) + "-api"
    spec = _spec(tmp_path, "/items", host=host)
    assert spec.match_paths("https://" + "a" * 3_000 + ".example.com/v1/items") == []  # no "-api": other host
    assert [m.template for m in spec.match_paths("https://" + "a" * 40 + "-api.example.com/v1/items")] == [
        "/items"
    ]


def test_piece_matching_agrees_with_the_greedy_regex():
    rng = random.Random(7)
    for _ in range(3_000):
        lits = tuple(
            "".join(rng.choice("ab-.") for _ in range(rng.randint(0, 2))) for _ in range(rng.randint(1, 5))
        )
        text = "".join(rng.choice("ab-.") for _ in range(rng.randint(0, 10)))
        for min_len, group in ((1, "(.+)"), (0, "(.*)")):
            m = re.fullmatch(group.join(re.escape(p) for p in lits), text, re.DOTALL)
            assert _Pieces(lits, min_len).fullmatch(text) == (None if m is None else m.groups()), (lits, text)


@pytest.mark.timeout(60)  # the old matcher took minutes here; a hang must fail, not stall CI
def test_grammar_over_a_spec_with_thirty_parameters_in_one_segment_builds():
    """The CD grammar's shadowing check matched templates with one ``.+`` regex per variable:
    30 variables in a segment against a 40-character literal segment took ~20 s (and a failing
    match far longer). It must now be linear."""
    pytest.importorskip("llguidance")
    from callbench.constrain import GrammarOptions, build_webapi_grammar
    from callbench.constrain.webapi_grammar import clear_grammar_cache
    from callbench.specs import build_spec

    names = [f"p{i}" for i in range(30)]
    hostile = "/x/" + "".join("{" + n + "}" for n in names)
    literal = "/x/" + "y" * 40 + "/"
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]
    spec = build_spec(
        {
            "openapi": "3.0.0",
            "info": {"title": "hostile", "version": "1"},
            "servers": [{"url": "https://h.example.com"}],
            "paths": {
                hostile: {"get": {"parameters": params, "responses": {"200": {"description": "ok"}}}},
                literal.rstrip("/"): {"get": {"responses": {"200": {"description": "ok"}}}},
                "/x/" + "z" * 45: {"get": {"responses": {"200": {"description": "ok"}}}},
            },
        },
        Path("hostile.json"),
    )
    clear_grammar_cache()
    # the shadowing cut's literal check no longer backtracks over the 30 holes (took 40 s); the
    # time is a figure of benchmarks/bounded_work_timings.py (grammar/thirty_parameters), the timeout above catches a hang
    grammar = build_webapi_grammar(spec, setup="full", options=GrammarOptions())
    assert grammar
    from callbench.constrain import check_continuation

    assert check_continuation(spec, "get('https://h.example.com" + literal.rstrip("/") + "')").allowed
    assert check_continuation(spec, "get('https://h.example.com/x/" + "a" * 30 + "')").allowed


def test_brackets_in_strings_and_comments_do_not_count_toward_the_nesting_budget():
    """A URL may hold any number of "(" or "[" (random walks under CD write such strings): the
    nesting budget must only count code."""
    from callbench.sandbox.js_extract import budget_error

    data = "[[our(" * 300
    assert budget_error(f"axios.get('https://x.example.com/{data}', {{params: {{q: \"{data}\"}}}}) // {data}") is None
    assert budget_error(f"axios.get(`/{data}`) /* {data} */") is None
    assert budget_error("(" * 300 + ")" * 300) is not None
