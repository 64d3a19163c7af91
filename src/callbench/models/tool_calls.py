"""Reading the tool calls a backend returned (``ModelOutput.tool_calls``), shared by every track
that runs a native tool-calling loop (nested ``--mode tools``, stateful ``--mode mcp``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from callbench.models.base import ModelOutput


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, None)`` or ``(None, problem)`` for a tool call's ``arguments`` string."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # some servers send "" for a call without arguments
    if not isinstance(raw, str):
        return None, f"the arguments must be a JSON object, got {type(raw).__name__}"
    from callbench.untrusted import VALUE_MAX_DEPTH, UntrustedInputError, check_value

    try:
        value = json.loads(raw)
        check_value(value, what="the arguments", max_depth=VALUE_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    except RecursionError:  # the parser's own stack: deeper than any walk after it could take
        return None, f"the arguments: nested deeper than {VALUE_MAX_DEPTH} levels"
    except UntrustedInputError as exc:  # parsed, but too deep for the walks after it
        return None, str(exc)
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, None


# The name echoed back for a call that came without one: strict OpenAI-compatible servers reject an
# assistant message whose tool call has a null or empty name, which would error the next request.
INVALID_TOOL_NAME = "invalid_tool_call"


def used_call_ids(messages: list[dict[str, Any]]) -> set[str]:
    """The tool-call ids already in a conversation (assistant ``tool_calls``)."""
    return {
        tc["id"]
        for m in messages
        for tc in (m.get("tool_calls") or [])
        if isinstance(tc, dict) and isinstance(tc.get("id"), str)
    }


def echo_tool_calls(
    calls: list[dict[str, Any]], step: int, used: set[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """``(ids, tool_calls)`` for the assistant message that echoes a backend's ``calls`` back.

    Every id is unique within the conversation (``used``, updated here): a missing id becomes
    ``call_<step>_<i>``, one the conversation already has gets a ``_2``, ``_3``... suffix, so each
    ``role: tool`` answer (sent with ``ids[i]``) matches exactly one call. A call without a name is
    echoed as :data:`INVALID_TOOL_NAME` and arguments that are not a string as their JSON text, so
    a strict server accepts the next request; the loops still count a nameless call (nested:
    malformed, MCP: unknown tool).
    """
    ids: list[str] = []
    echoed: list[dict[str, Any]] = []
    for i, c in enumerate(calls):
        raw_id = c.get("id")
        base = raw_id if isinstance(raw_id, str) and raw_id else f"call_{step}_{i}"
        cid, k = base, 1
        while cid in used:
            k += 1
            cid = f"{base}_{k}"
        used.add(cid)
        ids.append(cid)
        name = c.get("name")
        arguments = c.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=repr)
        echoed.append(
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": name if isinstance(name, str) and name else INVALID_TOOL_NAME,
                    "arguments": arguments,
                },
            }
        )
    return ids, echoed


def record_assistant_turn(
    out: ModelOutput, step: int, used: set[str], messages: list[dict[str, Any]], transcript: list[str]
) -> list[tuple[str, dict[str, Any]]] | None:
    """Append one assistant turn to the conversation and the readable transcript.

    ``None`` when the model answered without tool calls (the episode ends); else the calls paired
    with the unique ids their ``role: tool`` answers must carry (see :func:`echo_tool_calls`).
    """
    calls = out.tool_calls or []
    if not calls:
        messages.append({"role": "assistant", "content": out.text})
        transcript.append(f"Answer: {out.text.strip()}\n")
        return None
    ids, echoed = echo_tool_calls(calls, step, used)
    messages.append({"role": "assistant", "content": out.text or None, "tool_calls": echoed})
    if out.text.strip():
        transcript.append(f"Text: {out.text.strip()}\n")
    return list(zip(ids, calls, strict=True))


def call_line(name: str, arguments: Any, result: str) -> str:
    """The transcript entry of one executed (or refused) tool call."""
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=repr)
    return f"Call: {name or '?'}({shown})\nResult: {result}\n"
