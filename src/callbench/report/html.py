"""The HTML report: the report model rendered through Jinja2 templates (``report/templates``).

Self-contained: CSS, the sample filter script and the charts (inline SVG drawn by matplotlib, see
:mod:`callbench.report.charts`) are in the one file; it loads nothing from the network.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from markupsafe import Markup, escape

from callbench.report import charts
from callbench.report.model import ReportModel

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def _env():
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["br"] = lambda text: Markup("<br>").join(escape(part) for part in str(text).split("\n"))
    env.globals["palette"] = charts.PALETTE
    return env


def render_html(model: ReportModel) -> str:
    """The report page of ``model`` (one run, or a comparison)."""
    any_failing = any(o is not None and not o.passed for e in model.samples for o in e.outcomes)
    return _env().get_template("report.html.j2").render(
        model=model, any_failing=any_failing, charts_available=charts.available()
    )
