"""The multi-turn agent loop of the nested track, shared by ReAct and native tool calling.

An episode is a loop of model turns: ask the model (a :class:`ModelInput` carrying the next gold
action as ``reference``, for the ``gold`` backend), read its turn, execute the calls it makes
through one :class:`Episode` and feed the outcomes back, until the model finishes, ``max_steps``
turns were taken, or the sample's time budget ends before a turn (``timed_out``). The result is a
:class:`ModelOutput` whose text is the transcript and whose ``extra[<key>]`` is the episode record.

What differs between the two modes is a :class:`TurnFormat`: how a request is written
(:meth:`~TurnFormat.request`), how one model turn is read and its observations are fed back
(:meth:`~TurnFormat.read_turn`), and which fields the record holds (:meth:`~TurnFormat.record`).
ReAct (:mod:`~callbench.tracks.nested.react`) reads one ``Action:`` per turn from the text and
answers with an ``Observation:``; tool calling (:mod:`~callbench.tracks.nested.tools_mode`) reads
the server's tool calls and answers each with a ``role: tool`` message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from callbench.models.base import ModelInput, ModelOutput
from callbench.tracks.nested.executor import CallError, SequenceResult, final_call_problem
from callbench.tracks.nested.parsing import scrub
from callbench.tracks.nested.references import ReferenceResolutionError, find_references, resolve
from callbench.tracks.nested.schema import FINAL_CALL, NestedTask, ToolCall

MAX_OBSERVATION_CHARS = 2000

#: Runs a call sequence in the sandbox and returns every call's outcome (the last is the new call).
Executor = Callable[[list[ToolCall]], SequenceResult]


def past(deadline: float | None) -> bool:
    """Has the sample's time budget run out?"""
    return deadline is not None and time.monotonic() >= deadline


def total_known(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _show(value: Any) -> str:
    if isinstance(value, CallError):
        value = value.to_json()
    text = json.dumps(value, ensure_ascii=False, default=repr)
    text = text if len(text) <= MAX_OBSERVATION_CHARS else text[:MAX_OBSERVATION_CHARS] + " ...(truncated)"
    return scrub(text)


def outputs_by_label(result: SequenceResult | None) -> dict[str, Any]:
    """Label -> output of the executed calls of ``result`` (what a ``$var_k.key$`` reference reads)."""
    return {c.label: c.output for c in (result.calls if result else []) if c.label}


class Episode:
    """State of one multi-turn episode (ReAct or native tool calls): the recorded calls, the last
    execution result, and the count of calls refused. :meth:`call` returns the observation text."""

    def __init__(self, task: NestedTask, execute: Executor | None):
        self.task = task
        self.execute = execute
        self.calls: list[dict[str, Any]] = []
        self.tool_calls: list[ToolCall] = []
        self.result: SequenceResult | None = None
        self.errors = 0

    def _labels(self) -> set[str]:
        return {c.label for c in self.tool_calls if c.label}

    def call(self, call: dict[str, Any]) -> str:
        label = call["label"] or f"$var_{len(self.calls) + 1}"
        try:
            tc = ToolCall.model_validate({"name": call["name"], "label": label, "arguments": call["arguments"]})
        except ValidationError as exc:
            return self._refuse(f"invalid call ({exc.errors()[0]['msg']})")
        known = {t.name for t in self.task.tools}
        if known and tc.name not in known and tc.name != FINAL_CALL:
            return self._refuse(f"unknown function '{tc.name}' (available: {', '.join(sorted(known))})")
        if tc.name == FINAL_CALL and (problem := final_call_problem(tc.arguments)) is not None:
            return self._refuse(problem)
        if self.execute is None:
            missing = sorted({r.label for r in find_references(tc.arguments)} - self._labels())
            if missing:
                return self._refuse(f"unknown label(s) {', '.join(missing)}")
            self._record(call, label, tc)
            return scrub(f"{label} recorded (this function cannot be executed here; use its output as \"${label.strip('$')}.<output key>$\")")
        result = self.execute([*self.tool_calls, tc])
        outcome = result.calls[-1]
        if not outcome.ok:
            return self._refuse(outcome.output.message)
        self.result = result
        self._record(call, label, tc)
        return scrub(f"{label} = {_show(outcome.output)}")

    def _record(self, call: dict[str, Any], label: str, tc: ToolCall) -> None:
        self.calls.append({"name": call["name"], "label": label, "arguments": call["arguments"]})
        self.tool_calls.append(tc)

    def _refuse(self, message: str) -> str:
        self.errors += 1
        return scrub(f"Error: {message}. Nothing was recorded; correct the call and try again.")

    def check_finish(self, answer: Any) -> str | None:
        """None when the answer can be accepted, else the observation that refuses it."""
        refs = find_references(answer)
        if not refs:
            return None
        if self.execute is None:
            missing = sorted({r.label for r in refs} - self._labels())
            if missing:
                self.errors += 1
                return scrub(f"Error: cannot finish: unknown label(s) {', '.join(missing)}.")
            return None
        try:
            resolve(answer, outputs_by_label(self.result))
        except ReferenceResolutionError as exc:
            self.errors += 1
            return scrub(f"Error: cannot finish: {exc}.")
        return None


# -- the loop


@dataclass
class Turn:
    """How one model turn ended: the episode finished (with ``answer``), or it goes on; a turn
    from which no action could be read at all counts as a ``parse_failure``."""

    finished: bool = False
    answer: Any = None
    parse_failure: bool = False


@dataclass
class EpisodeRun:
    """What the loop tracks across the turns of one episode (a :class:`TurnFormat` reads and
    appends to it: ``transcript`` is the readable record, ``episode`` executes the calls)."""

    episode: Episode
    max_steps: int
    deadline: float | None
    transcript: list[str] = field(default_factory=list)
    steps: int = 0
    parse_failures: int = 0
    finished: bool = False
    timed_out: bool = False
    answer: Any = None
    prompt_tokens: list[int | None] = field(default_factory=list)
    completion_tokens: list[int | None] = field(default_factory=list)


class TurnFormat(Protocol):
    """The part of an agent loop that differs between ReAct and native tool calling."""

    #: the ``ModelOutput.extra`` key of the episode record (one of ``react.EPISODE_KEYS``)
    key: str
    #: the ``ModelOutput.mode`` of the episode ("chat" or "completion")
    mode: str

    def request(self, step: int, reference: str) -> ModelInput:
        """The model input of turn ``step`` (``reference``: the next gold action)."""
        ...

    def read_turn(self, out: ModelOutput, step: int, run: EpisodeRun) -> Turn:
        """Read the model's turn, run its calls through ``run.episode``, feed back the observations
        (to the conversation and ``run.transcript``) and say whether the episode finished."""
        ...

    def record(self, run: EpisodeRun) -> dict[str, Any]:
        """The episode record stored under ``extra[key]``."""
        ...


async def run_episode(
    turns: TurnFormat,
    task: NestedTask,
    gold: list[str],
    model: Any,
    config: Any,
    *,
    max_steps: int,
    execute: Executor | None,
    deadline: float | None,
) -> ModelOutput:
    """Run one episode of ``task`` in the format ``turns``. ``gold`` is the gold episode as the
    ``reference`` of each turn (the gold action that comes after the calls recorded so far);
    ``execute`` runs a call sequence (None: the task's tools cannot run here, calls are recorded
    unexecuted). ``deadline`` (``time.monotonic()``) ends the episode before a model turn that
    would start after it (``timed_out`` in the record)."""
    run = EpisodeRun(Episode(task, execute), max_steps, deadline)
    for step in range(max_steps):
        if past(deadline):
            run.timed_out = True
            break
        inp = turns.request(step, gold[min(len(run.episode.calls), len(gold) - 1)])
        out = await model.generate(inp, config)
        run.steps += 1
        run.prompt_tokens.append(out.prompt_tokens)
        run.completion_tokens.append(out.completion_tokens)
        turn = turns.read_turn(out, step, run)
        if turn.parse_failure:
            run.parse_failures += 1
        if turn.finished:
            run.finished, run.answer = True, turn.answer
            break
    return ModelOutput(
        text=scrub("".join(run.transcript)),
        mode=turns.mode,
        prompt_tokens=total_known(run.prompt_tokens),
        completion_tokens=total_known(run.completion_tokens),
        finish_reason="finish" if run.finished else "timeout" if run.timed_out else "max_steps",
        extra={turns.key: turns.record(run)},
    )


__all__ = [
    "Episode",
    "EpisodeRun",
    "Executor",
    "MAX_OBSERVATION_CHARS",
    "Turn",
    "TurnFormat",
    "outputs_by_label",
    "past",
    "run_episode",
    "total_known",
]
