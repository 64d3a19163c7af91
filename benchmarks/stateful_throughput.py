"""Stateful-track throughput by sandbox mode: the built-in StateEval gold programs, every test case
of the first N tasks of each scenario, run once per mode, interleaved in the same run.

    python benchmarks/stateful_throughput.py [--json PATH] [--tasks 6] [--scenarios session,voice,tensor]
        [--sandbox fresh,forkserver] [--hogs 0]

Modes: ``fresh`` (a new bwrap sandbox and interpreter per program, the setup's imports paid each
time: how every program ran before the fork server), ``forkserver`` (warm sandboxed interpreters
with the setup's imports loaded fork a child per program: the default), ``none`` (the fork server
without bwrap: rlimits, audit hook and ``unshare`` only, what ``--unsafe-no-sandbox`` leaves).
``--hogs N`` starts N CPU-bound processes beside the benchmark (a busy machine).

Prints a table and writes ``{"modes", "per_scenario": {scenario: {mode: median s}}, "per_sample_s":
{mode: mean s}, "ratio_fresh_over_forkserver", ...}``. Every run must pass (gold programs); a
failing one aborts the benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

from rich.console import Console
from rich.table import Table

from callbench.sandbox import boundary, program
from callbench.tracks.stateful.execution import Case, Outcome, default_limits, execute, judge
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.track import builtin_bench, load_bench

MODES = ("fresh", "forkserver", "none")


def _timed(scenario, task, case, mode: str) -> float:
    limits = default_limits(scenario)
    program.set_mode("fresh" if mode == "fresh" else "forkserver")
    bwrap = (lambda: None) if mode == "none" else (lambda: boundary._probe()[0])
    with mock.patch.object(boundary, "bwrap", bwrap):
        t0 = time.perf_counter()
        actual = execute(scenario, task["reference"], Case(case["name"], case["preload"], case.get("service_seed")), limits)
        took = time.perf_counter() - t0
    verdict, reason = judge(scenario, Outcome(**case["expected"]), actual, task.get("tolerance"))
    if verdict != "pass":
        raise SystemExit(f"{task['id']} case {case['name']} ({mode}): {verdict}: {reason}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--tasks", type=int, default=6, help="tasks per scenario (first N of the built-in set)")
    ap.add_argument("--scenarios", default="session,voice,tensor")
    ap.add_argument("--sandbox", default="fresh,forkserver", help=f"modes to compare, from {', '.join(MODES)}")
    ap.add_argument("--hogs", type=int, default=0, help="CPU-bound processes to run beside the benchmark")
    args = ap.parse_args()
    modes = args.sandbox.split(",")
    if any(m not in MODES for m in modes):
        raise SystemExit(f"--sandbox: modes are {', '.join(MODES)}")
    if boundary._probe()[0] is None:
        raise SystemExit(f"bubblewrap cannot start here: {boundary._probe()[2]}")
    tasks = load_bench(builtin_bench())
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    per: dict[str, dict[str, list[float]]] = {}
    wall: dict[str, float] = dict.fromkeys(modes, 0.0)
    try:
        for name in args.scenarios.split(","):
            scenario = get_scenario(name)
            chosen = [t for t in tasks if t["scenario"] == name][: args.tasks]
            times = per.setdefault(name, {m: [] for m in modes})
            # warm-up (the view's import probe, page cache) outside the figures; the fork servers a
            # run starts are part of the figures (started on the first program of each scenario)
            _timed(scenario, chosen[0], chosen[0]["cases"][0], "fresh")
            program.close_servers()
            for task in chosen:
                for case in task["cases"]:
                    for m in modes:
                        took = _timed(scenario, task, case, m)
                        times[m].append(took)
                        wall[m] += took
            program.close_servers()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    table = Table(title="stateful track: seconds per sample (median), gold programs")
    table.add_column("scenario")
    table.add_column("samples", justify="right")
    for m in modes:
        table.add_column(m, justify="right")
    if {"fresh", "forkserver"} <= set(modes):
        table.add_column("fresh / forkserver", justify="right")
    out: dict = {
        "command": " ".join(["python", "benchmarks/stateful_throughput.py", *sys.argv[1:]]),
        "modes": modes,
        "hogs": args.hogs,
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "per_scenario": {},
    }
    for name, t in per.items():
        med = {m: statistics.median(t[m]) for m in modes}
        row = {"samples": len(t[modes[0]]), **{f"{m}_s": v for m, v in med.items()}}
        cells = [name, str(row["samples"]), *(f"{med[m]:.3f}" for m in modes)]
        if {"fresh", "forkserver"} <= set(modes):
            row["ratio_fresh_over_forkserver"] = med["fresh"] / med["forkserver"]
            cells.append(f"{row['ratio_fresh_over_forkserver']:.1f}×")
        out["per_scenario"][name] = row
        table.add_row(*cells)
    n = sum(len(t[modes[0]]) for t in per.values())
    out["samples"] = n
    out["per_sample_s"] = {m: wall[m] / n for m in modes}
    out["samples_per_s"] = {m: n / wall[m] for m in modes}
    cells = ["all (mean)", str(n), *(f"{out['per_sample_s'][m]:.3f}" for m in modes)]
    if {"fresh", "forkserver"} <= set(modes):
        out["ratio_fresh_over_forkserver"] = wall["fresh"] / wall["forkserver"]
        cells.append(f"{out['ratio_fresh_over_forkserver']:.1f}×")
    table.add_row(*cells)
    if {"forkserver", "none"} <= set(modes):  # what the bwrap boundary costs around a warm server
        out["ratio_forkserver_over_none"] = wall["forkserver"] / wall["none"]
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
