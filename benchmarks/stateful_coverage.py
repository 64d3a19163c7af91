"""Transition-pair coverage of StateGen's energy sampler vs the uniform random baseline.

    python benchmarks/stateful_coverage.py [--programs 200] [--seeds 5] [--json PATH] [--plot PATH]

For every scenario and sampler, ``--seeds`` curves of distinct transition pairs covered after
1..N programs (3-6 calls each); the figure of merit is the mean number of programs to reach 95 %
of the reachable pairs (a seed that never reaches it counts as N + 1, so the random figure is a
lower bound then). JSON: {"scenarios": {name: {"reachable_pairs", "energy_programs_to_95",
"random_programs_to_95", "ratio", "energy_final_coverage", "random_final_coverage",
"random_reached_in_all_seeds"}}}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from callbench.tracks.stateful.coverage import plot, run_coverage
from callbench.tracks.stateful.scenarios import available_scenarios, get_scenario


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--scenarios", default=",".join(available_scenarios()))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    figures, raw = {}, []
    t0 = time.perf_counter()
    for name in args.scenarios.split(","):
        res = run_coverage(get_scenario(name), programs=args.programs, seeds=args.seeds)
        raw.append(res)
        e, r = res["samplers"]["energy"], res["samplers"]["random"]
        figures[name] = {
            "reachable_pairs": res["reachable_pairs"],
            "energy_programs_to_95": e["mean_programs_to_goal"],
            "random_programs_to_95": r["mean_programs_to_goal"],
            "ratio": res["ratio_energy_to_random"],
            "energy_final_coverage": e["final_coverage"],
            "random_final_coverage": r["final_coverage"],
            "energy_reached_in_all_seeds": e["reached_goal_in_all_seeds"],
            "random_reached_in_all_seeds": r["reached_goal_in_all_seeds"],
        }
    table = Table(title=f"Programs to cover 95 % of reachable transition pairs (mean of {args.seeds} seeds, budget {args.programs})")
    for col in ("scenario", "reachable pairs", "energy", "random", "energy / random", "target ≤ 0.5"):
        table.add_column(col, justify="right")
    for name, f in figures.items():
        rnd = f"{f['random_programs_to_95']:.1f}" + ("" if f["random_reached_in_all_seeds"] else " (≥)")
        table.add_row(
            name,
            str(f["reachable_pairs"]),
            f"{f['energy_programs_to_95']:.1f}",
            rnd,
            f"{f['ratio']:.2f}" + ("" if f["random_reached_in_all_seeds"] else " (≤)"),
            "met" if f["ratio"] <= 0.5 and f["energy_reached_in_all_seeds"] else "MISSED",
        )
    Console().print(table)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"programs": args.programs, "seeds": args.seeds, "scenarios": figures}, indent=2) + "\n")
    if args.plot:
        plot(raw, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
