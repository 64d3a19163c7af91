"""Per-sample cost of the OS sandbox on the stateful track: the built-in StateEval gold programs,
each test case run once inside bubblewrap and once with the older layers only (rlimits, audit
hook, ``unshare`` namespaces: what ``--unsafe-no-sandbox`` leaves), interleaved in the same run.

    python benchmarks/stateful_throughput.py [--json PATH] [--tasks 6] [--scenarios session,voice,tensor]

Prints a table and writes ``{"per_sample_s_sandboxed", "per_sample_s_unsandboxed", "ratio",
"per_scenario": {...}}``; ``ratio`` is sandboxed / unsandboxed time per sample (target ≤ 2).
Every run must pass (gold programs); a failing one aborts the benchmark.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from unittest import mock

from rich.console import Console
from rich.table import Table

from callbench.sandbox import boundary
from callbench.tracks.stateful.execution import Case, Outcome, default_limits, execute, judge
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.track import builtin_bench, load_bench


def _timed(scenario, task, case, sandboxed: bool) -> float:
    limits = default_limits(scenario)
    with mock.patch.object(boundary, "bwrap", (lambda: boundary._probe()[0]) if sandboxed else (lambda: None)):
        t0 = time.perf_counter()
        actual = execute(scenario, task["reference"], Case(case["name"], case["preload"], case.get("service_seed")), limits)
        took = time.perf_counter() - t0
    verdict, reason = judge(scenario, Outcome(**case["expected"]), actual)
    if verdict != "pass":
        raise SystemExit(f"{task['id']} case {case['name']} ({'sandboxed' if sandboxed else 'unsandboxed'}): {verdict}: {reason}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--tasks", type=int, default=6, help="tasks per scenario (first N of the built-in set)")
    ap.add_argument("--scenarios", default="session,voice,tensor")
    args = ap.parse_args()
    if boundary._probe()[0] is None:
        raise SystemExit(f"bubblewrap cannot start here: {boundary._probe()[2]}")
    tasks = load_bench(builtin_bench())
    per: dict[str, dict[str, list[float]]] = {}
    for name in args.scenarios.split(","):
        scenario = get_scenario(name)
        chosen = [t for t in tasks if t["scenario"] == name][: args.tasks]
        times = per.setdefault(name, {"sandboxed": [], "unsandboxed": []})
        # warm-up (the view's import probe, page cache) outside the figures
        _timed(scenario, chosen[0], chosen[0]["cases"][0], True)
        _timed(scenario, chosen[0], chosen[0]["cases"][0], False)
        for task in chosen:
            for case in task["cases"]:
                times["sandboxed"].append(_timed(scenario, task, case, True))
                times["unsandboxed"].append(_timed(scenario, task, case, False))
    table = Table(title="stateful track: seconds per sample (median), gold programs")
    for col in ("scenario", "samples", "bwrap", "without", "ratio"):
        table.add_column(col, justify="right" if col != "scenario" else "left")
    out: dict = {"per_scenario": {}}
    all_s, all_u = [], []
    for name, t in per.items():
        s, u = statistics.median(t["sandboxed"]), statistics.median(t["unsandboxed"])
        all_s += t["sandboxed"]
        all_u += t["unsandboxed"]
        out["per_scenario"][name] = {"samples": len(t["sandboxed"]), "sandboxed_s": s, "unsandboxed_s": u, "ratio": s / u}
        table.add_row(name, str(len(t["sandboxed"])), f"{s:.3f}", f"{u:.3f}", f"{s / u:.2f}×")
    out["per_sample_s_sandboxed"] = sum(all_s) / len(all_s)
    out["per_sample_s_unsandboxed"] = sum(all_u) / len(all_u)
    out["ratio"] = out["per_sample_s_sandboxed"] / out["per_sample_s_unsandboxed"]
    table.add_row("all (mean)", str(len(all_s)), f"{out['per_sample_s_sandboxed']:.3f}",
                  f"{out['per_sample_s_unsandboxed']:.3f}", f"{out['ratio']:.2f}×")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
