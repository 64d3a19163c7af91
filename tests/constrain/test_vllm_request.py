"""The grammar as a vLLM request: exact JSON on the wire, and llguidance reads the same grammar.

A stdlib HTTP server on 127.0.0.1 plays the vLLM OpenAI-compatible server and records the body
that ``callbench.models.openai_compat`` (the real backend, real OpenAI SDK) sends when configured
with ``extra_body=vllm_extra_body(lark)``. The grammar text in that body is then given to
``llguidance.grammar_from("grammar", ...)``, the call vLLM's guidance backend makes, which must
read it as Lark and accept it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("aiohttp")
llguidance = pytest.importorskip("llguidance")

from callbench.constrain.engine import GrammarConstraint  # noqa: E402
from callbench.constrain.vllm import LARK_HEADER, vllm_extra_body, vllm_grammar_text  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402
from callbench.models.openai_compat import OpenAICompatBackend  # noqa: E402
from callbench.testing.constrain import MINI_AXIOS_LARK  # noqa: E402

# Valid Lark whose start rule is inlined (`?start:`), so no line begins with `start:`.
INLINED_START = '?start: call\ncall: "get(" NUM ")"\nNUM: /[0-9]+/\n'
ANSWER = "get('https://x/pets', {params: {limit: 5}})"


class RecordingServer:
    """Answers chat and completion requests with ANSWER and records (path, JSON body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                usage = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
                if self.path.endswith("/chat/completions"):
                    choice = {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": ANSWER},
                    }
                    payload = {"id": "1", "object": "chat.completion", "created": 0, "model": body["model"]}
                else:
                    choice = {"index": 0, "finish_reason": "stop", "text": ANSWER, "logprobs": None}
                    payload = {"id": "1", "object": "text_completion", "created": 0, "model": body["model"]}
                data = json.dumps({**payload, "choices": [choice], "usage": usage}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = RecordingServer()
    yield srv
    srv.close()


def _send(server: RecordingServer, extra_body: dict, mode: str) -> dict:
    backend = OpenAICompatBackend("served-model", server.url, mode=mode, extra_body=extra_body, max_retries=0)
    inp = ModelInput(
        sample_id="s", prompt="const r = await axios.", messages=[{"role": "user", "content": "go"}]
    )
    out = asyncio.run(backend.generate(inp, GenerationConfig(max_tokens=64)))
    asyncio.run(backend.aclose())
    assert out.text == ANSWER
    [(path, body)] = server.requests
    assert path.endswith("/chat/completions" if mode == "chat" else "/completions")
    return body


def _vllm_reads_it(text: str) -> None:
    """What vLLM's guidance backend does with the request's grammar text."""
    grammar = llguidance.grammar_from("grammar", text)
    assert llguidance.LLMatcher.validate_grammar(grammar) == ""


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_request_carries_structured_outputs_grammar(server, mode):
    body = _send(server, vllm_extra_body(MINI_AXIOS_LARK), mode)
    assert body["structured_outputs"] == {"grammar": MINI_AXIOS_LARK}  # has a `start:` line: unchanged
    assert "guided_grammar" not in body and "guided_decoding_backend" not in body
    # The ordinary fields are untouched by the extra body.
    assert body["model"] == "served-model" and body["max_tokens"] == 64 and body["temperature"] == 0.0
    _vllm_reads_it(body["structured_outputs"]["grammar"])
    assert (
        llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(MINI_AXIOS_LARK)) == ""
    )


def test_constraint_body_keeps_the_exact_mask_option(server):
    constraint = GrammarConstraint(MINI_AXIOS_LARK)
    body = _send(server, constraint.server_body(), "chat")
    text = body["structured_outputs"]["grammar"]
    assert text == constraint.effective_lark and text.startswith('%llguidance {"no_forcing": true}\n')
    _vllm_reads_it(text)
    assert GrammarConstraint(MINI_AXIOS_LARK, exact=False).server_body() == vllm_extra_body(
        MINI_AXIOS_LARK
    )


def test_grammar_without_a_start_line_gets_the_lark_header(server):
    """``?start:`` is valid Lark, but vLLM's guidance backend would take the text for GBNF."""
    with pytest.raises(ValueError, match="GBNF"):
        llguidance.grammar_from("grammar", INLINED_START)
    assert vllm_grammar_text(INLINED_START) == LARK_HEADER + INLINED_START
    body = _send(server, vllm_extra_body(INLINED_START), "completion")
    assert body["structured_outputs"] == {"grammar": LARK_HEADER + INLINED_START}
    _vllm_reads_it(body["structured_outputs"]["grammar"])
    # Both markers llguidance looks for leave the text alone.
    assert vllm_grammar_text(MINI_AXIOS_LARK) == MINI_AXIOS_LARK
    assert vllm_grammar_text("%llguidance {}\n" + INLINED_START) == "%llguidance {}\n" + INLINED_START


def test_legacy_fields():
    assert vllm_extra_body(MINI_AXIOS_LARK, legacy=True) == {
        "guided_grammar": MINI_AXIOS_LARK,
        "guided_decoding_backend": "guidance",
    }
