"""Paper-style terminal tables (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from callbench.tracks.webapi.metrics import COUNT_ROWS, TABLE_ROWS


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{100 * value:.1f}"
    return str(value)


def relative_gain(base: float | None, new: float | None) -> str:
    if base is None or new is None:
        return "–"
    if base == 0:
        return "+∞" if new > 0 else "0%"
    return f"{100 * (new - base) / base:+.0f}%"


def summary_table(summaries: list[dict[str, Any]], labels: list[str]) -> Table:
    """Metrics (rows) × runs (columns, t and e). Rates in %, counts as numbers.
    With two runs, a relative-gain column compares the second with the first (on ``_t``)."""
    first = summaries[0]
    title = f"{first['track']} · scoring={first['scoring']}"
    table = Table(title=title, show_lines=False)
    table.add_column("metric (%)", style="bold")
    for label in labels:
        table.add_column(f"{label}\n_t", justify="right")
        table.add_column(f"{label}\n_e", justify="right")
    if len(summaries) == 2:
        table.add_column("rel. gain\n(_t)", justify="right")
    for name, key in TABLE_ROWS:
        row = [name]
        for s in summaries:
            row += [fmt(s["metrics"].get(f"{key}_t")), fmt(s["metrics"].get(f"{key}_e"))]
        if len(summaries) == 2:
            row.append(relative_gain(summaries[0]["metrics"].get(f"{key}_t"), summaries[1]["metrics"].get(f"{key}_t")))
        table.add_row(*row)
    table.add_section()
    for name, key in (("Samples", "n"), *COUNT_ROWS):
        row = [name]
        for s in summaries:
            row += [fmt(s["metrics"].get(key)), ""]
        if len(summaries) == 2:
            row.append("")
        table.add_row(*row)
    return table


def by_api_table(summary: dict[str, Any]) -> Table:
    """Headline metrics per API for one run."""
    table = Table(
        title=f"by API · {summary.get('model')} · setup={summary.get('setup')}",
        caption="rates in %, over all samples (_t); w/o cred. = correct except credentials",
    )
    table.add_column("API", style="bold", no_wrap=True)
    cols = [
        ("n", "n"),
        ("correct", "correct_implementations_t"),
        ("w/o cred.", "correct_except_credentials_t"),
        ("exec.", "executable_implementations_t"),
        ("illegal", "illegal_implementations_t"),
        ("URL", "correct_urls_t"),
        ("method", "correct_methods_t"),
        ("names", "correct_argument_names_t"),
        ("values", "correct_argument_values_t"),
    ]
    for label, _ in cols:
        table.add_column(label, justify="right", no_wrap=True)
    for api, m in summary.get("by_api", {}).items():
        table.add_row(api, *[fmt(m.get(key)) for _, key in cols])
    return table


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


def print_summary(summary: dict[str, Any], console: Console) -> None:
    console.print(summary_table([summary], [str(summary.get("model"))]))
    if summary.get("by_api"):
        console.print(by_api_table(summary))
    line = constraint_line(summary)
    if line:
        console.print(line, highlight=False)
    if not summary.get("complete", True):
        console.print(f"[yellow]partial: {summary['n']} of {summary['n_selected']} samples done[/yellow]")


NESTED_KEYS = (
    ("F1 function", "f1_function"),
    ("F1 parameter", "f1_parameter"),
    ("Partial sequence accuracy", "partial_sequence_accuracy"),
    ("Full sequence accuracy", "full_sequence_accuracy"),
    ("Win rate", "win_rate"),
    ("Parse error rate", "parse_error_rate"),
)


def print_nested_summary(summary: dict[str, Any], console: Console) -> None:
    """Overall metrics plus the by-domain and by-length breakdowns of a nested run."""
    groups = [("all", summary["metrics"])]
    groups += [(f"domain={k}", v) for k, v in summary.get("by_domain", {}).items()]
    groups += [(f"length={k}", v) for k, v in sorted(summary.get("by_length", {}).items(), key=lambda kv: int(kv[0]))]
    table = Table(title=f"nested · {summary.get('model')} · scoring={summary.get('scoring')}", caption="in %")
    table.add_column("metric", style="bold")
    for name, m in groups:
        table.add_column(f"{name}\n(n={m.get('n')})", justify="right")
    for label, key in NESTED_KEYS:
        table.add_row(label, *[fmt(m.get(key)) for _, m in groups])
    console.print(table)


def print_stateful_summary(summary: dict[str, Any], console: Console) -> None:
    """pass@k, error rates and complexity means, overall and per scenario."""
    groups = [("all", summary["metrics"])] + list(summary.get("by_scenario", {}).items())
    table = Table(title=f"stateful · {summary.get('model')}", caption="pass@k and error rates in %")
    table.add_column("metric", style="bold")
    for name, m in groups:
        table.add_column(f"{name}\n(tasks={m.get('n_tasks')})", justify="right")
    keys = [k for k in summary["metrics"] if k.startswith("pass@")]
    keys += [k for k in summary["metrics"] if k.startswith("error_")]
    for key in keys:
        table.add_row(key, *[fmt(m.get(key)) for _, m in groups])
    for key in [k for k in summary["metrics"] if k.startswith("mean_")]:
        table.add_row(key, *[f"{m[key]:.1f}" if m.get(key) is not None else "-" for _, m in groups])
    console.print(table)
