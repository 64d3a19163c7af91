"""``--config run.yaml`` on the run commands (issue 12, part 6): the file's keys are the long
option names, the command line wins, and a bad file is one line naming the file and the key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from callbench.cli import app
from callbench.cli.runconfig import default_map
from callbench.errors import ConfigError

runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _write(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _command(*path: str):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def test_the_file_sets_the_options_and_is_recorded(tmp_path, data_root):
    cfg = _write(
        tmp_path,
        f"model: gold\nids: [asana_0, asana_1, slack_3]\nmax-tokens: 100\nscoring: compat\nrun_id: from-file\n"
        f"out: {tmp_path / 'runs'}\nno-progress: true\nseed: 11\n",
    )
    res = _invoke("run", "webapi", "--config", cfg, "--data", data_root)
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "runs" / "from-file"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["identity"]["generation"]["max_tokens"] == 100
    assert config["identity"]["generation"]["seed"] == 11
    assert config["selection"]["ids"] == ["asana_0", "asana_1", "slack_3"]
    assert config["config_file"] == {"path": str(cfg.resolve()), "sha256": hashlib.sha256(cfg.read_bytes()).hexdigest()[:16]}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["scoring"] == "compat" and summary["n"] == 3
    assert summary["metrics"]["correct_implementations_t"] == 1.0


def test_the_command_line_overrides_the_file(tmp_path, data_root):
    cfg = _write(tmp_path, f"model: gold\nids: asana_0,asana_1\nmax_tokens: 100\nout: {tmp_path / 'elsewhere'}\n")
    res = _invoke("run", "webapi", "--config", cfg, "--max-tokens", "120", "--ids", "slack_3", "--out", tmp_path / "runs",
                  "--run-id", "r", "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "runs" / "r" / "config.json").read_text())
    assert config["identity"]["generation"]["max_tokens"] == 120
    assert config["selection"]["ids"] == ["slack_3"]
    assert not (tmp_path / "elsewhere").exists()


def test_a_resume_without_the_file_drops_the_record(tmp_path, data_root):
    cfg = _write(tmp_path, "model: gold\nids: [asana_0]\n")
    args = ["--out", tmp_path / "runs", "--run-id", "r", "--no-progress", "--data", data_root]
    assert _invoke("run", "webapi", "--config", cfg, *args).exit_code == 0
    assert "config_file" in json.loads((tmp_path / "runs" / "r" / "config.json").read_text())
    res = _invoke("run", "webapi", "--model", "gold", "--ids", "asana_0", *args)
    assert res.exit_code == 0, res.output
    assert "config_file" not in json.loads((tmp_path / "runs" / "r" / "config.json").read_text())


def test_nested_reads_a_json_config(tmp_path):
    cfg = _write(tmp_path, json.dumps({"model": "gold", "limit": 2, "max-tokens": 64, "seed": 5, "no_progress": True,
                                       "out": str(tmp_path / "runs"), "run-id": "n"}), "run.json")
    res = _invoke("run", "nested", "--config", cfg)
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "runs" / "n" / "config.json").read_text())
    assert config["identity"]["generation"]["max_tokens"] == 64 and config["identity"]["generation"]["seed"] == 5
    assert config["config_file"]["path"] == str(cfg.resolve())


def test_keys_map_to_options_with_their_types(tmp_path):
    cfg = _write(
        tmp_path,
        "model: gold\nmodel-arg: {n_threads: 1, token_healing: false, mode: chat}\napi: [slack, asana]\n"
        "temperature: 1\nconstrained: true\nsetup: args\nlimit: null\nrun-id: 2024-01-02\n",
    )
    got = default_map(_command("run", "webapi"), cfg)
    assert got == {
        "model": "gold", "model_arg": ["n_threads=1", "token_healing=false", "mode=chat"], "api": "slack,asana",
        "temperature": 1, "constrained": True, "setup": "args", "run_id": "2024-01-02",
    }
    stateful = default_map(_command("run", "stateful"), _write(tmp_path, "k: [1, 5]\nscenario: session\nsamples: 5\n"))
    assert stateful == {"k": [1, 5], "scenario": ["session"], "samples": 5}


@pytest.mark.parametrize(
    "text,needles",
    [
        ("model: gold\nmax_tokenz: 5\n", ["unknown key 'max_tokenz'", "'callbench run webapi'", "did you mean 'max-tokens'"]),
        ("model: gold\nconfig: other.yaml\n", ["unknown key 'config'"]),
        ("model: gold\n--model: gold\n", ["unknown key '--model'"]),
        ("max-tokens: many\n", ["max-tokens: expected an integer, got \"many\""]),
        ("max-tokens: 2.5\n", ["max-tokens: expected an integer, got 2.5"]),
        ("temperature: hot\n", ["temperature: expected a number"]),
        ("constrained: 'yes'\n", ["constrained: expected true or false"]),
        ("scoring: lenient\n", ["scoring: expected one of strict, compat, got \"lenient\""]),
        ("ids: {a: 1}\n", ["ids: expected a string, got a mapping"]),
        ("model: [gold]\n", ["model: expected a string, got a list"]),
        ("max-tokens: 5\nmax_tokens: 6\n", ["'max-tokens' and 'max_tokens' set the same option"]),
        ("model: [gold\n", ["not valid YAML (line"]),
        ("- model\n- gold\n", ["expected a mapping of option names to values, got a list"]),
        ("", ["empty; expected a mapping"]),
        ("ids: [asana_0, null]\n", ["ids: expected a string, got null"]),
        ("model-arg: [n_threads=1, [2]]\n", ["model-arg: expected a string, got a list"]),
    ],
)
def test_a_bad_file_is_one_line_naming_file_and_key(tmp_path, text, needles, one_line_error):
    cfg = _write(tmp_path, text)
    res = _invoke("run", "webapi", "--config", cfg, "--out", tmp_path / "runs")
    one_line_error(res, f"--config {cfg}", *needles)
    assert not (tmp_path / "runs").exists()


def test_file_errors_of_the_other_run_commands(tmp_path, one_line_error):
    cfg = _write(tmp_path, "model: gold\nsetup: full\n")  # nested and stateful have no --setup
    for track in ("nested", "stateful"):
        one_line_error(_invoke("run", track, "--config", cfg), f"--config {cfg}", "unknown key 'setup'", f"'callbench run {track}'")
    bad_json = _write(tmp_path, '{"model": "gold",}', "run.json")
    one_line_error(_invoke("run", "nested", "--config", bad_json), f"--config {bad_json}", "not valid JSON (line 1")


def test_an_unreadable_file_is_one_line(tmp_path, one_line_error):
    missing = tmp_path / "nope.yaml"
    one_line_error(_invoke("run", "webapi", "--config", missing), f"--config {missing}", "cannot read")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"model: caf\xe9\n")
    one_line_error(_invoke("run", "webapi", "--config", latin), f"--config {latin}", "not UTF-8")
    one_line_error(_invoke("run", "webapi", "--config", tmp_path), f"--config {tmp_path}", "cannot read")


def test_the_model_may_come_from_the_file_only(tmp_path):
    """--model is required; the file can give it, and without either click says it is missing."""
    res = _invoke("run", "nested", "--config", _write(tmp_path, "limit: 1\n"))
    assert res.exit_code == 2 and "Missing option" in res.output and "--model" in res.output


def test_help_names_config_and_seed():
    for track in ("webapi", "nested", "stateful"):
        res = _invoke("run", track, "--help")
        assert res.exit_code == 0
        text = " ".join(res.output.replace("│", " ").split())
        assert "--config" in text and "--seed" in text and "override the file" in text


def test_default_map_errors_without_a_context(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'x'"):
        default_map(_command("run", "nested"), _write(tmp_path, "x: 1\n"))
