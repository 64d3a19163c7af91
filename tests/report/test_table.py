"""Terminal tables at 80 columns (issue 12: "by-API table truncates at 80 columns").

Rich prints at 80 columns on a narrow terminal and whenever the output is not a terminal; the
by-API table (10 columns) used to be squeezed there until its headers and values were cut off
with ellipses ("corr…", "100…"). Now no word is cut: a table too wide for the width is printed in
parts, each repeating its label column."""

from __future__ import annotations

import re

import pytest

from callbench.report.build import build_report
from callbench.report.model import Column, Table
from callbench.report.table import print_nested_summary, print_summary, print_table
from callbench.report.webapi import BY_API_COLUMNS

APIS = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")  # WAPIIBench's, the longest name included


def webapi_summary() -> dict:
    by_api = {}
    for i, api in enumerate(APIS):
        m = {key: round(0.1 * (i + 1) + 0.01 * j, 3) for j, (_, key) in enumerate(BY_API_COLUMNS) if key != "n"}
        by_api[api] = {"n": 100 + i, **m}
    return {"track": "webapi", "scoring": "strict", "model": "openai:some-model@http://127.0.0.1:8765/v1",
            "setup": "full", "metrics": {}, "by_api": by_api}


@pytest.mark.parametrize("width", [80, 60])
def test_by_api_table_is_not_cut_at_80_columns(width, terminal):
    con = terminal.console(width)
    summary = webapi_summary()
    print_summary(summary, con)
    lines = terminal.check_fits(con.export_text(), width)
    text = "\n".join(lines)
    for header, _ in BY_API_COLUMNS:  # every header whole (wrapped at spaces at most)
        for word in header.split():
            assert re.search(rf"(?<![\w/.]){re.escape(word)}(?![\w/.])", text), (word, text)
    for api in APIS:  # every API's row, every value, in column order across the parts
        m = summary["by_api"][api]
        want = [str(m["n"])] + [f"{100 * m[key]:.1f}" for _, key in BY_API_COLUMNS if key != "n"]
        assert terminal.cells_of(lines, api) == want, (api, text)


def test_nested_breakdown_is_not_cut_at_80_columns(terminal):
    groups = {"n": 400, "f1_function": 0.975, "f1_parameter": 0.5, "partial_sequence_accuracy": 0.25,
              "full_sequence_accuracy": 0.125, "win_rate": 1.0, "parse_error_rate": 0.0}
    summary = {"track": "nested", "scoring": "strict", "model": "gold", "metrics": groups,
               "by_domain": {"math": groups, "string_ops": groups},
               "by_length": {str(k): {**groups, "n": k * 10} for k in range(2, 9)}}
    con = terminal.console()
    print_nested_summary(summary, con)
    lines = terminal.check_fits(con.export_text())
    text = "\n".join(lines)
    assert "part 1 of" in text
    for name in ["all", "domain=math", "domain=string_ops", *(f"length={k}" for k in range(2, 9))]:
        assert name in text, name
    assert terminal.cells_of(lines, "Win rate") == ["100.0"] * 10
    assert [c for line in lines for c in re.findall(r"\b\d+\.\d\b", line)].count("25.0") == 10  # partial seq. acc.


def test_a_table_that_fits_is_one_table(terminal):
    table = Table(title="t", columns=[Column("metric", align="left"), Column("a"), Column("b")])
    table.add("Correct implementations", "100.0", "0.0")
    con = terminal.console()
    print_table(con, table)
    text = con.export_text()
    assert "part" not in text and terminal.cells_of(text.splitlines(), "Correct implementations") == ["100.0", "0.0"]


def test_comparison_tables_are_not_cut_at_80_columns(nested_runs, tmp_path, terminal):
    """Three runs side by side: the tables, intervals and paired tests, within 80 columns."""
    con = terminal.console()
    build_report([nested_runs["A"], nested_runs["B"], nested_runs["gold"]], out=tmp_path / "cmp",
                 labels=["alpha", "beta", "gold"], console=con)
    lines = terminal.check_fits(con.export_text())
    assert terminal.cells_of(lines, "Win rate")[:3] == ["90.0", "60.0", "100.0"]  # side by side
