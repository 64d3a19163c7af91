"""Experiment tracking (issue 31, item 6): ``log_run`` writes a run's identity, metrics, tags and
report to MLflow (a local sqlite store under tmp_path, read back with ``MlflowClient``) and to
W&B (offline under tmp_path, read back from the run's ``.wandb`` log with wandb's own reader,
``wandb leet inspect --summary --json``). Nothing here reaches the network."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import callbench
from callbench.errors import ConfigError, MissingExtraError, RunStoreError
from callbench.report.tracking import TARGETS, TrackingError, log_run

N = 3
BROKEN = 1  # the sample whose answer the replay run replaces by non-code


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory, data_root) -> Path:
    """A webapi run of 3 samples where the second answer is not code: 2 of 3 correct."""
    base = tmp_path_factory.mktemp("tracked")
    gold = callbench.run("webapi", "gold", out_dir=base / "gold", limit=N, data=str(data_root)).run_dir
    rows = callbench.load_run(gold, as_frame=False)
    answers = base / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"id": r["sample_id"], "output": "this is not code(" if i == BROKEN else r["raw_output"]}) + "\n"
            for i, r in enumerate(rows)
        )
    )
    return callbench.run("webapi", f"replay:{answers}", out_dir=base / "replay", limit=N, data=str(data_root)).run_dir


@pytest.fixture(scope="module")
def mlflow_db(tmp_path_factory) -> str:
    """One sqlite store for the module (creating its tables takes seconds); each test its own experiment."""
    pytest.importorskip("mlflow")
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def mlflow_env(monkeypatch, mlflow_db, request, tmp_path):
    monkeypatch.chdir(tmp_path)  # MLflow puts a new experiment's artifacts in ./mlruns
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_db)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", f"exp-{request.node.name}")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(mlflow_db)


def _snapshot(run_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(run_dir.iterdir())}


def _numeric_leaves(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _numeric_leaves(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield prefix, float(value)


def test_mlflow_logs_identity_metrics_tags_and_report(replay_run, mlflow_env, tmp_path):
    client = mlflow_env
    before = _snapshot(replay_run)
    run_id = log_run(replay_run, "mlflow")
    assert _snapshot(replay_run) == before  # read only: no report.html, nothing changed
    run = client.get_run(run_id)
    assert client.get_experiment(run.info.experiment_id).name == "exp-test_mlflow_logs_identity_metrics_tags_and_report"
    assert run.info.run_name == replay_run.name
    assert run.info.status == "FINISHED"
    # identity
    config = json.loads((replay_run / "config.json").read_text())
    p = run.data.params
    assert p["track"] == "webapi" and p["model"].startswith("replay:") and p["setup"] == "full"
    assert p["scoring.data_sha256"] == config["identity"]["scoring"]["data_sha256"]
    assert p["data_file"] == config["data_file"]
    assert p["generation.max_tokens"] == str(config["identity"]["generation"]["max_tokens"])
    assert p["selection.limit"] == str(N) and "selection.sample_ids" not in p
    assert p["callbench_version"] == callbench.__version__ and p["run_id"] == replay_run.name
    assert p["scoring.mode"] == "strict"
    # metrics: summary.json's numbers under the names the report reads
    summary = json.loads((replay_run / "summary.json").read_text())
    m = run.data.metrics
    expected = dict(_numeric_leaves(summary["metrics"]))
    expected.update(_numeric_leaves(summary["by_api"], "by_api"))
    assert expected and {k: m.get(k) for k in expected} == expected
    # by hand: the second of 3 answers is not code, the other two are the gold requests
    assert m["correct_implementations_t"] == pytest.approx(2 / 3)
    assert m["executable_implementations_t"] == pytest.approx(2 / 3)
    assert m["by_api.asana.correct_implementations_t"] == pytest.approx(2 / 3)
    assert m["run.n"] == N and m["run.n_selected"] == N and m["run.n_backend_errors"] == 0
    assert 0 <= m["ci95.correct_implementations_t.lo"] <= 2 / 3 <= m["ci95.correct_implementations_t.hi"] <= 1
    # tags
    t = run.data.tags
    assert t["callbench.version"] == callbench.__version__ and t["callbench.track"] == "webapi"
    assert t["callbench.complete"] == "true" and t["callbench.run_id"] == replay_run.name
    # artifacts: the report and the run's files
    assert {a.path for a in client.list_artifacts(run_id)} == {"report.html", "summary.json", "config.json", "run.log"}
    (tmp_path / "got").mkdir()
    got = Path(client.download_artifacts(run_id, "", str(tmp_path / "got")))
    html = (got / "report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "asana_1" in html
    assert (got / "summary.json").read_bytes() == (replay_run / "summary.json").read_bytes()
    assert (got / "config.json").read_bytes() == (replay_run / "config.json").read_bytes()


def test_mlflow_logging_a_run_again_reuses_its_tracking_run(replay_run, mlflow_env, tmp_path):
    client = mlflow_env
    first = log_run(replay_run, "mlflow")
    again = log_run(replay_run, "mlflow")
    assert again == first
    # a copy elsewhere (the same config.json, another run_dir parameter): its own tracking run, and no
    # "changing param values is not allowed" from MLflow
    other = tmp_path / "copy" / replay_run.name
    shutil.copytree(replay_run, other)
    assert log_run(other, "mlflow") != first
    exp = client.get_experiment_by_name("exp-test_mlflow_logging_a_run_again_reuses_its_tracking_run")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.info.run_name for r in runs) == sorted([replay_run.name, other.name])
    history = client.get_metric_history(first, "correct_implementations_t")
    assert [h.value for h in history] == pytest.approx([2 / 3, 2 / 3])  # logged twice, one run


def test_a_tracker_failure_is_one_line(replay_run, mlflow_env, monkeypatch, tmp_path):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'a-file' / 'x.db'}")  # no directory there
    with pytest.raises(TrackingError) as info:
        log_run(replay_run, "mlflow")
    text = str(info.value)
    assert text.startswith(f"--log-to mlflow: logging {replay_run} failed: ") and "\n" not in text


def _wandb_cli() -> str:
    """wandb's command, whose ``leet inspect`` reads a run's ``.wandb`` log (no Python reader ships)."""
    cli = str(Path(sys.executable).with_name("wandb"))
    if subprocess.run([cli, "leet", "inspect", "--help"], capture_output=True).returncode != 0:
        pytest.skip("this wandb has no 'wandb leet inspect' to read an offline run back (a newer wandb has)")
    return cli


def test_wandb_offline_logs_config_summary_tags_and_files(replay_run, monkeypatch, tmp_path):
    pytest.importorskip("wandb")
    cli = _wandb_cli()
    for k in ("WANDB_ENTITY", "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_NAME", "WANDB_TAGS"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_PROJECT", "cb-tests")
    monkeypatch.setenv("WANDB_SILENT", "true")
    before = _snapshot(replay_run)
    run_id = log_run(replay_run, "wandb")
    assert _snapshot(replay_run) == before
    assert run_id.startswith("cb-")
    (offline,) = (tmp_path / "wandb").glob(f"offline-run-*-{run_id}")
    shown = subprocess.run(
        [cli, "leet", "inspect", "--summary", "--json", str(offline)], capture_output=True, text=True, check=True
    )
    doc = json.loads(shown.stdout)
    assert doc["run_id"] == run_id and doc["name"] == replay_run.name and doc["project"] == "cb-tests"
    assert doc["state"] == "finished" and doc.get("exit_code", 0) == 0
    assert set(doc["tags"]) == {"webapi", f"callbench-{callbench.__version__}"}
    cfg = doc["config"]
    config = json.loads((replay_run / "config.json").read_text())
    assert cfg["track"] == "webapi" and cfg["scoring.data_sha256"] == config["identity"]["scoring"]["data_sha256"]
    assert cfg["run_id"] == replay_run.name and cfg["selection.limit"] == str(N)
    summary = json.loads((replay_run / "summary.json").read_text())
    expected = dict(_numeric_leaves(summary["metrics"]))
    assert {k: doc["summary"].get(k) for k in expected} == pytest.approx(expected)
    assert doc["summary"]["correct_implementations_t"] == pytest.approx(2 / 3)
    assert doc["summary"]["run.n"] == N
    files = offline / "files"
    assert (files / "summary.json").read_bytes() == (replay_run / "summary.json").read_bytes()
    assert "asana_1" in (files / "report.html").read_text()
    records = subprocess.run(
        [cli, "leet", "inspect", "--json", str(offline)], capture_output=True, text=True, check=True
    ).stdout
    saved = {f["path"] for line in records.splitlines() if (r := json.loads(line))["type"] == "files" for f in r["files"]["files"]}
    assert {"report.html", "summary.json", "config.json", "run.log"} <= saved  # uploaded by wandb sync
    # logged again: the same W&B run (resumed), not a second one
    assert log_run(replay_run, "wandb") == run_id


@pytest.mark.parametrize("target", TARGETS)
def test_a_missing_tracker_package_is_a_one_line_install_hint(replay_run, monkeypatch, target):
    monkeypatch.setitem(sys.modules, target, None)  # import fails as if not installed
    with pytest.raises(ConfigError) as info:
        log_run(replay_run, target)
    assert isinstance(info.value, MissingExtraError)
    assert str(info.value) == f"--log-to {target} needs the '{target}' package: pip install 'callbench[{target}]'"


def test_an_unknown_target_names_the_allowed_ones(replay_run):
    with pytest.raises(ConfigError, match=r"^--log-to neptune: choose from mlflow, wandb$"):
        log_run(replay_run, "neptune")


def test_a_directory_that_is_no_run_is_refused(tmp_path):
    pytest.importorskip("mlflow")
    with pytest.raises(RunStoreError, match="not a callbench run directory"):
        log_run(tmp_path, "mlflow")
