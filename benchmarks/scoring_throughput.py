"""Throughput of sandboxed execution + scoring of the 395 WAPIIBench gold codes.

Compares callbench's V8 sandbox (one locked-down, reused context in a worker process) with the
published pipeline's method: one ``node`` process per sample, running the same axios stand-in.
Both paths score every captured request (strict mode), in the same run.

    python benchmarks/scoring_throughput.py [--json PATH] [--rounds 3] [--node-samples 395]

Prints a table and writes ``{"samples_per_s", "process_per_sample_samples_per_s", "ratio", ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from callbench.data.paths import data_dir
from callbench.sandbox import JsSandbox, node_script
from callbench.specs import load_spec
from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE, load_tasks, spec_path_for
from callbench.tracks.webapi.prompting import build_prompt, reference_completion
from callbench.tracks.webapi.scoring import compare_requests


def gold_programs(root: Path):
    data_file = root / DEFAULT_DATA_FILE
    tasks = load_tasks(data_file)
    out = []
    for t in tasks:
        spec = load_spec(spec_path_for(t, data_file, root))
        program = build_prompt(t, "full").starter + reference_completion(t, "full")
        out.append((t, spec, program))
    return out


def run_sandbox(items) -> tuple[float, int]:
    correct = 0
    with JsSandbox() as sandbox:
        sandbox.run(items[0][2])  # warm-up: worker start and context build are not per-sample costs
        t0 = time.perf_counter()
        for task, spec, program in items:
            res = sandbox.run(program, task.definitions)
            if res.status == "ok" and compare_requests(task.config.as_dict(), res.request, spec).sample == "correct":
                correct += 1
        elapsed = time.perf_counter() - t0
    return len(items) / elapsed, correct


def run_sandbox_batched(items, batch: int = 32) -> tuple[float, int]:
    """As :func:`run_sandbox`, but the programs go to the worker ``batch`` at a time
    (``JsSandbox.run_many``, as the run's scoring workers send them)."""
    correct = 0
    with JsSandbox() as sandbox:
        sandbox.run(items[0][2])
        t0 = time.perf_counter()
        for k in range(0, len(items), batch):
            chunk = items[k : k + batch]
            for i, res in sandbox.run_many([(program, task.definitions) for task, _, program in chunk]):
                task, spec, _ = chunk[i]
                if res.status == "ok" and compare_requests(task.config.as_dict(), res.request, spec).sample == "correct":
                    correct += 1
        elapsed = time.perf_counter() - t0
    return len(items) / elapsed, correct


def run_node(items, node: str) -> tuple[float, int]:
    correct = 0
    t0 = time.perf_counter()
    for task, spec, program in items:
        script = node_script(program, task.definitions)
        proc = subprocess.run([node, "-"], input=script, capture_output=True, text=True, timeout=30)
        line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
        requests = json.loads(line).get("requests") or []
        if requests and compare_requests(task.config.as_dict(), requests[0], spec).sample == "correct":
            correct += 1
    elapsed = time.perf_counter() - t0
    return len(items) / elapsed, correct


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--rounds", type=int, default=3, help="sandbox rounds over the 395 codes (median reported)")
    ap.add_argument("--node-samples", type=int, default=395, help="codes run through node (one process each)")
    ap.add_argument("--data", type=Path, help="data dir (default: $CALLBENCH_DATA_DIR or the user cache)")
    args = ap.parse_args()
    node = shutil.which("node")
    if node is None:
        print("node is not installed: cannot measure the process-per-sample baseline", file=sys.stderr)
        return 2
    root = data_dir(args.data)
    items = gold_programs(root)
    rates, correct = [], 0
    for _ in range(args.rounds):
        rate, correct = run_sandbox(items)
        rates.append(rate)
    sandbox_rate = statistics.median(rates)
    batched, batched_correct = [], 0
    for _ in range(args.rounds):
        rate, batched_correct = run_sandbox_batched(items)
        batched.append(rate)
    batched_rate = statistics.median(batched)
    node_rate, node_correct = run_node(items[: args.node_samples], node)
    n_node = min(args.node_samples, len(items))
    result = {
        "samples_per_s": round(sandbox_rate, 1),
        "process_per_sample_samples_per_s": round(node_rate, 2),
        "ratio": round(sandbox_rate / node_rate, 1),
        "batched_samples_per_s": round(batched_rate, 1),
        "batched_correct": batched_correct,
        "n_samples": len(items),
        "sandbox_correct": correct,
        "node_samples": n_node,
        "node_correct": node_correct,
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "node_version": subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip(),
    }
    table = Table(title="Sandboxed execution + scoring of the WAPIIBench gold codes (strict)")
    table.add_column("method")
    table.add_column("samples", justify="right")
    table.add_column("correct", justify="right")
    table.add_column("samples/s", justify="right")
    table.add_row("V8 sandbox (callbench)", str(len(items)), str(correct), f"{sandbox_rate:,.0f}")
    table.add_row("V8 sandbox, batches of 32 (run_many)", str(len(items)), str(batched_correct), f"{batched_rate:,.0f}")
    table.add_row("node process per sample", str(n_node), str(node_correct), f"{node_rate:,.1f}")
    table.add_row("ratio", "", "", f"{sandbox_rate / node_rate:,.0f}×")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
