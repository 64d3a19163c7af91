"""Gold verdicts on a busy machine: the reference answers of every track, run through the real CLI
while CPU-bound processes the benchmark starts itself (``--hogs-per-core``, default 2) compete for
every core. A verdict must depend on the answer, never on the load: every gold figure must be 1.0.

    python benchmarks/gold_under_load.py [--json PATH] [--hogs-per-core 2] [--runs webapi,nested,stateful,tensor]
                                          [--idle] [--limit N] [--out DIR]

Runs (each a fresh run directory under ``--out``):

* ``webapi``: ``run webapi --model gold`` on the 395 WAPIIBench tasks (needs the data:
  ``callbench data fetch wapiibench`` or ``CALLBENCH_DATA_DIR``), ``correct_implementations_t``;
* ``nested``: ``run nested --model gold`` on callbench's generated set (400 tasks), ``win_rate``;
* ``stateful``: ``run stateful --model gold`` on the built-in 120 tasks, ``pass@1``;
* ``tensor``: a freshly generated tensor set (``generate stateful --scenario tensor --n 8``, its
  oracles recorded under the same load), then its gold run, ``pass@1``.

``--idle`` runs each once more without the hogs first, so the table shows the wall-time ratio
loaded / idle measured in one invocation. Prints a table; ``--json`` writes
``{"hogs", "cores", "runs": {name: {"metric", "value", "n", "wall_s", "idle_wall_s", "load_ratio", "ok"}}, "all_ok"}``.
Exit status 1 when any gold figure is below 1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

CLI = [sys.executable, "-m", "callbench"]
_HOG = "while True: pass"


@contextmanager
def cpu_hogs(count: int):
    """``count`` busy-looping processes for the duration of the block (killed on exit)."""
    procs = [subprocess.Popen([sys.executable, "-c", _HOG]) for _ in range(count)]
    try:
        time.sleep(0.5)  # let them reach the scheduler before the timed run starts
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _summary(out: Path) -> dict:
    runs = [p for p in out.iterdir() if (p / "summary.json").is_file()]
    if len(runs) != 1:
        raise SystemExit(f"{out}: expected one run directory with a summary.json, found {len(runs)}")
    return json.loads((runs[0] / "summary.json").read_text())


def _run_cli(args: list[str], console: Console) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(CLI + args, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        console.print(f"[red]{' '.join(args[:3])}: rc {proc.returncode}[/red]\n" + "\n".join(tail))
        raise SystemExit(1)
    return took


def _one(name: str, work: Path, limit: int | None, console: Console) -> tuple[str, float, int, float]:
    """Run ``name`` once under ``work``; (metric, value, n, wall seconds)."""
    out = work / name
    lim = ["--limit", str(limit)] if limit else []
    if name == "webapi":
        wall = _run_cli(["run", "webapi", "--model", "gold", "--out", str(out), *lim], console)
        s, key = _summary(out), "correct_implementations_t"
    elif name == "nested":
        wall = _run_cli(["run", "nested", "--model", "gold", "--out", str(out), *lim], console)
        s, key = _summary(out), "win_rate"
    elif name == "stateful":
        wall = _run_cli(["run", "stateful", "--model", "gold", "--out", str(out), *lim], console)
        s, key = _summary(out), "pass@1"
    elif name == "tensor":
        bench = work / "tensor-bench"
        wall = _run_cli(
            ["generate", "stateful", "--scenario", "tensor", "--n", "8", "--seed", "7", "--out", str(bench)],
            console,
        )
        wall += _run_cli(
            ["run", "stateful", "--bench", str(bench), "--model", "gold", "--out", str(out)], console
        )
        s, key = _summary(out), "pass@1"
    else:
        raise SystemExit(f"--runs: unknown run {name!r} (webapi, nested, stateful, tensor)")
    n = s["metrics"].get("n") or s["metrics"].get("n_tasks") or s.get("n")
    return key, float(s["metrics"][key]), int(n), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--hogs-per-core", type=int, default=2)
    ap.add_argument("--runs", default="webapi,nested,stateful,tensor")
    ap.add_argument("--idle", action="store_true", help="also run each without load first (wall-time ratio)")
    ap.add_argument("--limit", type=int, help="first N tasks of each set (default: all)")
    ap.add_argument("--out", type=Path, help="keep the run directories here (default: a temporary directory)")
    args = ap.parse_args()
    console = Console(stderr=True)
    cores = os.cpu_count() or 1
    hogs = args.hogs_per_core * cores
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="callbench-load-") as tmp:
        root = args.out or Path(tmp)
        for name in args.runs.split(","):
            idle_wall = None
            if args.idle:
                console.print(f"{name}: idle run …")
                *_, idle_wall = _one(name, root / "idle", args.limit, console)
            console.print(f"{name}: run beside {hogs} CPU-bound processes …")
            with cpu_hogs(hogs):
                key, value, n, wall = _one(name, root / "loaded", args.limit, console)
            results[name] = {
                "metric": key,
                "value": value,
                "n": n,
                "wall_s": round(wall, 1),
                "idle_wall_s": round(idle_wall, 1) if idle_wall is not None else None,
                "load_ratio": round(wall / idle_wall, 2) if idle_wall else None,
                "ok": value == 1.0,
            }
    table = Table(title=f"gold under load · {hogs} CPU-bound processes on {cores} cores")
    for col in ("run", "metric", "n", "gold", "wall s (loaded)", "wall s (idle)", "loaded / idle"):
        table.add_column(col, justify="left" if col in ("run", "metric") else "right")
    for name, r in results.items():
        table.add_row(
            name,
            r["metric"],
            str(r["n"]),
            f"{r['value']:.3f}" if r["ok"] else f"[red]{r['value']:.3f}[/red]",
            f"{r['wall_s']:.1f}",
            "-" if r["idle_wall_s"] is None else f"{r['idle_wall_s']:.1f}",
            "-" if r["load_ratio"] is None else f"{r['load_ratio']:.2f}",
        )
    Console(width=120).print(table)
    all_ok = all(r["ok"] for r in results.values())
    if args.json:
        payload = {"hogs": hogs, "cores": cores, "runs": results, "all_ok": all_ok}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
