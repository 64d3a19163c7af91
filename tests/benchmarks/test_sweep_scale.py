"""benchmarks/sweep_scale.py's paper-scale estimate against hand-computed values (the benchmark's
measurements themselves are timings: they belong to the benchmark, not to a test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("sweep_scale", REPO / "benchmarks" / "sweep_scale.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_the_paper_scale_estimate_by_hand():
    est = _bench().estimate
    # 84 cells on 4 nodes x 2 workers: ceil(84 / 8) = 11 waves of one 395-sample cell each,
    # 395 x 0.06 = 23.7 s a cell; 11 x 23.7 + 10 s overhead = 270.7 s
    assert est(0.06, 10.0, 4, 2) == {
        "nodes": 4, "workers": 8, "cells": 84, "samples": 33180, "waves": 11, "cell_s": 23.7, "wall_s": 270.7, "wall_h": 0.08,
    }
    # one node of 2 workers: 42 waves; 16 nodes: 32 workers, ceil(84 / 32) = 3 waves
    assert est(0.06, 0.0, 1, 2)["waves"] == 42 and est(0.06, 0.0, 1, 2)["wall_s"] == round(42 * 23.7, 1)
    assert est(0.06, 0.0, 16, 2)["waves"] == 3
    # more workers than cells: one wave
    assert est(0.06, 0.0, 64, 2)["waves"] == 1
