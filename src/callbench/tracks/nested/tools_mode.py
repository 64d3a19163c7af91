"""Native tool calling for the nested track (``callbench run nested --mode tools``).

Instead of writing calls as text, the model uses its server's tool-calling API; the executed calls
are then scored exactly like a direct answer.

Catalog. Each catalog tool becomes an OpenAI "function" tool. Its parameter schema is a JSON
Schema object built from the tool spec: loose catalog types (``"int or float"``, ``"list of
float"``) are read by :func:`callbench.constrain.nested_grammar.param_kinds` and mapped to JSON
Schema types. Every typed parameter also admits ``"string"``, because a reference to an earlier
output is a string. The tool description names the output keys, since references need them. Names
that the OpenAI API refuses (anything outside ``[A-Za-z0-9_-]``, or longer than 64 characters,
such as SGD's ``Hotels.SearchHotel``) are sent sanitised and mapped back to the catalog name when
the call is recorded.

Loop. Each turn is one request with ``tools=`` and ``tool_choice="auto"``. Every tool call in the
answer runs in order (parallel calls included) in the sandboxed executor, through the same
:class:`~callbench.tracks.nested.agent_loop.Episode` that ReAct uses (the loop is
:func:`~callbench.tracks.nested.agent_loop.run_episode`, shared with ReAct; :class:`ToolCallTurns`
reads and answers the tool calls). A call that succeeds gets the next
label ``$var_N``, and its ``role: tool`` message reads ``$var_N = <output JSON>``. A call that
fails (an error in the tool, an unknown function, an unknown label) gets an error message, is not
recorded and uses no label. The system prompt explains that a later argument may be the string
``"$var_N.<output key>$"``, which the executor replaces with that output. Arguments that are not a
JSON object (bad JSON from the server) are answered with an error message and counted in
``malformed_arguments``; they never crash the run. The episode ends when the model answers without
tool calls (its text is the ``answer``), or after ``max_steps`` model turns. Tasks whose tools
cannot run offline are not executed: well-formed calls are recorded with a note instead of an
output.

Result. ``ModelOutput.text`` is a readable transcript. ``extra["tools"]`` holds ``calls`` (the
recorded calls as ``{"name", "label", "arguments"}``, with the arguments as the model wrote them:
this list is the prediction that is scored), ``steps``, ``finished``, ``answer``, ``errors`` (calls
refused), ``malformed_arguments``, ``parse_failures`` (turns whose every tool call was malformed),
``max_steps``, ``timed_out`` (the sample's time budget ended the episode) and ``messages``, the
assistant and tool turns as they were sent, for audit. Argument strings are read with a direct
answer's bounds (length, depth, number length: :func:`bounded_arguments`). All
metrics are computed as in direct mode, and ``win_rate`` compares the last recorded call's output.

Gold. The ``gold`` backend plays along: each turn's ``ModelInput.reference`` is a JSON assistant
message holding the next gold call as a tool call, then a final answer without tool calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from callbench.constrain.nested_grammar import param_kinds
from callbench.models.base import ModelInput, ModelOutput, require_tools
from callbench.models.tool_calls import call_line, parse_arguments, record_assistant_turn, used_call_ids
from callbench.tools import ToolSpec
from callbench.tracks.nested.agent_loop import EpisodeRun, Executor, Turn, past, run_episode
from callbench.tracks.nested.parsing import DEFAULT_LIMITS, JSONBoundError, loads, scrub, too_deep
from callbench.tracks.nested.schema import NestedTask

TOOLS_SCHEMA_VERSION = "1"  # bump when the tool schemas or the messages sent change

TOOLS_SYSTEM = (
    "You compose functions step by step with the tools you are given. Call tools to compute the answer "
    "to the user's question; independent calls may go in the same turn. Each call that succeeds gets a "
    "label: the first is $var_1, the next $var_2, and so on, and its result reads \"$var_N = <output as "
    "JSON>\". To pass an output of an earlier call as an argument, write the string "
    "\"$var_N.<output key>$\", for example \"$var_1.result$\"; it is replaced by that value before the "
    "call runs. A call that fails returns an error, gets no label and does not count: correct it and "
    "call again. When the last call has computed the answer, reply with a short final answer and no "
    "tool call."
)
TOOLS_EXAMPLE = "Example question: {question}\nExample calls, in order:\n{calls}\n\n"
TOOLS_USER = "{examples}Question: {question}"
MALFORMED = "Error: {problem}. Nothing was recorded; call the tool again with a JSON object of arguments."

_JSON_TYPES = {"int": "integer", "num": "number", "str": "string", "bool": "boolean", "list": "array", "dict": "object"}
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def tools_prompt_hash() -> str:
    """Digest of everything this mode sends besides the task (part of a run's fingerprint)."""
    text = "\0".join((TOOLS_SCHEMA_VERSION, TOOLS_SYSTEM, TOOLS_EXAMPLE, TOOLS_USER, MALFORMED))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- the catalog as OpenAI tools


def parameter_schema(spec: Any) -> dict[str, Any]:
    """JSON Schema of one catalog parameter; a typed parameter also takes a reference string."""
    schema: dict[str, Any] = {}
    kinds = param_kinds(spec)
    description = spec.get("description") if isinstance(spec, dict) else None
    if "any" not in kinds:
        types = sorted({_JSON_TYPES[k] for k in kinds} | {"string"})
        schema["type"] = types[0] if len(types) == 1 else types
    elif isinstance(spec, dict) and isinstance(spec.get("type"), str) and spec["type"].strip():
        description = f"{description or ''} (type: {spec['type'].strip()})".strip()
    if isinstance(description, str) and description:
        schema["description"] = description
    return schema


def _output_note(tool: ToolSpec) -> str:
    if not tool.output_parameters:
        return ""
    keys = []
    for key, spec in tool.output_parameters.items():
        desc = spec.get("description") if isinstance(spec, dict) else None
        keys.append(f"{key} ({desc})" if desc else key)
    return "Output keys: " + ", ".join(keys) + "."


def sent_names(task: NestedTask) -> dict[str, str]:
    """Catalog name -> the name sent to the server (sanitised, unique, at most 64 characters)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for tool in task.tools:
        if tool.name in out:  # the v1 glaive catalog lists some tools twice: the first entry wins
            continue
        base = _BAD_NAME_CHARS.sub("_", tool.name)[:_MAX_NAME] or "tool"
        name, i = base, 2
        while name in used:
            suffix = f"_{i}"
            name, i = base[: _MAX_NAME - len(suffix)] + suffix, i + 1
        out[tool.name] = name
        used.add(name)
    return out


def tool_schemas(task: NestedTask) -> list[dict[str, Any]]:
    """The task's catalog as OpenAI function tools, in catalog order."""
    names = sent_names(task)
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for tool in task.tools:
        if tool.name in seen:
            continue
        seen.add(tool.name)
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": {p: parameter_schema(s) for p, s in tool.parameters.items()},
        }
        required = [r for r in tool.required if r in tool.parameters]
        if required:
            parameters["required"] = required
        text = tool.description.strip()
        if text and not text.endswith((".", "!", "?")):
            text += "."
        description = " ".join(p for p in (text, _output_note(tool)) if p)
        function: dict[str, Any] = {"name": names[tool.name]}
        if description:
            function["description"] = description
        function["parameters"] = parameters
        tools.append({"type": "function", "function": function})
    return tools


# -- prompt and gold turns


def _example_calls(task: NestedTask) -> str:
    return "\n".join(
        f"{c.raw_label or c.label} = {c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in task.output
    )


def build_tools_input(task: NestedTask, examples: list[NestedTask], sample_id: str) -> ModelInput:
    """The first request of an episode. ``prompt`` is a readable copy of what is sent (system, user,
    tools), which is stored with the run: it is never sent, since tools need chat mode."""
    ex = "".join(TOOLS_EXAMPLE.format(question=e.input, calls=_example_calls(e)) for e in examples)
    user = TOOLS_USER.format(examples=ex, question=task.input)
    tools = tool_schemas(task)
    prompt = f"{TOOLS_SYSTEM}\n\n{user}\n\nTools (JSON):\n{json.dumps(tools, ensure_ascii=False)}\n"
    return ModelInput(
        sample_id=sample_id,
        prompt=prompt,
        messages=[{"role": "system", "content": TOOLS_SYSTEM}, {"role": "user", "content": user}],
        reference=gold_turns(task)[0],
        tools=tools,
    )


def gold_turns(task: NestedTask) -> list[str]:
    """The gold episode as JSON assistant messages: one gold call per turn, then the final answer."""
    names = sent_names(task)
    turns = [
        json.dumps(
            {
                "content": None,
                "tool_calls": [
                    {"id": f"gold_{k}", "name": names.get(c.name, c.name), "arguments": json.dumps(c.arguments, ensure_ascii=False)}
                ],
            },
            ensure_ascii=False,
        )
        for k, c in enumerate(task.output, 1)
    ]
    last = task.output[-1].raw_label or task.output[-1].label or ""
    turns.append(json.dumps({"content": f"${last.strip('$')}$", "tool_calls": None}))
    return turns


# -- the loop


def bounded_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """:func:`parse_arguments` with a direct answer's bounds on the JSON (length, depth, numbers):
    a hostile argument string is a malformed call, not a ``RecursionError`` or ``ValueError``."""
    if isinstance(raw, str) and raw.strip():
        try:
            value = loads(raw)
        except JSONBoundError as exc:
            return None, f"the arguments exceed a bound ({exc})"
        except json.JSONDecodeError as exc:
            return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
        if not isinstance(value, dict):
            return None, f"the arguments must be a JSON object, got {type(value).__name__}"
        return value, None
    value, problem = parse_arguments(raw)
    if value is not None and too_deep(value, DEFAULT_LIMITS.max_depth):  # an object the server decoded
        return None, f"the arguments exceed a bound (JSON nested deeper than {DEFAULT_LIMITS.max_depth} levels)"
    return value, problem


class ToolCallTurns:
    """Native tool calling's :class:`~callbench.tracks.nested.agent_loop.TurnFormat`: the server's
    tool calls of each turn, run in order, each answered with a ``role: tool`` message; a turn
    without tool calls finishes the episode (its text is the answer)."""

    key = "tools"
    mode = "chat"

    def __init__(self, task: NestedTask, inp: ModelInput):
        self.inp = inp
        self.to_catalog = {sent: name for name, sent in sent_names(task).items()}
        self.messages: list[dict[str, Any]] = [dict(m) for m in inp.messages]
        self.start = len(self.messages)
        self.used_ids = used_call_ids(self.messages)  # echoed call ids stay unique across the conversation
        self.malformed = 0

    def request(self, step: int, reference: str) -> ModelInput:
        inp = self.inp
        return ModelInput(
            sample_id=inp.sample_id,
            prompt=inp.prompt,
            messages=[dict(m) for m in self.messages],
            reference=reference,
            metadata={**inp.metadata, "tools_step": step},
            tools=inp.tools,
        )

    def read_turn(self, out: ModelOutput, step: int, run: EpisodeRun) -> Turn:
        calls = record_assistant_turn(out, step, self.used_ids, self.messages, run.transcript)
        if calls is None:
            return Turn(finished=True, answer=out.text)
        bad = 0
        for cid, c in calls:
            sent = c.get("name")
            name = self.to_catalog.get(sent, sent) if isinstance(sent, str) else ""
            arguments, problem = bounded_arguments(c.get("arguments"))
            if past(run.deadline):
                result = "Error: the sample's time budget ran out; this call was not run."
            elif problem is not None:
                self.malformed += 1
                bad += 1
                result = MALFORMED.format(problem=problem)
            elif not name:
                self.malformed += 1
                bad += 1
                result = MALFORMED.format(problem="the tool call has no function name")
            else:
                result = run.episode.call({"name": name, "label": None, "arguments": arguments})
            result = scrub(result)
            self.messages.append({"role": "tool", "tool_call_id": cid, "content": result})
            run.transcript.append(call_line(name, c.get("arguments"), result))
        return Turn(parse_failure=bad == len(calls))

    def record(self, run: EpisodeRun) -> dict[str, Any]:
        return {
            "calls": run.episode.calls,
            "steps": run.steps,
            "finished": run.finished,
            "answer": run.answer,
            "errors": run.episode.errors,
            "malformed_arguments": self.malformed,
            "parse_failures": run.parse_failures,
            "max_steps": run.max_steps,
            "timed_out": run.timed_out,
            "messages": self.messages[self.start :],
        }


async def tools_interact(
    task: NestedTask,
    inp: ModelInput,
    model: Any,
    config: Any,
    *,
    max_steps: int = 12,
    execute: Executor | None = None,
    deadline: float | None = None,
) -> ModelOutput:
    """Run one tool-calling episode of ``task``, starting from ``inp`` (see
    :func:`build_tools_input`). ``execute`` runs a call sequence (None: the task's tools cannot run
    here, calls are recorded unexecuted). ``deadline`` (``time.monotonic()``) ends the episode
    before a model turn that would start after it, and refuses the calls left in a turn."""
    require_tools(model, "--mode tools")
    return await run_episode(
        ToolCallTurns(task, inp), task, gold_turns(task), model, config, max_steps=max_steps, execute=execute, deadline=deadline
    )


__all__ = [
    "TOOLS_SYSTEM",
    "ToolCallTurns",
    "bounded_arguments",
    "build_tools_input",
    "gold_turns",
    "parameter_schema",
    "parse_arguments",
    "sent_names",
    "tool_schemas",
    "tools_interact",
    "tools_prompt_hash",
]
