"""``callbench runs``, ``callbench.load_runs`` and ``callbench view`` over a directory holding three
small gold runs (one per track), a directory that is no run, and a broken run."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import callbench
from callbench.cli import app


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def _only(d: Path) -> Path:
    (sub,) = [p for p in d.iterdir() if p.is_dir()]
    return sub


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory, data_root) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for args in (
        ("run", "nested", "--model", "gold", "--limit", 3, "--out", root / "nested"),
        ("run", "webapi", "--model", "gold", "--api", "asana", "--limit", 3, "--out", root / "webapi", "--data", data_root),
        ("run", "stateful", "--model", "gold", "--scenario", "voice", "--limit", 2, "--out", root / "stateful"),
    ):
        res = invoke(*args, "--no-progress")
        assert res.exit_code == 0, res.output
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a run\n")
    broken = root / "broken-run"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    (broken / "run.sqlite").write_bytes(b"")
    return root


def _rows(root: Path) -> list[dict]:
    res = invoke("runs", root, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_runs_lists_every_run_and_the_broken_one(runs_root):
    rows = _rows(runs_root)
    assert [r["track"] for r in rows] == ["nested", "stateful", "webapi", None]  # by track; unknown last
    by_track = {r["track"]: r for r in rows}
    for track, n in (("nested", 3), ("webapi", 3), ("stateful", 2)):
        r = by_track[track]
        assert r["model"] == "gold" and r["status"] == "complete", r
        assert r["n"] == n and r["n_selected"] == n
        assert Path(r["directory"]) == _only(runs_root / track)
        assert r["metrics"] and all(v == 1.0 for v in r["metrics"].values()), r  # gold scores every sample
    # the headline metrics: the first higher-is-better metrics the track's report view has intervals on
    assert list(by_track["nested"]["metrics"]) == ["F1 function", "F1 parameter", "Partial sequence accuracy"]
    assert list(by_track["webapi"]["metrics"])[:2] == ["Executable implementations", "Correct implementations"]
    assert list(by_track["stateful"]["metrics"])[0] == "pass@1"
    assert "constrained=false" in by_track["nested"]["settings"]
    broken = rows[-1]
    assert broken["directory"] == str(runs_root / "broken-run")
    assert broken["status"].startswith("broken: ") and "config.json" in broken["status"], broken
    assert not any("notes" in r["directory"] for r in rows)


def test_runs_table_csv_and_load_runs_agree(runs_root, monkeypatch):
    rows = _rows(runs_root)
    res = invoke("runs", runs_root, "--csv")
    assert res.exit_code == 0, res.output
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [t["directory"] for t in table] == [r["directory"] for r in rows]
    for t, r in zip(table, rows, strict=True):
        assert t["status"] == r["status"] and t["model"] == (r["model"] or "")
        assert t["n"] == ("" if r["n"] is None else str(r["n"]))
        for label, value in r["metrics"].items():
            assert float(t[label]) == value
    df = callbench.load_runs(runs_root)
    assert list(df["directory"]) == [r["directory"] for r in rows]
    assert list(df["status"]) == [r["status"] for r in rows]
    assert df.loc[0, "F1 function"] == 1.0
    assert callbench.load_runs(runs_root, as_frame=False)[1]["pass@1"] == 1.0
    # the terminal table names every run and its status (a wide console: the module's console
    # keeps whatever width the suite's earlier tests left it)
    from callbench.cli.options import out_console

    monkeypatch.setattr(out_console, "_width", 400)
    res = CliRunner().invoke(app, ["runs", str(runs_root)], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    for r in rows:
        assert Path(r["directory"]).name in res.stdout
    assert "broken" in res.stdout and res.stdout.count("complete") == 3


def test_runs_status_partial_and_running(runs_root, tmp_path):
    import shutil

    run = tmp_path / "r" / "copy"
    shutil.copytree(_only(runs_root / "nested"), run)
    (run / "summary.json").unlink()  # as while a session runs
    log = run / "run.log"
    log.write_text("x\n")
    old = time.time() - 600
    os.utime(log, (old, old))
    (row,) = _rows(tmp_path / "r")
    assert row["status"] == "partial 3/3"
    os.utime(log, None)  # written just now
    (row,) = _rows(tmp_path / "r")
    assert row["status"] == "running"


def test_runs_of_a_missing_directory_and_report_of_a_runs_directory(runs_root, tmp_path):
    res = invoke("runs", tmp_path / "nope")
    assert res.exit_code == 2 and "no such directory" in res.output
    res = invoke("report", runs_root)
    assert res.exit_code == 2
    assert "holds 4 run(s)" in " ".join(res.output.split()) and "'callbench runs" in res.output


@pytest.fixture(scope="module")
def server(runs_root):
    from callbench.cli.view import show_text
    from callbench.report.view_server import make_server, url_of

    srv = make_server(runs_root, port=0, sample_text=show_text)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield url_of(srv)
    srv.shutdown()
    srv.server_close()


def _rel(runs_root: Path, track: str) -> str:
    return _only(runs_root / track).relative_to(runs_root).as_posix()


def test_view_pages(server, runs_root):
    index = httpx.get(server)
    assert index.status_code == 200 and "<script src" not in index.text and "http" not in index.text.split("<body>")[1]
    data = json.loads(re.search(r"id=runs-data>(.*?)</script>", index.text, re.S).group(1))
    assert [r["directory"] for r in data] == [r["directory"] for r in _rows(runs_root)]
    assert httpx.get(server + "runs.json").json() == data
    rel = _rel(runs_root, "nested")
    page = httpx.get(server + "run", params={"d": rel})
    assert page.status_code == 200 and "id=cb-bar" in page.text
    ids = re.findall(r"<option>([^<]+)</option>", page.text)
    assert len(ids) == 3
    sample = httpx.get(server + "sample", params={"d": rel, "id": ids[0]})
    assert sample.status_code == 200
    assert f"run: {Path(rel).name}" in sample.text and "Raw output" in sample.text and "Verdicts" in sample.text
    comp = httpx.get(server + "compare", params=[("d", _rel(runs_root, "webapi")), ("d", rel)])
    assert comp.status_code == 400 and "different tracks" in comp.text
    assert not list(runs_root.rglob("report.html"))  # read-only: reports are built elsewhere


def test_view_compare_and_refusals(server, runs_root, tmp_path):
    import shutil

    rel = _rel(runs_root, "stateful")
    shutil.copytree(runs_root / rel, runs_root / "stateful-copy" / "again")
    try:
        # the directory is re-read on every request: a run added since the server started is listed
        assert "stateful-copy/again" in [r["rel"] for r in httpx.get(server + "runs.json").json()]
        comp = httpx.get(server + "compare", params=[("d", rel), ("d", "stateful-copy/again")])
        assert comp.status_code == 200 and "McNemar" in comp.text and "id=cb-bar" in comp.text
    finally:
        shutil.rmtree(runs_root / "stateful-copy")
    assert "stateful-copy/again" not in [r["rel"] for r in httpx.get(server + "runs.json").json()]
    assert httpx.get(server + "run", params={"d": "../" + runs_root.name}).status_code == 400
    assert httpx.get(server + "run", params={"d": "notes"}).status_code == 400
    assert httpx.get(server + "sample", params={"d": rel, "id": "no-such"}).status_code == 400
    assert httpx.post(server).status_code == 405
    assert httpx.get(server + "nothing").status_code == 404


def test_view_refuses_a_remote_host_unless_named(runs_root):
    from callbench.errors import ConfigError
    from callbench.report.view_server import make_server

    with pytest.raises(ConfigError, match="not a loopback"):
        make_server(runs_root, host="0.0.0.0", port=0)
    srv = make_server(runs_root, host="0.0.0.0", port=0, allow_remote=True)
    srv.server_close()


# -- in a real browser ------------------------------------------------------------------------------

# Appended to the index page (served from a file with <base> at the server): filters, sorts, ticks
# the runs left, records what the page shows in <pre id="probe">, and with CLICK opens the comparison.
_PROBE = """<script>(function () {
  function rels() { return Array.prototype.map.call(document.querySelectorAll("#body tr"), function (t) { return t.dataset.dir; }); }
  var out = {all: rels()};
  var f = document.getElementById("filter"); f.value = "NESTED"; f.dispatchEvent(new Event("input"));
  out.filtered = rels(); out.count = document.getElementById("count").textContent;
  function header(k) { return Array.prototype.filter.call(document.querySelectorAll("#head th"), function (t) { return t.dataset.key === k; })[0]; }
  header("directory").click(); header("directory").click(); out.sorted = rels();
  var btn = document.getElementById("compare"); out.before = btn.disabled;
  document.querySelectorAll("#body input.pick").forEach(function (b) { b.click(); });
  out.after = btn.disabled; out.href = btn.dataset.href;
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
  if (CLICK) btn.click();
})();</script>"""


def test_view_in_a_browser(runs_root, tmp_path, chromium):
    import shutil
    import subprocess

    from callbench.cli.view import show_text
    from callbench.report.view_server import make_server, url_of

    exe = chromium
    root = tmp_path / "runs"
    shutil.copytree(_only(runs_root / "nested"), root / "a")
    shutil.copytree(_only(runs_root / "nested"), root / "b")
    shutil.copytree(_only(runs_root / "stateful"), root / "s")
    srv = make_server(root, port=0, sample_text=show_text)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = url_of(srv)
        page = httpx.get(url).text.replace("<head>", f"<head><base href='{url}'>", 1)

        def dump(click: bool) -> str:
            file = tmp_path / f"index-{click}.html"
            file.write_text(page.replace("</body>", _PROBE.replace("CLICK", "true" if click else "false") + "</body>"))
            proc = subprocess.run(
                [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0",
                 f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=30000", "--dump-dom", file.as_uri()],
                capture_output=True, text=True, timeout=180,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            assert "Uncaught" not in proc.stderr, proc.stderr[-2000:]
            return proc.stdout

        import html as html_mod

        probe = json.loads(html_mod.unescape(re.search(r'<pre id="probe">(.*?)</pre>', dump(False), re.S).group(1)))
        assert sorted(probe["all"]) == ["a", "b", "s"]
        assert probe["filtered"] == ["a", "b"] and probe["count"] == "2 of 3 runs"
        assert probe["sorted"] == ["b", "a"]  # directory, descending (second click)
        assert probe["before"] is True and probe["after"] is False
        assert probe["href"] == "compare?d=b&d=a"
        compared = dump(True)  # the Compare button navigates to the comparison report
        assert "McNemar" in compared and 'id="cb-bar"' in compared and "<title>callbench comparison" in compared
    finally:
        srv.shutdown()
        srv.server_close()


def test_view_escapes_what_a_sample_holds_and_cli_errors(runs_root, tmp_path):
    from callbench.report.view_server import RunsView

    view = RunsView(runs_root, sample_text=lambda d, i: "<script>alert(1)</script> & </pre>")
    page = view.sample_page(_rel(runs_root, "nested"), "<b>id</b>")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;/pre&gt;" in page
    assert "&lt;b&gt;id&lt;/b&gt;" in page
    res = invoke("view", tmp_path / "nope", "--port", 0)
    assert res.exit_code == 2 and "no such directory" in res.output
    res = invoke("runs", runs_root, "--json", "--csv")
    assert res.exit_code == 2 and "not both" in res.output
    from callbench.report.view_server import _json_for_script

    text = _json_for_script([{"model": "</script><script>alert(1)</script>&"}])
    assert "<" not in text and ">" not in text and json.loads(text) == [{"model": "</script><script>alert(1)</script>&"}]
