"""Services a sample talks to, each in its own memory-limited process outside the harness.

A service that a generated program calls (the session service, a spec's mock) holds whatever the
program sends it. Run inside the harness, a program posting 1 MB bodies in a loop grew the harness
from 33 MB to 869 MB. Here every service instance is a separate process with its own limits, so the most a
sample can do is break *its* service, which is that sample's verdict
(:class:`ServiceLimitError`), while the harness and every other sample are untouched:

* ``RLIMIT_AS`` (``Quotas.memory_mb``; thread stacks kept small so the limit is memory, not
  reservations), ``RLIMIT_CPU``, ``RLIMIT_NOFILE``, no core files;
* the server's per-run quotas (:class:`~callbench.services.json_http.JsonServer`):
  bytes read from clients and the number of requests; past either, and on a ``MemoryError``, the
  server stops reading and reports the breach;
* the process ending (a limit the kernel enforces, a crash) is reported as such, not as a
  harness error.

How the processes start: one small *host* process per harness process (started on first use,
with the service modules imported, single-threaded) forks one child per service instance. A fork
of a ready host costs milliseconds, where starting Python and importing the server per test case
would cost hundreds on a busy machine. (``multiprocessing``'s forkserver does the same but
pickles its messages and re-imports the parent's ``__main__`` in every child; this protocol is
plain JSON with size and depth limits.) The harness gives the host one end of a fresh socket pair
per instance (``SCM_RIGHTS`` over a ``SOCK_SEQPACKET`` pair); the child answers on it, so the
host never waits on a child. The host's message carries only small settings; bulk start data
(the mock's state model) is the first frame the harness writes to the child itself. Framing: an
8-byte big-endian length, then a JSON object. The child
exits when the harness closes its end (or dies), the host when the harness's end of the host pair
closes; both ignore SIGINT (a Ctrl-C stops the harness, which then closes them) and live in their
own session, and the host's children are reaped by the kernel (``SIGCHLD`` ignored).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from callbench.services.json_http import OUT_OF_MEMORY
from callbench.untrusted import VALUE_MAX_DEPTH, UntrustedInputError, loads_json

__all__ = ["Channel", "IsolatedService", "Quotas", "ServiceLimitError", "spawn"]

#: Service kinds a host can start: kind -> "module:factory", registered by the module that defines
#: the kind (:func:`register_kind`; this layer names none of its users). The factory takes the
#: config dict and returns an engine (see :func:`_child_main`). A module is imported in the host the
#: first time its kind is started (then every later child has it); a module may also define
#: ``_prepare(config)``, which the host calls before each fork of that kind to warm what children
#: share (the spec mock loads its spec there once); its errors are ignored (the child then meets
#: them itself and reports them as a failed start).
KINDS: dict[str, str] = {}


def register_kind(kind: str, target: str) -> None:
    """Make ``kind`` startable: ``target`` is ``"module:factory"`` of a callbench module (the host
    process imports it by that name, so only callbench's own modules are accepted)."""
    if not _valid_target(target):
        raise ValueError(f"service kind {kind!r}: {target!r} is no 'callbench.module:factory'")
    KINDS[kind] = target


def _valid_target(target: object) -> bool:
    if not isinstance(target, str):
        return False
    module, sep, name = target.partition(":")
    return bool(sep) and module.startswith("callbench.") and name.isidentifier()

_FRAME = struct.Struct(">Q")
_MAX_REQUEST = 64 << 20  # a harness request (reset seeds, a start payload) the child accepts
_MAX_SPAWN = 60_000  # the host's message: the kind, quotas and small settings (bulk goes in the payload)
_MAX_REPLY = 32 << 20  # a child's reply: a larger one is the run's error, reported by the child
_REPLY_DEPTH = VALUE_MAX_DEPTH + 8  # the reply's own levels above a stored value
_STACK_BYTES = 2 << 20  # per thread in the child (JSON parsing recursion to ~1,000 levels fits easily)
_START_TIMEOUT_S = 120.0  # generous: a fork on a machine with a load of 12
_CALL_TIMEOUT_S = 120.0


class ServiceLimitError(RuntimeError):
    """The sample broke its service: a quota, the memory limit, or the process ended. One line; the
    sample's verdict, never the run's."""


@dataclass(frozen=True)
class Quotas:
    """Per-instance limits. ``memory_mb``: the child's whole address space (it starts at about 35
    MB under a limit); ``max_total_bytes``: everything clients send in
    one run (from start or reset); ``max_requests``: replies in one run; ``max_state_values``: JSON
    values in the state read back (each costs the harness memory however short its text);
    ``cpu_s``: CPU seconds for the process's life. Besides, a reply to the harness (the state, the
    log) is at most 32 MiB of JSON.

    Why 4 MiB a run: four bodies of the 1 MiB cap, where a session task's programs send a few KB;
    what the harness reads back (and holds while it compares) is bounded by it."""

    memory_mb: int = 512
    max_total_bytes: int = 4 << 20
    max_requests: int = 20_000
    max_state_values: int = 100_000
    cpu_s: int = 600

    def __post_init__(self) -> None:
        limits = (
            ("memory_mb", 64),
            ("max_total_bytes", 0),
            ("max_requests", 1),
            ("max_state_values", 1),
            ("cpu_s", 1),
        )
        for name, low in limits:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"Quotas.{name} must be an int >= {low}, got {value!r}")


# -- framing ----------------------------------------------------------------------------------


def _send(sock: socket.socket, obj: Any) -> None:
    payload = json.dumps(obj, allow_nan=False).encode("ascii")
    sock.sendall(_FRAME.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _recv(sock: socket.socket, limit: int) -> bytes | None:
    """One frame's payload; None at end of input; ValueError over ``limit``."""
    head = _recv_exact(sock, _FRAME.size)
    if head is None:
        return None
    (size,) = _FRAME.unpack(head)
    if size > limit:
        raise ValueError(f"a frame of {size:,} bytes is over the limit of {limit:,}")
    return _recv_exact(sock, size)


# -- harness side -----------------------------------------------------------------------------


class _Host:
    """The forking host process and the harness's end of its socket pair."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        src = str(Path(__file__).resolve().parents[4])  # the directory holding the callbench package
        env = {
            **os.environ,
            "MALLOC_ARENA_MAX": "2",
            "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
        }
        try:
            # the kinds registered so far are imported in the host once, before its first fork
            warm = json.dumps(sorted(set(KINDS.values())))
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from {__name__} import _host_main; _host_main({theirs.fileno()}, {warm!r})"],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # a Ctrl-C at the terminal is the harness's to handle
                close_fds=True,
            )
        finally:
            theirs.close()
        self.sock = ours
        self.pid = os.getpid()  # a forked harness starts its own host

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def spawn(self, message: bytes) -> socket.socket:
        mine, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(self.sock, [message], [child.fileno()])
        except BaseException:
            mine.close()
            raise
        finally:
            child.close()
        return mine

    def stop(self) -> None:
        self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_host_lock = threading.Lock()
_host: _Host | None = None


def _spawn_socket(config: dict[str, Any]) -> socket.socket:
    global _host
    message = json.dumps(config, allow_nan=False).encode("ascii")
    if len(message) > _MAX_SPAWN:  # one SOCK_SEQPACKET message the host reads whole
        raise ValueError(
            f"a service's settings of {len(message):,} bytes are over {_MAX_SPAWN:,}: send bulk data as its payload"
        )
    with _host_lock:
        for attempt in (1, 2):
            if _host is None or not _host.alive():
                if _host is not None and _host.pid == os.getpid():
                    _host.stop()
                _host = _Host()
            try:
                return _host.spawn(message)
            except OSError:
                if attempt == 2:
                    raise
                _host.stop()
                _host = None
    raise AssertionError("unreachable")


class Channel:
    """The harness's control connection to one service process."""

    def __init__(self, sock: socket.socket, what: str):
        self._sock = sock
        self._what = what
        self._lock = threading.Lock()
        self._pidfd: int | None = None
        self.ready: dict[str, Any] = {}
        self.closed = False

    def _died(self) -> ServiceLimitError:
        return ServiceLimitError(
            f"{self._what}: the service process ended during the run (a memory or CPU limit, or a crash)"
        )

    def _read(self, timeout: float) -> dict[str, Any]:
        self._sock.settimeout(timeout)
        try:
            raw = _recv(self._sock, _MAX_REPLY)
        except TimeoutError:
            self.kill()
            raise ServiceLimitError(
                f"{self._what}: the service did not answer within {timeout:.0f} s"
            ) from None
        except ValueError as e:
            self.kill()
            raise ServiceLimitError(f"{self._what}: {e}") from None
        except OSError:
            raise self._died() from None
        if raw is None:
            raise self._died()
        try:
            reply = loads_json(raw, what=f"{self._what} reply", max_depth=_REPLY_DEPTH)
        except UntrustedInputError as e:
            raise ServiceLimitError(str(e)) from None
        if not isinstance(reply, dict):
            raise ServiceLimitError(f"{self._what} reply: not a JSON object")
        return reply

    def start(self) -> dict[str, Any]:
        """Wait for the child's first frame (with its pidfd); OSError/ValueError for a failed start."""
        self._sock.settimeout(_START_TIMEOUT_S)
        try:
            head, fds, _flags, _addr = socket.recv_fds(self._sock, _FRAME.size, 1)
        except TimeoutError:
            raise RuntimeError(
                f"{self._what}: the service process did not start within {_START_TIMEOUT_S:.0f} s"
            ) from None
        for fd in fds:
            self._pidfd = fd
        if len(head) < _FRAME.size:
            rest = _recv_exact(self._sock, _FRAME.size - len(head)) if head else None
            if rest is None:
                raise RuntimeError(f"{self._what}: the service process ended while starting")
            head += rest
        (size,) = _FRAME.unpack(head)
        raw = _recv_exact(self._sock, size) if size <= _MAX_REPLY else None
        if raw is None:
            raise RuntimeError(f"{self._what}: the service process ended while starting")
        reply = json.loads(raw)  # written by our own child before any client could connect
        if reply.get("error") == "os":
            raise OSError(reply.get("errno") or 0, reply.get("message", "?"))
        if reply.get("error"):
            raise ValueError(f"{self._what}: {reply.get('message')}")
        self.ready = reply
        return reply

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send ``op`` and return the reply; ValueError for a request the child refused,
        :class:`ServiceLimitError` when the process is gone or does not answer."""
        with self._lock:
            if self.closed:
                raise RuntimeError(f"{self._what} is closed")
            try:
                _send(self._sock, {"op": op, **fields})
            except OSError:
                raise self._died() from None
            reply = self._read(_CALL_TIMEOUT_S)
        if reply.get("error") == "value":
            raise ValueError(reply.get("message", "?"))
        if reply.get("error"):
            raise ServiceLimitError(f"{self._what}: {reply.get('message', '?')}")
        return reply

    def kill(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def close(self) -> None:
        """Ask the child to exit and wait until it has (end of input on the pair), killing it after
        5 s; idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                _send(self._sock, {"op": "close"})
                self._sock.settimeout(5.0)
                while self._sock.recv(65536):
                    pass
            except OSError:  # TimeoutError included: a child that does not exit is killed
                self.kill()
            finally:
                self._sock.close()
                if self._pidfd is not None:
                    os.close(self._pidfd)
                    self._pidfd = None


def spawn(kind: str, config: dict[str, Any], quotas: Quotas, what: str, payload: Any = None) -> Channel:
    """Start a ``kind`` service process with ``config`` under ``quotas``; returns its channel once
    it serves. ``config`` travels through the host (a few small settings, at most 60,000 bytes of
    JSON); ``payload`` (any JSON value, up to 64 MiB: a state model, seeds) goes straight to the
    child, which finds it as ``config["payload"]``. OSError: it could not bind its address;
    ValueError: a bad config."""
    if kind not in KINDS:
        raise ValueError(f"unknown service kind {kind!r}; known: {sorted(KINDS)}")
    data = None
    if payload is not None:
        data = json.dumps(payload, allow_nan=False).encode("ascii")
        if len(data) > _MAX_REQUEST:
            raise ValueError(
                f"{what}: a start payload of {len(data):,} bytes is over the limit of {_MAX_REQUEST:,}"
            )
    sock = _spawn_socket(
        {"kind": kind, "target": KINDS[kind], "quotas": asdict(quotas), "has_payload": data is not None, **config}
    )
    channel = Channel(sock, what)
    try:
        if data is not None:  # the child reads it first, before it answers anything
            sock.settimeout(_START_TIMEOUT_S)
            try:
                sock.sendall(_FRAME.pack(len(data)) + data)
            except OSError:
                pass  # the child is gone: start() reports how it ended
        channel.start()
    except BaseException:
        channel.close()
        raise
    return channel


class IsolatedService:
    """The harness's handle on one service process (base of
    :class:`~callbench.tracks.stateful.services.session_server.SessionService` and
    :class:`~callbench.mock.server.MockService`): where it listens (127.0.0.1 ``port``, 0 for a
    free one, or the Unix socket ``unix_path`` the program sandbox wants), its ``quotas``, and the
    calls every service answers. A subclass names its ``what`` (the first words of its errors),
    the ``stats_keys`` it reports and how it starts (:meth:`_spawn`)."""

    what = "service"
    stats_keys: tuple[str, ...] = ("pid", "threads", "received", "maxrss_kb")

    def __init__(
        self,
        *,
        max_body: int,
        port: int,
        socket_timeout: float,
        unix_path: str | Path | None,
        max_connections: int,
        quotas: Quotas | None,
    ):
        if max_body < 0:
            raise ValueError(f"max_body must be >= 0, got {max_body}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}")
        self._max_body = max_body
        self._port_request = port
        self._socket_timeout = socket_timeout
        self._unix_path = None if unix_path is None else str(unix_path)
        self._max_connections = max_connections
        self.quotas = quotas or Quotas()
        self._channel: Channel | None = None
        self._closed = False
        # the process ran out of memory or ended since it started: a reset replaces it
        self._breached = False

    def _listen_config(self) -> dict[str, Any]:
        return {
            "unix_path": self._unix_path,
            "port": self._port_request,
            "max_body": self._max_body,
            "socket_timeout": self._socket_timeout,
            "max_connections": self._max_connections,
        }

    def _spawn(self) -> Channel:
        raise NotImplementedError

    def start(self):
        if self._channel is not None or self._closed:
            raise RuntimeError(f"{type(self).__name__}.start() may be called once, before close()")
        self._channel = self._spawn()
        return self

    def _running(self) -> Channel:
        if self._channel is None or self._closed:
            raise RuntimeError(
                f"{type(self).__name__} is not running: call start() first (and not after close())"
            )
        return self._channel

    @property
    def port(self) -> int:
        if self._unix_path:
            raise RuntimeError(
                f"this {type(self).__name__} listens on a Unix socket (socket_path), not a port"
            )
        return int(self._running().ready["port"])

    @property
    def socket_path(self) -> str | None:
        return self._unix_path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _call(self, op: str, **fields: Any) -> dict[str, Any]:
        try:
            reply = self._running().call(op, **fields)
        except ServiceLimitError:  # the process is gone, or its control loop ran out of memory
            self._breached = True
            raise
        # a quota (bytes, requests) leaves a sound process; running out of memory may not
        self._breached = self._breached or bool(reply.get("oom")) or reply.get("breach") == OUT_OF_MEMORY
        if reply.get("breach"):
            raise ServiceLimitError(f"{self.what}: {reply['breach']}")
        return reply

    def request_log(self) -> list[tuple[str, str, int]]:
        """(method, raw request target, status) of every reply since start (or the last reset)."""
        return [(m, p, s) for m, p, s in self._call("log")["log"]]

    def stats(self) -> dict[str, int]:
        """The service process's figures named by ``stats_keys`` (pid, threads, bytes received
        this run, maxrss_kb, ...)."""
        reply = self._running().call("stats")
        return {k: reply[k] for k in self.stats_keys}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._channel is not None:
            self._channel.close()

    def __enter__(self):
        if self._channel is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- host and child side ------------------------------------------------------------------------


def _factory(target: str) -> Any:
    """The engine factory ``target`` (``"module:factory"``, :func:`register_kind`) names."""
    if not _valid_target(target):
        raise ValueError(f"no service factory {target!r}")
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _prepare(target: str, config: dict[str, Any]) -> None:
    """In the host, before a fork: import the kind's module and run its ``_prepare`` (if any)."""
    try:
        module = importlib.import_module(target.partition(":")[0])
        prepare = getattr(module, "_prepare", None)
        if prepare is not None:
            prepare(config)
    except Exception:  # noqa: BLE001 - the child meets the same error and reports it
        pass


def _host_main(fd: int, warm: str = "[]") -> None:
    """The host: fork a child per request until the harness's end closes. ``warm``: the
    ``"module:factory"`` targets to import before the first fork (JSON list), so that every child
    has them; other kinds are imported on first use."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    # what a kind's module logs while the host prepares (a spec's pattern warnings, which the
    # harness printed already when it loaded the spec) is not printed a second time
    logging.getLogger().addHandler(logging.NullHandler())
    for target in json.loads(warm):
        with contextlib.suppress(Exception):  # a child of that kind meets the error and reports it
            _factory(target)
    sock = socket.socket(fileno=fd)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 4)
        except InterruptedError:
            continue
        if not msg:
            for f in fds:
                os.close(f)
            return
        if len(fds) != 1:
            for f in fds:
                os.close(f)
            continue
        with contextlib.suppress(ValueError, TypeError):
            config = json.loads(msg)
            if isinstance(config, dict) and _valid_target(config.get("target")):
                _prepare(config["target"], config)
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child_main(fds[0], msg)  # never returns
        os.close(fds[0])


def _limit(which: int, value: int) -> None:
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _child_main(fd: int, msg: bytes) -> None:
    """One service: apply the limits, start the engine, answer the harness until it closes.

    The engine (from :data:`KINDS`) has ``ready() -> dict``, ``handle(op, request) -> dict``
    (ValueError: a refused request), ``breach() -> str | None`` and ``close()``."""
    code = 0
    ctl = socket.socket(fileno=fd)
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        devnull = os.open(
            os.devnull, os.O_WRONLY
        )  # no tracebacks of a hostile client's making on the harness's stderr
        os.dup2(devnull, 2)
        os.close(devnull)
        config = json.loads(msg)
        quotas = Quotas(**config["quotas"])
        if config.pop("has_payload", False):
            raw = _recv(ctl, _MAX_REQUEST)
            if raw is None:
                return
            config["payload"] = json.loads(raw)
        threading.stack_size(_STACK_BYTES)
        _limit(resource.RLIMIT_CORE, 0)
        _limit(resource.RLIMIT_NOFILE, 256)
        _limit(resource.RLIMIT_CPU, quotas.cpu_s)
        _limit(resource.RLIMIT_AS, quotas.memory_mb << 20)
        try:
            engine = _factory(config["target"])(config, quotas)
        except OSError as e:
            _send(ctl, {"error": "os", "errno": e.errno, "message": str(e)})
            return
        except ValueError as e:
            _send(ctl, {"error": "value", "message": str(e)})
            return
        payload = json.dumps({"ok": True, **engine.ready()}).encode("ascii")
        pidfd = os.pidfd_open(os.getpid())
        socket.send_fds(ctl, [_FRAME.pack(len(payload))], [pidfd])
        os.close(pidfd)
        ctl.sendall(payload)
        while True:
            raw = _recv(ctl, _MAX_REQUEST)
            if raw is None:
                break
            request = json.loads(raw)
            op = request.get("op")
            if op == "close":  # exiting closes every socket; nothing in memory needs saving
                break
            out_of_memory = {"error": "memory", "message": "the service ran out of memory"}
            try:
                oom = getattr(engine, "ran_out_of_memory", lambda: False)
                reply = {"ok": True, **engine.handle(op, request), "breach": engine.breach(), "oom": oom()}
                payload = json.dumps(reply, allow_nan=False).encode("ascii")
            except ValueError as e:
                payload = json.dumps({"error": "value", "message": str(e)}).encode("ascii")
            except MemoryError:
                payload = json.dumps(
                    {**out_of_memory, "message": engine.breach() or out_of_memory["message"]}
                ).encode("ascii")
            if len(payload) > _MAX_REPLY:
                message = f"its {op} reply of {len(payload):,} bytes is over the limit of {_MAX_REPLY:,}"
                payload = json.dumps({"error": "too_large", "message": message}).encode("ascii")
            ctl.sendall(_FRAME.pack(len(payload)) + payload)
    except BaseException:
        code = 1
    finally:
        os._exit(code)
