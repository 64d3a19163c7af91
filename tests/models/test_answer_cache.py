"""The opt-in answer cache (``--model-arg answer_cache=PATH``): a second identical run sends no
request; any change of the request (a decoding setting, the prompt, the model's options) asks the
model again; failures and constrained samples are never cached."""

from __future__ import annotations

import asyncio

import pytest

from callbench.models import load_model
from callbench.models.answer_cache import CachedBackend, request_key
from callbench.models.base import BackendError, GenerationConfig, ModelInput
from callbench.testing.fake_openai import FakeOpenAIServer

FAST = {"backoff": 0.01, "backoff_max": 0.02, "max_retries": 0}


def _inp(text: str = "hello", **kw) -> ModelInput:
    return ModelInput(sample_id="s", prompt=text, messages=[{"role": "user", "content": text}], **kw)


def _ask(backend, inp, config: GenerationConfig | None = None):
    return asyncio.run(backend.generate(inp, config or GenerationConfig()))


def test_the_same_request_is_answered_from_the_cache(tmp_path):
    cache = tmp_path / "answers.sqlite"
    with FakeOpenAIServer() as server:
        first = load_model(f"openai:m@{server.url}", answer_cache=str(cache), **FAST)
        assert isinstance(first, CachedBackend) and first.identity == f"openai:m@{server.url}"
        out = _ask(first, _inp())
        assert out.text == "chat:hello" and "answer_cache" not in out.extra
        # another backend object (another run) over the same file
        second = load_model(f"openai:m@{server.url}", answer_cache=str(cache), **FAST)
        again = _ask(second, _inp())
        assert again.text == "chat:hello" and again.extra["answer_cache"] == "hit"
        assert len(server.requests) == 1
        # any change of the request asks the model
        _ask(second, _inp(), GenerationConfig(temperature=0.7))
        _ask(second, _inp(), GenerationConfig(seed=1))
        _ask(second, _inp("other"))
        assert len(server.requests) == 4


def test_the_key_covers_what_decides_an_answer():
    with FakeOpenAIServer() as server:
        chat = load_model(f"openai:m@{server.url}")
        other = load_model(f"openai:m@{server.url}", extra_body={"top_k": 5})
        base = request_key(chat, _inp(), GenerationConfig())
        assert base == request_key(chat, _inp(), GenerationConfig())
        assert base != request_key(other, _inp(), GenerationConfig())  # an answer-changing option
        assert base != request_key(chat, _inp(), GenerationConfig(stop=("\n",)))
        assert base != request_key(chat, _inp(tools=[{"type": "function", "function": {"name": "f"}}]), GenerationConfig())
        assert base != request_key(chat, _inp(reference="gold"), GenerationConfig())


def test_failures_and_constrained_samples_are_not_cached(tmp_path):
    cache = tmp_path / "answers.sqlite"
    with FakeOpenAIServer() as server:
        backend = load_model(f"openai:m@{server.url}", answer_cache=str(cache), **FAST)
        server.fail(("status", 400, "nope"))
        with pytest.raises(BackendError):
            _ask(backend, _inp())
        assert _ask(backend, _inp()).text == "chat:hello"  # asked again, answered
        assert backend.misses == 2 and backend.hits == 0


def test_a_second_identical_run_sends_no_request(tmp_path):
    import callbench

    cache = str(tmp_path / "answers.sqlite")
    with FakeOpenAIServer() as server:
        kw = dict(model_options={"answer_cache": cache, **FAST}, limit=3)
        one = callbench.run("webapi", f"openai:m@{server.url}", out_dir=tmp_path / "a", **kw)
        sent = len(server.requests)
        assert sent == 3
        two = callbench.run("webapi", f"openai:m@{server.url}", out_dir=tmp_path / "b", **kw)
        assert len(server.requests) == sent  # every answer came from the cache
        assert one.generated == two.generated == 3 and not two.resumed  # a new run, not a resume
        assert one.summary["metrics"] == two.summary["metrics"] and two.summary["n"] == 3  # the same answers, scored alike


def test_an_unusable_cache_path_is_one_line(tmp_path):
    from callbench.errors import ConfigError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="answer_cache=.*cannot open the answer cache"):
        load_model("gold", answer_cache=str(blocker / "answers.sqlite"))
