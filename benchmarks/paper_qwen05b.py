"""A published WAPIIBench table row beside callbench's numbers: Qwen2.5-Coder-0.5B, all four cells.

    python benchmarks/paper_qwen05b.py [--model llamacpp:default] [--harness paper,callbench]
        [--paper-mode completion|chat] [--subset N] [--callbench-subset N] [--parallel 2]
        [--out DIR] [--json PATH] [--report-only]

Runs the four cells of the paper's table (full/args setup x unconstrained/constrained decoding) on
the 395 WAPIIBench tasks through the normal runner (resumable: re-running the command continues
where it stopped; ``--parallel`` cells at a time, one process per core), in two harnesses:

* ``paper``: what the published pipeline did with this model -- WAPIIBench's prompt file
  (``--prompt published``), its chat handling (``--chat-handling published``: in completion mode
  the starter is continued and the stop string kept; in chat mode the free answer is searched for
  the starter), no token healing (upstream tokenizes the prompt as it is), the paper's CD profile
  (``--cd-profile paper``) and the published scorer (``--scoring compat``). ``--paper-mode``:
  ``completion`` (default: the published code runs a model without ``-instruct`` in its name, as
  its Qwen2.5-Coder entries are, as a completion model) or ``chat``;
* ``callbench``: callbench's defaults (prompt v2, the instruct model's chat template with the
  starter prefilled, token healing, callbench's CD profile, strict scoring).

Every metric of ``summary.json`` gets a seeded percentile-bootstrap 95 % interval (samples
resampled, the metrics recomputed by the track's own aggregation on each resample), and the paper's
values (:data:`PAPER`) are set beside them: inside the interval, or how far outside.
``--subset N`` takes the first N tasks of every API (a quick check; the committed paper cells use
all 395); ``--callbench-subset N`` sets the callbench harness's own (the figures of a cell are
computed over its subset only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

CELLS = ("full_ud", "full_cd", "args_ud", "args_cd")
#: The paper's row for Qwen2.5-Coder-0.5B (appendix tables, 395 tasks, greedy), as far as it is
#: known here: executable (t), correct (t) and correct (e) of each cell (issue 27 quotes them).
PAPER: dict[str, dict[str, float]] = {
    "full_ud": {"executable_implementations_t": 0.01, "correct_implementations_t": 0.00, "correct_implementations_e": 0.00},
    "full_cd": {"executable_implementations_t": 0.68, "correct_implementations_t": 0.04, "correct_implementations_e": 0.06},
    "args_ud": {"executable_implementations_t": 0.89, "correct_implementations_t": 0.08, "correct_implementations_e": 0.09},
    "args_cd": {"executable_implementations_t": 0.83, "correct_implementations_t": 0.14, "correct_implementations_e": 0.17},
}
#: Shown in the printed table (all metrics go to the JSON).
SHOWN = (
    "executable_implementations_t",
    "correct_implementations_t",
    "correct_implementations_e",
    "correct_except_credentials_t",
    "correct_urls_t",
    "illegal_urls_t",
    "correct_methods_t",
    "correct_argument_names_t",
    "correct_argument_values_t",
    "illegal_arguments_t",
    "total_errors",
)
N_BOOT = 1000
SEED = 0


def cell_options(cell: str, harness: str, paper_mode: str, model_args: dict[str, Any]) -> dict[str, Any]:
    """The ``callbench.api.run`` keywords of one cell in one harness."""
    from callbench.constrain.webapi_grammar import GrammarOptions

    setup, decoding = cell.split("_")
    constrained = decoding == "cd"
    opts: dict[str, Any] = {"setup": setup, "constrained": constrained, "model_options": dict(model_args)}
    if harness == "paper":
        opts.update(prompt_version="published", chat_handling="published", scoring="compat")
        opts["model_options"].setdefault("mode", paper_mode)
        opts["model_options"].setdefault("token_healing", False)
        if constrained:
            opts["grammar_options"] = GrammarOptions(profile="paper")
    else:
        opts["scoring"] = "strict"
    return opts


def _run_cell(job: tuple[str, str, str, str, dict[str, Any], list[str] | None]) -> tuple[str, str, str]:
    """One cell, in its own process (one llama.cpp model per process, one thread each)."""
    from callbench.api import run

    harness, cell, model, out, opts, ids = job
    opts = dict(opts)
    outcome = run("webapi", model, out_dir=out, run_id=f"{harness}-{cell.replace('_', '-')}", ids=ids, concurrency=1, **opts)
    return harness, cell, str(outcome.run_dir)


def subset_ids(n: int) -> list[str] | None:
    """The first ``n`` tasks of every API (None: all)."""
    if n <= 0:
        return None
    from callbench.data.paths import data_dir
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE, load_tasks

    seen: dict[str, int] = {}
    out = []
    for t in load_tasks(data_dir(None) / DEFAULT_DATA_FILE):
        if seen.get(t.api, 0) < n:
            seen[t.api] = seen.get(t.api, 0) + 1
            out.append(t.id)
    return out


def verdicts_of(run_dir: Path, scoring: str, ids: list[str] | None = None) -> list[Any]:
    """The run's per-sample verdicts in ``scoring`` mode, in sample order (only ``ids``, if given:
    a run directory may hold more samples than the figures are about)."""
    from callbench.runs.store import RunStore
    from callbench.tracks.webapi.scoring import SampleVerdict

    keep = set(ids) if ids is not None else None
    store = RunStore.open(run_dir)
    try:
        return [
            SampleVerdict.from_dict(r["verdicts"][scoring]) for r in store.rows() if keep is None or r["id"] in keep
        ]
    finally:
        store.close()


def numeric(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def bootstrap(verdicts: list[Any], scoring: str, n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, list[float | None]]:
    """Percentile-bootstrap 95 % intervals of every numeric metric: the samples resampled with
    replacement ``n_boot`` times, the track's aggregation recomputed on each resample."""
    from callbench.tracks.webapi.metrics import aggregate

    rng = np.random.default_rng(seed)
    n = len(verdicts)
    draws: dict[str, list[float]] = {}
    for _ in range(n_boot):
        pick = [verdicts[i] for i in rng.integers(0, n, n)]
        for k, v in numeric(aggregate(pick, scoring)).items():
            draws.setdefault(k, []).append(v)
    out: dict[str, list[float | None]] = {}
    for k, vals in draws.items():
        arr = np.asarray(vals, dtype=float)
        out[k] = [round(float(np.percentile(arr, 2.5)), 4), round(float(np.percentile(arr, 97.5)), 4)]
    return out


def cell_figures(run_dir: Path, scoring: str, n_boot: int, ids: list[str] | None = None) -> dict[str, Any]:
    from callbench.tracks.webapi.metrics import aggregate

    verdicts = verdicts_of(run_dir, scoring, ids)
    metrics = aggregate(verdicts, scoring)
    return {
        "n": len(verdicts),
        "run_dir": run_dir.name,
        "scoring": scoring,
        "metrics": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in metrics.items()},
        "ci95": bootstrap(verdicts, scoring, n_boot),
    }


def verdict(paper: float, ci: list[float | None] | None) -> str:
    """Where the paper's value lies against the interval: inside, or the distance to it."""
    if not ci or ci[0] is None or ci[1] is None:
        return "–"
    lo, hi = ci
    if lo - 1e-9 <= paper <= hi + 1e-9:
        return "inside"
    gap = lo - paper if paper < lo else paper - hi
    return f"outside by {gap:.2f}" + (" (±0.03: ok)" if gap <= 0.03 else "")


def print_tables(console: Console, results: dict[str, dict[str, Any]]) -> None:
    for harness, cells in results.items():
        table = Table(title=f"Qwen2.5-Coder-0.5B, {harness} harness (rates over all samples unless _e)")
        table.add_column("metric")
        for cell in CELLS:
            if cell in cells:
                table.add_column(cell, justify="right")
        for key in SHOWN:
            row = [key]
            for cell in CELLS:
                if cell not in cells:
                    continue
                c = cells[cell]
                value, ci = c["metrics"].get(key), c["ci95"].get(key)
                text = "–" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
                if ci and ci[0] is not None:
                    text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
                paper = PAPER.get(cell, {}).get(key)
                if paper is not None and harness == "paper":
                    text += f" | paper {paper:.2f}: {verdict(paper, ci)}"
                row.append(text)
            table.add_row(*row)
        console.print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="llamacpp:default")
    ap.add_argument("--model-arg", action="append", default=[], help="KEY=VALUE backend option (repeatable)")
    ap.add_argument("--harness", default="paper,callbench", help="comma-separated: paper, callbench")
    ap.add_argument("--cells", default=",".join(CELLS), help="comma-separated subset of " + ", ".join(CELLS))
    ap.add_argument("--paper-mode", choices=("completion", "chat"), default="completion")
    ap.add_argument("--subset", type=int, default=0, help="first N tasks of every API (0 = all 395)")
    ap.add_argument(
        "--callbench-subset", type=int, default=None, help="the callbench harness's subset (default: --subset)"
    )
    ap.add_argument("--parallel", type=int, default=2, help="cells run at a time (one process each)")
    ap.add_argument("--out", default="runs/paper_qwen05b", help="directory of the runs (resumed when re-run)")
    ap.add_argument("--n-boot", type=int, default=N_BOOT)
    ap.add_argument("--report-only", action="store_true", help="read the runs under --out, run nothing")
    ap.add_argument("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)

    from callbench.cli.options import parse_model_args

    model_args = parse_model_args(args.model_arg)
    harnesses = [h for h in args.harness.split(",") if h]
    cells = [c for c in args.cells.split(",") if c]
    bad = [h for h in harnesses if h not in ("paper", "callbench")] + [c for c in cells if c not in CELLS]
    if bad:
        ap.error(f"unknown harness/cell: {', '.join(bad)}")
    subsets = {"paper": args.subset, "callbench": args.subset if args.callbench_subset is None else args.callbench_subset}
    ids = {h: subset_ids(n) for h, n in subsets.items()}
    out = Path(args.out)
    jobs = [
        (h, c, args.model, str(out), cell_options(c, h, args.paper_mode, model_args), ids[h])
        for h in harnesses
        for c in cells
    ]
    console = Console()
    started = time.perf_counter()
    dirs: dict[tuple[str, str], Path] = {}
    if args.report_only:
        for h, c, *_ in jobs:
            dirs[(h, c)] = out / f"{h}-{c.replace('_', '-')}"
    else:
        with ProcessPoolExecutor(max_workers=max(1, args.parallel)) as pool:
            for h, c, run_dir in pool.map(_run_cell, jobs):
                dirs[(h, c)] = Path(run_dir)
                console.print(f"[dim]{h} {c}: {run_dir}[/dim]")
    results: dict[str, dict[str, Any]] = {}
    for (h, c), run_dir in dirs.items():
        scoring = "compat" if h == "paper" else "strict"
        results.setdefault(h, {})[c] = cell_figures(run_dir, scoring, args.n_boot, ids[h])
    print_tables(console, results)
    figures = {
        "settings": {
            "command": " ".join(["python", "benchmarks/paper_qwen05b.py", *(argv if argv is not None else sys.argv[1:])]),
            "model": args.model,
            "model_args": model_args,
            "paper_mode": args.paper_mode,
            "subset_per_api": {h: n or None for h, n in subsets.items()},
            "n_boot": args.n_boot,
            "seed": SEED,
            "cpu_count": os.cpu_count(),
            "runtime_s": round(time.perf_counter() - started, 1),
        },
        # the layout: the paper harness's cells, the paper's values, then callbench's own
        "cells": results.get("paper", {}),
        "paper": {c: dict(v) for c, v in PAPER.items() if c in cells},
        "callbench_harness": results.get("callbench", {}),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
