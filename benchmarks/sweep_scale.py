"""A sweep of 20,000+ webapi samples: the local executor against the Ray executor on this machine,
and Ray with 1 and 2 worker processes (issue 32).

The grid is ``--cells`` webapi cells (default 8) of one model, the bundled fake OpenAI-compatible
server (``python -m callbench.testing.fake_openai serve``, in its own process) answering every
WAPIIBench prompt with the task's gold completion after ``--latency`` seconds; each cell scores its
own share of ``--samples`` tasks (the 395 WAPIIBench tasks repeated with distinct ids, one task file
per cell), at ``--concurrency`` requests in flight, so every sample goes the whole way: request,
V8 sandbox, scoring, SQLite. Each configuration runs the whole grid into a fresh sweep directory:

* ``local``: ``--executor local`` with 2 worker processes;
* ``ray-1``, ``ray-2``: ``--executor ray`` on a local Ray cluster (loopback) started for the sweep
  with 1 and 2 worker processes (``--workers``), startup and shutdown included.

Figures (in the JSON): ``samples``; per configuration its wall time (``wall_s``: the whole sweep,
Ray's cluster start and stop included) and ``run_s`` (the first cell's start to the last cell's
end), ``samples_per_s`` over each; ``local_samples_per_s`` and ``ray_samples_per_s`` (2 workers,
over wall time); ``throughput_ratio`` = Ray / local (2 workers each); ``efficiency`` = Ray with 2
workers / (2 x Ray with 1), over run time (how close a second worker comes to doubling it);
``per_sample_cost_s`` = worker-seconds per sample with Ray (workers x run time / samples, 2
workers); ``ray_overhead_s`` = wall - run time (cluster start and stop).

``estimate``: the paper-scale grid (21 models x 4 cells x 395 samples = 33,180 samples) on 1, 4 and
16 nodes with ``--workers-per-node`` workers each (default 2, this machine), from the measured
per-sample cost alone: a cell runs on one worker (``395 x per_sample_cost_s`` seconds at this
server latency and concurrency), the 84 cells in waves of ``nodes x workers`` at once, plus the
measured Ray overhead. It is an estimate on paper, not a measurement: it assumes model servers that
answer as fast as the fake one here (a real GPU server is slower, and then the estimate is a floor)
and nodes like this one.

    python benchmarks/sweep_scale.py [--json PATH] [--samples N] [--cells C] [--latency S]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from callbench.sweep.grid import load_grid
from callbench.sweep.local import run_local

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_throughput import Server, write_replies, write_tasks  # noqa: E402  (the same fake server and gold replies)

PAPER_MODELS, PAPER_CELLS, PAPER_SAMPLES = 21, 4, 395


def estimate(per_sample_cost_s: float, overhead_s: float, nodes: int, workers_per_node: int) -> dict[str, Any]:
    """Wall seconds for the paper-scale grid on ``nodes`` nodes of ``workers_per_node`` workers:
    each cell on one worker for ``PAPER_SAMPLES * per_sample_cost_s``, the cells in waves of
    ``nodes * workers_per_node``, plus the cluster's start/stop ``overhead_s``."""
    cells = PAPER_MODELS * PAPER_CELLS
    slots = nodes * workers_per_node
    waves = math.ceil(cells / slots)
    cell_s = PAPER_SAMPLES * per_sample_cost_s
    wall = waves * cell_s + overhead_s
    return {
        "nodes": nodes,
        "workers": slots,
        "cells": cells,
        "samples": cells * PAPER_SAMPLES,
        "waves": waves,
        "cell_s": round(cell_s, 1),
        "wall_s": round(wall, 1),
        "wall_h": round(wall / 3600, 2),
    }


def split_tasks(tasks: Path, dest: Path, samples: int, cells: int) -> list[Path]:
    """``samples`` tasks of ``tasks`` in ``cells`` task files of (nearly) equal size."""
    rows = json.loads(tasks.read_text())[:samples]
    if len(rows) < samples:
        raise SystemExit(f"only {len(rows)} tasks for --samples {samples}")
    files = []
    for i in range(cells):
        part = rows[i * samples // cells : (i + 1) * samples // cells]
        path = dest / f"tasks-{i}.json"
        path.write_text(json.dumps(part))
        files.append(path)
    return files


def write_grid(dest: Path, url: str, task_files: list[Path], concurrency: int) -> Path:
    files = ", ".join(json.dumps(str(p)) for p in task_files)
    grid = dest / "grid.yaml"
    grid.write_text(
        f'models: ["openai:m@{url}"]\n'
        "tracks:\n"
        f"  webapi: {{tasks_file: [{files}], concurrency: {concurrency}, model_options: {{mode: completion, timeout: 120.0}}}}\n",
        encoding="utf-8",
    )
    return grid


def run_config(name: str, grid_file: Path, out: Path, workers: int) -> dict[str, Any]:
    grid = load_grid(grid_file)
    marks: list[float] = []

    def report(event: str, cell: Any, detail: Any) -> None:
        if event in ("start", "finish"):
            marks.append(time.perf_counter())
        if event == "finish" and not detail.ok:
            raise SystemExit(f"{name}: cell {cell.name} failed: {detail.error}")

    t0 = time.perf_counter()
    if name == "local":
        outcome = run_local(grid, out, workers=workers, report=report)
    else:
        from callbench.sweep.ray_executor import run_ray

        outcome = run_ray(grid, out, workers=workers, report=report)
    wall = time.perf_counter() - t0
    n = sum(s.done or 0 for s in outcome.states.values())
    correct = []
    for c in grid.cells:
        summary = json.loads((out / "runs" / c.name / "summary.json").read_text())
        correct.append(summary["metrics"]["correct_implementations_t"])
    run_s = marks[-1] - marks[0]
    return {
        "executor": "local" if name == "local" else "ray",
        "workers": workers,
        "samples": n,
        "wall_s": round(wall, 2),
        "run_s": round(run_s, 2),
        "samples_per_s": round(n / wall, 1),
        "run_samples_per_s": round(n / run_s, 1),
        "gold_correct_min": min(correct),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--samples", type=int, default=20_540, help="webapi samples in the grid (default 20,540 = 52 x 395)")
    ap.add_argument("--cells", type=int, default=8, help="cells the samples are split into")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the fake server takes per answer")
    ap.add_argument("--concurrency", type=int, default=16, help="requests in flight per cell")
    ap.add_argument("--workers-per-node", type=int, default=2, help="workers per node in the paper-scale estimate")
    args = ap.parse_args(argv)
    if args.samples < args.cells or args.cells < 1:
        ap.error("--samples must be at least --cells, and --cells at least 1")
    work = Path(tempfile.mkdtemp(prefix="cb-sweep-scale-"))
    results: dict[str, Any] = {
        "samples": args.samples,
        "cells": args.cells,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "cpu_count": os.cpu_count(),
        "runs": {},
    }
    try:
        tasks = write_tasks(work, math.ceil(args.samples / 395))
        task_files = split_tasks(tasks, work, args.samples, args.cells)
        replies = write_replies(tasks, work)
        server = Server(args.latency, replies)
        try:
            grid_file = write_grid(work, server.url, task_files, args.concurrency)
            for name, workers in (("local", 2), ("ray-1", 1), ("ray-2", 2)):
                results["runs"][name] = run_config(name, grid_file, work / name, workers)
                print(f"{name}: {results['runs'][name]}", flush=True)
        finally:
            server.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    local, ray1, ray2 = (results["runs"][k] for k in ("local", "ray-1", "ray-2"))
    results["local_samples_per_s"] = local["samples_per_s"]
    results["ray_samples_per_s"] = ray2["samples_per_s"]
    results["ray_workers"] = {"1": ray1["samples_per_s"], "2": ray2["samples_per_s"]}
    results["ray_workers_run"] = {"1": ray1["run_samples_per_s"], "2": ray2["run_samples_per_s"]}
    results["throughput_ratio"] = round(ray2["samples_per_s"] / local["samples_per_s"], 3)
    results["throughput_ratio_run"] = round(ray2["run_samples_per_s"] / local["run_samples_per_s"], 3)
    results["efficiency"] = round(ray2["run_samples_per_s"] / (2 * ray1["run_samples_per_s"]), 3)
    per_sample = 2 * ray2["run_s"] / ray2["samples"]
    overhead = ray2["wall_s"] - ray2["run_s"]
    results["per_sample_cost_s"] = round(per_sample, 5)
    results["ray_overhead_s"] = round(overhead, 2)
    results["estimate"] = {
        "note": "an estimate on paper from the measured per-sample cost (fake server at latency_s), not a measurement",
        "grid": f"{PAPER_MODELS} models x {PAPER_CELLS} cells x {PAPER_SAMPLES} samples",
        "nodes": [estimate(per_sample, overhead, n, args.workers_per_node) for n in (1, 4, 16)],
    }

    print(f"\n{results['samples']} webapi samples in {args.cells} cells; fake server latency {args.latency:g} s, "
          f"concurrency {args.concurrency} per cell; {os.cpu_count()} cores")
    print(f"{'config':<7} {'workers':>7} {'wall s':>8} {'run s':>8} {'samples/s':>10} {'run samples/s':>14} {'gold ok':>8}")
    for name, r in results["runs"].items():
        print(f"{name:<7} {r['workers']:>7} {r['wall_s']:>8.1f} {r['run_s']:>8.1f} {r['samples_per_s']:>10.1f} "
              f"{r['run_samples_per_s']:>14.1f} {r['gold_correct_min']:>8.3f}")
    print(f"throughput ratio Ray/local (2 workers): {results['throughput_ratio']} (wall), {results['throughput_ratio_run']} (run)")
    print(f"efficiency of 2 Ray workers over 1: {results['efficiency']}; per-sample cost {results['per_sample_cost_s']} "
          f"worker-s; Ray start/stop {results['ray_overhead_s']} s")
    print(f"paper-scale estimate ({results['estimate']['grid']}, {args.workers_per_node} workers per node):")
    for e in results["estimate"]["nodes"]:
        print(f"  {e['nodes']:>2} node(s): {e['waves']} wave(s) of {e['workers']} cells x {e['cell_s']} s + overhead = "
              f"{e['wall_s']} s ({e['wall_h']} h)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
