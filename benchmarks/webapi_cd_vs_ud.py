"""Unconstrained (UD) vs constrained decoding (CD) on the web API track, both setups.

    python benchmarks/webapi_cd_vs_ud.py [--model llamacpp:default] [--subset N] [--json PATH]

Runs the same task subset four times (full/args × UD/CD) through the normal runner (so runs are
resumable and land in --out), then prints correct implementations (t), illegal URLs, methods and
arguments, unsatisfiable constraints, and the relative gain of CD over UD.
``--subset N`` takes the first N tasks of every API (a fixed, documented subset); 0 = all 395.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from callbench.api import run
from callbench.data.paths import data_dir
from callbench.report.table import fmt, relative_gain
from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE, load_tasks

KEYS = (
    ("correct impl. (t)", "correct_implementations_t"),
    ("executable (t)", "executable_implementations_t"),
    ("illegal URLs (t)", "illegal_urls_t"),
    ("illegal methods (t)", "illegal_methods_t"),
    ("illegal args (t)", "illegal_arguments_t"),
    ("correct URLs (t)", "correct_urls_t"),
    ("correct arg values (t)", "correct_argument_values_t"),
)


def subset_ids(n: int) -> list[str] | None:
    if n <= 0:
        return None
    tasks = load_tasks(data_dir() / DEFAULT_DATA_FILE)
    ids, seen = [], {}
    for t in tasks:
        seen[t.api] = seen.get(t.api, 0) + 1
        if seen[t.api] <= n:
            ids.append(t.id)
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llamacpp:default")
    ap.add_argument("--subset", type=int, default=10, help="first N tasks per API (0 = all 395)")
    ap.add_argument("--out", type=Path, default=Path("runs"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ids = subset_ids(args.subset)
    console = Console()
    results: dict[str, dict] = {}
    for setup in ("full", "args"):
        for constrained in (False, True):
            name = f"{setup}-{'cd' if constrained else 'ud'}"
            out = run("webapi", args.model, out_dir=args.out, ids=ids, concurrency=1, setup=setup,
                      constrained=constrained, progress=True, console=Console(stderr=True))
            s = out.summary
            results[name] = {
                "run_dir": str(out.run_dir),
                "model": s["model"],
                "n": s["n"],
                "metrics": {k: s["metrics"].get(k) for _, k in KEYS} | {
                    "unsatisfiable_constraints": s["metrics"].get("unsatisfiable_constraints"),
                },
                "constrained_decoding": s.get("constrained_decoding"),
            }
    table = Table(title=f"UD vs CD · {results['full-ud']['model']} · {results['full-ud']['n']} tasks per run")
    table.add_column("metric (%)")
    for setup in ("full", "args"):
        table.add_column(f"{setup} UD", justify="right")
        table.add_column(f"{setup} CD", justify="right")
        table.add_column(f"{setup} gain", justify="right")
    for label, key in KEYS:
        row = [label]
        for setup in ("full", "args"):
            ud = results[f"{setup}-ud"]["metrics"][key]
            cd = results[f"{setup}-cd"]["metrics"][key]
            row += [fmt(ud), fmt(cd), relative_gain(ud, cd)]
        table.add_row(*row)
    row = ["unsatisfiable (count)"]
    for setup in ("full", "args"):
        row += ["", str(results[f"{setup}-cd"]["metrics"]["unsatisfiable_constraints"]), ""]
    table.add_row(*row)
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps({"subset_per_api": args.subset, "ids": ids, "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
