"""benchmarks/bounded_work_timings.py, the home of the wall-clock figures unit tests no longer
assert (issue 28, item 7): it runs a case and writes its figures; the test checks their shape,
never a time."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bounded_work_timings", REPO / "benchmarks" / "bounded_work_timings.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_one_case_is_timed_against_its_old_bound(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert _bench().main(["--only", "nested_read/open_brackets", "--repeat", "2", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["settings"] == {"repeat": 2, "only": "nested_read/open_brackets"}
    (name,) = figures["cases"]
    case = figures["cases"][name]
    assert name == "nested_read/open_brackets" and case["target_s"] == 10.0
    assert 0 <= case["best_s"] <= case["median_s"] and isinstance(case["met"], bool)
    assert len(figures["machine"]["loadavg_before"]) == 3
    assert "nested_read/open_brackets" in capsys.readouterr().out


def test_every_case_names_a_target():
    bench = _bench()
    cases = bench._nested_cases() + bench._grammar_cases()
    names = [name for name, _, _ in cases]
    assert len(names) == len(set(names)) == 11
    assert all(target > 0 and callable(op) for _, target, op in cases)
