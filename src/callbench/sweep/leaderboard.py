"""A sweep's leaderboard: models as rows, the grid's cells (a track and its settings) as columns,
each track's headline metric with its 95 % interval, and the gain of each setting over its baseline
with a paired test.

Nothing statistical is computed here: each cell's run directory is loaded and re-aggregated as
``callbench report`` does (:func:`callbench.report.build.load_run`), the metric's per-unit counts
come from the track's report view (``units``) and the interval from the report's bootstrap
(:func:`callbench.report.stats.ratio_ci`, same seed and resamples as the report's default), so a
leaderboard cell and that run's report agree.

**Gains.** Within a track, a setting whose value varies among the columns (``constrained: [false,
true]``) is a treatment; its *baseline* is the value of the track's first column, i.e. the first
value the grid lists (``false`` here). A column whose value differs from the baseline is compared
with the column that has every other setting equal and this one at its baseline, for each model:
the paired difference ``metric(column) - metric(baseline)`` over the sample ids both runs scored,
with its paired bootstrap interval (:func:`callbench.report.stats.paired_diff_ci`) and, where every
unit is pass/fail, McNemar's exact test (:func:`callbench.report.stats.mcnemar`): what ``callbench
report BASELINE COLUMN`` shows for the pair. A column that varies two settings gets a gain for
each. Settings that select samples (``limit``, ``ids``, ``groups``) or only change how a cell runs
(concurrency and the like, :data:`callbench.sweep.grid.RUNTIME_SETTINGS`) are no treatments.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError, ConfigError
from callbench.report.build import load_run
from callbench.report.model import MetricDef, get_view
from callbench.report.stats import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    Interval,
    McNemar,
    Units,
    mcnemar,
    paired_diff_ci,
    ratio_ci,
)
from callbench.sweep.grid import RUNTIME_SETTINGS, Cell
from callbench.sweep.manifest import MANIFEST, cell_state, read_manifest, run_dir

#: Each track's headline metric, as its paper reports it first: WAPIIBench's correct
#: implementations (over all tasks), NESTFUL's win rate, StateEval's pass@1. A track not named here
#: gets the first metric its report view puts an interval on.
HEADLINE = {"webapi": "correct_implementations_t", "nested": "win_rate", "stateful": "pass@1"}

#: Settings whose variation is no treatment (see the module doc): no gains over them.
NOT_TREATMENTS = frozenset({"limit", "ids", "groups", "per_group"}) | RUNTIME_SETTINGS


@dataclass
class Entry:
    """One model's result in one column: the metric with its interval, or why there is none."""

    state: str  # the cell's state, read from its run directory (done, partial n/m, todo, failed)
    interval: Interval | None = None
    metric: str = ""
    error: str | None = None
    units: Units | None = field(default=None, repr=False)  # the metric's per-unit counts, for gains


@dataclass(frozen=True)
class GainColumn:
    """A column compared with its baseline column: they differ in ``setting`` alone."""

    column: str
    baseline: str
    setting: str
    value: Any
    base_value: Any

    @property
    def name(self) -> str:
        """``webapi constrained=true vs constrained=false`` (what the CSV's header says)."""
        return f"{self.column} vs {setting_text(self.setting, self.base_value)}"


@dataclass
class Gain:
    """One model's gain in one gain column: ``metric(column) - metric(baseline)`` over the units
    both cells scored, its paired 95 % interval, and McNemar's exact test (None: not pass/fail)."""

    diff: Interval
    test: McNemar | None
    metric: str


@dataclass
class Leaderboard:
    columns: list[str]  # "track setting=value ..." (the cells of one model, in grid order)
    column_metric: dict[str, str]  # column -> its metric's label
    models: list[str]
    labels: dict[str, str] = field(default_factory=dict)  # column -> its label naming only what varies
    notes: list[str] = field(default_factory=list)  # the settings each track's columns share
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)  # (model, column) -> entry
    gain_columns: list[GainColumn] = field(default_factory=list)
    gains: dict[tuple[str, str], Gain] = field(default_factory=dict)  # (model, GainColumn.name) -> its gain

    def csv(self) -> str:
        """The table as CSV: a model per row; per column its point estimate and 95 % bounds, as
        shares (0..1), empty where the cell has no result; then per gain column (``COLUMN vs
        SETTING=BASELINE``) the paired difference with its 95 % bounds, McNemar's p (empty where
        the metric is not pass/fail) and the number of paired units."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        header = ["model"]
        for col in self.columns:
            header += [col, f"{col} lo", f"{col} hi", f"{col} n"]
        for gc in self.gain_columns:
            header += [gc.name, f"{gc.name} lo", f"{gc.name} hi", f"{gc.name} p", f"{gc.name} n"]
        writer.writerow(header)
        for model in self.models:
            row: list[Any] = [model]
            for col in self.columns:
                e = self.entries.get((model, col))
                iv = e.interval if e is not None else None
                row += [_num(iv.point if iv else None), _num(iv.lo if iv else None), _num(iv.hi if iv else None)]
                row.append(iv.n if iv else "")
            for gc in self.gain_columns:
                g = self.gains.get((model, gc.name))
                d = g.diff if g is not None else None
                row += [_num(d.point if d else None), _num(d.lo if d else None), _num(d.hi if d else None)]
                row += [_num(g.test.p) if g is not None and g.test is not None else "", d.n if d else ""]
            writer.writerow(row)
        return buf.getvalue()

    def gains_of(self, model: str, column: str) -> list[tuple[GainColumn, Gain | None]]:
        """The gain columns of ``column`` (one per setting it varies from a baseline), with this
        model's gain in each (None: a cell without a result)."""
        return [(gc, self.gains.get((model, gc.name))) for gc in self.gain_columns if gc.column == column]


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def setting_text(key: str, value: Any) -> str:
    """``key=value`` as the column names write a setting (JSON for what is not a string)."""
    return f"{key}={value if isinstance(value, str) else json.dumps(value)}"


def _column(cell: dict[str, Any]) -> str:
    settings = cell.get("settings") or {}
    return " ".join([str(cell.get("track")), *(setting_text(k, v) for k, v in settings.items())])


def _short_labels(cells: list[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """Each column's label naming only the settings that vary among its track's columns, and the
    settings every column of a track shares (``webapi: limit=20``), said once under the table."""
    by_track: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        by_track.setdefault(str(c.get("track")), []).append(c.get("settings") or {})
    shared: dict[str, dict[str, Any]] = {}
    for track, settings in by_track.items():
        keys = set().union(*settings)
        shared[track] = {
            k: settings[0][k]
            for k in keys
            if all(k in s for s in settings) and all(json.dumps(s[k]) == json.dumps(settings[0][k]) for s in settings)
        }
    labels = {}
    for c in cells:
        track = str(c.get("track"))
        varying = [setting_text(k, v) for k, v in (c.get("settings") or {}).items() if k not in shared[track]]
        labels[_column(c)] = " ".join([track, *varying])
    notes = [f"{t}: {' '.join(setting_text(k, v) for k, v in sorted(common.items()))}" for t, common in shared.items() if common]
    return labels, notes


def _headline(track: str, scoring: str, summary: dict[str, Any]) -> MetricDef:
    view = get_view(track)
    defs = view.interval_metrics(scoring, [summary])
    wanted = HEADLINE.get(track)
    found = next((d for d in defs if d.key == wanted), None) or (defs[0] if defs else None)
    if found is None:
        raise ConfigError(f"leaderboard: track '{track}' has no metric with an interval")
    return found


def _entry(sweep_dir: Path, cell: dict[str, Any]) -> tuple[Entry, str]:
    name = str(cell.get("name"))
    if not name or "/" in name or name in (".", ".."):
        return Entry("unreadable", error=f"{sweep_dir / MANIFEST}: cell name {name!r} is not a directory name"), ""
    # the state as the run directory holds it now (a cell resumed by hand since the sweep counts)
    error = cell.get("error") if isinstance(cell.get("error"), str) else None
    st = cell_state(sweep_dir, Cell(str(cell.get("track")), str(cell.get("model")), {}, name), {name: error} if error else {})
    if st.state != "done":
        return Entry(st.text() if st.state == "partial" else st.state, error=st.error), ""
    run = load_run(run_dir(sweep_dir, Cell("", "", {}, name)), None)
    track = str(run.summary["track"])
    scoring = str(run.summary["scoring"])
    metric = _headline(track, scoring, run.summary)
    units = get_view(track).units(run.counted, scoring, [metric]).get(metric.key)
    iv = ratio_ci(units, n_boot=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED) if units else None
    return Entry("done", iv, metric.key, units=units or None), metric.label


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _gain_columns(cells: list[dict[str, Any]]) -> list[GainColumn]:
    """Each column that differs from a column of its track in one treatment setting alone, that
    setting being at its baseline there (the value of the track's first column)."""
    by_track: dict[str, dict[str, dict[str, Any]]] = {}  # track -> column -> settings (grid order)
    for c in cells:
        by_track.setdefault(str(c.get("track")), {}).setdefault(_column(c), c.get("settings") or {})
    out: list[GainColumn] = []
    for columns in by_track.values():
        settings = list(columns.values())
        first = settings[0]
        varied = [k for k in first if k not in NOT_TREATMENTS and any(k not in s or not _same(s[k], first[k]) for s in settings)]
        for col, s in columns.items():
            for key in varied:
                if key not in s or _same(s[key], first[key]):
                    continue
                want = {**s, key: first[key]}
                base = next((c for c, t in columns.items() if t.keys() == want.keys() and _same(t, want)), None)
                if base is not None:
                    out.append(GainColumn(col, base, key, s[key], first[key]))
    return out


def _gain(entry: Entry | None, base: Entry | None) -> Gain | None:
    """The paired comparison of two cells of one model, as ``callbench report BASE ENTRY`` pairs
    runs (None unless both are done with the same metric)."""
    if entry is None or base is None or not entry.units or not base.units or entry.metric != base.metric:
        return None
    diff = paired_diff_ci(base.units, entry.units, n_boot=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED)
    return Gain(diff, mcnemar(base.units, entry.units), entry.metric)


def build_leaderboard(sweep_dir: Path) -> Leaderboard:
    """The leaderboard of the sweep under ``sweep_dir`` (its ``sweep.json`` names the cells)."""
    manifest = read_manifest(sweep_dir)
    if manifest is None or not isinstance(manifest.get("cells"), list):
        raise ConfigError(f"{sweep_dir / MANIFEST}: no sweep manifest (run 'callbench sweep GRID.yaml --out {sweep_dir}' first)")
    cells = [c for c in manifest["cells"] if isinstance(c, dict)]
    models = list(dict.fromkeys(str(c.get("model")) for c in cells))
    columns = list(dict.fromkeys(_column(c) for c in cells))
    labels, notes = _short_labels(cells)
    board = Leaderboard(columns=columns, column_metric={}, models=models, labels=labels, notes=notes)
    for cell in cells:
        col = _column(cell)
        try:
            entry, label = _entry(sweep_dir, cell)
        except CallbenchError as exc:
            entry, label = Entry("unreadable", error=" ".join(str(exc).split())), ""
        board.entries[(str(cell.get("model")), col)] = entry
        if label:
            board.column_metric.setdefault(col, label)
    board.gain_columns = _gain_columns(cells)
    for gc in board.gain_columns:
        for model in models:
            gain = _gain(board.entries.get((model, gc.column)), board.entries.get((model, gc.baseline)))
            if gain is not None:
                board.gains[(model, gc.name)] = gain
    return board


def gain_text(gain: Gain | None) -> str:
    """A gain: ``+12.5 pp [3.1, 20.0] p=0.031`` (percentage points), or ``–``."""
    d = gain.diff if gain is not None else None
    if gain is None or d is None or d.point is None:
        return "–"
    bounds = f" [{100 * d.lo:+.1f}, {100 * d.hi:+.1f}]" if d.lo is not None and d.hi is not None else ""
    p = f" p={gain.test.p:.3g}" if gain.test is not None else ""
    return f"{100 * d.point:+.1f} pp{bounds}{p}"


def entry_text(entry: Entry | None, sep: str = " ") -> str:
    """A table cell: ``85.0 % [80.1, 89.2]``, or the cell's state."""
    if entry is None:
        return "–"
    iv = entry.interval
    if entry.state != "done" or iv is None or iv.point is None:
        return entry.state if entry.state != "done" else "–"  # done without a defined metric (no unit counts)
    bounds = f"{sep}[{100 * iv.lo:.1f}, {100 * iv.hi:.1f}]" if iv.lo is not None and iv.hi is not None else ""
    return f"{100 * iv.point:.1f} %{bounds}"
