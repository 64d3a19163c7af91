"""The webapi report on the report model: the paper-style table still prints, and each sample is a
request diff (expected vs generated); needs the WAPIIBench data (skipped without it)."""

from __future__ import annotations

import json


def test_single_webapi_report_keeps_the_paper_table_and_diffs_requests(webapi_runs, cli, dom):
    _, replay, ids = webapi_runs
    res = cli("report", replay)
    assert res.exit_code == 0, res.output
    assert "Correct implementations" in res.output and "by API" in res.output
    assert "4 of 6 samples pass, 2 fail" in " ".join(res.output.split())
    doc = dom.parse((replay / "report.html").read_text(encoding="utf-8"))
    entries = {e.attrs["data-id"]: e for e in dom.samples(doc)}
    assert sorted(entries) == ids
    assert [entries[i].attrs["data-pass"] for i in ids] == ["1", "0", "1", "0", "1", "1"]
    wrong_url = entries[ids[1]]
    assert wrong_url.attrs["data-errors"] in ("wrong", "illegal")
    diff = wrong_url.find("table", pred=lambda n: "diff" in n.classes())
    url_row = diff.find("tbody").find("tr")
    cells = [td.text() for td in url_row.find_all("td")]
    assert cells[0] == "URL" and cells[1].startswith("https://app.asana.com/api/1.0/")  # expected, from the data
    assert cells[2] == "https://app.asana.com/api/1.0/nothing" and cells[3] != "correct"
    assert entries[ids[3]].attrs["data-errors"] not in ("", "wrong")  # an error class (no request)
    assert doc.find("table", id="t-paper") is not None and doc.find("table", id="t-by-api-0") is not None
    charts = dom.check_charts(doc)
    assert {c.attrs["id"] for c in charts} == {"chart-headline", "chart-by-api", "chart-parallel", "chart-outcomes"}


def test_webapi_comparison(webapi_runs, cli, dom, tmp_path):
    gold, replay, ids = webapi_runs
    res = cli("report", gold, replay, "--out", tmp_path / "cmp")
    assert res.exit_code == 0, res.output
    assert "rel." in res.output and "shared samples: 6" in res.output
    data = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    correct = next(m for m in data["metrics"] if m["key"] == "correct_implementations_t")
    t = correct["mcnemar_vs_first"][1]
    assert (t["b"], t["c"], t["p"]) == (2, 0, 0.5)
    doc = dom.parse((tmp_path / "cmp" / "report.html").read_text(encoding="utf-8"))
    assert len(dom.samples(doc)) == 6 and "rel. gain" in doc.find("table", id="t-paper").text()
    assert [r.attrs["data-passed"] for r in doc.find_all("tr", pred=lambda n: "run" in n.classes())] == ["6", "4"]
    dom.check_charts(doc)
