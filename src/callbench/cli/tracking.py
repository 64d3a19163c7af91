"""``callbench log RUN_DIR... --to mlflow|wandb``: log runs that already exist to an experiment
tracker (what ``--log-to`` does at the end of a run). The logging is
:func:`callbench.report.tracking.log_run`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import fail, out_console
from callbench.cli.root import app
from callbench.errors import CallbenchError, ConfigError


@app.command("log")
def log_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories to log (each its own tracking run).")],
    to: Annotated[str, typer.Option("--to", help="The tracker: mlflow or wandb (each needs its extra).")],
) -> None:
    """Log runs to MLflow or Weights & Biases: identity as parameters, the report's metrics, the HTML report.

    Each tracker reads its own settings: MLFLOW_TRACKING_URI (default sqlite:///mlflow.db here),
    MLFLOW_EXPERIMENT_NAME (default callbench); WANDB_PROJECT (default callbench), WANDB_MODE
    (offline: written under WANDB_DIR, upload later with wandb sync). Logging a run again updates
    its tracking run. The run directories are only read.
    """
    from callbench.report.tracking import TARGETS, log_run

    try:
        if to not in TARGETS:
            raise ConfigError(f"--to {to}: choose from {', '.join(TARGETS)}")
        for run_dir in runs:
            log_run(run_dir, to, console=out_console, option="--to")
    except CallbenchError as exc:
        fail(exc)
