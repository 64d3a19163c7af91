"""``callbench leaderboard``: models as rows, cells as columns, each track's headline metric with its
95 % interval, against values computed by hand on a small gold/replay sweep."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import callbench
from callbench.cli import app
from callbench.sweep.grid import load_grid
from callbench.sweep.leaderboard import build_leaderboard, entry_text
from callbench.sweep.local import run_local

WRONG = '[{"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 2}}]'


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """gold and a replay that answers 4 of the first 8 built-in nested tasks as gold does and the
    other 4 with one wrong call, in both scoring modes: 2 models x 2 cells."""
    root = tmp_path_factory.mktemp("board")
    gold = callbench.run("nested", "gold", out_dir=root / "gold", limit=8)
    with sqlite3.connect(gold.run_dir / "run.sqlite") as db:
        rows = sorted(db.execute("SELECT id, raw_output FROM samples"))
    assert len(rows) == 8
    preds = root / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({"id": sid, "output": out if i % 2 == 0 else WRONG}) + "\n" for i, (sid, out) in enumerate(rows))
    )
    grid = root / "grid.yaml"
    grid.write_text(f'models: [gold, "replay:{preds}"]\ntracks:\n  nested: {{limit: 8, scoring: [strict, compat]}}\n')
    outcome = run_local(load_grid(grid), root / "sweep", workers=2)
    assert not outcome.failed
    return root / "sweep"


def test_leaderboard_values_by_hand(sweep):
    board = build_leaderboard(sweep)
    replay = next(m for m in board.models if m.startswith("replay:"))
    assert board.models == ["gold", replay]
    assert board.columns == ["nested limit=8 scoring=strict", "nested limit=8 scoring=compat"]
    assert set(board.column_metric.values()) == {"Win rate"}
    for col in board.columns:
        g = board.entries[("gold", col)].interval
        assert (g.point, g.lo, g.hi, g.n) == (1.0, 1.0, 1.0, 8)  # every resample of 8 wins is 1
        r = board.entries[(replay, col)].interval
        # 4 wins of 8: 0.5. A bootstrap resample's wins are Binomial(8, 1/2): P(0 wins) = 1/256 =
        # 0.4 % and P(<= 1) = 9/256 = 3.5 %, so the 2.5th percentile is 1/8; symmetrically 7/8.
        assert (r.point, r.lo, r.hi, r.n) == (0.5, 0.125, 0.875, 8)
        assert entry_text(board.entries[(replay, col)]) == "50.0 % [12.5, 87.5]"
    # the same point estimate as the cell's own summary (what callbench report prints)
    for cell in json.loads((sweep / "sweep.json").read_text())["cells"]:
        summary = json.loads((sweep / cell["run_dir"] / "summary.json").read_text())
        col = f"nested limit=8 scoring={cell['settings']['scoring']}"
        assert board.entries[(cell["model"], col)].interval.point == summary["metrics"]["win_rate"]


def test_leaderboard_csv_and_table(sweep):
    res = CliRunner().invoke(app, ["leaderboard", str(sweep), "--csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(io.StringIO(res.output)))
    assert rows[0] == [
        "model",
        "nested limit=8 scoring=strict", "nested limit=8 scoring=strict lo", "nested limit=8 scoring=strict hi", "nested limit=8 scoring=strict n",
        "nested limit=8 scoring=compat", "nested limit=8 scoring=compat lo", "nested limit=8 scoring=compat hi", "nested limit=8 scoring=compat n",
    ]  # fmt: skip
    assert rows[1] == ["gold", "1", "1", "1", "8", "1", "1", "1", "8"]
    assert rows[2][0].startswith("replay:") and rows[2][1:] == ["0.5", "0.125", "0.875", "8"] * 2
    assert len(rows) == 3
    table = CliRunner().invoke(app, ["leaderboard", str(sweep)], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert "Win rate" in table.output and "scoring=compat" in table.output and "50.0 %" in table.output
    assert "[12.5, 87.5]" in table.output and "nested: limit=8" in table.output


def test_a_cell_without_a_result_shows_its_state(tmp_path):
    missing = tmp_path / "missing.jsonl"
    grid = tmp_path / "grid.yaml"
    grid.write_text(f'models: [gold, "replay:{missing}"]\ntracks:\n  nested: {{limit: 2}}\n')
    run_local(load_grid(grid), tmp_path / "s", workers=1)
    board = build_leaderboard(tmp_path / "s")
    col = board.columns[0]
    assert entry_text(board.entries[("gold", col)]) == "100.0 % [100.0, 100.0]", board.entries
    failed = board.entries[(f"replay:{missing}", col)]
    assert failed.state == "failed" and failed.interval is None and "cannot read" in (failed.error or "")
    assert entry_text(failed) == "failed"
    rows = list(csv.reader(io.StringIO(board.csv())))
    assert rows[2] == [f"replay:{missing}", "", "", "", ""]


def test_leaderboard_of_a_directory_without_a_sweep(tmp_path):
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path)])
    assert res.exit_code == 2
    assert f"{tmp_path}/sweep.json: no sweep manifest" in " ".join(res.output.split())
