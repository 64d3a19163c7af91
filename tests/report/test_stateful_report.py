"""`report` on a stateful run: stateful metrics, every sample with its true verdict (issue 12).

It used to print the webapi table with every cell '–', draw empty charts and list every sample,
the passing ones included, as 'not correct — None: url=None method=None'."""

from __future__ import annotations

import json

import pytest


def test_a_fresh_stateful_run_prints_its_run_directory(stateful_run):
    assert f"rundirectory:{stateful_run.dir}" in "".join(stateful_run.output.split())


def test_terminal_report_shows_stateful_metrics(cli, stateful_run):
    res = cli("report", stateful_run.dir)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "pass@1" in out and "error_wrong_result" in out and "voice" in out
    assert "Executable implementations" not in out and "Correct implementations" not in out  # the webapi table
    summary = json.loads((stateful_run.dir / "summary.json").read_text())
    assert summary["metrics"]["pass@1"] == pytest.approx(3 / 6)
    assert "50.0" in out  # pass@1 in %
    assert "3 of 6 samples pass, 3 fail (wrong_result 2, runtime 1)" in " ".join(out.split())
    for sid in stateful_run.errors:  # the failing samples, named
        assert sid in out


def test_html_lists_every_sample_with_its_verdict(cli, stateful_run, dom):
    res = cli("report", stateful_run.dir)
    assert res.exit_code == 0, res.output
    html = (stateful_run.dir / "report.html").read_text(encoding="utf-8")
    assert "url=None" not in html and "not correct" not in html
    doc = dom.parse(html)
    entries = dom.samples(doc)
    assert sorted(e.attrs["data-id"] for e in entries) == sorted(stateful_run.ids)
    passed = {e.attrs["data-id"] for e in entries if e.attrs["data-pass"] == "1"}
    assert passed == stateful_run.passing
    for e in entries:
        sid = e.attrs["data-id"]
        assert e.attrs["data-group"] == "voice"
        assert e.attrs["data-errors"] == stateful_run.errors.get(sid, "")
        badge = e.find("span", pred=lambda n: "badge" in n.classes())
        assert badge.text() == ("pass" if sid in stateful_run.passing else stateful_run.errors[sid])
        cases = e.find("table", pred=lambda n: "cases" in n.classes())
        assert cases is not None, sid  # per test case: verdict, reason, reference result and state
        first = cases.find("tbody").find("tr")
        assert ("pass" if sid in stateful_run.passing else stateful_run.errors[sid]) in first.text()
    (run_row,) = doc.find_all("tr", pred=lambda n: "run" in n.classes())
    assert (run_row.attrs["data-passed"], run_row.attrs["data-failed"]) == ("3", "3")
    # filters: by group and by error class
    assert [o.attrs["value"] for o in doc.find("select", id="f-error").find_all("option")] == ["", "runtime", "wrong_result"]
    assert [o.attrs["value"] for o in doc.find("select", id="f-group").find_all("option")] == ["", "voice"]
    charts = dom.check_charts(doc)
    assert {c.attrs["id"] for c in charts} >= {"chart-passk", "chart-by-scenario", "chart-errors"}
    assert doc.find("table", id="t-scenarios") is not None
