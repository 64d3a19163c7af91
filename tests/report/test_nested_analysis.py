"""The nested report's breakdowns by nested references and graph shape (issue 13, the paper's
analyses): terminal tables within 80 columns, the HTML tables and charts of one run and of a
comparison, and runs stored before the breakdowns existed."""

from __future__ import annotations

import json
from pathlib import Path

from callbench.report.build import build_report
from callbench.report.model import RunInfo
from callbench.report.nested import NestedView, analysis_tables, ordered
from callbench.report.table import print_nested_summary
from callbench.tracks.nested.analysis import SHAPES

M = {
    "n": 10,
    "f1_function": 1.0,
    "f1_parameter": 0.5,
    "partial_sequence_accuracy": 0.25,
    "full_sequence_accuracy": 0.125,
    "win_rate": 1.0,
    "parse_error_rate": 0.0,
}


def summary_with_analyses() -> dict:
    return {
        "track": "nested",
        "scoring": "strict",
        "model": "gold",
        "metrics": {**M, "n": 100},
        "by_domain": {"math": M},
        "by_length": {"2": M},
        "by_references": {b: M for b in ("0", "1", "2", "3", "4", "5", "6+")},
        "by_shape": {s: M for s in ("mixed", "chain", "independent", "fan-out", "fan-in")},
    }


def test_terminal_tables_show_every_bin_within_80_columns(terminal):
    con = terminal.console()
    print_nested_summary(summary_with_analyses(), con)
    lines = terminal.check_fits(con.export_text())
    text = "\n".join(lines)
    assert "by nested references" in text and "by graph shape" in text
    for name in [
        *(f"refs={b}" for b in ("0", "1", "2", "3", "4", "5", "6+")),
        *(f"shape={s}" for s in SHAPES),
    ]:
        assert name in text, name
    # all, domain, length; 7 reference bins; 5 shapes
    assert terminal.cells_of(lines, "Win rate") == ["100.0"] * (3 + 7 + 5)
    # shapes in SHAPES order, not as stored
    assert [text.index(f"shape={s}") for s in SHAPES] == sorted(text.index(f"shape={s}") for s in SHAPES)


def test_a_summary_without_the_breakdowns_has_no_such_table_or_chart():
    old = {k: v for k, v in summary_with_analyses().items() if k not in ("by_references", "by_shape")}
    assert analysis_tables(old) == []
    run = RunInfo("old", "gold", Path("."), old, 100)
    assert [c.id for c in NestedView().charts([run], {})] == ["headline", "by-domain", "by-length"]
    assert [
        c.id
        for c in NestedView().charts([RunInfo("new", "gold", Path("."), summary_with_analyses(), 100)], {})
    ][-2:] == ["by-references", "by-shape"]


def test_order_of_groups():
    assert ordered("by_shape", {"mixed", "chain", "fan-in", "independent", "fan-out"}) == list(SHAPES)
    assert ordered("by_references", {"6+", "10", "2", "0"}) == ["0", "2", "10", "6+"]


def _rows(table) -> list[list[str]]:
    return [[td.text().strip() for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]


def test_single_run_html_has_the_breakdown_tables_and_charts(nested_runs, tmp_path, dom):
    gold = nested_runs["gold"]
    summary = json.loads((gold / "summary.json").read_text())
    report = build_report([gold], out=tmp_path / "single")
    doc = dom.parse(report.html_path.read_text(encoding="utf-8"))
    for key, prefix in (("by_references", "refs"), ("by_shape", "shape")):
        table = doc.find("table", id=f"t-groups-{key}")
        assert table is not None, key
        heads = [th.text() for th in table.find("thead").find_all("th")][1:]
        names = ordered(key, summary[key])
        assert [h.split("(")[0].strip() for h in heads] == [f"{prefix}={g}" for g in names]
        assert sum(summary[key][g]["n"] for g in names) == nested_runs["n"]
        assert all(row[1:] == ["100.0"] * len(names) for row in _rows(table) if row[0] != "Parse error rate")
    ids = [c.attrs["id"] for c in dom.check_charts(doc)]
    assert "chart-by-references" in ids and "chart-by-shape" in ids


def test_comparison_shows_the_breakdowns_side_by_side(nested_runs, tmp_path, dom):
    a, b = nested_runs["A"], nested_runs["B"]
    report = build_report([a, b], out=tmp_path / "cmp", labels=["alpha", "beta"])
    doc = dom.parse(report.html_path.read_text(encoding="utf-8"))
    summaries = [json.loads((d / "summary.json").read_text()) for d in (a, b)]
    for key in ("by_references", "by_shape"):
        table = doc.find("table", id=f"t-side-{key}")
        assert table is not None, key
        rows = _rows(table)
        names = ordered(key, summaries[0][key])
        assert [r[0] for r in rows] == names
        assert sum(int(r[1]) for r in rows) == nested_runs["n"]
        for row in rows:  # per run: win, full seq., F1 fn -- as each run's own summary says
            for i, s in enumerate(summaries):
                m = s[key][row[0]]
                want = [f"{100 * m[k]:.1f}" for k in ("win_rate", "full_sequence_accuracy", "f1_function")]
                assert row[2 + 3 * i : 5 + 3 * i] == want, (key, row, i)
    ids = [c.attrs["id"] for c in dom.check_charts(doc)]
    assert "chart-by-references" in ids and "chart-by-shape" in ids


def test_comparison_with_a_run_stored_before_the_breakdowns():
    new = summary_with_analyses()
    old = {k: v for k, v in new.items() if k not in ("by_references", "by_shape")}
    runs = [RunInfo("old", "gold", Path("."), old, 100), RunInfo("new", "gold", Path("."), new, 100)]
    tables = {t.id: t for t in NestedView().tables(runs)}
    rows = [[c.text for c in r] for r in tables["side-by_shape"].rows]
    assert [r[0] for r in rows] == list(SHAPES)
    assert all(r[1:] == ["10", "–", "–", "–", "100.0", "12.5", "100.0"] for r in rows)  # n from the new run
    charts = {c.id: c for c in NestedView().charts(runs, {})}
    assert charts["by-shape"].series[0].values == [None] * len(SHAPES) and charts["by-shape"].n_points == len(
        SHAPES
    )
