"""The committed StateEval benchmark: shape, and gold passes every task (acceptance)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.tracks.stateful.track import builtin_bench, load_bench
from callbench.tracks.stateful.writer import mechanical_problems

pytest.importorskip("requests")


def test_bench_shape():
    tasks = load_bench(builtin_bench())
    assert Counter(t["scenario"] for t in tasks) == {"session": 40, "tensor": 40, "voice": 40}
    for t in tasks:
        names = [c["name"] for c in t["cases"]]
        assert len(names) >= 2 and names[0] == "base"
        assert ("else" in names) == ("\nelse:" in t["reference"]), t["id"]
        assert any(n.startswith("resampled") for n in names), t["id"]
        assert t["text_source"] == "template"
        assert t["complexity"]["n_calls"] >= 1

        class P:
            inputs = t["inputs"]
            result_var = t["result_var"]

        from callbench.tracks.stateful.scenarios import get_scenario

        assert mechanical_problems(t["text"], P, get_scenario(t["scenario"])) == [], t["id"]
    # control flow is really there
    assert sum("\nelse:" in t["reference"] for t in tasks) >= 30
    assert sum("\nfor " in t["reference"] for t in tasks) >= 15


def _gold(tmp_path: Path, scenario: str) -> dict:
    r = CliRunner().invoke(
        app, ["run", "stateful", "--model", "gold", "--scenario", scenario, "--out", str(tmp_path), "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    return json.loads(next(tmp_path.rglob("summary.json")).read_text())


@pytest.mark.slow
@pytest.mark.ci_subset
@pytest.mark.parametrize("scenario", ["session", "voice"])
def test_gold_passes_every_task(tmp_path: Path, scenario: str):
    s = _gold(tmp_path, scenario)
    assert s["metrics"]["pass@1"] == 1.0 and s["metrics"]["n_tasks"] == 40


@pytest.mark.slow
def test_gold_passes_every_tensor_task(tmp_path: Path):
    pytest.importorskip("torch")
    s = _gold(tmp_path, "tensor")
    assert s["metrics"]["pass@1"] == 1.0 and s["metrics"]["n_tasks"] == 40
