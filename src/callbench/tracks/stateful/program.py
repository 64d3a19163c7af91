"""A sampled program as data (calls, loops, one if/else), and its rendering as Python.

Kept separate from sampling so the same structure feeds the renderer, the template task writer,
the oracle recorder and the JSON a benchmark stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from callbench.tracks.stateful.scenario import Scenario, render_template


@dataclass
class Call:
    """``out = <api>(args)``; ``args`` maps each parameter to the code that fills it."""

    api: str
    args: dict[str, str]
    out: str
    pairs: list[tuple[str, str]] = field(default_factory=list)
    described: dict[str, str] = field(default_factory=dict)  # param -> words for the task text


@dataclass
class Loop:
    """``out = []; for item in collection: out.append(<call on item>)``."""

    collection: str
    item: str
    call: Call
    out: str


@dataclass
class Branch:
    """``if <probe> > threshold: then... else: orelse...``; both branches end by setting the result."""

    probe_code: str
    probe_words: str
    threshold: str  # input variable holding the constant
    then: list[Call | Loop]
    orelse: list[Call | Loop]


Step = Call | Loop | Branch


@dataclass
class Program:
    scenario: str
    steps: list[Step]
    inputs: dict[str, Any]  # input variable -> value (the first test case)
    input_words: dict[str, str]  # input variable -> description for the task text
    alternatives: dict[str, list[Any]] = field(default_factory=dict)  # resampled values per input
    flip: dict[str, Any] = field(default_factory=dict)  # threshold variable -> value taking the else branch
    service_seed: Any = None
    pairs: list[tuple[str, str]] = field(default_factory=list)
    result_var: str = "result"
    world: Any = field(default=None, repr=False, compare=False)  # abstract state after sampling (not stored)

    @property
    def n_calls(self) -> int:
        return sum(1 for c in iter_calls(self.steps))

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "steps": [_step_json(s) for s in self.steps],
            "inputs": self.inputs,
            "input_words": self.input_words,
            "alternatives": self.alternatives,
            "flip": self.flip,
            "service_seed": self.service_seed,
            "pairs": [list(p) for p in self.pairs],
        }


def iter_calls(steps: list[Step]):
    for s in steps:
        if isinstance(s, Call):
            yield s
        elif isinstance(s, Loop):
            yield s.call
        else:
            yield from iter_calls(s.then)
            yield from iter_calls(s.orelse)


def _step_json(s: Step) -> dict[str, Any]:
    if isinstance(s, Call):
        return {"call": s.api, "args": s.args, "out": s.out}
    if isinstance(s, Loop):
        return {"loop": s.collection, "item": s.item, "body": _step_json(s.call), "out": s.out}
    return {
        "if": f"{s.probe_code} > {s.threshold}",
        "then": [_step_json(x) for x in s.then],
        "else": [_step_json(x) for x in s.orelse],
    }


def render(program: Program, scenario: Scenario) -> str:
    """The reference program as Python source; the last statement of each path sets ``result``."""
    lines: list[str] = []
    _render_steps(program.steps, scenario, lines, "", program.result_var, top=True)
    return "\n".join(lines) + "\n"


def _expr(call: Call, scenario: Scenario) -> str:
    return render_template(scenario.api(call.api).template, call.args)


def _render_steps(steps: list[Step], scenario: Scenario, lines: list[str], ind: str, result: str, top: bool) -> None:
    last: str | None = None
    for s in steps:
        if isinstance(s, Call):
            lines.append(f"{ind}{s.out} = {_expr(s, scenario)}")
            last = s.out
        elif isinstance(s, Loop):
            lines.append(f"{ind}{s.out} = []")
            lines.append(f"{ind}for {s.item} in {s.collection}:")
            lines.append(f"{ind}    {s.out}.append({_expr(s.call, scenario)})")
            last = s.out
        else:
            lines.append(f"{ind}if {s.probe_code} > {s.threshold}:")
            _render_steps(s.then, scenario, lines, ind + "    ", result, top=False)
            lines.append(f"{ind}else:")
            _render_steps(s.orelse, scenario, lines, ind + "    ", result, top=False)
            last = None  # both branches already set the result
    if last is not None:
        lines.append(f"{ind}{result} = {last}")
