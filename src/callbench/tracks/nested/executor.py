"""Execute a nested call sequence in the Python sandbox.

Each call's references are resolved against earlier outputs in the harness, then the call runs in
the sandbox process. A failed call stores a :class:`CallError` under its label; later calls that
reference it fail explicitly too. By the published convention the final answer is the last call's
output: v2 ``gold_answer`` equals the last call's single output field (``result`` for math,
``output_0`` for code), so that field is unwrapped; the v1 ``var_result`` pseudo-call returns its
resolved arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from callbench.sandbox.python import Limits, PythonSandbox
from callbench.tracks.nested.references import ReferenceResolutionError, resolve
from callbench.tracks.nested.schema import FINAL_CALL, ToolCall, ToolSpec
from callbench.tracks.nested.tools import ToolModule, builtin_tools


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

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.calls)


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
        return math.isclose(predicted, gold, rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(predicted, (list, tuple)) and isinstance(gold, (list, tuple)):
        return len(predicted) == len(gold) and all(
            answers_match(p, g, rel_tol) for p, g in zip(predicted, gold, strict=True)
        )
    if isinstance(predicted, dict) and isinstance(gold, dict):
        return predicted.keys() == gold.keys() and all(
            answers_match(predicted[k], gold[k], rel_tol) for k in gold
        )
    return predicted == gold


class NestedExecutor:
    """Runs sequences against ``modules`` (default: the built-in MathQA tools)."""

    def __init__(
        self,
        modules: list[ToolModule] | None = None,
        limits: Limits | None = None,
        *,
        fresh_per_sequence: bool = True,
    ):
        self.sandbox = PythonSandbox(builtin_tools() if modules is None else modules, limits)
        self.fresh_per_sequence = fresh_per_sequence

    def run(self, calls: list[ToolCall], tools: list[ToolSpec] | None = None) -> SequenceResult:
        if self.fresh_per_sequence:
            self.sandbox.close()  # global state of one sequence's tools never leaks into the next
        specs = {t.name: t for t in tools or []}
        env: dict[str, Any] = {}
        result = SequenceResult()
        for call in calls:
            try:
                args = resolve(call.arguments, env)
            except ReferenceResolutionError as exc:
                outcome = CallOutcome(call.label, call.name, None, CallError(f"{type(exc).__name__}: {exc}"))
            else:
                if call.name == FINAL_CALL:
                    outcome = CallOutcome(call.label, call.name, args, args)
                else:
                    spec = specs.get(call.name)
                    fields = list(spec.output_parameters) if spec and spec.output_parameters else None
                    reply = self.sandbox.call(call.name, args, fields)
                    out = (
                        reply["output"]
                        if reply.get("ok")
                        else CallError(reply.get("error") or "unknown error")
                    )
                    outcome = CallOutcome(call.label, call.name, args, out)
            if call.label:
                env[call.label] = outcome.output
            result.calls.append(outcome)
        if result.calls:
            last = result.calls[-1].output
            result.final = last if isinstance(last, CallError) else final_value(last)
        return result

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> NestedExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
