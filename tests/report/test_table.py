"""Terminal tables at 80 columns (issue 12: "by-API table truncates at 80 columns").

Rich prints at 80 columns on a narrow terminal and whenever the output is not a terminal; the
by-API table (10 columns) used to be squeezed there until its headers and values were cut off
with ellipses ("corr…", "100…"). Now no word is cut: a table too wide for the width is printed in
parts, each repeating its label column."""

from __future__ import annotations

import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from callbench.report.build import build_report
from callbench.report.model import Column, Table
from callbench.report.table import print_nested_summary, print_summary, print_table
from callbench.report.webapi import BY_API_COLUMNS

APIS = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")  # WAPIIBench's, the longest name included


def console(width: int = 80) -> Console:
    # a file, not a terminal: what a pipe or a log gets (rich's default width there is 80)
    return Console(file=io.StringIO(), width=width, record=True, color_system=None)


def check_fits(text: str, width: int = 80) -> list[str]:
    """No ellipsis anywhere; every table line within ``width`` (other lines are soft-wrapped: the
    terminal folds them)."""
    lines = text.splitlines()
    assert "…" not in text, text
    table_lines = [line for line in lines if set(line) & set("│┃━─")]
    assert table_lines and max(cell_len(line) for line in table_lines) <= width, text
    return lines


def cells_of(lines: list[str], label: str) -> list[str]:
    """The cells right of ``label`` in every table row that starts with it (every part)."""
    out = []
    for line in lines:
        parts = [p.strip() for p in line.strip("│┃ ").split("│")]
        if parts and parts[0] == label:
            out += parts[1:]
    return out


def webapi_summary() -> dict:
    by_api = {}
    for i, api in enumerate(APIS):
        m = {key: round(0.1 * (i + 1) + 0.01 * j, 3) for j, (_, key) in enumerate(BY_API_COLUMNS) if key != "n"}
        by_api[api] = {"n": 100 + i, **m}
    return {"track": "webapi", "scoring": "strict", "model": "openai:some-model@http://127.0.0.1:8765/v1",
            "setup": "full", "metrics": {}, "by_api": by_api}


@pytest.mark.parametrize("width", [80, 60])
def test_by_api_table_is_not_cut_at_80_columns(width):
    con = console(width)
    summary = webapi_summary()
    print_summary(summary, con)
    lines = check_fits(con.export_text(), width)
    text = "\n".join(lines)
    for header, _ in BY_API_COLUMNS:  # every header whole (wrapped at spaces at most)
        for word in header.split():
            assert re.search(rf"(?<![\w/.]){re.escape(word)}(?![\w/.])", text), (word, text)
    for api in APIS:  # every API's row, every value, in column order across the parts
        m = summary["by_api"][api]
        want = [str(m["n"])] + [f"{100 * m[key]:.1f}" for _, key in BY_API_COLUMNS if key != "n"]
        assert cells_of(lines, api) == want, (api, text)


def test_nested_breakdown_is_not_cut_at_80_columns():
    groups = {"n": 400, "f1_function": 0.975, "f1_parameter": 0.5, "partial_sequence_accuracy": 0.25,
              "full_sequence_accuracy": 0.125, "win_rate": 1.0, "parse_error_rate": 0.0}
    summary = {"track": "nested", "scoring": "strict", "model": "gold", "metrics": groups,
               "by_domain": {"math": groups, "string_ops": groups},
               "by_length": {str(k): {**groups, "n": k * 10} for k in range(2, 9)}}
    con = console()
    print_nested_summary(summary, con)
    lines = check_fits(con.export_text())
    text = "\n".join(lines)
    assert "part 1 of" in text
    for name in ["all", "domain=math", "domain=string_ops", *(f"length={k}" for k in range(2, 9))]:
        assert name in text, name
    assert cells_of(lines, "Win rate") == ["100.0"] * 10
    assert [c for line in lines for c in re.findall(r"\b\d+\.\d\b", line)].count("25.0") == 10  # partial seq. acc.


def test_a_table_that_fits_is_one_table():
    table = Table(title="t", columns=[Column("metric", align="left"), Column("a"), Column("b")])
    table.add("Correct implementations", "100.0", "0.0")
    con = console()
    print_table(con, table)
    text = con.export_text()
    assert "part" not in text and cells_of(text.splitlines(), "Correct implementations") == ["100.0", "0.0"]


def test_comparison_tables_are_not_cut_at_80_columns(nested_runs, tmp_path):
    """Three runs side by side: the tables, intervals and paired tests, within 80 columns."""
    con = console()
    build_report([nested_runs["A"], nested_runs["B"], nested_runs["gold"]], out=tmp_path / "cmp",
                 labels=["alpha", "beta", "gold"], console=con)
    lines = check_fits(con.export_text())
    assert cells_of(lines, "Win rate")[:3] == ["90.0", "60.0", "100.0"]  # side by side
