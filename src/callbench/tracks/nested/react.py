"""ReAct for the nested track: one call per model turn, executed at once, its output fed back.

Format. Each model turn is one line ``Action: <JSON object>``; the object is either a call
``{"name": ..., "label": "$var_k", "arguments": {...}}`` (references ``"$var_j.key$"`` to earlier
labels allowed; a missing label becomes ``$var_<n+1>``) or a finish action ``{"finish": <answer>}``
whose answer is normally a label reference (``"$var_k.result$"``). ``Finish: <answer>`` is accepted
too, as is a bare JSON object (chat models that drop the marker). Callbench answers with
``Observation: <label> = <output>`` or ``Observation: Error: ...``; text a model writes after its
action (a hallucinated ``Observation:``) is cut off and never read.

Execution. The calls that succeeded so far are the episode's sequence; each new call is executed by
re-running that sequence plus the new call in the sandboxed :class:`NestedExecutor` (fresh sandbox,
deterministic, exactly what ``evaluate`` re-runs later) and taking the last call's outcome. A call
that fails is reported back and *not* recorded, so a corrected retry leaves an executable sequence.
Tasks whose tools cannot run offline are not executed: well-formed calls are recorded unexecuted.
The loop itself (turns, execution, budgets) is :func:`~callbench.tracks.nested.agent_loop.run_episode`,
shared with tool calling; :class:`ReActTurns` is the part that reads and answers ReAct turns.

Bounds. A turn is read with a direct answer's bounds (:mod:`~callbench.tracks.nested.parsing`): a
reply too long, nested too deep or holding a huge number is an invalid action with that reason. The
episode ends before a model turn that would start after the sample's deadline (its time budget).

Result. ``ModelOutput.text`` is the whole transcript (lone surrogates escaped, so it can be stored);
``extra["react"]`` holds ``calls`` (the recorded calls in order: what is scored), ``steps`` (model
turns), ``finished``, ``parse_failures``, ``last_invalid`` (the reason of the last invalid action),
``errors`` (calls or finishes refused), ``answer`` (the finish value), ``max_steps`` and
``timed_out``.

The ``gold`` backend plays along: every step's :class:`ModelInput` carries as ``reference`` the gold
action that comes next (gold call k, then a finish on the last gold label).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from callbench.models.base import ModelInput, ModelOutput
from callbench.tracks.nested.agent_loop import EpisodeRun, Executor, Turn, outputs_by_label, run_episode
from callbench.tracks.nested.executor import CallError, SequenceResult, final_value
from callbench.tracks.nested.parsing import DEFAULT_LIMITS, JSONBoundError, decode_at, find_json, scrub
from callbench.tracks.nested.prompting import PROMPT_VERSION, tools_json
from callbench.tracks.nested.references import ReferenceResolutionError, parse_reference, resolve
from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.templates import load_templates, templates_digest

REACT_FILES = ("react_system.md", "react_user.md", "react_example.md")
OBSERVATION_STOP = "\nObservation:"

_MARKER = re.compile(r"(?im)^[ \t>*`]*(action|finish)[ \t]*:[ \t]*")
_OBSERVATION = re.compile(r"\n[ \t]*observation[ \t]*:", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"\s*(?:```[A-Za-z0-9_-]*\s*)?")
_FORMAT_HINT = (
    'Reply with one line: Action: {"name": "<function>", "label": "$var_<k>", "arguments": {...}} '
    'to call a function, or Action: {"finish": "$var_<k>.result$"} to give the answer.'
)


# -- prompts


@lru_cache(maxsize=4)
def react_templates(version: str = PROMPT_VERSION) -> dict[str, str]:
    return load_templates("callbench.tracks.nested.prompts", version, REACT_FILES)


def react_templates_hash(version: str = PROMPT_VERSION) -> str:
    return templates_digest(react_templates(version))


def gold_actions(task: NestedTask) -> list[str]:
    """The gold episode as action JSON texts: each gold call, then the finish on the last label."""
    actions = [
        json.dumps({"name": c.name, "label": c.raw_label or c.label, "arguments": c.arguments}, ensure_ascii=False)
        for c in task.output
    ]
    last = task.output[-1].raw_label or task.output[-1].label
    answer = f"${last.strip('$')}$" if last else None
    actions.append(json.dumps({"finish": answer}, ensure_ascii=False))
    return actions


def build_react_prompt(task: NestedTask, examples: list[NestedTask]) -> tuple[str, str]:
    """(system, user) texts of a ReAct episode."""
    t = react_templates()
    ex = "".join(
        t["react_example.md"].format(question=e.input, actions="\n".join(f"Action: {a}" for a in gold_actions(e)))
        for e in examples
    )
    user = t["react_user.md"].strip().format(tools=tools_json(task), examples=ex, question=task.input)
    return t["react_system.md"].strip(), user


# -- parsing one turn


@dataclass
class Step:
    kind: str  # "call", "finish" or "invalid"
    kept: str  # the model's text as it stays in the conversation
    call: dict[str, Any] | None = None
    answer: Any = None
    reason: str | None = None


def _decode_at(text: str, pos: int) -> tuple[Any, int] | None:
    """The JSON value at ``pos`` (after an optional code fence), bounded like a direct answer."""
    pos = _FENCE_OPEN.match(text, pos).end()
    try:
        return decode_at(text, pos)
    except json.JSONDecodeError:
        return None


def parse_step(text: str) -> Step:
    """One model turn: a call, a finish, or an invalid action (with the reason)."""
    if len(text) > DEFAULT_LIMITS.max_chars:
        return Step("invalid", "", reason=f"the reply has {len(text):,} characters (at most {DEFAULT_LIMITS.max_chars:,})")
    try:
        return _parse_step(text)
    except JSONBoundError as exc:
        body = _OBSERVATION.split(text, maxsplit=1)[0]
        return Step("invalid", body.strip()[:1000], reason=str(exc))


def _parse_step(text: str) -> Step:
    body = _OBSERVATION.split(text, maxsplit=1)[0]
    if not body.strip():
        return Step("invalid", "", reason="empty reply")
    marker = _MARKER.search(body)
    kind = marker.group(1).lower() if marker else "action"
    pos = marker.end() if marker else 0
    found = _decode_at(body, pos) if marker else None
    if found is None and kind == "finish":  # Finish: <plain text answer>
        line = body[pos:].splitlines()[0].strip() if body[pos:].strip() else ""
        if not line:
            return Step("invalid", body.strip(), reason="'Finish:' without an answer")
        return Step("finish", body[: pos + len(body[pos:].split("\n", 1)[0])].strip(), answer=line)
    if found is None:
        found = find_json(body, pos)
    if found is None:
        return Step("invalid", body.strip()[:1000], reason="no JSON object found")
    value, end = found
    kept = body[:end].strip()
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if kind == "finish":
        answer = value["finish"] if isinstance(value, dict) and "finish" in value else value
        return Step("finish", kept, answer=answer)
    if isinstance(value, list):
        return Step("invalid", kept, reason=f"one call per step, got a list of {len(value)}")
    if not isinstance(value, dict):
        return Step("invalid", kept, reason=f"expected a JSON object, got {type(value).__name__}")
    if "finish" in value:
        return Step("finish", kept, answer=value["finish"])
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return Step("invalid", kept, reason='the object has no "name" (or "finish")')
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return Step("invalid", kept, reason='"arguments" must be an object')
    label = value.get("label")
    if label is not None and not isinstance(label, str):
        return Step("invalid", kept, reason='"label" must be a string such as "$var_1"')
    return Step("call", kept, call={"name": name, "label": label, "arguments": arguments})


# -- the loop


def _with_stop(config: Any) -> Any:
    if dataclasses.is_dataclass(config) and hasattr(config, "stop"):
        stop = tuple(config.stop or ())
        return dataclasses.replace(config, stop=stop if OBSERVATION_STOP in stop else (*stop, OBSERVATION_STOP))
    return config


class ReActTurns:
    """ReAct's :class:`~callbench.tracks.nested.agent_loop.TurnFormat`: one ``Action:`` read from
    each turn's text, answered with an ``Observation:`` (an invalid action gets the format hint)."""

    key = "react"

    def __init__(self, task: NestedTask, examples: list[NestedTask], sample_id: str, chat: bool):
        system, user = build_react_prompt(task, examples)
        self.base_prompt = f"{system}\n\n{user}\n"
        self.messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.sample_id = sample_id
        self.chat = chat
        self.mode = "chat" if chat else "completion"
        self.history = ""  # completion transcript: exactly what the model saw and wrote
        self.last_invalid: str | None = None

    def request(self, step: int, reference: str) -> ModelInput:
        return ModelInput(
            sample_id=self.sample_id,
            prompt=self.base_prompt + self.history + "Action: ",
            messages=[dict(m) for m in self.messages],
            reference=reference,
            metadata={"react_step": step},
        )

    def read_turn(self, out: ModelOutput, step: int, run: EpisodeRun) -> Turn:
        parsed = parse_step(out.text)
        parsed.kept = scrub(parsed.kept)  # it goes back to the model and into the stored transcript
        if self.chat:
            shown = parsed.kept if _MARKER.match(parsed.kept) else f"Action: {parsed.kept}"
        else:
            shown = f"Action: {parsed.kept}"
        if parsed.kind == "invalid":
            self.last_invalid = parsed.reason
            observation = scrub(f"Invalid action ({parsed.reason}). {_FORMAT_HINT}")
        elif parsed.kind == "finish":
            observation = run.episode.check_finish(parsed.answer)
            if observation is None:
                run.transcript.append(shown + "\n")
                return Turn(finished=True, answer=parsed.answer)
        else:
            observation = run.episode.call(parsed.call)  # type: ignore[arg-type]
        run.transcript.append(f"{shown}\nObservation: {observation}\n")
        self.history += f"Action: {parsed.kept}\nObservation: {observation}\n"
        self.messages.append({"role": "assistant", "content": parsed.kept or scrub(out.text.strip())})
        self.messages.append({"role": "user", "content": f"Observation: {observation}"})
        return Turn(parse_failure=parsed.kind == "invalid")

    def record(self, run: EpisodeRun) -> dict[str, Any]:
        return {
            "calls": run.episode.calls,
            "steps": run.steps,
            "finished": run.finished,
            "parse_failures": run.parse_failures,
            "last_invalid": self.last_invalid,
            "errors": run.episode.errors,
            "answer": run.answer,
            "max_steps": run.max_steps,
            "timed_out": run.timed_out,
        }


async def react_interact(
    task: NestedTask,
    examples: list[NestedTask],
    model: Any,
    config: Any,
    *,
    max_steps: int = 8,
    execute: Executor | None = None,
    sample_id: str | None = None,
    deadline: float | None = None,
) -> ModelOutput:
    """Run one ReAct episode of ``task`` with ``model``; ``execute`` runs a call sequence (None: the
    task's tools cannot run here, calls are recorded unexecuted). ``deadline`` (``time.monotonic()``)
    ends the episode before a model turn that would start after it (``timed_out`` in the record)."""
    chat = getattr(model, "mode", "completion") == "chat"
    turns = ReActTurns(task, examples, sample_id or task.id, chat)
    return await run_episode(
        turns, task, gold_actions(task), model, _with_stop(config), max_steps=max_steps, execute=execute, deadline=deadline
    )


# -- evaluation helpers used by NestedTrack.evaluate


#: ``ModelOutput.extra`` keys under which a multi-turn episode records its calls: ``react`` (this
#: module) and ``tools`` (native tool calls, :mod:`callbench.tracks.nested.tools_mode`).
EPISODE_KEYS = ("react", "tools")


def episode_record(output: ModelOutput) -> dict[str, Any] | None:
    """The record of the multi-turn episode that produced ``output`` (None: a one-shot answer)."""
    for key in EPISODE_KEYS:
        record = (output.extra or {}).get(key)
        if isinstance(record, dict) and isinstance(record.get("calls"), list):
            return record
    return None


def is_episode_output(output: ModelOutput) -> bool:
    """True when ``output`` is a ReAct or tool-calling episode (its calls are recorded, not parsed)."""
    return episode_record(output) is not None


def recorded_calls(output: ModelOutput) -> list[dict] | None:
    """The calls an episode recorded (None: not an episode, or no turn ever parsed)."""
    record = episode_record(output)
    if record is None:
        return None
    calls = record["calls"]
    if not calls and record.get("steps", 0) and record.get("parse_failures", 0) >= record["steps"]:
        return None  # the model never wrote a parsable action (or tool call): a parse error
    return calls


def final_answer(output: ModelOutput, result: SequenceResult) -> Any:
    """The predicted answer: the value a ReAct finish references (``$var_k.result$``), resolved
    against the executed calls; else (direct and tools modes, literal or no finish) the last call's
    output."""
    react = (output.extra or {}).get("react")
    answer = react.get("answer") if isinstance(react, dict) else None
    if not isinstance(answer, str) or parse_reference(answer) is None:
        return result.final
    try:
        value = resolve(answer, outputs_by_label(result))
    except ReferenceResolutionError as exc:
        return CallError(f"{type(exc).__name__}: {exc}")
    return value if isinstance(value, CallError) else final_value(value)


__all__ = [
    "EPISODE_KEYS",
    "ReActTurns",
    "Step",
    "build_react_prompt",
    "episode_record",
    "final_answer",
    "gold_actions",
    "is_episode_output",
    "parse_step",
    "react_interact",
    "react_templates",
    "react_templates_hash",
    "recorded_calls",
]
