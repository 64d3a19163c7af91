"""Uncertainty for reports: seeded percentile-bootstrap intervals and McNemar's exact test.

Every metric a report puts an interval on is a *ratio of per-unit sums*: a unit (a sample, or a
task for pass@k) contributes a numerator and a denominator, and the metric is
``sum(num) / sum(den)``. That covers plain rates (den 1), rates over a subset (den 0 or 1, e.g. the
win rate over executable samples), micro-averages (arguments correct / arguments expected) and
micro-F1 (``2tp / (2tp + fp + fn)``). Resampling units and recomputing the ratio is then exact for
every such metric, with one vectorised sum per replicate.

Paired differences resample the *shared* units jointly (the same indices for both runs), so the
interval reflects the per-sample correlation of the two runs, as a paired test should.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 0
LEVEL = 0.95

Units = Mapping[str, tuple[float, float]]  # unit id -> (numerator, denominator)


@dataclass(frozen=True)
class Interval:
    point: float | None
    lo: float | None
    hi: float | None
    n: int  # units with a non-zero denominator


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _percentiles(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None, None
    alpha = (1 - level) / 2
    lo, hi = np.percentile(values, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def _indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def ratio_ci(units: Units, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED, level: float = LEVEL) -> Interval:
    """The ratio of sums over ``units`` and its percentile-bootstrap interval (units resampled)."""
    keys = sorted(units)
    num = np.array([units[k][0] for k in keys], dtype=float)
    den = np.array([units[k][1] for k in keys], dtype=float)
    point = _ratio(float(num.sum()), float(den.sum()))
    n_defined = int((den != 0).sum())
    if point is None or not keys:
        return Interval(point, None, None, n_defined)
    idx = _indices(len(keys), n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    reps[~np.isfinite(reps)] = np.nan
    lo, hi = _percentiles(reps, level)
    return Interval(point, lo, hi, n_defined)


def paired_diff_ci(
    a: Units, b: Units, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED, level: float = LEVEL
) -> Interval:
    """``ratio(b) - ratio(a)`` over the units both hold, with a paired bootstrap interval (the same
    resampled units for both runs)."""
    keys = sorted(set(a) & set(b))
    na = np.array([a[k][0] for k in keys], dtype=float)
    da = np.array([a[k][1] for k in keys], dtype=float)
    nb = np.array([b[k][0] for k in keys], dtype=float)
    db = np.array([b[k][1] for k in keys], dtype=float)
    ra, rb = _ratio(float(na.sum()), float(da.sum())), _ratio(float(nb.sum()), float(db.sum()))
    n_defined = int(((da != 0) & (db != 0)).sum())
    if ra is None or rb is None:
        return Interval(None, None, None, n_defined)
    idx = _indices(len(keys), n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = nb[idx].sum(axis=1) / db[idx].sum(axis=1) - na[idx].sum(axis=1) / da[idx].sum(axis=1)
    reps[~np.isfinite(reps)] = np.nan
    lo, hi = _percentiles(reps, level)
    return Interval(rb - ra, lo, hi, n_defined)


def is_binary(units: Units) -> bool:
    """Is every unit a pass/fail outcome (den 1 and num 0 or 1, or undefined: den 0)?"""
    return bool(units) and all(
        (den == 0 and num == 0) or (den == 1 and num in (0, 1)) for num, den in units.values()
    )


@dataclass(frozen=True)
class McNemar:
    b: int  # first run passes, second fails
    c: int  # first run fails, second passes
    n: int  # pairs both runs define
    p: float  # exact two-sided p-value


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: the binomial test of ``b`` against ``b + c`` discordant
    pairs at 1/2 (``min(1, 2 * P(X <= min(b, c)))``; 1 when there are no discordant pairs)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar(a: Units, b: Units) -> McNemar | None:
    """McNemar's exact test on the units both runs define as pass/fail; None if not pass/fail."""
    if not (is_binary(a) and is_binary(b)):
        return None
    keys = [k for k in set(a) & set(b) if a[k][1] == 1 and b[k][1] == 1]
    n01 = sum(1 for k in keys if a[k][0] == 1 and b[k][0] == 0)
    n10 = sum(1 for k in keys if a[k][0] == 0 and b[k][0] == 1)
    return McNemar(b=n01, c=n10, n=len(keys), p=mcnemar_exact(n01, n10))
