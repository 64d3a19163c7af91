"""pass@k (unbiased), error rates and complexity means for the stateful track.

pass@k for one task with n samples of which c passed: 1 - C(n-c, k) / C(n, k) (the unbiased
estimator of Chen et al. 2021, computed as a product to stay exact for large n), averaged over
tasks. A task with fewer than k samples does not contribute to pass@k.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from callbench.tracks.stateful.execution import ERROR_CLASSES

COMPLEXITY_KEYS = ("instruction_words", "code_lines", "n_calls", "path_depth", "binding_count")


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    prob_all_fail = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_fail *= 1.0 - k / i
    return 1.0 - prob_all_fail


def summarize(rows: Iterable[dict[str, Any]], ks: Iterable[int]) -> dict[str, Any]:
    """``rows``: one per sample with ``task``, ``passed``, ``error_class`` and ``complexity``."""
    rows = list(rows)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_task[r["task"]].append(r)
    out: dict[str, Any] = {"n_tasks": len(by_task), "n_samples": len(rows)}
    for k in sorted(set(ks) | {1}):
        vals = [pass_at_k(len(rs), sum(x["passed"] for x in rs), k) for rs in by_task.values() if len(rs) >= k]
        out[f"pass@{k}"] = sum(vals) / len(vals) if vals else None
    for cls in ERROR_CLASSES:
        out[f"error_{cls}"] = sum(1 for r in rows if r["error_class"] == cls) / len(rows) if rows else 0.0
    firsts = [rs[0]["complexity"] for rs in by_task.values()]
    for key in COMPLEXITY_KEYS:
        vals = [c[key] for c in firsts if c.get(key) is not None]
        out[f"mean_{key}"] = sum(vals) / len(vals) if vals else None
    return out
