"""The OpenAI-compatible backend against a real HTTP server on loopback.

The server (:class:`callbench.testing.fake_openai.FakeOpenAIServer`, asyncio + h11 with keep-alive)
answers ``/v1/chat/completions`` and ``/v1/completions``, records every request, counts requests in
flight, can be scripted to fail (429, 500, 400, malformed bodies, or sleep past the client timeout)
before it succeeds, and answers chat requests with scripted tool calls. Real sockets are used so
the backend's own error mapping (status codes, timeouts) is exercised, not a mock of it.
"""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("aiohttp")

from callbench.errors import ConfigError  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput, require_tools  # noqa: E402
from callbench.models.openai_compat import ModelRequestError, OpenAICompatBackend, parse_target  # noqa: E402
from callbench.models.registry import load_model  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer, tool_call  # noqa: E402


@pytest.fixture
def server():
    with FakeOpenAIServer() as fake:
        yield fake


def _inp(i: int = 0) -> ModelInput:
    return ModelInput(
        sample_id=f"s{i}",
        prompt=f"def call_api_{i}(",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": f"hello {i}"}],
    )


def _backend(server: FakeOpenAIServer, **options) -> OpenAICompatBackend:
    options.setdefault("backoff", 0.01)
    options.setdefault("backoff_max", 0.05)
    backend = load_model(f"openai:tiny-model@{server.url}", **options)
    assert isinstance(backend, OpenAICompatBackend)
    return backend


def test_parse_target():
    assert parse_target("qwen@http://127.0.0.1:8000/v1/") == ("qwen", "http://127.0.0.1:8000/v1")
    assert parse_target("org/model@v2@https://h/v1") == ("org/model@v2", "https://h/v1")
    assert parse_target("gpt-4o-mini") == ("gpt-4o-mini", None)
    with pytest.raises(ConfigError):
        parse_target("")
    with pytest.raises(ConfigError):
        parse_target("m@ftp://host/v1")


def test_base_url_from_env_and_identity(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.1:9000/v1")
    backend = load_model("openai:m")
    assert backend.identity == "openai:m@http://10.0.0.1:9000/v1"
    assert backend.mode == "chat" and backend.max_concurrency == 8 and not backend.steerable


def test_options_are_validated():
    with pytest.raises(ConfigError, match="unknown option"):
        load_model("openai:m@http://127.0.0.1:1/v1", concurency=3)
    with pytest.raises(ConfigError, match="timeout"):
        load_model("openai:m@http://127.0.0.1:1/v1", timeout="soon")
    with pytest.raises(ConfigError, match="mode"):
        load_model("openai:m@http://127.0.0.1:1/v1", mode="embedding")
    backend = load_model("openai:m@http://127.0.0.1:1/v1", concurrency="3", extra_body='{"guided_json": {}}')
    assert backend.max_concurrency == 3 and backend.extra_body == {"guided_json": {}}


def test_chat_round_trip(server):
    backend = _backend(server)
    cfg = GenerationConfig(max_tokens=17, temperature=0.0, top_p=0.9, stop=("\n\n", "```"), seed=5)
    out = asyncio.run(backend.generate(_inp(1), cfg))
    assert out.text == "chat:hello 1"
    assert out.mode == "chat"
    assert (out.prompt_tokens, out.completion_tokens) == (7, 3)
    assert out.finish_reason == "stop"
    assert out.latency_s is not None and out.latency_s >= 0
    assert out.extra["attempts"] == 1
    path, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert body["messages"] == _inp(1).messages
    assert body["model"] == "tiny-model"
    assert body["max_tokens"] == 17 and body["stop"] == ["\n\n", "```"]
    assert body["temperature"] == 0.0 and body["top_p"] == 0.9 and body["seed"] == 5


def test_completion_round_trip_and_extra_body(server):
    backend = _backend(server, mode="completion", extra_body={"guided_regex": "[a-z]+"})
    out = asyncio.run(backend.generate(_inp(2), GenerationConfig(max_tokens=4)))
    assert out.mode == "completion"
    assert out.text == "completion:" + _inp(2).prompt[-5:]
    assert out.finish_reason == "length"
    path, body = server.requests[0]
    assert path == "/v1/completions"
    assert body["prompt"] == _inp(2).prompt
    assert body["max_tokens"] == 4
    assert "stop" not in body  # no stop strings configured: none sent
    assert body["guided_regex"] == "[a-z]+"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_transient_status_then_succeeds(server, status):
    server.script = [("status", status), ("status", status)]
    backend = _backend(server)
    out = asyncio.run(backend.generate(_inp(), GenerationConfig()))
    assert out.text == "chat:hello 0"
    assert out.extra["attempts"] == 3
    assert len(server.requests) == 3


def test_retry_after_header_is_honoured(server):
    server.script = [("retry_after", 0.4)]
    backend = _backend(server, backoff_max=1.0)  # jitter alone would wait about 0.02 s
    started = time.perf_counter()
    out = asyncio.run(backend.generate(_inp(), GenerationConfig()))
    assert out.extra["attempts"] == 2
    assert time.perf_counter() - started >= 0.4
    assert out.extra["elapsed_s"] >= 0.4 > out.latency_s


def test_gives_up_after_max_retries(server):
    server.script = [("status", 429)] * 10
    backend = _backend(server, max_retries=2)
    with pytest.raises(ModelRequestError) as err:
        asyncio.run(backend.generate(_inp(), GenerationConfig()))
    assert err.value.attempts == 3 and err.value.status == 429
    assert len(server.requests) == 3
    assert "gave up after 3 attempt(s)" in str(err.value) and "\n" not in str(err.value)


def test_no_retry_on_400(server):
    server.script = [("status", 400)]
    backend = _backend(server)
    with pytest.raises(ModelRequestError) as err:
        asyncio.run(backend.generate(_inp(), GenerationConfig()))
    message = str(err.value)
    assert len(server.requests) == 1
    assert err.value.status == 400 and err.value.attempts == 1
    assert "\n" not in message
    assert "HTTP 400" in message and "scripted failure 400" in message
    assert message.startswith(f"openai:tiny-model@{server.url}")


def test_timeout_is_retried(server):
    server.script = [("sleep", 1.5)]
    backend = _backend(server, timeout=0.3)
    out = asyncio.run(backend.generate(_inp(), GenerationConfig()))
    assert out.text == "chat:hello 0"
    assert out.extra["attempts"] == 2


def test_connection_error_is_retried_then_reported():
    backend = load_model("openai:m@http://127.0.0.1:9/v1", max_retries=1, backoff=0.01, backoff_max=0.01)
    with pytest.raises(ModelRequestError, match="gave up after 2 attempt"):
        asyncio.run(backend.generate(_inp(), GenerationConfig()))


def test_bounded_concurrency(server):
    server.delay = 0.1
    backend = _backend(server, concurrency=3)

    async def run_all():
        try:
            return await asyncio.gather(*(backend.generate(_inp(i), GenerationConfig()) for i in range(20)))
        finally:
            await backend.aclose()

    outs = asyncio.run(run_all())
    assert [o.text for o in outs] == [f"chat:hello {i}" for i in range(20)]
    assert len(server.requests) == 20
    assert 2 <= server.max_in_flight <= 3


def test_backend_survives_several_event_loops(server):
    backend = _backend(server)
    for _ in range(2):
        out = asyncio.run(backend.generate(_inp(), GenerationConfig()))
        assert out.text == "chat:hello 0"


# -- native tool calling

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "divide",
            "description": "arg_0 / arg_1",
            "parameters": {"type": "object", "properties": {"arg_0": {"type": "number"}, "arg_1": {"type": "number"}}},
        },
    }
]


def _tools_inp() -> ModelInput:
    return ModelInput(
        sample_id="t",
        prompt="unused in chat mode",
        messages=[
            {"role": "system", "content": "use tools"},
            {"role": "user", "content": "20 / 100?"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("divide", {"arg_0": 20, "arg_1": 100}, "c0")]},
            {"role": "tool", "tool_call_id": "c0", "content": "$var_1 = {\"result\": 0.2}"},
        ],
        tools=TOOLS,
    )


def test_tool_calls_round_trip(server):
    server.chat_replies = [
        {
            "content": "two calls",
            "tool_calls": [tool_call("divide", {"arg_0": 1, "arg_1": 2}, "a"), tool_call("divide", '{"arg_0": 1,', "b")],
        }
    ]
    backend = _backend(server)
    assert backend.supports_tools
    require_tools(backend)  # no error in chat mode
    out = asyncio.run(backend.generate(_tools_inp(), GenerationConfig()))
    assert out.text == "two calls" and out.finish_reason == "tool_calls"
    # arguments come back as the server sent them, malformed ones included
    assert out.tool_calls == [
        {"id": "a", "name": "divide", "arguments": '{"arg_0": 1, "arg_1": 2}'},
        {"id": "b", "name": "divide", "arguments": '{"arg_0": 1,'},
    ]
    _, body = server.requests[0]
    assert body["tools"] == TOOLS and body["tool_choice"] == "auto"
    # assistant tool calls and tool results are sent as given
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "divide"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c0", "content": '$var_1 = {"result": 0.2}'}


def test_tools_final_answer_has_no_tool_calls(server):
    server.chat_replies = [{"content": "The answer is 0.2."}]
    out = asyncio.run(_backend(server).generate(_tools_inp(), GenerationConfig()))
    assert out.text == "The answer is 0.2." and out.tool_calls is None and out.finish_reason == "stop"


def test_no_tools_no_tool_fields(server):
    out = asyncio.run(_backend(server).generate(_inp(3), GenerationConfig()))
    assert out.tool_calls is None
    _, body = server.requests[0]
    assert "tools" not in body and "tool_choice" not in body


def test_tools_keep_the_retry_policy(server):
    server.script = [("status", 429), ("status", 503)]
    server.chat_replies = [{"content": None, "tool_calls": [tool_call("divide", {"arg_0": 3, "arg_1": 4}, "x")]}]
    out = asyncio.run(_backend(server).generate(_tools_inp(), GenerationConfig()))
    assert out.extra["attempts"] == 3 and len(server.requests) == 3
    assert out.tool_calls == [{"id": "x", "name": "divide", "arguments": '{"arg_0": 3, "arg_1": 4}'}]
    assert all(body["tools"] == TOOLS for _, body in server.requests)


def test_tools_need_chat_mode(server):
    backend = _backend(server, mode="completion")
    assert not backend.supports_tools
    with pytest.raises(ConfigError, match="no native tool calling") as err:
        require_tools(backend, "--mode tools")
    assert "\n" not in str(err.value) and "completion mode" in str(err.value)
    with pytest.raises(ConfigError, match="chat mode"):
        asyncio.run(backend.generate(_tools_inp(), GenerationConfig()))
    assert server.requests == []


# -- token healing through vLLM's /tokenize (issue 9) ----------------------------------------------


def _heal_input(constraint=None) -> ModelInput:
    return ModelInput(sample_id="h", prompt="// x\naxios.", messages=[], constraint=constraint, heal_boundary=True)


def test_token_healing_through_the_servers_tokenizer(server):
    """The prompt goes as token ids without its last token, the continuation is made to start with
    the removed text by a structured-outputs regex, and that text is stripped from the output."""
    backend = _backend(server, mode="completion", token_healing=True)
    assert backend.identity.endswith("[heal]")
    server.completion_replies.append(".get('u')")
    out = asyncio.run(backend.generate(_heal_input(), GenerationConfig(max_tokens=5)))
    assert out.text == "get('u')" and out.extra["token_healing"] == {"removed": ".", "tokens": 1}
    paths = [p for p, _ in server.requests]
    assert paths == ["/tokenize", "/detokenize", "/v1/completions"]
    body = server.requests[-1][1]
    assert body["prompt"] == [ord(c) for c in "// x\naxios"]
    assert body["structured_outputs"] == {"regex": r"\.(?s:.*)"}


def test_token_healing_heals_the_servers_grammar(server):
    pytest.importorskip("llguidance")
    from callbench.constrain.engine import GrammarConstraint

    backend = _backend(server, mode="completion", token_healing=True)
    server.completion_replies.append(".get(1)")
    out = asyncio.run(backend.generate(_heal_input(GrammarConstraint('start: "get(" /[0-9]/ ")"')), GenerationConfig()))
    assert out.text == "get(1)"
    grammar = server.requests[-1][1]["structured_outputs"]["grammar"]
    assert grammar.splitlines()[1] == 'start: "." start_before_healing'


def test_token_healing_needs_tokenize_and_is_off_by_default(server):
    out = asyncio.run(_backend(server, mode="completion").generate(_heal_input(), GenerationConfig()))
    assert "token_healing" not in out.extra and [p for p, _ in server.requests] == ["/v1/completions"]
    server.tokenize_missing = True
    with pytest.raises(ConfigError, match="/tokenize"):
        asyncio.run(_backend(server, mode="completion", token_healing=True).generate(_heal_input(), GenerationConfig()))
