"""Bootstrap intervals and McNemar's exact test (report/stats.py)."""

import math
import random

import pytest

from callbench.report.stats import is_binary, mcnemar, mcnemar_exact, paired_diff_ci, ratio_ci


def test_mcnemar_exact_by_hand():
    # 8 pairs pass only in A, 2 only in B: 2 * P(X <= 2), X ~ Bin(10, 1/2) = 2 * 56/1024
    assert mcnemar_exact(8, 2) == pytest.approx(0.109375, abs=1e-12)
    assert mcnemar_exact(2, 8) == mcnemar_exact(8, 2)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    for b, c in ((1, 9), (12, 3), (0, 7)):
        n, k = b + c, min(b, c)
        assert mcnemar_exact(b, c) == pytest.approx(min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n))
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_mcnemar_on_paired_units():
    a = {f"s{i}": (1.0 if i < 18 else 0.0, 1.0) for i in range(20)}  # passes 0-17
    b = {f"s{i}": (1.0 if i < 10 or i >= 18 else 0.0, 1.0) for i in range(20)}  # passes 0-9 and 18-19
    t = mcnemar(a, b)
    assert (t.b, t.c, t.n) == (8, 2, 20) and t.p == pytest.approx(0.109375)
    # undefined units (den 0, e.g. a non-executable sample's win) are left out; ratios are not pass/fail
    a["s0"] = b["s0"] = (0.0, 0.0)
    assert mcnemar(a, b).n == 19
    assert mcnemar({"x": (2.0, 3.0)}, {"x": (1.0, 3.0)}) is None
    assert is_binary(a) and not is_binary({"x": (0.5, 1.0)})


def test_bootstrap_interval_holds_the_point_and_is_seeded():
    rng = random.Random(1)
    units = {f"s{i}": (float(rng.random() < 0.6), 1.0) for i in range(200)}
    iv = ratio_ci(units, n_boot=1000, seed=3)
    assert iv.lo <= iv.point <= iv.hi and iv.n == 200
    assert iv.point == pytest.approx(sum(v for v, _ in units.values()) / 200)
    assert 0.08 < iv.hi - iv.lo < 0.2  # about 4 standard errors of a share near 0.6 over 200
    assert ratio_ci(units, n_boot=1000, seed=3) == iv
    assert ratio_ci(units, n_boot=1000, seed=4) != iv
    # a ratio of sums (micro-average): 2tp / (2tp + fp + fn) per unit
    f1 = {"a": (2.0, 3.0), "b": (0.0, 2.0), "c": (4.0, 4.0)}
    assert ratio_ci(f1, n_boot=200).point == pytest.approx(6 / 9)
    assert ratio_ci({"a": (0.0, 0.0)}).point is None


def test_paired_difference_uses_the_shared_units():
    a = {f"s{i}": (1.0, 1.0) for i in range(50)}
    b = {f"s{i}": (float(i % 2), 1.0) for i in range(50)} | {"extra": (1.0, 1.0)}
    d = paired_diff_ci(a, b, n_boot=500)
    assert d.point == pytest.approx(-0.5) and d.n == 50
    assert d.lo <= d.point <= d.hi < 0
    same = paired_diff_ci(a, a, n_boot=500)
    assert (same.point, same.lo, same.hi) == (0.0, 0.0, 0.0)
