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
        # the gain of the second scoring mode over the first (the grid's first value: the baseline)
        *(f"nested limit=8 scoring=compat vs scoring=strict{s}" for s in ("", " lo", " hi", " p", " n")),
    ]  # fmt: skip
    # the same answers win under both modes: no gain, no discordant pair (McNemar p = 1)
    assert rows[1] == ["gold", "1", "1", "1", "8", "1", "1", "1", "8", "0", "0", "0", "1", "8"]
    assert rows[2][0].startswith("replay:") and rows[2][1:9] == ["0.5", "0.125", "0.875", "8"] * 2
    assert rows[2][9:] == ["0", "0", "0", "1", "8"]
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


# -- gains over a baseline, the HTML page, the Python API -----------------------------------------


@pytest.fixture(scope="module")
def nested_gold(tmp_path_factory) -> list[tuple[str, str]]:
    """The first 8 built-in nested tasks' ids and gold answers."""
    root = tmp_path_factory.mktemp("gold8")
    gold = callbench.run("nested", "gold", out_dir=root, limit=8)
    with sqlite3.connect(gold.run_dir / "run.sqlite") as db:
        rows = sorted(db.execute("SELECT id, raw_output FROM samples"))
    assert len(rows) == 8
    return rows


def _replay(path: Path, rows: list[tuple[str, str]], wins: set[int]) -> Path:
    """A replay file answering task i as gold does when i is in ``wins``, else with a wrong call."""
    path.write_text("".join(json.dumps({"id": sid, "output": out if i in wins else WRONG}) + "\n" for i, (sid, out) in enumerate(rows)))
    return path


def test_a_gain_and_its_paired_test_by_hand(tmp_path, nested_gold):
    """Two models x constrained in [false, true], the cells' runs made by hand (replays): m1 wins
    tasks 0-3 at the baseline and 2-7 with the setting; m2 wins 2-7 at the baseline and, with the
    setting, was asked tasks 2-7 only and wins 2 and 3."""
    from callbench.report.stats import mcnemar, paired_diff_ci

    sweep = tmp_path / "sweep"
    ids = [sid for sid, _ in nested_gold]
    plan = {
        "m1-off": ({0, 1, 2, 3}, None),
        "m1-on": ({2, 3, 4, 5, 6, 7}, None),
        "m2-off": ({2, 3, 4, 5, 6, 7}, None),
        "m2-on": ({2, 3}, ids[2:]),
    }
    for name, (wins, only) in plan.items():
        preds = _replay(tmp_path / f"{name}.jsonl", nested_gold, wins)
        kw = {"ids": only} if only else {"limit": 8}
        callbench.run("nested", f"replay:{preds}", out_dir=sweep / "runs", run_id=name, **kw)
    cells = [
        {"name": f"{m}-{v}", "track": "nested", "model": m, "settings": {"limit": 8, "constrained": v == "on"}}
        for m in ("m1", "m2")
        for v in ("off", "on")
    ]
    (sweep / "sweep.json").write_text(json.dumps({"cells": cells}))

    board = callbench.leaderboard(sweep)
    off, on = "nested limit=8 constrained=false", "nested limit=8 constrained=true"
    assert board.columns == [off, on]
    [gc] = board.gain_columns
    assert (gc.column, gc.baseline, gc.setting, gc.value, gc.base_value) == (on, off, "constrained", True, False)
    assert gc.name == f"{on} vs constrained=false"

    g1 = board.gains[("m1", gc.name)]
    # 6/8 - 4/8; discordant: tasks 0, 1 (baseline wins only), 4-7 (setting wins only):
    # McNemar exact p = 2 * P(Binomial(6, 1/2) <= 2) = 2 * (1 + 6 + 15) / 64
    assert g1.diff.point == 0.25 and g1.diff.n == 8 and g1.metric == "win_rate"
    assert (g1.test.b, g1.test.c, g1.test.n, g1.test.p) == (2, 4, 8, 2 * 22 / 64)
    assert g1.diff.lo < 0 < 0.25 < g1.diff.hi

    # m2: paired over the 6 tasks both cells scored, not the cells' own rates (6/8 and 2/6)
    assert board.entries[("m2", off)].interval.point == 0.75 and board.entries[("m2", on)].interval.point == 2 / 6
    g2 = board.gains[("m2", gc.name)]
    assert g2.diff.point == pytest.approx(2 / 6 - 1) and g2.diff.n == 6
    assert (g2.test.b, g2.test.c, g2.test.n, g2.test.p) == (4, 0, 6, 2 / 16)  # 2 * P(Binomial(4, 1/2) = 0)
    # the interval is the report's paired bootstrap over those units
    base = {sid: (1.0 if 2 <= i else 0.0, 1.0) for i, sid in enumerate(ids)}
    setting = {sid: (1.0 if i in (2, 3) else 0.0, 1.0) for i, sid in enumerate(ids) if i >= 2}
    assert g2.diff == paired_diff_ci(base, setting)
    assert g2.test == mcnemar(base, setting)
    assert g2.diff.lo <= g2.diff.point <= g2.diff.hi <= 0

    # the CSV carries the gains
    rows = list(csv.reader(io.StringIO(board.csv())))
    assert rows[0][-5:] == [gc.name, f"{gc.name} lo", f"{gc.name} hi", f"{gc.name} p", f"{gc.name} n"]
    assert rows[1][0] == "m1" and rows[1][-5] == "0.25" and rows[1][-2:] == ["0.6875", "8"]
    assert rows[2][0] == "m2" and rows[2][-5] == "-0.666667" and rows[2][-2:] == ["0.125", "6"]

    # the same pair in `callbench report` (a comparison against the first run) says the same
    from callbench.report.build import build_report

    rep = build_report([sweep / "runs" / "m2-off", sweep / "runs" / "m2-on"], html=tmp_path / "cmp.html")
    stat = next(s for s in rep.model.stats if s.metric.key == "win_rate")
    assert stat.diffs[1] == g2.diff and stat.tests[1] == g2.test


def test_baselines_of_two_varied_settings():
    from callbench.sweep.leaderboard import _gain_columns

    cells = [
        {"track": "webapi", "settings": {"setup": s, "constrained": c, "limit": 5}}
        for s in ("full", "args")
        for c in (False, True)
    ] + [{"track": "nested", "settings": {"limit": n}} for n in (4, 8)]
    got = [(g.column, g.baseline, g.setting) for g in _gain_columns(cells)]
    c = "webapi setup={} constrained={} limit=5".format
    assert got == [
        (c("full", "true"), c("full", "false"), "constrained"),
        (c("args", "false"), c("full", "false"), "setup"),
        (c("args", "true"), c("full", "true"), "setup"),  # each varied setting against its own baseline
        (c("args", "true"), c("args", "false"), "constrained"),
    ]  # and no gain over limit: a selection, no treatment


HOSTILE = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def builtin_sweep(tmp_path_factory, nested_gold) -> Path:
    """A sweep of the built-in sets: gold and a replay (half of nested right) x webapi (setup full
    and args) and nested (strict and compat scoring), plus a replay whose file is missing and whose
    path holds HTML (the cell fails; its error quotes the path)."""
    root = tmp_path_factory.mktemp("builtin")
    preds = _replay(root / "preds.jsonl", nested_gold, {0, 2, 4, 6})
    bad = root / HOSTILE / "none.jsonl"
    grid = root / "grid.yaml"
    grid.write_text(
        f"models: [gold, {json.dumps('replay:' + str(preds))}, {json.dumps('replay:' + str(bad))}]\n"
        "tracks:\n  webapi: {limit: 3, setup: [full, args]}\n  nested: {limit: 8, scoring: [strict, compat]}\n"
    )
    run_local(load_grid(grid), root / "sweep", workers=2)
    return root / "sweep"


def test_leaderboard_of_the_built_in_sets_renders_table_csv_and_page(builtin_sweep, monkeypatch):
    # a wide console: the module's console keeps the width it read from COLUMNS when it was made,
    # which in the full suite an earlier test decides
    from callbench.cli.options import out_console

    monkeypatch.setattr(out_console, "_width", 300)
    res = CliRunner().invoke(app, ["leaderboard", str(builtin_sweep)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    page = builtin_sweep / "leaderboard.html"
    text = " ".join(res.output.split())
    assert f"leaderboard page: {page}" in text
    assert "Correct implementations" in res.output and "Win rate" in res.output
    assert "+0.0 pp [+0.0, +0.0] p=1" in res.output  # gold's gains
    assert "vs setup=full" in res.output and "vs scoring=strict" in res.output
    assert "[+0.0, +0.0]" in res.output  # the table's cells are text, not rich markup
    board = callbench.leaderboard(builtin_sweep)
    assert len(board.models) == 3 and len(board.columns) == 4 and len(board.gain_columns) == 2
    # gold: every cell 100 %, no gain anywhere (no discordant pair: p = 1)
    for col in board.columns:
        assert board.entries[("gold", col)].interval.point == 1.0
    for gc in board.gain_columns:
        g = board.gains[("gold", gc.name)]
        assert g.diff.point == 0 and g.test.p == 1.0
    html = page.read_text()
    assert HOSTILE not in html and "&lt;img src=x onerror=" in html  # escaped, never markup
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html  # loads nothing
    other = builtin_sweep.parent / "elsewhere" / "board.html"
    res = CliRunner().invoke(app, ["leaderboard", str(builtin_sweep), "--csv", "--html", str(other)])
    assert res.exit_code == 0 and other.is_file()
    assert "vs scoring=strict p" in res.output


def test_an_unwritable_page_is_one_line(sweep, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(app, ["leaderboard", str(sweep), "--html", str(blocker / "board.html")])
    assert res.exit_code != 0
    assert "cannot write the leaderboard page" in " ".join(res.output.split())
