"""The local executor: a sweep's cells in worker processes on this machine.

Each cell is one ``callbench.run`` in a worker process (spawned, not forked: the driver may hold
threads and open stores, and a fork would copy them mid-state). Cells whose run directory says
complete are skipped without starting anything; the others run, and ``callbench.run`` resumes an
unfinished one by itself (the same run directory and identity). A cell that raises is recorded as
failed with its one-line error and the other cells go on. The manifest is written before the first
cell starts and again after each one ends, so a killed sweep leaves it at most one cell behind
(and the next run reads every cell's state from its run directory anyway).
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError
from callbench.sweep.grid import Cell, Grid, run_arguments
from callbench.sweep.manifest import LOGS, CellState, cell_state, previous_failures, run_dir, write_manifest
from callbench.sweep.servers import ServerBounds


@dataclass
class CellResult:
    name: str
    ok: bool
    error: str | None = None
    generated: int = 0  # samples asked of the model in this attempt


@dataclass
class SweepOutcome:
    states: dict[str, CellState]
    results: list[CellResult]  # the cells run in this session (skipped ones are not here)
    skipped: list[str]  # cells already done

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.results if not r.ok]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, CallbenchError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_cell(out: str, cell: dict[str, Any]) -> CellResult:
    """Run one cell (in a worker process): what it printed goes to its log file, an exception is
    returned as a one-line error (the full traceback of an unexpected one is in the log)."""
    from rich.console import Console

    from callbench.api import run

    name = cell["name"]
    log = Path(out) / LOGS / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as fh:
        console = Console(file=fh, width=120, no_color=True)
        try:
            outcome = run(
                cell["track"],
                cell["model"],
                out_dir=Path(out) / "runs",
                run_id=name,
                progress=False,
                console=console,
                **run_arguments(cell["track"], cell["settings"]),
            )
        except CallbenchError as exc:
            console.print(f"error: {_one_line(exc)}", markup=False)
            return CellResult(name, False, _one_line(exc))
        except Exception as exc:  # a harness fault in one cell must not stop the others
            fh.write(traceback.format_exc())
            return CellResult(name, False, _one_line(exc))
    return CellResult(name, True, generated=outcome.generated)


def default_workers(n_cells: int) -> int:
    return max(1, min(os.cpu_count() or 1, n_cells))


class SweepBook:
    """What an executor's driver keeps while a sweep runs (shared by the local and Ray executors,
    so both write the same ``sweep.json``): each cell's state read from its run directory, the
    failures, the manifest written before the first cell starts and again after each one ends."""

    def __init__(self, grid: Grid, out: Path, report: Callable[[str, Cell, Any], None] | None) -> None:
        self.grid, self.out = grid, out
        self.report = report or (lambda event, cell, detail: None)
        self.failures = previous_failures(out)
        self.states = {c.name: cell_state(out, c, self.failures) for c in grid.cells}
        self.skipped = [c.name for c in grid.cells if self.states[c.name].state == "done"]
        self.todo = [c for c in grid.cells if self.states[c.name].state != "done"]
        self.results: list[CellResult] = []
        for c in grid.cells:
            if self.states[c.name].state == "done":
                self.report("skip", c, self.states[c.name])
        write_manifest(out, grid, self.states)

    def finish(self, cell: Cell, res: CellResult) -> None:
        self.results.append(res)
        if res.ok:
            self.failures.pop(cell.name, None)
        else:
            self.failures[cell.name] = res.error or "failed"
        self.states[cell.name] = cell_state(self.out, cell, self.failures)
        write_manifest(self.out, self.grid, self.states)
        self.report("finish", cell, res)

    def stopped(self, running: list[Cell]) -> None:
        """Stopped (Ctrl-C) with ``running`` in flight: the manifest says how far each got."""
        if running:
            for c in running:
                self.states[c.name] = cell_state(self.out, c, self.failures)
            write_manifest(self.out, self.grid, self.states)

    def outcome(self) -> SweepOutcome:
        return SweepOutcome(self.states, self.results, self.skipped)


def run_local(
    grid: Grid,
    out: Path,
    *,
    workers: int | None = None,
    report: Callable[[str, Cell, Any], None] | None = None,
    runner: Callable[[str, dict[str, Any]], CellResult] = run_cell,
) -> SweepOutcome:
    """Run ``grid``'s unfinished cells under ``out`` in ``workers`` processes (default: one per
    core, at most one per cell). ``report(event, cell, detail)`` is called on the driver for each
    ``"skip"`` (detail: the state), ``"start"`` and ``"finish"`` (detail: the :class:`CellResult`).
    ``runner(out, cell)`` runs one cell in a worker (:func:`run_cell`; a picklable, importable
    function). A worker that dies fails the cells in flight; the others run in a fresh pool."""
    book = SweepBook(grid, out, report)
    todo = book.todo
    if not todo:
        return book.outcome()
    n = workers if workers is not None else default_workers(len(todo))
    ctx = multiprocessing.get_context("spawn")
    bounds = ServerBounds(grid.servers)  # a cell starts when its requests fit its servers' bounds
    queue = list(todo)
    running: dict[concurrent.futures.Future[CellResult], Cell] = {}
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=ctx)
    try:
        while queue or running:
            while queue and len(running) < n:  # submitted only when a worker is free: "start" is true
                i = next((k for k, q in enumerate(queue) if bounds.fits(q)), None)
                if i is None:
                    break  # every waiting cell needs a server that is busy: wait for a cell to end
                c = queue.pop(i)
                job = bounds.effective(c).as_dict()
                try:
                    fut = pool.submit(runner, str(out), job)
                except concurrent.futures.process.BrokenProcessPool:
                    # a worker died: the pool is unusable; the remaining cells get a fresh one
                    pool.shutdown(wait=True, cancel_futures=True)
                    pool = concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=ctx)
                    fut = pool.submit(runner, str(out), job)
                bounds.take(c)
                running[fut] = c
                book.report("start", c, None)
            finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in finished:
                c = running.pop(fut)
                bounds.release(c)
                try:
                    res = fut.result()
                except concurrent.futures.process.BrokenProcessPool:
                    # a worker process died (killed, out of memory): every cell in flight fails with
                    # it, as which one died is not known; their runs resume on the next sweep
                    res = CellResult(c.name, False, "a worker process died while the cell ran (killed or out of memory?); run the sweep again to resume it")
                except Exception as exc:  # the result could not come back (e.g. not picklable)
                    res = CellResult(c.name, False, f"worker process failed: {_one_line(exc)}")
                book.finish(c, res)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        book.stopped(list(running.values()))
    return book.outcome()


def plan(grid: Grid, out: Path) -> dict[str, CellState]:
    """Each cell's state, nothing run (``--dry-run``)."""
    failures = previous_failures(out)
    return {c.name: cell_state(out, c, failures) for c in grid.cells}


__all__ = ["CellResult", "SweepBook", "SweepOutcome", "default_workers", "plan", "run_cell", "run_dir", "run_local"]
