"""Execute a nested call sequence in the Python sandbox.

Each call's references are resolved against earlier outputs in the harness, then the call runs in
the sandbox process. A failed call stores a :class:`CallError` under its label; later calls that
reference it fail explicitly too. By the published convention the final answer is the last call's
output: v2 ``gold_answer`` equals the last call's single output field (``result`` for math,
``output_0`` for code), so that field is unwrapped; the v1 ``var_result`` pseudo-call returns its
resolved arguments.

``var_result`` runs in the harness, not in a tool, so it must not be a way to state the answer: in
the published v1 data it is always the last call and every argument is a whole reference to an
earlier output (``{"flights": "$var3$", "hotels": "$var5$"}``). Only that form is run; a literal, or
a reference embedded in text, fails the call (:func:`final_call_problem`).

Bounds: resolved arguments and tool outputs are at most ``max_value_chars`` as JSON and
``max_value_depth`` deep (:mod:`~callbench.tracks.nested.references`), and a sequence stops at its
``deadline`` (the sample's time budget): the call that would start after it fails with a
``TimeoutError`` and the rest are not run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from callbench.sandbox.python import Limits, PythonSandbox
from callbench.tools import ToolModule, ToolSpec
from callbench.tracks.nested.references import (
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    ReferenceResolutionError,
    ValueTooLargeError,
    json_size,
    parse_reference,
    resolve,
)
from callbench.tracks.nested.schema import FINAL_CALL, ToolCall
from callbench.tracks.nested.tools import builtin_tools
from callbench.tracks.nested.tools.library import CodeLibrary


class CallError:
    """A failed call's value. Never equal to anything but the same error: in particular not to a
    gold ``0``, ``False`` or ``None``, so a crash can never score as a correct answer."""

    is_call_error = True
    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallError) and other.message == self.message

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("CallError", self.message))

    def __repr__(self) -> str:
        return f"CallError({self.message!r})"

    def to_json(self) -> dict[str, str]:
        return {"__error__": self.message}


@dataclass
class CallOutcome:
    label: str | None
    name: str
    arguments: dict[str, Any] | None  # resolved; None when resolution failed
    output: Any  # dict of output fields, or CallError

    @property
    def ok(self) -> bool:
        return not isinstance(self.output, CallError)


@dataclass
class SequenceResult:
    calls: list[CallOutcome] = field(default_factory=list)
    final: Any = None
    timed_out: bool = False  # the deadline passed before every call had run

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.calls)


def final_call_problem(arguments: dict[str, Any]) -> str | None:
    """Why a ``var_result`` call cannot run (one line), or None: it only gathers earlier outputs,
    each argument a whole reference (see the module docstring)."""
    if not arguments:
        return f"{FINAL_CALL} gathers earlier outputs: give it at least one reference such as \"$var_1.result$\""
    for key, value in arguments.items():
        if not (isinstance(value, str) and parse_reference(value) is not None):
            return (
                f"{FINAL_CALL} only gathers earlier outputs: argument '{key}' must be exactly one reference "
                f"such as \"$var_1.result$\", not a value or text"
            )
    return None


def final_value(output: Any) -> Any:
    """The answer carried by one call's output (single ``result``/``output_0`` field unwrapped)."""
    if isinstance(output, dict) and len(output) == 1:
        ((key, value),) = output.items()
        if key in ("result", "output_0"):
            return value
    return output


def answers_match(predicted: Any, gold: Any, rel_tol: float = 1e-6) -> bool:
    """Equality with a relative tolerance for numbers, recursively; a CallError never matches."""
    if isinstance(predicted, CallError) or isinstance(gold, CallError):
        return False
    if isinstance(predicted, bool) or isinstance(gold, bool):
        return predicted is gold
    if isinstance(predicted, (int, float)) and isinstance(gold, (int, float)):
        try:
            return math.isclose(predicted, gold, rel_tol=rel_tol, abs_tol=1e-12)
        except OverflowError:  # an int past the float range: only exact equality
            return predicted == gold
    if isinstance(predicted, (list, tuple)) and isinstance(gold, (list, tuple)):
        return len(predicted) == len(gold) and all(
            answers_match(p, g, rel_tol) for p, g in zip(predicted, gold, strict=True)
        )
    if isinstance(predicted, dict) and isinstance(gold, dict):
        return predicted.keys() == gold.keys() and all(
            answers_match(predicted[k], gold[k], rel_tol) for k in gold
        )
    return predicted == gold


def _sandbox(modules: list[ToolModule], limits: Limits | None) -> PythonSandbox:
    # Each evaluation thread builds its own executor; PythonSandbox() parses the tool sources
    # (boundary.View.of_sources), through callbench.pyast, which threads may call at once.
    return PythonSandbox(modules, limits)


def run_calls(
    calls: list[ToolCall], one: Callable[[ToolCall, dict[str, Any]], CallOutcome], deadline: float | None
) -> SequenceResult:
    """Run ``calls`` in order with ``one(call, env)`` (``env``: each label's output so far);
    ``deadline`` (``time.monotonic()``) stops the sequence before a call that would start after it.
    The loop every executor shares (built-in tools, a spec's mock)."""
    env: dict[str, Any] = {}
    result = SequenceResult()
    for i, call in enumerate(calls, 1):
        if deadline is not None and time.monotonic() >= deadline:
            message = f"TimeoutError: the sample's time budget ran out before call {i} of {len(calls)}"
            result.calls.append(CallOutcome(call.label, call.name, None, CallError(message)))
            result.timed_out = True
            break
        outcome = one(call, env)
        if call.label:
            env[call.label] = outcome.output
        result.calls.append(outcome)
    if result.calls:
        last = result.calls[-1].output
        result.final = last if isinstance(last, CallError) else final_value(last)
    return result


class NestedExecutor:
    """Runs sequences against ``modules`` (default: the built-in MathQA tools)."""

    def __init__(
        self,
        modules: list[ToolModule] | None = None,
        limits: Limits | None = None,
        *,
        fresh_per_sequence: bool = True,
        max_value_chars: int = MAX_VALUE_CHARS,
        max_value_depth: int = MAX_VALUE_DEPTH,
        library: CodeLibrary | None = None,
    ):
        self.modules = builtin_tools() if modules is None else modules
        self.limits = limits
        # NESTFUL code-domain tools: a sequence's sandbox also holds the files of the library tools
        # it calls (not the thousands of others); ``modules`` win a name both have.
        self.library = library
        self._own_names = {f for m in self.modules for f in m.functions}
        self._extra: tuple[str, ...] = ()
        self.sandbox = _sandbox(self.modules, limits)
        self.fresh_per_sequence = fresh_per_sequence
        self.max_value_chars = max_value_chars
        self.max_value_depth = max_value_depth

    def run(
        self, calls: list[ToolCall], tools: list[ToolSpec] | None = None, *, deadline: float | None = None
    ) -> SequenceResult:
        """Run ``calls`` in order; ``deadline`` (``time.monotonic()``) stops the sequence before a
        call that would start after it (a call already running is bounded by its own timeout)."""
        if self.fresh_per_sequence:
            self.sandbox.close()  # global state of one sequence's tools never leaks into the next
        if self.library is not None:
            extra = self.library.modules_for({c.name for c in calls} - self._own_names)
            paths = tuple(m.path for m in extra)
            if paths != self._extra:
                self.sandbox.close()
                self.sandbox = _sandbox([*extra, *self.modules], self.limits)
                self._extra = paths
        specs = {t.name: t for t in tools or []}
        return run_calls(calls, lambda call, env: self._one(call, env, specs), deadline)

    def _one(self, call: ToolCall, env: dict[str, Any], specs: dict[str, ToolSpec]) -> CallOutcome:
        if call.name == FINAL_CALL:
            problem = final_call_problem(call.arguments)
            if problem is not None:
                return CallOutcome(call.label, call.name, None, CallError(f"InvalidFinalCall: {problem}"))
        try:
            args = resolve(call.arguments, env, max_chars=self.max_value_chars, max_depth=self.max_value_depth)
        except ReferenceResolutionError as exc:
            return CallOutcome(call.label, call.name, None, CallError(f"{type(exc).__name__}: {exc}"))
        if call.name == FINAL_CALL:
            return CallOutcome(call.label, call.name, args, args)
        spec = specs.get(call.name)
        fields = list(spec.output_parameters) if spec and spec.output_parameters else None
        reply = self.sandbox.call(call.name, args, fields)
        if not reply.get("ok"):
            return CallOutcome(call.label, call.name, args, CallError(reply.get("error") or "unknown error"))
        output = reply["output"]
        try:
            json_size(output, self.max_value_chars, self.max_value_depth, f"the output of '{call.name}'")
        except ValueTooLargeError as exc:
            output = CallError(f"{type(exc).__name__}: {exc}")
        return CallOutcome(call.label, call.name, args, output)

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> NestedExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
