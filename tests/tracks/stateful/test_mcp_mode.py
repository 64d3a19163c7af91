"""Tool-calling agents on the stateful voice scenario over MCP (``run stateful --mode mcp``).

Every episode starts the real voice MCP server (``python -m ...voice_mcp``) over stdio with the
SDK's client; the agents are ``gold`` (playing the reference program's recorded calls) and the
OpenAI backend against a local fake server whose scripted agent reads the conversation so far.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.tracks.stateful.execution import Case, execute
from callbench.tracks.stateful.mcp_mode import extract_answer, gold_turns, parse_arguments
from callbench.tracks.stateful.scenarios import get_scenario

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the mcp SDK is not installed (pip install -e '.[stateful]')",
)
if importlib.util.find_spec("mcp") is not None:
    # The SDK binds stdio_client's default errlog to sys.stderr when it is first imported; import it
    # now, under pytest's capture, rather than inside a CliRunner call whose stderr has no file
    # descriptor (other modules' tests use that default).
    import mcp.client.stdio  # noqa: F401

REF = (
    "voices_1 = api.search_voices(query_1, gender=None)\n"
    "speech_1 = api.text_to_speech(text_1, voices_1[0]['id'])\n"
    "result = speech_1\n"
)
TEXT = (
    "[kind={kind}] Search the voice catalog for `query_1` (the search words); call the result `voices_1`. "
    "Synthesize `text_1` (the text to speak) with the voice `voices_1[0]`; call the result `speech_1`. "
    "Finally set `result` to `speech_1`."
)
CX = {"instruction_words": 30, "code_lines": 3, "n_calls": 2, "path_depth": 2, "binding_count": 1}
# kind -> expected sample status
KINDS = {
    "good": "ok",
    "malformed": "ok",  # broken JSON arguments first: fed back, then the right calls
    "unknown": "ok",  # a call to the hidden harness tool 'reset' first: refused, then the right calls
    "extra": "wrong_state",  # one write more than the task asks
    "answer": "wrong_result",  # the right calls, a wrong final value
    "silent": "no_code",  # no tool call, empty answer
    "loop": "timeout",  # never stops calling tools
}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", "stateful", *args, "--no-progress"])


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    """One hand-made voice task per kind (same program, two cases), oracles recorded by execution."""
    scen = get_scenario("voice")
    cases = []
    for c in (Case("base", {"query_1": "calm", "text_1": "Hello there friend"}), Case("resampled_1", {"query_1": "warm", "text_1": "Good morning"})):
        expected = execute(scen, REF, c)
        assert expected.status == "ok", expected.error
        cases.append({"name": c.name, "preload": c.preload, "service_seed": c.service_seed, "expected": expected.to_json()})
    root = tmp_path_factory.mktemp("mcpbench")
    (root / "voice").mkdir()
    rows = [
        {
            "id": f"mcp_{kind}",
            "scenario": "voice",
            "text": TEXT.format(kind=kind),
            "inputs": {"query_1": "the search words", "text_1": "the text to speak"},
            "result_var": "result",
            "reference": REF,
            "cases": cases,
            "complexity": CX,
        }
        for kind in KINDS
    ]
    (root / "voice" / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _call(name: str, arguments: Any, cid: str) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"content": None, "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}]}


def agent(body: dict[str, Any]) -> dict[str, Any]:
    """A scripted tool-calling agent: its next move depends only on the conversation so far, so
    concurrent episodes do not interfere. Ids come from the earlier tool results."""
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    kind = re.search(r"\[kind=(\w+)\]", user).group(1)
    values = {k: json.loads(v) for k, v in re.findall(r"^- `(\w+)` = (.+)$", user, re.M)}
    results = [m["content"] for m in messages if m["role"] == "tool"]
    ok = [json.loads(r) for r in results if not r.startswith("Error")]
    if kind == "silent":
        return {"content": ""}
    if kind == "loop":
        return _call("list_audio", {}, f"l{len(results)}")
    if not results and kind == "malformed":
        return _call("search_voices", '{"query": ', "bad")
    if not results and kind == "unknown":
        return _call("reset", {}, "r")
    if len(ok) == 0:
        return _call("search_voices", {"query": values["query_1"]}, "c0")
    if len(ok) == 1:
        return _call("text_to_speech", {"text": values["text_1"], "voice_id": ok[0][0]["id"]}, "c1")
    speech = ok[1]
    if kind == "extra" and len(ok) == 2:
        return _call("isolate_audio", {"audio_id": speech["id"]}, "c2")
    if kind == "answer":
        speech = {**speech, "duration_s": speech["duration_s"] + 1}
    return {"content": f"Done. The result:\n```json\n{json.dumps(speech)}\n```"}


def test_openai_agent_over_mcp_end_to_end(bench, tmp_path):
    pytest.importorskip("aiohttp")
    from callbench.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(agent) as server:
        args = ["--bench", str(bench), "--mode", "mcp", "--max-steps", "5", "--model", f"openai:fake@{server.url}",
                "--out", str(tmp_path), "--run-id", "r"]
        res = _run(*args)
        assert res.exit_code == 0, res.output
        with sqlite3.connect(tmp_path / "r" / "run.sqlite") as db:
            rows = {i: (s, json.loads(e)["mcp"], out, err) for i, s, e, out, err in db.execute("SELECT id, status, extra, raw_output, error FROM samples")}
        assert {i: r[0] for i, r in rows.items()} == {f"mcp_{k}": v for k, v in KINDS.items()}, {i: r[3] for i, r in rows.items()}

        good = rows["mcp_good"][1]
        assert good["max_steps"] == 5 and [c["case"] for c in good["cases"]] == ["base", "resampled_1"]
        base = good["cases"][0]
        assert (base["steps"], base["tool_calls"], base["executed"], base["finished"]) == (3, 2, 2, True)
        assert [h["history"] for h in base["snapshot"]["audio"]] == [["text_to_speech"]]
        assert "Call: text_to_speech(" in rows["mcp_good"][2] and "## case resampled_1" in rows["mcp_good"][2]

        malformed = rows["mcp_malformed"][1]["cases"][0]
        assert malformed["malformed_arguments"] == 1 and malformed["executed"] == 2
        assert malformed["messages"][1]["content"].startswith("Error: the arguments are not valid JSON")
        unknown = rows["mcp_unknown"][1]["cases"][0]
        assert unknown["unknown_tools"] == 1 and "there is no tool named 'reset'" in unknown["messages"][1]["content"]
        assert "case base" in rows["mcp_extra"][3] and "state differs" in rows["mcp_extra"][3]
        assert "answer's JSON differs" in rows["mcp_answer"][3]
        assert rows["mcp_loop"][1]["cases"][0]["steps"] == 5

        bodies = [b for p, b in server.requests if p.endswith("/chat/completions")]
        offered = {t["function"]["name"] for t in bodies[0]["tools"]}
        assert "text_to_speech" in offered and not offered & {"snapshot", "reset"}
        assert all(b["tools"] for b in bodies)
        summary = json.loads((tmp_path / "r" / "summary.json").read_text())
        assert summary["metrics"]["pass@1"] == pytest.approx(3 / 7)
        assert summary["metrics"]["error_wrong_state"] == pytest.approx(1 / 7)

        # the same command resumes: every sample is stored, nothing is asked again
        n = len(server.requests)
        res = _run(*args)
        assert res.exit_code == 0, res.output
        assert len(server.requests) == n
        assert json.loads((tmp_path / "r" / "summary.json").read_text())["metrics"] == summary["metrics"]


def test_gold_passes_builtin_voice_tasks_over_mcp(tmp_path):
    res = _run("--scenario", "voice", "--mode", "mcp", "--model", "gold", "--limit", "5", "--out", str(tmp_path), "--run-id", "g")
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["n"] == 5 and summary["metrics"]["pass@1"] == 1.0


def test_mcp_mode_errors(tmp_path):
    res = _run("--scenario", "session", "--mode", "mcp", "--model", "gold", "--out", str(tmp_path))
    assert res.exit_code == 2 and "scenario 'session'" in res.output and "no MCP server" in res.output
    res = _run("--mode", "mcp", "--model", "gold", "--out", str(tmp_path))  # the built-in set has session tasks
    assert res.exit_code == 2 and "no MCP server" in res.output and "--scenario voice" in res.output
    res = _run("--scenario", "voice", "--mode", "tools", "--model", "gold", "--out", str(tmp_path))
    assert res.exit_code == 2 and "--mode tools: choose from program, mcp" in res.output
    res = _run("--scenario", "voice", "--mode", "mcp", "--max-steps", "0", "--model", "gold", "--out", str(tmp_path))
    assert res.exit_code == 2 and "--max-steps must be >= 1" in res.output
    pytest.importorskip("aiohttp")
    res = _run("--scenario", "voice", "--mode", "mcp", "--model", "openai:m@http://127.0.0.1:9/v1",
               "--model-arg", "mode=completion", "--out", str(tmp_path))
    assert res.exit_code == 2 and "no native tool calling" in res.output and "--mode mcp" in res.output


def test_extract_answer_and_arguments():
    assert extract_answer('Sure.\n```json\n{"id": "audio_1"}\n```') == (True, {"id": "audio_1"})
    assert extract_answer("```\nnot json\n```\n```json\n[1, 2]\n```") == (True, [1, 2])
    assert extract_answer('[{"a": 1}]') == (True, [{"a": 1}])
    assert extract_answer('The audio_3 record is {"id": "audio_3", "ok": true} as asked.') == (True, {"id": "audio_3", "ok": True})
    assert extract_answer("true") == (True, True)
    assert extract_answer("All done, audio_3 is ready.") == (False, None)
    assert extract_answer("") == (False, None)
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments('{"a": ')[1].startswith("the arguments are not valid JSON")
    assert parse_arguments("[1]")[1] == "the arguments must be a JSON object, got list"


def test_gold_turns_pack_long_plans():
    plan = [("get_voice", {"voice_id": f"voice_{i}"}) for i in range(1, 23)]
    turns = [json.loads(t) for t in gold_turns(plan, {"x": 1}, max_steps=12)]
    assert len(turns) == 12 and turns[-1]["tool_calls"] is None
    assert extract_answer(turns[-1]["content"]) == (True, {"x": 1})
    calls = [c for t in turns[:-1] for c in t["tool_calls"]]
    assert [json.loads(c["arguments"]) for c in calls] == [a for _, a in plan]
    short = [json.loads(t) for t in gold_turns(plan[:3], [], max_steps=12)]
    assert [len(t["tool_calls"] or []) for t in short] == [1, 1, 1, 0]


# -- run_episode directly: strict echo of odd tool calls, tool-call timeouts

VOICE_CASE = {"name": "base", "preload": {"query_1": "calm"}, "service_seed": None}
VOICE_TASK = {"id": "t_direct", "text": "Search the voices for `query_1`.", "result_var": "result", "cases": [VOICE_CASE]}


def test_nameless_and_repeated_call_ids_are_echoed_so_a_strict_server_accepts_them():
    pytest.importorskip("aiohttp")
    import asyncio

    from callbench.models.base import GenerationConfig
    from callbench.models.registry import load_model
    from callbench.testing.fake_openai import FakeOpenAIServer, tool_call, tool_message_problem
    from callbench.tracks.stateful.mcp_mode import mcp_server, run_episode

    nameless = {"id": "c", "type": "function", "function": {"name": None, "arguments": "{}"}}
    replies = [
        {"content": None, "tool_calls": [nameless, tool_call("search_voices", {"query": "calm"}, "c")]},
        {"content": None, "tool_calls": [tool_call("list_audio", {}, "c")]},
        {"content": "```json\n[]\n```"},
    ]
    with FakeOpenAIServer(strict=True) as server:
        server.chat_replies = list(replies)
        model = load_model(f"openai:fake@{server.url}")
        rec, text, _, _ = asyncio.run(
            run_episode(get_scenario("voice"), mcp_server("voice"), VOICE_TASK, VOICE_CASE, model, GenerationConfig(),
                        sample_id="t_direct", max_steps=5)
        )
        bodies = [b for p, b in server.requests if p.endswith("/chat/completions")]
    assert len(bodies) == 3 and all(tool_message_problem(b["messages"]) is None for b in bodies)
    assert rec["finished"] and (rec["tool_calls"], rec["executed"], rec["unknown_tools"]) == (3, 2, 1)
    echoed = [tc for m in rec["messages"] if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
    assert [(tc["id"], tc["function"]["name"]) for tc in echoed] == [
        ("c", "invalid_tool_call"), ("c_2", "search_voices"), ("c_3", "list_audio")
    ]
    results = [m for m in rec["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["c", "c_2", "c_3"]
    assert results[0]["content"].startswith("Error: there is no tool named ''")
    assert not results[1]["content"].startswith("Error") and rec["snapshot"] is not None


HANGING_SERVER = '''
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("hang")

@server.tool(name="ping", structured_output=True)
def ping() -> dict[str, Any]:
    return {"pong": True}

@server.tool(name="slow", structured_output=True)
async def slow() -> dict[str, Any]:
    await anyio.sleep(3600)
    return {"late": True}

@server.tool(name="snapshot", structured_output=True)
async def snapshot() -> dict[str, Any]:
    if "--hang-snapshot" in sys.argv:
        await anyio.sleep(3600)
    return {"state": "ok"}

server.run("stdio")
'''


class _Turns:
    """A tool-calling backend answering with scripted turns (``(text, calls)``)."""

    name = "turns"
    supports_tools = True

    def __init__(self, turns):
        self.turns = list(turns)

    async def generate(self, inp, config):
        from callbench.models.base import ModelOutput

        text, calls = self.turns.pop(0)
        return ModelOutput(text=text, mode="chat", tool_calls=calls)


def _hanging_server(script: Path, *extra: str):
    import sys
    from contextlib import asynccontextmanager

    from callbench.tracks.stateful.mcp_mode import McpServer, _errlog

    @asynccontextmanager
    async def session(seed):
        from mcp import ClientSession, StdioServerParameters, stdio_client

        errlog, opened = _errlog()
        try:
            params = StdioServerParameters(command=sys.executable, args=[str(script), *extra])
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                yield s
        finally:
            if opened:
                errlog.close()

    def decode(tool, result):
        return {"ok": not result.is_error, "result": result.structured_content}

    return McpServer(session=session, decode=decode, hidden=frozenset({"snapshot"}), snapshot_tool="snapshot", call_log="")


def test_a_hung_tool_call_times_out_as_a_tool_error(tmp_path):
    import asyncio

    from callbench.models.base import GenerationConfig
    from callbench.tracks.stateful.mcp_mode import MCP_TOOL_TIMEOUT_S, McpServerError, run_episode

    assert MCP_TOOL_TIMEOUT_S == 30.0
    script = tmp_path / "hang_server.py"
    script.write_text(HANGING_SERVER)
    turns = [
        ("", [{"id": "a", "name": "slow", "arguments": "{}"}, {"id": "b", "name": "ping", "arguments": "{}"}]),
        ("```json\n{}\n```", None),
    ]
    rec, text, _, _ = asyncio.run(
        run_episode(get_scenario("voice"), _hanging_server(script), VOICE_TASK, VOICE_CASE, _Turns(turns), GenerationConfig(),
                    sample_id="t_direct", max_steps=3, tool_timeout_s=0.5)
    )
    # the 0.5 s limit, not the 30 s default, ended the hung call: said by the count and the message
    assert rec["finished"] and (rec["executed"], rec["tool_errors"], rec["tool_timeouts"]) == (2, 1, 1)
    results = [m["content"] for m in rec["messages"] if m["role"] == "tool"]
    assert results == [
        "Error: the call to 'slow' timed out after 0.5 s; whether it changed anything is unknown",
        '{"pong": true}',
    ]
    assert rec["snapshot"] == {"state": "ok"} and "timed out after 0.5 s" in text
    # the harness's own snapshot call hanging is a server error, one line, not a hang
    with pytest.raises(McpServerError, match=r"^voice MCP server: 'snapshot' timed out after 0\.5 s$"):
        asyncio.run(
            run_episode(get_scenario("voice"), _hanging_server(script, "--hang-snapshot"), VOICE_TASK, VOICE_CASE,
                        _Turns([("done", None)]), GenerationConfig(), sample_id="t_direct", max_steps=3, tool_timeout_s=0.5)
        )
