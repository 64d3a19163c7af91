"""The paper's analyses: sequence structure (references, graph shape) and the summary breakdowns."""

import os
from collections import Counter
from pathlib import Path

import pytest

from callbench.api import run
from callbench.tracks.base import Sample, SampleResult
from callbench.tracks.nested.analysis import REFERENCE_BINS, SHAPES, analyse, classify, reference_bin
from callbench.tracks.nested.metrics import score_sample, summarize
from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.nested.track import NestedTrack

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"
METRICS = ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy")


def call(i, **args):
    return {"name": f"f{i}", "label": f"$var_{i}", "arguments": args}


def ref(i, key="result"):
    return f"$var_{i}.{key}$"


# -- graph shape -------------------------------------------------------------------------------

SEQUENCES = {
    "single call": ([call(1, a=1)], "independent", 0, 0),
    "independent": ([call(1, a=1), call(2, a=2), call(3, a=3)], "independent", 0, 0),
    "chain of 3": ([call(1, a=1), call(2, a=ref(1)), call(3, a=ref(2))], "chain", 2, 2),
    # two disjoint paths and an unrelated call: still no combining, no reuse
    "two paths": ([call(1, a=1), call(2, a=2), call(3, a=ref(1)), call(4, a=ref(2)), call(5)], "chain", 2, 2),
    "fan-in": ([call(1, a=1), call(2, a=2), call(3, a=ref(1), b=ref(2))], "fan-in", 2, 1),
    "fan-out": ([call(1, a=1), call(2, a=ref(1)), call(3, a=ref(1))], "fan-out", 2, 2),
    "diamond": ([call(1), call(2, a=ref(1)), call(3, a=ref(1)), call(4, a=ref(2), b=ref(3))], "mixed", 4, 3),
    # the same producer twice in one call: two references, one edge, so a chain
    "repeated reference": ([call(1), call(2, a=ref(1), b=ref(1, "x"))], "chain", 2, 1),
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_shape_and_references_of_hand_built_sequences(name):
    calls, shape, references, referencing = SEQUENCES[name]
    got = analyse(calls)
    assert (got.shape, got.references, got.referencing_calls, got.length) == (
        shape,
        references,
        referencing,
        len(calls),
    )


def test_edges_of_a_diamond():
    calls = SEQUENCES["diamond"][0]
    assert analyse(calls).edges == ((0, 1), (0, 2), (1, 3), (2, 3))


def test_classify_from_edges():
    assert classify(1, []) == "independent"
    assert classify(3, [(0, 1), (1, 2)]) == "chain"
    assert classify(3, [(0, 2), (1, 2)]) == "fan-in"
    assert classify(3, [(0, 1), (0, 2)]) == "fan-out"
    assert classify(4, [(0, 1), (0, 2), (1, 3), (2, 3)]) == "mixed"
    assert classify(4, [(0, 1), (0, 2), (2, 3), (1, 3), (0, 1)]) == "mixed"  # a repeated edge is one edge


# -- reference counting ------------------------------------------------------------------------


def test_references_anywhere_in_the_arguments_each_occurrence_counts():
    calls = [
        call(1, a=1),
        call(2, a=2),
        call(3, xs=[ref(1), ref(2)], opts={"k": ref(1)}, text=f"between {ref(2)} and {ref(1)}"),
    ]
    got = analyse(calls)
    assert (got.references, got.referencing_calls, got.shape) == (5, 1, "fan-in")


def test_only_references_to_earlier_calls_count():
    calls = [
        call(1, a=ref(2)),  # forward: not executable, not a nested reference
        call(2, a="$var_9.result$", b="$nope$", c="5$ and $"),  # unknown labels, no reference
        call(3, a=ref(1)),
    ]
    got = analyse(calls)
    assert (got.references, got.referencing_calls, got.edges, got.shape) == (1, 1, ((0, 2),), "chain")


def test_label_styles_and_shadowing():
    calls = [
        {"name": "a", "label": "var1", "arguments": {}},  # v1 style
        {"name": "b", "label": "$var_2", "arguments": {"x": "$var1.result$"}},
        {"name": "c", "label": "$var_1", "arguments": {"x": "$var_2.result$"}},  # redefines var_1
        {"name": "d", "label": "$var_4", "arguments": {"x": "$var_1.result$"}},  # the latest var_1: c
    ]
    assert analyse(calls).edges == ((0, 1), (1, 2), (2, 3))


def test_tool_calls_and_dicts_agree():
    task = NestedTask.model_validate(
        {"id": "t", "input": "q", "output": [call(1, a=1), call(2, a=1), call(3, a=ref(1), b=ref(2))]}
    )
    assert analyse(task.output) == analyse([c.model_dump() for c in task.output])


def test_reference_bins():
    assert [reference_bin(n) for n in range(9)] == ["0", "1", "2", "3", "4", "5", "6+", "6+", "6+"]
    assert REFERENCE_BINS[-1] == "6+"


# -- summary breakdowns ------------------------------------------------------------------------


def test_verdict_carries_the_gold_structure_and_summary_breaks_down_by_it():
    seqs = [SEQUENCES[k][0] for k in ("single call", "chain of 3", "fan-in", "fan-out", "diamond", "diamond")]
    verdicts = [score_sample(s, s, sample_id=str(i)) for i, s in enumerate(seqs)]
    assert [v["gold_shape"] for v in verdicts] == [
        "independent",
        "chain",
        "fan-in",
        "fan-out",
        "mixed",
        "mixed",
    ]
    assert [v["gold_references"] for v in verdicts] == [0, 2, 2, 2, 4, 4]
    s = summarize(verdicts)
    assert list(s["by_shape"]) == list(SHAPES)  # in SHAPES order, not alphabetical
    assert {k: v["n"] for k, v in s["by_shape"].items()} == {
        "independent": 1,
        "chain": 1,
        "fan-in": 1,
        "fan-out": 1,
        "mixed": 2,
    }
    assert {k: v["n"] for k, v in s["by_references"].items()} == {"0": 1, "2": 3, "4": 2}
    for group in (*s["by_shape"].values(), *s["by_references"].values()):
        assert group["full_sequence_accuracy"] == 1.0 and group["partial_sequence_accuracy"] == 1.0
    # compat verdicts carry the same structure, and its breakdowns refit F1 per group
    compat = summarize([score_sample(q, q, mode="compat") for q in seqs], "compat")
    assert {k: v["n"] for k, v in compat["by_shape"].items()} == {k: v["n"] for k, v in s["by_shape"].items()}
    assert all(v["f1_function"] == 1.0 for v in compat["by_shape"].values())


def test_old_verdicts_without_structure_are_filled_from_the_task_or_left_out():
    calls = SEQUENCES["fan-in"][0]
    verdict = {
        k: v for k, v in score_sample(calls, calls).items() if not k.startswith("gold_") or k == "gold_length"
    }
    result = SampleResult(status="ok", verdicts={"strict": verdict})
    assert "by_shape" not in summarize([verdict])
    # re-aggregated without tasks (a comparison of an old run): no breakdown, the rest as before
    agg = NestedTrack.aggregate([Sample(id="t", group="math", payload=None)], [result], "strict")
    assert "by_shape" not in agg and "by_references" not in agg and agg["metrics"]["n"] == 1
    # with the task loaded: computed from its gold calls
    task = NestedTask.model_validate({"id": "t", "input": "q", "output": calls, "domain": "math"})
    agg = NestedTrack.aggregate([Sample(id="t", group="math", payload=task)], [result], "strict")
    assert agg["by_shape"]["fan-in"]["n"] == 1 and agg["by_references"]["2"]["n"] == 1


def _check_gold_summary(summary):
    n = summary["metrics"]["n"]
    for key in ("by_length", "by_references", "by_shape"):
        groups = summary[key]
        assert sum(g["n"] for g in groups.values()) == n, key
        for name, g in groups.items():
            for metric in METRICS:
                assert g[metric] == 1.0, (key, name, metric)
            assert g["win_rate"] in (1.0, None) and g["parse_error_rate"] == 0.0


def test_gold_run_on_the_built_in_set(tmp_path):
    out = run("nested", "gold", out_dir=tmp_path, limit=20)
    s = out.summary
    assert s["metrics"]["n"] == 20
    _check_gold_summary(s)
    # the same bins as the tasks' own structure says
    track = NestedTrack()
    tasks = [x.payload for x in track.load_samples()][:20]
    shapes = Counter(analyse(t.output).shape for t in tasks)
    refs = Counter(reference_bin(analyse(t.output).references) for t in tasks)
    assert {k: v["n"] for k, v in s["by_shape"].items()} == dict(shapes)
    assert {k: v["n"] for k, v in s["by_references"].items()} == dict(refs)


def test_gold_run_on_the_nestful_toy_data(tmp_path):
    root = Path(os.environ.get("CALLBENCH_DATA_DIR", SHARED.parent)) / "nestful"
    data = root / "v2-samples" / "toy_data_jan2025_schema.jsonl"
    if not data.is_file():
        pytest.skip(f"NESTFUL data not found under {root}")
    s = run("nested", "gold", out_dir=tmp_path, data=str(data)).summary
    _check_gold_summary(s)
    # counted by hand from the file: 9 calls / 8 references / two calls combine two outputs each;
    # 2 / 1 / a chain (its tool is not built in: no win); 8 / 7 / fan-in; 6 / 5 / fan-in
    assert {k: v["n"] for k, v in s["by_length"].items()} == {"2": 1, "6": 1, "8": 1, "9": 1}
    assert {k: v["n"] for k, v in s["by_references"].items()} == {"1": 1, "5": 1, "6+": 2}
    assert {k: v["n"] for k, v in s["by_shape"].items()} == {"chain": 1, "fan-in": 3}
    assert s["by_shape"]["chain"]["win_rate"] is None and s["by_shape"]["fan-in"]["win_n"] == 3
