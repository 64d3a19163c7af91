from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import pytest

from callbench.tracks.nested.dataset import load_nested
from callbench.tracks.nested.executor import NestedExecutor, answers_match
from callbench.tracks.nested.generator import COMMITTED, generate_tasks, write_jsonl
from callbench.tracks.nested.references import find_references
from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.nested.tools import mathqa_names


@pytest.fixture(scope="module")
def executor():
    with NestedExecutor(fresh_per_sequence=False) as ex:
        yield ex


@pytest.fixture(scope="module")
def rows(executor):
    return generate_tasks(40, seed=7, executor=executor)


def _label_index(label: str) -> int:
    return int(label.split("_")[1])


def _reexecutes(task: NestedTask, ex: NestedExecutor) -> bool:
    result = ex.run(task.output, task.tools)
    return result.ok and answers_match(result.final, task.gold_answer)


def test_deterministic_per_seed(executor, rows):
    assert generate_tasks(40, seed=7, executor=executor) == rows
    other = generate_tasks(10, seed=8, executor=executor)
    assert [r["output"] for r in other] != [r["output"] for r in rows[:10]]
    # every task has its own RNG: a shorter run is a prefix of a longer one
    assert generate_tasks(5, seed=7, executor=executor) == rows[:5]


def test_rows_load_and_reexecute(tmp_path, executor, rows):
    path = write_jsonl(rows, tmp_path / "gen.jsonl")
    tasks = load_nested(path)
    assert [t.id for t in tasks] == [f"gen-7-{i:04d}" for i in range(40)]
    for row, task in zip(rows, tasks, strict=True):
        assert task.domain == "math"
        assert row["metadata"]["generator"] == "callbench" and row["metadata"]["seed"] == 7
        assert row["metadata"]["n_calls"] == len(task.output)
        assert 1 <= row["metadata"]["depth"] <= len(task.output)
        assert isinstance(task.gold_answer, (int, float)) and abs(task.gold_answer) <= 1e6
        assert _reexecutes(task, executor), task.id
        for tool in row["tools"]:
            assert set(tool) == {"name", "description", "parameters", "output_parameters"}
            assert list(tool["output_parameters"]) == ["result"]
            assert all(set(p) == {"type", "description"} for p in tool["parameters"].values())


def test_sequences_are_nested(rows):
    for row in rows:
        calls = row["output"]
        assert [c["label"] for c in calls] == [f"$var_{i}" for i in range(1, len(calls) + 1)]
        assert not find_references(calls[0]["arguments"])
        used: set[int] = set()
        for i, call in enumerate(calls[1:], start=2):
            refs = find_references(call["arguments"])
            assert refs, (row["sample_id"], i)
            assert all(r.path == ("result",) and _label_index(r.label) < i for r in refs)
            assert len(refs) <= 2  # default fan_in
            used.update(_label_index(r.label) for r in refs)
        assert used == set(range(1, len(calls)))  # every output but the last feeds a later call


def test_distractors_present_and_unused(rows):
    for row in rows:
        used = {c["name"] for c in row["output"]}
        catalog = [t["name"] for t in row["tools"]]
        assert len(catalog) == len(set(catalog)) == len(used) + 3
        assert used <= set(catalog) <= mathqa_names()


def test_questions_name_no_labels_or_tool_identifiers(rows):
    identifiers = [n for n in mathqa_names() if "_" in n] + ["sqrt", "gcd", "lcm", "log"]
    for row in rows:
        q = row["input"]
        assert "$" not in q and "var_" not in q
        assert not [n for n in identifiers if re.search(rf"\b{n}\b", q)], q
        assert q.rstrip().endswith("?")


def test_parameters(executor):
    rows = generate_tasks(15, seed=1, min_calls=5, max_calls=5, fan_in=3, distractors=0, executor=executor)
    assert {r["metadata"]["n_calls"] for r in rows} == {5}
    assert all(len(r["tools"]) == len({c["name"] for c in r["output"]}) for r in rows)
    assert max(len(find_references(c["arguments"])) for r in rows for c in r["output"]) <= 3
    chains = generate_tasks(10, seed=1, min_calls=3, max_calls=4, fan_in=1, executor=executor)
    assert all(r["metadata"]["depth"] == r["metadata"]["n_calls"] for r in chains)
    with pytest.raises(ValueError):
        generate_tasks(1, seed=0, min_calls=3, max_calls=2)


def test_question_writer_sync_and_async(executor):
    seen = []

    def sync_writer(calls, tools):
        seen.append((len(calls), len(tools)))
        return f"question with {len(calls)} steps"

    async def async_writer(calls, tools):
        await asyncio.sleep(0)
        return "an async question"

    rows = generate_tasks(3, seed=2, question_writer=sync_writer, executor=executor)
    assert [r["input"] for r in rows] == [f"question with {n} steps" for n, _ in seen]
    assert all(
        r["input"] == "an async question"
        for r in generate_tasks(2, 2, question_writer=async_writer, executor=executor)
    )

    async def inside_loop():
        return generate_tasks(1, 2, question_writer=async_writer, executor=executor)

    assert asyncio.run(inside_loop())[0]["input"] == "an async question"


def test_committed_set(executor):
    lines = COMMITTED.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 300
    tasks = load_nested(COMMITTED)
    assert len(tasks) == len(lines)
    lengths = Counter(len(t.output) for t in tasks)
    assert set(range(2, 7)) <= set(lengths) and min(lengths.values()) >= 30
    for task in tasks[:20]:
        assert _reexecutes(task, executor), task.id
    # the file is what its documented call writes (checked on a prefix)
    assert [json.loads(line) for line in lines[:20]] == generate_tasks(20, seed=0, executor=executor)
