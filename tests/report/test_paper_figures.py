"""The WAPIIBench paper's figures in a webapi comparison of three runs (gold, the replay of
``webapi_runs`` and "edited", a replay whose samples end in five ways; see ``webapi_three_runs``):
the parallel-coordinate plot of the fine-grained metrics (one line per run, a point per metric
whose value is the run's summary metric) and the stacked bars of how the samples end (per run,
counts that sum to ``n`` and equal the counts taken from the verdicts in the run store)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from callbench.report.webapi import OUTCOME_CLASSES, PARALLEL_METRICS, outcome_counts

LABELS = ("gold", "replay", "edited")


def _stored_classes(run_dir: Path, ids: list[str]) -> Counter:
    """Per outcome class, the samples of a run -- straight from the verdicts in the run store."""
    from callbench.runs.store import RunStore

    mode = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["scoring"]
    store = RunStore.open(run_dir)
    try:
        rows = [r for r in store.rows() if r["id"] in ids]
    finally:
        store.close()
    assert len(rows) == len(ids)
    return Counter(r["verdicts"][mode]["error"] or r["verdicts"][mode]["sample"] for r in rows)


@pytest.fixture(scope="module")
def comparison(webapi_three_runs, cli, tmp_path_factory, dom):
    runs, ids = webapi_three_runs
    out = tmp_path_factory.mktemp("paper-figures") / "cmp"
    args: list[object] = ["report", *runs, "--out", out]
    for label in LABELS:
        args += ["--label", label]
    res = cli(*args)
    assert res.exit_code == 0, res.output
    cmp = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    return dom.parse((out / "report.html").read_text(encoding="utf-8")), runs, ids, cmp


def _summaries(runs: list[Path]) -> list[dict]:
    return [json.loads((d / "summary.json").read_text(encoding="utf-8")) for d in runs]


def test_the_edited_run_ends_in_several_ways(webapi_three_runs):
    runs, ids = webapi_three_runs
    classes = _stored_classes(runs[2], ids)
    assert classes == {"correct": 2, "wrong": 1, "illegal": 1, "no_request": 1, "runtime_error": 1}, classes
    assert set(classes) <= {key for key, *_ in OUTCOME_CLASSES}


def test_parallel_plot_has_a_line_per_run_and_the_summary_metrics(comparison, dom):
    doc, runs, ids, _ = comparison
    fig = doc.find("figure", id="chart-parallel")
    assert fig is not None and fig.attrs["data-kind"] == "parallel"
    (svg,) = fig.find_all("svg")
    lines = dom.marks(svg, "line")
    assert [g.attrs["data-series"] for g in lines] == list(LABELS)
    assert all(g.find("path") is not None for g in lines)
    points = dom.marks(svg, "point")
    assert len(points) == int(fig.attrs["data-points"])
    # all runs cover the same samples, so the comparison's summaries are the runs' own
    for label, summary in zip(LABELS, _summaries(runs), strict=True):
        assert summary["n"] == len(ids)
        mine = {g.attrs["data-category"]: g for g in points if g.attrs["data-series"] == label}
        want = {name: summary["metrics"][key] for name, key in PARALLEL_METRICS if summary["metrics"].get(key) is not None}
        assert set(mine) == set(want), label
        for name, value in want.items():
            g = mine[name]
            assert float(g.attrs["data-value"]) == pytest.approx(value)
            assert g.find("title").text() == f"{label} · {name}: {100 * value:.1f}%"
            assert g.find("use") is not None or g.find("path") is not None
    # the legend names the runs
    legend = [s.text().strip() for s in fig.find("figcaption").find_all("span", pred=lambda n: n.attrs.get("title"))]
    assert legend == list(LABELS)


def test_stacked_outcomes_partition_the_samples(comparison, dom):
    doc, runs, ids, _ = comparison
    fig = doc.find("figure", id="chart-outcomes")
    assert fig is not None and fig.attrs["data-kind"] == "stacked"
    (svg,) = fig.find_all("svg")
    segments = dom.marks(svg, "segment")
    label_of = {key: label for key, label, *_ in OUTCOME_CLASSES}
    shown = {label for label in label_of.values() if any(g.attrs["data-series"] == label for g in segments)}
    for run_label, run_dir, summary in zip(LABELS, runs, _summaries(runs), strict=True):
        mine = {g.attrs["data-series"]: int(g.attrs["data-value"]) for g in segments if g.attrs["data-category"] == run_label}
        assert set(mine) == shown
        assert sum(mine.values()) == len(ids) == summary["n"]
        assert all(int(g.attrs["data-total"]) == len(ids) for g in segments if g.attrs["data-category"] == run_label)
        stored = _stored_classes(run_dir, ids)
        assert {label_of[k]: v for k, v in stored.items()} == {k: v for k, v in mine.items() if v}, run_label
        assert {k: v for k, v in outcome_counts(summary).items() if v} == dict(stored)
    # a class no run has is left out; every class some run has is there
    every = set().union(*(_stored_classes(d, ids) for d in runs))
    assert shown == {label_of[k] for k in every}


def test_single_run_report_has_both_figures(webapi_runs, cli, tmp_path, dom):
    _, replay, ids = webapi_runs
    res = cli("report", replay, "--html", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    doc = dom.parse((tmp_path / "r.html").read_text(encoding="utf-8"))
    dom.check_charts(doc)
    outcomes = doc.find("figure", id="chart-outcomes")
    segments = dom.marks(outcomes.find("svg"), "segment")
    assert sum(int(g.attrs["data-value"]) for g in segments) == len(ids)
    assert len(dom.marks(doc.find("figure", id="chart-parallel").find("svg"), "line")) == 1


def test_outcome_counts_need_a_consistent_summary():
    assert outcome_counts({"metrics": {}}) is None
    m = {"n": 4, "n_executable": 3, "correct_implementations_t": 0.5, "illegal_implementations_t": 0.25,
         "total_errors": 1, "timeouts": 1}
    assert outcome_counts({"metrics": m}) == {  # no wrong_implementations_t: executable minus the rest
        "correct": 2, "wrong": 0, "illegal": 1, "no_request": 0, "incomplete_request": 0, "runtime_error": 0,
        "timeout": 1, "unsatisfiable": 0,
    }
    assert outcome_counts({"metrics": {**m, "timeouts": 2}}) is None


def test_partly_shared_comparison_counts_the_shared_samples_only(webapi_three_runs, data_root, cli, tmp_path, dom):
    """gold (6 samples) against a replay of 3 of its answers: each bar sums to the 3 shared samples."""
    (gold, _, edited), ids = webapi_three_runs
    res = cli("run", "webapi", "--model", "gold", "--ids", ",".join(ids[:3]), "--out", tmp_path / "runs",
              "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    (part,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    res = cli("report", edited, part, "--label", "edited", "--label", "part", "--out", tmp_path / "cmp")
    assert res.exit_code == 0, res.output
    doc = dom.parse((tmp_path / "cmp" / "report.html").read_text(encoding="utf-8"))
    dom.check_charts(doc)
    segments = dom.marks(doc.find("figure", id="chart-outcomes").find("svg"), "segment")
    label_of = {key: label for key, label, *_ in OUTCOME_CLASSES}
    for run_label, run_dir in (("edited", edited), ("part", part)):
        mine = {g.attrs["data-series"]: int(g.attrs["data-value"]) for g in segments if g.attrs["data-category"] == run_label}
        assert sum(mine.values()) == 3
        stored = _stored_classes(run_dir, ids[:3])
        assert {label_of[k]: v for k, v in stored.items()} == {k: v for k, v in mine.items() if v}, run_label


def test_axes_say_which_way_is_better_and_runs_never_wear_an_outcome_colour():
    """Issue 31: the fine-grained chart mixed higher- and lower-is-better axes without saying
    which; run colours reused the outcome colours (a run drawn green like "correct")."""
    from callbench.report.charts import PALETTE

    lower = {"missing_arguments_t", "unexpected_arguments_t", "illegal_urls_t", "illegal_methods_t", "illegal_arguments_t"}
    for label, key in PARALLEL_METRICS:
        assert label.endswith(" ↓" if key in lower else " ↑"), (label, key)
    outcome_colours = {c.lower() for _, _, c, _ in OUTCOME_CLASSES}
    assert not outcome_colours & {c.lower() for c in PALETTE}
    assert len(set(PALETTE)) == len(PALETTE)
