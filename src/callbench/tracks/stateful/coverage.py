"""Coverage experiment: distinct transition pairs covered vs number of programs, per sampler.

For each sampler and seed, programs are sampled one after another (the energy sampler's counts
carry over, as in a generated benchmark) and the number of distinct pairs covered after each
program is recorded. The reference set is :func:`~callbench.tracks.stateful.sampling.explore_pairs`
(many walks of both samplers) united with every pair any curve reached. Only sampling runs here:
coverage is a property of the traces, not of their execution.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from random import Random
from statistics import mean
from typing import Any

from callbench.tracks.stateful.sampling import explore_pairs, sample_program
from callbench.tracks.stateful.scenario import Scenario


def _call_head(template: str) -> str:
    return template.split("(", 1)[0] + "("


_URL_ARG = re.compile(r'f"\{BASE_URL\}[^"\n]*"')
_PLACEHOLDER = re.compile(r"\$\w+")


def _call_pattern(template: str) -> re.Pattern[str]:
    """How a call of the API looks in code: its head, and for an API called by URL (a scenario
    inferred from a spec: ``requests.get(f"{BASE_URL}/pets/{$pet}")``) the URL too, each
    placeholder standing for any text within the string (one head would be every GET)."""
    head = _call_head(template)
    url = _URL_ARG.match(template, len(head))
    if url is None:
        return re.compile(re.escape(head))
    parts = _PLACEHOLDER.split(url.group(0))
    return re.compile(re.escape(head) + r'[^"\n/]*?'.join(re.escape(x) for x in parts))


def apis_called(scenario: Scenario, codes: list[str]) -> list[str]:
    """Scenario APIs whose call appears in any of ``codes``: the coverage measure that also
    applies to programs not sampled from the state model (the LLM-only baseline). A call is its
    head (the template up to its first parenthesis, e.g. ``api.text_to_speech(``; session APIs
    sharing an HTTP method share a head, so they count together), plus its URL for APIs called
    by URL (see :func:`_call_pattern`)."""
    pats = [(a.name, _call_pattern(a.template)) for a in scenario.apis]
    return sorted(name for name, rx in pats if any(rx.search(c) for c in codes))


def curve(scenario: Scenario, sampler: str, seed: int, programs: int, min_calls: int = 3, max_calls: int = 6) -> tuple[list[int], set]:
    rng = Random(seed)
    counts: Counter = Counter()
    covered: set = set()
    out = []
    for _ in range(programs):
        prog = sample_program(scenario, rng, n_calls=rng.randint(min_calls, max_calls), sampler=sampler, counts=counts, alternatives=0)
        if prog is not None:
            covered.update(tuple(p) for p in prog.pairs)
        out.append(len(covered))
    return out, covered


def programs_to_reach(points: list[int], target: float) -> int | None:
    for i, v in enumerate(points, 1):
        if v >= target:
            return i
    return None


def run_coverage(
    scenario: Scenario, *, programs: int = 50, samplers: tuple[str, ...] = ("energy", "random"), seeds: int = 5, goal: float = 0.95
) -> dict[str, Any]:
    reachable = explore_pairs(scenario)
    curves: dict[str, list[list[int]]] = {}
    for sampler in samplers:
        curves[sampler] = []
        for seed in range(seeds):
            points, covered = curve(scenario, sampler, seed, programs)
            reachable |= covered
            curves[sampler].append(points)
    n = len(reachable)
    target = goal * n
    result: dict[str, Any] = {
        "scenario": scenario.name,
        "programs": programs,
        "seeds": seeds,
        "reachable_pairs": n,
        "goal": goal,
        "samplers": {},
    }
    for sampler, runs in curves.items():
        reach = [programs_to_reach(r, target) for r in runs]
        result["samplers"][sampler] = {
            "mean_curve": [mean(col) for col in zip(*runs, strict=True)],
            "curves": runs,
            "programs_to_goal": reach,
            # seeds that never reached the goal count as the budget + 1 (a lower bound)
            "mean_programs_to_goal": mean(r if r is not None else programs + 1 for r in reach),
            "reached_goal_in_all_seeds": all(r is not None for r in reach),
            "final_coverage": mean(r[-1] for r in runs) / n if n else 0.0,
        }
    if "energy" in curves and "random" in curves:
        e = result["samplers"]["energy"]["mean_programs_to_goal"]
        r = result["samplers"]["random"]["mean_programs_to_goal"]
        result["ratio_energy_to_random"] = e / r if r else None
    return result


def spread(curves: list[list[int]]) -> tuple[list[float], list[float]]:
    """Per number of programs, the lowest and highest covered pairs over the seeds (the band the
    plot shades around each mean curve)."""
    cols = list(zip(*curves, strict=True))
    return [float(min(c)) for c in cols], [float(max(c)) for c in cols]


def plot(results: list[dict[str, Any]], path: Path) -> Path:
    """One panel per scenario: mean covered pairs vs programs, one line per sampler, shaded
    between the lowest and the highest seed (issue 31: the plots showed no spread) (matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        from callbench.errors import MissingExtraError

        raise MissingExtraError("matplotlib", "plot") from exc
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        for sampler, data in res["samplers"].items():
            ys = data["mean_curve"]
            xs = range(1, len(ys) + 1)
            (line,) = ax.plot(xs, ys, label=f"{sampler} (mean of {res['seeds']} seeds)")
            if len(data.get("curves") or []) > 1:
                lo, hi = spread(data["curves"])
                ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0, label=f"{sampler}: lowest-highest seed")
        ax.axhline(res["goal"] * res["reachable_pairs"], ls="--", lw=0.8, color="grey", label=f"{res['goal']:.0%} of reachable")
        ax.set_title(res["scenario"])
        ax.set_xlabel("programs")
        ax.set_ylabel("distinct transition pairs")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
