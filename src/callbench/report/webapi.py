"""Report view of the webapi track (WAPIIBench): the paper-style table, per-API breakdown, and each
sample as a request diff (expected vs generated URL, method and arguments)."""

from __future__ import annotations

import json
from typing import Any

from callbench.report.model import (
    Cell,
    ChartSpec,
    Column,
    MetricDef,
    RunInfo,
    SampleOutcome,
    Series,
    Table,
    TrackView,
    fmt,
    truncate,
)
from callbench.report.stats import Interval, Units
from callbench.tracks.webapi.metrics import COUNT_ROWS, TABLE_ROWS

_LOWER_IS_BETTER = ("illegal", "missing", "unexpected", "unnecessary", "wrong")
BY_API_COLUMNS = (
    ("n", "n"),
    ("correct", "correct_implementations_t"),
    ("w/o cred.", "correct_except_credentials_t"),
    ("exec.", "executable_implementations_t"),
    ("illegal", "illegal_implementations_t"),
    ("URL", "correct_urls_t"),
    ("method", "correct_methods_t"),
    ("names", "correct_argument_names_t"),
    ("values", "correct_argument_values_t"),
)
_HEADLINE = (
    ("Correct impl.", "correct_implementations_t"),
    ("Executable", "executable_implementations_t"),
    ("Illegal impl.", "illegal_implementations_t"),
    ("Correct URLs", "correct_urls_t"),
    ("Correct methods", "correct_methods_t"),
    ("Correct arg. values", "correct_argument_values_t"),
    ("Illegal arguments", "illegal_arguments_t"),
)
# the paper's parallel-coordinate plot: the fine-grained metrics (_t), one axis each; each axis
# says which way is better (↑ higher, ↓ lower: the plot mixes both, issue 31)
PARALLEL_METRICS = (
    ("Correct URLs ↑", "correct_urls_t"),
    ("Correct methods ↑", "correct_methods_t"),
    ("Correct arg. names ↑", "correct_argument_names_t"),
    ("Correct arg. values ↑", "correct_argument_values_t"),
    ("Arg. precision ↑", "mean_argument_precision_t"),
    ("Arg. recall ↑", "mean_argument_recall_t"),
    ("Value cond. acc. ↑", "mean_argument_value_conditional_accuracy_t"),
    ("Missing args ↓", "missing_arguments_t"),
    ("Unexpected args ↓", "unexpected_arguments_t"),
    ("Illegal URLs ↓", "illegal_urls_t"),
    ("Illegal methods ↓", "illegal_methods_t"),
    ("Illegal args ↓", "illegal_arguments_t"),
)
# how a sample ends (the stacked bars): (verdict key, label, colour, where summary["metrics"] counts it)
OUTCOME_CLASSES = (
    ("correct", "correct", "#54A24B", "correct_implementations_t"),
    ("wrong", "wrong (legal)", "#EECA3B", "wrong_implementations_t"),
    ("illegal", "illegal", "#E45756", "illegal_implementations_t"),
    ("no_request", "no request", "#BAB0AC", "absent_requests"),
    ("incomplete_request", "incomplete", "#9D755D", "incomplete_implementations"),
    ("runtime_error", "runtime error", "#B279A2", "runtime_errors"),
    ("timeout", "timeout", "#72B7B2", "timeouts"),
    ("unsatisfiable", "unsatisfiable", "#4C78A8", "unsatisfiable_constraints"),
)
# argument micro-rates: the denominator each one divides by (argument_counts of one sample)
_ARG_DENOMINATOR = {
    "correct_argument_names_t": "expected_t",
    "correct_argument_values_t": "expected_t",
    "missing_arguments_t": "expected_t",
    "unexpected_arguments_t": "all_t",
    "unnecessary_arguments_t": "all_t",
    "illegal_arguments_t": "all_t",
}


def relative_gain(base: float | None, new: float | None) -> str:
    if base is None or new is None:
        return "–"
    if base == 0:
        return "+∞" if new > 0 else "0%"
    return f"{100 * (new - base) / base:+.0f}%"


def constraint_line(summary: dict[str, Any]) -> str | None:
    """One line on what constrained decoding did in a run, or None for unconstrained runs."""
    cd = summary.get("constrained_decoding")
    if not cd:
        return None
    return (
        f"constrained decoding: {cd['samples']} samples, {cd['steps']} steps; the mask changed the model's "
        f"top choice {cd['changed_top']} times ({cd['changed_top_per_sample_mean']:.1f}/sample); mask time "
        f"median {cd['mask_ms_median_of_samples']:.3f} ms (median over samples), worst p99 {cd['mask_ms_p99_max']:.2f} ms; "
        f"unsatisfiable: {cd['unsatisfiable']}"
    )


def paper_table(summaries: list[dict[str, Any]], labels: list[str], titles: list[str] | None = None) -> Table:
    """Metrics (rows) × runs (columns, _t and _e), rates in %; with two runs a relative-gain
    column compares the second with the first (on ``_t``)."""
    first = summaries[0]
    titles = titles or [None] * len(labels)
    cols = [Column("metric (%)", align="left")]
    for label, title in zip(labels, titles, strict=True):
        cols += [Column(f"{label}\n_t", title), Column(f"{label}\n_e", title)]
    two = len(summaries) == 2
    if two:
        cols.append(Column("rel. gain\n(_t)", "(second - first) / first, on the shared samples"))
    table = Table(title=f"{first['track']} · scoring={first['scoring']}", columns=cols, id="paper")
    for name, key in TABLE_ROWS:
        row: list[Cell | str] = [name]
        for s in summaries:
            row += [fmt(s["metrics"].get(f"{key}_t")), fmt(s["metrics"].get(f"{key}_e"))]
        if two:
            row.append(relative_gain(summaries[0]["metrics"].get(f"{key}_t"), summaries[1]["metrics"].get(f"{key}_t")))
        table.add(*row)
    table.section()
    for name, key in (("Samples", "n"), *COUNT_ROWS):
        row = [name]
        for s in summaries:
            row += [fmt(s["metrics"].get(key)), ""]
        if two:
            row.append("")
        table.add(*row)
    return table


def by_api_table(summary: dict[str, Any], label: str | None = None) -> Table:
    """Headline metrics per API for one run."""
    who = label or summary.get("model")
    table = Table(
        title=f"by API · {who} · setup={summary.get('setup')}",
        columns=[Column("API", align="left")] + [Column(c) for c, _ in BY_API_COLUMNS],
        caption="rates in %, over all samples (_t); w/o cred. = correct except credentials",
        id="by-api",
    )
    for api, m in summary.get("by_api", {}).items():
        table.add(api, *[fmt(m.get(key)) for _, key in BY_API_COLUMNS])
    return table


def outcome_counts(summary: dict[str, Any]) -> dict[str, int] | None:
    """How the samples of a run end, keyed by the verdict key of :data:`OUTCOME_CLASSES`; the
    classes partition the samples (the counts sum to ``n``). A sample falls into exactly one:

    * not executable (its verdict has an ``error``): by that error -- ``no_request`` (the code ran
      but sent no request), ``incomplete_request`` (incomplete implementation), ``runtime_error``,
      ``timeout``, ``unsatisfiable`` (constrained decoding found no legal continuation); counted
      in ``absent_requests``, ``incomplete_implementations``, ``runtime_errors``, ``timeouts``,
      ``unsatisfiable_constraints``;
    * executable (no ``error``): by its ``sample`` verdict -- ``correct`` (right endpoint and
      every counted argument right), ``illegal`` (the request breaks the API spec: an illegal URL,
      method or argument), ``wrong`` (legal but not correct); counted as the shares
      ``correct_implementations_t``, ``illegal_implementations_t``, ``wrong_implementations_t`` of
      ``n`` (``wrong`` is ``n_executable`` minus the other two where a summary lacks it).

    None when the summary does not add up (no ``n``, or counts that do not sum to it)."""
    m = summary.get("metrics") or {}
    n = m.get("n", summary.get("n"))
    if not isinstance(n, int) or n <= 0:
        return None
    out: dict[str, int] = {}
    for key, _, _, metric in OUTCOME_CLASSES:
        value = m.get(metric)
        if value is None and key == "wrong" and m.get("n_executable") is not None:
            value = (m["n_executable"] - out.get("correct", 0) - round((m.get("illegal_implementations_t") or 0) * n)) / n
        if value is None:
            value = 0
        out[key] = round(value * n) if metric.endswith("_t") else int(value)
    return out if sum(out.values()) == n else None


class WebApiView(TrackView):
    track = "webapi"
    group_label = "API"
    sample_template = "samples/webapi.html.j2"
    context_what = "expected URLs and methods"
    description = (
        "Rates in %. _t: over all samples; _e: over executable samples. strict: schema-aware values, "
        "case-insensitive header names, legality judged on the generated endpoint; compat: the published "
        "WAPIIBench scorer's definitions."
    )

    # -- tables
    def tables(self, runs: list[RunInfo]) -> list[Table]:
        out = [paper_table([r.summary for r in runs], [r.label for r in runs], [r.model for r in runs])]
        for i, r in enumerate(runs):
            if r.summary.get("by_api"):
                table = by_api_table(r.summary, r.label)
                table.id = f"by-api-{i}"
                out.append(table)
        return out

    def run_notes(self, run: RunInfo) -> list[str]:
        line = constraint_line(run.summary)
        return [line] if line else []

    # -- intervals
    def interval_metrics(self, scoring: str, summaries: list[dict[str, Any]]) -> list[MetricDef]:
        return [
            MetricDef(f"{key}_t", name, "%", not any(w in key for w in _LOWER_IS_BETTER))
            for name, key in TABLE_ROWS
        ]

    def units(self, rows: list[dict[str, Any]], scoring: str, metrics: list[MetricDef]) -> dict[str, Units]:
        from callbench.tracks.webapi.metrics import aggregate
        from callbench.tracks.webapi.scoring import SampleVerdict

        keys = [m.key for m in metrics]
        out: dict[str, dict[str, tuple[float, float]]] = {k: {} for k in keys}
        unknown: set[str] = set()
        for row in rows:
            v = (row.get("verdicts") or {}).get(scoring)
            m = aggregate([SampleVerdict.from_dict(v)], scoring) if isinstance(v, dict) else {}
            counts = m.get("argument_counts") or {}
            for key in keys:
                value = m.get(key)
                if key in _ARG_DENOMINATOR:
                    den = counts.get(_ARG_DENOMINATOR[key], 0)
                elif key.startswith("mean_argument_"):
                    den = 0 if value is None else 1
                else:
                    den = 1
                    if value is None:
                        unknown.add(key)  # e.g. correct_except_credentials of an old run
                out[key][row["id"]] = (float(value * den) if value is not None else 0.0, float(den))
        for key in unknown:
            out[key] = {}
        return out

    # -- charts
    def charts(self, runs: list[RunInfo], intervals: dict[str, list[Interval | None]]) -> list[ChartSpec]:
        series = []
        for i, r in enumerate(runs):
            ivs = [intervals.get(key, [None] * len(runs))[i] for _, key in _HEADLINE]
            series.append(
                Series(
                    r.label,
                    [r.summary["metrics"].get(key) for _, key in _HEADLINE],
                    [iv.lo if iv else None for iv in ivs],
                    [iv.hi if iv else None for iv in ivs],
                    r.model,
                )
            )
        headline = ChartSpec("headline", "Headline metrics (_t), 95% bootstrap CI", [n for n, _ in _HEADLINE], series)
        apis = sorted({g for r in runs for g in r.summary.get("by_api", {})})
        by_api = ChartSpec(
            "by-api",
            "Correct implementations by API (_t)",
            apis + ["all"],
            [
                Series(
                    r.label,
                    [r.summary.get("by_api", {}).get(a, {}).get("correct_implementations_t") for a in apis]
                    + [r.summary["metrics"].get("correct_implementations_t")],
                    title=r.model,
                )
                for r in runs
            ],
        )
        return [headline, by_api, *self.paper_figures(runs)]

    def paper_figures(self, runs: list[RunInfo]) -> list[ChartSpec]:
        """The WAPIIBench paper's figures: the fine-grained metrics as parallel coordinates (one
        line per run) and how the samples end as stacked bars (one bar per run, see
        :func:`outcome_counts`)."""
        parallel = ChartSpec(
            "parallel",
            "Fine-grained metrics (_t), one line per run: ↑ higher is better, ↓ lower is better",
            [n for n, _ in PARALLEL_METRICS],
            [Series(r.label, [r.summary["metrics"].get(key) for _, key in PARALLEL_METRICS], title=r.model) for r in runs],
            kind="parallel",
        )
        counts = [outcome_counts(r.summary) for r in runs]
        if any(c is None for c in counts):
            return [parallel]
        classes = [c for c in OUTCOME_CLASSES if any(cnt[c[0]] for cnt in counts)]  # classes no run has: left out
        outcomes = ChartSpec(
            "outcomes",
            "How the samples end",
            [r.label for r in runs],
            [Series(label, [cnt[key] for cnt in counts], color=color) for key, label, color, _ in classes],
            unit="",
            kind="stacked",
        )
        return [parallel, outcomes]

    # -- samples
    def sample(self, row: dict[str, Any], scoring: str, context: Any) -> SampleOutcome:
        v = (row.get("verdicts") or {}).get(scoring)
        status = row.get("status")
        task = (context or {}).get(row["id"]) if isinstance(context, dict) else None
        code = truncate(row.get("parsed") or row.get("raw_output") or "")
        detail: dict[str, Any] = {"task": getattr(task, "task", None), "code": code, "error": row.get("error")}
        if not isinstance(v, dict):
            cls = "backend_error" if status == "backend_error" else "unreadable"
            return SampleOutcome(False, cls, f"{cls}: no {scoring} verdict stored ({row.get('error') or v!r})", detail)
        passed = v.get("sample") == "correct"
        err = v.get("error")
        if passed:
            cls = None
        elif status == "backend_error":
            cls = "backend_error"
        else:
            cls = err or v.get("sample") or "wrong"
        expected = task.config.as_dict() if task is not None else {}
        execution = row.get("execution") if isinstance(row.get("execution"), dict) else {}
        request = [
            {
                "field": "URL",
                "expected": expected.get("url", "?"),
                "generated": execution.get("url"),
                "verdict": v.get("url") or ("no request" if err else None),
            },
            {
                "field": "method",
                "expected": str(expected.get("method", "?")).upper(),
                "generated": str(execution.get("method")).upper() if execution.get("method") else None,
                "verdict": v.get("method") or ("no request" if err else None),
            },
        ]
        args = [
            {
                "where": f"{a.get('location')}.{a.get('name')}",
                "expected": _show(a.get("expected")) if a.get("verdict") not in ("unnecessary", "illegal") else "",
                "actual": _show(a.get("actual")) if a.get("verdict") != "missing" else "",
                "verdict": a.get("verdict"),
                "credential": bool(a.get("credential")),
            }
            for a in v.get("arguments") or []
            if isinstance(a, dict)
        ]
        if err and v.get("expected_counts"):
            detail["expected_counts"] = v["expected_counts"]
        detail.update(request=request, arguments=args, endpoint=v.get("endpoint"), sample_verdict=v.get("sample"))
        if passed:
            headline = "correct"
        elif err:
            headline = " ".join(str(row.get("error") or "").split())[:160]
        else:
            bad = [f"URL {v.get('url')}"] if v.get("url") != "correct" else []
            bad += [f"method {v.get('method')}"] if v.get("method") != "correct" else []
            bad += [f"{a['where']} {a['verdict']}" for a in args if a["verdict"] != "correct"]
            headline = ", ".join(bad[:6]) + (f" (+{len(bad) - 6} more)" if len(bad) > 6 else "")
        return SampleOutcome(passed, cls, headline, detail)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
