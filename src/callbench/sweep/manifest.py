"""A sweep directory: its manifest (``sweep.json``) and each cell's state, read from its run directory.

Layout of ``--out DIR``::

    DIR/sweep.json           the grid's file and digest, and per cell: its settings, run directory, state
    DIR/runs/<cell name>/    an ordinary run directory (resume, --rescore, report, export, show)
    DIR/logs/<cell name>.log what the cell's run printed

A cell's state is read from its run directory, never trusted from the manifest: ``todo`` (nothing
stored), ``partial`` (``done`` of ``total`` selected samples stored), ``done`` (its summary says
complete) or ``failed`` (the last attempt raised; its one-line error is kept in the manifest).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError, RunStoreError
from callbench.files import write_json_atomic
from callbench.runs.store import RunStore
from callbench.sweep.grid import Cell, Grid

MANIFEST = "sweep.json"
RUNS = "runs"
LOGS = "logs"


@dataclass
class CellState:
    state: str  # todo | partial | done | failed
    done: int | None = None  # stored samples of the selection
    total: int | None = None  # selected samples (None: not known before the cell first runs)
    error: str | None = None

    def text(self) -> str:
        if self.state == "partial":
            return f"partial {self.done}/{self.total}"
        if self.state == "done":
            return f"done {self.done}/{self.total}"
        if self.state == "failed":
            return f"failed: {self.error}"
        return self.state


def run_dir(out: Path, cell: Cell) -> Path:
    return out / RUNS / cell.name


def _summary(directory: Path) -> dict[str, Any] | None:
    try:
        summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def cell_state(out: Path, cell: Cell, failed: dict[str, str] | None = None) -> CellState:
    """The state of ``cell`` as its run directory under ``out`` holds it (``failed``: the errors of
    this sweep's or the manifest's failed cells, by name, for cells not done since)."""
    directory = run_dir(out, cell)
    summary = _summary(directory)
    if summary is not None and summary.get("complete") is True:
        n = summary.get("n_selected")
        return CellState("done", n, n)
    error = (failed or {}).get(cell.name)
    if not (directory / "run.sqlite").exists():
        return CellState("failed", error=error) if error else CellState("todo")
    try:
        store = RunStore.open(directory)
    except CallbenchError as exc:
        return CellState("failed", error=error or " ".join(str(exc).split()))
    try:
        selected = store.config().get("selection", {}).get("sample_ids")
        ids = store.done_ids()
    except (RunStoreError, AttributeError):
        selected, ids = None, set()
    finally:
        store.close()
    total = len(selected) if isinstance(selected, list) else None
    done = len(ids & set(selected)) if isinstance(selected, list) else len(ids)
    if error:
        return CellState("failed", done, total, error)
    return CellState("partial", done, total)


def read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def previous_failures(out: Path) -> dict[str, str]:
    """The one-line errors the manifest records, by cell name."""
    manifest = read_manifest(out) or {}
    cells = manifest.get("cells")
    return {
        c["name"]: c["error"]
        for c in (cells if isinstance(cells, list) else [])
        if isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("error"), str)
    }


def write_manifest(out: Path, grid: Grid, states: dict[str, CellState]) -> None:
    """Write ``sweep.json`` whole (a reader never sees half of it)."""
    cells = []
    for cell in grid.cells:
        st = states.get(cell.name) or CellState("todo")
        cells.append(
            {
                **cell.public_dict(),
                "run_dir": f"{RUNS}/{cell.name}",
                "state": st.state,
                "done": st.done,
                "total": st.total,
                "error": st.error,
            }
        )
    manifest = {
        "grid": {"file": str(grid.path), "sha256": grid.digest},
        "models": grid.models,
        "cells": cells,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    out.mkdir(parents=True, exist_ok=True)
    try:
        write_json_atomic(out / MANIFEST, manifest)
    except OSError as exc:
        raise RunStoreError(f"{out / MANIFEST}: cannot write ({exc.strerror or exc})") from None
