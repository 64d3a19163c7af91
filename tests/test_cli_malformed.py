"""Inputs that used to run silently wrong (an empty task file scored as a complete run of 0 tasks,
``--ids ,,,`` running all 395) or crash: each must be a one-line error naming the file or option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import DataError
from callbench.tracks.nested.dataset import load_nested
from callbench.tracks.webapi.dataset import load_tasks

runner = CliRunner()

WEBAPI_ROW = {"index": 0, "api": "asana", "task": "List attachments",
              "config": {"method": "get", "url": "https://app.asana.com/api/1.0/attachments"}}
NESTED_ROW = {"sample_id": "a", "input": "2+3", "output": [{"name": "add", "label": "$var_1", "arguments": {"arg_0": 2}}],
              "tools": [{"name": "add", "parameters": {"arg_0": {}}}]}


def _run(tmp_path, *args):
    return runner.invoke(app, [*map(str, args), "--out", str(tmp_path / "runs"), "--no-progress"])


def _file(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


# -- task files that hold no tasks ------------------------------------------------------------------

EMPTY_FILES = {
    "empty.json": "",
    "empty.jsonl": "",
    "blank.jsonl": "\n  \n\t\n",
    "list.json": "[]",
    "per_api.json": '{"api": "asana", "samples": []}',
}


@pytest.mark.parametrize("name", sorted(EMPTY_FILES))
def test_webapi_task_file_without_tasks(tmp_path, data_root, name, one_line_error):
    p = _file(tmp_path, name, EMPTY_FILES[name])
    res = _run(tmp_path, "run", "webapi", "--model", "gold", "--tasks", p, "--data", data_root)
    one_line_error(res, str(p), "no tasks")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("name", ["empty.json", "empty.jsonl", "blank.jsonl", "list.json"])
def test_nested_task_file_without_tasks(tmp_path, name, one_line_error):
    p = _file(tmp_path, name, EMPTY_FILES[name])
    res = _run(tmp_path, "run", "nested", "--model", "gold", "--data", p)
    one_line_error(res, str(p), "no tasks")


def test_stateful_bench_without_tasks(tmp_path, one_line_error):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "tasks.jsonl").write_text("")
    res = _run(tmp_path, "run", "stateful", "--model", "gold", "--bench", bench)
    one_line_error(res, "no samples")


# -- task files that are not text or not rows ----------------------------------------------------


@pytest.mark.parametrize(
    "name,content,needles",
    [
        ("bad.json", b"\xff\xfe[]", ["not UTF-8"]),
        ("bad.jsonl", b'{"index": 0}\n\xff\n', ["not UTF-8"]),
        ("deep.json", "[" * 100_000 + "]" * 100_000, ["nested deeper than 200 levels"]),
        # parses (under json's recursion limit) but would break every recursive walk after it
        ("deep.jsonl", json.dumps({**WEBAPI_ROW, "config": {"data": "X"}}).replace('"X"', "[" * 300 + "]" * 300) + "\n",
         [":1: nested deeper than 200 levels"]),
        ("rows.jsonl", "\n" + json.dumps(WEBAPI_ROW) + "\n\n[1, 2]\n", ["[1]: expected an object, got list", "line 4"]),
        ("rows.jsonl", json.dumps({k: v for k, v in WEBAPI_ROW.items() if k != "task"}) + "\n", ["[0].task", "line 1"]),
        ("rows.json", json.dumps([WEBAPI_ROW, "x"]), ["[1]: expected an object, got str"]),
        ("rows.json", json.dumps([{**WEBAPI_ROW, "config": {"url": "https://x"}}]), ["[0].config.method"]),
    ],
)
def test_webapi_malformed_task_file(tmp_path, data_root, name, content, needles, one_line_error):
    p = _file(tmp_path, name, content)
    res = _run(tmp_path, "run", "webapi", "--model", "gold", "--tasks", p, "--data", data_root)
    one_line_error(res, str(p), *needles)


@pytest.mark.parametrize(
    "name,content,needles",
    [
        ("bad.jsonl", b"\xff\n", ["not UTF-8"]),
        ("bad.json", b"[\xff]", ["not UTF-8"]),
        ("deep.json", "[" * 100_000 + "]" * 100_000, ["nested deeper than 200 levels"]),
        ("deep.jsonl", json.dumps({**NESTED_ROW, "gold_answer": "X"}).replace('"X"', "[" * 300 + "]" * 300) + "\n",
         [":1: nested deeper than 200 levels"]),
        ("rows.jsonl", "\n\n" + json.dumps(NESTED_ROW) + "\n\n5\n", ["[1]: expected an object, got int", "line 5"]),
        ("rows.jsonl", json.dumps({k: v for k, v in NESTED_ROW.items() if k != "input"}) + "\n", ["[0].input", "line 1"]),
        ("rows.json", json.dumps([NESTED_ROW, None]), ["[1]: expected an object, got NoneType"]),
    ],
)
def test_nested_malformed_task_file(tmp_path, name, content, needles, one_line_error):
    p = _file(tmp_path, name, content)
    res = _run(tmp_path, "run", "nested", "--model", "gold", "--data", p)
    one_line_error(res, str(p), *needles)


def test_loaders_raise_data_error_for_empty_files(tmp_path):
    for loader, name in ((load_tasks, "t.jsonl"), (load_nested, "n.jsonl")):
        p = _file(tmp_path, name, "\n\n")
        with pytest.raises(DataError, match="no tasks"):
            loader(p)


# -- options that select nothing, or nonsense ---------------------------------------------------------


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--ids", ",,,"], ["--ids", "no ids"]),
        (["--ids", ""], ["--ids", "no ids"]),
        (["--ids", " , "], ["--ids", "no ids"]),
        (["--api", ","], ["--api", "no "]),
        (["--ids", "asana_0,nope_1,nope_2"], ["--ids", "nope_1", "nope_2", "2 unknown"]),
        (["--api", "slack", "--ids", "asana_0"], ["select no samples"]),
        (["--limit", "0"], ["--limit must be >= 1"]),
        (["--limit", "-3"], ["--limit must be >= 1"]),
        (["--max-tokens", "0"], ["--max-tokens"]),
        (["--temperature", "-1"], ["--temperature"]),
        (["--temperature", "nan"], ["--temperature"]),
        (["--concurrency", "0"], ["--concurrency must be >= 1"]),
    ],
)
def test_webapi_bad_selection_is_one_line(tmp_path, data_root, args, needles, one_line_error):
    res = _run(tmp_path, "run", "webapi", "--model", "gold", "--limit", "1", *args, "--data", data_root)
    one_line_error(res, *needles)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("track", ["nested", "stateful"])
def test_other_tracks_empty_ids(tmp_path, track, one_line_error):
    res = _run(tmp_path, "run", track, "--model", "gold", "--limit", "1", "--ids", ",")
    one_line_error(res, "--ids", "no ids")


def test_nested_max_tokens_zero(tmp_path, one_line_error):
    res = _run(tmp_path, "run", "nested", "--model", "gold", "--max-tokens", "0", "--limit", "1")
    one_line_error(res, "--max-tokens")


def test_api_empty_id_list_is_an_error(tmp_path, data_root):
    from callbench.api import run
    from callbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--ids"):
        run("webapi", "gold", out_dir=tmp_path, ids=[], data=str(data_root))


def test_out_is_a_file(tmp_path, data_root, one_line_error):
    out = _file(tmp_path, "outfile", "x")
    res = runner.invoke(app, ["run", "webapi", "--model", "gold", "--limit", "1", "--out", str(out), "--no-progress",
                              "--data", str(data_root)])
    one_line_error(res, str(out))


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "", ".."])
def test_run_id_must_be_a_plain_name(tmp_path, data_root, run_id, one_line_error):
    res = runner.invoke(app, ["run", "webapi", "--model", "gold", "--limit", "1", "--run-id", run_id,
                              "--out", str(tmp_path / "runs" / "deep"), "--no-progress", "--data", str(data_root)])
    one_line_error(res, "--run-id")
    assert not (tmp_path / "escape").exists() and not (tmp_path / "runs").exists()


# -- other commands' input and output files -------------------------------------------------------


def test_generate_nested_out_is_a_directory(tmp_path, one_line_error):
    res = runner.invoke(app, ["generate", "nested", "--n", "2", "--out", str(tmp_path)])
    one_line_error(res, "--out", str(tmp_path), "cannot write")


def test_constrain_check_file_not_utf8(tmp_path, data_root, one_line_error):
    js = _file(tmp_path, "bin.js", b"\xff\xfeaxios.get()")
    res = runner.invoke(app, ["constrain", "webapi", "--spec", "slack", "--check", str(js), "--data", str(data_root)])
    one_line_error(res, "--check", str(js), "not UTF-8")


def test_coverage_json_is_a_directory(tmp_path, one_line_error):
    res = runner.invoke(app, ["coverage", "--scenario", "session", "--programs", "3", "--seeds", "1",
                              "--json", str(tmp_path), "--plot", str(tmp_path / "p.svg")])
    one_line_error(res, str(tmp_path), "cannot write")


def test_replay_file_that_is_not_utf8_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app

    bad = tmp_path / "preds.jsonl"
    bad.write_bytes(b'{"id": "x", "output": "\xff\xfe"}\n')
    r = CliRunner().invoke(app, ["run", "nested", "--model", f"replay:{bad}", "--out", str(tmp_path / "runs"), "--no-progress", "--limit", "1"])
    error = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert r.exit_code == 2 and len(error) == 1 and "not UTF-8" in error[0] and bad.name in error[0]
    assert "Traceback" not in r.output


def test_nested_sample_timeout_must_be_positive(tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app

    r = CliRunner().invoke(app, ["run", "nested", "--model", "gold", "--sample-timeout", "0", "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 2 and "--sample-timeout must be > 0" in r.output and not list(tmp_path.iterdir())
