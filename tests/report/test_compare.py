"""Comparisons (issue 12): labels, the shared samples, bootstrap intervals, McNemar's test, and an
output directory of their own; the nested track's side-by-side view."""

from __future__ import annotations

import json
import math

from callbench.report.build import build_report
from callbench.report.stats import mcnemar_exact


def test_nested_comparison_labels_tests_and_intervals(cli, nested_runs, tmp_path, monkeypatch, dom):
    monkeypatch.chdir(tmp_path)
    a, b, n = nested_runs["A"], nested_runs["B"], nested_runs["n"]
    res = cli("report", a, b, "--label", "alpha", "--label", "beta")
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    target = tmp_path / "comparisons" / "alpha-vs-beta"
    assert "HTML report: comparisons/alpha-vs-beta/report.html" in out
    assert f"shared samples: {n}" in out
    # never into a run directory: run A's own report is not written or overwritten
    assert not (a / "report.html").exists() and not (b / "report.html").exists()
    assert not (target / "run.sqlite").exists() and not (target / "config.json").exists()
    data = json.loads((target / "comparison.json").read_text())
    assert [r["label"] for r in data["runs"]] == ["alpha", "beta"]
    assert [r["model"] for r in data["runs"]] == ["replay:A.jsonl", "replay:B.jsonl"]  # the full spec
    assert data["shared_samples"] == n and data["only_in"] == {"alpha": 0, "beta": 0}
    assert [(r["passed"], r["failed"]) for r in data["runs"]] == [(18, 2), (12, 8)]
    win = next(m for m in data["metrics"] if m["key"] == "win_rate")
    # A passes and B fails on 8 samples, the reverse on 2: exact two-sided p = 2 * 56/1024
    test = win["mcnemar_vs_first"][1]
    assert (test["b"], test["c"], test["n"]) == (8, 2, n)
    assert math.isclose(test["p"], 0.109375) and math.isclose(test["p"], mcnemar_exact(8, 2))
    assert win["runs"][0]["point"] == 18 / 20 and win["runs"][1]["point"] == 12 / 20
    assert math.isclose(win["diff_vs_first"][1]["point"], -0.3)
    for m in data["metrics"]:
        for iv in m["runs"] + [d for d in m["diff_vs_first"] if d]:
            if iv["point"] is not None and iv["lo"] is not None:
                assert iv["lo"] - 1e-12 <= iv["point"] <= iv["hi"] + 1e-12, (m["key"], iv)
    assert "McNemar" in out and "0.109" in out
    # the HTML: side-by-side tables, each run's verdict per sample, labels with the model as tooltip
    doc = dom.parse((target / "report.html").read_text(encoding="utf-8"))
    side = doc.find("table", id="t-side-by-side")
    assert side is not None and [th.text() for th in side.find("thead").find_all("th")] == ["metric (%)", "alpha", "beta"]
    assert [th.attrs.get("title") for th in side.find("thead").find_all("th")][1:] == [r["model"] for r in data["runs"]]
    assert doc.find("table", id="t-side-by_domain") is not None and doc.find("table", id="t-side-by_length") is not None
    assert doc.find("table", id="t-stats") is not None
    assert doc.find("p", id="shared").attrs["data-shared"] == str(n)
    entries = dom.samples(doc)
    assert sorted(e.attrs["data-id"] for e in entries) == sorted(nested_runs["ids"])
    pairs = [e.attrs["data-pass"] for e in entries]
    assert pairs.count("0 1") == 2 and pairs.count("1 0") == 8 and pairs.count("1 1") == 10
    assert all(len(e.find_all("div", pred=lambda x: "outcome" in x.classes())) == 2 for e in entries)
    assert "disagree" in [o.attrs["value"] for o in doc.find("select", id="f-status").find_all("option")]
    wrong = next(e for e in entries if e.attrs["data-pass"] == "1 0")
    assert wrong.attrs["data-errors"] == "wrong_answer"
    calls = wrong.find_all("table", pred=lambda x: "calls" in x.classes())
    assert len(calls) == 2 and "→" in calls[1].text()  # references shown with the executed values
    dom.check_charts(doc)


def test_comparison_says_how_many_samples_are_shared(cli, nested_runs, tmp_path):
    out = tmp_path / "cmp"
    res = cli("report", nested_runs["gold"], nested_runs["C"], "--out", out)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "shared samples: 4 (samples per run: gold 20, replay:C.jsonl 4)" in text
    assert "warning: runs differ in sample set: 4 shared, 16 only in gold; the comparison uses the 4 shared samples only" in text
    data = json.loads((out / "comparison.json").read_text())
    assert data["shared_samples"] == 4 and data["runs"][0]["samples"] == 20
    win = next(m for m in data["metrics"] if m["key"] == "win_rate")
    assert win["runs"][0]["point"] == 1.0 and win["runs"][1]["point"] == 0.75  # on the 4 shared only
    assert "+38" not in text and "-25.0 pp" in text


def test_comparison_never_writes_into_a_run_directory(cli, nested_runs, tmp_path):
    a, b = nested_runs["A"], nested_runs["B"]
    for bad in (a, a / "sub", nested_runs["gold"]):
        res = cli("report", a, b, "--out", bad)
        assert res.exit_code == 2 and "run directory" in res.output, res.output
        assert not (bad / "report.html").exists()
    res = cli("report", a, b, "--html", a / "cmp.html")
    assert res.exit_code == 2 and not (a / "cmp.html").exists()
    # a single-run report still goes into its run directory
    single = build_report([nested_runs["gold"]])
    assert single.html_path == nested_runs["gold"] / "report.html" and single.html_path.is_file()
    (nested_runs["gold"] / "report.html").unlink()


def test_label_count_must_match(cli, nested_runs, tmp_path):
    res = cli("report", nested_runs["A"], nested_runs["B"], "--label", "only-one", "--out", tmp_path / "x")
    assert res.exit_code == 2 and "one --label per run" in res.output


def test_a_default_comparison_folder_never_overwrites_another(cli, nested_runs, webapi_runs, tmp_path, monkeypatch):
    """Issue 31: `report A B --label ud --label cd` on nested runs overwrote an earlier webapi
    comparison with the same labels (the folder is named from the labels)."""
    monkeypatch.chdir(tmp_path)
    gold, replay, _ = webapi_runs
    first = cli("report", gold, replay, "--label", "ud", "--label", "cd")
    assert first.exit_code == 0, first.output
    webapi_json = (tmp_path / "comparisons" / "ud-vs-cd" / "comparison.json").read_text()
    second = cli("report", nested_runs["A"], nested_runs["B"], "--label", "ud", "--label", "cd")
    assert second.exit_code == 0, second.output
    assert "comparisons/ud-vs-cd-2/report.html" in " ".join(second.output.split())
    assert (tmp_path / "comparisons" / "ud-vs-cd" / "comparison.json").read_text() == webapi_json  # kept
    assert json.loads((tmp_path / "comparisons" / "ud-vs-cd-2" / "comparison.json").read_text())["track"] == "nested"
    # the same runs compared again are written where they were
    again = cli("report", gold, replay, "--label", "ud", "--label", "cd")
    assert "comparisons/ud-vs-cd/report.html" in " ".join(again.output.split())
    assert not (tmp_path / "comparisons" / "ud-vs-cd-3").exists()
