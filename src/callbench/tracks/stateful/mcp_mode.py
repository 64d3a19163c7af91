"""Tool-calling agents on the stateful track over MCP (``callbench run stateful --mode mcp``).

There is no program in this mode. For each test case of a task the agent gets the task text with
the values of the case's input variables (the program's preloaded inputs) and the tools of a fresh
MCP server seeded with the case's ``service_seed``, listed through the official SDK's client and
offered as OpenAI function tools (``ModelInput.tools``). The harness-only tools (``snapshot``,
``reset``) are not offered, and a call to them is refused like any unknown tool.

Loop (one episode per case, cases in order). Each turn is one request with the tools. Every tool
call of the answer runs in order through the MCP ``ClientSession``; its ``role: tool`` message is
the result as JSON, or ``Error: <message>`` for a tool error (``isError``). A call to a tool that
is not offered, or with arguments that are not a JSON object, is answered with an error and counted
(``unknown_tools``, ``malformed_arguments``); it never crashes the run. A call without a name is
echoed back as ``invalid_tool_call`` and repeated call ids get a suffix, so a strict server accepts
the next request. A tool call that takes longer than :data:`MCP_TOOL_TIMEOUT_S` is abandoned and
answered with an error (counted in ``tool_errors`` and ``tool_timeouts``). The episode ends when the
model answers without tool calls (the final answer) or after ``max_steps`` model turns. The harness
then calls ``snapshot`` and keeps the service state.

Judge (per case, the first failing case names the sample's error class): no final answer within
``max_steps`` turns -> ``timeout``; no tool call at all and an empty answer -> ``no_code``; the
final state differs from the reference's (the scenario's ``state_view`` applied to both) ->
``wrong_state``; the first JSON value in the final answer (a fenced block, the whole answer, or the
first ``{``/``[`` value in the text) differs from the reference's ``result`` (``execution.same``
with the scenario's tolerance) -> ``wrong_result``. State is judged before the answer: what the
agent did to the service is the primary outcome.

Result. ``ModelOutput.text`` is a readable transcript of every episode; ``extra["mcp"]`` holds
``max_steps`` and per case: ``case``, ``steps``, ``finished``, ``answer``, ``tool_calls`` (calls
attempted), ``executed`` (calls that reached the server), ``tool_errors``, ``tool_timeouts``,
``unknown_tools``, ``malformed_arguments``, ``snapshot`` (the raw final state), ``duration_s`` and ``messages`` (the
assistant and tool turns as sent). Everything is JSON, so stored runs resume as in program mode.

Gold. The ``gold`` backend plays the reference's own calls: for each case the reference program runs
in the sandbox with the scenario's setup and the finalize expression of its MCP server's call log
(``api.call_log`` for voice: ``(api, args)`` per successful call), and each turn's
``ModelInput.reference`` is a JSON assistant message with the next call(s), then a final answer
whose text is the JSON of the expected result. Services are deterministic and seeded the same way,
so ids recorded by the reference run are exactly the ids the MCP server hands out. One call per
turn, unless the plan has more calls than ``max_steps - 1`` turns allow; then calls are packed
evenly into that many turns (parallel tool calls).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError, ConfigError, DataError, MissingExtraError
from callbench.models.base import ModelInput, ModelOutput, require_tools
from callbench.models.tool_calls import call_line, parse_arguments, record_assistant_turn, used_call_ids
from callbench.tracks.stateful.execution import default_limits, same
from callbench.tracks.stateful.scenario import Scenario

MCP_PROMPT_VERSION = "1"  # bump when the messages sent or the tool conversion change

MCP_SYSTEM = (
    "You carry out a task for a user by calling the tools of a {service} service (an MCP server). "
    "Call tools to do exactly what the task asks, in the order it says: every call that creates, changes, "
    "deletes or places something is part of the final state that is checked, so make no extra ones "
    "(looking things up is fine). Independent calls may go in the same turn. A call that fails returns an "
    "error and changes nothing: correct it and call again. The task names intermediate values (like "
    "`speech_1`) and the final value `{result_var}`; `x[0]` is the first element of a list `x`, and an "
    "object passed to a tool is passed by its id. When you are done, reply without a tool call, with the "
    "final value `{result_var}` as JSON in a ```json block."
)
MCP_USER = "# Task\n\n{task}\n\n# Input values\n\n{values}\n\nWhen you are done, answer with `{result_var}` as JSON."
MALFORMED = "Error: {problem}. Nothing was called; call the tool again with a JSON object of arguments."
UNKNOWN_TOOL = "Error: there is no tool named {name!r}. Nothing was called; the tools are: {tools}."
TOOL_ERROR = "Error: {message}"
# How long one MCP tool call may take before it is abandoned and answered with a tool error
# (counted in ``tool_errors`` and ``tool_timeouts``). The services answer in milliseconds; only a
# hung server reaches it, so it is not part of the prompt hash (runs without a hang are unchanged).
MCP_TOOL_TIMEOUT_S = 30.0

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.S)


def mcp_prompt_hash() -> str:
    """Digest of everything this mode sends besides the task (part of a run's fingerprint)."""
    text = "\0".join((MCP_PROMPT_VERSION, MCP_SYSTEM, MCP_USER, MALFORMED, UNKNOWN_TOOL, TOOL_ERROR))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- which scenarios have an MCP server


@dataclass(frozen=True)
class McpServer:
    """How the harness reaches one scenario's MCP server.

    ``session(seed)`` starts a fresh server seeded with a case's ``service_seed`` and yields an
    initialized SDK ``ClientSession``; ``decode(tool, result)`` turns a ``CallToolResult`` into
    ``{"ok": True, "result"}`` or ``{"ok": False, "error"}``; ``hidden`` tools are the harness's
    (never offered); ``call_log`` is the finalize expression, in the program sandbox, that lists the
    reference's calls as ``(tool, arguments)`` (for gold).
    """

    session: Callable[[Any], AbstractAsyncContextManager[Any]]
    decode: Callable[[str, Any], dict[str, Any]]
    hidden: frozenset[str]
    snapshot_tool: str
    call_log: str


def _errlog() -> tuple[Any, bool]:
    """Where the server's stderr goes: this process's stderr when it is a real file (under test
    runners and ``CliRunner`` it often is not, and the SDK needs a file descriptor), else devnull.
    Returns ``(file, opened_here)``."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and stream.fileno() >= 0:
                return stream, False
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w"), True  # noqa: SIM115 - closed by the caller


@asynccontextmanager
async def _voice_session(seed: Any) -> AsyncIterator[Any]:
    """:func:`voice_mcp.voice_mcp_session` with the server's stderr sent to a real file descriptor."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from callbench.tracks.stateful.services import voice_mcp

    errlog, opened = _errlog()
    try:
        with tempfile.TemporaryDirectory(prefix="callbench-voice-") as tmp:
            args = ["-m", voice_mcp.SERVER_MODULE]
            if seed is not None:
                state_file = Path(tmp) / "state.json"
                state_file.write_text(json.dumps(seed))
                args += ["--state", str(state_file)]
            params = StdioServerParameters(command=sys.executable, args=args, env=voice_mcp._server_env())
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session
    finally:
        if opened:
            errlog.close()


def _voice() -> McpServer:
    try:
        from callbench.tracks.stateful.services import voice_mcp
    except ImportError as exc:
        raise MissingExtraError("mcp", "stateful") from exc
    return McpServer(
        session=_voice_session,
        decode=voice_mcp.decode_result,
        hidden=frozenset(voice_mcp.HARNESS_TOOLS),
        snapshot_tool="snapshot",
        call_log="api.call_log",
    )


MCP_SCENARIOS: dict[str, Callable[[], McpServer]] = {"voice": _voice}


def check_scenario(name: str, task_id: str | None = None) -> None:
    """One-line :class:`ConfigError` unless scenario ``name`` offers an MCP server."""
    if name in MCP_SCENARIOS:
        return
    where = f" (task {task_id})" if task_id else ""
    raise ConfigError(
        f"--mode mcp: scenario '{name}'{where} has no MCP server; only {', '.join(sorted(MCP_SCENARIOS))} "
        f"has one (pass --scenario {sorted(MCP_SCENARIOS)[0]})"
    )


def mcp_server(name: str) -> McpServer:
    check_scenario(name)
    return MCP_SCENARIOS[name]()


# -- messages


def openai_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP ``Tool`` objects as OpenAI function tools (name, cleaned description, input schema)."""
    out = []
    for t in tools:
        function: dict[str, Any] = {"name": t.name}
        description = inspect.cleandoc(t.description or "")
        if description:
            function["description"] = description
        function["parameters"] = t.input_schema or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def render_values(preload: dict[str, Any]) -> str:
    return "\n".join(f"- `{k}` = {json.dumps(v, ensure_ascii=False)}" for k, v in preload.items()) or "(none)"


def case_messages(scenario: Scenario, task: dict[str, Any], case: dict[str, Any]) -> list[dict[str, Any]]:
    system = MCP_SYSTEM.format(service=scenario.name, result_var=task["result_var"])
    user = MCP_USER.format(task=task["text"], values=render_values(case["preload"]), result_var=task["result_var"])
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def readable_prompt(scenario: Scenario, task: dict[str, Any]) -> str:
    """What is stored as the sample's prompt (never sent: tools need chat messages)."""
    msgs = case_messages(scenario, task, task["cases"][0])
    return (
        f"{msgs[0]['content']}\n\n{msgs[1]['content']}\n\n"
        f"(one episode per test case, {len(task['cases'])} cases; the input values above are case "
        f"'{task['cases'][0]['name']}'; the tools are listed from the {scenario.name} MCP server)\n"
    )


# -- final answers


def extract_answer(text: str | None) -> tuple[bool, Any]:
    """``(found, value)``: the first JSON value of an answer — the first fenced block that parses, else
    the whole answer, else the first ``{...}`` or ``[...]`` value in the text."""
    text = text or ""
    for block in _FENCE.findall(text):
        try:
            return True, json.loads(block)
        except json.JSONDecodeError:
            continue
    try:
        return True, json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            return True, decoder.raw_decode(text, m.start())[0]
        except json.JSONDecodeError:
            continue
    return False, None


# -- gold


async def reference_plan(scenario: Scenario, server: McpServer, task: dict[str, Any], case: dict[str, Any], timeout_s: float) -> list[tuple[str, dict[str, Any]]]:
    """The reference program's calls for ``case``: run in the sandbox, finalized with the call log."""
    from callbench.sandbox.program import run_program_async

    rt = scenario.runtime
    preload = dict(case["preload"])
    preload["__preload__"] = sorted(case["preload"])
    preload["__initial__"] = case.get("service_seed")
    res = await run_program_async(
        task["reference"],
        setup=rt.setup,
        preload=preload,
        result_vars=[task["result_var"]],
        finalize=server.call_log,
        limits=default_limits(scenario, timeout_s=timeout_s),
    )
    if res.status != "ok" or res.finalize_error:
        why = res.finalize_error or res.error or res.status
        raise DataError(f"task {task['id']} case {case['name']}: the reference program failed, no gold call plan ({why})")
    return [(str(name), dict(args)) for name, args in res.state]


def gold_turns(plan: list[tuple[str, dict[str, Any]]], result: Any, max_steps: int) -> list[str]:
    """JSON assistant messages for ``gold``: the plan's calls (one per turn, packed evenly when the
    plan needs more than ``max_steps - 1`` turns), then the final answer."""
    per = max(1, math.ceil(len(plan) / max(1, max_steps - 1)))
    turns = []
    for start in range(0, len(plan), per):
        calls = [
            {"id": f"gold_{start + j + 1}", "name": name, "arguments": json.dumps(args, ensure_ascii=False)}
            for j, (name, args) in enumerate(plan[start : start + per])
        ]
        turns.append(json.dumps({"content": None, "tool_calls": calls}, ensure_ascii=False))
    answer = "```json\n" + json.dumps(result, ensure_ascii=False) + "\n```"
    turns.append(json.dumps({"content": answer, "tool_calls": None}, ensure_ascii=False))
    return turns


# -- the loop


class McpServerError(CallbenchError):
    """The scenario's MCP server could not be started or answered the harness wrongly."""


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _call_tool(session: Any, name: str, arguments: dict[str, Any], timeout_s: float) -> Any | None:
    """``session.call_tool`` with the SDK's per-request read timeout; None when it timed out (a
    hung server tool must not hang the sample). Other MCP errors propagate."""
    from mcp import MCPError
    from mcp.types import REQUEST_TIMEOUT

    try:
        return await session.call_tool(name, arguments, read_timeout_seconds=timeout_s)
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT:
            return None
        raise


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


async def run_episode(
    scenario: Scenario,
    server: McpServer,
    task: dict[str, Any],
    case: dict[str, Any],
    model: Any,
    config: Any,
    *,
    sample_id: str,
    max_steps: int,
    gold: list[str] | None = None,
    tool_timeout_s: float = MCP_TOOL_TIMEOUT_S,
) -> tuple[dict[str, Any], str, list[int | None], list[int | None]]:
    """One case's episode: ``(record, transcript, prompt_tokens, completion_tokens)``. Each MCP
    tool call may take ``tool_timeout_s`` seconds (see :func:`_call_tool`)."""
    messages = case_messages(scenario, task, case)
    start = len(messages)
    used_ids = used_call_ids(messages)  # echoed call ids stay unique across the conversation
    prompt = readable_prompt(scenario, task)
    rec: dict[str, Any] = {
        "case": case["name"],
        "steps": 0,
        "finished": False,
        "answer": None,
        "tool_calls": 0,
        "executed": 0,
        "tool_errors": 0,
        "unknown_tools": 0,
        "malformed_arguments": 0,
        "tool_timeouts": 0,
        "snapshot": None,
    }
    lines = [f"## case {case['name']}\n"]
    ptoks: list[int | None] = []
    ctoks: list[int | None] = []
    model_exc: Exception | None = None
    t0 = time.perf_counter()
    try:
        async with server.session(case.get("service_seed")) as session:
            listed = (await session.list_tools()).tools
            offered = [t for t in listed if t.name not in server.hidden]
            tools = openai_tools(offered)
            names = [t.name for t in offered]
            for step in range(max_steps):
                turn = ModelInput(
                    sample_id=sample_id,
                    prompt=prompt,
                    messages=[dict(m) for m in messages],
                    reference=gold[min(step, len(gold) - 1)] if gold else None,
                    metadata={"scenario": scenario.name, "case": case["name"], "mcp_step": step},
                    tools=tools,
                )
                try:
                    out = await model.generate(turn, config)
                except Exception as exc:  # re-raised after the server is closed, not wrapped in a group
                    model_exc = exc
                    break
                rec["steps"] += 1
                ptoks.append(out.prompt_tokens)
                ctoks.append(out.completion_tokens)
                calls = record_assistant_turn(out, step, used_ids, messages, lines)
                if calls is None:
                    rec["finished"], rec["answer"] = True, out.text
                    break
                for cid, c in calls:
                    rec["tool_calls"] += 1
                    name = c.get("name") if isinstance(c.get("name"), str) else ""
                    arguments, problem = parse_arguments(c.get("arguments"))
                    if problem is not None:
                        rec["malformed_arguments"] += 1
                        content = MALFORMED.format(problem=problem)
                    elif name not in names:
                        rec["unknown_tools"] += 1
                        content = UNKNOWN_TOOL.format(name=name, tools=", ".join(names))
                    else:
                        raw_result = await _call_tool(session, name, arguments, tool_timeout_s)
                        rec["executed"] += 1
                        if raw_result is None:  # timed out: reported to the model, the episode goes on
                            rec["tool_errors"] += 1
                            rec["tool_timeouts"] += 1
                            content = TOOL_ERROR.format(
                                message=f"the call to '{name}' timed out after {tool_timeout_s:g} s; "
                                "whether it changed anything is unknown"
                            )
                        else:
                            result = server.decode(name, raw_result)
                            if result["ok"]:
                                content = _dump(result["result"])
                            else:
                                rec["tool_errors"] += 1
                                content = TOOL_ERROR.format(message=result["error"])
                    messages.append({"role": "tool", "tool_call_id": cid, "content": content})
                    lines.append(call_line(name, c.get("arguments"), content))
            if model_exc is None:
                raw_snap = await _call_tool(session, server.snapshot_tool, {}, tool_timeout_s)
                if raw_snap is None:
                    raise McpServerError(
                        f"{scenario.name} MCP server: '{server.snapshot_tool}' timed out after {tool_timeout_s:g} s"
                    )
                snap = server.decode(server.snapshot_tool, raw_snap)
                if not snap["ok"]:
                    raise McpServerError(f"{scenario.name} MCP server: '{server.snapshot_tool}' failed: {snap['error']}")
                rec["snapshot"] = snap["result"]
    except BaseException as exc:  # noqa: BLE001 - the SDK's task groups wrap everything in groups
        leaf = _leaf(exc)
        if isinstance(leaf, CallbenchError) or not isinstance(leaf, Exception):
            raise leaf from None
        raise McpServerError(
            f"task {task['id']} case {case['name']}: {scenario.name} MCP server: {type(leaf).__name__}: {leaf}"
        ) from leaf
    if model_exc is not None:
        raise model_exc
    if not rec["finished"]:
        lines.append(f"(no final answer within {max_steps} model turns)\n")
    rec["duration_s"] = round(time.perf_counter() - t0, 3)
    rec["messages"] = messages[start:]
    return rec, "".join(lines), ptoks, ctoks


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


async def mcp_interact(
    scenario: Scenario,
    task: dict[str, Any],
    inp: ModelInput,
    model: Any,
    config: Any,
    *,
    max_steps: int,
    timeout_s: float,
) -> ModelOutput:
    """Every case's episode, in order, as one :class:`ModelOutput` (see the module docstring)."""
    require_tools(model, "--mode mcp")
    server = mcp_server(scenario.name)
    is_gold = getattr(model, "name", None) == "gold"
    records, texts, ptoks, ctoks = [], [], [], []
    for case in task["cases"]:
        gold = None
        if is_gold:
            plan = await reference_plan(scenario, server, task, case, timeout_s)
            gold = gold_turns(plan, case["expected"]["result"], max_steps)
        rec, text, p, c = await run_episode(
            scenario, server, task, case, model, config, sample_id=inp.sample_id, max_steps=max_steps, gold=gold
        )
        records.append(rec)
        texts.append(text)
        ptoks += p
        ctoks += c
    finished = all(r["finished"] for r in records)
    return ModelOutput(
        text="\n".join(texts),
        mode="chat",
        prompt_tokens=_total(ptoks),
        completion_tokens=_total(ctoks),
        finish_reason="finish" if finished else "max_steps",
        extra={"mcp": {"max_steps": max_steps, "cases": records}},
    )


# -- scoring


def judge_case(scenario: Scenario, case: dict[str, Any], rec: dict[str, Any]) -> tuple[str, str | None]:
    """("pass" or an error class, a one-line reason) for one episode."""
    if not rec.get("finished"):
        return "timeout", f"no final answer within {rec.get('steps', 0)} model turns"
    answer = rec.get("answer") or ""
    if not rec.get("tool_calls") and not answer.strip():
        return "no_code", "no tool call and an empty answer"
    view = scenario.runtime.state_view or (lambda s: s)
    tol = scenario.runtime.tolerance
    expected = case["expected"]
    if not same(view(expected["state"]), view(rec.get("snapshot")), tol):
        return "wrong_state", "the final service state differs from the reference's"
    found, value = extract_answer(answer)
    if not found:
        return "wrong_result", "the final answer holds no JSON value"
    if not same(expected["result"], value, tol):
        return "wrong_result", "the final answer's JSON differs from the reference's result"
    return "pass", None


def judge_episodes(scenario: Scenario, task: dict[str, Any], output: ModelOutput) -> tuple[str, str | None, list[dict[str, Any]], str]:
    """``(verdict, reason, per-case rows, parsed)``: the first failing case names the verdict."""
    records = {r["case"]: r for r in (output.extra.get("mcp") or {}).get("cases", [])}
    verdict, reason = "pass", None
    rows = []
    for c in task["cases"]:
        rec = records.get(c["name"])
        if rec is None:
            v, why = "no_code", "no episode was run for this case"
            rec = {}
        else:
            v, why = judge_case(scenario, c, rec)
        rows.append(
            {
                "case": c["name"],
                "verdict": v,
                "reason": why,
                "duration_s": rec.get("duration_s"),
                **{k: rec.get(k) for k in ("steps", "tool_calls", "executed", "tool_errors", "tool_timeouts", "unknown_tools", "malformed_arguments")},
            }
        )
        if v != "pass" and verdict == "pass":
            verdict, reason = v, f"case {c['name']}: {why}" if why else f"case {c['name']}"
    parsed = json.dumps({name: r.get("answer") for name, r in records.items()}, ensure_ascii=False)
    return verdict, reason, rows, parsed


__all__ = [
    "MCP_SCENARIOS",
    "MCP_TOOL_TIMEOUT_S",
    "MCP_SYSTEM",
    "McpServer",
    "McpServerError",
    "check_scenario",
    "extract_answer",
    "gold_turns",
    "judge_case",
    "judge_episodes",
    "mcp_interact",
    "mcp_prompt_hash",
    "mcp_server",
    "openai_tools",
    "parse_arguments",
    "reference_plan",
    "run_episode",
]
