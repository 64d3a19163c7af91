from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from callbench.sandbox.python import Limits
from callbench.tracks.nested.executor import CallError, NestedExecutor, answers_match
from callbench.tracks.nested.schema import ToolCall
from callbench.tracks.nested.tools import builtin_tools, load_tools

NESTFUL = (
    Path(os.environ.get("CALLBENCH_DATA_DIR") or Path(__file__).resolve().parents[4] / "shared" / "data")
    / "nestful"
)
# Code-domain rows need the published StarCoder functions, which are not shipped with the data.
NOT_BUILTIN = {"get_url_content", "non_whitespace_substrings"}


@pytest.fixture(scope="module")
def v2_rows():
    if not NESTFUL.is_dir():
        pytest.skip(f"NESTFUL data not found under {NESTFUL}")
    v2 = NESTFUL / "v2-samples"
    return [
        json.loads(x) for x in (v2 / "toy_data_jan2025_schema.jsonl").read_text().splitlines() if x.strip()
    ] + json.loads((v2 / "icl_examples.json").read_text())


def test_gold_math_rows_reproduce(v2_rows):
    done = 0
    with NestedExecutor() as ex:
        for row in v2_rows:
            if row["output"][0]["name"] in NOT_BUILTIN:
                continue
            res = ex.run([ToolCall.model_validate(c) for c in row["output"]])
            assert res.ok and answers_match(res.final, row["gold_answer"]), (row["sample_id"], res.final)
            done += 1
    assert done == 5


def test_icl_code_row_with_user_tools(v2_rows, tmp_path):
    (tmp_path / "strs.py").write_text(
        textwrap.dedent("""
        def non_whitespace_substrings(input_str):
            return input_str.split()
        def count_words_from_sentences(sentences):
            out = {}
            for s in sentences:
                for w in s.split():
                    out[w] = out.get(w, 0) + 1
            return out
    """)
    )
    row = v2_rows[-1]
    with NestedExecutor(load_tools(tmp_path)) as ex:
        res = ex.run([ToolCall.model_validate(c) for c in row["output"]])
    assert answers_match(res.final, row["gold_answer"])


HOSTILE = """
import os, socket
def net():
    socket.create_connection(("127.0.0.1", 9), timeout=1)
def rawnet():
    import _socket
    s = _socket.socket()
    s.connect(("127.0.0.1", 9))
def write_out(path):
    with open(path, "w") as f:
        f.write("x")
    return "written"
def write_in():
    with open("inside.txt", "w") as f:
        f.write("ok")
    return open("inside.txt").read()
def spin():
    while True:
        pass
def forks():
    for _ in range(50):  # guarded fork bomb: bounded, and refused at the first fork
        os.fork()
def hog():
    return len(bytearray(10**10))
def shout():
    print("noise on stdout")
    return 1
def pos(a, b):
    return a - b
"""


@pytest.fixture()
def hostile(tmp_path):
    d = tmp_path / "tools"
    d.mkdir()
    (d / "bad.py").write_text(HOSTILE)
    return load_tools(d) + builtin_tools()


def _one(ex, name, **args):
    return ex.run(
        [
            ToolCall(name=name, label="$var_1", arguments=args),
            ToolCall(name="add", label="$var_2", arguments={"arg_0": "$var_1.output_0$", "arg_1": 1}),
        ]
    )


def test_hostile_code_is_contained(hostile, tmp_path):
    outside = Path("/var/tmp") / f"callbench-outside-{os.getpid()}.txt"  # /tmp is the sandbox's own
    with NestedExecutor(hostile, Limits(timeout_s=1.5, memory_mb=512)) as ex:
        cases = {
            "net": ({}, "PermissionError"),
            "rawnet": ({}, "PermissionError"),
            "write_out": ({"path": str(outside)}, "PermissionError"),
            "spin": ({}, "TimeoutError"),
            "forks": ({}, "PermissionError"),
            "hog": ({}, "MemoryError"),
        }
        for name, (args, err) in cases.items():
            res = _one(ex, name, **args)
            first, second = res.calls
            assert isinstance(first.output, CallError) and err in first.output.message, (name, first.output)
            assert isinstance(second.output, CallError) and "failed" in second.output.message
            assert isinstance(res.final, CallError)
        assert not outside.exists()
        ok = ex.run([ToolCall(name="write_in", label="$var_1"), ToolCall(name="shout", label="$var_2")])
        assert ok.ok and ok.calls[0].output == {"output_0": "ok"} and ok.final == 1
        assert ex.run([ToolCall(name="add", label="$var_1", arguments={"arg_0": 1, "arg_1": 2})]).final == 3


def test_positional_binding(hostile):
    with NestedExecutor(hostile) as ex:
        assert ex.run([ToolCall(name="pos", label="v", arguments={"arg_1": 1, "arg_0": 10})]).final == 9
        assert ex.run([ToolCall(name="pos", label="v", arguments={"b": 1, "a": 10})]).final == 9
        bad = ex.run([ToolCall(name="pos", label="v", arguments={"arg_2": 1})]).final
        assert isinstance(bad, CallError) and "arg_2" in bad.message


def test_error_never_equals_falsy():
    with NestedExecutor() as ex:
        res = ex.run([ToolCall(name="divide", label="$var_1", arguments={"arg_0": 1, "arg_1": 0})])
    err = res.final
    assert isinstance(err, CallError) and "ZeroDivisionError" in err.message
    for falsy in (0, 0.0, False, None, "", [], {}):
        assert err != falsy and not (err == falsy) and not (falsy == err) and not answers_match(err, falsy)
    assert err.to_json() == {"__error__": err.message}


def test_unknown_label_is_explicit():
    with NestedExecutor() as ex:
        res = ex.run(
            [ToolCall(name="add", label="$var_1", arguments={"arg_0": "$var_7.result$", "arg_1": 1})]
        )
    assert isinstance(res.final, CallError) and "unknown label 'var_7'" in res.final.message
