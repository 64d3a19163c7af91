"""Terminal output of the report model (rich): the same tables the HTML shows.

The ``print_*_summary`` functions print one run's tables right after ``callbench run``; they
build the same tables as ``callbench report`` through the track's view.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from callbench.report.model import (
    Cell,
    Column,
    ReportModel,
    RunInfo,
    Table,
    fmt,
    fmt_ci,
    fmt_diff,
    fmt_p,
)
from callbench.report.nested import NESTED_KEYS, group_table
from callbench.report.stateful import scenario_table
from callbench.report.webapi import by_api_table as _by_api_model
from callbench.report.webapi import constraint_line, paper_table, relative_gain

__all__ = [
    "NESTED_KEYS",
    "by_api_table",
    "constraint_line",
    "fmt",
    "print_model",
    "print_nested_summary",
    "print_stateful_summary",
    "print_summary",
    "relative_gain",
    "stats_table",
    "summary_table",
    "to_rich",
]


def to_rich(table: Table) -> RichTable:
    """A model table as a rich table (tooltips are HTML-only)."""
    out = RichTable(title=escape(table.title), caption=escape(table.caption) if table.caption else None)
    for i, col in enumerate(table.columns):
        out.add_column(
            escape(col.text),
            justify="left" if col.align == "left" else "right",
            style="bold" if i == 0 else None,
            no_wrap=i == 0,
        )
    for i, row in enumerate(table.rows):
        if i in table.sections and i > 0:
            out.add_section()
        out.add_row(*[escape(c.text) for c in row])
    return out


def summary_table(summaries: list[dict[str, Any]], labels: list[str]) -> RichTable:
    """The paper-style webapi table (metrics × runs, _t and _e; relative gain for two runs)."""
    return to_rich(paper_table(summaries, labels))


def by_api_table(summary: dict[str, Any]) -> RichTable:
    return to_rich(_by_api_model(summary))


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """A webapi run's tables (after ``callbench run webapi``)."""
    console.print(summary_table([summary], [str(summary.get("model"))]))
    if summary.get("by_api"):
        console.print(by_api_table(summary))
    line = constraint_line(summary)
    if line:
        console.print(line, highlight=False)
    if not summary.get("complete", True):
        console.print(f"[yellow]partial: {summary['n']} of {summary['n_selected']} samples done[/yellow]")


def print_nested_summary(summary: dict[str, Any], console: Console) -> None:
    """Overall metrics plus the by-domain and by-length breakdowns of a nested run."""
    console.print(to_rich(group_table(summary)))


def print_stateful_summary(summary: dict[str, Any], console: Console) -> None:
    """pass@k, error rates and complexity means, overall and per scenario."""
    console.print(to_rich(scenario_table(summary)))


def stats_table(model: ReportModel) -> Table | None:
    """Each interval metric: every run's value with its 95% bootstrap interval; for a comparison,
    the paired difference against the first run and McNemar's exact test where pass/fail."""
    if not model.stats:
        return None
    runs = model.runs
    first = runs[0].label
    cols = [Column("metric (%)", align="left")] + [Column(f"{r.label}\n[95% CI]", r.model) for r in runs]
    for r in runs[1:]:
        cols.append(Column(f"{r.label} − {first}\n[95% CI]", "paired bootstrap over the shared samples"))
        cols.append(Column(f"McNemar p\n({r.label} vs {first})", "exact, two-sided; n01/n10 = discordant pairs"))
    where = f"on the {model.comparison.n_shared} shared samples" if model.comparison else "over the run's samples"
    title = "comparison" if model.comparison else "95% bootstrap intervals"
    table = Table(
        title=f"{model.track} · {title} · {where}",
        columns=cols,
        caption=f"percentile bootstrap, {model.n_boot} resamples, seed {model.seed}; pp = percentage points",
        id="stats",
    )
    for s in model.stats:
        cells: list[Cell | str] = [s.metric.label]
        for iv in s.per_run:
            if iv is None or iv.point is None:
                cells.append("–")
            else:
                value = fmt(iv.point) if s.metric.unit == "%" else f"{iv.point:.2f}"
                cells.append(Cell(f"{value}\n{fmt_ci(iv, s.metric.unit)}"))
        for diff, test in zip(s.diffs[1:], s.tests[1:], strict=True):
            cls = None
            if diff is not None and diff.lo is not None and diff.hi is not None and (diff.lo > 0 or diff.hi < 0):
                better = (diff.point or 0) > 0
                if s.metric.higher_is_better is False:
                    better = not better
                cls = "better" if better else "worse"
            cells.append(Cell(fmt_diff(diff, s.metric.unit).replace(" [", "\n[", 1), cls=cls))
            cells.append(
                Cell(
                    "–" if test is None else f"{fmt_p(test.p)}\n({test.b}/{test.c})",
                    title=None if test is None else f"{test.b} pass only in {first}, {test.c} pass only in the other; {test.n} pairs",
                )
            )
        table.add(*cells)
    return table


def print_model(model: ReportModel, console: Console) -> None:
    """The report on the terminal: tables, notes, warnings, intervals and the failing samples."""
    for t in model.tables:
        console.print(to_rich(t))
    for r in model.runs:
        for line in r.notes:
            console.print(f"{escape(r.label)}: {escape(line)}", highlight=False)
    if model.comparison is not None:
        comp = model.comparison
        parts = ", ".join(f"{r.label} {r.n_total}" for r in model.runs)
        console.print(f"shared samples: {comp.n_shared} (samples per run: {escape(parts)})", highlight=False)
    for w in model.warnings:
        console.print(f"[yellow]warning: {escape(w)}[/yellow]", highlight=False, soft_wrap=True)
    if model.stats_table is not None and model.comparison is not None:
        console.print(to_rich(model.stats_table))
    for note in model.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]", highlight=False, soft_wrap=True)
    for i, r in enumerate(model.runs):
        console.print(f"{escape(r.label)}: {_sample_line(model, i, r)}", highlight=False, soft_wrap=True)
    _print_failing(model, console)


FAILING_SHOWN = 10


def _print_failing(model: ReportModel, console: Console) -> None:
    """The first failing samples (one run) or the first samples the runs disagree on (a
    comparison), one line each; the HTML lists them all."""
    if model.comparison is None:
        picked = [e for e in model.samples if e.outcomes[0] is not None and not e.outcomes[0].passed]
        what = "failing samples"
    else:
        picked = [e for e in model.samples if len({o.passed for o in e.outcomes if o is not None}) > 1]
        what = "samples the runs disagree on"
    if not picked:
        return
    more = f" (first {FAILING_SHOWN}; all in the HTML report)" if len(picked) > FAILING_SHOWN else ""
    console.print(f"{len(picked)} {what}{more}:", highlight=False)
    for e in picked[:FAILING_SHOWN]:
        parts = []
        for r, o in zip(model.runs, e.outcomes, strict=True):
            if o is None:
                continue
            state = "pass" if o.passed else o.error_class or "fail"
            text = f"{state}" + (f" ({o.headline})" if o.headline and not o.passed else "")
            parts.append(f"{r.label}: {text}" if model.comparison else text)
        line = f"  {e.id} [{e.group}] " + "; ".join(parts)
        console.print(escape(line[:300]), highlight=False, soft_wrap=True)


def _sample_line(model: ReportModel, i: int, run: RunInfo) -> str:
    classes: dict[str, int] = {}
    for e in model.samples:
        o = e.outcomes[i]
        if o is not None and not o.passed:
            classes[o.error_class or "failed"] = classes.get(o.error_class or "failed", 0) + 1
    total = run.n_passed + run.n_failed
    text = f"{run.n_passed} of {total} samples pass, {run.n_failed} fail"
    if classes:
        text += " (" + ", ".join(f"{k} {v}" for k, v in sorted(classes.items(), key=lambda kv: -kv[1])) + ")"
    return escape(text)

