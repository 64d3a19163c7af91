"""Report view of the nested track (NESTFUL): F1, sequence accuracy and win rate overall, by domain,
by gold sequence length, by number of nested references and by dependency-graph shape (the paper's
analyses; definitions in :mod:`callbench.tracks.nested.analysis`), side by side for several runs;
each sample as a call-by-call diff against the gold sequence, with the references of the predicted
calls resolved to the values the executed calls returned."""

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
from callbench.tracks.nested.metrics import win_rate_note

NESTED_KEYS = (
    ("F1 function", "f1_function"),
    ("F1 parameter", "f1_parameter"),
    ("Partial sequence accuracy", "partial_sequence_accuracy"),
    ("Full sequence accuracy", "full_sequence_accuracy"),
    ("Win rate", "win_rate"),
    ("Parse error rate", "parse_error_rate"),
)
_GROUP_COLUMNS = (("win", "win_rate"), ("full seq.", "full_sequence_accuracy"), ("F1 fn", "f1_function"))


def groups_of(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """("all", metrics), then each domain, then each gold length (in numeric order)."""
    out = [("all", summary.get("metrics") or {})]
    out += [(f"domain={k}", v) for k, v in summary.get("by_domain", {}).items()]
    out += [(f"length={k}", v) for k, v in sorted(summary.get("by_length", {}).items(), key=lambda kv: _num(kv[0]))]
    return out


# The paper's analyses beyond length: (title, summary key, column prefix). Runs stored before these
# existed have no such keys, and their tables and charts are left out.
ANALYSES = (
    ("by nested references", "by_references", "refs"),
    ("by graph shape", "by_shape", "shape"),
)


def ordered(key: str, names: Any) -> list[str]:
    """Group names in reading order: shapes as :data:`~callbench.tracks.nested.analysis.SHAPES`
    lists them (simplest first), anything else numerically (``6+`` last), then by name."""
    from callbench.tracks.nested.analysis import SHAPES

    if key == "by_shape":
        return sorted(names, key=lambda g: (SHAPES.index(g) if g in SHAPES else len(SHAPES), g))
    return sorted(names, key=lambda g: (_num(g), g))


def _num(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("inf")


def group_table(summary: dict[str, Any], label: str | None = None) -> Table:
    """One run: metrics (rows) × all / domain / length (columns)."""
    groups = groups_of(summary)
    table = Table(
        title=f"nested · {label or summary.get('model')} · scoring={summary.get('scoring')}",
        columns=[Column("metric", align="left")] + [Column(f"{name}\n(n={m.get('n')})") for name, m in groups],
        caption="in %; " + win_rate_note(summary.get("metrics") or {}),
        id="groups",
    )
    for name, key in NESTED_KEYS:
        table.add(name, *[fmt(m.get(key)) for _, m in groups])
    return table


def analysis_tables(summary: dict[str, Any], label: str | None = None) -> list[Table]:
    """One run: metrics (rows) × reference-count bins, and × graph shapes (columns); none for a
    summary without those breakdowns."""
    out = []
    for title, key, prefix in ANALYSES:
        groups = summary.get(key) or {}
        if not groups:
            continue
        names = ordered(key, groups)
        table = Table(
            title=f"nested · {label or summary.get('model')} · {title}",
            columns=[Column("metric", align="left")]
            + [Column(f"{prefix}={g}\n(n={groups[g].get('n')})") for g in names],
            caption="in %",
            id=f"groups-{key}",
        )
        for name, mkey in NESTED_KEYS:
            table.add(name, *[fmt(groups[g].get(mkey)) for g in names])
        out.append(table)
    return out


def summary_tables(summary: dict[str, Any], label: str | None = None) -> list[Table]:
    """Every table of one run: overall, by domain and length, then the paper's other analyses."""
    return [group_table(summary, label), *analysis_tables(summary, label)]


class NestedView(TrackView):
    track = "nested"
    group_label = "domain"
    sample_template = "samples/nested.html.j2"
    context_what = "gold calls"
    description = (
        "F1 over functions and parameters, partial/full sequence accuracy, win rate (executed final answer "
        "equals gold), parse error rate; in %. A sample passes when its executed answer equals the gold "
        "answer (win), or, where the task cannot be executed, when its sequence is fully correct. "
        "Breakdowns by domain, gold length, nested references and graph shape (chain, fan-in, fan-out, "
        "mixed). Scoring modes and breakdowns: see docs/nested-scoring.md."
    )

    # -- tables
    def tables(self, runs: list[RunInfo]) -> list[Table]:
        if len(runs) == 1:
            return summary_tables(runs[0].summary, runs[0].label)
        side = Table(
            title=f"nested · scoring={runs[0].summary.get('scoring')} · side by side",
            columns=[Column("metric (%)", align="left")] + [Column(r.label, r.model) for r in runs],
            id="side-by-side",
        )
        for name, key in NESTED_KEYS:
            side.add(name, *[fmt(r.summary["metrics"].get(key)) for r in runs])
        side.section()
        side.add("Samples", *[str(r.summary["metrics"].get("n", "–")) for r in runs])
        side.add("Executable (win counted)", *[str(r.summary["metrics"].get("n_executable", r.summary["metrics"].get("win_n", "–"))) for r in runs])
        side.add("Not executable", *[str((r.summary["metrics"].get("non_executable") or {}).get("n", "–")) for r in runs])
        out = [side]
        breakdowns = (("by domain", "by_domain", "domain"), ("by gold length", "by_length", "length"), *ANALYSES)
        for title, key, head in breakdowns:
            names = ordered(key, {g for r in runs for g in (r.summary.get(key) or {})})
            if not names:
                continue
            cols = [Column(head, align="left"), Column("n")]
            for r in runs:
                cols += [Column(f"{r.label}\n{c}", r.model) for c, _ in _GROUP_COLUMNS]
            t = Table(title=f"nested · {title}", columns=cols, caption="in %", id=f"side-{key}")
            for g in names:
                # the shared samples' n: the first run that has the breakdown (an old run may not)
                n = next((m[g].get("n", "–") for r in runs if g in (m := r.summary.get(key) or {})), "–")
                row: list[Cell | str] = [g, str(n)]
                for r in runs:
                    m = (r.summary.get(key) or {}).get(g, {})
                    row += [fmt(m.get(k)) for _, k in _GROUP_COLUMNS]
                t.add(*row)
            out.append(t)
        return out

    # -- intervals
    def interval_metrics(self, scoring: str, summaries: list[dict[str, Any]]) -> list[MetricDef]:
        keys = NESTED_KEYS if scoring == "strict" else NESTED_KEYS[2:]  # compat F1 is a gold-fitted macro-F1
        return [MetricDef(k, name, "%", k != "parse_error_rate") for name, k in keys]

    def units(self, rows: list[dict[str, Any]], scoring: str, metrics: list[MetricDef]) -> dict[str, Units]:
        out: dict[str, dict[str, tuple[float, float]]] = {
            k: {} for k in ("f1_function", "f1_parameter", *(k for _, k in NESTED_KEYS[2:]))
        }
        for row in rows:
            v = (row.get("verdicts") or {}).get(scoring)
            if not isinstance(v, dict):
                continue
            sid = row["id"]
            for kind in ("function", "parameter"):
                key = f"f1_{kind}"
                if scoring == "strict":
                    tp, fp, fn = v.get(f"_{kind}_counts") or (0, 0, 0)
                    out[key][sid] = (2.0 * tp, float(2 * tp + fp + fn))
            out["partial_sequence_accuracy"][sid] = (float(v.get("partial_sequence_accuracy") or 0.0), 1.0)
            out["full_sequence_accuracy"][sid] = (float(v.get("full_sequence_accuracy") or 0.0), 1.0)
            win = v.get("win")
            out["win_rate"][sid] = (0.0, 0.0) if win is None else (1.0 if win else 0.0, 1.0)
            out["parse_error_rate"][sid] = (1.0 if v.get("parse_error") else 0.0, 1.0)
        wanted = {m.key for m in metrics}
        return {k: u for k, u in out.items() if k in wanted}

    # -- charts
    def charts(self, runs: list[RunInfo], intervals: dict[str, list[Interval | None]]) -> list[ChartSpec]:
        keys = [(n, k) for n, k in NESTED_KEYS]
        series = []
        for i, r in enumerate(runs):
            ivs = [(intervals.get(k) or [None] * len(runs))[i] for _, k in keys]
            series.append(
                Series(
                    r.label,
                    [r.summary["metrics"].get(k) for _, k in keys],
                    [iv.lo if iv else None for iv in ivs],
                    [iv.hi if iv else None for iv in ivs],
                    r.model,
                )
            )
        out = [ChartSpec("headline", "Metrics, 95% bootstrap CI", [n for n, _ in keys], series, horizontal=True)]
        for cid, title, group_key, metric in (
            ("by-domain", "Win rate by domain", "by_domain", "win_rate"),
            ("by-length", "Full sequence accuracy by gold length", "by_length", "full_sequence_accuracy"),
            ("by-references", "Full sequence accuracy by nested references", "by_references", "full_sequence_accuracy"),
            ("by-shape", "Full sequence accuracy by graph shape", "by_shape", "full_sequence_accuracy"),
        ):
            names = ordered(group_key, {g for r in runs for g in (r.summary.get(group_key) or {})})
            if not names and group_key in ("by_references", "by_shape"):
                continue  # a run stored before these breakdowns existed
            out.append(
                ChartSpec(
                    cid,
                    title,
                    names,
                    [Series(r.label, [(r.summary.get(group_key) or {}).get(g, {}).get(metric) for g in names], title=r.model) for r in runs],
                )
            )
        return out

    # -- samples
    def sample(self, row: dict[str, Any], scoring: str, context: Any) -> SampleOutcome:
        v = (row.get("verdicts") or {}).get(scoring)
        status = row.get("status") or "ok"
        task = context.get(row["id"]) if isinstance(context, dict) else None
        execution = row.get("execution") if isinstance(row.get("execution"), dict) else None
        detail: dict[str, Any] = {
            "question": getattr(task, "input", None),
            "error": row.get("error"),
            "raw_output": truncate(row.get("raw_output") or "", 3000),
            "gold_answer": _show(task.gold_answer) if task is not None and task.gold_answer is not None else None,
            "predicted_answer": _show(execution.get("final")) if execution else None,
            "executed": None if execution is None else bool(execution.get("ok")),
        }
        if not isinstance(v, dict):
            cls = "backend_error" if status == "backend_error" else "unreadable"
            return SampleOutcome(False, cls, f"{cls}: no {scoring} verdict stored", detail)
        win, full = v.get("win"), v.get("full_sequence_accuracy")
        passed = bool(win) if win is not None else full == 1.0
        if passed:
            cls = None
        elif status != "ok":
            cls = status  # parse_error, timeout, unsatisfiable, backend_error
        elif execution is not None and not execution.get("ok"):
            cls = "execution_error"
        elif win is False:
            cls = "wrong_answer"
        else:
            cls = "wrong_sequence"
        detail["scores"] = [
            ("F1 function", fmt(v.get("f1_function"))),
            ("F1 parameter", fmt(v.get("f1_parameter"))),
            ("partial seq.", fmt(v.get("partial_sequence_accuracy"))),
            ("full seq.", "yes" if full == 1.0 else "no"),
            ("win", "–" if win is None else "yes" if win else "no"),
        ]
        detail["calls"] = _call_diff(row.get("parsed"), execution, task)
        seq = "full sequence correct" if full == 1.0 else f"partial {fmt(v.get('partial_sequence_accuracy'))}%"
        if passed:
            headline = f"win · {seq}" if win else seq
        elif cls in ("parse_error", "timeout", "unsatisfiable", "backend_error"):
            headline = " ".join(str(row.get("error") or "").split())[:160]
        else:
            headline = f"{seq} · F1 fn {fmt(v.get('f1_function'))} param {fmt(v.get('f1_parameter'))}"
        return SampleOutcome(passed, cls, headline, detail)


def _call_diff(parsed: Any, execution: dict[str, Any] | None, task: Any) -> list[dict[str, Any]]:
    """Position by position: the gold call, the predicted call (each reference shown with the value
    it resolved to in the executed sequence) and what the call returned."""
    from callbench.tracks.nested.references import find_references, resolve
    from callbench.tracks.nested.schema import canonical_label

    try:
        pred = json.loads(parsed) if isinstance(parsed, str) else []
    except ValueError:
        pred = []
    if not isinstance(pred, list):
        pred = []
    gold = list(task.output) if task is not None else []
    executed = (execution or {}).get("calls") or []
    env: dict[str, Any] = {}
    rows = []
    for i in range(max(len(pred), len(gold))):
        p = pred[i] if i < len(pred) and isinstance(pred[i], dict) else None
        g = gold[i] if i < len(gold) else None
        out = executed[i] if i < len(executed) and isinstance(executed[i], dict) else None
        p_args = []
        if p is not None and isinstance(p.get("arguments"), dict):
            for k, raw in p["arguments"].items():
                resolved = None
                if find_references(raw):
                    try:
                        resolved = _show(resolve(raw, env))
                    except Exception as exc:  # noqa: BLE001 - any failure is shown, not raised
                        resolved = f"unresolved: {' '.join(str(exc).split())[:200]}"
                p_args.append({"name": k, "raw": _show(raw), "resolved": resolved})
        g_args = [{"name": k, "raw": _show(val)} for k, val in (g.arguments.items() if g is not None else [])]
        same_name = p is not None and g is not None and p.get("name") == g.name
        same_args = (
            p is not None
            and g is not None
            and {a["name"]: a["raw"] for a in p_args} == {a["name"]: a["raw"] for a in g_args}
        )
        rows.append(
            {
                "i": i + 1,
                "gold": None if g is None else {"name": g.name, "label": g.raw_label or g.label, "args": g_args},
                "pred": None if p is None else {"name": p.get("name"), "label": p.get("label"), "args": p_args},
                "output": None if out is None else truncate(_show(out.get("output")), 1500),
                "same_name": same_name,
                "same_args": same_args,
            }
        )
        if out is not None and out.get("label"):
            env[canonical_label(str(out["label"]))] = out.get("output")
    return rows


def _show(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
