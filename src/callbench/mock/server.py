"""The stateful mock API over real HTTP, one instance per test case, in its own process.

Library choice: the hardened stdlib server shared with the session service
(:mod:`callbench.services.json_http`: ``ThreadingHTTPServer`` with at most
``max_connections`` connection threads, a body cap checked from ``Content-Length`` before reading
(413), a deadline on slow bodies (408), a socket timeout for idle or half-sent requests, JSON
error bodies, 405 with ``Allow``), with this routing: requests go
to :class:`~callbench.mock.app.MockApp`, which validates them against the spec and applies the
state model. State is an in-memory SQLite database per instance; the same seed and the same
requests give the same responses.

Out of the harness (issue 28, item 4): a :class:`MockService` is a proxy for a
:class:`MockServer` running in its own memory-limited process, started by the same machinery as
the session service (:mod:`callbench.services.isolation`), under the same per-run
:class:`~callbench.services.isolation.Quotas` (bytes and requests clients send,
values in the state read back, memory, CPU). What travels to that process: the spec's file (its
path and the size and modification time the harness loaded; the forking host loads each spec
once, so every instance's process starts with it parsed) and the state model as JSON. A client
that breaks a quota, or the process ending, makes :meth:`MockService.snapshot` and
:meth:`MockService.request_log` raise
:class:`~callbench.services.isolation.ServiceLimitError`, the sample's verdict.
``callbench serve mock`` runs a :class:`MockServer` in its own process, without quotas.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from callbench.mock.app import MockApp, _MethodNotAllowed
from callbench.mock.validate import RequestError
from callbench.services.isolation import (
    Channel,
    IsolatedService,
    Quotas,
    ServiceLimitError,
    register_kind,
    spawn,
)
from callbench.services.json_http import ClientError, JsonHandler, ThreadedEngine
from callbench.specs.openapi import ApiSpec
from callbench.statemodel.overlay import StateModel

__all__ = ["MockServer", "MockService", "Quotas", "ServiceLimitError"]


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


class MockServer(ThreadedEngine):
    """The mock of ``spec`` served from a thread of *this* process: in a :class:`MockService`'s
    own process (with its quotas), or in ``callbench serve mock``'s."""

    thread_name = "spec-mock"
    empty_state: dict = {}

    def __init__(
        self,
        spec: ApiSpec,
        model: StateModel,
        *,
        seed: int = 0,
        address: tuple[str, int] | str = ("127.0.0.1", 0),
        max_body: int = 1 << 20,
        socket_timeout: float = 5.0,
        max_connections: int = 32,
        max_total_bytes: int | None = None,
        max_requests: int | None = None,
        max_state_values: int | None = None,
        seeded_catalog: bool = False,
    ):
        self.app = MockApp(spec, model, seed, seeded_catalog=seeded_catalog)
        self._serve(
            address,
            self.app,
            _MockHandler,
            max_body=max_body,
            socket_timeout=socket_timeout,
            max_connections=max_connections,
            max_total_bytes=max_total_bytes,
            max_requests=max_requests,
            max_state_values=max_state_values,
        )

    @classmethod
    def from_files(
        cls,
        spec_path: str | Path,
        model_path: str | Path | None = None,
        *,
        seed: int = 0,
        port: int = 0,
        max_body: int = 1 << 20,
    ) -> MockServer:
        from callbench.specs import load_spec
        from callbench.statemodel import load_model

        spec = load_spec(spec_path)
        return cls(
            spec, load_model(spec, model_path), seed=seed, address=("127.0.0.1", port), max_body=max_body
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _state(self) -> dict[str, list[Any]]:
        return self.app.store.snapshot()

    def _close_store(self) -> None:
        self.app.store.close()


def _spec_file(spec: ApiSpec) -> tuple[str, list[int]]:
    """The file ``spec`` was loaded from and its (mtime_ns, size), checked to give this spec."""
    from callbench.specs import load_spec

    path = Path(spec.source)
    try:
        st = path.stat()
        is_file = path.is_file()
    except OSError:
        is_file = False
    if not is_file:
        raise ValueError(
            f"MockService: the spec's source {spec.source!r} is not a file: the mock runs in its own process, "
            "which loads the spec from its file (load_spec); a spec built in memory cannot be served"
        )
    same = load_spec(path)  # cached: the very same object unless the file changed since
    if same is not spec and _fingerprint(same) != _fingerprint(spec):
        raise ValueError(f"MockService: {spec.source} has changed since this spec was loaded from it")
    return str(path), [st.st_mtime_ns, st.st_size]


def _fingerprint(spec: ApiSpec) -> tuple[Any, ...]:
    return (
        spec.title,
        spec.version,
        spec.openapi_version,
        spec.servers,
        tuple((op.method, op.path, op.operation_id) for op in spec.operations),
    )


_HOST_SPECS: set[str] = set()  # the specs the forking host holds parsed
_HOST_SPECS_MAX = 4  # every child inherits them: a fifth spec drops the others (the memory limit)


def _prepare(config: dict[str, Any]) -> None:
    """In the forking host: load the spec once (load_spec's cache), so children start with it."""
    from callbench.specs import load_spec
    from callbench.specs.openapi import clear_spec_cache

    path = config["spec"]
    if path not in _HOST_SPECS and len(_HOST_SPECS) >= _HOST_SPECS_MAX:
        clear_spec_cache()
        _HOST_SPECS.clear()
    load_spec(path)
    _HOST_SPECS.add(path)


def _engine(config: dict[str, Any], quotas: Quotas) -> MockServer:
    """The service process's engine (:data:`~callbench.services.isolation.KINDS`)."""
    from callbench.specs import load_spec

    path = config["spec"]
    try:
        st = os.stat(path)
        if [st.st_mtime_ns, st.st_size] != config["spec_stat"]:
            raise ValueError("the file changed since the harness loaded it")
        spec = load_spec(path)  # the host loaded it already: a cache hit
        model = StateModel.model_validate(config["payload"]["model"])
    except Exception as e:  # noqa: BLE001 - a failed start (SpecError, a bad model), said in one line
        why = " ".join(str(e).split())  # one line (pydantic's messages span several)
        raise ValueError(f"cannot serve {path}: {type(e).__name__}: {why[:500]}") from None
    return MockServer(
        spec,
        model,
        seed=config["seed"],
        address=config["unix_path"] or ("127.0.0.1", config["port"]),
        max_body=config["max_body"],
        socket_timeout=config["socket_timeout"],
        max_connections=config["max_connections"],
        max_total_bytes=quotas.max_total_bytes,
        max_requests=quotas.max_requests,
        max_state_values=quotas.max_state_values,
        seeded_catalog=bool(config.get("seeded_catalog", False)),
    )


register_kind("mock", "callbench.mock.server:_engine")  # services/isolation.py starts it by this name


class MockService(IsolatedService):
    """A mock of ``spec`` on 127.0.0.1 (``port=0``: a free port) or on a Unix socket
    (``unix_path``, as the program sandbox wants it), in its own process under ``quotas``.
    ``model``: the state model (default: inferred from the spec). ``spec`` must come from a file
    (:func:`callbench.specs.load_spec`): the service's process loads it from there.
    ``seeded_catalog``: the resources no operation creates are a seeded catalogue
    (:mod:`callbench.mock.app`)."""

    what = "spec mock"

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
        quotas: Quotas | None = None,
        seeded_catalog: bool = False,
    ):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        super().__init__(
            max_body=max_body,
            port=port,
            socket_timeout=socket_timeout,
            unix_path=unix_path,
            max_connections=max_connections,
            quotas=quotas,
        )
        if model is None:
            from callbench.statemodel import infer_model

            model = infer_model(spec)
        self.spec = spec
        self.model = model
        self.seed = seed
        self.seeded_catalog = seeded_catalog
        self._spec_path, self._spec_stat = _spec_file(spec)

    @classmethod
    def from_files(
        cls, spec_path: str | Path, model_path: str | Path | None = None, **kw: Any
    ) -> MockService:
        from callbench.specs import load_spec
        from callbench.statemodel import load_model

        spec = load_spec(spec_path)
        return cls(spec, load_model(spec, model_path), **kw)

    def _spawn(self) -> Channel:
        config = {
            "spec": self._spec_path,
            "spec_stat": self._spec_stat,
            "seed": self.seed,
            "seeded_catalog": self.seeded_catalog,
            **self._listen_config(),
        }
        payload = {"model": self.model.model_dump(mode="json", by_alias=True)}
        return spawn("mock", config, self.quotas, self.what, payload)

    def snapshot(self) -> dict[str, list[Any]]:
        """The stored objects by resource, in creation order."""
        state = self._call("snapshot")["state"]
        if not isinstance(state, dict) or not all(isinstance(v, list) for v in state.values()):
            raise ServiceLimitError("spec mock: its state is not an object of lists")
        return state
