"""A scriptable OpenAI-compatible HTTP server on loopback, for tests and benchmarks.

:class:`FakeOpenAIServer` is a small asyncio + h11 HTTP/1.1 server (keep-alive) that answers
``/v1/chat/completions`` and ``/v1/completions`` over real sockets, so the SDK's own request
building and error mapping are exercised, not a mock of them. It records every request, counts
requests in flight, answers chat requests with scripted assistant messages (tool calls included),
and injects faults -- per request from a script, for matching requests from rules, or for a seeded
random share: 429 (with Retry-After), 5xx, 4xx with a message, sleeps past a client timeout,
HTML or truncated or incomplete bodies, trickled bodies and dropped connections.
``python -m callbench.testing.fake_openai serve`` runs one in its own process (for benchmarks).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import h11

__all__ = ["ACTIONS", "FakeOpenAIServer", "parse_fault", "reply_key", "tool_call", "tool_message_problem"]


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


# ---------------------------------------------------------------------------------------------
# The fake OpenAI server.
#
# It is hand-assembled from asyncio and h11 (a sans-IO HTTP/1.1 parser and serializer) rather
# than built on a web framework on purpose: a fault injector needs byte-level control over what
# goes on the wire (a body cut short under a Content-Length that matches the cut, a body trickled
# a few bytes at a time, an HTML page where JSON belongs, a connection closed without an answer),
# and frameworks hide exactly those bytes. asyncio also lets one thread hold many keep-alive
# connections, with delays that do not block one another, cheaply enough to drive benchmarks.
# ---------------------------------------------------------------------------------------------

#: The kinds of action a request can get (see :class:`FakeOpenAIServer`).
ACTIONS = (
    "ok", "status", "retry_after", "sleep", "html", "truncated", "empty_choices", "null_content",
    "missing_fields", "trickle", "drop",
)
_MALFORMED = frozenset({"html", "truncated", "empty_choices", "null_content", "missing_fields"})
_OK: tuple[Any, ...] = ("ok", 0)
_JSON = b"application/json"
_HTML = b"text/html; charset=utf-8"
_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}
_HTML_PAGE = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"
_USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def reply_key(body: dict[str, Any]) -> str:
    """The key a ``--replies`` file (and :attr:`FakeOpenAIServer.replies`) maps to a reply: the
    sha256 hex digest of the request's text -- the content of the last message for chat, the
    prompt for completions (a non-string content or prompt is JSON-encoded first)."""
    if "messages" in body:
        messages = body.get("messages") or [{}]
        text: Any = messages[-1].get("content") if isinstance(messages[-1], dict) else messages[-1]
    else:
        text = body.get("prompt", "")
    if not isinstance(text, str):
        text = json.dumps(text, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


class FakeOpenAIServer:
    """A scriptable, fault-injecting OpenAI look-alike on loopback (a context manager, or
    :meth:`start`/:meth:`stop`; ``python -m callbench.testing.fake_openai serve`` runs one in its own
    process). HTTP/1.1 with keep-alive, on an asyncio loop in a daemon thread.

    **Answers.** Chat answers come, in order of preference, from ``chat_replies`` (assistant
    messages ``{"content", "tool_calls"?}`` consumed one per request), from ``responder(body)``
    (returns such a message, or None to fall through; it is called in the server's thread), from
    ``replies`` (a dict ``reply_key(body) -> text``, see :func:`reply_key`), or echo
    ``chat:<last message content>``. Completions answer from ``completion_replies`` (consumed one
    per request), then ``replies``, else echo ``completion:<last 5 prompt characters>``.
    ``/tokenize`` and ``/detokenize`` (vLLM's, beside ``/v1``) use one token per character (its
    code point), unless ``tokenize_missing`` makes them answer 404 like servers without them.
    ``strict`` answers 400, as strict servers do, to a chat request whose conversation breaks the
    tool-call rules (:func:`tool_message_problem`). Every answer waits ``delay`` seconds first
    (without blocking other connections).

    **Actions.** Each request gets one action, a tuple:

    * ``("ok", 0)``: the normal answer (after ``delay``).
    * ``("status", code)`` or ``("status", code, message)``: that HTTP status at once, with the
      JSON error body ``{"error": {"message": ..., "type": ...}}`` (default message
      ``scripted failure <code>``).
    * ``("retry_after", s)``: 429 with ``Retry-After: s``.
    * ``("sleep", s)``: the normal answer after ``s`` seconds instead of ``delay`` (to outlast a
      client timeout).
    * ``("html", 0)``: 200 with a ``text/html`` page; ``("truncated", 0)``: 200 whose JSON body is
      cut in half (Content-Length matches the cut body); ``("empty_choices", 0)``: ``choices`` is
      ``[]``; ``("null_content", 0)``: the message content (completion: text) is null;
      ``("missing_fields", 0)``: a JSON object with no ``choices`` key at all. These malformed
      answers consume no scripted reply and do not call the responder.
    * ``("trickle", s)``: the correct answer, its headers at once and its body bytes spread
      evenly over ``s`` seconds.
    * ``("drop", s)``: close the connection without answering (after ``s`` seconds).

    The action of a request is, in order: that of the first of ``rules`` (a list of
    ``(predicate, action)``; ``predicate(body)`` is true) that matches; else the next action of
    ``script`` (consumed one per request; :meth:`fail` appends one several times); else, with
    probability ``fault_rate`` (drawn from a ``random.Random(seed)``), ``fault`` (default
    ``("status", 503)``); else ``("ok", 0)``.

    **Records.** ``requests`` holds ``(path, body)`` of every POST, ``request_times`` its arrival
    (``time.monotonic()``), ``in_flight``/``max_in_flight`` count requests being answered, and
    ``connections`` the TCP connections accepted (keep-alive reuses them). ``record = False`` keeps
    no ``requests``/``request_times`` (the ``serve`` command: a long benchmark would otherwise hold
    every body). Take ``lock`` to change ``script`` or the reply lists while requests run.
    """

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
        *,
        strict: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.strict = strict
        self.script: list[tuple[Any, ...]] = []
        self.rules: list[tuple[Callable[[dict[str, Any]], bool], tuple[Any, ...]]] = []
        self.fault_rate = 0.0
        self.fault: tuple[Any, ...] = ("status", 503)
        self.seed = 0
        self.chat_replies: list[dict[str, Any]] = []
        self.completion_replies: list[str] = []
        self.replies: dict[str, str] = {}
        self.tokenize_missing = False
        self.responder = responder
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.request_times: list[float] = []
        self.record = True
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        self.lock = threading.Lock()
        self._sock = socket.create_server((host, port), backlog=1024)
        self.host = host
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}/v1"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._conns: set[_Connection] = set()
        # encoded response heads by (status, type, length, close, extra headers): see _head
        self._heads: dict[tuple[Any, ...], bytes] = {}

    # -- configuration -----------------------------------------------------------------------

    @property
    def seed(self) -> int | None:
        return self._seed

    @seed.setter
    def seed(self, value: int | None) -> None:
        self._seed = value
        self._rng = random.Random(value)

    def fail(self, action: tuple[Any, ...], times: int = 1) -> FakeOpenAIServer:
        """Append ``action`` ``times`` times to ``script`` (the next requests get it); returns self."""
        if not isinstance(action, tuple) or not action or action[0] not in ACTIONS:
            raise ValueError(f"unknown action {action!r}: choose from {', '.join(ACTIONS)}")
        with self.lock:
            self.script.extend([action] * times)
        return self

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._run_in_thread, name="FakeOpenAIServer", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or self._failure is not None:
            raise RuntimeError(f"fake OpenAI server did not start: {self._failure!r}")
        return self

    def stop(self) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            try:
                loop.call_soon_threadsafe(stopping.set)
            except RuntimeError:  # the loop is already closed
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_forever(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in this thread until SIGTERM or SIGINT (the ``serve`` command)."""
        asyncio.run(self._serve(on_ready, signals=True))

    def _run_in_thread(self) -> None:
        try:
            asyncio.run(self._serve(None, signals=False))
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._failure = exc
            self._ready.set()

    async def _serve(self, on_ready: Callable[[str], None] | None, *, signals: bool) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await loop.create_server(lambda: _Connection(self), sock=self._sock)
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stopping.set)
        self._loop = loop
        self._ready.set()
        if on_ready is not None:
            on_ready(self.url)
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for conn in list(self._conns):
                conn.abort()
            await asyncio.sleep(0)  # let the aborted connections' tasks see their cancellation

    # -- deciding and answering --------------------------------------------------------------

    def _action(self, body: dict[str, Any]) -> tuple[Any, ...]:
        for predicate, action in list(self.rules):
            if predicate(body):
                return action
        if self.script:
            with self.lock:
                if self.script:
                    return self.script.pop(0)
        if self.fault_rate and self._rng.random() < self.fault_rate:
            return self.fault
        return _OK

    def _chat_message(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            reply = self.chat_replies.pop(0) if self.chat_replies else None
        if reply is None and self.responder is not None:
            reply = self.responder(body)
        if reply is None and self.replies:
            text = self.replies.get(reply_key(body))
            reply = {"content": text} if text is not None else None
        if reply is None:
            reply = {"content": f"chat:{body['messages'][-1]['content']}"}
        return {"role": "assistant", "content": reply.get("content"), **({"tool_calls": reply["tool_calls"]} if reply.get("tool_calls") else {})}

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON a well-behaved server sends for ``body`` at ``path`` (LookupError: a 404)."""
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
                "usage": _USAGE,
            }
        if not path.endswith("/completions"):
            raise LookupError("404")
        with self.lock:
            text = self.completion_replies.pop(0) if self.completion_replies else None
        if text is None and self.replies:
            text = self.replies.get(reply_key(body))
        if text is None:
            text = f"completion:{body['prompt'][-5:]}"
        return {
            "id": "t1",
            "object": "text_completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
            "usage": _USAGE,
        }

    def _result(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``(status, payload)`` of the normal answer: strict's 400, a 404, or a broken responder's 500."""
        if self.strict:
            problem = tool_message_problem(body.get("messages") or [])
            if problem is not None:
                return 400, {"error": {"message": problem, "type": "invalid_request_error"}}
        try:
            return 200, self.answer(path, body)
        except LookupError:
            return 404, {"detail": "Not Found"}
        except Exception as exc:  # noqa: BLE001 - a broken responder is a 500, visible to the test
            return 500, {"error": {"message": f"fake server: {type(exc).__name__}: {exc}", "type": "server_error"}}

    @staticmethod
    def _malformed(kind: str, path: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
        """``(content_type, body)`` of a broken 200 answer."""
        if kind == "html":
            return _HTML, _HTML_PAGE
        model = body.get("model", "m") if isinstance(body, dict) else "m"
        chat = path.endswith("/chat/completions")
        choice: dict[str, Any] = (
            {"index": 0, "message": {"role": "assistant", "content": "[]"}, "finish_reason": "stop"}
            if chat
            else {"index": 0, "text": "[]", "finish_reason": "length"}
        )
        payload: dict[str, Any] = {
            "id": "x", "object": "chat.completion" if chat else "text_completion", "created": 0, "model": model,
        }
        if kind == "null_content":
            if chat:
                choice["message"]["content"] = None
            else:
                choice["text"] = None
        if kind != "missing_fields":
            payload["choices"] = [] if kind == "empty_choices" else [choice]
            payload["usage"] = _USAGE
        data = json.dumps(payload).encode()
        if kind == "truncated":
            data = data[: len(data) // 2]
        return _JSON, data

    def _head(self, status: int, ctype: bytes | None, length: int, close: bool, extra: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
        """The encoded status line and headers of an answer; h11 encodes each distinct head once
        and the bytes are reused (a benchmark's answers mostly share their length)."""
        key = (status, ctype, length, close, extra)
        head = self._heads.get(key)
        if head is None:
            headers = [(b"content-length", b"%d" % length), *extra]
            if ctype is not None:
                headers.insert(0, (b"content-type", ctype))
            # h11 frames a response for the request it answers: a request like the real one, as
            # far as framing goes (keep-alive or not), makes it write the same head
            scratch = h11.Connection(h11.SERVER)
            scratch.receive_data(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n" + (b"Connection: close\r\n" if close else b"") + b"\r\n")
            while type(scratch.next_event()) is not h11.EndOfMessage:
                pass
            head = scratch.send(h11.Response(status_code=status, headers=headers, reason=_REASONS.get(status, b"")))
            assert head is not None
            if len(self._heads) > 4096:
                self._heads.clear()
            self._heads[key] = head
        return head


class _Connection(asyncio.Protocol):
    """One client connection. h11 parses its requests, one at a time (pipelined ones wait in its
    buffer). An answer is a cached head (see :meth:`FakeOpenAIServer._head`) plus the body as is
    -- with Content-Length framing a body is its own bytes -- so h11's per-message send
    bookkeeping is skipped; a fresh ``h11.Connection`` then takes over the unread bytes for the
    next request (keep-alive), or the connection closes where h11's rules say it must. An answer
    that has to wait runs as a task."""

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self.h = h11.Connection(h11.SERVER)
        self.transport: asyncio.Transport | None = None
        self.request: h11.Request | None = None
        self.chunks: list[bytes] = []
        self.keep_alive = True
        self.task: asyncio.Task[None] | None = None
        self.closed = False

    # -- asyncio callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.fake._conns.add(self)
        self.fake.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.fake._conns.discard(self)
        if self.task is not None:
            self.task.cancel()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.h.receive_data(data)
        if self.task is None:
            self._pump()

    def eof_received(self) -> bool:
        if self.closed:
            return False
        self.h.receive_data(b"")
        if self.task is None:
            self._pump()
            return False
        return True  # answer the request in progress, then close

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # -- requests ----------------------------------------------------------------------------

    def _pump(self) -> None:
        """Handle every complete request in the buffer, until one has to wait."""
        while not self.closed:
            h = self.h
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                self._bad_request(exc)
                return
            kind = type(event)
            if kind is h11.Data:
                self.chunks.append(event.data)  # type: ignore[union-attr]
            elif kind is h11.Request:
                self.request = event  # type: ignore[assignment]
                self.chunks = []
                # h11's rule: HTTP/1.1 without "Connection: close" keeps the connection open
                self.keep_alive = event.http_version == b"1.1" and not any(  # type: ignore[union-attr]
                    b"close" in value.lower() for name, value in event.headers.raw_items() if name.lower() == b"connection"  # type: ignore[union-attr]
                )
                if h.they_are_waiting_for_100_continue:
                    self._send(h.send(h11.InformationalResponse(status_code=100, headers=[])))
            elif kind is h11.EndOfMessage:
                if not self._handle():
                    return  # answered later, by a task
                if not self._next_cycle():
                    return
            elif kind is h11.ConnectionClosed:
                self._close()
                return
            else:  # NEED_DATA (or PAUSED, which the fresh connection of each request never is)
                return

    def _next_cycle(self) -> bool:
        """After an answer: a fresh parser over the unread bytes (True), or close (False)."""
        if self.closed or not self.keep_alive:
            self._close()
            return False
        data, closed = self.h.trailing_data
        self.h = h11.Connection(h11.SERVER)
        if data:
            self.h.receive_data(data)
        if closed:
            self.h.receive_data(b"")
        return True

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _send(self, data: bytes | None) -> None:
        if data and not self.closed:
            self.transport.write(data)  # type: ignore[union-attr]

    def _write(self, status: int, ctype: bytes | None, data: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self._send(self.fake._head(status, ctype, len(data), not self.keep_alive, extra) + data)

    def _error(self, status: int, message: str, kind: str) -> None:
        self._write(status, _JSON, json.dumps({"error": {"message": message, "type": kind}}).encode())

    def _bad_request(self, exc: Exception) -> None:
        self.keep_alive = False
        self._error(400, f"bad request: {exc}", "invalid_request_error")
        self._close()

    def _handle(self) -> bool:
        """Answer the request just received: now (True), or from a task (False)."""
        fake, request = self.fake, self.request
        assert request is not None
        path = request.target.decode("latin-1")
        raw = b"".join(self.chunks)
        self.chunks = []
        if request.method != b"POST":
            if request.method == b"GET" and path.rstrip("/").endswith("/models"):
                self._write(200, _JSON, b'{"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "callbench"}]}')
            else:
                self._write(404, _JSON, b'{"detail": "Not Found"}')
            return True
        try:
            body = json.loads(raw) if raw else {}
        except ValueError as exc:
            self._error(400, f"the body is not JSON: {exc}", "invalid_request_error")
            return True
        with fake.lock:
            if fake.record:
                fake.requests.append((path, body))
                fake.request_times.append(time.monotonic())
            fake.in_flight += 1
            if fake.in_flight > fake.max_in_flight:
                fake.max_in_flight = fake.in_flight
        later = False
        try:
            action = fake._action(body)
            kind = action[0]
            arg = action[1] if len(action) > 1 else 0
            if kind == "status":
                code = int(arg)
                self._error(code, action[2] if len(action) > 2 else f"scripted failure {code}", _error_type(code))
                return True
            if kind == "retry_after":
                message = json.dumps({"error": {"message": f"rate limited (scripted): retry after {arg:g} s", "type": "rate_limit_error"}})
                self._write(429, _JSON, message.encode(), ((b"retry-after", f"{arg:g}".encode()),))
                return True
            if kind not in ACTIONS:
                raise ValueError(f"unknown action {action!r}")
            wait = float(arg) if kind in ("sleep", "drop") else fake.delay
            if wait <= 0 and kind != "trickle":
                if kind == "drop":
                    self._close()
                    return False
                self._answer(kind, path, body)
                return True
            later = True
        except Exception as exc:  # noqa: BLE001 - a broken rule or action is a 500, visible to the test
            self._error(500, f"fake server: {type(exc).__name__}: {exc}", "server_error")
            return True
        finally:
            if not later:
                self._done()
        self.task = asyncio.get_running_loop().create_task(self._later(wait, kind, arg, path, body))
        return False

    def _done(self) -> None:
        with self.fake.lock:
            self.fake.in_flight -= 1

    def _answer(self, kind: str, path: str, body: dict[str, Any]) -> None:
        if kind in _MALFORMED:
            ctype, data = self.fake._malformed(kind, path, body)
            self._write(200, ctype, data)
            return
        status, payload = self.fake._result(path, body)
        self._write(status, _JSON, json.dumps(payload).encode())

    async def _later(self, wait: float, kind: str, arg: float, path: str, body: dict[str, Any]) -> None:
        try:
            if wait > 0:
                await asyncio.sleep(wait)
            if self.closed:
                return
            if kind == "drop":
                self._close()
                return
            if kind == "trickle":
                await self._trickle(float(arg), path, body)
            else:
                self._answer(kind, path, body)
        except asyncio.CancelledError:  # the connection was lost, or the server is stopping
            return
        finally:
            self._done()
            self.task = None
        if self._next_cycle():
            self._pump()

    async def _trickle(self, seconds: float, path: str, body: dict[str, Any]) -> None:
        status, payload = self.fake._result(path, body)
        data = json.dumps(payload).encode()
        self._send(self.fake._head(status, _JSON, len(data), not self.keep_alive))
        n = min(len(data), max(1, round(seconds / 0.02)))
        for i in range(n):
            await asyncio.sleep(seconds / n)
            if self.closed or self.transport is None or self.transport.is_closing():
                self._close()
                return
            self._send(data[i * len(data) // n : (i + 1) * len(data) // n])


# ---------------------------------------------------------------------------------------------
# python -m callbench.testing.fake_openai serve
# ---------------------------------------------------------------------------------------------


def parse_fault(text: str) -> tuple[Any, ...]:
    """``KIND[:ARG[:MESSAGE]]`` (e.g. ``status:503``, ``status:400:context length exceeded``,
    ``trickle:2``, ``drop``) as an action tuple."""
    kind, _, rest = text.partition(":")
    arg_text, _, message = rest.partition(":")
    if kind not in ACTIONS:
        raise ValueError(f"--fault {text!r}: unknown kind {kind!r} (choose from {', '.join(ACTIONS)})")
    try:
        arg: float = float(arg_text) if arg_text else (503 if kind == "status" else 0)
    except ValueError:
        raise ValueError(f"--fault {text!r}: {arg_text!r} is not a number") from None
    if kind == "status":
        arg = int(arg)
    return (kind, arg, message) if message else (kind, arg)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m callbench.testing.fake_openai")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run a fake OpenAI-compatible server until SIGTERM/SIGINT",
        description="Serve a fake OpenAI-compatible API. Prints one line 'URL http://HOST:PORT/v1' when ready.",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 = any free port")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds each answer waits")
    serve.add_argument("--fault", default=None, help="KIND[:ARG[:MESSAGE]], e.g. status:503, truncated, trickle:2")
    serve.add_argument("--fault-rate", type=float, default=None,
                       help="share of requests that get --fault (default: 1 with --fault; --fault defaults to status:503)")
    serve.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    serve.add_argument("--replies", type=Path, default=None,
                       help="JSON object mapping reply_key (sha256 hex of the last message / prompt) to the reply text")
    args = parser.parse_args(argv)

    try:
        fault = parse_fault(args.fault) if args.fault else ("status", 503)
    except ValueError as exc:
        parser.error(str(exc))
    rate = args.fault_rate if args.fault_rate is not None else (1.0 if args.fault else 0.0)
    if not 0 <= rate <= 1:
        parser.error(f"--fault-rate {rate:g}: must be between 0 and 1")
    replies: dict[str, str] = {}
    if args.replies is not None:
        try:
            replies = json.loads(args.replies.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--replies {args.replies}: {exc}")
        if not isinstance(replies, dict) or not all(isinstance(v, str) for v in replies.values()):
            parser.error(f"--replies {args.replies}: must be a JSON object of strings")

    server = FakeOpenAIServer(host=args.host, port=args.port)
    server.delay = args.latency
    server.fault, server.fault_rate, server.seed = fault, rate, args.seed
    server.replies = replies
    server.record = False
    server.serve_forever(lambda url: print(f"URL {url}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
