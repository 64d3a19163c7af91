"""The OpenAI-compatible backend against a real HTTP server on loopback.

The server is a few lines of stdlib ``http.server``: it answers ``/v1/chat/completions`` and
``/v1/completions``, records every request, counts requests in flight, and can be scripted to fail
(429, 500, 400, or sleep past the client timeout) before it succeeds. Real sockets are used so the
SDK's own error mapping (status codes, timeouts) is exercised, not a mock of it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from callbench.errors import ConfigError  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402
from callbench.models.openai_compat import ModelRequestError, OpenAICompatBackend, parse_target  # noqa: E402
from callbench.models.registry import load_model  # noqa: E402


class FakeServer:
    """Scriptable OpenAI look-alike; ``script`` holds actions consumed one per request."""

    def __init__(self) -> None:
        self.script: list[tuple[str, float]] = []
        self.requests: list[tuple[str, dict]] = []
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
                    pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with fake.lock:
                    fake.requests.append((self.path, body))
                    action = fake.script.pop(0) if fake.script else ("ok", 0)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    kind, arg = action
                    if kind == "retry_after":
                        self.send_response(429)
                        self.send_header("Retry-After", str(arg))
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    if kind == "status":
                        self._send(
                            int(arg), {"error": {"message": f"scripted failure {int(arg)}", "type": "x"}}
                        )
                        return
                    time.sleep(arg if kind == "sleep" else fake.delay)
                    self._send(200, fake.answer(self.path, body))
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def answer(self, path: str, body: dict) -> dict:
        usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        if path.endswith("/chat/completions"):
            last = body["messages"][-1]["content"]
            return {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"chat:{last}"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        return {
            "id": "t1",
            "object": "text_completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "text": f"completion:{body['prompt'][-5:]}", "finish_reason": "length"}],
            "usage": usage,
        }


@pytest.fixture
def server():
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def _inp(i: int = 0) -> ModelInput:
    return ModelInput(
        sample_id=f"s{i}",
        prompt=f"def call_api_{i}(",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": f"hello {i}"}],
    )


def _backend(server: FakeServer, **options) -> OpenAICompatBackend:
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
