"""The ``litellm:`` backend against the local fake OpenAI server (LiteLLM's ``openai/`` provider
with ``@BASE_URL``): the request carries the decoding settings, answers and tool calls come back,
429/5xx are retried by callbench's policy, other 4xx fail at once, constraints are refused."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("litellm", reason="the litellm extra is not installed: pip install 'callbench[litellm]'")

from callbench.errors import ConfigError  # noqa: E402
from callbench.models import load_model  # noqa: E402
from callbench.models.base import BackendError, GenerationConfig, ModelInput  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer, tool_call  # noqa: E402

FAST = {"api_key": "sk-test", "backoff": 0.01, "backoff_max": 0.02, "timeout": 10.0}


def _backend(server: FakeOpenAIServer, **options):
    return load_model(f"litellm:openai/fake-model@{server.url}", **FAST, **options)


def _ask(backend, **kw):
    inp = ModelInput(sample_id="s1", prompt="p", messages=[{"role": "user", "content": "hello"}], **kw)
    return asyncio.run(backend.generate(inp, GenerationConfig(max_tokens=17, temperature=0.0, seed=3, stop=("\n\n",))))


def test_a_chat_answer_with_the_decoding_settings():
    with FakeOpenAIServer() as server:
        server.chat_replies.append({"content": "the answer"})
        backend = _backend(server)
        out = _ask(backend)
        assert out.text == "the answer" and out.mode == "chat" and out.extra["attempts"] == 1
        path, body = server.requests[-1]
        assert path.endswith("/chat/completions")
        assert body["model"] == "fake-model" and body["messages"] == [{"role": "user", "content": "hello"}]
        assert body["max_tokens"] == 17 and body["temperature"] == 0.0 and body["seed"] == 3 and body["stop"] == ["\n\n"]
        assert backend.identity == f"litellm:openai/fake-model@{server.url}"
        assert backend.identity_options == {"drop_params": True}


def test_native_tool_calls_come_back_with_their_arguments_as_sent():
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    with FakeOpenAIServer() as server:
        server.chat_replies.append({"content": None, "tool_calls": [tool_call("add", '{"a": 1, "b": 2}', "c1")]})
        out = _ask(_backend(server), tools=tools)
        assert out.tool_calls == [{"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'}]
        assert server.requests[-1][1]["tools"] == tools and server.requests[-1][1]["tool_choice"] == "auto"


def test_rate_limits_and_server_errors_are_retried_by_callbench():
    with FakeOpenAIServer() as server:
        server.fail(("status", 429)).fail(("status", 503))
        server.chat_replies.append({"content": "third time"})
        out = _ask(_backend(server, max_retries=3))
        assert out.text == "third time" and out.extra["attempts"] == 3
        assert len(server.requests) == 3  # LiteLLM made no retries of its own


def test_a_refused_request_fails_at_once_and_retries_end():
    with FakeOpenAIServer() as server:
        server.fail(("status", 400, "context too long"))
        with pytest.raises(BackendError, match="request refused after 1 attempt") as info:
            _ask(_backend(server, max_retries=3))
        assert info.value.status == 400 and len(server.requests) == 1
    with FakeOpenAIServer() as server:
        server.fail(("status", 503), times=5)
        with pytest.raises(BackendError, match="gave up after 3 attempt"):
            _ask(_backend(server, max_retries=2))
        assert len(server.requests) == 3


def test_constrained_samples_are_a_configuration_error():
    with FakeOpenAIServer() as server:
        with pytest.raises(ConfigError, match="constrained decoding needs a server that applies grammars"):
            _ask(_backend(server), constraint=object())
        assert server.requests == []


def test_options_and_targets():
    with pytest.raises(ConfigError, match="unknown option"):
        load_model("litellm:anthropic/claude-3-5-haiku-20241022", temprature=1)
    backend = load_model("litellm:vertex_ai/claude-3-5-sonnet@20240620")
    assert backend.model == "vertex_ai/claude-3-5-sonnet@20240620" and backend.base_url is None  # not a URL
