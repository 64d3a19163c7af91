"""The leaderboard as one self-contained HTML page (``SWEEP_DIR/leaderboard.html`` by default).

Models as rows, the grid's cells as columns: each track's headline metric with its 95 % interval
and, under it, the gain of the column's setting over its baseline with its paired interval and
McNemar's p (see :mod:`callbench.sweep.leaderboard` for how baselines are chosen). The page loads
nothing: its CSS and its one script (sort the rows by a column) are inline, and a
Content-Security-Policy forbids any request. Every string from the sweep (model specs, settings,
error messages a server or a run wrote) goes through Jinja2's autoescaping, attributes included;
the script reads only ``data-`` attributes, never text spliced into code.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from callbench.errors import RunStoreError
from callbench.report.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from callbench.sweep.leaderboard import Leaderboard, entry_text, gain_text

#: The name of the page in a sweep directory.
PAGE = "leaderboard.html"

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>callbench leaderboard · {{ where }}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .35em .6em; vertical-align: top; }
thead th { background: #f4f4f4; cursor: pointer; white-space: pre-line; }
thead th[aria-sort] { background: #e4ecf7; }
td.cell { text-align: right; white-space: nowrap; }
td.model code { word-break: break-all; }
.metric { color: #666; font-weight: normal; }
.gain { font-size: 12px; color: #555; }
.gain.up { color: #17632a; } .gain.down { color: #a12020; }
.state { color: #888; font-style: italic; }
.muted { color: #777; }
</style></head>
<body>
<h1>callbench leaderboard</h1>
<p class="muted">sweep: <code>{{ where }}</code> · {{ board.models | length }} model(s) × {{ board.columns | length }} cell(s)</p>
<table id="board">
<thead><tr><th data-col="-1">model</th>
{%- for col in board.columns %}<th data-col="{{ loop.index0 }}" title="{{ col }}">{{ board.labels.get(col, col) | replace(" ", "\\n") }}
{%- if board.column_metric.get(col) %}<br><span class="metric">{{ board.column_metric[col] }}</span>{% endif %}</th>{% endfor %}</tr></thead>
<tbody>
{%- for model in board.models %}
<tr data-model="{{ model }}" data-row="{{ loop.index0 }}"><td class="model"><code title="{{ model }}">{{ short(model) }}</code></td>
{%- for col in board.columns %}{% set e = board.entries.get((model, col)) %}{% set iv = e.interval if e else none %}
<td class="cell" data-col="{{ loop.index0 }}" data-state="{{ e.state if e else 'missing' }}"
{%- if iv and iv.point is not none %} data-point="{{ iv.point }}"{% endif %}
{%- if e and e.error %} title="{{ e.error }}"{% endif %}>
{%- if iv and iv.point is not none and e.state == 'done' %}<span class="value" title="n = {{ iv.n }}">{{ entry(e) }}</span>
{%- else %}<span class="state">{{ entry(e) }}</span>{% endif %}
{%- for gc, g in board.gains_of(model, col) %}
<div class="gain {{ direction(g) }}" data-setting="{{ gc.setting }}" data-baseline="{{ gc.baseline }}"
{%- if g %} data-diff="{{ g.diff.point }}"{% if g.test %} data-p="{{ g.test.p }}"{% endif %}{% endif %}
 title="{{ gc.column }} minus {{ gc.baseline }}{% if g %}, paired over {{ g.diff.n }} sample(s){% endif %}">{{ gain(g) }} vs {{ gc.setting }}={{ value(gc.base_value) }}</div>
{%- endfor %}</td>
{%- endfor %}</tr>
{%- endfor %}
</tbody></table>
{%- if board.notes %}
<p>Settings every cell of a track shares:</p><ul id="notes">{% for n in board.notes %}<li><code>{{ n }}</code></li>{% endfor %}</ul>
{%- endif %}
<h2>How to read it</h2>
<ul class="muted">
<li>Each cell: the track's headline metric (webapi: correct implementations; nested: win rate; stateful: pass@1) with its
95 % percentile-bootstrap interval over the cell's samples ({{ n_boot }} resamples, seed {{ seed }}), as <code>callbench report</code> shows it.</li>
<li>Gains: within a track, the first value the grid lists for a setting is its baseline. A cell whose value differs gets
its metric minus that of the cell with every other setting equal and this one at the baseline, for the same model,
over the sample ids both scored (pp: percentage points), with a paired bootstrap 95 % interval and McNemar's exact p
where every sample is pass/fail: what <code>callbench report BASELINE CELL</code> shows for the pair.
Sample-selection settings (limit, ids, groups) and runtime settings are no treatments.</li>
<li>A cell that did not finish shows its state (todo, partial n/m, failed; hover for the error). Click a column's header to sort.</li>
</ul>
<script>
(function () {
  var table = document.getElementById("board"), body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells, order = {};
  function key(row, col) {
    if (col < 0) return row.dataset.model;
    var cell = row.querySelector('td.cell[data-col="' + col + '"]');
    return cell && cell.dataset.point !== undefined ? parseFloat(cell.dataset.point) : null;
  }
  Array.prototype.forEach.call(heads, function (th) {
    th.addEventListener("click", function () {
      var col = parseInt(th.dataset.col, 10), down = order[col] = !order[col];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        if (x === y) return a.dataset.row - b.dataset.row;
        if (x === null) return 1;
        if (y === null) return -1;
        var c = typeof x === "string" ? x.localeCompare(y) : x - y;
        return (col < 0) === down ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", (col < 0) === down ? "ascending" : "descending");
    });
  });
})();
</script>
</body></html>
"""


@lru_cache(maxsize=1)
def _template() -> Any:
    from jinja2 import Environment

    from callbench.report.compare import short_model_name

    # autoescape everything: the sweep's strings (model specs, errors servers wrote) are hostile
    env = Environment(autoescape=True)
    env.globals.update(
        short=short_model_name,
        entry=entry_text,
        gain=gain_text,
        value=lambda v: v if isinstance(v, str) else json.dumps(v),
        direction=lambda g: "" if g is None or g.diff.lo is None else ("up" if g.diff.lo > 0 else "down" if g.diff.hi < 0 else ""),
    )
    return env.from_string(_TEMPLATE)


def render_leaderboard(board: Leaderboard, where: str) -> str:
    """The page of ``board`` (``where``: the sweep directory, as the page names it)."""
    return _template().render(board=board, where=where, n_boot=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED)


def write_leaderboard(board: Leaderboard, sweep_dir: Path, path: Path | None = None) -> Path:
    """Write the page to ``path`` (default ``SWEEP_DIR/leaderboard.html``); returns where."""
    target = path if path is not None else sweep_dir / PAGE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_leaderboard(board, str(sweep_dir)), encoding="utf-8")
    except OSError as exc:
        raise RunStoreError(f"{target}: cannot write the leaderboard page ({exc.strerror or exc})") from None
    return target
