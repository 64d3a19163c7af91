"""The stateful mock API over real HTTP on loopback, one instance per test case.

Library choice: the hardened stdlib server shared with the session service
(:mod:`callbench.tracks.stateful.services.json_http`: ``ThreadingHTTPServer`` with at most
``max_connections`` connection threads, a body cap checked from ``Content-Length`` before reading
(413), a deadline on slow bodies (408), a socket timeout for idle or half-sent requests, JSON
error bodies, 405 with ``Allow``), with this routing: requests go
to :class:`~callbench.mock.app.MockApp`, which validates them against the spec and applies the
state model. State is an in-memory SQLite database per instance; the same seed and the same
requests give the same responses.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from callbench.mock.app import MockApp, _MethodNotAllowed
from callbench.mock.validate import RequestError
from callbench.specs.openapi import ApiSpec
from callbench.tracks.stateful.infer.overlay import StateModel
from callbench.tracks.stateful.services.json_http import ClientError, JsonHandler, JsonServer


class _MockHandler(JsonHandler):
    server_version = "callbench-mock/1"

    def _route(self, method: str, raw: bytes) -> tuple[int, Any, list[tuple[str, str]]]:
        self._target()  # the stdlib checks: UTF-8 request target (400 otherwise)
        target = self.path.encode("latin-1").decode("utf-8")
        path, _, query = target.partition("?")
        path = path.split("#", 1)[0]
        if path.startswith(("http://", "https://")):
            path = "/" + path.split("://", 1)[1].partition("/")[2]
        try:
            return self.server.store.handle(method, path, query, self.headers, raw)
        except _MethodNotAllowed as e:
            raise ClientError(405, e.message, headers=[("Allow", ", ".join(e.allowed))]) from None
        except RequestError as e:
            raise ClientError(e.status, e.message) from None


class MockService:
    """A mock of ``spec`` on 127.0.0.1 (``port=0``: a free port) or on a Unix socket
    (``unix_path``, as the program sandbox wants it). ``model``: the state model (default:
    inferred from the spec)."""

    def __init__(
        self,
        spec: ApiSpec,
        model: StateModel | None = None,
        *,
        seed: int = 0,
        port: int = 0,
        max_body: int = 1 << 20,
        socket_timeout: float = 5.0,
        max_connections: int = 32,
        unix_path: str | Path | None = None,
    ):
        if model is None:
            from callbench.tracks.stateful.infer import infer_model

            model = infer_model(spec)
        self.app = MockApp(spec, model, seed)
        self._port = port
        self._max_body = max_body
        self._socket_timeout = socket_timeout
        self._max_connections = max_connections
        self._unix_path = None if unix_path is None else str(unix_path)
        self._server: JsonServer | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @classmethod
    def from_files(cls, spec_path: str | Path, model_path: str | Path | None = None, **kw: Any) -> MockService:
        from callbench.specs import load_spec
        from callbench.tracks.stateful.infer import load_model

        spec = load_spec(spec_path)
        return cls(spec, load_model(spec, model_path), **kw)

    def start(self) -> MockService:
        if self._server is not None or self._closed:
            raise RuntimeError("MockService.start() may be called once, before close()")
        try:
            self._server = JsonServer(
                self._unix_path or ("127.0.0.1", self._port), self.app, self._max_body, self._socket_timeout, self._max_connections, _MockHandler
            )
        except OSError as e:
            where = self._unix_path or f"127.0.0.1:{self._port}"
            raise OSError(e.errno, f"cannot bind {where}: {e.strerror}") from e
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"mock:{self._unix_path or self.port}", daemon=True
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("MockService is not running: call start() first")
        if self._unix_path:
            raise RuntimeError("this MockService listens on a Unix socket (socket_path), not a port")
        return self._server.server_address[1]

    @property
    def socket_path(self) -> str | None:
        return self._unix_path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def snapshot(self) -> dict[str, list[Any]]:
        """The stored objects by resource, in creation order."""
        return self.app.store.snapshot()

    def request_log(self) -> list[tuple[str, str, int]]:
        """(method, request target, status) of every reply so far."""
        return self._server.take_log() if self._server else []

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.app.store.close()

    def __enter__(self) -> MockService:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
