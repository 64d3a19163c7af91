"""A hardened JSON-over-HTTP server for the mock services that programs under test call.

Shared by the session service (:mod:`callbench.tracks.stateful.services.session_server`) and the
spec mock (:mod:`callbench.mock.server`), which differ only in their routing (``_route``).
Library choice: the stdlib ``ThreadingHTTPServer`` (no dependency, loopback and Unix sockets),
hardened against hostile clients: at most ``max_connections`` connection threads, a body cap
checked from ``Content-Length`` before reading (413), a deadline on slow bodies (408), a socket
timeout for idle or half-sent requests, JSON error bodies (also for the stdlib's own parse
errors), 405 with ``Allow`` for any method, no reverse DNS on bind.

Quotas (optional, per "run": from construction or :meth:`JsonServer.reset_usage` on): every byte
read from the clients' sockets (request lines, headers, bodies, discarded bodies) counts against
``max_total_bytes``, every reply against ``max_requests``. The first request over a quota, or a
``MemoryError`` anywhere in a handler, sets :attr:`JsonServer.breach` (one line saying which);
from then on the server reads nothing more (open connections see end of input, new ones are
closed at once), so a client cannot make it use more. The owner reads ``breach`` and makes it the
run's verdict (:mod:`callbench.services.isolation` runs such a server in its own
memory-limited process).
"""

from __future__ import annotations

import http.server
import io
import json
import logging
import math
import os
import resource
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

from callbench.untrusted import MAX_NODES, VALUE_MAX_DEPTH, UntrustedInputError, check_value

__all__ = ["ClientError", "JsonHandler", "JsonServer", "ThreadedEngine", "strict_json"]

log = logging.getLogger(__name__)

#: The breach of a service that ran out of memory: its process is replaced at the next reset.
OUT_OF_MEMORY = "the service ran out of memory"

_BODY_DEADLINE_S = 30.0  # whole-body read limit, against clients that trickle bytes
_LINGER_S = 2.0  # how long to discard an unread body after an early error reply
_LINGER_BYTES = 64 << 20
_LOG_TARGET_CHARS = 4096  # longest request target kept in the request log


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # json.loads turns 1e999 into inf, which would come back out as the non-JSON token Infinity.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def strict_json(raw: str | bytes) -> Any:
    """``json.loads`` that refuses what is not JSON: ``NaN``/``Infinity`` and numbers out of the
    float range (ValueError, as a syntax error; RecursionError when nested too deeply)."""
    return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)


class ClientError(Exception):
    """A request the client got wrong: becomes a JSON error reply with this status."""

    def __init__(
        self, status: int, message: str, *, headers: Iterable[tuple[str, str]] = (), close: bool = False
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = tuple(headers)
        self.close = close


class _CountingReader(io.RawIOBase):
    """The connection's input, each byte received counted against the server's byte quota; end of
    input once the server is in breach (nothing more is read from a client that broke a quota)."""

    def __init__(self, sock: socket.socket, server: JsonServer):
        self._sock = sock
        self._server = server

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._server.breach is not None:
            return 0
        n = self._sock.recv_into(buffer)
        self._server.count(n)
        return n

    def close(self) -> None:  # the socket belongs to the handler, which closes it
        super().close()


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """One connection; HTTP/1.1 keep-alive; every reply is JSON. A subclass routes: ``_route(method,
    raw body)`` returns (status, JSON payload, extra headers) or raises :class:`ClientError`."""

    protocol_version = "HTTP/1.1"
    server_version = "callbench/1"
    # Malformed request lines otherwise get an HTTP/0.9 reply: a body with no status line.
    default_request_version = "HTTP/1.0"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: JsonServer

    def version_string(self) -> str:
        return self.server_version

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout  # StreamRequestHandler applies it to the socket
        self.disable_nagle_algorithm = self.server.address_family != socket.AF_UNIX  # TCP only
        super().setup()
        self.rfile = io.BufferedReader(_CountingReader(self.connection, self.server), 65536)

    def address_string(self) -> str:
        return self.client_address[0] if isinstance(self.client_address, tuple) else "unix"

    def __getattr__(self, name: str) -> Any:
        # http.server answers 501 for any method without a do_X; route every method so a
        # wrong method on a known path is a 405 with an Allow header.
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    # -- logging -------------------------------------------------------------------------

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        status = int(code) if isinstance(code, int) else 0
        self.server.record(getattr(self, "command", None) or "-", getattr(self, "path", "") or "", status)
        log.debug("%s %s -> %s", getattr(self, "command", None), getattr(self, "path", ""), code)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        log.debug("%s: " + format, self.address_string(), *args)

    # -- replies -------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any = None, headers: Iterable[tuple[str, str]] = ()) -> None:
        body = b"" if payload is None else json.dumps(payload).encode("ascii")
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the stdlib raises while parsing (bad request line, headers) as JSON too."""
        self.close_connection = True
        try:
            text = message or HTTPStatus(code).phrase
        except ValueError:
            text = f"HTTP {code}"
        self._send_json(code, {"error": text})

    def _linger(self) -> None:
        """After an error sent before the body was read: stop writing, discard what the client
        still sends for a short while, so it reads our reply instead of a connection reset."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            deadline, seen = time.monotonic() + _LINGER_S, 0
            while seen < _LINGER_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.connection.settimeout(min(left, 0.5))
                if self.server.breach is not None:
                    break
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                self.server.count(len(chunk))
                seen += len(chunk)
        except OSError:
            pass

    # -- request body --------------------------------------------------------------------

    def _content_length(self) -> int:
        """Body size from the headers, rejected (413) before any of it is read."""
        if self.headers.get("Transfer-Encoding"):
            raise ClientError(
                411, "chunked request bodies are not supported: send a Content-Length", close=True
            )
        values = self.headers.get_all("Content-Length") or []
        if not values:
            return 0
        if len(set(values)) != 1 or not values[0].strip().isascii() or not values[0].strip().isdigit():
            raise ClientError(400, f"bad Content-Length {values!r}", close=True)
        length = int(values[0])
        if length > self.server.max_body:
            raise ClientError(
                413, f"body of {length} bytes is over the limit of {self.server.max_body} bytes", close=True
            )
        quota = self.server.max_total_bytes
        if quota is not None and self.server.received + length > quota:
            message = f"the requests of this run would exceed the quota of {quota:,} bytes"
            self.server.note_breach(message)
            raise ClientError(413, message, close=True)
        return length

    def handle_expect_100(self) -> bool:
        try:
            self._content_length()
        except ClientError as e:
            self.close_connection = True
            self._send_json(e.status, {"error": e.message})
            self._linger()
            return False
        return super().handle_expect_100()

    def _read_body(self, length: int) -> bytes:
        parts, got = [], 0
        deadline = time.monotonic() + _BODY_DEADLINE_S
        while got < length:
            if time.monotonic() > deadline:
                raise ClientError(408, f"body not received within {_BODY_DEADLINE_S:.0f} s", close=True)
            chunk = self.rfile.read1(min(65536, length - got))
            if not chunk:
                raise ClientError(400, f"incomplete body: got {got} of {length} bytes", close=True)
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    # -- routing -------------------------------------------------------------------------

    def _dispatch(self) -> None:
        method = self.command
        try:
            length = self._content_length()
            raw = self._read_body(length) if length else b""
            status, payload, headers = self._route(method, raw)
        except ClientError as e:
            if e.close:
                self.close_connection = True
            self._send_json(e.status, {"error": e.message}, e.headers)
            if e.close:
                self._linger()
            return
        except (TimeoutError, ConnectionError):
            raise
        except MemoryError:
            self.server.note_breach(OUT_OF_MEMORY)
            self.close_connection = True
            self._send_json(503, {"error": OUT_OF_MEMORY})
            return
        except Exception as e:  # a bug or a closed store: the client still gets JSON, the log the traceback
            log.exception("%s failed on %s %s", self.server_version, method, self.path)
            self._send_json(500, {"error": f"internal error: {type(e).__name__}: {e}"})
            return
        self._send_json(status, payload, headers)

    def _target(self) -> tuple[list[str], str]:
        """Decoded path segments and the raw query. Raw non-ASCII bytes in the request line
        (which http.server decodes as Latin-1) are read as UTF-8, like percent-escapes."""
        try:
            target = self.path.encode("latin-1").decode("utf-8")
        except UnicodeError:
            raise ClientError(400, "request target is not valid UTF-8") from None
        if target.startswith(("http://", "https://")):
            parts = urlsplit(target)
            path, query = parts.path or "/", parts.query
        else:
            path, _, query = target.partition("?")
            path = path.split("#", 1)[0]
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        try:
            segments = [unquote(s, errors="strict") for s in path.split("/")[1:]]
        except UnicodeError:
            raise ClientError(400, "path is not valid UTF-8 after percent-decoding") from None
        return segments, query

    def _route(self, method: str, raw: bytes) -> tuple[int, Any, list[tuple[str, str]]]:
        raise NotImplementedError


class JsonServer(http.server.ThreadingHTTPServer):
    """Thread per connection, at most ``max_connections`` at once (a client opening hundreds of
    connections waits in the listen backlog instead of making the service start a thread for
    each); remembers open sockets so ``close`` can wake their threads."""

    daemon_threads = True
    request_queue_size = 128  # the default 5 drops SYNs when many client threads connect at once

    def __init__(
        self,
        address: tuple[str, int] | str,
        store: Any,
        max_body: int,
        socket_timeout: float,
        max_connections: int,
        handler: type[JsonHandler],
        *,
        max_total_bytes: int | None = None,
        max_requests: int | None = None,
    ):
        self.store = store
        self.max_body = max_body
        self.socket_timeout = socket_timeout
        self.max_total_bytes = max_total_bytes
        self.max_requests = max_requests
        self.received = 0  # bytes read from clients since the last reset_usage
        self.breach: str | None = None  # the first quota broken since the last reset_usage
        # ran out of memory since it started (even after another breach; never cleared: such a
        # process is replaced at the next reset, see services/isolation.py)
        self.out_of_memory = False
        self._log: list[tuple[str, str, int]] = []
        self._log_lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._closing = False
        if isinstance(address, str):
            self.address_family = socket.AF_UNIX
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn, a reverse DNS lookup that can stall.
        socketserver.TCPServer.server_bind(self)
        if self.address_family == socket.AF_UNIX:
            self.server_name, self.server_port = "localhost", 0
        else:
            self.server_name, self.server_port = self.server_address[:2]

    def record(self, method: str, path: str, status: int) -> None:
        if len(path) > _LOG_TARGET_CHARS:  # the log goes back to the harness: a 64 KB target is cut
            path = path[: _LOG_TARGET_CHARS - 3] + "..."
        with self._log_lock:
            self._log.append((method, path, status))
            over = self.max_requests is not None and len(self._log) > self.max_requests
        if over:
            self.note_breach(f"more than {self.max_requests:,} requests in this run")

    def count(self, n: int) -> None:
        """``n`` more bytes read from a client; past ``max_total_bytes`` that is a breach."""
        with self._log_lock:
            self.received += n
            over = self.max_total_bytes is not None and self.received > self.max_total_bytes
        if over:
            self.note_breach(f"the requests of this run exceeded the quota of {self.max_total_bytes:,} bytes")

    def note_breach(self, message: str) -> None:
        """Remember the first broken quota and stop reading from every client."""
        if message == OUT_OF_MEMORY:
            self.out_of_memory = True
        with self._log_lock:
            if self.breach is not None:
                return
            self.breach = message
        self.wake_all(socket.SHUT_RD)  # blocked reads end; the reply under way still goes out

    def reset_usage(self) -> None:
        """Start a new run: clear the log, the byte count and the breach."""
        with self._log_lock:
            self._log.clear()
            self.received = 0
            self.breach = None

    def take_log(self, *, clear: bool = False) -> list[tuple[str, str, int]]:
        with self._log_lock:
            entries = list(self._log)
            if clear:
                self._log.clear()
        return entries

    def process_request(self, request: Any, client_address: Any) -> None:
        while not self._slots.acquire(timeout=0.05):
            if self._closing:
                socketserver.TCPServer.shutdown_request(self, request)
                return
        with self._log_lock:
            self._open.add(request)
        if self.breach is not None:  # serve nobody once a quota is broken
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._log_lock:
            known = request in self._open
            self._open.discard(request)
        super().shutdown_request(request)
        if known:
            self._slots.release()

    def stop(self) -> None:
        """Stop serving (from another thread than ``serve_forever``'s), wake the connection
        threads blocked on their sockets and close the listening socket."""
        self._closing = True
        self.shutdown()
        self.wake_all()
        self.server_close()

    def wake_all(self, how: int = socket.SHUT_RDWR) -> None:
        with self._log_lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(how)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that vanish mid-request are expected here; anything else is a bug worth a trace.
        exc = sys.exc_info()[1]
        if isinstance(exc, MemoryError) or (
            isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)
        ):
            self.note_breach(OUT_OF_MEMORY)
        elif isinstance(exc, OSError):
            log.debug("connection from %s ended: %r", client_address, exc)
        else:
            log.exception("unhandled error for %s", client_address)


class ThreadedEngine:
    """A :class:`JsonServer` on a daemon thread, with the engine interface a service process of
    :mod:`~callbench.services.isolation` drives (``ready``, ``handle``, ``breach``,
    ``close``). The session service and the spec mock differ in their store and routing only, so
    they subclass this and give :meth:`_state` (what a snapshot compares), ``empty_state`` and
    :meth:`_close_store`; ``handle`` answers ``snapshot``, ``log`` and ``stats``."""

    thread_name = "service"
    empty_state: Any = None

    def _serve(
        self,
        address: tuple[str, int] | str,
        app: Any,
        handler: type[JsonHandler],
        *,
        max_body: int,
        socket_timeout: float,
        max_connections: int,
        max_total_bytes: int | None,
        max_requests: int | None,
        max_state_values: int | None,
    ) -> None:
        self.max_state_values = max_state_values
        try:
            self.server = JsonServer(
                address,
                app,
                max_body,
                socket_timeout,
                max_connections,
                handler,
                max_total_bytes=max_total_bytes,
                max_requests=max_requests,
            )
        except OSError as e:
            self._close_store()
            where = address if isinstance(address, str) else f"{address[0]}:{address[1]}"
            raise OSError(e.errno, f"cannot bind {where}: {e.strerror}") from e
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},  # also how long close() waits for the loop to notice
            name=self.thread_name,
            daemon=True,
        )
        self.thread.start()

    def _state(self) -> Any:
        raise NotImplementedError

    def _close_store(self) -> None:
        raise NotImplementedError

    @property
    def port(self) -> int:
        return 0 if self.server.address_family == socket.AF_UNIX else self.server.server_address[1]

    def ready(self) -> dict[str, Any]:
        return {"port": self.port}

    def stats(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "threads": threading.active_count(),
            "received": self.server.received,
            "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }

    def handle(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        if op in ("snapshot", "log") and self.server.breach is not None:
            return {}  # the harness raises the breach; nothing it would read is sent
        if op == "snapshot":
            state = self._state()
            try:  # the state's own two levels above the stored values
                check_value(
                    state,
                    what="the stored state",
                    max_depth=VALUE_MAX_DEPTH + 2,
                    max_nodes=self.max_state_values or MAX_NODES,
                )
            except UntrustedInputError as e:
                self.server.note_breach(f"{e}: over the limit of what is compared")
                return {"state": self.empty_state}
            return {"state": state}
        if op == "log":
            return {"log": self.server.take_log()}
        if op == "stats":
            return self.stats()
        raise ValueError(f"unknown operation {op!r}")

    def breach(self) -> str | None:
        return self.server.breach

    def ran_out_of_memory(self) -> bool:
        return self.server.out_of_memory

    def close(self) -> None:
        self.server.stop()
        self.thread.join(timeout=5)
        self._close_store()
