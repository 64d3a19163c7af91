from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import DataError, MissingExtraError
from callbench.tracks.nested.dataset import load_nested
from callbench.tracks.nested.schema import canonical_label

NESTFUL = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"


@pytest.fixture(scope="module")
def nestful() -> Path:
    import os

    root = Path(os.environ.get("CALLBENCH_DATA_DIR") or NESTFUL.parent) / "nestful"
    if not root.is_dir():
        pytest.skip(f"NESTFUL data not found under {root}")
    return root


def test_labels_canonical():
    assert canonical_label("var1") == canonical_label("$var1") == canonical_label("$var_1") == "var_1"


@pytest.mark.parametrize(
    "name,n,tools",
    [
        ("executable/executable", 85, 39),
        ("non-executable/non-executable-glaive", 169, 70),
        ("non-executable/non-executable-sgd", 46, 30),
    ],
)
def test_v1(nestful, name, n, tools):
    tasks = load_nested(nestful / "data_v1" / f"{name}-data.json")
    assert len(tasks) == n and len(tasks[0].tools) == tools
    assert all(t.domain == "api" and t.gold_answer is None for t in tasks)
    assert tasks[0].output[0].label == "var_1" and tasks[0].output[0].raw_label == "var1"


def test_v2(nestful):
    toy = load_nested(nestful / "v2-samples" / "toy_data_jan2025_schema.jsonl")
    icl = load_nested(nestful / "v2-samples" / "icl_examples.json")
    assert [t.domain for t in toy] == ["math", "code", "math", "math"]
    assert [t.domain for t in icl] == ["math", "math", "code"]
    assert toy[0].tools[0].output_parameters == {
        "result": {"description": "The addition result", "type": "int or float"}
    }
    code = toy[1].tool("count_the_word")
    assert code and "string" in code.parameters and "output_0" in code.output_parameters


def test_bad_row(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"sample_id": "a", "input": "q", "output": [{"label": "$var_1"}]}) + "\n")
    with pytest.raises(DataError, match=r"x.jsonl: \[0\]\.output\.0\.name: Field required"):
        load_nested(p)


def test_parquet(tmp_path):
    row = {
        "sample_id": "p1",
        "input": "2+3",
        "gold_answer": "5.0",
        "output": json.dumps([{"name": "add", "label": "$var_1", "arguments": {"arg_0": 2, "arg_1": 3}}]),
        "tools": json.dumps(
            [{"name": "add", "parameters": {"arg_0": {}, "arg_1": {}}, "output_parameters": {"result": {}}}]
        ),
    }
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        with pytest.raises(MissingExtraError):
            load_nested(tmp_path / "x.parquet")
        pytest.skip("pyarrow not installed: parquet layout checked only for its MissingExtraError")
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "x.parquet")
    (task,) = load_nested(tmp_path / "x.parquet")
    assert task.gold_answer == 5.0 and task.domain == "math" and task.output[0].name == "add"
