"""Terminal output of the report model (rich): the same tables the HTML shows.

The ``print_*_summary`` functions print one run's tables right after ``callbench run``; they
build the same tables as ``callbench report`` through the track's view.

A table is never cut to the terminal's width (80 columns when the output is not a terminal): one
too wide even with its headers and labels wrapped at spaces is printed in parts, each repeating
the first (label) column, with column widths chosen so no word is cut (see :func:`rich_tables`).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
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
from callbench.report.nested import NESTED_KEYS, summary_tables
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
    "print_table",
    "relative_gain",
    "rich_tables",
    "stats_table",
    "summary_table",
    "to_rich",
]


def to_rich(
    table: Table, columns: list[int] | None = None, widths: list[int] | None = None, part: tuple[int, int] | None = None
) -> RichTable:
    """A model table as a rich table (tooltips are HTML-only): ``columns`` (indices, default all),
    with fixed content ``widths`` if given; ``part`` (k, n) names the part in the title. Cells wrap
    at spaces and a word longer than its column folds: nothing is cut off with an ellipsis."""
    columns = list(range(len(table.columns))) if columns is None else columns
    title = table.title if part is None else f"{table.title} (part {part[0]} of {part[1]})"
    last = part is None or part[0] == part[1]
    out = RichTable(title=escape(title), caption=escape(table.caption) if table.caption and last else None)
    for k, i in enumerate(columns):
        col = table.columns[i]
        out.add_column(
            escape(col.text),
            justify="left" if col.align == "left" else "right",
            style="bold" if i == 0 else None,
            overflow="fold",
            width=None if widths is None else widths[k],
        )
    for r, row in enumerate(table.rows):
        if r in table.sections and r > 0:
            out.add_section()
        out.add_row(*[escape(row[i].text) if i < len(row) else "" for i in columns])
    return out


HEADER_FOLD = 20  # a longer word in a header (a model spec, a URL) may fold; a value never does


def _extent(table: Table, i: int) -> tuple[int, int, int]:
    """Column ``i``'s narrowest width (its longest word; a header word folds beyond
    HEADER_FOLD), the width of its longest body line and of its longest line, header included."""

    def longest(texts: list[str], unit) -> int:
        return max((cell_len(u) for t in texts for line in t.split("\n") for u in unit(line)), default=1)

    head = [table.columns[i].text]
    body = [row[i].text for row in table.rows if i < len(row)]
    narrowest = max(longest(body, str.split), min(longest(head, str.split), HEADER_FOLD))
    whole = longest(body, lambda line: [line])
    return narrowest, max(narrowest, whole), max(whole, longest(head, lambda line: [line]))


def _overhead(n_columns: int) -> int:
    """Borders and padding of a rich table (the default box, padding 1) with ``n_columns``."""
    return 3 * n_columns + 1


def _fit(extents: list[tuple[int, int, int]], width: int) -> list[int]:
    """Content widths for columns of ``extents`` (see :func:`_extent`) within ``width``: each at
    least its narrowest; what is left goes first to the body lines that would wrap, then to the
    headers, in proportion to what each column lacks."""
    room = width - _overhead(len(extents))
    widths = [e[0] for e in extents]
    if sum(widths) >= room:  # cannot fit without folding words: shrink evenly, never below 1
        while sum(widths) > room and max(widths) > 1:
            widths[widths.index(max(widths))] -= 1
        return widths
    for stage in (1, 2):
        spare = room - sum(widths)
        lacking = [(e[stage] - w, j) for j, (w, e) in enumerate(zip(widths, extents, strict=True)) if e[stage] > w]
        total = sum(d for d, _ in lacking)
        if not lacking or spare <= 0:
            continue
        if total <= spare:
            for d, j in lacking:
                widths[j] += d
            continue
        for d, j in lacking:
            widths[j] += d * spare // total
        for _, j in lacking:  # what rounding left over, one each
            if sum(widths) < room and widths[j] < extents[j][stage]:
                widths[j] += 1
    return widths


def rich_tables(table: Table, width: int) -> list[RichTable]:
    """``table`` as rich tables no wider than ``width``: one when it fits (wrapping headers and
    labels at spaces if need be), else parts of as many columns as fit, each repeating the first."""
    n = len(table.columns)
    extents = [_extent(table, i) for i in range(n)]
    if sum(e[2] for e in extents) + _overhead(n) <= width:
        return [to_rich(table)]
    if sum(e[0] for e in extents) + _overhead(n) <= width or n <= 2:
        return [to_rich(table, widths=_fit(extents, width))]

    def fits(group: list[int]) -> bool:
        return sum(extents[j][0] for j in (0, *group)) + _overhead(len(group) + 1) <= width

    groups: list[list[int]] = []  # as many columns as fit in each part, in order
    current: list[int] = []
    for i in range(1, n):
        if current and not fits([*current, i]):
            groups.append(current)
            current = []
        current.append(i)
    groups.append(current)
    # as many parts, of about equal numbers of columns, where they fit
    q, r = divmod(n - 1, len(groups))
    sizes = [q + 1] * r + [q] * (len(groups) - r)
    starts = [1 + sum(sizes[:k]) for k in range(len(sizes))]
    even = [list(range(a, a + size)) for a, size in zip(starts, sizes, strict=True)]
    if all(fits(g) for g in even):
        groups = even
    out = []
    for k, group in enumerate(groups, 1):
        cols = [0, *group]
        part = to_rich(table, cols, _fit([extents[j] for j in cols], width), part=(k, len(groups)))
        # as wide as its title and caption, so they do not wrap in a narrow part
        part.min_width = min(width, max(cell_len(str(part.title or "")), cell_len(str(part.caption or ""))))
        out.append(part)
    return out


def print_table(console: Console, table: Table) -> None:
    """Print a model table within the console's width (see :func:`rich_tables`)."""
    for t in rich_tables(table, console.width):
        console.print(t)


def summary_table(summaries: list[dict[str, Any]], labels: list[str]) -> RichTable:
    """The paper-style webapi table (metrics × runs, _t and _e; relative gain for two runs)."""
    return to_rich(paper_table(summaries, labels))


def by_api_table(summary: dict[str, Any]) -> RichTable:
    return to_rich(_by_api_model(summary))


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """A webapi run's tables (after ``callbench run webapi``)."""
    print_table(console, paper_table([summary], [str(summary.get("model"))]))
    if summary.get("by_api"):
        print_table(console, _by_api_model(summary))
    line = constraint_line(summary)
    if line:
        console.print(line, highlight=False)
    if not summary.get("complete", True):
        console.print(f"[yellow]partial: {summary['n']} of {summary['n_selected']} samples done[/yellow]")


def print_nested_summary(summary: dict[str, Any], console: Console) -> None:
    """Overall metrics plus the by-domain, by-length, by-references and by-shape breakdowns of a nested run."""
    for table in summary_tables(summary):
        print_table(console, table)
    if summary.get("metrics"):  # the rows win rate is over, and why the rest are not executable
        from callbench.tracks.nested.metrics import win_rate_note

        console.print(win_rate_note(summary["metrics"]), highlight=False)


def print_stateful_summary(summary: dict[str, Any], console: Console) -> None:
    """pass@k, error rates and complexity means, overall and per scenario."""
    print_table(console, scenario_table(summary))


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
        print_table(console, t)
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
        print_table(console, model.stats_table)
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

