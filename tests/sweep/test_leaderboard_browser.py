"""The leaderboard page in a real browser (headless Chromium, ``--dump-dom``, the ``chromium`` fixture
of tests/conftest.py: skipped without one; failed under
``CALLBENCH_REQUIRE_BROWSER=1``): what the page shows is the board's cells and gains, its script
sorts the rows by a column without an error, and a model spec holding HTML stays text."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import callbench
from callbench.cli import app
from callbench.sweep.grid import load_grid
from callbench.sweep.leaderboard import entry_text, gain_text
from callbench.sweep.local import run_local

WRONG = '[{"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 2}}]'
HOSTILE = '<img src=x onerror="window.__pwned=1">'

# Appended to a copy of the page: reads the table, clicks the first metric column's header twice,
# and leaves what it saw as JSON in <pre id="probe">.
PROBE = """<script>
(function () {
  function rows() { return Array.prototype.map.call(document.querySelectorAll("#board tbody tr"), function (r) { return r.dataset.model; }); }
  var out = {pwned: window.__pwned === 1, imgs: document.querySelectorAll("img").length, rows: rows(), cells: {}, gains: {}};
  document.querySelectorAll("#board tbody tr").forEach(function (r) {
    out.cells[r.dataset.model] = Array.prototype.map.call(r.querySelectorAll("td.cell"), function (td) {
      var v = td.querySelector(".value, .state"); return v ? v.textContent : null; });
    out.gains[r.dataset.model] = Array.prototype.map.call(r.querySelectorAll("div.gain"), function (g) {
      return {text: g.textContent, setting: g.dataset.setting, p: g.dataset.p || null}; });
  });
  out.model_text = document.querySelector("#board tbody td.model code").textContent;
  var th = document.querySelector('#board thead th[data-col="0"]');
  th.click(); out.sorted_down = rows(); out.sort_attr = th.getAttribute("aria-sort");
  th.click(); out.sorted_up = rows();
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
})();
</script>"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A replay that wins nested tasks 0, 2, 4, 6 of 8, gold, and a replay whose missing file's
    path holds HTML (its cells fail, their errors quote it) x nested scoring strict and compat."""
    root = tmp_path_factory.mktemp("board-browser")
    gold = callbench.run("nested", "gold", out_dir=root / "gold", limit=8)
    with sqlite3.connect(gold.run_dir / "run.sqlite") as db:
        rows = sorted(db.execute("SELECT id, raw_output FROM samples"))
    preds = root / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": sid, "output": out if i % 2 == 0 else WRONG}) + "\n" for i, (sid, out) in enumerate(rows)))
    bad = root / HOSTILE / "none.jsonl"
    grid = root / "grid.yaml"
    models = ", ".join(json.dumps(m) for m in (f"replay:{preds}", "gold", f"replay:{bad}"))
    grid.write_text(f"models: [{models}]\ntracks:\n  nested: {{limit: 8, scoring: [strict, compat]}}\n")
    run_local(load_grid(grid), root / "sweep", workers=2)
    return root / "sweep"


def test_the_leaderboard_page_in_chromium(sweep, tmp_path, chromium):
    exe = chromium
    res = CliRunner().invoke(app, ["leaderboard", str(sweep)], terminal_width=200)
    assert res.exit_code == 0, res.output
    page = sweep / "leaderboard.html"
    html = page.read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Uncaught" not in proc.stderr, proc.stderr[-2000:]  # a script error on the page
    start = proc.stdout.index('<pre id="probe">') + len('<pre id="probe">')
    import html as htmllib

    seen = json.loads(htmllib.unescape(proc.stdout[start : proc.stdout.index("</pre>", start)]))

    board = callbench.leaderboard(sweep)
    replay, gold, hostile = board.models
    assert seen["rows"] == board.models
    assert not seen["pwned"] and seen["imgs"] == 0  # the model spec's HTML stayed text
    assert seen["model_text"] == replay
    for model in board.models:
        assert seen["cells"][model] == [entry_text(board.entries.get((model, col))) for col in board.columns]
        [(gc, gain)] = [pair for col in board.columns for pair in board.gains_of(model, col)]
        [shown] = seen["gains"][model]
        assert shown["setting"] == "scoring" and shown["text"] == f"{gain_text(gain)} vs scoring=strict"
        assert shown["p"] == (None if gain is None else str(gain.test.p))
    assert seen["cells"][replay] == ["50.0 % [12.5, 87.5]"] * 2 and seen["cells"][hostile] == ["failed"] * 2
    # sorting by the first cell: best first, then best last; a cell without a result stays last
    assert seen["sorted_down"] == [gold, replay, hostile] and seen["sort_attr"] == "descending"
    assert seen["sorted_up"] == [replay, gold, hostile]
