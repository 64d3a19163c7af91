"""``callbench log RUN_DIR... --to mlflow|wandb`` (runs that exist) and ``run ... --log-to mlflow``
(at the end of a run), against a local MLflow store under tmp_path (issue 31, item 6)."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

import callbench
from callbench.cli import app

pytest.importorskip("mlflow")


@pytest.fixture
def mlflow_store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)  # MLflow puts a new experiment's artifacts in ./mlruns
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "cli")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri)


def _runs(client):
    exp = client.get_experiment_by_name("cli")
    return [] if exp is None else client.search_runs([exp.experiment_id])


def test_log_command_logs_each_run_given(tmp_path, data_root, mlflow_store):
    a = callbench.run("webapi", "gold", out_dir=tmp_path / "runs", limit=2, data=str(data_root)).run_dir
    b = callbench.run("webapi", "gold", out_dir=tmp_path / "runs", limit=1, data=str(data_root)).run_dir
    res = CliRunner().invoke(app, ["log", str(a), str(b), "--to", "mlflow"])
    assert res.exit_code == 0, res.output
    runs = {r.info.run_name: r for r in _runs(mlflow_store)}
    assert set(runs) == {a.name, b.name}
    for d in (a, b):
        run = runs[d.name]
        summary = json.loads((d / "summary.json").read_text())
        assert run.data.metrics["run.n"] == summary["n"]
        assert run.data.metrics["correct_implementations_t"] == summary["metrics"]["correct_implementations_t"] == 1.0
        assert f"{d}: logged to MLflow run {run.info.run_id}" in " ".join(res.output.split())


def test_log_command_errors_are_one_line(tmp_path, monkeypatch):
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "mlflow", None)  # as if not installed
        res = CliRunner().invoke(app, ["log", str(tmp_path), "--to", "mlflow"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: --to mlflow needs the 'mlflow' package: pip install 'callbench[mlflow]'"  # callbench log's own option
    res = CliRunner().invoke(app, ["log", str(tmp_path), "--to", "neptune"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: --to neptune: choose from mlflow, wandb"
    res = CliRunner().invoke(app, ["log", str(tmp_path), "--to", "mlflow"])
    assert res.exit_code == 2
    assert res.output.strip() == f"error: {tmp_path}: not a callbench run directory (no config.json or run.sqlite)"


def test_run_with_log_to_mlflow_logs_the_run_when_it_ends(tmp_path, data_root, mlflow_store):
    res = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--limit", "2", "--log-to", "mlflow", "--out", str(tmp_path / "runs"), "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    (run,) = _runs(mlflow_store)
    assert run.info.run_name == run_dir.name and run.info.status == "FINISHED"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run.data.metrics["run.n"] == summary["n"] == 2
    assert run.data.metrics["correct_implementations_t"] == 1.0  # the gold requests
    assert run.data.params["model"] == "gold" and run.data.params["selection.limit"] == "2"
    assert f"logged to MLflow run {run.info.run_id}" in " ".join(res.output.split())


def test_run_with_an_unknown_log_to_target_stops_before_running(tmp_path):
    res = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--limit", "2", "--log-to", "neptune", "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code == 2
    assert "--log-to neptune: choose from mlflow, wandb" in res.output
    assert not (tmp_path / "runs").exists()  # refused before an hour-long run, not after it


def test_run_with_a_tracker_that_is_not_installed_stops_before_running(tmp_path, monkeypatch):
    """The tracker's package is looked for before the run: a missing one is the install hint,
    and no run directory is made (it used to fail after the whole run)."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real_find_spec(name, *a))
    res = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--limit", "2", "--log-to", "wandb", "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code == 2, res.output
    assert "pip install 'callbench[wandb]'" in " ".join(res.output.split())
    assert not (tmp_path / "runs").exists()
