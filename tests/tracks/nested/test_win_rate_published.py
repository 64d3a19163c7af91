"""Win rate as published: the executable portion includes the code domain (its tools run from a
NESTFUL-layout directory: func_file_map.json + one file per tool, in the sandbox with a per-call
timeout), and no non-executable row is dropped silently (``n_executable`` and ``non_executable``).

The tool files below are this test's own, written in the layout callbench supports
(:mod:`callbench.tracks.nested.tools.library`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import DataError
from callbench.tracks.nested.metrics import aggregate, score_sample, win_rate_line
from callbench.tracks.nested.tools.library import CodeLibrary

MATH = {"parameters": {"arg_0": {}, "arg_1": {}}, "output_parameters": {"result": {}}}
CODE = {"parameters": {"text": {}}, "output_parameters": {"output_0": {}}}
CODE_N = {"parameters": {"n": {}}, "output_parameters": {"output_0": {}}}


def _row(sid, calls, gold=..., *, domain, specs):
    row = {
        "sample_id": sid,
        "input": sid,
        "output": [{"name": n, "label": f"$var_{i}", "arguments": a} for i, (n, a) in enumerate(calls, 1)],
        "tools": [{"name": n, **specs[n]} for n in sorted({n for n, _ in calls})],
        "domain": domain,
    }
    if gold is not ...:
        row["gold_answer"] = gold
    return row


SPECS = {
    "add": MATH,
    "multiply": MATH,
    "shout": CODE,
    "word_count": CODE,
    "double_it": CODE_N,
    "fly_to_moon": CODE,
    "slow_tool": CODE,
}

ROWS = [
    # math (built-in MathQA tools): (2 + 3) * 4
    _row(
        "m1",
        [("add", {"arg_0": 2, "arg_1": 3}), ("multiply", {"arg_0": "$var_1.result$", "arg_1": 4})],
        20,
        domain="math",
        specs=SPECS,
    ),
    # code, one call: the answer is the plain return value (output_0)
    _row("c1", [("shout", {"text": "hi"})], "HI!", domain="code", specs=SPECS),
    # code, a chain through output_0, two tools of one file: len("a b c".split()) * 2
    _row(
        "c2",
        [("word_count", {"text": "a b c"}), ("double_it", {"n": "$var_1.output_0$"})],
        6,
        domain="code",
        specs=SPECS,
    ),
    # a tool that no file implements
    _row(
        "u1",
        [("shout", {"text": "x"}), ("fly_to_moon", {"text": "$var_1.output_0$"})],
        "ok",
        domain="code",
        specs=SPECS,
    ),
    # no gold answer
    _row("n1", [("add", {"arg_0": 1, "arg_1": 1})], domain="math", specs=SPECS),
]

FILES = {
    "py_code_file_1.py": "def shout(text):\n    return text.upper() + '!'\n",
    "py_code_file_2.py": (
        "def _words(text):\n    return text.split()\n\n"
        "def word_count(text):\n    return len(_words(text))\n\n"
        "def double_it(n):\n    return 2 * n\n"
    ),
    "py_code_file_3.py": "def slow_tool(text):\n    while text == text:  # spins: a call's limit is its CPU time\n        pass\n    return text\n",
    "py_code_file_4.py": "def _format(text):\n    return f'<{text}>'\n",
}
FUNC_MAP = {
    "shout": "py_code_file_1.py",
    "word_count": "py_code_file_2.py",
    "double_it": "py_code_file_2.py",
    "slow_tool": "py_code_file_3.py",
    "_format": "py_code_file_4.py",
    "missing_file_tool": "py_code_file_9.py",
}


def _library(tmp_path: Path) -> Path:
    d = tmp_path / "executable_functions"
    d.mkdir()
    (d / "func_file_map.json").write_text(json.dumps(FUNC_MAP))
    for name, source in FILES.items():
        (d / name).write_text(source)
    return d


def _data(tmp_path: Path, rows) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_library_reads_the_map_and_exposes_only_mapped_functions(tmp_path):
    lib = CodeLibrary(_library(tmp_path))
    assert lib.names == {
        "shout",
        "word_count",
        "double_it",
        "slow_tool",
        "_format",
    }  # py_code_file_9.py is absent
    assert lib.missing_files == ["py_code_file_9.py"]
    (m,) = lib.modules_for(["word_count", "add"])
    assert m.functions == ("word_count",)  # not _words, not double_it (not asked), not add (not in the map)
    assert len(lib.digest()) == 64


def test_map_naming_a_path_is_refused(tmp_path):
    d = tmp_path / "lib"
    d.mkdir()
    (d / "func_file_map.json").write_text(json.dumps({"f": "../evil.py"}))
    with pytest.raises(DataError, match="not a file name"):
        CodeLibrary(d)


def test_gold_run_mixing_math_code_unimplemented_and_no_gold(tmp_path):
    from callbench.api import run

    lib = _library(tmp_path)
    out = run(
        "nested",
        "gold",
        out_dir=tmp_path / "runs",
        data=str(_data(tmp_path, ROWS)),
        code_functions=str(lib),
        concurrency=1,
    )
    m = out.summary["metrics"]
    assert m["n"] == 5
    assert m["n_executable"] == 3 and m["win_n"] == 3  # m1, c1, c2
    assert m["win_rate"] == 1.0
    assert m["non_executable"] == {
        "n": 2,
        "by_reason": {"no gold answer": 1, "tool not implemented": 1},
        "missing_tools": {"fly_to_moon": 1},
        "rows": [
            {"id": "u1", "reason": "tool not implemented: fly_to_moon"},
            {"id": "n1", "reason": "no gold answer"},
        ],
    }
    assert win_rate_line(m) == "win rate 1.00 over 3 of 5 rows"
    # the breakdowns keep the counts, the overall summary the list
    assert out.summary["by_domain"]["code"]["n_executable"] == 2
    assert out.summary["by_domain"]["code"]["non_executable"] == {
        "n": 1,
        "by_reason": {"tool not implemented": 1},
        "missing_tools": {"fly_to_moon": 1},
    }
    # summary.json on disk has the same
    on_disk = json.loads((Path(out.run_dir) / "summary.json").read_text())
    assert on_disk["metrics"]["n_executable"] == 3
    assert on_disk["metrics"]["non_executable"]["n"] == 2
    # the terminal summary and the report say which rows the win rate is over
    from rich.console import Console

    from callbench.report.nested import group_table
    from callbench.report.table import print_nested_summary

    note = "win rate 1.00 over 3 of 5 rows (not executable: 1 no gold answer, 1 tool not implemented)"
    console = Console(record=True, width=200)
    print_nested_summary(out.summary, console)
    assert note in console.export_text()
    assert group_table(out.summary).caption == "in %; " + note


def test_without_the_library_code_rows_are_listed_not_dropped(tmp_path):
    from callbench.api import run

    out = run(
        "nested",
        "gold",
        out_dir=tmp_path / "runs",
        data=str(_data(tmp_path, ROWS[:3])),
        code_functions="none",
        concurrency=1,
    )
    m = out.summary["metrics"]
    assert (m["n"], m["n_executable"], m["win_rate"]) == (3, 1, 1.0)
    assert m["non_executable"]["rows"] == [
        {"id": "c1", "reason": "tool not implemented: shout"},
        {"id": "c2", "reason": "tool not implemented: double_it, word_count"},
    ]
    assert m["non_executable"]["missing_tools"] == {"double_it": 1, "shout": 1, "word_count": 1}


def test_code_tool_spinning_past_its_cpu_limit_ends_as_a_timeout(tmp_path):
    from callbench.sandbox.python import Limits
    from callbench.tracks.nested.executor import NestedExecutor
    from callbench.tracks.nested.schema import ToolCall
    from callbench.tracks.nested.tools import builtin_tools

    lib = CodeLibrary(_library(tmp_path))
    with NestedExecutor(builtin_tools(), Limits(timeout_s=1.0), library=lib) as ex:
        res = ex.run([ToolCall(name="slow_tool", label="$var_1", arguments={"text": "z"})])
        assert not res.ok
        assert res.final.message.startswith("TimeoutError")
        # the next sequence gets a fresh worker and runs
        res2 = ex.run([ToolCall(name="shout", label="$var_1", arguments={"text": "ok"})])
        assert res2.ok and res2.final == "OK!"
        # a mapped private name (upstream's map has e.g. "_format") is a tool too
        res3 = ex.run([ToolCall(name="_format", label="$var_1", arguments={"text": "x"})])
        assert res3.ok and res3.final == "<x>"


def test_aggregate_lists_reasons_from_score_sample():
    gold = [{"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 2}}]
    won = score_sample(gold, gold, pred_answer=3, gold_answer=3, executed_ok=True, sample_id="a")
    lost = score_sample(gold, gold, pred_answer=4, gold_answer=3, executed_ok=True, sample_id="b")
    skipped = score_sample(gold, gold, sample_id="c", not_executable="no gold answer")
    old = score_sample(gold, gold, sample_id="d")  # stored before reasons existed
    agg = aggregate([won, lost, skipped, old])
    assert (agg["win_rate"], agg["n_executable"]) == (0.5, 2)
    assert agg["non_executable"]["by_reason"] == {
        "no gold answer": 1,
        "not executable (reason not recorded)": 1,
    }
    assert [r["id"] for r in agg["non_executable"]["rows"]] == ["c", "d"]
    assert win_rate_line({"n": 3, "n_executable": 0, "win_rate": None}) == "win rate – over 0 of 3 rows"
