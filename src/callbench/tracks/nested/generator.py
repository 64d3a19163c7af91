"""Synthetic nested-call tasks over the built-in MathQA tools (v2 schema rows).

Each task is a small call DAG: the first call takes literal arguments, every later call references
at least one earlier output (``$var_k.result$``) and at most ``fan_in`` of them, and every output but
the last is consumed by a later call, so the final answer depends on the whole sequence. Literal
arguments come from ranges that keep every operation valid (no division by zero, no square root or
logarithm of a non-positive number, small factorials, powers and binomials); a local mirror of the
operations only guides that sampling. ``gold_answer`` is what :class:`NestedExecutor` returns for
the gold sequence; a task whose execution fails, or whose values are not finite or exceed
``MAX_ABS``, is dropped and resampled. Question text comes from per-operation templates (or from a
``question_writer``); it names neither labels nor tool identifiers.

Every task draws from its own seeded RNG (``seed``, index, attempt), so ``generate_tasks(20, 0)`` is
the first 20 rows of ``generate_tasks(400, 0)``.

The committed offline benchmark ``data/generated_v1.jsonl`` was written by::

    write_jsonl(generate_tasks(400, seed=0), "src/callbench/tracks/nested/data/generated_v1.jsonl")

(defaults: ``min_calls=2, max_calls=6, fan_in=2, distractors=3``; ``python -m
callbench.tracks.nested.generator`` does the same).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.tools import ToolSpec
from callbench.tracks.nested.executor import NestedExecutor
from callbench.tracks.nested.schema import ToolCall

MAX_ABS = 1e6  # every intermediate and final value stays within this magnitude
COMMITTED = Path(__file__).with_name("data") / "generated_v1.jsonl"
_LIST = -1  # arity of tools whose single argument is a list of numbers

Num = int | float


# --- literal samplers ------------------------------------------------------------------------------


def _ri(lo: int, hi: int) -> Callable[[random.Random], int]:
    return lambda rng: rng.randint(lo, hi)


def _pick(*values: Num) -> Callable[[random.Random], Num]:
    return lambda rng: rng.choice(values)


def _dec(lo: int, hi: int) -> Callable[[random.Random], Num]:
    """A number with one decimal, mostly non-integral (e.g. for floor)."""
    return lambda rng: round(rng.randint(lo * 10, hi * 10) / 10, 1)


_PROB = _pick(0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9)
_SQUARE = _pick(4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144, 169, 196, 225, 400, 625)


def _isint(x: Any) -> bool:
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def _pos(*xs: Num) -> bool:
    return all(x > 0 for x in xs)


def _nonzero(x: Num) -> bool:
    return abs(x) > 1e-9


@dataclass(frozen=True)
class Op:
    """One MathQA tool: its catalog entry, a local mirror for sampling, valid inputs and phrasing."""

    name: str
    description: str
    params: tuple[tuple[str, str], ...]  # (type, description) per arg_i
    out: tuple[str, str]  # (type, description) of ``result``
    fn: Callable[..., Num]
    lits: tuple[Callable[[random.Random], Num], ...]  # literal sampler per position (list ops: one)
    ok: Callable[..., bool]
    nouns: tuple[str, ...]  # "{0}", "{1}", ... are argument phrases
    verbs: tuple[str, ...] = ()
    weight: int = 1

    @property
    def arity(self) -> int:
        return _LIST if self.params[0][0].startswith("list") else len(self.params)

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {f"arg_{i}": {"type": t, "description": d} for i, (t, d) in enumerate(self.params)},
            "output_parameters": {"result": {"type": self.out[0], "description": self.out[1]}},
        }


_N = "int or float"
_TWO = ((_N, "The first number"), (_N, "The second number"))
_ALL: Callable[..., bool] = lambda *a: True  # noqa: E731

OPS: tuple[Op, ...] = (
    Op(
        "add",
        "Add two numbers",
        _TWO,
        (_N, "The sum"),
        lambda a, b: a + b,
        (_ri(2, 500), _ri(2, 500)),
        _ALL,
        ("the sum of {0} and {1}", "{0} plus {1}", "the total of {0} and {1}"),
        ("add {0} and {1}", "add {1} to {0}", "increase {0} by {1}"),
        weight=4,
    ),
    Op(
        "subtract",
        "Subtract the second number from the first",
        _TWO,
        (_N, "The difference"),
        lambda a, b: a - b,
        (_ri(50, 900), _ri(2, 200)),
        _ALL,
        ("the result of subtracting {1} from {0}", "{0} minus {1}", "the difference {0} minus {1}"),
        ("subtract {1} from {0}", "take {1} away from {0}", "decrease {0} by {1}"),
        weight=4,
    ),
    Op(
        "multiply",
        "Multiply two numbers",
        _TWO,
        (_N, "The product"),
        lambda a, b: a * b,
        (_ri(2, 60), _ri(2, 25)),
        _ALL,
        ("the product of {0} and {1}", "{0} times {1}"),
        ("multiply {0} by {1}", "multiply {0} and {1}"),
        weight=4,
    ),
    Op(
        "divide",
        "Divide the first number by the second",
        _TWO,
        (_N, "The quotient"),
        lambda a, b: a / b,
        (_ri(20, 900), _ri(2, 20)),
        lambda a, b: _nonzero(b),
        ("{0} divided by {1}", "the quotient of {0} divided by {1}", "the ratio of {0} to {1}"),
        ("divide {0} by {1}", "split {0} into {1} equal parts and take one part"),
        weight=4,
    ),
    Op(
        "inverse",
        "Return the reciprocal of a number",
        ((_N, "The number to invert"),),
        (_N, "The reciprocal"),
        lambda a: 1 / a,
        (_ri(2, 20),),
        _nonzero,
        ("the reciprocal of {0}", "one divided by {0}"),
        ("take the reciprocal of {0}",),
    ),
    Op(
        "negate",
        "Return the negation of a number",
        ((_N, "The number to negate"),),
        (_N, "The negated number"),
        lambda a: -a,
        (_ri(2, 300),),
        _ALL,
        ("the negative of {0}", "{0} with its sign flipped"),
        ("flip the sign of {0}",),
    ),
    Op(
        "negate_prob",
        "Probability that an event does not occur, given the probability that it does",
        ((_N, "Probability of the event, between 0 and 1"),),
        (_N, "Probability of the complement"),
        lambda a: 1 - a,
        (_PROB,),
        lambda a: 0 <= a <= 1,
        (
            "the probability that an event with probability {0} does not happen",
            "one minus the probability {0}",
        ),
        ("find the probability of the complement of an event with probability {0}",),
    ),
    Op(
        "power",
        "Raise a number to a power",
        ((_N, "The base"), (_N, "The exponent")),
        (_N, "The power"),
        lambda a, b: a**b,
        (_ri(2, 12), _pick(2, 3, 4)),
        lambda a, b: _isint(b) and 0 <= b <= 4 and abs(a) <= 1000,
        ("{0} raised to the power {1}", "{0} to the power of {1}"),
        ("raise {0} to the power {1}",),
    ),
    Op(
        "sqrt",
        "Square root of a number",
        ((_N, "A non-negative number"),),
        ("float", "The square root"),
        math.sqrt,
        (_SQUARE,),
        lambda a: a >= 0,
        ("the square root of {0}",),
        ("take the square root of {0}",),
    ),
    Op(
        "log",
        "Logarithm of a number in the given base",
        ((_N, "A positive number"), (_N, "The base")),
        ("float", "The logarithm"),
        lambda a, b: math.log(a, b),
        (_pick(8, 16, 32, 64, 100, 1000, 1024), _pick(2, 10)),
        lambda a, b: a > 0 and b > 0 and abs(b - 1) > 1e-9,
        ("the logarithm of {0} in base {1}", "the logarithm of {0} to the base {1}"),
        ("take the logarithm of {0} in base {1}",),
    ),
    Op(
        "floor",
        "Largest integer less than or equal to a number",
        ((_N, "The number"),),
        ("int", "The floor"),
        math.floor,
        (_dec(2, 99),),
        _ALL,
        ("{0} rounded down to a whole number", "the floor of {0}"),
        ("round {0} down to the nearest integer",),
    ),
    Op(
        "remainder",
        "Remainder of dividing the first number by the second",
        _TWO,
        (_N, "The remainder"),
        lambda a, b: a % b,
        (_ri(20, 500), _ri(3, 12)),
        lambda a, b: _nonzero(b),
        ("the remainder when {0} is divided by {1}", "{0} modulo {1}"),
        ("find the remainder of {0} divided by {1}",),
    ),
    Op(
        "lcm",
        "Least common multiple of two integers",
        (("int", "The first integer"), ("int", "The second integer")),
        ("int", "The least common multiple"),
        lambda a, b: math.lcm(int(a), int(b)),
        (_ri(2, 30), _ri(2, 30)),
        lambda a, b: _isint(a) and _isint(b) and 0 < a <= 10_000 and 0 < b <= 10_000,
        ("the least common multiple of {0} and {1}",),
        ("find the least common multiple of {0} and {1}",),
    ),
    Op(
        "max_number",
        "Maximum of a list of numbers",
        (("list of float", "A list of numbers"),),
        ("float", "The maximum"),
        lambda xs: max(xs),
        (_ri(1, 400),),
        _ALL,
        ("the largest of {0}", "the maximum of {0}"),
        ("pick the largest of {0}",),
    ),
    Op(
        "min_number",
        "Minimum of a list of numbers",
        (("list of float", "A list of numbers"),),
        ("float", "The minimum"),
        lambda xs: min(xs),
        (_ri(1, 400),),
        _ALL,
        ("the smallest of {0}", "the minimum of {0}"),
        ("pick the smallest of {0}",),
    ),
    Op(
        "speed",
        "Speed from distance and time",
        ((_N, "Distance"), (_N, "Time")),
        (_N, "Speed"),
        lambda a, b: a / b,
        (_ri(20, 600), _ri(2, 12)),
        lambda a, b: a >= 0 and b > 0,
        ("the speed of something that covers {0} units of distance in {1} units of time",),
        ("find the speed when a distance of {0} is covered in time {1}",),
    ),
    Op(
        "diagonal",
        "Diagonal of a rectangle from its two sides",
        ((_N, "Length"), (_N, "Width")),
        ("float", "The diagonal"),
        lambda a, b: math.sqrt(a**2 + b**2),
        (_ri(3, 60), _ri(3, 60)),
        lambda a, b: _pos(a, b),
        ("the diagonal of a rectangle with sides {0} and {1}",),
        ("find the diagonal of a rectangle with sides {0} and {1}",),
    ),
    Op(
        "triangle_area",
        "Area of a triangle from base and height",
        ((_N, "Base"), (_N, "Height")),
        (_N, "Area"),
        lambda a, b: a * b / 2,
        (_ri(2, 60), _ri(2, 60)),
        lambda a, b: _pos(a, b),
        ("the area of a triangle whose base is {0} and whose height is {1}",),
        ("find the area of a triangle with base {0} and height {1}",),
    ),
    Op(
        "rhombus_area",
        "Area of a rhombus from its two diagonals",
        ((_N, "First diagonal"), (_N, "Second diagonal")),
        (_N, "Area"),
        lambda a, b: a * b / 2,
        (_ri(2, 60), _ri(2, 60)),
        lambda a, b: _pos(a, b),
        ("the area of a rhombus whose diagonals are {0} and {1}",),
        ("find the area of a rhombus with diagonals {0} and {1}",),
    ),
    Op(
        "rectangle_perimeter",
        "Perimeter of a rectangle",
        ((_N, "Length"), (_N, "Width")),
        (_N, "Perimeter"),
        lambda a, b: 2 * (a + b),
        (_ri(2, 80), _ri(2, 80)),
        lambda a, b: _pos(a, b),
        ("the perimeter of a rectangle with length {0} and width {1}",),
        ("find the perimeter of a rectangle that is {0} long and {1} wide",),
    ),
    Op(
        "square_perimeter",
        "Perimeter of a square",
        ((_N, "Side length"),),
        (_N, "Perimeter"),
        lambda a: 4 * a,
        (_ri(2, 80),),
        _pos,
        ("the perimeter of a square with side {0}",),
        ("find the perimeter of a square whose side is {0}",),
    ),
    Op(
        "square_edge_by_perimeter",
        "Side of a square from its perimeter",
        ((_N, "Perimeter"),),
        (_N, "Side length"),
        lambda a: a / 4,
        (_ri(8, 400),),
        _pos,
        ("the side of a square whose perimeter is {0}",),
        ("find the side length of a square with perimeter {0}",),
    ),
    Op(
        "square_edge_by_area",
        "Side of a square from its area",
        ((_N, "Area"),),
        ("float", "Side length"),
        math.sqrt,
        (_SQUARE,),
        _pos,
        ("the side of a square whose area is {0}",),
        ("find the side length of a square with area {0}",),
    ),
    Op(
        "surface_cube",
        "Surface area of a cube",
        ((_N, "Side length"),),
        (_N, "Surface area"),
        lambda a: 6 * a**2,
        (_ri(2, 40),),
        _pos,
        ("the surface area of a cube with edge {0}",),
        ("find the surface area of a cube whose edge is {0}",),
    ),
    Op(
        "surface_sphere",
        "Surface area of a sphere",
        ((_N, "Radius"),),
        ("float", "Surface area"),
        lambda a: 4 * math.pi * a**2,
        (_ri(1, 30),),
        _pos,
        ("the surface area of a sphere of radius {0}",),
        ("find the surface area of a sphere with radius {0}",),
    ),
    Op(
        "volume_cone",
        "Volume of a cone",
        (("float", "Radius of the base"), ("float", "Height")),
        ("float", "Volume"),
        lambda a, b: math.pi * a**2 * b / 3,
        (_ri(1, 20), _ri(1, 30)),
        lambda a, b: _pos(a, b),
        ("the volume of a cone with base radius {0} and height {1}",),
        ("find the volume of a cone whose base radius is {0} and whose height is {1}",),
    ),
    Op(
        "volume_cylinder",
        "Volume of a cylinder",
        (("float", "Radius of the base"), ("float", "Height")),
        ("float", "Volume"),
        lambda a, b: math.pi * a**2 * b,
        (_ri(1, 20), _ri(1, 30)),
        lambda a, b: _pos(a, b),
        ("the volume of a cylinder with radius {0} and height {1}",),
        ("find the volume of a cylinder whose radius is {0} and whose height is {1}",),
    ),
    Op(
        "gcd",
        "Greatest common divisor of two integers",
        (("int", "The first integer"), ("int", "The second integer")),
        ("int", "The greatest common divisor"),
        lambda a, b: math.gcd(int(a), int(b)),
        (_ri(4, 120), _ri(4, 120)),
        lambda a, b: _isint(a) and _isint(b) and 0 < a and 0 < b,
        ("the greatest common divisor of {0} and {1}", "the highest common factor of {0} and {1}"),
        ("find the greatest common divisor of {0} and {1}",),
    ),
    Op(
        "factorial",
        "Factorial of a non-negative integer",
        (("int", "A non-negative integer"),),
        ("int", "The factorial"),
        lambda a: math.factorial(int(a)),
        (_ri(3, 8),),
        lambda a: _isint(a) and 0 <= a <= 9,
        ("the factorial of {0}",),
        ("compute the factorial of {0}",),
    ),
    Op(
        "choose",
        "Number of ways to choose k items from n",
        (("int", "n, the number of items"), ("int", "k, the number chosen")),
        ("int", "The binomial coefficient"),
        lambda n, k: math.comb(int(n), int(k)),
        (_ri(5, 16), _ri(2, 5)),
        lambda n, k: _isint(n) and _isint(k) and 0 <= k <= n <= 25,
        ("the number of ways to choose {1} items out of {0}",),
        ("count the ways to choose {1} items from {0}",),
    ),
    Op(
        "permutation",
        "Number of ordered arrangements of k items taken from n",
        (("int", "n, the number of items"), ("int", "k, the number arranged")),
        ("int", "The number of permutations"),
        lambda n, k: math.perm(int(n), int(k)),
        (_ri(5, 12), _ri(2, 4)),
        lambda n, k: _isint(n) and _isint(k) and 0 <= k <= n <= 20,
        ("the number of ordered arrangements of {1} items taken from {0}",),
        ("count the ordered arrangements of {1} items chosen from {0}",),
    ),
    Op(
        "circle_area",
        "Area of a circle",
        ((_N, "Radius"),),
        ("float", "Area"),
        lambda a: math.pi * a**2,
        (_ri(1, 40),),
        _pos,
        ("the area of a circle of radius {0}",),
        ("find the area of a circle with radius {0}",),
    ),
    Op(
        "circumference",
        "Circumference of a circle",
        ((_N, "Radius"),),
        ("float", "Circumference"),
        lambda a: 2 * math.pi * a,
        (_ri(1, 60),),
        _pos,
        ("the circumference of a circle of radius {0}",),
        ("find the circumference of a circle with radius {0}",),
    ),
    Op(
        "rectangle_area",
        "Area of a rectangle",
        ((_N, "Length"), (_N, "Width")),
        (_N, "Area"),
        lambda a, b: a * b,
        (_ri(2, 80), _ri(2, 80)),
        lambda a, b: _pos(a, b),
        ("the area of a rectangle with length {0} and width {1}",),
        ("find the area of a rectangle that is {0} long and {1} wide",),
    ),
    Op(
        "square_area",
        "Area of a square",
        ((_N, "Side length"),),
        (_N, "Area"),
        lambda a: a**2,
        (_ri(2, 60),),
        _pos,
        ("the area of a square with side {0}",),
        ("find the area of a square whose side is {0}",),
    ),
    Op(
        "volume_cube",
        "Volume of a cube",
        ((_N, "Side length"),),
        (_N, "Volume"),
        lambda a: a**3,
        (_ri(2, 30),),
        _pos,
        ("the volume of a cube with edge {0}",),
        ("find the volume of a cube whose edge is {0}",),
    ),
    Op(
        "volume_sphere",
        "Volume of a sphere",
        ((_N, "Radius"),),
        ("float", "Volume"),
        lambda a: 4 / 3 * math.pi * a**3,
        (_ri(1, 20),),
        _pos,
        ("the volume of a sphere of radius {0}",),
        ("find the volume of a sphere with radius {0}",),
    ),
    Op(
        "volume_rectangular_prism",
        "Volume of a rectangular box",
        ((_N, "Length"), (_N, "Width"), (_N, "Height")),
        (_N, "Volume"),
        lambda a, b, c: a * b * c,
        (_ri(2, 40), _ri(2, 30), _ri(2, 20)),
        lambda a, b, c: _pos(a, b, c),
        ("the volume of a box measuring {0} by {1} by {2}",),
        ("find the volume of a box that is {0} by {1} by {2}",),
    ),
    Op(
        "surface_cylinder",
        "Total surface area of a cylinder",
        (("float", "Radius"), ("float", "Height")),
        ("float", "Surface area"),
        lambda a, b: 2 * math.pi * a * (a + b),
        (_ri(1, 20), _ri(1, 30)),
        lambda a, b: _pos(a, b),
        ("the total surface area of a cylinder with radius {0} and height {1}",),
        ("find the total surface area of a cylinder whose radius is {0} and whose height is {1}",),
    ),
    Op(
        "triangle_perimeter",
        "Perimeter of a triangle from its three sides",
        ((_N, "First side"), (_N, "Second side"), (_N, "Third side")),
        (_N, "Perimeter"),
        lambda a, b, c: a + b + c,
        (_ri(3, 40), _ri(3, 40), _ri(3, 40)),
        lambda a, b, c: _pos(a, b, c) and a + b > c and a + c > b and b + c > a,
        ("the perimeter of a triangle with sides {0}, {1} and {2}",),
        ("find the perimeter of a triangle whose sides are {0}, {1} and {2}",),
    ),
    Op(
        "percent",
        "A given percentage of a number",
        ((_N, "The percentage"), (_N, "The number")),
        (_N, "The share"),
        lambda p, x: p * x / 100,
        (_pick(5, 10, 12, 15, 20, 25, 30, 40, 50, 60, 75, 80), _ri(20, 1000)),
        _ALL,
        ("{0} percent of {1}", "the share of {1} that is {0} percent"),
        ("take {0} percent of {1}",),
        weight=2,
    ),
)
OPS_BY_NAME = {op.name: op for op in OPS}


def tool_specs() -> list[dict[str, Any]]:
    """The v2 catalog entry of every tool the generator knows (all built-in MathQA tools)."""
    return [op.spec() for op in OPS]


# --- sampling --------------------------------------------------------------------------------------


@dataclass
class _Call:
    op: Op
    args: list[Any]  # literal numbers or ("ref", k) for the output of call k (0-based); list ops: one list
    value: Num = 0


def _resolve_local(arg: Any, calls: list[_Call]) -> Any:
    if isinstance(arg, tuple):
        return calls[arg[1]].value
    if isinstance(arg, list):
        return [_resolve_local(a, calls) for a in arg]
    return arg


def _moderate(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) <= MAX_ABS


def _sample_call(rng: random.Random, calls: list[_Call], refs: list[int]) -> _Call | None:
    """A call taking ``refs`` (earlier call indices) as arguments, or None if no valid one was found."""
    weights = [op.weight for op in OPS]
    for _ in range(40):
        op = rng.choices(OPS, weights)[0]
        if op.arity == _LIST:
            items: list[Any] = [("ref", k) for k in refs]
            items += [op.lits[0](rng) for _ in range(rng.randint(0 if len(items) >= 2 else 1, 2))]
            rng.shuffle(items)
            layouts = [[items]]
        else:
            if len(refs) > op.arity:
                continue
            positions = rng.sample(range(op.arity), len(refs))
            layouts = []
            for _ in range(8):
                args: list[Any] = [op.lits[i](rng) for i in range(op.arity)]
                for pos, k in zip(positions, refs, strict=True):
                    args[pos] = ("ref", k)
                layouts.append(args)
        for args in layouts:
            values = [_resolve_local(a, calls) for a in args]
            try:
                if not op.ok(*values):
                    continue
                value = op.fn(*values)
            except (ArithmeticError, ValueError, TypeError):
                continue
            if _moderate(value):
                return _Call(op, args, value)
    return None


def _sample_dag(rng: random.Random, n_calls: int, fan_in: int) -> list[_Call] | None:
    calls: list[_Call] = []
    consumed: set[int] = set()
    for i in range(n_calls):
        if i == 0:
            refs: list[int] = []
        else:
            pending = [k for k in range(i) if k not in consumed]
            rng.shuffle(pending)
            done = [k for k in range(i) if k in consumed]
            rng.shuffle(done)
            later = n_calls - i - 1  # calls after this one
            # each later call but the last can clear fan_in - 1 outputs net (it adds its own), the last
            # fan_in: take enough pending outputs now that every output still gets consumed
            need = max(0, len(pending) - later * (fan_in - 1)) if later else len(pending)
            if need > fan_in:
                return None
            count = rng.randint(max(1, need), max(1, need, min(fan_in, i)))
            lo = max(need, count - len(done))
            take = rng.randint(lo, min(count, len(pending)))
            refs = pending[:take] + done[: count - take]
            refs.sort()
        call = _sample_call(rng, calls, refs)
        if call is None:
            return None
        calls.append(call)
        consumed.update(refs)
    if any(k not in consumed for k in range(n_calls - 1)):
        return None
    return calls


def _refs_of(call: _Call) -> list[int]:
    out: list[int] = []
    for a in call.args:
        for b in a if isinstance(a, list) else [a]:
            if isinstance(b, tuple):
                out.append(b[1])
    return out


def _depth(calls: list[_Call]) -> int:
    depth: list[int] = []
    for c in calls:
        depth.append(1 + max((depth[k] for k in _refs_of(c)), default=0))
    return max(depth)


def _to_v2(calls: list[_Call]) -> list[dict[str, Any]]:
    def enc(a: Any) -> Any:
        if isinstance(a, tuple):
            return f"$var_{a[1] + 1}.result$"
        if isinstance(a, list):
            return [enc(b) for b in a]
        return a

    return [
        {
            "name": c.op.name,
            "label": f"$var_{i + 1}",
            "arguments": {f"arg_{j}": enc(a) for j, a in enumerate(c.args)},
        }
        for i, c in enumerate(calls)
    ]


# --- question text ---------------------------------------------------------------------------------

_NAMES = "ABCDEFGHJKMNPQRSTUVWXYZ"
_THE_RESULT = ("the result", "that result", "this value")
_ENDINGS = (
    "What is the final value?",
    "What number do you get?",
    "What is the final result?",
    "What is the answer?",
)


def _fmt(x: Num) -> str:
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() else repr(x)
    return str(x)


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def template_question(calls: list[dict[str, Any]], rng: random.Random) -> str:
    """Describe a v2 call sequence in words, in call order. A result used only by the next call is
    "the result"; any other result is given a letter name ("Let A be ...")."""
    label_idx = {c["label"].strip("$"): i for i, c in enumerate(calls)}
    consumers: dict[int, list[int]] = {i: [] for i in range(len(calls))}

    def ref_index(a: Any) -> int | None:
        if isinstance(a, str) and a.startswith("$") and a.endswith(".result$"):
            return label_idx[a[1 : -len(".result$")]]
        return None

    for i, c in enumerate(calls):
        for a in c["arguments"].values():
            for b in a if isinstance(a, list) else [a]:
                k = ref_index(b)
                if k is not None:
                    consumers[k].append(i)
    names: dict[int, str] = {}
    for i in range(len(calls) - 1):
        if consumers[i] != [i + 1]:
            names[i] = _NAMES[len(names) % len(_NAMES)]
    sentences: list[str] = []
    for i, c in enumerate(calls):
        op = OPS_BY_NAME[c["name"]]
        the_result = rng.choice(_THE_RESULT)

        def phrase(a: Any, i: int = i, the_result: str = the_result) -> str:
            if isinstance(a, list):
                return _join([phrase(b) for b in a])
            k = ref_index(a)
            if k is None:
                return _fmt(a)
            return names.get(k) or the_result

        args = [phrase(a) for a in c["arguments"].values()]
        last = i == len(calls) - 1
        if i in names:
            text = f"Let {names[i]} be {rng.choice(op.nouns).format(*args)}."
        elif last and rng.random() < 0.4:
            text = f"What is {rng.choice(op.nouns).format(*args)}?"
            sentences.append(text)
            break
        else:
            verb = rng.choice(op.verbs + tuple(f"{v} {n}" for v in ("compute", "find") for n in op.nouns[:1]))
            verb = verb.format(*args)
            if i == 0:
                text = verb[0].upper() + verb[1:] + "."
            elif last:
                text = f"{rng.choice(('Finally,', 'Lastly,', 'Then'))} {verb}."
            else:
                text = f"{rng.choice(('Then', 'Next,', 'After that,'))} {verb}."
        sentences.append(text)
        if last:
            sentences.append(rng.choice(_ENDINGS))
    return " ".join(sentences)


def _call_writer(writer: Callable[..., Any], calls: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    out = writer(calls, tools)
    if inspect.isawaitable(out):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            out = asyncio.run(_await(out))
        else:  # called from inside a running loop: finish the coroutine on a helper thread
            box: dict[str, Any] = {}

            def runner() -> None:
                try:
                    box["v"] = asyncio.run(_await(out))
                except BaseException as exc:  # noqa: BLE001 - re-raised below
                    box["e"] = exc

            t = threading.Thread(target=runner)
            t.start()
            t.join()
            if "e" in box:
                raise box["e"]
            out = box["v"]
    if not isinstance(out, str) or not out.strip():
        raise ValueError("question_writer must return a non-empty string")
    return out.strip()


async def _await(aw: Any) -> Any:
    return await aw


# --- public API ------------------------------------------------------------------------------------


def generate_tasks(
    n: int,
    seed: int,
    *,
    min_calls: int = 2,
    max_calls: int = 6,
    fan_in: int = 2,
    distractors: int = 3,
    question_writer: Callable[..., Any] | None = None,
    executor: NestedExecutor | None = None,
) -> list[dict[str, Any]]:
    """``n`` v2-schema rows, deterministic for ``seed``.

    ``min_calls``/``max_calls``: sequence length range (uniform); ``fan_in``: most earlier outputs one
    call may take; ``distractors``: unused tools added to each row's catalog; ``question_writer``:
    sync or async ``(calls, tools) -> str`` replacing the templates (determinism is then up to it);
    ``executor``: the :class:`NestedExecutor` computing gold answers (default: a fresh one over the
    built-in tools, closed afterwards).
    """
    if not 1 <= min_calls <= max_calls:
        raise ValueError("need 1 <= min_calls <= max_calls")
    if fan_in < 1:
        raise ValueError("fan_in must be >= 1")
    if not 0 <= distractors <= len(OPS) - 1:
        raise ValueError(f"distractors must be between 0 and {len(OPS) - 1}")
    own = executor is None
    ex = executor or NestedExecutor(fresh_per_sequence=False)  # MathQA tools keep no state
    rows: list[dict[str, Any]] = []
    try:
        for i in range(n):
            rows.append(_one_task(i, seed, min_calls, max_calls, fan_in, distractors, question_writer, ex))
    finally:
        if own:
            ex.close()
    return rows


def _one_task(
    i: int,
    seed: int,
    min_calls: int,
    max_calls: int,
    fan_in: int,
    distractors: int,
    question_writer: Callable[..., Any] | None,
    ex: NestedExecutor,
) -> dict[str, Any]:
    for attempt in range(1000):
        rng = random.Random(f"callbench-nested/{seed}/{i}/{attempt}")
        n_calls = rng.randint(min_calls, max_calls)
        calls = _sample_dag(rng, n_calls, fan_in)
        if calls is None:
            continue
        output = _to_v2(calls)
        used = list(dict.fromkeys(c.op.name for c in calls))
        spare = [op.name for op in OPS if op.name not in used]
        catalog_names = used + rng.sample(spare, min(distractors, len(spare)))
        rng.shuffle(catalog_names)
        tools = [OPS_BY_NAME[name].spec() for name in catalog_names]
        result = ex.run(
            [ToolCall.model_validate(c) for c in output], [ToolSpec.model_validate(t) for t in tools]
        )
        if not result.ok or not all(_moderate(c.output.get("result")) for c in result.calls):
            continue
        question = (
            _call_writer(question_writer, output, tools)
            if question_writer
            else template_question(output, rng)
        )
        return {
            "sample_id": f"gen-{seed}-{i:04d}",
            "input": question,
            "output": output,
            "tools": tools,
            "gold_answer": result.final,
            "domain": "math",
            "metadata": {"generator": "callbench", "seed": seed, "n_calls": n_calls, "depth": _depth(calls)},
        }
    raise RuntimeError(f"could not generate task {i} for seed {seed} with these settings")


def write_jsonl(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """One JSON object per line (UTF-8, keys in insertion order); parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":  # regenerate the committed set
    print(write_jsonl(generate_tasks(400, seed=0), COMMITTED))
