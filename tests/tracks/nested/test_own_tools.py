"""Own tools (``--functions``): how a tool's outputs are named, and the load-time check that the
gold calls can reference them (instead of a gold self-check that silently wins 1 task in 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import DataError
from callbench.tracks.nested.dataset import builtin_tasks, load_nested
from callbench.tracks.nested.tools import builtin_tools, check_tool_outputs, load_tools, tool_outputs

SPEC = {"parameters": {"a": {}, "b": {}}, "output_parameters": {"result": {}}}


def _tasks(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _row(sid: str, calls: list[tuple[str, dict]], gold, spec: dict | None = None) -> dict:
    names = sorted({n for n, _ in calls})
    return {
        "sample_id": sid,
        "input": sid,
        "output": [{"name": n, "label": f"$var_{i}", "arguments": a} for i, (n, a) in enumerate(calls, 1)],
        "tools": [{"name": n, **(spec if spec is not None else SPEC)} for n in names],
        "gold_answer": gold,
        "domain": "math",
    }


ROWS = [
    _row("t1", [("add", {"a": 2, "b": 3})], 5),
    _row("t2", [("add", {"a": 2, "b": 3}), ("mul", {"a": "$var_1.result$", "b": 4})], 20),
    _row("t3", [("mul", {"a": 2, "b": 3}), ("add", {"a": "$var_1.result$", "b": 4})], 10),
]


def _tools(tmp_path: Path, source: str) -> list:
    d = tmp_path / "tools"
    d.mkdir(exist_ok=True)
    (d / "mytools.py").write_text(source)
    return builtin_tools() + load_tools(d)


def test_plain_return_with_result_references_is_refused_in_one_line(tmp_path):
    data = _tasks(tmp_path, ROWS)
    modules = _tools(tmp_path, "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    total = a * b\n    return total\n")
    with pytest.raises(DataError) as err:
        check_tool_outputs(load_nested(data), modules, data_file=data)
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        f"{tmp_path / 'tools' / 'mytools.py'}: tool 'add': task t2 in {data} references '$var_1.result$', "
        "but 'add' returns a plain value (stored as 'output_0'), which has no field 'result'; its spec lists "
        "result; return {'result': value} (output naming: see callbench.tracks.nested.tools)"
    )


def test_named_outputs_pass_and_the_gold_self_check_wins_every_task(tmp_path):
    from callbench.api import run

    data = _tasks(tmp_path, ROWS)
    source = "def add(a, b):\n    return {'result': a + b}\n\ndef mul(a, b):\n    out = {'result': a * b}\n    return out\n"
    modules = _tools(tmp_path, source)
    check_tool_outputs(load_nested(data), modules, data_file=data)
    out = run("nested", "gold", out_dir=tmp_path / "runs", data=str(data), functions=str(tmp_path / "tools"), concurrency=1)
    assert out.summary["metrics"]["win_rate"] == 1.0


def test_the_check_agrees_with_what_the_executor_stores(tmp_path):
    """Each case: the tool's return, the spec's output_parameters, the referenced field, and
    whether the executor resolves it (so the check must pass exactly then)."""
    from callbench.tools import ToolSpec
    from callbench.tracks.nested.executor import NestedExecutor
    from callbench.tracks.nested.schema import ToolCall

    cases = [
        ("return a + b", {"result": {}}, "result", False),
        ("return a + b", {"result": {}}, "output_0", True),
        ("return a + b", None, "output_0", True),
        ("return {'result': a + b}", None, "result", True),
        ("return {'sum': a + b}", None, "sum", False),  # no spec: only the MathQA shape is kept
        ("return {'sum': a + b, 'diff': a - b}", {"sum": {}, "diff": {}}, "diff", True),
        ("return {'sum': a + b}", {"sum": {}, "diff": {}}, "sum", False),  # misses a listed field
        ("return a + b, a - b", None, "output_1", True),
        ("return a + b, a - b", None, "output_2", False),
        ("if a > b:\n        return {'result': a}\n    return {'result': b}", {"result": {}}, "result", True),
        ("print(a)", None, "output_0", True),  # None, wrapped
    ]
    for i, (body, out_params, field, resolves) in enumerate(cases):
        source = f"def tool(a, b):\n    {body}\n\ndef take(x):\n    return x\n"
        modules = _tools(tmp_path, source)
        spec = {"parameters": {"a": {}, "b": {}}, **({"output_parameters": out_params} if out_params else {})}
        row = _row(f"c{i}", [("tool", {"a": 3, "b": 1}), ("take", {"x": f"$var_1.{field}$"})], None, spec)
        (task,) = load_nested(_tasks(tmp_path, [row]))
        with NestedExecutor(modules) as ex:
            result = ex.run([ToolCall.model_validate(c.model_dump()) for c in task.output], [ToolSpec.model_validate(t.model_dump()) for t in task.tools])
        assert result.ok is resolves, (body, out_params, field, result)
        if resolves:
            check_tool_outputs([task], modules)
        else:
            with pytest.raises(DataError, match=f"has no field '{field}'"):
                check_tool_outputs([task], modules)


def test_returns_decided_at_run_time_are_not_judged(tmp_path):
    for body in ("return a", "d = {}\n    d['result'] = a\n    return d", "return dict(result=a)", "return f(a)",
                 "for v in range(a):\n        pass\n    return v"):
        modules = _tools(tmp_path, f"def f(x):\n    return x\n\ndef tool(a, b):\n    {body}\n\ndef take(x):\n    return x\n")
        assert not tool_outputs(modules)["tool"].known, body
        row = _row("u", [("tool", {"a": 1, "b": 2}), ("take", {"x": "$var_1.result$"})], None)
        check_tool_outputs(load_nested(_tasks(tmp_path, [row])), modules)


def test_builtin_tools_and_data_pass():
    modules = builtin_tools()
    outputs = tool_outputs(modules)
    assert all(o.fields(None) == {"result"} for o in outputs.values())  # MathQA returns _r(value)
    check_tool_outputs(load_nested(builtin_tasks()), modules)
