"""Options and input files that used to be accepted without a word (issue 28, item 6) or took the
run down (item 3): each is a one-line error naming the option or the file and field."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.cli.options import parse_model_args
from callbench.errors import ConfigError, DataError
from callbench.models import load_model
from callbench.models.base import GenerationConfig, ModelInput

runner = CliRunner()


def _run(tmp_path, *args):
    return runner.invoke(app, [*map(str, args), "--out", str(tmp_path / "runs"), "--no-progress"])


# -- modes and backend options ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--mode", "telepathy"], ["--mode telepathy", "choose from auto, chat, completion"]),
        (["--mode", "chat", "--model-arg", "mode=completion"], ["--mode chat contradicts --model-arg mode=completion"]),
        # gold writes its reference as a completion: a chat mode used to be dropped silently
        (["--mode", "chat"], ["model 'gold'", "mode='chat'", "not one of auto, completion"]),
        (["--model-arg", "temperature=0.5"], ["model 'gold'", "unknown option(s) temperature", "known: mode"]),
    ],
)
def test_webapi_mode_and_model_args_are_checked(tmp_path, args, needles, one_line_error):
    res = _run(tmp_path, "run", "webapi", "--model", "gold", *args, "--data", tmp_path / "no-data")
    one_line_error(res, *needles)
    assert not (tmp_path / "runs").exists()


def test_stateful_unknown_model_arg_is_refused_before_the_run(tmp_path, one_line_error):
    res = _run(tmp_path, "run", "stateful", "--model", "gold", "--model-arg", "n_threads=2", "--limit", "1")
    one_line_error(res, "model 'gold'", "unknown option(s) n_threads", "(known: mode)")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("spec", "options", "needles"),
    [
        ("gold", {"top_k": 1}, ["model 'gold'", "top_k", "known: mode"]),
        ("replay:preds.jsonl", {"timeout": 3}, ["model 'replay'", "timeout", "known: none"]),
        ("replay:preds.jsonl", {"mode": "chat"}, ["model 'replay'", "each row of the file gives its own mode"]),
        ("openai:m@http://127.0.0.1:9/v1", {"mode": "telepathy"}, ["model 'openai'", "mode='telepathy'", "auto, chat, completion"]),
        ("openai:m@http://127.0.0.1:9/v1", {"temprature": 0}, ["model 'openai'", "temprature", "known: api_key"]),
        # checked before the optional package is imported: a typo is said even where it is missing
        ("llamacpp:x.gguf", {"mode": "telepathy"}, ["model 'llamacpp'", "mode='telepathy'"]),
        ("llamacpp:x.gguf", {"n_thread": 1}, ["model 'llamacpp'", "n_thread", "n_threads"]),
        ("hf:/nowhere", {"mode": "telepathy"}, ["model 'hf'", "mode='telepathy'"]),
        ("hf:/nowhere", {"bach_size": 2}, ["model 'hf'", "bach_size", "batch_size"]),
    ],
)
def test_every_backend_names_its_accepted_options(spec, options, needles):
    with pytest.raises(ConfigError) as exc:
        load_model(spec, **options)
    line = str(exc.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, line


def test_gold_accepts_its_one_mode():
    assert load_model("gold", mode="completion").mode == "completion"
    assert load_model("gold", mode="auto").mode == "completion"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["x=" + "[" * 100_000], "--model-arg x: nested deeper than"),
        (["x=" + "[" * 500 + "]" * 500], "--model-arg x: nested deeper than"),
        (["mode=chat", "mode=completion"], "--model-arg mode: given twice"),
    ],
)
def test_model_arg_values_are_bounded(items, message):
    with pytest.raises(ConfigError, match=message):
        parse_model_args(items)
    assert parse_model_args(["a=1", "b={\"k\": [1]}", "c=text"]) == {"a": 1, "b": {"k": [1]}, "c": "text"}


# -- replay files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        # the file's shape: what no single sample can own
        ('{"id": "a\\udfff", "output": "x"}', [":1.id: contains a lone surrogate"]),
        ('{"id": "a", "ouptut": "x", "output": "y"}', [":1.ouptut: unknown field", "known: code, id, index, mode, output"]),
        ('{"id": {"a": 1}, "output": "x"}', [":1.id: expected a string or an integer, got dict"]),
        ('{"id": "a", "output": "x"}\n{"index": "a", "output": "y"}', [":2.index: sample 'a' has an output on an earlier line"]),
        ('{"id": "a", "output": ' + "[" * 100_000 + "]" * 100_000 + "}\n" + '{"id": "a", "output": "x"}',
         [":2.id: sample 'a' has an output on an earlier line"]),
        # a line nested too deep that names no sample first (a RecursionError before)
        ("[" * 100_000 + "]" * 100_000, [":1: nested deeper than 100 levels", 'no "id" first on the line']),
        ('{"output": ' + "[" * 500 + "]" * 500 + ', "id": "a"}', [":1: nested deeper than 100 levels", 'no "id" first on the line']),
    ],
)
def test_bad_replay_files_are_one_line_errors(tmp_path, line, needles):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(line + "\n")
    with pytest.raises(DataError) as exc:
        load_model(f"replay:{preds}")
    message = str(exc.value)
    assert "\n" not in message and message.startswith(str(preds))
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        # used to end the run with a RecursionError (json.loads), then the whole file's error
        ('{"id": "a", "output": ' + "[" * 100_000 + "]" * 100_000 + "}", ":2: nested deeper than 100 levels"),
        ('{"index": 7, "output": "' + "x" * 10 + '", "mode": ' + "[" * 300 + "]" * 300 + "}", ":2: nested deeper than 100 levels"),
        ('{"id": "a", "output": "cut off', ":2: invalid JSON"),
        ('{"id": "a", "output": "x\\ud800y"}', ":2.output: contains a lone surrogate (U+D800 at character 1)"),
        ('{"id": "a", "output": "x", "mode": "telepathy"}', ":2.mode: 'telepathy' is not 'completion' or 'chat'"),
        ('{"id": "a", "code": 5}', ":2.code: expected a string, got int"),
        ('{"id": "a"}', ":2.output: missing (or give 'code')"),
    ],
)
def test_a_row_with_an_unreadable_answer_is_that_samples_empty_answer(tmp_path, line, needle, caplog):
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"id": "b", "output": "fine"}\n' + line + "\n")
    model = load_model(f"replay:{preds}")
    sid = "7" if '"index": 7' in line else "a"
    assert model.outputs["b"] == ("fine", "completion") and model.outputs[sid] == ("", "completion")
    assert needle in model.unreadable[sid] and "\n" not in model.unreadable[sid]
    assert set(model.unreadable) == {sid}
    assert "1 row(s) with an answer that cannot be read" in caplog.text
    out = asyncio.run(model.generate(ModelInput(sample_id=sid, prompt="", messages=[]), GenerationConfig()))
    assert out.text == "" and needle in out.extra["replay_error"]
    out = asyncio.run(model.generate(ModelInput(sample_id="b", prompt="", messages=[]), GenerationConfig()))
    assert out.text == "fine" and out.extra == {}


def test_a_run_scores_the_other_rows_of_a_replay_file_with_hostile_rows(tmp_path):
    """Issue 28: a replay row nested 100,000 deep (and one with a lone surrogate) is that sample's
    verdict; the run finishes (rc 0) and every other sample's verdict is the gold run's."""
    ids = [f"gen-0-000{i}" for i in range(4)]
    common = ["run", "nested", "--ids", ",".join(ids), "--no-progress"]
    res = runner.invoke(app, [*common, "--model", "gold", "--out", str(tmp_path / "runs"), "--run-id", "gold"])
    assert res.exit_code == 0, res.output
    gold = _stored(tmp_path / "runs" / "gold")
    rows = [json.dumps({"id": sid, "output": gold[sid][0]}) for sid in ids[:2]]
    rows.append(f'{{"id": "{ids[2]}", "output": {"[" * 100_000 + "]" * 100_000}}}')
    rows.append(json.dumps({"id": ids[3], "output": "[\ud800]"}))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(rows) + "\n")
    res = runner.invoke(app, [*common, "--model", f"replay:{preds}", "--out", str(tmp_path / "runs"), "--run-id", "r"])
    assert res.exit_code == 0, res.output
    replayed = _stored(tmp_path / "runs" / "r")
    assert set(replayed) == set(ids)
    for sid in ids[:2]:
        assert replayed[sid][1] == gold[sid][1], sid
    for sid, needle in ((ids[2], "nested deeper than 100 levels"), (ids[3], "lone surrogate")):
        assert replayed[sid][0] == "" and needle in json.loads(replayed[sid][2])["replay_error"]
        assert replayed[sid][1] != gold[sid][1]
    res = runner.invoke(app, ["show", str(tmp_path / "runs" / "r"), ids[2]])
    assert res.exit_code == 0 and "replay_error" in res.output, res.output


def _stored(run_dir):
    con = sqlite3.connect(run_dir / "run.sqlite")
    try:
        return {r[0]: r[1:] for r in con.execute("SELECT id, raw_output, verdicts, extra FROM samples")}
    finally:
        con.close()


def test_deep_replay_file_is_one_line_on_the_command_line(tmp_path, one_line_error):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "x", "output": "y"}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    res = _run(tmp_path, "run", "stateful", "--model", f"replay:{preds}", "--limit", "1")
    one_line_error(res, f"{preds}:2: nested deeper than")


# -- run configuration files, stored answers, task files read by 'analyze' ----------------------

ALIAS_BOMB = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7)
)


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("run.json", '{"model": "gold", "model-arg": ' + "[" * 300 + "]" * 300 + "}", "nested deeper than 200 levels"),
        # 10^8 values named by 8 lines: refused before anything walks it
        ("run.yaml", "model: gold\n" + ALIAS_BOMB, "more than 10,000,000 values"),
    ],
)
def test_run_config_files_are_bounded(tmp_path, name, text, needle, one_line_error):
    cfg = tmp_path / name
    cfg.write_text(text)
    res = _run(tmp_path, "run", "webapi", "--config", cfg)
    one_line_error(res, f"--config {cfg}", needle)


def test_stored_calls_too_deep_to_walk_are_shown_as_text():
    from callbench.cli.results import _parsed_text, _stored_json

    deep = "[" * 500 + "]" * 500
    assert _stored_json(deep) is None and _stored_json("[" * 100_000) is None and _stored_json("x") is None
    assert _parsed_text("nested", deep) == deep
    assert _parsed_text("nested", '[{"name": "f"}, {"name": "g"}]') == '{"name": "f"}\n{"name": "g"}'


def test_analyze_complexity_reads_task_files_within_limits(tmp_path, one_line_error):
    f = tmp_path / "tasks.jsonl"
    f.write_text('{"id": "t", "reference": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    res = runner.invoke(app, ["analyze", "complexity", str(f)])
    one_line_error(res, f"{f}:1: nested deeper than 200 levels")
