"""Reading the tool calls a backend returned (``ModelOutput.tool_calls``), shared by every track
that runs a native tool-calling loop (nested ``--mode tools``, stateful ``--mode mcp``)."""

from __future__ import annotations

import json
from typing import Any


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, None)`` or ``(None, problem)`` for a tool call's ``arguments`` string."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # some servers send "" for a call without arguments
    if not isinstance(raw, str):
        return None, f"the arguments must be a JSON object, got {type(raw).__name__}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, None
