"""Sample state-machine-valid programs from a scenario, favouring rare transition pairs.

A transition pair is (the last API applied to an object, the next API applied to it); calls
without a target object count as (``<none>``, API). Each step enumerates the *candidates*: every
API with every binding of its object parameters to live objects the program holds that passes
``where`` and the precondition.

Samplers:

* ``random``: uniform over the APIs that have a candidate, then uniform over their bindings.
* ``energy``: each candidate gets the energy E = c(pair), the number of times its transition
  pair was already covered (by earlier programs of the same benchmark and earlier steps of this
  one), and is drawn with probability  P(candidate) = exp(-E / T) / sum over candidates of exp(-E' / T)
  (computed as exp(-(E - E_min) / T), the same distribution without underflow)
  with temperature T (default 0.5): uncovered pairs (E = 0) dominate, rare pairs come next, and
  no candidate has probability 0, so every reachable pair stays reachable.

Control flow is injected while sampling: after a call returning a collection, a loop applies one
API to every element; at one point an ``if probe > threshold`` splits the program, the condition
true on the sampled values (``threshold`` an input whose flipped value takes the else branch).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from random import Random
from typing import Any

from callbench.errors import ConfigError
from callbench.tracks.stateful.program import Branch, Call, Loop, Program, Step
from callbench.tracks.stateful.scenario import AbsObject, Api, Scenario, World

NONE = "<none>"
SAMPLERS = ("energy", "random")
MAX_BINDINGS = 24  # per API and step; bindings beyond it are subsampled (object products grow fast)


@dataclass(frozen=True)
class Candidate:
    api: Api
    objs: dict[str, AbsObject]

    def pair(self) -> tuple[str, str]:
        if self.api.target is None:
            return (NONE, self.api.name)
        return (self.objs[self.api.target].last, self.api.name)


def candidates(scenario: Scenario, world: World, rng: Random, *, only: Api | None = None) -> list[Candidate]:
    """Every callable (API, object binding) in ``world``; objects must be held in a variable."""
    out: list[Candidate] = []
    for api in (only,) if only else scenario.apis:
        pools: list[list[AbsObject]] = []
        oparams = [p for p in api.params if p.is_object]
        for p in oparams:
            pools.append([o for o in world.live(p.object_type) if o.expr is not None])
        combos: list[tuple[AbsObject, ...]] = []
        for combo in itertools.product(*pools):
            if len({o.oid for o in combo}) != len(combo):
                continue  # one object per parameter
            combos.append(combo)
            if len(combos) > 4 * MAX_BINDINGS:
                break
        if len(combos) > MAX_BINDINGS:
            combos = rng.sample(combos, MAX_BINDINGS)
        for combo in combos:
            objs = {p.name: o for p, o in zip(oparams, combo, strict=True)}
            if any(p.where is not None and not p.where(objs[p.name], world, objs) for p in oparams):
                continue
            if api.precondition is not None and not api.precondition(world, objs):
                continue
            out.append(Candidate(api, objs))
    return out


def choose(
    cands: list[Candidate],
    sampler: str,
    counts: Counter,
    rng: Random,
    temperature: float = 0.5,
    *,
    prefer: set[int] | None = None,
    boost: float = 1.0,
) -> Candidate:
    """One candidate. With ``prefer`` (object ids: results nothing has used yet) and ``boost`` > 1,
    a candidate taking such an object gets ``boost`` times the weight the sampler gives it, so
    results tend to feed later calls (data flow) instead of being dropped."""
    if sampler not in SAMPLERS:
        raise ConfigError(f"--sampler {sampler}: choose from {', '.join(SAMPLERS)}")
    bonus = [boost if prefer and any(o.oid in prefer for o in c.objs.values()) else 1.0 for c in cands]
    if sampler == "random":
        if max(bonus) == 1.0:
            apis = sorted({c.api.name for c in cands})
            name = rng.choice(apis)
            return rng.choice([c for c in cands if c.api.name == name])
        per_api = Counter(c.api.name for c in cands)  # uniform over APIs, then over bindings
        return rng.choices(cands, weights=[b / per_api[c.api.name] for c, b in zip(cands, bonus, strict=True)], k=1)[0]
    energies = [counts[c.pair()] for c in cands]
    low = min(energies)  # shifting by the minimum leaves P unchanged and avoids underflow
    weights = [b * math.exp(-(e - low) / temperature) for e, b in zip(energies, bonus, strict=True)]
    return rng.choices(cands, weights=weights, k=1)[0]


class _Builder:
    """Accumulates one program: variable names, inputs, pairs."""

    def __init__(self, scenario: Scenario, rng: Random, sampler: str, counts: Counter, alternatives: int, reuse: float = 1.0):
        self.s = scenario
        self.reuse = reuse
        self.unused: dict[int, str] = {}  # object id -> the variable of the (not yet used) result holding it
        self.rng = rng
        self.sampler = sampler
        self.counts = counts
        self.n_alt = alternatives
        self.names: Counter = Counter()
        self.inputs: dict[str, Any] = {}
        self.words: dict[str, str] = {}
        self.alts: dict[str, list[Any]] = {}
        self.pairs: list[tuple[str, str]] = []
        self.flip: dict[str, Any] = {}  # threshold variable -> value that takes the else branch

    def fresh(self, base: str) -> str:
        self.names[base] += 1
        return f"{base}_{self.names[base]}"

    def value_input(self, api: Api, pname: str, world: World, objs: dict[str, AbsObject]) -> tuple[str, Any]:
        p = next(x for x in api.params if x.name == pname)
        value = p.domain(self.rng, world, objs)
        if p.literal:
            return repr(value), value
        base = p.var or p.name
        for var, v in self.inputs.items():  # same kind of value seen before: reuse its variable
            if var.rsplit("_", 1)[0] == base and v == value:
                return var, value
        var = self.fresh(base)
        self.inputs[var] = value
        self.words[var] = p.describe or p.name.replace("_", " ")
        if p.resample and self.n_alt:
            saved = dict(world.data)  # domains may keep per-call notes there (session kind)
            alts = []
            for _ in range(self.n_alt * 4):
                alt = p.perturb(self.rng, value) if p.perturb else p.domain(self.rng, world, objs)
                if alt != value and alt not in alts:
                    alts.append(alt)
                if len(alts) >= self.n_alt:
                    break
            world.data.clear()
            world.data.update(saved)
            self.alts[var] = alts
        return var, value

    def apply(
        self,
        cand: Candidate,
        world: World,
        out: str,
        item_expr: dict[int, str] | None = None,
        fixed: tuple[dict[str, str], dict[str, Any]] | None = None,
    ) -> Call:
        """Bind arguments, record the pair, run the effect, bind the result to ``out``.
        ``fixed`` reuses the value arguments of an earlier call (loop bodies: one draw for all)."""
        api = cand.api
        args: dict[str, str] = dict(fixed[0]) if fixed else {}
        described: dict[str, str] = dict(fixed[0]) if fixed else {}
        values: dict[str, Any] = dict(fixed[1]) if fixed else {}
        for p in api.params:
            if p.is_object:
                obj = cand.objs[p.name]
                expr = (item_expr or {}).get(obj.oid, obj.expr)
                args[p.name] = self.s.otype(p.object_type).ref.format(var=expr)
                described[p.name] = expr
            elif not fixed:
                code, value = self.value_input(api, p.name, world, cand.objs)
                args[p.name] = code
                values[p.name] = value
                described[p.name] = code
        self.last_values = values
        pair = cand.pair()
        self.counts[pair] += 1
        self.pairs.append(pair)
        result = api.effect(world, values, cand.objs)
        self.last_result = result
        used = {self.unused[o.oid] for o in cand.objs.values() if o.oid in self.unused}
        self.unused = {oid: var for oid, var in self.unused.items() if var not in used}  # one element uses the list
        for o in cand.objs.values():
            if api.target is not None and o is cand.objs[api.target]:
                o.last = api.name
        if api.returns == "object" and isinstance(result, AbsObject):
            result.expr = out
            result.last = api.name
            self.unused[result.oid] = out
        elif api.returns == "objects":
            for i, o in enumerate(result or []):
                o.expr = f"{out}[{i}]"
                o.last = api.name
                self.unused[o.oid] = out
        return Call(api.name, args, out, [pair], described)

    def step(self, world: World) -> Call | None:
        cands = candidates(self.s, world, self.rng)
        if not cands:
            return None
        cand = choose(cands, self.sampler, self.counts, self.rng, prefer=set(self.unused), boost=self.reuse)
        return self.apply(cand, world, self.fresh(cand.api.out))

    def loop(self, world: World, coll: Call) -> Loop | None:
        """One API applied to every element of the collection ``coll`` returned."""
        returned = self.last_result if isinstance(self.last_result, list) else []
        elems = [o for o in returned if o.alive]  # list order: the order the rendered loop runs in
        if not elems:
            return None
        etype = elems[0].type
        item = self.fresh(f"{etype}_item")
        options: list[Candidate] = []
        for api in self.s.apis:
            if api.target is None or api.returns == "objects":  # no lists of lists
                continue
            tparam = next(p for p in api.params if p.name == api.target)
            if tparam.object_type != etype or any(p.is_object and p.name != api.target for p in api.params):
                continue
            ok = all(
                (tparam.where is None or tparam.where(e, world, {api.target: e}))
                and (api.precondition is None or api.precondition(world, {api.target: e}))
                for e in elems
            )
            if ok:
                options.append(Candidate(api, {api.target: elems[0]}))
        if not options:
            return None
        first = choose(options, self.sampler, self.counts, self.rng)
        api = first.api
        out = self.fresh(api.out + "s")
        body: Call | None = None
        fixed: tuple[dict[str, str], dict[str, Any]] | None = None
        for e in elems:  # one draw of the value arguments for every element; effects on each
            cand = Candidate(api, {api.target: e})
            call = self.apply(cand, world, out, item_expr={e.oid: item}, fixed=fixed)
            if isinstance(self.last_result, AbsObject):
                self.last_result.expr = f"{out}[{elems.index(e)}]"
            if body is None:
                body = call
                fixed = ({k: v for k, v in call.args.items() if k != api.target}, self.last_values)
            else:
                body.pairs.extend(call.pairs)
        return Loop(coll.out, item, body, out)

    def branch_probe(self, world: World, last: Step) -> tuple[str, str, float] | None:
        """A numeric view of something the program holds: (code, words, current value)."""
        options: list[tuple[str, str, float]] = []
        if isinstance(last, (Call, Loop)):
            n = sum(1 for o in world.live() if o.expr and o.expr.startswith(f"{last.out}["))
            api = self.s.api(last.call.api if isinstance(last, Loop) else last.api)
            if isinstance(last, Call) and api.returns == "objects" and n >= 1:
                options.append((f"len({last.out})", f"the number of items in `{last.out}`", float(n)))
        for o in world.live():
            if not o.expr or "[" in o.expr:
                continue
            for pname, (code, fn) in self.s.otype(o.type).probes.items():
                if fn(o) >= 1:
                    options.append((code.format(var=o.expr), f"the {pname} of `{o.expr}`", float(fn(o))))
        return self.rng.choice(options) if options else None


def sample_program(
    scenario: Scenario,
    rng: Random,
    *,
    n_calls: int = 4,
    sampler: str = "energy",
    counts: Counter | None = None,
    p_loop: float = 0.5,
    p_branch: float = 0.6,
    alternatives: int = 3,
    reuse: float = 1.0,
) -> Program | None:
    """One program of about ``n_calls`` calls (loops count once), or None when the scenario gets
    stuck (no candidate at the first step). ``counts`` (pair -> times covered) is updated.
    ``reuse`` > 1 multiplies the weight of candidates that take a result no call has used yet
    (see :func:`choose`); 1 leaves both samplers as they are."""
    counts = counts if counts is not None else Counter()
    init = scenario.initial(rng)
    world = init.world
    b = _Builder(scenario, rng, sampler, counts, alternatives, reuse)
    b.inputs.update(init.preload)
    b.words.update(init.inputs)
    b.alts.update(init.alternatives)
    steps: list[Step] = []
    branch_at = rng.randint(1, max(1, n_calls - 1)) if n_calls >= 2 and rng.random() < p_branch else None
    while len(steps) < n_calls:
        if branch_at is not None and len(steps) >= branch_at:
            try:
                br = _branch(b, world, steps, n_calls - len(steps))
            except _Abandon:
                return None  # the builder already holds half a branch: start over
            if br is not None:
                steps.append(br)
                break
            branch_at = None
        call = b.step(world)
        if call is None:
            break
        steps.append(call)
        if scenario.api(call.api).returns == "objects" and len(steps) < n_calls and rng.random() < p_loop:
            lp = b.loop(world, call)
            if lp is not None:
                steps.append(lp)
    if not steps:
        return None
    return Program(
        scenario=scenario.name,
        steps=steps,
        inputs=b.inputs,
        input_words=b.words,
        alternatives=b.alts,
        flip=b.flip,
        service_seed=init.service_seed,
        pairs=b.pairs,
        world=world,
    )


class _Abandon(Exception):
    """A branch could not be completed after the builder had started it."""


def _branch(b: _Builder, world: World, steps: list[Step], remaining: int) -> Branch | None:
    """None when no probe exists (nothing changed); raises _Abandon when a side cannot be sampled."""
    probe = b.branch_probe(world, steps[-1])
    if probe is None:
        return None
    code, words, value = probe
    before = world.clone()
    unused = dict(b.unused)  # the else branch starts from the results held at the split
    then: list[Call | Loop] = []
    for _ in range(max(1, remaining)):
        call = b.step(world)
        if call is None:
            break
        then.append(call)
    orelse: list[Call | Loop] = []
    other = before
    b.unused = unused
    for _ in range(max(1, min(2, remaining - 1))):
        call = b.step(other)
        if call is None:
            break
        orelse.append(call)
    if not then or not orelse:
        raise _Abandon
    low = max(0, math.floor(value) - b.rng.randint(1, 3))  # value > low holds (values are >= 1)
    high = math.ceil(value) + b.rng.randint(0, 2)  # value > high fails
    var = b.fresh("threshold")
    b.inputs[var] = low
    b.words[var] = "the threshold"
    b.flip[var] = high
    return Branch(code, words, var, then, orelse)


def covered_pairs(programs: list[Program]) -> set[tuple[str, str]]:
    return {tuple(p) for prog in programs for p in prog.pairs}


def explore_pairs(scenario: Scenario, *, walks: int = 400, n_calls: int = 8, seed: int = 12345) -> set[tuple[str, str]]:
    """The transition pairs reachable in programs of ``n_calls`` calls, estimated by many walks of
    both samplers (an under-approximation; both samplers are measured against the same set)."""
    found: set[tuple[str, str]] = set()
    counts: Counter = Counter()
    rng = Random(seed)
    for i in range(walks):
        prog = sample_program(
            scenario, rng, n_calls=n_calls, sampler="energy" if i % 2 else "random", counts=counts, alternatives=0
        )
        if prog is not None:
            found.update(tuple(p) for p in prog.pairs)
    return found


def unreachable_apis(scenario: Scenario, reachable: set[tuple[str, str]]) -> list[str]:
    """APIs that no explored program could call: a modelling error worth reporting."""
    called = {b for _, b in reachable}
    return [a.name for a in scenario.apis if a.name not in called]
