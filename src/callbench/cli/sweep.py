"""``callbench sweep``: run a grid of models x tracks x settings (:mod:`callbench.sweep`)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from callbench.cli.options import err_console, fail, out_console, path_text
from callbench.cli.root import app
from callbench.errors import CallbenchError, ConfigError


class Executor(str, Enum):  # noqa: UP042 - typer needs the str mixin
    local = "local"
    ray = "ray"


@app.command("sweep")
def sweep_cmd(
    grid_file: Annotated[Path, typer.Argument(metavar="GRID.yaml", help="The grid: models, and per track its settings (lists expand as a product).")],
    out: Annotated[Path, typer.Option("--out", help="The sweep directory: sweep.json, runs/<cell>/, logs/<cell>.log.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells and their state (todo, partial n/m, done, failed); run nothing.")] = False,
    executor: Annotated[Executor, typer.Option("--executor", help="Where cells run: local (worker processes on this machine) or ray (Ray tasks: on --address, else on a local Ray cluster started for the sweep; the sweep directory must be on storage all nodes share).")] = Executor.local,
    address: Annotated[str | None, typer.Option("--address", help="With --executor ray: the Ray cluster to run on (e.g. 10.0.0.1:6379 or ray://HOST:10001).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Cells at once (default: min(cores, cells to run); with --executor ray: the local cluster's CPUs, or the cluster's CPUs with --address).")] = None,
) -> None:
    """Run every cell of a grid (each an ordinary run directory under --out), skipping finished cells and resuming unfinished ones.

    A cell that fails is recorded in sweep.json with its one-line error and the others go on; the exit status is 1 when a cell failed.
    """
    from callbench.sweep.grid import load_grid
    from callbench.sweep.local import plan, run_local

    try:
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers {workers}: must be >= 1")
        if address is not None and executor is not Executor.ray:
            raise ConfigError(f"--address {address}: only with --executor ray")
        grid = load_grid(grid_file)
        if dry_run:
            states = plan(grid, out)
            for cell in grid.cells:
                settings = " ".join(f"{k}={json.dumps(v)}" for k, v in cell.public_dict()["settings"].items())
                st = states[cell.name]
                error = f"  error: {st.error}" if st.state == "failed" else ""
                state = "failed" if st.state == "failed" else st.text()
                out_console.print(
                    f"{state:<14} {cell.name}  {cell.track} {cell.model} {settings}{error}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
            todo = sum(1 for s in states.values() if s.state != "done")
            out_console.print(f"{len(grid.cells)} cells, {todo} to run", highlight=False)
            return

        def report(event: str, cell: Any, detail: Any) -> None:
            if event == "skip":
                line = f"skip   {cell.name} ({detail.text()})"
            elif event == "start":
                line = f"start  {cell.name}"
            elif detail.ok:
                line = f"done   {cell.name} ({detail.generated} sample(s) asked)"
            else:
                line = f"FAILED {cell.name}: {detail.error}"
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)

        if executor is Executor.ray:
            from callbench.sweep.ray_executor import run_ray

            outcome = run_ray(grid, out, address=address, workers=workers, report=report)
        else:
            outcome = run_local(grid, out, workers=workers, report=report)
    except CallbenchError as exc:
        fail(exc)
    except KeyboardInterrupt:  # Ctrl-C reaches the workers too: each cell's run keeps what it finished
        err_console.print(
            "[yellow]interrupted: finished samples of each cell are saved; run the same command to resume[/yellow]",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    failed = outcome.failed
    err_console.print(
        f"{len(grid.cells)} cells: {len(outcome.skipped)} already done, {len(outcome.results) - len(failed)} run, "
        f"{len(failed)} failed; manifest {path_text(out / 'sweep.json')}",
        highlight=False,
        soft_wrap=True,
    )
    if failed:
        raise typer.Exit(1)


@app.command("leaderboard")
def leaderboard_cmd(
    sweep_dir: Annotated[Path, typer.Argument(metavar="SWEEP_DIR", help="A sweep directory (the --out of 'callbench sweep').")],
    as_csv: Annotated[bool, typer.Option("--csv", help="Write CSV to standard output (shares 0..1, with 95% bounds and n; then each gain over its baseline with its bounds, McNemar p and n) instead of the table.")] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="PATH", help="Where the HTML page goes (default: SWEEP_DIR/leaderboard.html; with --csv only when given).")] = None,
) -> None:
    """Models as rows, the grid's cells as columns: each track's headline metric with its 95% bootstrap interval, and each setting's gain over its baseline (the first value the grid lists) with a paired test.

    Headline metrics: webapi correct implementations, nested win rate, stateful pass@1. A cell that is not done shows its state (todo, partial, failed). The table also goes to an HTML page (self-contained), whose path is printed.
    """
    from callbench.sweep.leaderboard import build_leaderboard, entry_text, gain_text, setting_text
    from callbench.sweep.leaderboard_html import write_leaderboard

    try:
        board = build_leaderboard(sweep_dir)
        page = write_leaderboard(board, sweep_dir, html) if html is not None or not as_csv else None
    except CallbenchError as exc:
        fail(exc)
    if as_csv:
        typer.echo(board.csv(), nl=False)
        if page is not None:
            err_console.print(f"leaderboard page: {path_text(page)}", highlight=False, soft_wrap=True)
        return
    from rich.table import Table
    from rich.text import Text

    from callbench.report.compare import short_model_name

    # Text, not markup: a model spec or setting from the grid may hold "[...]"
    table = Table(title=f"leaderboard: {path_text(sweep_dir)}", title_justify="left")
    table.add_column("model", max_width=32, overflow="fold")  # a long replay path folds, the numbers keep their room
    for col in board.columns:
        metric = board.column_metric.get(col)
        label = board.labels.get(col, col).replace(" ", "\n")  # a setting a line: narrow columns
        table.add_column(Text(label + (f"\n{metric}" if metric else "")), justify="right")
    for model in board.models:
        cells = []
        for col in board.columns:
            gains = [f"{gain_text(g)}\nvs {setting_text(gc.setting, gc.base_value)}" for gc, g in board.gains_of(model, col)]
            cells.append(Text("\n".join([entry_text(board.entries.get((model, col)), sep="\n"), *gains])))
        table.add_row(Text(short_model_name(model)), *cells)
    out_console.print(table)
    for note in board.notes:
        out_console.print(note, highlight=False, markup=False)
    if board.gain_columns:
        out_console.print(
            "gains: percentage points over the cell with the setting at its baseline (the grid's first value), "
            "paired over the same samples: 95% bootstrap interval, McNemar's exact p",
            highlight=False,
            markup=False,
        )
    out_console.print(f"leaderboard page: {path_text(page)}", highlight=False, soft_wrap=True)
