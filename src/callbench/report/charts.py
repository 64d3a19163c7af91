"""Charts as inline SVG, drawn with matplotlib (no pyplot, no display, no network): grouped bars,
stacked bars and parallel coordinates (see :class:`~callbench.report.model.ChartSpec`).

Each chart becomes one ``<svg>`` the HTML embeds: the XML prolog is dropped, every ``id`` is
prefixed with the chart's id (several charts share one document), ``xlink:href`` becomes
``href``, and every mark carries a ``<title>`` tooltip, so a test can count and read them:

* grouped bars: groups ``<g class="bar" id="<chart>-bar-<series>-<category>">``, the tooltip
  ``"<series> · <category>: <value>"`` plus the interval where there is one;
* stacked bars: one group per segment, ``<g class="segment" id="<chart>-seg-<series>-<category>">``
  with ``data-series``, ``data-category``, ``data-value`` (the count) and ``data-total``, the
  tooltip ``"<category> · <series>: <count> of <total> (<share>%)"``; a zero count is a segment
  of no width;
* parallel coordinates: per series one ``<g class="line" id="<chart>-line-<series>">`` (the
  polyline) and per value one ``<g class="point" id="<chart>-pt-<series>-<category>">`` (its
  marker) with ``data-series``, ``data-category`` and ``data-value``, the tooltip
  ``"<series> · <category>: <value>"``; an undefined value has no marker and breaks the line.
"""

from __future__ import annotations

import html
import io
import re

from callbench.report.model import Chart, ChartSpec

# Colours of runs (a chart's series without their own colour). None is an outcome's colour
# (report/webapi.py OUTCOME_CLASSES: green correct, red illegal, ...), so a run is never drawn in
# the colour of a verdict (issue 31); dark and light hues alternate for neighbours.
PALETTE = ("#332288", "#F58518", "#882255", "#88CCEE", "#999933", "#FF9DA6", "#333333", "#6F4E7C")


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


Tooltips = dict[str, tuple[str, str, dict[str, str]]]  # gid -> (CSS class, text, data-* attributes)


def _svg(spec: ChartSpec) -> str:
    if spec.kind == "stacked":
        return _svg_stacked(spec)
    if spec.kind == "parallel":
        return _svg_parallel(spec)
    return _svg_bars(spec)


def _color(spec: ChartSpec, si: int) -> str:
    return spec.series[si].color or PALETTE[si % len(PALETTE)]


def _finish(fig, ax, spec: ChartSpec, tooltips: Tooltips) -> str:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(spec.title, fontsize=10, fontweight="bold")
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline(buf.getvalue(), spec.id, spec.title, tooltips)


def _svg_stacked(spec: ChartSpec) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n_cat = len(spec.categories)
    totals = spec.totals()
    tooltips: Tooltips = {}
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": spec.id}):
        fig = Figure(figsize=(6.4, max(1.8, 0.42 * n_cat + 1.2)), layout="constrained")
        ax = fig.add_subplot()
        left = [0.0] * n_cat
        pos = list(range(n_cat))
        for si, s in enumerate(spec.series):
            counts = [v or 0 for v in s.values]
            widths = [100 * c / t if t else 0.0 for c, t in zip(counts, totals, strict=True)]
            color = _color(spec, si)
            bars = ax.barh(pos, widths, left=left, height=0.62, color=color, label=s.label, edgecolor="white", linewidth=0.5)
            for ci, bar in enumerate(bars.patches):
                gid = f"seg-{si}-{ci}"
                bar.set_gid(gid)
                count, total = counts[ci], totals[ci]
                share = f"{100 * count / total:.1f}%" if total else "–"
                text = f"{spec.categories[ci]} · {s.label}: {_count(count)} of {_count(total)} ({share})"
                attrs = {"series": s.label, "category": spec.categories[ci], "value": _count(count), "total": _count(total)}
                tooltips[gid] = ("segment", text, attrs)
                if widths[ci] >= 7:
                    ax.text(left[ci] + widths[ci] / 2, ci, _count(count), ha="center", va="center", fontsize=7, color=_ink(color))
            left = [a + w for a, w in zip(left, widths, strict=True)]
        ax.set_yticks(pos, spec.categories)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xticks([0, 20, 40, 60, 80, 100])
        ax.set_xlabel("% of samples")
        ax.grid(axis="x", color="#ddd", linewidth=0.6)
        ax.set_axisbelow(True)
        return _finish(fig, ax, spec, tooltips)


def _ink(color: str) -> str:
    """Text colour readable on ``color`` (a ``#rrggbb``): dark on light, white on dark."""
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", color):
        return "white"
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#222" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "white"


def _count(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _svg_parallel(spec: ChartSpec) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n_cat, n_ser = len(spec.categories), max(1, len(spec.series))
    tooltips: Tooltips = {}
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": spec.id}):
        fig = Figure(figsize=(max(5.0, min(11.0, 0.75 * n_cat + 1.6)), 3.8), layout="constrained")
        ax = fig.add_subplot()
        for x in range(n_cat):
            ax.axvline(x, color="#999", linewidth=0.8, zorder=1)
        for si, s in enumerate(spec.series):
            color = _color(spec, si)
            shift = 0.05 * (si - (n_ser - 1) / 2) if n_ser > 1 else 0.0  # keeps equal values apart
            xs = [x + shift for x in range(n_cat)]
            ys = [_scale(v, spec.unit) for v in s.values]
            (line,) = ax.plot(xs, ys, color=color, linewidth=1.6, label=s.label, zorder=2)
            gid = f"line-{si}"
            line.set_gid(gid)
            tooltips[gid] = ("line", s.title or s.label, {"series": s.label})
            for ci, v in enumerate(s.values):
                if v is None:
                    continue
                (pt,) = ax.plot([xs[ci]], [ys[ci]], marker="o", markersize=5, linestyle="none", color=color, zorder=3)
                gid = f"pt-{si}-{ci}"
                pt.set_gid(gid)
                text = f"{s.label} · {spec.categories[ci]}: {_fmt(v, spec.unit)}"
                tooltips[gid] = ("point", text, {"series": s.label, "category": spec.categories[ci], "value": repr(v)})
        longest = max((len(c) for c in spec.categories), default=1)
        rotate = longest * n_cat > 7 * fig.get_figwidth()
        ax.set_xticks(list(range(n_cat)), spec.categories, rotation=30 if rotate else 0, ha="right" if rotate else "center")
        ax.set_xlim(-0.4, n_cat - 0.6)
        if spec.unit == "%":
            ax.set_ylim(-3, 103)
            ax.set_yticks([0, 20, 40, 60, 80, 100])
            ax.set_ylabel("%")
        ax.grid(axis="y", color="#eee", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.spines["bottom"].set_visible(False)
        return _finish(fig, ax, spec, tooltips)


def _svg_bars(spec: ChartSpec) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    n_cat, n_ser = len(spec.categories), max(1, len(spec.series))
    longest = max((len(c) for c in spec.categories), default=1)
    tooltips: Tooltips = {}
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
            color = _color(spec, si)
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
                tooltips[gid] = ("bar", text, {})
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
        return _finish(fig, ax, spec, tooltips)


def _inline(svg: str, prefix: str, title: str, tooltips: Tooltips) -> str:
    """An SVG document made fit for embedding in HTML (see the module doc)."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = svg.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace("xlink:href=", "href=")
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', svg)
    for gid, (cls, text, attrs) in tooltips.items():
        data = "".join(f' data-{k}="{html.escape(v)}"' for k, v in attrs.items())
        svg = svg.replace(f'<g id="{prefix}-{gid}">', f'<g id="{prefix}-{gid}" class="{cls}"{data}><title>{html.escape(text)}</title>', 1)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(title)}" ', 1)
    return svg.strip()

