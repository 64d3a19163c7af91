"""The local executor: real sweeps of small gold cells in worker processes. Each cell is an ordinary
run directory; a re-run skips finished cells (nothing asked again) and resumes unfinished ones; a
failing cell is recorded and the others go on."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import callbench
from callbench.cli import app
from callbench.runs.store import RunStore
from callbench.sweep.grid import load_grid
from callbench.sweep.local import CellResult, plan, run_cell, run_local

NESTED_GRID = "models: [gold]\ntracks:\n  nested: {limit: [2, 3], scoring: [strict, compat]}\n"


def _grid(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_a_local_sweep_runs_every_cell_into_an_ordinary_run_directory(tmp_path):
    grid_file = _grid(tmp_path, NESTED_GRID)
    out = tmp_path / "sweep"
    res = _invoke("sweep", str(grid_file), "--out", str(out), "--workers", "2")
    assert res.exit_code == 0, res.output
    grid = load_grid(grid_file)
    assert len(grid.cells) == 4
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["grid"]["sha256"] == grid.digest
    assert [c["name"] for c in manifest["cells"]] == [c.name for c in grid.cells]
    for entry, cell in zip(manifest["cells"], grid.cells, strict=True):
        assert entry["state"] == "done" and entry["error"] is None
        assert entry["settings"] == cell.settings and entry["run_dir"] == f"runs/{cell.name}"
        n = cell.settings["limit"]
        assert (entry["done"], entry["total"]) == (n, n)
        summary = json.loads((out / entry["run_dir"] / "summary.json").read_text())
        assert summary["complete"] is True and summary["n"] == n and summary["scoring"] == cell.settings["scoring"]
        assert summary["metrics"]["full_sequence_accuracy"] == 1.0  # gold answers are right
        assert f"start  {cell.name}" in res.output and f"done   {cell.name} ({n} sample(s) asked)" in res.output
    # an ordinary run directory: report, export and show read it
    one = out / "runs" / grid.cells[0].name
    rep = _invoke("report", str(one), "--html", str(tmp_path / "r.html"))
    assert rep.exit_code == 0, rep.output
    assert (tmp_path / "r.html").is_file()
    exp = _invoke("export", str(one), "--out", str(tmp_path / "rows.csv"))
    assert exp.exit_code == 0, exp.output
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 1 + 2
    first_id = next(csv.DictReader(io.StringIO((tmp_path / "rows.csv").read_text())))["sample_id"]
    shown = _invoke("show", str(one), first_id)
    assert shown.exit_code == 0 and first_id in shown.output, shown.output
    rescored = callbench.run("nested", "gold", out_dir=out / "runs", run_id=grid.cells[0].name, rescore=True, **grid.cells[0].settings)
    assert rescored.rescored == 2 and rescored.generated == 0
    # ... and callbench.run resumes it as its own (same identity, nothing asked again)
    again = callbench.run("nested", "gold", out_dir=out / "runs", run_id=grid.cells[0].name, **grid.cells[0].settings)
    assert again.resumed and again.generated == 0

    # a re-run skips every finished cell: no worker starts, nothing is asked
    outcome = run_local(grid, out, workers=2)
    assert outcome.results == [] and outcome.skipped == [c.name for c in grid.cells]
    rerun = _invoke("sweep", str(grid_file), "--out", str(out))
    assert rerun.exit_code == 0, rerun.output
    assert "start" not in rerun.output and rerun.output.count("skip   ") == 4
    assert "4 already done, 0 run, 0 failed" in rerun.output


def test_a_rerun_resumes_an_unfinished_cell(tmp_path):
    grid_file = _grid(tmp_path, "models: [gold]\ntracks:\n  nested: {limit: [3, 4]}\n")
    grid = load_grid(grid_file)
    out = tmp_path / "sweep"
    first = run_local(grid, out, workers=1)
    assert [r.generated for r in first.results] == [3, 4]
    # the second cell stopped mid-way: summary gone (a running session removes it), two rows lost
    cell = grid.cells[1]
    run_dir = out / "runs" / cell.name
    (run_dir / "summary.json").unlink()
    store = RunStore.open(run_dir)
    try:
        ids = sorted(store.done_ids())[:2]
        store.delete_ids(ids)
    finally:
        store.close()
    states = plan(grid, out)
    assert states[grid.cells[0].name].text() == "done 3/3"
    assert states[cell.name].text() == "partial 2/4"
    dry = _invoke("sweep", str(grid_file), "--out", str(out), "--dry-run")
    assert dry.exit_code == 0, dry.output
    lines = dry.output.splitlines()
    assert lines[0].startswith("done 3/3") and grid.cells[0].name in lines[0] and "limit=3" in lines[0]
    assert lines[1].startswith("partial 2/4") and cell.name in lines[1] and "limit=4" in lines[1]
    assert lines[2] == "2 cells, 1 to run"
    assert not (out / "logs" / f"{cell.name}.log").read_text().count("resuming")  # the dry run ran nothing
    second = run_local(grid, out, workers=2)
    assert second.skipped == [grid.cells[0].name]
    assert [(r.name, r.ok, r.generated) for r in second.results] == [(cell.name, True, 2)]  # only the lost ones
    assert second.states[cell.name].text() == "done 4/4"
    assert "resuming" in (out / "logs" / f"{cell.name}.log").read_text()


def test_dry_run_lists_todo_cells_and_runs_nothing(tmp_path):
    grid_file = _grid(tmp_path, NESTED_GRID)
    out = tmp_path / "sweep"
    res = _invoke("sweep", str(grid_file), "--out", str(out), "--dry-run")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) == 5 and lines[-1] == "4 cells, 4 to run"
    assert all(line.startswith("todo ") for line in lines[:4])
    assert 'scoring="compat"' in res.output and "limit=2" in res.output
    assert not out.exists()


def test_a_failing_cell_does_not_stop_the_others(tmp_path):
    missing = tmp_path / "missing.jsonl"
    grid_file = _grid(tmp_path, f'models: [gold, "replay:{missing}"]\ntracks:\n  nested: {{limit: [2, 3]}}\n')
    out = tmp_path / "sweep"
    res = _invoke("sweep", str(grid_file), "--out", str(out), "--workers", "2")
    assert res.exit_code == 1, res.output
    assert "2 already done" not in res.output and "2 run, 2 failed" in res.output
    manifest = json.loads((out / "sweep.json").read_text())
    by_model = {}
    for c in manifest["cells"]:
        by_model.setdefault(c["model"], []).append(c)
    assert [c["state"] for c in by_model["gold"]] == ["done", "done"]
    for c in by_model[f"replay:{missing}"]:
        assert c["state"] == "failed"
        assert c["error"] == f"{missing}: cannot read (No such file or directory)"
        assert f"FAILED {c['name']}: {missing}: cannot read" in res.output
    # the failure is remembered: a dry run shows it, a re-run tries the failed cells again (only them)
    dry = _invoke("sweep", str(grid_file), "--out", str(out), "--dry-run")
    assert dry.output.count("failed ") == 2 and "error: " in dry.output and dry.output.count("done 2/2") == 1
    again = _invoke("sweep", str(grid_file), "--out", str(out))
    assert again.exit_code == 1
    assert again.output.count("skip   ") == 2 and again.output.count("start  ") == 2
    assert "2 already done, 0 run, 2 failed" in again.output


def _dies_on_limit_3(out: str, cell: dict) -> CellResult:
    """A cell runner whose worker process dies (as one killed or out of memory does) on the cell
    with limit 3 and runs the others (imported by name in the spawned worker)."""
    if cell["settings"]["limit"] == 3:
        os._exit(9)
    return run_cell(out, cell)


def test_a_worker_that_dies_fails_its_cell_and_the_sweep_goes_on(tmp_path):
    grid = load_grid(_grid(tmp_path, "models: [gold]\ntracks:\n  nested: {limit: [2, 3, 4]}\n"))
    out = tmp_path / "sweep"
    events: list[tuple[str, str]] = []
    outcome = run_local(grid, out, workers=1, runner=_dies_on_limit_3, report=lambda e, c, d: events.append((e, c.name)))
    two, three, four = grid.cells
    assert [(r.name, r.ok) for r in outcome.results] == [(two.name, True), (three.name, False), (four.name, True)]
    assert "a worker process died" in (outcome.results[1].error or "")
    assert [outcome.states[c.name].state for c in grid.cells] == ["done", "failed", "done"]
    assert events == [(e, c.name) for c in grid.cells for e in ("start", "finish")]
    manifest = json.loads((out / "sweep.json").read_text())
    assert [c["state"] for c in manifest["cells"]] == ["done", "failed", "done"]
    # the next sweep runs only that cell
    again = run_local(grid, out, workers=1)
    assert again.skipped == [two.name, four.name]
    assert [(r.name, r.ok, r.generated) for r in again.results] == [(three.name, True, 3)]


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_workers_must_be_positive(tmp_path, workers):
    res = _invoke("sweep", str(_grid(tmp_path, NESTED_GRID)), "--out", str(tmp_path / "s"), "--workers", workers)
    assert res.exit_code == 2 and f"--workers {workers}: must be >= 1" in res.output


def test_webapi_and_nested_cells_side_by_side(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("CALLBENCH_DATA_DIR", str(data_root))  # the spawned workers read it too
    grid_file = _grid(
        tmp_path, "models: [gold]\ntracks:\n  webapi: {setup: [full, args], constrained: [false, true], limit: 2}\n  nested: {limit: 2}\n"
    )
    out = tmp_path / "sweep"
    outcome = run_local(load_grid(grid_file), out, workers=2)
    assert [r.ok for r in outcome.results] == [True] * 5
    assert sorted(s.text() for s in outcome.states.values()) == ["done 2/2"] * 5
    manifest = json.loads((out / "sweep.json").read_text())
    for c in manifest["cells"]:
        summary = json.loads((out / c["run_dir"] / "summary.json").read_text())
        assert summary["track"] == c["track"] and summary["complete"] is True
        if c["track"] == "webapi":
            assert summary["setup"] == c["settings"]["setup"] and summary["constrained"] is c["settings"]["constrained"]
            assert summary["metrics"]["correct_implementations_t"] == 1.0
    # the leaderboard puts each track's headline metric side by side: gold is right everywhere
    from callbench.sweep.leaderboard import build_leaderboard

    board = build_leaderboard(out)
    assert board.models == ["gold"] and len(board.columns) == 5
    assert board.labels[board.columns[0]] == "webapi setup=full constrained=false"
    assert [board.column_metric[c] for c in board.columns] == ["Correct implementations"] * 4 + ["Win rate"]
    assert [board.entries[("gold", c)].interval.point for c in board.columns] == [1.0] * 5


def test_ctrl_c_stops_the_sweep_and_keeps_the_partial_cell(tmp_path):
    """SIGINT to the sweep's process group (what Ctrl-C sends): the sweep stops with one line and
    status 130 and the cell keeps what it stored (a partial cell, which the next sweep resumes)."""
    import signal
    import subprocess
    import sys
    import time

    grid_file = _grid(tmp_path, "models: [gold]\ntracks:\n  nested: {limit: 300}\n")
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "callbench", "sweep", str(grid_file), "--out", str(out), "--workers", "1"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run_db = out / "runs" / load_grid(grid_file).cells[0].name / "run.sqlite"
    while not run_db.exists() and proc.poll() is None:  # the cell has started storing samples
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate()
    assert proc.returncode == 130, output
    assert "interrupted: finished samples of each cell are saved; run the same command to resume" in output
    assert "Traceback" not in output
    state = plan(load_grid(grid_file), out)
    (only,) = state.values()
    assert only.state == "partial" and only.total == 300 and only.done < 300  # resumed as in the test above
    manifest = json.loads((out / "sweep.json").read_text())
    assert (manifest["cells"][0]["state"], manifest["cells"][0]["done"]) == ("partial", only.done)  # updated on the way out
