"""When compat scoring follows the published scorer: only where that scorer can read the task.
It asserts that a task's expected URL names a path by its own rules (the server prefix removed,
then the path patterns), so a spec whose server ends in '/' (Google's directory specs:
``https://translation.googleapis.com/``) leaves it no path; compat then compares the request
callbench's run recorded instead of aborting the run (webapi_synthesis aborted on it)."""

from __future__ import annotations

import json
from pathlib import Path

from callbench.api import run
from callbench.specs import build_spec
from callbench.tracks.webapi import upstream_scorer
from callbench.tracks.webapi.dataset import WebApiTask

OK = {"200": {"description": "ok"}}


def _spec(server: str):
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server}],
        "paths": {"/v1/{name}/operations": {"get": {"parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}], "responses": OK}}},
    }
    return doc, build_spec(doc, Path("/t/openapi.json"), "t.json")


def test_the_published_scorer_applies_only_where_it_reads_the_expected_url():
    task = WebApiTask(index=0, api="t", task="List.", config={"method": "get", "url": "https://api.t.io/v1/x/operations"})
    assert upstream_scorer.applies(task, _spec("https://api.t.io")[1])
    assert not upstream_scorer.applies(task, _spec("https://api.t.io/")[1])  # no path is left to match


def test_a_compat_run_on_a_trailing_slash_server_scores_instead_of_aborting(tmp_path):
    doc, _ = _spec("https://api.t.io/")
    (tmp_path / "t.json").write_text(json.dumps(doc))
    row = {"index": 0, "api": "t", "task": "List the operations of x.", "spec": "t.json",
           "config": {"method": "get", "url": "https://api.t.io/v1/Maria%20Patel/operations"}}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(row) + "\n")
    for setup in ("full", "args"):
        out = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(tasks), setup=setup, scoring="compat")
        assert out.summary["metrics"]["correct_implementations_t"] == 1.0, out.summary
