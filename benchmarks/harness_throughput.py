"""How close the run harness comes to what the server allows (issue 11, part 6).

The bundled fake OpenAI-compatible server (``python -m callbench.testing.fake_openai serve``) runs in
its own process and answers every WAPIIBench prompt with the task's gold completion after a fixed
latency, so each sample goes through the whole path: request, sandboxed evaluation (V8),
scoring, storage. Figures:

* ``ceiling_samples_per_s``: 0 ms latency, 1,975 tasks (the 395 WAPIIBench tasks five times),
  concurrency 64: samples per second in the run phase (first request to last stored row; the
  setup before and the summary after are the startup figures' business).
* ``efficiency["C@L"]``: samples scored and stored per second over ``C / L`` (the server's
  limit at concurrency C and latency L seconds), for C in {8, 64, 256} and L in {0.2, 1.0}; each
  configuration runs ten full waves (10 * C samples; 7 waves, 1,792 samples, at C = 256). Scoring trails the requests
  (answers are persisted, then scored by worker processes), so this includes the time scoring
  needs after the last answer.
* ``efficiency_requests["C@L"]``: the same for answers received (first request to last answer):
  how much of the server's limit the harness uses.
* Each configuration runs ``--repeat`` times (default 3) and the figures are the medians (one run
  varies by about +-10 % on a small VM); every run is listed under ``runs``.
* ``startup_help_s``: ``callbench --help`` wall time; ``startup_first_request_s``: from starting
  ``callbench run webapi`` until the server sees the first request (median of three).

Targets (issue 11): efficiency >= 0.9 at 64@0.2 and 256@1.0; ceiling >= 1,000 samples/s.

    python benchmarks/harness_throughput.py [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from callbench.api import make_track
from callbench.data.paths import data_dir
from callbench.runs.runner import RunOptions, run_async
from callbench.testing.fake_openai import FakeOpenAIServer, reply_key
from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

CONCURRENCY = (8, 64, 256)
LATENCY = (0.2, 1.0)
CEILING_TASKS = 1975


def write_tasks(dest: Path, copies: int) -> Path:
    """The WAPIIBench tasks ``copies`` times over, with distinct ids."""
    rows = json.loads((data_dir() / DEFAULT_DATA_FILE).read_text())
    out = []
    for k in range(copies):
        for i, row in enumerate(rows):
            out.append({**row, "index": k * 100_000 + int(row.get("index", i))})
    path = dest / "tasks.json"
    path.write_text(json.dumps(out))
    return path


def write_replies(tasks: Path, dest: Path) -> Path:
    """prompt digest -> gold completion, for the server's ``--replies``."""
    track = make_track("webapi", tasks_file=str(tasks))
    replies = {}
    for sample in track.load_samples():
        inp = track.build_input(sample)
        replies[reply_key({"prompt": inp.prompt})] = inp.reference
    track.close()
    path = dest / "replies.json"
    path.write_text(json.dumps(replies))
    return path


class Server:
    """The fake server in its own process (it must not share the harness's GIL)."""

    def __init__(self, latency: float, replies: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "callbench.testing.fake_openai", "serve", "--latency", str(latency), "--replies", str(replies)],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.url = line.split()[1]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_phase(url: str, tasks: Path, n: int, concurrency: int, out: Path) -> tuple[float, float, dict]:
    """(samples scored and stored per second, answers received per second), both from the first
    request on, and the run's summary."""
    from callbench.api import load_backend

    track = make_track("webapi", tasks_file=str(tasks))
    backend = load_backend(f"openai:m@{url}", {"mode": "completion", "timeout": 60.0}, concurrency=concurrency, track=track, constrained=False)
    first: list[float] = []
    answered: list[float] = []
    generate = backend.generate

    async def timed(inp, config):
        if not first:
            first.append(time.time())
        out = await generate(inp, config)
        answered.append(time.time())
        return out

    backend.generate = timed  # type: ignore[method-assign]
    opts = RunOptions(out_dir=out, limit=n, concurrency=concurrency, progress=False, generation=track.default_generation("completion"))
    outcome = asyncio.run(run_async(track, backend, opts))
    summary = outcome.summary
    if summary["n"] != n:
        raise RuntimeError(f"run stored {summary['n']} of {n} samples")
    con = sqlite3.connect(outcome.run_dir / "run.sqlite")
    (last,) = con.execute("SELECT max(finished_at) FROM samples").fetchone()
    con.close()
    return n / (last - first[0]), n / (max(answered) - first[0]), summary


def startup(tasks: Path) -> tuple[float, float]:
    """(``--help`` seconds, seconds from ``callbench run`` to its first request), medians of 3."""
    exe = [sys.executable, "-c", "from callbench.cli import main; main()"]
    helps, firsts = [], []
    with FakeOpenAIServer() as srv:
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([*exe, "--help"], capture_output=True, check=True)
            helps.append(time.perf_counter() - t)
            srv.request_times.clear() if hasattr(srv, "request_times") else None
            out = tempfile.mkdtemp()
            t = time.perf_counter()
            proc = subprocess.Popen(
                [*exe, "run", "webapi", "--model", f"openai:m@{srv.url}", "--mode", "completion", "--limit", "8",
                 "--out", out, "--no-progress"],
                env={**os.environ, "OPENAI_API_KEY": "x"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            while not srv.requests and proc.poll() is None:
                time.sleep(0.002)
            firsts.append(time.perf_counter() - t)
            proc.wait(timeout=120)
            srv.requests.clear()
            shutil.rmtree(out, ignore_errors=True)
    return statistics.median(helps), statistics.median(firsts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--quick", action="store_true", help="fewer samples (a smoke run, not the table)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration; the figures are their medians")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cb-harness-"))
    try:
        tasks = write_tasks(work, 5)
        replies = write_replies(tasks, work)
        results: dict = {"efficiency": {}, "efficiency_requests": {}, "runs": [], "repeats": args.repeat}
        ceiling_n = 400 if args.quick else CEILING_TASKS
        srv = Server(0.0, replies)
        try:
            rates = []
            for k in range(args.repeat):
                rate, _, summary = run_phase(srv.url, tasks, ceiling_n, 64, work / f"ceiling-{k}")
                rates.append(rate)
                results["runs"].append({"concurrency": 64, "latency_s": 0.0, "n": ceiling_n, "samples_per_s": round(rate, 1),
                                        "gold_correct": summary["metrics"]["correct_implementations_t"]})
        finally:
            srv.close()
        results["ceiling_samples_per_s"] = round(statistics.median(rates), 1)
        for latency in LATENCY:
            srv = Server(latency, replies)
            try:
                for c in CONCURRENCY:
                    # whole waves only: a last, partial wave would cap the figure below 1
                    n = c * min(3 if args.quick else 10, CEILING_TASKS // c)
                    effs, effs_requests = [], []
                    for k in range(args.repeat):
                        rate, answers, summary = run_phase(srv.url, tasks, n, c, work / f"c{c}-l{latency}-{k}")
                        eff, eff_requests = rate / (c / latency), answers / (c / latency)
                        effs.append(eff)
                        effs_requests.append(eff_requests)
                        results["runs"].append(
                            {"concurrency": c, "latency_s": latency, "n": n, "samples_per_s": round(rate, 1),
                             "efficiency": round(eff, 3), "efficiency_requests": round(eff_requests, 3),
                             "gold_correct": summary["metrics"]["correct_implementations_t"]}
                        )
                    results["efficiency"][f"{c}@{latency:g}"] = round(statistics.median(effs), 3)
                    results["efficiency_requests"][f"{c}@{latency:g}"] = round(statistics.median(effs_requests), 3)
            finally:
                srv.close()
        help_s, first_s = startup(tasks)
        results["startup_help_s"] = round(help_s, 3)
        results["startup_first_request_s"] = round(first_s, 3)
        results["cpu_count"] = os.cpu_count()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"{'concurrency':>11} {'latency s':>9} {'n':>5} {'samples/s':>10} {'limit/s':>8} {'efficiency':>10} "
          f"{'requests':>9} {'gold ok':>8}")
    for r in results["runs"]:
        limit = f"{r['concurrency'] / r['latency_s']:.0f}" if r["latency_s"] else "-"
        print(f"{r['concurrency']:>11} {r['latency_s']:>9g} {r['n']:>5} {r['samples_per_s']:>10.1f} {limit:>8} "
              f"{r.get('efficiency', float('nan')):>10.3f} {r.get('efficiency_requests', float('nan')):>9.3f} "
              f"{r['gold_correct']:>8.3f}")
    print(f"ceiling (0 ms, c=64, {ceiling_n} tasks, median of {args.repeat}): {results['ceiling_samples_per_s']} samples/s")
    print("efficiency (median of {}): {}".format(args.repeat, ", ".join(f"{k} {v}" for k, v in results["efficiency"].items())))
    print(f"startup: --help {results['startup_help_s']} s; first request after {results['startup_first_request_s']} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
