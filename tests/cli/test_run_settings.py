"""Issue 30 item 1 (c): the run commands and ``callbench.run`` share one set of settings
(:class:`callbench.runs.settings.RunSettings` and each track's settings model), validated the same
way; no function on the way from the command line to the runner takes more than ~10 parameters;
issue 31 item 6: ``--log-to`` / ``log_to`` logs a finished run to experiment trackers."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import callbench
from callbench import api
from callbench.cli import app
from callbench.errors import CallbenchError, ConfigError
from callbench.runs import runner
from callbench.runs.settings import RunSettings
from callbench.tracks.definition import get_definition, resolve


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "300"})


@pytest.fixture
def logged(monkeypatch):
    """``log_run`` replaced: each call is recorded with what the run directory held then."""
    import callbench.report.tracking as tracking

    calls = []

    def log_run(run_dir, target, *, console=None):
        summary = json.loads((Path(run_dir) / "summary.json").read_text())
        calls.append((Path(run_dir), target, summary["n"]))
        return f"{target}-id-{len(calls)}"

    monkeypatch.setattr(tracking, "log_run", log_run)
    return calls


def test_log_to_on_the_command_line_logs_the_finished_run_to_each_target(tmp_path, logged):
    args = ["run", "nested", "-m", "gold", "--limit", "2", "--out", tmp_path, "--run-id", "r", "--no-progress"]
    res = _invoke(*args, "--log-to", "mlflow,wandb")
    assert res.exit_code == 0, res.output
    assert logged == [(tmp_path / "r", "mlflow", 2), (tmp_path / "r", "wandb", 2)]
    res = _invoke(*args, "--log-to", "wandb")  # a resumed run (nothing left to ask) is logged too
    assert res.exit_code == 0, res.output
    assert logged[-1] == (tmp_path / "r", "wandb", 2) and len(logged) == 3
    res = _invoke(*args)  # without --log-to: nothing
    assert res.exit_code == 0 and len(logged) == 3


def test_log_to_from_a_config_file_and_from_callbench_run(tmp_path, logged):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"model: gold\nlimit: 1\nlog-to: [mlflow]\nout: {tmp_path / 'a'}\nno-progress: true\n")
    res = _invoke("run", "nested", "--config", cfg)
    assert res.exit_code == 0, res.output
    assert [(c[1], c[2]) for c in logged] == [("mlflow", 1)]
    outcome = callbench.run("nested", "gold", out_dir=tmp_path / "b", limit=1, log_to=["wandb"])
    assert logged[-1] == (outcome.run_dir, "wandb", 1)
    # one name, or a comma-separated list, as on the command line
    outcome = callbench.run("nested", "gold", out_dir=tmp_path / "c", limit=1, log_to="mlflow, wandb")
    assert [c[1] for c in logged[-2:]] == ["mlflow", "wandb"] and logged[-1][0] == outcome.run_dir


def test_a_wrong_target_is_refused_before_the_run(tmp_path, logged, one_line_error):
    res = _invoke("run", "nested", "-m", "gold", "--limit", "1", "--out", tmp_path / "runs", "--log-to", "neptune")
    one_line_error(res, "--log-to neptune: choose from mlflow, wandb")
    assert not (tmp_path / "runs").exists() and logged == []
    with pytest.raises(ConfigError, match="--log-to neptune"):
        callbench.run("nested", "gold", out_dir=tmp_path / "runs", log_to=["neptune"])


def test_a_run_that_fails_is_not_logged(tmp_path, logged, monkeypatch):
    def crash(*args, **kwargs):
        raise CallbenchError("the backend fell over")

    monkeypatch.setattr(api, "_run", crash)
    with pytest.raises(CallbenchError, match="fell over"):
        callbench.run("nested", "gold", out_dir=tmp_path, limit=1, log_to=["mlflow"])
    assert logged == []


def test_callbench_run_names_an_unknown_or_wrong_setting(tmp_path):
    with pytest.raises(ConfigError, match=r"^track 'webapi': unknown option 'samples'$"):
        callbench.run("webapi", "gold", out_dir=tmp_path, samples=3)
    with pytest.raises(ConfigError, match=r"^track 'nested': option 'limit': Input should be a valid integer"):
        callbench.run("nested", "gold", out_dir=tmp_path, limit="many")
    with pytest.raises(ConfigError, match=r"^track 'stateful': option 'samples': Input should be a valid integer"):
        callbench.run("stateful", "gold", out_dir=tmp_path, samples="x")
    with pytest.raises(ConfigError, match="unknown option 'unsafe_no_sandbox'"):  # the command line's only
        callbench.run("nested", "gold", out_dir=tmp_path, unsafe_no_sandbox=True)
    from callbench.constrain.webapi_grammar import GrammarOptions

    # two settings that both shape the grammar: refused, not one silently dropped
    with pytest.raises(ConfigError, match="^grammar_options and cd_profile both shape the grammar"):
        callbench.run("webapi", "gold", out_dir=tmp_path, constrained=True, grammar_options=GrammarOptions(), cd_profile="paper")
    assert not any(tmp_path.iterdir())


def test_settings_may_come_as_a_mapping_and_keywords_win(tmp_path):
    outcome = callbench.run("nested", "gold", {"limit": 3, "max_tokens": 64}, out_dir=tmp_path, limit=1)
    config = json.loads((outcome.run_dir / "config.json").read_text())
    assert outcome.summary["n"] == 1 and config["identity"]["generation"]["max_tokens"] == 64


def test_cli_and_api_build_the_same_run_options(tmp_path, monkeypatch):
    """``callbench run nested`` with flags and ``callbench.run`` with the same settings hand the
    runner equal options (RunOptions is built in one place: RunSettings.run_options)."""
    seen = []

    def fake_run(track, backend, options, console=None, **kw):
        seen.append(options)
        raise CallbenchError("stop here")

    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr(api, "_run", fake_run)
    res = _invoke("run", "nested", "-m", "gold", "--limit", "2", "--ids", "a,b", "--seed", "3", "--max-tokens", "99",
                  "--out", tmp_path, "--run-id", "x", "--no-progress", "--eval-workers", "2", "--rescore")
    assert res.exit_code == 2 and "stop here" in res.output
    with pytest.raises(CallbenchError):
        callbench.run("nested", "gold", out_dir=tmp_path, run_id="x", limit=2, ids=["a", "b"], seed=3, max_tokens=99,
                      eval_workers=2, rescore=True, scoring="strict")
    cli, python = (dataclasses.asdict(o) for o in seen)
    assert cli == python
    assert cli["generation"]["seed"] == 3 and cli["generation"]["max_tokens"] == 99 and cli["ids"] == ["a", "b"]


@pytest.mark.parametrize("track", ["webapi", "nested", "stateful"])
def test_a_track_settings_model_has_every_option_of_the_track_with_its_default(track):
    """The settings model is the source of callbench.run's keywords: every field of the track's
    options is one, with the same default (nested's mode: None is direct, chosen with --strategy)."""
    definition = get_definition(track)
    model = definition.settings_model()
    for f in dataclasses.fields(resolve(definition.options)):
        assert f.name in model.model_fields, f.name
        default = model.model_fields[f.name].get_default(call_default_factory=True)
        if (track, f.name) != ("nested", "mode"):
            assert default == f.default, (f.name, default, f.default)


def test_no_function_on_the_way_to_the_runner_takes_more_than_ten_parameters():
    from callbench.cli.run import command_params, generated_command, run_generated

    functions = [api.run, api.prepare, runner.run, RunSettings.run_options, RunSettings.generation_config,
                 run_generated, command_params, generated_command]
    for track in ("webapi", "nested", "stateful"):
        definition = get_definition(track)
        functions += [f for f in (definition.prepare, definition.notes, definition.check_backend) if f is not None]
    counts = {f.__qualname__: len(inspect.signature(f).parameters) for f in functions}
    assert max(counts.values()) <= 6, counts
    command = generated_command(get_definition("webapi"))
    # the generated command shows typer 30-odd options, but the function itself takes only **values
    assert len(inspect.signature(command).parameters) > 30
    code = command.__code__
    assert (code.co_argcount, code.co_kwonlyargcount, code.co_varnames[:1]) == (0, 0, ("values",))


def test_a_generation_mapping_names_only_decoding_settings(tmp_path):
    """``generation={"bogus": 1}`` is a one-line ConfigError naming the option, before any model
    or data loads (it was a TypeError after the backend had loaded)."""
    with pytest.raises(ConfigError, match=r"option 'generation': .*'bogus' is no decoding setting") as err:
        callbench.run("nested", "gold", out_dir=tmp_path / "runs", limit=1, generation={"bogus": 1})
    assert "\n" not in str(err.value) and not (tmp_path / "runs").exists()
