"""The report model every track fills in, and that both outputs render.

A :class:`TrackView` (one per track, in ``report/<track>.py``) says what a track's report holds:
its metric tables, its breakdowns, which metrics get intervals and how, its charts and how one
sample is shown. :mod:`callbench.report.build` turns loaded runs into a :class:`ReportModel`;
:mod:`callbench.report.table` prints its tables on the terminal and :mod:`callbench.report.html`
renders the same model through Jinja2 templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callbench.report.stats import Interval, McNemar, Units

# -- tables -----------------------------------------------------------------------------------


@dataclass
class Cell:
    text: str
    title: str | None = None  # tooltip (HTML title attribute)
    cls: str | None = None  # CSS class (HTML) / style hint (terminal)


@dataclass
class Column:
    text: str
    title: str | None = None
    align: str = "right"


@dataclass
class Table:
    """Rows of cells under columns; ``sections`` are row indices before which a rule is drawn."""

    title: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""
    sections: list[int] = field(default_factory=list)
    id: str = ""

    def add(self, *cells: Cell | str) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(str(c)) for c in cells])

    def section(self) -> None:
        self.sections.append(len(self.rows))


# -- charts -----------------------------------------------------------------------------------


@dataclass
class Series:
    label: str
    values: list[float | None]
    lo: list[float | None] | None = None  # interval bounds (error bars), same length as values
    hi: list[float | None] | None = None
    title: str | None = None  # full name (legend tooltip)
    color: str | None = None  # fixed colour (e.g. an outcome class); None: the palette's, by position


CHART_KINDS = ("bars", "stacked", "parallel")


@dataclass
class ChartSpec:
    """A chart of ``series`` over ``categories``; ``kind`` says how it is drawn:

    * ``"bars"``: grouped bars, ``categories`` on one axis, one bar per series in each;
    * ``"stacked"``: one bar per category (e.g. a run), stacked from one segment per series (e.g.
      an outcome class); values are counts that partition the category, drawn as shares of the
      category's total (the sum over the series);
    * ``"parallel"``: parallel coordinates, one axis per category (e.g. a metric), one polyline per
      series (e.g. a run) through its values, a marker per value.
    """

    id: str
    title: str
    categories: list[str]
    series: list[Series]
    unit: str = "%"  # "%": values are shares in [0, 1] drawn as percent
    horizontal: bool = False
    drop_if_zero: bool = False  # not drawn when every value is 0 (e.g. error classes of a perfect run)
    kind: str = "bars"  # one of CHART_KINDS

    def __post_init__(self) -> None:
        if self.kind not in CHART_KINDS:
            raise ValueError(f"chart kind {self.kind!r} is not one of {CHART_KINDS}")

    def totals(self) -> list[float]:
        """Per category, the sum of the series' values (a stacked bar's total)."""
        return [sum(s.values[i] or 0 for s in self.series) for i in range(len(self.categories))]

    @property
    def n_points(self) -> int:
        return sum(1 for s in self.series for v in s.values if v is not None)


@dataclass
class Chart:
    spec: ChartSpec
    svg: str  # inline SVG (empty when no plotting library is installed)

    @property
    def n_points(self) -> int:
        return self.spec.n_points


# -- samples ----------------------------------------------------------------------------------


@dataclass
class SampleOutcome:
    """One run's result on one sample, as the track shows it."""

    passed: bool
    error_class: str | None  # None when passed
    headline: str  # one line
    detail: dict[str, Any] = field(default_factory=dict)  # what the track's sample template renders


@dataclass
class SampleEntry:
    id: str
    group: str
    outcomes: list[SampleOutcome | None]  # per run (None: the run has no such sample)


# -- runs and comparisons ---------------------------------------------------------------------


@dataclass
class RunInfo:
    label: str
    model: str  # the full model spec (tooltips)
    directory: Path
    summary: dict[str, Any]  # aggregated over the samples the report uses
    n_total: int  # samples the run holds (counted)
    n_passed: int = 0
    n_failed: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class MetricDef:
    """A metric of a track: ``key`` in ``summary["metrics"]``; ``unit`` "%" (a share), "" (a number)."""

    key: str
    label: str
    unit: str = "%"
    higher_is_better: bool | None = True


@dataclass
class MetricStat:
    metric: MetricDef
    per_run: list[Interval | None]  # None: no interval for this metric in that run
    diffs: list[Interval | None]  # run i vs run 0 (index 0 is None)
    tests: list[McNemar | None]  # run i vs run 0, pass/fail metrics only


@dataclass
class Comparison:
    n_shared: int  # samples every run holds (the comparison uses only these)
    only_in: list[int]  # per run: its samples that some other run lacks


@dataclass
class ReportModel:
    track: str
    scoring: str
    runs: list[RunInfo]
    tables: list[Table]
    charts: list[Chart]
    samples: list[SampleEntry]
    groups: list[str]
    error_classes: list[str]
    group_label: str
    sample_template: str
    description: str = ""
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    comparison: Comparison | None = None  # two or more runs
    stats: list[MetricStat] = field(default_factory=list)  # bootstrap intervals (and paired tests)
    stats_table: Table | None = None
    n_boot: int = 0
    seed: int = 0

    @property
    def is_comparison(self) -> bool:
        return len(self.runs) > 1


# -- what a track provides --------------------------------------------------------------------


class TrackView:
    """Override per track (see ``report/webapi.py``, ``report/nested.py``, ``report/stateful.py``)."""

    track = "base"
    group_label = "group"
    sample_template = "samples/generic.html.j2"
    description = ""

    # what the task data gives the sample views (None: the view needs no task data)
    context_what: str | None = None

    def load_context(self, config: dict[str, Any]) -> tuple[Any, str | None]:
        """Task data the sample views use (expected values), from the run's config; returns
        ``(context, note)`` where note says why it is missing. The report works without it."""
        if self.context_what is None:
            return None, None
        from callbench.report.data import task_data

        return task_data(self.track, config.get("identity") or {}, self.context_what, config.get("data_file"))

    def tables(self, runs: list[RunInfo]) -> list[Table]:
        """Metric tables and breakdowns, for one run or side by side."""
        return []

    def run_notes(self, run: RunInfo) -> list[str]:
        """Lines printed under the tables for one run (e.g. what constrained decoding did)."""
        return []

    def interval_metrics(self, scoring: str, summaries: list[dict[str, Any]]) -> list[MetricDef]:
        """The metrics that get bootstrap intervals (and paired tests), in order."""
        return []

    def units(self, rows: list[dict[str, Any]], scoring: str, metrics: list[MetricDef]) -> dict[str, Units]:
        """Per-unit (numerator, denominator) of each of ``metrics``, keyed by metric key; a metric
        left out (or mapped to no unit) gets no interval."""
        return {}

    def charts(self, runs: list[RunInfo], intervals: dict[str, list[Interval | None]]) -> list[ChartSpec]:
        return []

    def sample(self, row: dict[str, Any], scoring: str, context: Any) -> SampleOutcome:
        raise NotImplementedError


def get_view(track: str) -> TrackView:
    """The report view of ``track``, as its definition names it (see
    :mod:`callbench.tracks.definition`)."""
    from callbench.errors import ConfigError
    from callbench.tracks.definition import definitions, find_definition, resolve

    definition = find_definition(track)
    if definition is None or definition.view is None:
        have = ", ".join(d.name for d in definitions() if d.view is not None)
        raise ConfigError(f"report: no report view for track '{track}' (have: {have})")
    view: TrackView = resolve(definition.view)()
    return view


# -- formatting shared by views ---------------------------------------------------------------


def fmt(value: Any) -> str:
    """A share as percent with one decimal, a count as is, undefined as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{100 * value:.1f}"
    return str(value)


def fmt_number(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)


def fmt_ci(iv: Interval | None, unit: str = "%") -> str:
    """``[lo, hi]`` in the metric's unit, or ``–``."""
    if iv is None or iv.lo is None or iv.hi is None:
        return "–"
    if unit == "%":
        return f"[{100 * iv.lo:.1f}, {100 * iv.hi:.1f}]"
    return f"[{iv.lo:.2f}, {iv.hi:.2f}]"


def fmt_diff(iv: Interval | None, unit: str = "%") -> str:
    """A difference in percentage points (shares) or units, with its interval."""
    if iv is None or iv.point is None:
        return "–"
    if unit == "%":
        text = f"{100 * iv.point:+.1f} pp"
        if iv.lo is not None and iv.hi is not None:
            text += f" [{100 * iv.lo:+.1f}, {100 * iv.hi:+.1f}]"
        return text
    text = f"{iv.point:+.2f}"
    if iv.lo is not None and iv.hi is not None:
        text += f" [{iv.lo:+.2f}, {iv.hi:+.2f}]"
    return text


def fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3g}"


def truncate(text: Any, limit: int = 4000) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"
