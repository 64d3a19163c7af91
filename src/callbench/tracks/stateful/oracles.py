"""Test cases and their oracles, recorded by running the reference program.

Per task: the *base* case (the sampled inputs), the *else* case (the branch threshold flipped, so
the other branch runs) when the program has a branch, and *resampled* cases (inputs redrawn from
their domains, e.g. new texts, new tensor seeds). The base case runs twice: a reference whose two
runs disagree is non-deterministic and the task is dropped. A task is kept only if the reference
passes the base case, the else case (when there is one) and at least one resampled case, so
every kept task has at least two cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from random import Random
from typing import Any

from callbench.sandbox.program import ProgramLimits
from callbench.tracks.stateful.execution import Case, Outcome, execute, judge
from callbench.tracks.stateful.program import Program
from callbench.tracks.stateful.scenario import Scenario


@dataclass
class Recorded:
    cases: list[tuple[Case, Outcome]] = field(default_factory=list)
    dropped: str | None = None  # why the task cannot be kept


def resampled_inputs(program: Program, rng: Random, k: int) -> list[dict[str, Any]]:
    """Candidate input sets, most different first: ``k`` with every resampleable input redrawn,
    then each input redrawn alone (the recorder keeps the first ``k`` the reference runs on)."""
    out: list[dict[str, Any]] = []
    with_alts = {v: alts for v, alts in program.alternatives.items() if alts and v in program.inputs}
    if not with_alts:
        return out
    tries: list[dict[str, Any]] = []
    for i in range(k):  # everything redrawn at once
        tries.append({var: alts[(i + rng.randrange(len(alts))) % len(alts)] for var, alts in with_alts.items()})
    for var, alts in with_alts.items():  # then one input at a time (some values empty a search)
        tries.extend({var: alt} for alt in alts)
    for change in tries:
        inputs = {**program.inputs, **change}
        if inputs != program.inputs and inputs not in out:
            out.append(inputs)
    return out


def record(
    scenario: Scenario, program: Program, code: str, rng: Random, *, limits: ProgramLimits | None = None, resamples: int = 2
) -> Recorded:
    rec = Recorded()
    base = Case("base", dict(program.inputs), program.service_seed)
    first = execute(scenario, code, base, limits)
    if first.status != "ok":
        rec.dropped = f"reference fails on its own inputs: {first.status}: {first.error}"
        return rec
    again = execute(scenario, code, base, limits)
    verdict, why = judge(scenario, first, again)
    if verdict != "pass":
        rec.dropped = f"reference is not deterministic ({why})"
        return rec
    rec.cases.append((base, first))
    if program.flip:
        case = Case("else", {**program.inputs, **program.flip}, program.service_seed)
        out = execute(scenario, code, case, limits)
        if out.status != "ok":
            rec.dropped = f"reference fails on the else branch: {out.status}: {out.error}"
            return rec
        rec.cases.append((case, out))
    n_resampled = 0
    for inputs in resampled_inputs(program, rng, resamples):
        case = Case(f"resampled_{n_resampled + 1}", inputs, program.service_seed)
        out = execute(scenario, code, case, limits)
        if out.status == "ok":
            rec.cases.append((case, out))
            n_resampled += 1
            if n_resampled >= resamples:
                break
    if n_resampled == 0:
        rec.dropped = "no resampled input set on which the reference runs"
    return rec
