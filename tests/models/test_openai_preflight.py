"""``OpenAICompatBackend.preflight``: a dead or wrong endpoint, a refused key and a server that
ignores grammars are one-line ConfigErrors within seconds, before any sample is asked.

The servers are the bundled :class:`~callbench.testing.fake_openai.FakeOpenAIServer` (it serves
``GET /v1/models`` and ignores grammars, like a server without structured outputs) and, for
answers the fake cannot give to a GET (404, 401, a web page), a few lines of ``aiohttp.web``.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("aiohttp")

from aiohttp import web  # noqa: E402

from callbench.errors import ConfigError  # noqa: E402
from callbench.models.openai_compat import GRAMMAR_PROBE, OpenAICompatBackend  # noqa: E402
from callbench.models.registry import load_model  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load(url: str, **options) -> OpenAICompatBackend:
    backend = load_model(f"openai:m@{url}", **options)
    assert isinstance(backend, OpenAICompatBackend)
    return backend


def _preflight(backend: OpenAICompatBackend, constraint=None) -> None:
    asyncio.run(backend.preflight(constraint))


def _marker_responder(body):
    """A server that applies the grammar: the probe grammar allows only the marker."""
    so = body.get("structured_outputs") or {}
    return {"content": GRAMMAR_PROBE} if GRAMMAR_PROBE in str(so.get("grammar", body.get("guided_grammar"))) else None


# -- reachability ---------------------------------------------------------------------------------


def _counting_calls(backend: OpenAICompatBackend) -> list[str]:
    """The preflight's requests, recorded as they are made: "fails fast" is checked as one
    request, no retry (a count, not a time, so a loaded machine cannot fail it)."""
    made: list[str] = []
    call = backend._preflight_call

    async def counted(http, method, path, *args, **kwargs):
        made.append(f"{method} {path}")
        return await call(http, method, path, *args, **kwargs)

    backend._preflight_call = counted  # type: ignore[method-assign]
    return made


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1", None])
def test_dead_endpoint_fails_fast_in_one_line(url):
    url = url or f"http://127.0.0.1:{_free_port()}/v1"
    backend = _load(url)  # default retries (5) and timeout (120 s): preflight uses neither
    made = _counting_calls(backend)
    with pytest.raises(ConfigError) as err:
        _preflight(backend)
    assert made == ["GET models"]
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"openai:m@{url}: cannot connect (ConnectionRefusedError")
    assert message.endswith("; is the server running?")


def test_live_server_passes_with_one_get(tmp_path):
    with FakeOpenAIServer() as server:
        _preflight(_load(server.url))
        assert server.requests == []  # GET /v1/models only (POSTs are recorded)


def test_silent_server_times_out_in_one_line():
    # a socket that accepts connections but never answers
    with socket.create_server(("127.0.0.1", 0)) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        backend = _load(url, timeout=0.5)
        made = _counting_calls(backend)
        with pytest.raises(ConfigError, match=r"no answer from GET /models within 0\.5 s; is the server up") as err:
            _preflight(backend)
        assert made == ["GET models"] and "\n" not in str(err.value)


class _Web:
    """An aiohttp.web app on loopback, for answers the fake server does not give to a GET."""

    def __init__(self, routes: dict[tuple[str, str], tuple[int, str, str]]):
        self.routes = routes
        self.seen: list[tuple[str, str, dict | None]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.method == "POST" else None
        self.seen.append((request.method, request.path, body))
        status, ctype, text = self.routes.get((request.method, request.path), (404, "application/json", '{"detail": "Not Found"}'))
        return web.Response(status=status, text=text, content_type=ctype)

    async def run(self, check) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            await check(f"http://127.0.0.1:{port}/v1")
        finally:
            await runner.cleanup()


_CHAT_OK = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}]}'


def test_no_models_endpoint_falls_back_to_one_token():
    app = _Web({("POST", "/v1/chat/completions"): (200, "application/json", _CHAT_OK)})

    async def check(url):
        await _load(url).preflight()

    asyncio.run(app.run(check))
    assert [(m, p) for m, p, _ in app.seen] == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert app.seen[1][2]["max_tokens"] == 1 and app.seen[1][2]["model"] == "m"


def test_no_api_at_all_is_a_wrong_url():
    async def check(url):
        with pytest.raises(ConfigError, match=r"no OpenAI-compatible API there \(HTTP 404 for /models and /completions\); check the URL"):
            await _load(url, mode="completion").preflight()

    asyncio.run(_Web({}).run(check))


def test_refused_key_and_web_page():
    app = _Web({("GET", "/v1/models"): (401, "application/json", '{"error": {"message": "Incorrect API key provided"}}')})

    async def check_key(url):
        with pytest.raises(ConfigError, match=r"refused the API key \(HTTP 401: Incorrect API key provided\); set OPENAI_API_KEY"):
            await _load(url).preflight()

    asyncio.run(app.run(check_key))
    page = _Web({("GET", "/v1/models"): (200, "text/html", "<html><body>Welcome to nginx</body></html>")})

    async def check_page(url):
        with pytest.raises(ConfigError, match=r"answered text/html, not JSON .*not an OpenAI-compatible API; check the URL") as err:
            await _load(url).preflight()
        assert "\n" not in str(err.value)

    asyncio.run(page.run(check_page))


def test_busy_server_passes():
    # 503 on the fallback: the server is there; the run's retries deal with a busy one
    app = _Web({("POST", "/v1/chat/completions"): (503, "application/json", '{"error": {"message": "overloaded"}}')})

    async def check(url):
        await _load(url).preflight()

    asyncio.run(app.run(check))


# -- the grammar probe ------------------------------------------------------------------------------


def test_server_that_ignores_the_grammar_is_detected():
    with FakeOpenAIServer() as server:  # the fake echoes and never applies grammars
        with pytest.raises(ConfigError) as err:
            _preflight(_load(server.url), constraint=True)
        message = str(err.value)
        assert "\n" not in message
        assert f"the server ignored the grammar: asked for exactly {GRAMMAR_PROBE!r}, it answered 'chat:Reply with one word.'" in message
        assert "--structured-outputs-config.backend guidance" in message
        ((path, body),) = server.requests
        assert path == "/v1/chat/completions"
        assert body["structured_outputs"] == {"grammar": f'start: "{GRAMMAR_PROBE}"\n'}


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_compliant_server_passes(mode):
    with FakeOpenAIServer(_marker_responder) as server:
        server.completion_replies = [GRAMMAR_PROBE]
        backend = _load(server.url, mode=mode, extra_body={"top_k": 1})
        _preflight(backend, constraint=True)
        ((path, body),) = server.requests
        assert path == f"/v1/{'chat/completions' if mode == 'chat' else 'completions'}"
        assert body["top_k"] == 1  # the user's extra_body travels, as in every request


def test_probe_uses_the_constraints_own_request_form():
    class Legacy:
        def processor(self, kind, target, *, heal="", max_tokens=None):
            raise AssertionError("a server needs no processor")

        def server_body(self, *, heal=""):
            return {"guided_grammar": 'start: "x"', "guided_decoding_backend": "guidance"}

    with FakeOpenAIServer(_marker_responder) as server:
        _preflight(_load(server.url), constraint=Legacy())
        body = server.requests[0][1]
        assert body["guided_grammar"] == f'start: "{GRAMMAR_PROBE}"\n' and body["guided_decoding_backend"] == "guidance"
        assert "structured_outputs" not in body


def test_grammar_constraint_object():
    pytest.importorskip("llguidance")
    from callbench.constrain.engine import GrammarConstraint

    with FakeOpenAIServer(_marker_responder) as server:
        _preflight(_load(server.url), constraint=GrammarConstraint('start: "get(" /[0-9]/ ")"'))
        assert GRAMMAR_PROBE in server.requests[0][1]["structured_outputs"]["grammar"]


def test_cut_marker_counts_as_obeying_and_refusal_is_reported():
    with FakeOpenAIServer() as server:
        server.completion_replies = [GRAMMAR_PROBE[:9]]  # finish_reason "length": a prefix is obeying
        _preflight(_load(server.url, mode="completion"), constraint=True)
        server.rules = [(lambda b: "structured_outputs" in b, ("status", 400, "unknown field structured_outputs"))]
        with pytest.raises(ConfigError, match=r"refused a request with a grammar \(HTTP 400: unknown field structured_outputs\)"):
            _preflight(_load(server.url), constraint=True)


# -- identity options --------------------------------------------------------------------------------


def test_identity_options_are_the_ones_that_change_answers():
    a = _load("http://127.0.0.1:9/v1")
    assert a.identity_options == {"mode": "chat", "extra_body": None, "token_healing": False}
    b = _load("http://127.0.0.1:9/v1", timeout=5, max_retries=0, concurrency=2, backoff=0.1, api_key="k")
    assert b.identity_options == a.identity_options
    c = _load("http://127.0.0.1:9/v1", mode="completion", extra_body='{"top_k": 1}', token_healing=True)
    assert c.identity_options == {"mode": "completion", "extra_body": {"top_k": 1}, "token_healing": True}
