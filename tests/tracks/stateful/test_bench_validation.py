"""A stateful benchmark file is checked field by field when it loads (issue 28, items 3 and 6):
an unknown field, a value of the wrong type, an expected run that is not ``ok``, a service seed the
scenario's service cannot take, a text that cannot be written as UTF-8 or a row nested too deep is a
one-line DataError naming the file, the task and the field -- not a run that scores silently wrong
or ends in a traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import DataError
from callbench.tracks.stateful.track import builtin_bench, load_bench


@pytest.fixture(scope="module")
def builtin_tasks() -> dict[str, dict]:
    """One built-in task per scenario (the built-in benchmark loads: every committed row is valid)."""
    tasks = load_bench(builtin_bench())
    assert len(tasks) == 120
    return {t["scenario"]: t for t in reversed(tasks)}


def _write(tmp_path: Path, *rows: dict | str) -> Path:
    f = tmp_path / "bench" / "tasks.jsonl"
    f.parent.mkdir(exist_ok=True)
    f.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return f


def _edited(task: dict, edit) -> dict:
    t = copy.deepcopy(task)
    edit(t)
    return t


def _set(path: str, value):
    """An edit that sets ``a.b[0].c`` (the last part may be new) to ``value``."""

    def edit(t: dict) -> None:
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        node = t
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    ("scenario", "edit", "needles"),
    [
        # accepted before: the judge never looks at the expected status
        ("session", _set("cases[0].expected.status", "bogus"), ["cases[0].expected.status: 'bogus' is not 'ok'"]),
        # accepted before: the session service failed on it in every case, the gold program too
        ("session", _set("cases[0].service_seed", "abc"), ["cases[0].service_seed", "list of sessions", "not a str"]),
        ("session", _set("cases[1].service_seed", [{"source": "web"}]), ["cases[1].service_seed: seed #1 lacks ['data', 'type']"]),
        ("voice", _set("cases[0].service_seed", "abc"), ["cases[0].service_seed", "snapshot object (or null), not a str"]),
        ("session", _set("difficulty", "hard"), ["difficulty: unknown field (known: agents, answer, cases"]),
        ("session", _set("cases[0].note", 1), ["cases[0].note: unknown field (known: expected, name, preload, service_seed)"]),
        ("session", _set("cases[0].expected.writes", -1), ["cases[0].expected.writes: input should be greater than or equal to 0"]),
        ("session", _set("cases[0].expected.result_set", "yes"), ["cases[0].expected.result_set: input should be a valid boolean"]),
        ("session", _set("seed", True), ["seed: input should be a valid integer, got true"]),
        ("tensor", _set("tolerance", [0.1]), ["tolerance: list should have at least 2 items"]),
        ("tensor", _set("tolerance", [0.1, -1]), ["tolerance[1]: input should be greater than or equal to 0"]),
        ("voice", _set("unordered_result", 1), ["unordered_result: input should be a valid boolean"]),
        ("voice", _set("text", 7), ["text: input should be a valid string, got 7"]),
        ("voice", _set("inputs", {"query_1": 3}), ["inputs.query_1: input should be a valid string"]),
        ("voice", _set("result_var", "the result"), ["result_var: 'the result' is not a Python variable name"]),
        ("voice", _set("cases", []), ["field 'cases' must be a non-empty list"]),
        ("voice", _set("cases[0].name", ""), ["cases[0].name: string should have at least 1 character"]),
        # a lone surrogate (JSON's "\ud800") used to end the run when the prompt was stored
        ("voice", _set("text", "Say \ud800 hello"), ["text: contains a lone surrogate (U+D800 at character 4)"]),
        ("session", _set("cases[0].preload", {"x\udfff": 1}), ["cases[0].preload (a key): contains a lone surrogate"]),
    ],
)
def test_bad_fields_are_one_line_errors_naming_task_and_field(tmp_path, builtin_tasks, scenario, edit, needles):
    task = builtin_tasks[scenario]
    f = _write(tmp_path, _edited(task, edit))
    with pytest.raises(DataError) as exc:
        load_bench(f.parent)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{f}: task {task['id']}: "), line
    for needle in needles:
        assert needle in line, line


def test_rows_nested_too_deep_are_the_lines_error(tmp_path, builtin_tasks):
    deep = '{"id": "x", "preload": ' + "[" * 100_000 + "]" * 100_000 + "}"
    f = _write(tmp_path, builtin_tasks["voice"], deep)
    with pytest.raises(DataError, match=r"tasks.jsonl:2: nested deeper than 200 levels"):
        load_bench(f.parent)


def test_the_valid_fields_still_load(tmp_path, builtin_tasks):
    """Every optional field a generator or the published conversion writes is accepted."""
    extra = {"doc": "the API", "result_epilogue": "result = result\n", "tolerance": [0, 0.01], "unordered_result": True,
             "source": {"benchmark": "x"}, "answer": "text", "schema": 1, "seed": 3}
    t = {**builtin_tasks["voice"], **extra}
    t["cases"][0]["service_seed"] = {"voices": []}
    f = _write(tmp_path, t)
    (loaded,) = load_bench(f.parent)
    assert loaded["tolerance"] == [0, 0.01] and loaded["cases"][0]["service_seed"] == {"voices": []}


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (_set("text", "Say \ud800 hello"), "text: contains a lone surrogate"),
        (_set("cases[0].expected.status", "bogus"), "cases[0].expected.status: 'bogus' is not 'ok'"),
    ],
)
def test_run_stateful_refuses_the_bench_in_one_line(tmp_path, builtin_tasks, edit, needle, one_line_error):
    f = _write(tmp_path, _edited(builtin_tasks["voice"], edit))
    res = CliRunner().invoke(app, ["run", "stateful", "--model", "gold", "--bench", str(f.parent),
                                   "--out", str(tmp_path / "runs"), "--no-progress"])
    one_line_error(res, str(f), needle)
