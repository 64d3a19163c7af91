"""``callbench generate webapi`` and ``callbench audit webapi`` on the command line (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app

SPEC = """
openapi: 3.0.3
info: {title: Tiny Todo, version: '1'}
servers: [{url: 'https://todo.example'}]
components:
  securitySchemes:
    key: {type: apiKey, in: query, name: api_key}
security: [{key: []}]
paths:
  /todos:
    get:
      operationId: listTodos
      summary: List todos.
      parameters:
        - {name: done, in: query, schema: {type: boolean}}
        - {name: page, in: query, schema: {type: integer, minimum: 1}}
    post:
      operationId: addTodo
      summary: Add a todo.
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [text], properties: {text: {type: string}, due: {type: string, format: date}}}
  /todos/{todoId}:
    delete:
      operationId: deleteTodo
      summary: Delete a todo.
      parameters:
        - {name: todoId, in: path, required: true, schema: {type: integer}}
"""

runner = CliRunner()


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    p = tmp_path / "todo.yaml"
    p.write_text(SPEC)
    return p


def test_generate_then_run_gold(spec_file: Path, tmp_path: Path):
    out = tmp_path / "bench"
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "9", "--seed", "1", "--starter", "mixed",
                              "--difficulty", "hard", "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "9 rows (9 gold requests over 3 of 3 operations)" in res.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["options"]["seed"] == 1 and m["options"]["difficulty"] == "hard" and m["spec"] == "../todo.yaml"
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert all(r["config"]["params"]["api_key"] == "<key>" for r in rows if "params" in r["config"])
    run = runner.invoke(app, ["run", "webapi", "--tasks", str(out / "tasks.jsonl"), "--model", "gold", "--out", str(tmp_path / "runs"),
                              "--no-progress"], env={"COLUMNS": "200"})
    assert run.exit_code == 0, run.output
    summary = json.loads(next((tmp_path / "runs").glob("*/summary.json")).read_text())
    assert summary["n"] == 9 and summary["metrics"]["correct_implementations_t"] == 1.0


def test_fewer_rows_than_asked_exits_1(spec_file: Path, tmp_path: Path):
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "5", "--operations", "deleteTodo",
                              "--difficulty", "easy", "--out", str(tmp_path / "b")])
    # one operation, one path parameter: five distinct ids are found, so this still succeeds ...
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "5", "--operations", "listTodos",
                              "--difficulty", "easy", "--out", str(tmp_path / "c")])
    # ... but an easy listTodos has exactly one request
    assert res.exit_code == 1, res.output
    assert "only 1 of 5 gold requests" in res.output
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert m["n_gold"] == 1 and m["dropped"] == {"duplicate": 3} and m["operations"]["excluded"] == ["GET /todos"]


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--difficulty", "brutal"], ("--difficulty brutal", "easy, medium, hard, mixed")),
        (["--starter", "lambda"], ("--starter lambda", "plain, function, method, mixed")),
        (["--paraphrases", "2"], ("--paraphrases > 1 needs --writer",)),
        (["--reviewer", "gold"], ("--reviewer needs --writer",)),
        (["--operations", "nope"], ("'nope' names no operation",)),
        (["--test-share", "1.5"], ("--test-share 1.5",)),
    ],
)
def test_bad_options_are_one_line(spec_file: Path, tmp_path: Path, one_line_error, args, needles):
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--out", str(tmp_path / "x"), *args], env={"COLUMNS": "300"})
    one_line_error(res, *needles)


def test_bad_spec_is_one_line(tmp_path: Path, one_line_error):
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "x")], env={"COLUMNS": "300"})
    one_line_error(res, "missing.yaml", "no such file")
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: 3.0.0\npaths: [1, 2\n")
    res = runner.invoke(app, ["generate", "webapi", "--spec", str(broken), "--out", str(tmp_path / "x")], env={"COLUMNS": "300"})
    one_line_error(res, "broken.yaml")


def test_help_explains():
    res = runner.invoke(app, ["generate", "webapi", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "every operation once before any twice" in res.output.lower()
    res = runner.invoke(app, ["audit", "webapi", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "schema_violation" in res.output
