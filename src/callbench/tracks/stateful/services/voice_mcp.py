"""The voice service as a real MCP server over stdio, plus the client helper the harness uses.

Tool-calling agents are evaluated over the protocol itself, so this is the official ``mcp`` SDK's
``MCPServer`` (FastMCP in mcp 1.x, renamed in 2.x) with tools registered through its ``tool()``
decorator; nothing here speaks JSON-RPC by hand. Each :class:`VoiceService` API method becomes a
tool whose JSON schema and description come from the method's signature and docstring, so the
Python API and the MCP surface cannot drift apart. ``snapshot`` and ``reset`` are extra tools for
the harness. A :class:`VoiceError` becomes an MCP tool error (``isError`` with the message).

Run: ``python -m callbench.tracks.stateful.services.voice_mcp [--state SNAPSHOT.json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_origin, get_type_hints

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from callbench.tracks.stateful.services.voice import VoiceError, VoiceService

__all__ = [
    "API_TOOLS",
    "HARNESS_TOOLS",
    "LIST_TOOLS",
    "build_server",
    "call_voice_mcp",
    "decode_result",
    "main",
    "voice_mcp_session",
]

# The VoiceService methods an agent may call, in the order tools are listed.
API_TOOLS: tuple[str, ...] = (
    "search_voices",
    "get_voice",
    "text_to_speech",
    "speech_to_speech",
    "speech_to_text",
    "isolate_audio",
    "get_audio",
    "list_audio",
    "delete_audio",
    "outbound_call",
    "get_call",
    "list_calls",
)
HARNESS_TOOLS: tuple[str, ...] = ("snapshot", "reset")
# The SDK wraps a list return as {"result": [...]} in structured output; decode_result unwraps these.
LIST_TOOLS: frozenset[str] = frozenset(
    name for name in API_TOOLS if get_origin(get_type_hints(getattr(VoiceService, name))["return"]) is list
)
SERVER_MODULE = "callbench.tracks.stateful.services.voice_mcp"


def _as_tool(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a service method so VoiceError reaches the client as a tool error with its message.

    Without this the SDK reports any other exception as an opaque crash ("Error executing tool").
    ``functools.wraps`` keeps the signature and docstring the SDK builds the schema from.
    """

    @functools.wraps(method)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except VoiceError as exc:
            raise ToolError(str(exc)) from exc

    return tool


def build_server(service: VoiceService | None = None) -> MCPServer:
    """An MCP server exposing ``service`` (a fresh one by default)."""
    service = service if service is not None else VoiceService()
    server = MCPServer(
        name="callbench-voice",
        instructions="A simulated voice AI service: voices, text to speech, transcription, audio isolation, "
        "outbound phone calls. Objects have ids like voice_1, audio_1, transcript_1, call_1.",
        log_level="WARNING",
    )
    for name in API_TOOLS:
        server.tool(name=name, structured_output=True)(_as_tool(getattr(service, name)))

    @server.tool(name="snapshot", structured_output=True)
    def snapshot() -> dict[str, Any]:
        """For the evaluation harness, not for solving tasks: the full service state with histories."""
        return service.snapshot()

    @server.tool(name="reset", structured_output=True)
    def reset() -> dict[str, Any]:
        """For the evaluation harness: discard all audio, transcripts, calls and histories."""
        service.reset()
        return {"reset": True}

    return server


def decode_result(tool: str, result: Any) -> dict[str, Any]:
    """Turn ``tool``'s ``CallToolResult`` into ``{"ok": True, "result": value}`` or ``{"ok": False, "error": msg}``.

    The ``{"result": [...]}`` wrapper the SDK puts around list results is removed, so a tool's
    value equals what the Python method returns.
    """
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        return {"ok": False, "error": text}
    value = result.structured_content
    if value is None:
        value = json.loads(text) if text else None
    elif tool in LIST_TOOLS:
        value = value["result"]
    return {"ok": True, "result": value}


def _server_env() -> dict[str, str]:
    # The SDK starts the server with a minimal environment; keep this checkout importable even
    # when it is on PYTHONPATH rather than installed.
    src = str(Path(__file__).resolve().parents[4])
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": src + (os.pathsep + path if path else "")}


@asynccontextmanager
async def voice_mcp_session(seed: dict | None = None) -> AsyncIterator[Any]:
    """Start the server as a subprocess over stdio and yield an initialized ``ClientSession``.

    ``seed`` (a snapshot dict) is handed to the server through a temporary ``--state`` file.
    """
    from mcp import ClientSession, StdioServerParameters, stdio_client

    with tempfile.TemporaryDirectory(prefix="callbench-voice-") as tmp:
        args = ["-m", SERVER_MODULE]
        if seed is not None:
            state_file = Path(tmp) / "state.json"
            state_file.write_text(json.dumps(seed))
            args += ["--state", str(state_file)]
        params = StdioServerParameters(command=sys.executable, args=args, env=_server_env())
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call_voice_mcp(
    tool_calls: list[tuple[str, dict]], seed: dict | None = None
) -> tuple[list[dict[str, Any]], dict]:
    """Run tool calls against a fresh server; return one decoded result per call and the final snapshot.

    Each result is ``{"tool", "ok", "result"}`` or ``{"tool", "ok": False, "error"}``: a failed call
    does not stop the later ones, as with an agent that sees the error and carries on. Unknown tool
    names are rejected before the server starts.
    """
    listed: set[str] = set(API_TOOLS) | set(HARNESS_TOOLS)
    unknown = [name for name, _ in tool_calls if name not in listed]
    if unknown:
        raise ValueError(f"unknown voice tools {unknown}; available: {sorted(listed)}")
    results: list[dict[str, Any]] = []
    async with voice_mcp_session(seed) as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        missing = listed - tools
        if missing:
            raise RuntimeError(f"voice MCP server does not list tools {sorted(missing)}")
        for name, arguments in tool_calls:
            outcome = decode_result(name, await session.call_tool(name, arguments))
            results.append({"tool": name, **outcome})
        final = decode_result("snapshot", await session.call_tool("snapshot", {}))
    if not final["ok"]:
        raise RuntimeError(f"voice MCP snapshot failed: {final['error']}")
    return results, final["result"]


def main(argv: list[str] | None = None) -> None:
    """Serve over stdio, optionally seeded from a snapshot JSON file."""
    parser = argparse.ArgumentParser(prog=f"python -m {SERVER_MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, help="snapshot JSON file to seed the service state from")
    ns = parser.parse_args(argv)
    service = VoiceService()
    if ns.state is not None:
        try:
            service = VoiceService.from_snapshot(json.loads(ns.state.read_text()))
        except (OSError, json.JSONDecodeError, VoiceError) as exc:
            parser.error(f"cannot seed from {ns.state}: {exc}")
    build_server(service).run("stdio")


if __name__ == "__main__":
    main()
