"""A self-contained HTML report: tables plus inline-SVG bar charts.

Hand-written SVG on purpose: the page must open offline with no script or CDN, and a grouped bar
chart is a few rectangles — not worth a plotting dependency in the core install.
"""

from __future__ import annotations

import html
from typing import Any

from callbench.report.table import constraint_line, fmt, relative_gain
from callbench.tracks.webapi.metrics import COUNT_ROWS, TABLE_ROWS

_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D")
_CHART_METRICS = (
    ("Correct implementations", "correct_implementations_t"),
    ("Executable implementations", "executable_implementations_t"),
    ("Illegal implementations", "illegal_implementations_t"),
    ("Correct URLs", "correct_urls_t"),
    ("Correct methods", "correct_methods_t"),
    ("Correct argument values", "correct_argument_values_t"),
    ("Illegal arguments", "illegal_arguments_t"),
)

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#222;max-width:1200px}
h1{font-size:1.5rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right} th:first-child,td:first-child{text-align:left}
thead th{background:#f4f4f4} .muted{color:#777} .charts{display:flex;flex-wrap:wrap;gap:1rem}
.chart{border:1px solid #eee;padding:.5rem} code,pre{font-size:.8rem} pre{white-space:pre-wrap;margin:0}
details{margin:.25rem 0}
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _metrics_table(runs: list[Any]) -> str:
    head = "".join(f"<th>{_e(r.label)} _t</th><th>{_e(r.label)} _e</th>" for r in runs)
    gain_head = "<th>rel. gain (_t)</th>" if len(runs) == 2 else ""
    rows = []
    for name, key in TABLE_ROWS:
        cells = "".join(
            f"<td>{fmt(r.summary['metrics'].get(key + '_t'))}</td><td>{fmt(r.summary['metrics'].get(key + '_e'))}</td>"
            for r in runs
        )
        gain = ""
        if len(runs) == 2:
            gain = f"<td>{relative_gain(runs[0].summary['metrics'].get(key + '_t'), runs[1].summary['metrics'].get(key + '_t'))}</td>"
        rows.append(f"<tr><td>{_e(name)} (%)</td>{cells}{gain}</tr>")
    for name, key in (("Samples", "n"), *COUNT_ROWS):
        cells = "".join(f"<td colspan=2>{fmt(r.summary['metrics'].get(key))}</td>" for r in runs)
        rows.append(f"<tr><td>{_e(name)}</td>{cells}{'<td></td>' if len(runs) == 2 else ''}</tr>")
    return f"<table><thead><tr><th>metric</th>{head}{gain_head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def bar_chart(title: str, groups: list[str], series: list[tuple[str, list[float | None]]], width: int = 380) -> str:
    """Grouped vertical bars, values in [0, 1] shown as %."""
    height, top, bottom, left = 220, 28, 48, 36
    plot_h = height - top - bottom
    n_groups = max(1, len(groups))
    group_w = (width - left - 10) / n_groups
    bar_w = max(3.0, (group_w - 8) / max(1, len(series)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{_e(title)}">']
    parts.append(f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{_e(title)}</text>')
    for frac in (0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" x2="{width - 5}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{int(frac * 100)}</text>')
    for gi, group in enumerate(groups):
        x0 = left + gi * group_w + 4
        for si, (_, values) in enumerate(series):
            v = values[gi]
            if v is None:
                continue
            h = plot_h * max(0.0, min(1.0, v))
            x = x0 + si * bar_w
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" height="{h:.1f}" '
                f'fill="{_COLORS[si % len(_COLORS)]}"><title>{_e(series[si][0])} · {_e(group)}: {100 * v:.1f}%</title></rect>'
            )
        label = group if len(group) <= 14 else group[:13] + "…"
        parts.append(
            f'<text x="{x0 + group_w / 2 - 4:.1f}" y="{height - bottom + 14}" text-anchor="middle" font-size="10">{_e(label)}</text>'
        )
    for si, (name, _) in enumerate(series):
        y = height - 14
        x = left + si * 120
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{_COLORS[si % len(_COLORS)]}"/>')
        parts.append(f'<text x="{x + 14}" y="{y}" font-size="10">{_e(name[:18])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _charts(runs: list[Any]) -> str:
    groups = sorted({g for r in runs for g in r.summary.get("by_api", {})}) + ["all"]
    out = []
    for title, key in _CHART_METRICS:
        series = []
        for r in runs:
            by = r.summary.get("by_api", {})
            vals = [(by.get(g, {}) if g != "all" else r.summary["metrics"]).get(key) for g in groups]
            series.append((r.label, vals))
        out.append(f'<div class="chart">{bar_chart(title + " (_t)", groups, series)}</div>')
    return f'<div class="charts">{"".join(out)}</div>'


def _failures(run: Any, limit: int = 60) -> str:
    mode = run.summary["scoring"]
    items = []
    for row in run.rows:
        v = (row.get("verdicts") or {}).get(mode) or {}
        if not isinstance(v, dict):  # stored by another version or damaged: show what is there
            v = {"error": f"unreadable verdict: {v!r}"}
        if v.get("sample") == "correct":
            continue
        args = [a for a in v.get("arguments") or [] if isinstance(a, dict) and a.get("verdict") != "correct"]
        detail = v.get("error") or f"url={v.get('url')} method={v.get('method')} " + ", ".join(
            f"{a.get('location')}.{a.get('name')}: {a.get('verdict')}" for a in args
        )
        items.append(
            f"<details><summary><code>{_e(row['id'])}</code> — {_e(v.get('sample'))}: {_e(detail)}</summary>"
            f"<pre>{_e(row.get('parsed') or row.get('raw_output') or '')}</pre></details>"
        )
        if len(items) >= limit:
            break
    if not items:
        return "<p>Every sample is correct.</p>"
    return "".join(items)


def render_html(runs: list[Any]) -> str:
    first = runs[0].summary
    meta = "".join(
        f"<li><b>{_e(r.label)}</b>: model <code>{_e(r.summary.get('model'))}</code>, setup {_e(r.summary.get('setup'))}, "
        f"{'constrained, ' if r.summary.get('constrained') else ''}{r.summary.get('n')} samples, "
        f"<span class='muted'>{_e(r.directory)}</span>"
        + (f"<br><span class='muted'>{_e(constraint_line(r.summary))}</span>" if constraint_line(r.summary) else "")
        + "</li>"
        for r in runs
    )
    by_api = ""
    for r in runs:
        rows = "".join(
            f"<tr><td>{_e(api)}</td><td>{m.get('n')}</td>"
            + "".join(f"<td>{fmt(m.get(k))}</td>" for _, k in _CHART_METRICS)
            + "</tr>"
            for api, m in r.summary.get("by_api", {}).items()
        )
        head = "".join(f"<th>{_e(t)} _t</th>" for t, _ in _CHART_METRICS)
        by_api += f"<h3>{_e(r.label)}</h3><table><thead><tr><th>API</th><th>n</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
    failures = "".join(f"<h3>{_e(r.label)}</h3>{_failures(r)}" for r in runs)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>callbench report · {_e(first['track'])}</title>
<style>{_CSS}</style></head><body>
<h1>callbench · {_e(first['track'])} · scoring={_e(first['scoring'])}</h1>
<ul>{meta}</ul>
<p class="muted">Rates in %. _t: over all samples; _e: over executable samples. Scoring mode: {_e(first['scoring'])}
(strict: schema-aware values, case-insensitive header names, legality judged on the generated endpoint;
compat: the published WAPIIBench scorer's definitions).</p>
<h2>Metrics</h2>{_metrics_table(runs)}
<h2>Per API</h2>{_charts(runs)}{by_api}
<h2>Samples that are not correct (first 60 per run)</h2>{failures}
</body></html>
"""


def render_nested_html(runs: list[Any]) -> str:
    """Nested-track report: overall metrics per run, then by domain and by sequence length."""
    from callbench.report.table import NESTED_KEYS

    first = runs[0].summary
    sections = []
    for r in runs:
        groups = [("all", r.summary["metrics"])]
        groups += [(f"domain={k}", v) for k, v in r.summary.get("by_domain", {}).items()]
        groups += [(f"length={k}", v) for k, v in sorted(r.summary.get("by_length", {}).items(), key=lambda kv: int(kv[0]))]
        head = "".join(f"<th>{_e(name)} (n={m.get('n')})</th>" for name, m in groups)
        rows = "".join(
            f"<tr><td>{_e(label)}</td>" + "".join(f"<td>{fmt(m.get(key))}</td>" for _, m in groups) + "</tr>"
            for label, key in NESTED_KEYS
        )
        chart = bar_chart("Win rate by group", [g for g, _ in groups], [(r.label, [m.get("win_rate") for _, m in groups])])
        sections.append(
            f"<h2>{_e(r.label)}</h2><p class='muted'>{_e(r.directory)}</p>"
            f"<table><thead><tr><th>metric (%)</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<div class='chart'>{chart}</div>"
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>callbench report · nested</title>
<style>{_CSS}</style></head><body>
<h1>callbench · nested · scoring={_e(first['scoring'])}</h1>
<p class="muted">F1 over functions and parameters, partial/full sequence accuracy, win rate (executed final
answer equals gold), parse error rate; in %. Scoring {_e(first['scoring'])}: see docs/nested-scoring.md.</p>
{''.join(sections)}
</body></html>
"""
