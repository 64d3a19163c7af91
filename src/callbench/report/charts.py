"""Grouped bar charts as inline SVG, drawn with matplotlib (no pyplot, no display, no network).

Each chart becomes one ``<svg>`` the HTML embeds: the XML prolog is dropped, every ``id`` is
prefixed with the chart's id (several charts share one document), ``xlink:href`` becomes
``href``, and every bar carries a ``<title>`` tooltip with its value and interval. Bars are
groups with ids ``<chart>-bar-<series>-<category>``, so a test can count them.
"""

from __future__ import annotations

import html
import io
import re

from callbench.report.model import Chart, ChartSpec

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D")


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def render(spec: ChartSpec) -> Chart:
    """Draw ``spec``; a chart with no value is not drawn (empty SVG)."""
    if spec.n_points == 0 or (spec.drop_if_zero and not any(v for s in spec.series for v in s.values)):
        return Chart(spec=spec, svg="")
    if not available():
        return Chart(spec=spec, svg="")
    return Chart(spec=spec, svg=_svg(spec))


def _scale(v: float | None, unit: str) -> float:
    if v is None:
        return float("nan")
    return 100 * v if unit == "%" else v


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    return f"{100 * v:.1f}%" if unit == "%" else f"{v:.2f}"


def _svg(spec: ChartSpec) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n_cat, n_ser = len(spec.categories), max(1, len(spec.series))
    longest = max((len(c) for c in spec.categories), default=1)
    tooltips: dict[str, str] = {}
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": spec.id}):
        if spec.horizontal:
            size = (6.4, max(1.8, 0.28 * n_cat * max(1, n_ser) + 1.0))
        else:
            size = (max(4.2, min(11.0, 0.55 * n_cat * max(1, n_ser) ** 0.5 + 1.8)), 3.2)
        fig = Figure(figsize=size, layout="constrained")
        ax = fig.add_subplot()
        width = 0.8 / n_ser
        for si, s in enumerate(spec.series):
            pos = [i - 0.4 + width * (si + 0.5) for i in range(n_cat)]
            vals = [_scale(v, spec.unit) for v in s.values]
            err = None
            if s.lo is not None and s.hi is not None:
                lows = [
                    max(0.0, _scale(v, spec.unit) - _scale(lo, spec.unit)) if v is not None and lo is not None else 0.0
                    for v, lo in zip(s.values, s.lo, strict=True)
                ]
                highs = [
                    max(0.0, _scale(hi, spec.unit) - _scale(v, spec.unit)) if v is not None and hi is not None else 0.0
                    for v, hi in zip(s.values, s.hi, strict=True)
                ]
                err = [lows, highs]
            color = PALETTE[si % len(PALETTE)]
            kw = {"color": color, "label": s.label, "error_kw": {"elinewidth": 0.9, "capsize": 2.5, "ecolor": "#333"}}
            if spec.horizontal:
                bars = ax.barh(pos, vals, height=width * 0.95, xerr=err, **kw)
            else:
                bars = ax.bar(pos, vals, width=width * 0.95, yerr=err, **kw)
            if not spec.horizontal and err is None and n_cat * n_ser <= 16:
                shown = ["" if v is None else f"{_scale(v, spec.unit):.0f}" for v in s.values]
                ax.bar_label(bars, labels=shown, fontsize=7, padding=1, color="#444")
            for ci, bar in enumerate(bars.patches):
                gid = f"bar-{si}-{ci}"
                bar.set_gid(gid)
                v = s.values[ci]
                text = f"{s.label} · {spec.categories[ci]}: {_fmt(v, spec.unit)}"
                if s.lo is not None and s.hi is not None and s.lo[ci] is not None and s.hi[ci] is not None:
                    text += f" (95% CI {_fmt(s.lo[ci], spec.unit)} – {_fmt(s.hi[ci], spec.unit)})"
                tooltips[gid] = text
        ticks = list(range(n_cat))
        if spec.horizontal:
            ax.set_yticks(ticks, spec.categories)
            ax.invert_yaxis()
            if spec.unit == "%":
                ax.set_xlim(0, 104)
                ax.set_xticks([0, 20, 40, 60, 80, 100])
                ax.set_xlabel("%")
            ax.grid(axis="x", color="#ddd", linewidth=0.6)
        else:
            rotate = longest * n_cat > 7 * size[0]  # ~7 characters per inch at this font size
            ax.set_xticks(ticks, spec.categories, rotation=30 if rotate else 0, ha="right" if rotate else "center")
            if spec.unit == "%":
                ax.set_ylim(0, 108)  # room for the value labels above 100
                ax.set_yticks([0, 20, 40, 60, 80, 100])
                ax.set_ylabel("%")
            ax.grid(axis="y", color="#ddd", linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.set_title(spec.title, fontsize=10, fontweight="bold")
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline(buf.getvalue(), spec.id, spec.title, tooltips)


def _inline(svg: str, prefix: str, title: str, tooltips: dict[str, str]) -> str:
    """An SVG document made fit for embedding in HTML (see the module doc)."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = svg.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace("xlink:href=", "href=")
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', svg)
    for gid, text in tooltips.items():
        svg = svg.replace(f'<g id="{prefix}-{gid}">', f'<g id="{prefix}-{gid}" class="bar"><title>{html.escape(text)}</title>', 1)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(title)}" ', 1)
    return svg.strip()

