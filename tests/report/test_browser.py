"""The HTML report in a real browser (headless Chromium, ``--dump-dom``), for each track: one run
and a comparison. What the page shows after its scripts ran is checked against the run store and
``summary.json``: every sample present, the pass/fail counts, the default filter (failing samples)
hiding exactly the passing ones, every filter of the sample list, every chart drawn (an SVG with a
size; each bar or stacked segment drawn iff its value is not 0; each parallel-coordinate line and
point marker drawn), and no script error.

Skipped where no Chromium is installed (``scripts/test.sh`` installs ``chromium-headless-shell``
when it runs as root with apt-get); with ``CALLBENCH_REQUIRE_BROWSER=1`` (CI) a missing browser
fails the tests instead."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# Appended to a copy of the page: drives the sample filters and measures the charts as laid out,
# then leaves the results as JSON in <pre id="probe"> for --dump-dom.
PROBE = """<script>
(function () {
  var out = {filters: [], charts: [], svgs: []};
  var items = Array.prototype.slice.call(document.querySelectorAll("#sample-list > details.sample"));
  function shown() { return items.filter(function (e) { return !e.hidden; }).map(function (e) { return e.dataset.id; }); }
  function set(id, value, ev) { var el = document.getElementById(id); el.value = value; el.dispatchEvent(new Event(ev || "change")); }
  function options(id) { return Array.prototype.map.call(document.getElementById(id).options, function (o) { return o.value; }); }
  function record(what) { out.filters.push({what: what, shown: shown(), count: document.getElementById("f-count").textContent}); }
  record("default:" + document.getElementById("f-status").value);
  options("f-status").forEach(function (v) { set("f-status", v); record("status:" + v); });
  set("f-status", "all");
  options("f-group").forEach(function (v) { set("f-group", v); record("group:" + v); });
  set("f-group", "");
  options("f-error").forEach(function (v) { set("f-error", v); record("error:" + v); });
  set("f-error", "");
  if (items.length) { set("f-text", items[0].dataset.id.toUpperCase(), "input"); record("text:" + items[0].dataset.id); }
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var svg = fig.querySelector("svg"), r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    var bars = Array.prototype.map.call(fig.querySelectorAll("g.bar"), function (b) {
      var box = b.getBBox(), t = b.querySelector("title");
      return {title: t ? t.textContent : "", w: box.width, h: box.height};
    });
    var texts = svg ? Array.prototype.map.call(svg.querySelectorAll("text"), function (t) { return t.textContent; }) : [];
    function marks(cls) {
      return Array.prototype.map.call(fig.querySelectorAll("g." + cls), function (g) {
        var box = g.getBBox(), t = g.querySelector("title");
        return {title: t ? t.textContent : "", w: box.width, h: box.height, series: g.dataset.series || null,
                category: g.dataset.category || null, value: g.dataset.value || null, total: g.dataset.total || null};
      });
    }
    out.charts.push({id: fig.id, kind: fig.dataset.kind, series: +fig.dataset.series, points: +fig.dataset.points,
                     w: r.width, h: r.height, bars: bars, texts: texts, label: svg ? svg.getAttribute("aria-label") : null,
                     segments: marks("segment"), lines: marks("line"), markers: marks("point")});
  });
  document.querySelectorAll("svg").forEach(function (s) {
    var r = s.getBoundingClientRect();
    out.svgs.push({w: r.width, h: r.height, shapes: s.querySelectorAll("path, rect, line, polyline, use").length});
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@pytest.fixture
def browser(tmp_path, chromium):
    """``browser(html_file)``: the DOM after the page's scripts ran, as text; fails on a script
    error."""
    exe = chromium

    def dump(page: Path) -> str:
        proc = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1280,1600", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Uncaught" not in proc.stderr, proc.stderr[-2000:]  # a script error on the page
        assert "</html>" in proc.stdout, proc.stderr[-2000:]
        return proc.stdout

    return dump


# -- what the run store says --------------------------------------------------------------------


@dataclass
class Expected:
    """Per sample: whether each run passes it (from the stored verdicts), and its group."""

    labels: list[str]
    passes: dict[str, list[bool]]  # sample id -> per run
    groups: dict[str, str] = field(default_factory=dict)

    def passed(self, i: int) -> int:
        return sum(p[i] for p in self.passes.values())

    def failing_any(self) -> set[str]:
        return {k for k, p in self.passes.items() if not all(p)}


def _stored(run_dir: Path) -> tuple[str, dict[str, bool], dict[str, str]]:
    """A run's track, and per sample whether it passes and its group -- read from the run store
    (the verdicts the track recorded) and checked against the rates ``summary.json`` holds."""
    from callbench.runs.store import RunStore

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    track, mode, metrics = summary["track"], summary["scoring"], summary["metrics"]
    store = RunStore.open(run_dir)
    try:
        rows = list(store.rows())
    finally:
        store.close()
    passes: dict[str, bool] = {}
    for r in rows:
        v = r["verdicts"]["strict" if track == "stateful" else mode]
        if track == "webapi":
            passes[r["id"]] = v["sample"] == "correct"
        elif track == "nested":  # the executed answer equals gold; no execution: the whole sequence right
            passes[r["id"]] = bool(v["win"]) if v.get("win") is not None else v["full_sequence_accuracy"] == 1.0
        else:
            passes[r["id"]] = bool(v["passed"])
    n, passed = len(passes), sum(passes.values())
    assert summary["n"] == n
    if track == "webapi":
        assert metrics["correct_implementations_t"] * n == pytest.approx(passed)
    elif track == "nested":
        assert metrics["win_n"] == n  # every generated task executes: win rate = pass rate
        assert metrics["win_rate"] * n == pytest.approx(passed)
    else:  # one sample per task: pass@1 = pass rate
        assert metrics["pass@1"] * n == pytest.approx(passed)
    return track, passes, {r["id"]: str(r["grp"]) for r in rows}


def expected(*run_dirs: Path, labels: list[str]) -> Expected:
    stored = [_stored(d) for d in run_dirs]
    shared = set.intersection(*(set(p) for _, p, _ in stored))
    return Expected(
        labels=labels,
        passes={k: [p[k] for _, p, _ in stored] for k in shared},
        groups={k: stored[0][2][k] for k in shared},
    )


# -- the checks ----------------------------------------------------------------------------------


def _nonzero(title: str) -> bool | None:
    """Whether a bar's tooltip ("label · category: 12.5% (95% CI ...)") gives a value other than 0;
    None when it gives none."""
    m = re.search(r": (–|-?\d+(?:\.\d+)?)%?(?: \(95% CI [^)]*\))?$", title)
    assert m, title
    return None if m.group(1) == "–" else float(m.group(1)) != 0


def _check_stacked(c: dict) -> None:
    """Stacked bars as laid out: a segment per series and category, drawn iff its count is not 0,
    its tooltip saying the count, the bar's total and the share; the counts of a bar sum to its
    total; at least one segment drawn."""
    segs = c["segments"]
    assert segs and len(segs) == c["points"], c["id"]
    totals: dict[str, int] = {}
    sums: dict[str, int] = {}
    for seg in segs:
        m = re.fullmatch(r"(.+) · (.+): (\d+) of (\d+) \((\d+\.\d)%\)", seg["title"])
        assert m, seg
        count, total = int(m.group(3)), int(m.group(4))
        assert (m.group(1), m.group(2), str(count), str(total)) == (seg["category"], seg["series"], seg["value"], seg["total"]), seg
        assert float(m.group(5)) == pytest.approx(100 * count / total, abs=0.05), seg
        drawn = seg["w"] > 0 and seg["h"] > 0
        assert drawn == (count != 0), (c["id"], seg)
        assert totals.setdefault(seg["category"], total) == total, seg
        sums[seg["category"]] = sums.get(seg["category"], 0) + count
    assert sums == totals, c["id"]
    assert any(s["w"] > 0 and s["h"] > 0 for s in segs), c["id"]


def _check_parallel(c: dict) -> None:
    """Parallel coordinates as laid out: a polyline per series, drawn; a marker per defined value
    (``data-points``), drawn, its tooltip ("series · axis: value") naming its series and axis."""
    assert len(c["lines"]) == c["series"] > 0, c["id"]
    assert all(line["w"] > 0 for line in c["lines"]), (c["id"], c["lines"])
    assert len(c["markers"]) == c["points"] > 0, c["id"]
    for pt in c["markers"]:
        assert pt["w"] > 0 and pt["h"] > 0, (c["id"], pt)
        assert pt["title"].startswith(f"{pt['series']} · {pt['category']}: "), pt
        assert _nonzero(pt["title"]) is not None, pt


def check_page(browser, page: Path, exp: Expected, dom, min_charts: int = 2) -> object:
    """Load ``page`` in Chromium twice (as is, then with the probe) and check it against ``exp``;
    returns the DOM as the browser left it."""
    ids = sorted(exp.passes)
    n, runs = len(ids), len(exp.labels)
    failing = exp.failing_any()

    doc = dom.parse(browser(page))
    # the runs: pass / fail counts
    run_rows = doc.find_all("tr", pred=lambda x: "run" in x.classes())
    assert [r.attrs["data-label"] for r in run_rows] == exp.labels
    for i, r in enumerate(run_rows):
        tds = [td.text().strip() for td in r.find_all("td")]
        assert (r.attrs["data-passed"], r.attrs["data-failed"]) == (str(exp.passed(i)), str(n - exp.passed(i)))
        assert tds[3:5] == [str(exp.passed(i)), str(n - exp.passed(i))], tds  # the visible pass / fail cells
    # every sample, each run's verdict
    entries = {e.attrs["data-id"]: e for e in dom.samples(doc)}
    assert sorted(entries) == ids
    for sid, e in entries.items():
        assert e.attrs["data-pass"] == " ".join("1" if p else "0" for p in exp.passes[sid]), sid
        assert e.attrs["data-group"] == exp.groups[sid]
        badges = [b.text() for b in e.find("summary").find_all("span", pred=lambda x: "badge" in x.classes())]
        assert [b == "pass" for b in badges] == exp.passes[sid], (sid, badges)
    # the default filter: failing samples (in any run) when there are any, else all
    status = doc.find("select", id="f-status")
    selected = [o.attrs["value"] for o in status.find_all("option") if "selected" in o.attrs]
    hidden = {sid for sid, e in entries.items() if "hidden" in e.attrs}
    count = doc.find("span", id="f-count").text()
    if failing:
        assert selected == ["fail"] and hidden == set(ids) - failing
        assert count == f"{len(failing)} of {n} samples shown"
    else:
        assert selected == [] and hidden == set()
        assert count == f"{n} of {n} samples shown"
    # charts: each an SVG with bars
    charts = dom.check_charts(doc)
    assert len(charts) >= min_charts, [c.attrs.get("id") for c in charts]

    probe_page = page.with_name(page.stem + ".probe.html")
    html = page.read_text(encoding="utf-8")
    probe_page.write_text(html.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    pdoc = dom.parse(browser(probe_page))
    probe = json.loads(pdoc.find("pre", id="probe").text())
    shown = {f["what"]: (set(f["shown"]), f["count"]) for f in probe["filters"]}
    errors = {sid: set(e.attrs["data-errors"].split()) for sid, e in entries.items()}
    want = {
        "status:all": set(ids),
        "status:fail": failing,
        "status:pass": set(ids) - failing,
        **{f"status:fail-{i}": {k for k, p in exp.passes.items() if not p[i]} for i in range(runs) if runs > 1},
        **({"status:disagree": {k for k, p in exp.passes.items() if len(set(p)) > 1}} if runs > 1 else {}),
        "group:": set(ids),
        **{f"group:{g}": {k for k in ids if exp.groups[k] == g} for g in set(exp.groups.values())},
        "error:": set(ids),
        **{f"error:{c}": {k for k in ids if c in errors[k]} for c in set().union(*errors.values())},
        f"text:{ids[0]}": {k for k in ids if ids[0].lower() in k.lower()},
        f"default:{'fail' if failing else 'all'}": failing or set(ids),
    }
    assert set(shown) == set(want)
    for what, got in want.items():
        assert shown[what][0] == got, what
        assert shown[what][1] == f"{len(got)} of {n} samples shown", what
    # charts as laid out: an SVG with a size; every bar drawn iff its value is not 0
    assert [c["id"] for c in probe["charts"]] == [c.attrs["id"] for c in charts]
    for c in probe["charts"]:
        assert c["w"] > 50 and c["h"] > 50, c["id"]
        if c["kind"] == "stacked":
            _check_stacked(c)
        elif c["kind"] == "parallel":
            _check_parallel(c)
        else:
            assert c["kind"] == "bars", c["id"]
            assert c["bars"], c["id"]
            for bar in c["bars"]:
                nonzero = _nonzero(bar["title"])
                drawn = bar["w"] > 0 and bar["h"] > 0
                assert drawn == bool(nonzero), (c["id"], bar)
        # the chart is drawn: its title and axis labels; at least one bar unless every value is 0
        assert c["label"] and c["label"] in c["texts"], (c["id"], c["texts"])
        assert any(b["w"] > 0 and b["h"] > 0 for b in c["bars"]) or not any(_nonzero(b["title"]) for b in c["bars"]), c["id"]
    assert len(probe["svgs"]) == len(charts)  # no stray SVG
    assert all(s["w"] > 0 and s["h"] > 0 and s["shapes"] > 0 for s in probe["svgs"]), probe["svgs"]
    return doc


def _report(cli, tmp_path: Path, *run_dirs: Path, labels: tuple[str, ...] = ()) -> Path:
    """``callbench report`` into tmp_path (never into the shared run directories)."""
    args: list[object] = ["report", *run_dirs]
    for label in labels:
        args += ["--label", label]
    if len(run_dirs) == 1:
        args += ["--html", tmp_path / "report.html"]
        page = tmp_path / "report.html"
    else:
        args += ["--out", tmp_path / "cmp"]
        page = tmp_path / "cmp" / "report.html"
    res = cli(*args)
    assert res.exit_code == 0, res.output
    return page


# -- webapi --------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["gold", "replay"])
def test_webapi_report_in_chromium(which, browser, webapi_runs, cli, tmp_path, dom):
    gold, replay, ids = webapi_runs
    run = gold if which == "gold" else replay
    exp = expected(run, labels=[which])
    assert sorted(exp.passes) == ids and len(exp.failing_any()) == (0 if which == "gold" else 2)
    doc = check_page(browser, _report(cli, tmp_path, run, labels=(which,)), exp, dom)
    assert doc.find("table", id="t-paper") is not None and doc.find("table", id="t-by-api-0") is not None


def test_webapi_comparison_in_chromium(browser, webapi_runs, cli, tmp_path, dom):
    gold, replay, _ = webapi_runs
    exp = expected(gold, replay, labels=["gold", "replay"])
    doc = check_page(browser, _report(cli, tmp_path, gold, replay, labels=("gold", "replay")), exp, dom)
    assert doc.find("table", id="t-stats") is not None and "rel. gain" in doc.find("table", id="t-paper").text()


def test_webapi_three_run_comparison_in_chromium(browser, webapi_three_runs, cli, tmp_path, dom):
    """Three runs: the paper's figures (parallel coordinates, stacked outcome bars) drawn for each."""
    runs, ids = webapi_three_runs
    labels = ("gold", "replay", "edited")
    exp = expected(*runs, labels=list(labels))
    assert sorted(exp.passes) == ids
    doc = check_page(browser, _report(cli, tmp_path, *runs, labels=labels), exp, dom, min_charts=4)
    kinds = {c.attrs["id"]: c.attrs["data-kind"] for c in dom.check_charts(doc)}
    assert kinds["chart-parallel"] == "parallel" and kinds["chart-outcomes"] == "stacked"


# -- nested --------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["gold", "W"])
def test_nested_report_in_chromium(which, browser, nested_runs, cli, tmp_path, dom):
    run = nested_runs[which]
    exp = expected(run, labels=[which])
    assert len(exp.passes) == nested_runs["n"] and bool(exp.failing_any()) == (which == "W")
    doc = check_page(browser, _report(cli, tmp_path, run, labels=(which,)), exp, dom)
    assert doc.find("table", id="t-groups") is not None


def test_nested_comparison_in_chromium(browser, nested_runs, cli, tmp_path, dom):
    a, b = nested_runs["A"], nested_runs["B"]
    exp = expected(a, b, labels=["alpha", "beta"])
    assert len(exp.failing_any()) == 10  # failing in any run: 2 (A) + 8 (B)
    doc = check_page(browser, _report(cli, tmp_path, a, b, labels=("alpha", "beta")), exp, dom)
    assert doc.find("table", id="t-side-by-side") is not None


def test_nested_comparison_of_partly_shared_runs_in_chromium(browser, nested_runs, cli, tmp_path, dom):
    """gold (20 samples) vs C (4): only the 4 shared samples are listed and counted."""
    exp = expected(nested_runs["gold"], nested_runs["C"], labels=["gold", "C"])
    assert len(exp.passes) == 4
    doc = check_page(browser, _report(cli, tmp_path, nested_runs["gold"], nested_runs["C"], labels=("gold", "C")), exp, dom)
    assert doc.find("p", id="shared").attrs["data-shared"] == "4"


# -- stateful ------------------------------------------------------------------------------------


def test_stateful_report_in_chromium(browser, stateful_run, cli, tmp_path, dom):
    exp = expected(stateful_run.dir, labels=["replay"])
    assert {k for k, p in exp.passes.items() if p[0]} == stateful_run.passing
    doc = check_page(browser, _report(cli, tmp_path, stateful_run.dir, labels=("replay",)), exp, dom)
    assert doc.find("table", id="t-scenarios") is not None


def test_stateful_gold_report_in_chromium(browser, stateful_gold, cli, tmp_path, dom):
    exp = expected(stateful_gold, labels=["gold"])
    assert not exp.failing_any()
    check_page(browser, _report(cli, tmp_path, stateful_gold, labels=("gold",)), exp, dom, min_charts=1)


def test_stateful_comparison_in_chromium(browser, stateful_run, stateful_gold, cli, tmp_path, dom):
    exp = expected(stateful_gold, stateful_run.dir, labels=["gold", "replay"])
    assert exp.failing_any() == set(stateful_run.errors)
    doc = check_page(browser, _report(cli, tmp_path, stateful_gold, stateful_run.dir, labels=("gold", "replay")), exp, dom)
    assert doc.find("table", id="t-side-by-side") is not None and doc.find("table", id="t-stats") is not None
