"""Rows that contradict their spec do not abort a run (issue 14, part 5): the good rows run, the
bad ones are listed with file, row and reason in summary.json and the report; --strict-data fails
instead; a spec that cannot be parsed fails in one line naming the file and the place."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app

PETS = "https://petstore.swagger.io/v2/pets"


def _rows(spec: Path) -> list[dict]:
    def row(i: int, url: str, method: str = "get", **cfg) -> dict:
        return {"index": i, "api": "petstore", "task": f"task {i}", "spec": str(spec), "config": {"method": method, "url": url, **cfg}}

    return [
        row(0, PETS, params={"limit": 5}),  # good
        row(1, "https://petstore.swagger.io/v2/owners"),  # matches no path
        row(2, PETS, params={"colour": "red"}),  # an argument the spec lacks
        row(3, PETS, method="put"),  # a method the path lacks
        {**row(4, PETS, params={"colour": "red"}), "vetted": True},  # checked by hand and kept
        row(5, f"{PETS}/7"),  # good
    ]


def _tasks(tmp_path: Path, data_root: Path) -> Path:
    spec = data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(r) for r in _rows(spec)) + "\n")
    return tasks


def test_bad_rows_are_skipped_and_listed(tmp_path: Path, data_root: Path):
    tasks = _tasks(tmp_path, data_root)
    out = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(tasks))
    s = out.summary
    assert s["n"] == 3 and s["metrics"]["correct_implementations_t"] == 1.0  # rows 0, 4 (vetted), 5
    findings = {f["row"]: f for f in s["data_findings"]}
    assert set(findings) == {1, 2, 3, 4}
    assert all(f["file"] == str(tasks) for f in findings.values())
    assert "matches no path" in findings[1]["reason"] and findings[1]["action"] == "skipped"
    assert "config.params.colour: not an argument" in findings[2]["reason"]
    assert "PUT is not defined" in findings[3]["reason"] and "GET" in findings[3]["reason"]
    assert findings[4]["action"] == "kept (vetted)"
    stored = json.loads((out.run_dir / "config.json").read_text())
    assert len(stored["data_findings"]) == 4
    # a second load reads the cached findings: the same list
    again = run("webapi", "gold", out_dir=tmp_path / "runs2", tasks_file=str(tasks))
    assert again.summary["data_findings"] == s["data_findings"]
    # the report lists them
    r = CliRunner().invoke(app, ["report", str(out.run_dir)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "3 row(s) of the data set skipped" in flat and "1 sample(s) of this run kept with findings" in flat
    assert "tasks.jsonl row 4 (petstore_4)" in flat and "row 1 (petstore_1)" not in flat  # skipped: no sample
    assert str(tasks) not in flat  # the file's name, not its absolute path
    # a report of samples without findings lists none (issue 31: a 5-sample report listed a
    # finding of a task not in the run)
    few = run("webapi", "gold", out_dir=tmp_path / "runs3", tasks_file=str(tasks), ids=["petstore_0"])
    r = CliRunner().invoke(app, ["report", str(few.run_dir)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "petstore_4" not in flat and "0 sample(s) of this run kept with findings" in flat


def test_strict_data_fails_on_the_first_bad_row(tmp_path: Path, data_root: Path, one_line_error):
    tasks = _tasks(tmp_path, data_root)
    r = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--tasks", str(tasks), "--strict-data", "--out", str(tmp_path / "runs"), "--no-progress"]
    )
    one_line_error(r, str(tasks), "[1]", "matches no path", "--strict-data")


def test_unparseable_spec_is_one_line(tmp_path: Path, one_line_error):
    spec = tmp_path / "broken.yaml"
    spec.write_text("openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get: [unclosed\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"index": 0, "api": "x", "task": "t", "spec": str(spec), "config": {"method": "get", "url": "https://x.test/a"}}) + "\n")
    r = CliRunner().invoke(app, ["run", "webapi", "--model", "gold", "--tasks", str(tasks), "--out", str(tmp_path / "runs"), "--no-progress"])
    one_line_error(r, "broken.yaml", "line 6", "YAML syntax error")
    spec.write_text("openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get: [1, 2]\n")  # YAML, not OpenAPI
    r = CliRunner().invoke(app, ["run", "webapi", "--model", "gold", "--tasks", str(tasks), "--out", str(tmp_path / "runs"), "--no-progress"])
    one_line_error(r, "broken.yaml", "get")
