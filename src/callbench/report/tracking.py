"""Log a finished (or unfinished) run to an experiment tracker: MLflow or Weights & Biases
(``--log-to mlflow|wandb`` on the run commands, ``callbench log RUN_DIR --to ...`` afterwards).

What one tracking run holds, the same for both trackers:

- **identity** as parameters (W&B: config): every field of ``config.json``'s identity, flattened
  with dots (``generation.max_tokens``, ``scoring.data_sha256``), the selection's options
  (``selection.limit``; not the list of sample ids), ``data_file``, ``callbench_version``,
  ``created_at``, ``run_id`` (the directory's name), ``run_dir`` and ``scoring.mode``;
- **metrics** (W&B: summary), as ``callbench report`` computes them for this run: every numeric
  value of the summary's ``metrics`` under the key the report reads (``correct_urls_t``, nested
  dicts flattened with dots: ``argument_counts.expected_t``), the per-group breakdowns
  (``by_api.asana.correct_urls_t``), the sample counts as ``run.n``, ``run.n_selected``,
  ``run.n_backend_errors``, ``run.n_stored``, and the report's 95 % bootstrap intervals as
  ``ci95.<key>.lo`` / ``ci95.<key>.hi``; for a complete run these equal ``summary.json``'s;
- **tags**: the callbench version that made the run and the track (MLflow also: model, run id,
  complete, the run directory and the fingerprint below);
- **artifacts** (W&B: run files): ``report.html`` (the HTML report, built here into a temporary
  directory), ``summary.json``, ``config.json`` and ``run.log``.

The run directory is only read: nothing is written into it (not even ``report.html``).

Logging the same run again reuses its tracking run: the run is found by the fingerprint of its
parameters (tag ``callbench.params_sha256`` in MLflow; in W&B the run id ``cb-<fingerprint>``,
resumed with ``resume="allow"``). The metrics are logged again (MLflow keeps their history, the
latest value shows), the files are replaced. A run whose parameters changed (``config.json``
rewritten by a session with another selection, the directory moved or copied, re-scored in another
mode) is a new tracking run: MLflow never changes a logged parameter.

The trackers' own configuration is honoured: ``MLFLOW_TRACKING_URI`` (MLflow's default is
``sqlite:///mlflow.db`` in the working directory), ``MLFLOW_EXPERIMENT_NAME`` /
``MLFLOW_EXPERIMENT_ID`` (default here: the experiment ``callbench``), ``WANDB_PROJECT`` (default
here: ``callbench``), ``WANDB_ENTITY``, ``WANDB_MODE`` (``offline`` writes under ``WANDB_DIR``, to
upload later with ``wandb sync``), ``WANDB_DIR``. Nothing here calls the network except what the
tracker is configured to reach.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from callbench.errors import CallbenchError, ConfigError, MissingExtraError, RunStoreError
from callbench.models.base import one_line

__all__ = ["TARGETS", "TrackingError", "check_tracker", "log_run", "run_record"]

#: The trackers ``log_run`` knows (``--log-to`` / ``callbench log --to``).
TARGETS = ("mlflow", "wandb")
#: The package each tracker needs (the extra of the same name installs it).
_PACKAGES = {"mlflow": "mlflow", "wandb": "wandb"}
#: MLflow's limit on a parameter's value (``MAX_PARAM_VAL_LENGTH``); longer values are cut, marked.
PARAM_MAX_CHARS = 6000
#: Config fields that are data, not settings: the sample ids (the count is a metric) and the
#: data findings (in the report).
_NOT_PARAMS = {"run_sample_ids", "data_findings"}
_DEFAULT_EXPERIMENT = "callbench"
_DEFAULT_PROJECT = "callbench"
#: Characters both trackers accept in a key (MLflow's rule); any other becomes "_".
_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-. :/]")
_FILES = ("summary.json", "config.json", "run.log")


class TrackingError(CallbenchError):
    """The tracker refused or failed (server unreachable, bad credentials, a damaged store)."""


class MissingTrackerError(MissingExtraError, ConfigError):
    """The tracker's package is not installed: a missing extra, and a ``--log-to`` value that
    cannot be used (so callers that catch either get it)."""


def _check_target(target: str, option: str = "--log-to") -> str:
    if target not in TARGETS:
        raise ConfigError(f"{option} {target}: choose from {', '.join(TARGETS)}")
    return target


def check_tracker(target: str) -> None:
    """Before a run: ``target`` is a tracker's name and its package is installed (found, not
    imported: MLflow takes seconds to import), so ``--log-to`` fails before the run, not after."""
    _check_target(target)
    import importlib.util

    if importlib.util.find_spec(target) is None:
        raise MissingTrackerError(_PACKAGES[target], target, what=f"--log-to {target}")


def _import(target: str, option: str = "--log-to") -> Any:
    """The tracker's module, or the one-line install hint."""
    try:
        if target == "mlflow":
            import mlflow

            return mlflow
        import wandb

        return wandb
    except ImportError:
        raise MissingTrackerError(_PACKAGES[target], target, what=f"{option} {target}") from None


# --- what is logged ------------------------------------------------------------------------------


def _key(text: str) -> str:
    return _KEY_BAD.sub("_", text)


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf) for every leaf of nested dicts; lists are leaves."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > PARAM_MAX_CHARS:
        cut = f"... ({len(text)} chars)"
        text = text[: PARAM_MAX_CHARS - len(cut)] + cut
    return text


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def params_of(config: dict[str, Any], summary: dict[str, Any], run_dir: Path) -> dict[str, str]:
    """The run's identity as flat string parameters (see the module docstring)."""
    out: dict[str, str] = {}
    ident = config.get("identity") if isinstance(config.get("identity"), dict) else {}
    for k, v in _flatten(ident, ""):
        out[_key(k)] = _param_text(v)
    for name, value in config.items():
        if name in ("identity", *_NOT_PARAMS):
            continue
        if name == "selection" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "sample_ids"}
        for k, v in _flatten(value, name):
            out.setdefault(_key(k), _param_text(v))
    if "scoring" in summary:
        out.setdefault("scoring.mode", _param_text(summary["scoring"]))
    out["run_id"] = run_dir.name
    out["run_dir"] = str(run_dir.resolve())
    return out


def metrics_of(summary: dict[str, Any], model: Any = None) -> dict[str, float]:
    """The run's numbers as flat metrics (see the module docstring): ``summary`` is the report's
    summary of the run, ``model`` its report model (for the intervals)."""
    out: dict[str, float] = {}
    for k, v in _flatten(summary.get("metrics") or {}, ""):
        if (x := _number(v)) is not None:
            out[_key(k)] = x
    for name, value in summary.items():
        if name.startswith("by_") and isinstance(value, dict):
            for k, v in _flatten(value, name):
                if (x := _number(v)) is not None:
                    out[_key(k)] = x
    for name in ("n", "n_selected", "n_backend_errors", "n_stored"):
        if (x := _number(summary.get(name))) is not None:
            out[f"run.{name}"] = x
    for stat in getattr(model, "stats", None) or []:
        iv = stat.per_run[0] if stat.per_run else None
        if iv is None:
            continue
        for end in ("lo", "hi"):
            if (x := _number(getattr(iv, end))) is not None:
                out[_key(f"ci95.{stat.metric.key}.{end}")] = x
    return out


def params_fingerprint(params: dict[str, str]) -> str:
    """16 hex digits of SHA-256 over the parameters (key order does not matter): the key that
    finds a run's earlier tracking run."""
    text = json.dumps(params, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:16]


class RunRecord:
    """Everything logged for one run, read from its directory (nothing written there): the
    report is built into ``workdir``."""

    def __init__(self, run_dir: Path, workdir: Path):
        from callbench.report.build import build_report

        self.run_dir = run_dir
        html = workdir / "report.html"
        report = build_report([run_dir], html=html)
        loaded = report.runs[0]
        self.config: dict[str, Any] = loaded.config
        self.summary: dict[str, Any] = loaded.summary
        self.params = params_of(self.config, self.summary, run_dir)
        self.metrics = metrics_of(self.summary, report.model)
        self.fingerprint = params_fingerprint(self.params)
        version = self.config.get("callbench_version") or self.summary.get("callbench_version")
        if not isinstance(version, str):
            from callbench.version import __version__ as version
        self.version: str = version
        self.track = str(self.summary.get("track"))
        self.model = str(self.summary.get("model"))
        self.complete = bool(self.summary.get("complete"))
        self.files = [html] + [run_dir / f for f in _FILES if (run_dir / f).is_file()]

    def tags(self) -> dict[str, str]:
        return {
            "callbench.version": self.version,
            "callbench.track": self.track,
            "callbench.model": self.model[:5000],
            "callbench.run_id": self.run_dir.name,
            "callbench.run_dir": str(self.run_dir.resolve()),
            "callbench.complete": "true" if self.complete else "false",
            "callbench.params_sha256": self.fingerprint,
        }


def run_record(run_dir: str | Path, workdir: str | Path) -> RunRecord:
    """What :func:`log_run` would log for ``run_dir`` (the report written into ``workdir``)."""
    return RunRecord(Path(run_dir), Path(workdir))


# --- the trackers ---------------------------------------------------------------------------------


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _log_mlflow(mlflow: Any, rec: RunRecord) -> tuple[str, str]:
    """(run id, where) after logging ``rec`` to MLflow through a client (the process's active
    run and experiment are not touched)."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    uri = mlflow.get_tracking_uri()
    exp_id = os.environ.get("MLFLOW_EXPERIMENT_ID")
    if not exp_id:
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or _DEFAULT_EXPERIMENT
        exp = client.get_experiment_by_name(name)
        exp_id = exp.experiment_id if exp is not None else client.create_experiment(name)
    found = client.search_runs(
        [exp_id], filter_string=f"tags.`callbench.params_sha256` = '{rec.fingerprint}'", max_results=1
    )
    if found:
        run_id = found[0].info.run_id
        client.update_run(run_id, status="RUNNING")
    else:
        run_id = client.create_run(exp_id, run_name=rec.run_dir.name, tags=rec.tags()).info.run_id
    try:
        now = int(time.time() * 1000)
        tags = [RunTag(k, v) for k, v in rec.tags().items()]
        params = [Param(k, v) for k, v in rec.params.items()]
        metrics = [Metric(k, v, now, 0) for k, v in rec.metrics.items()]
        client.log_batch(run_id, tags=tags)
        for part in _chunks(params, 100):  # MLflow's limits per batch: 100 params, 1000 metrics
            client.log_batch(run_id, params=part)
        for part in _chunks(metrics, 1000):
            client.log_batch(run_id, metrics=part)
        for f in rec.files:
            client.log_artifact(run_id, str(f))
    except BaseException:
        with contextlib.suppress(Exception):  # the first error is the one to report
            client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED")
    if uri.startswith(("http://", "https://")):  # a tracking server: the run's page in its UI
        return run_id, f"{uri.rstrip('/')}/#/experiments/{exp_id}/runs/{run_id}"
    return run_id, f"experiment {exp_id} at {uri}"


def _log_wandb(wandb: Any, rec: RunRecord) -> tuple[str, str]:
    """(run id, where) after logging ``rec`` to W&B (offline when ``WANDB_MODE=offline``)."""
    settings = wandb.Settings(console="off", x_disable_stats=True, save_code=False, disable_git=True)
    run = wandb.init(
        project=os.environ.get("WANDB_PROJECT") or _DEFAULT_PROJECT,
        id=f"cb-{rec.fingerprint}",
        resume="allow",
        name=rec.run_dir.name,
        job_type="callbench-run",
        config=rec.params,
        tags=[rec.track, f"callbench-{rec.version}"],
        settings=settings,
        reinit="create_new",
    )
    failed = True
    try:
        run.config.update(rec.params, allow_val_change=True)  # a resumed run keeps its config otherwise
        run.summary.update(rec.metrics)
        files = Path(run.dir)
        for f in rec.files:
            shutil.copyfile(f, files / f.name)
            run.save(str(files / f.name), base_path=str(files), policy="now")
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)
    where = run.url or f"offline in {Path(run.dir).parent} (upload with: wandb sync {Path(run.dir).parent})"
    return run.id, where


def log_run(run_dir: str | Path, target: str, *, console: Console | None = None, option: str = "--log-to") -> str:
    """Log the run in ``run_dir`` to ``target`` (``mlflow`` or ``wandb``) and return the tracking
    run's id; prints where it went on ``console`` when given. Raises a one-line
    :class:`~callbench.errors.ConfigError` for an unknown target or a missing package, and
    :class:`TrackingError` when the tracker fails; the messages name ``option`` (the command
    line's: ``--log-to``, or ``callbench log``'s ``--to``)."""
    target = _check_target(target, option)
    module = _import(target, option)
    run_dir = Path(run_dir)
    from callbench.report.build import is_run_dir

    if not run_dir.is_dir() or not is_run_dir(run_dir):
        raise RunStoreError(f"{run_dir}: not a callbench run directory (no config.json or run.sqlite)")
    with tempfile.TemporaryDirectory(prefix="callbench-log-") as tmp:
        rec = RunRecord(run_dir, Path(tmp))
        try:
            run_id, where = (_log_mlflow if target == "mlflow" else _log_wandb)(module, rec)
        except CallbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - the tracker's own errors, as one line
            raise TrackingError(f"{option} {target}: logging {run_dir} failed: {type(exc).__name__}: {one_line(exc)}") from exc
    if console is not None:
        name = "MLflow" if target == "mlflow" else "W&B"
        note = "" if rec.complete else " (the run is incomplete: logged what it holds)"
        console.print(f"{run_dir}: logged to {name} run {run_id}, {where}{note}", highlight=False, markup=False, soft_wrap=True)
    return run_id
