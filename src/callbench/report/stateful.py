"""Report view of the stateful track (StateEval): pass@k, the error taxonomy and task complexity,
overall and per scenario; each sample as its program and the result of every test case (verdict,
reason, and the reference's recorded result and state from the benchmark)."""

from __future__ import annotations

import json
from collections import defaultdict
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
    fmt_number,
    truncate,
)
from callbench.report.stats import Interval, Units

_MCP_FIELDS = ("steps", "tool_calls", "executed", "tool_errors", "tool_timeouts", "unknown_tools", "malformed_arguments")


def _keys(metrics: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    passk = sorted((k for k in metrics if k.startswith("pass@")), key=lambda k: int(k[5:]) if k[5:].isdigit() else 0)
    errors = [k for k in metrics if k.startswith("error_")]
    means = [k for k in metrics if k.startswith("mean_")]
    return passk, errors, means


def scenario_table(summary: dict[str, Any], label: str | None = None) -> Table:
    """One run: metrics (rows) × all / each scenario (columns)."""
    groups = [("all", summary.get("metrics") or {})] + list(summary.get("by_scenario", {}).items())
    table = Table(
        title=f"stateful · {label or summary.get('model')}",
        columns=[Column("metric", align="left")] + [Column(f"{name}\n(tasks={m.get('n_tasks')})") for name, m in groups],
        caption="pass@k and error rates in %",
        id="scenarios",
    )
    passk, errors, means = _keys(summary.get("metrics") or {})
    for key in passk + errors:
        table.add(key, *[fmt(m.get(key)) for _, m in groups])
    if means:
        table.section()
    for key in means:
        table.add(key, *[fmt_number(m.get(key)) for _, m in groups])
    return table


class StatefulView(TrackView):
    track = "stateful"
    group_label = "scenario"
    sample_template = "samples/stateful.html.j2"
    context_what = "task texts and reference results"
    description = (
        "pass@k (unbiased estimator, averaged over tasks) and error rates (share of samples whose first failing "
        "test case has that class) in %; complexity means over tasks. A sample passes when every test case "
        "matches the reference's result and final state."
    )

    # -- tables
    def tables(self, runs: list[RunInfo]) -> list[Table]:
        if len(runs) == 1:
            return [scenario_table(runs[0].summary, runs[0].label)]
        side = Table(
            title="stateful · side by side",
            columns=[Column("metric", align="left")] + [Column(r.label, r.model) for r in runs],
            caption="pass@k and error rates in %",
            id="side-by-side",
        )
        passk, errors, means = _keys(runs[0].summary.get("metrics") or {})
        for key in passk + errors:
            side.add(key, *[fmt(r.summary["metrics"].get(key)) for r in runs])
        side.section()
        side.add("tasks", *[str(r.summary["metrics"].get("n_tasks", "–")) for r in runs])
        side.add("samples", *[str(r.summary["metrics"].get("n_samples", "–")) for r in runs])
        out = [side]
        names = sorted({g for r in runs for g in r.summary.get("by_scenario", {})})
        if names:
            t = Table(
                title="stateful · pass@1 by scenario",
                columns=[Column("scenario", align="left"), Column("tasks")] + [Column(r.label, r.model) for r in runs],
                caption="in %",
                id="side-by-scenario",
            )
            for g in names:
                row: list[Cell | str] = [g, str(runs[0].summary.get("by_scenario", {}).get(g, {}).get("n_tasks", "–"))]
                row += [fmt(r.summary.get("by_scenario", {}).get(g, {}).get("pass@1")) for r in runs]
                t.add(*row)
            out.append(t)
        return out

    # -- intervals
    def interval_metrics(self, scoring: str, summaries: list[dict[str, Any]]) -> list[MetricDef]:
        metrics = (summaries or [{}])[0].get("metrics") or {}
        passk, errors, _ = _keys(metrics)
        if not passk:
            from callbench.tracks.stateful.execution import ERROR_CLASSES

            passk, errors = ["pass@1"], [f"error_{c}" for c in ERROR_CLASSES]
        return [MetricDef(k, k, "%", True) for k in passk] + [MetricDef(k, k, "%", False) for k in errors]

    def units(self, rows: list[dict[str, Any]], scoring: str, metrics: list[MetricDef]) -> dict[str, Units]:
        from callbench.tracks.stateful.metrics import pass_at_k

        defs = metrics
        out: dict[str, dict[str, tuple[float, float]]] = {m.key: {} for m in defs}
        by_task: dict[str, list[bool]] = defaultdict(list)
        for row in rows:
            v = (row.get("verdicts") or {}).get("strict")
            if not isinstance(v, dict):
                continue
            by_task[str(v.get("task", row["id"]))].append(bool(v.get("passed")))
            for m in defs:
                if m.key.startswith("error_"):
                    out[m.key][row["id"]] = (1.0 if v.get("error_class") == m.key[6:] else 0.0, 1.0)
        for m in defs:
            if not m.key.startswith("pass@"):
                continue
            k = int(m.key[5:])
            for task, results in by_task.items():
                n, c = len(results), sum(results)
                out[m.key][task] = (pass_at_k(n, c, k), 1.0) if n >= k else (0.0, 0.0)
        return out

    # -- charts
    def charts(self, runs: list[RunInfo], intervals: dict[str, list[Interval | None]]) -> list[ChartSpec]:
        passk, errors, _ = _keys(runs[0].summary.get("metrics") or {})

        def series(keys: list[str]) -> list[Series]:
            out = []
            for i, r in enumerate(runs):
                ivs = [(intervals.get(k) or [None] * len(runs))[i] for k in keys]
                out.append(
                    Series(
                        r.label,
                        [r.summary["metrics"].get(k) for k in keys],
                        [iv.lo if iv else None for iv in ivs],
                        [iv.hi if iv else None for iv in ivs],
                        r.model,
                    )
                )
            return out

        names = sorted({g for r in runs for g in r.summary.get("by_scenario", {})})
        return [
            ChartSpec("passk", "pass@k, 95% bootstrap CI (over tasks)", passk, series(passk)),
            ChartSpec(
                "by-scenario",
                "pass@1 by scenario",
                names + ["all"],
                [
                    Series(
                        r.label,
                        [r.summary.get("by_scenario", {}).get(g, {}).get("pass@1") for g in names]
                        + [r.summary["metrics"].get("pass@1")],
                        title=r.model,
                    )
                    for r in runs
                ],
            ),
            ChartSpec(
                "errors",
                "Error classes (share of samples), 95% bootstrap CI",
                [e[6:] for e in errors],
                series(errors),
                horizontal=True,
                drop_if_zero=True,
            ),
        ]

    # -- samples
    def sample(self, row: dict[str, Any], scoring: str, context: Any) -> SampleOutcome:
        v = (row.get("verdicts") or {}).get("strict")
        status = row.get("status")
        task_id = v.get("task") if isinstance(v, dict) else row["id"].split("#")[0]
        task = context.get(task_id) if isinstance(context, dict) else None
        detail: dict[str, Any] = {
            "task": task.get("text") if task else None,
            "program": truncate(row.get("parsed") or row.get("raw_output") or "", 6000),
            "error": row.get("error"),
            "cases": [],
        }
        if not isinstance(v, dict):
            cls = "backend_error" if status == "backend_error" else "unreadable"
            return SampleOutcome(False, cls, f"{cls}: no verdict stored", detail)
        passed = bool(v.get("passed"))
        cls = None if passed else ("backend_error" if status == "backend_error" else v.get("error_class") or status or "failed")
        stored = {c.get("case"): c for c in v.get("cases") or [] if isinstance(c, dict)}
        names = [c["name"] for c in task["cases"]] if task else list(stored)
        expected = {c["name"]: c.get("expected") or {} for c in task["cases"]} if task else {}
        for name in names:
            c = stored.get(name)
            exp = expected.get(name) or {}
            detail["cases"].append(
                {
                    "case": name,
                    "verdict": c.get("verdict") if c else "not run",
                    "reason": c.get("reason") if c else ("an earlier case failed" if not passed else None),
                    "duration_s": c.get("duration_s") if c else None,
                    "expected_result": truncate(_show(exp.get("result")), 4000) if exp else None,
                    "expected_state": truncate(_show(exp.get("state")), 4000) if exp else None,
                    "extra": {k: c[k] for k in _MCP_FIELDS if c and c.get(k) is not None},
                }
            )
        n_cases = len(names)
        if passed:
            headline = f"pass · {n_cases} test case{'s' if n_cases != 1 else ''}"
        else:
            headline = " ".join(str(row.get("error") or "").split())[:160]
        return SampleOutcome(passed, cls, headline, detail)


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)
