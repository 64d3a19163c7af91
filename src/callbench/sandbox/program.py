"""Run a whole generated Python program in a separate, isolated process.

``run_program(code, setup=..., preload=..., result_vars=..., finalize=...)`` runs each program in
a fresh child process inside the OS sandbox (:mod:`callbench.sandbox.boundary`: bubblewrap
namespaces, a read-only root with only the interpreter and the
:class:`~callbench.sandbox.boundary.View`'s packages, a private size-limited ``/tmp``, no network
but its own loopback, not root). The child binds ``preload`` (JSON values) as globals, runs the
trusted ``setup`` (it may import what the view holds and create objects), compiles and runs
``code`` in the same globals (``__name__ == "__main__"``), then reports the ``result_vars`` and the
value of the trusted ``finalize`` expression as JSON. ``services`` ((variable, host Unix socket)
pairs) are reachable inside: the child forwards a loopback port to each socket and binds
``http://127.0.0.1:<port>`` to the variable.

**A warm fork server** (``_program_runner.py``): a sandbox's interpreter starts once, imports the
modules the setup imports (``torch`` for the tensor scenario) and forks one child per program, one
program at a time; the servers wait in a pool keyed by view, imports and limits. Start-up and
imports are paid once per server, never charged to a program. Each child is still a fresh process
with the same isolation: its own session, only its stdout/stderr/result fds (the control socket
and everything else closed), its own rlimits and audit hook, a fresh ``random`` seed, and the
private ``/tmp`` and ``/dev/shm`` emptied before the next program (a server that cannot be
emptied is discarded). Service sockets are hard-linked into a directory bound at
:data:`boundary.SOCKETS` for the run's duration (a socket on another filesystem gets a sandbox of
its own, started with it bound). :func:`set_mode` ``("fresh")`` starts a new sandbox per program
instead (the benchmark's "before").

**Time is CPU time.** ``timeout_s`` is the program's CPU budget (all its threads; ``ITIMER_PROF``
from its first line raises a timeout in the program, which still reports variables/state; then
``RLIMIT_CPU``, lowered to budget + ``grace_s`` + 1 s when the program starts, is the kernel's
backstop for a program that swallows the timer). Its parent reads the child's rusage. The setup
has its own allowance (``setup_cpu_s``). Math libraries run one thread each, so CPU time
measures the program's work, not idle pool threads spinning on a busy machine. The wall clock is
only a backstop (``wall_s``, by default max(60, 5 × budget) + grace): hitting it kills the
server and gives status ``infra_timeout`` — the machine stalled, or the program only waited —
never ``timeout``; the caller decides whether to retry (the stateful track does, once).

What is enforced (verified by tests/sandbox/test_program.py and tests/sandbox/test_redteam_python.py):

* the boundary above; the view defaults to what ``setup`` imports (:meth:`View.of_sources`);
* ``setrlimit``: memory (``memory_limit="as"``: address space; ``"data"``: data segment and private
  writable mappings, for libraries such as torch that reserve large virtual ranges), CPU seconds, no
  core files, file size (SIGXFSZ ignored: a too-big file is an ``OSError``), processes;
* an audit hook (a second layer that gives clear violation messages; see ``_guard.py``) refuses
  fork/exec/subprocess/os.system, signals to other processes, raising rlimits, ctypes function
  lookup/calls/raw memory, C extensions from outside the stdlib and the view, sockets other than
  connections to the services, listening, and writes/renames/deletes outside the temp dir. Every
  refusal is reported at once, so status is ``"violation"`` even if the program catches the error
  -- except where every refusal was of a network destination (a connection to, or a name lookup
  of, a host the program was not given: a model that hard-codes a base URL): that is a model's
  mistake, not an attack, and the status is ``"wrong_host"`` (the connection is refused all the
  same);
* the result channel is read as it arrives, each line parsed with depth and size limits
  (:mod:`callbench.untrusted`): violations are kept from the first byte, so no amount of output
  pushes them out, and a bracket flood or a forged, deeply nested report is that program's
  verdict, never an exception here;
* stdout/stderr are read concurrently; only the last ``max_output_bytes`` of each are kept.

Not guaranteed: the report is written by the runner inside the program's own process, so it
holds the program's values — a program can set or fake them, as it could compute them; what the
harness judges besides them (violations, the child's exit and CPU time, the wall-clock backstop, a
session service's state) it reads outside the process. The fork server shares the program's uid
inside the sandbox, but the sandbox has no procfs, so the program cannot reach it through
``/proc`` (and no ``mountinfo`` names the host directories bound in). Without
bwrap (``--unsafe-no-sandbox``) only the rlimits, the audit hook and ``unshare`` namespaces (where
they work) remain: C code is then not contained. ``finalize`` is evaluated in the program's
globals, so the program can rebind the names it uses; ``__to_json__`` is taken as the setup left it.
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import glob
import json
import math
import os
import re
import select
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from callbench import pyast
from callbench.sandbox import boundary
from callbench.untrusted import UntrustedInputError, loads_json

_HERE = Path(__file__).parent
STATUSES = ("ok", "no_code", "syntax_error", "runtime_error", "timeout", "violation", "wrong_host", "crash")
# The guard's refusals of a network destination (_guard.program_socket's messages): a program that
# only tried to reach hosts it was not given made a mistake (wrong_host); any other refusal, or a
# forged line, keeps the sample a violation (a program cannot forge its way out of one: the guard's
# own report of a real violation comes first and stays).
_HOST_REFUSAL = re.compile(r"sandbox: (?:socket\.(?:connect|sendto|sendmsg) to \(|name lookup of )")

# Loads the guard source (argv[1]) as module ``_callbench_guard``, then runs the runner (argv[2]).
_BOOT = """\
import sys, types
_m = types.ModuleType("_callbench_guard")
exec(compile(sys.argv[1], "_guard.py", "exec"), _m.__dict__)
sys.modules["_callbench_guard"] = _m
_src = sys.argv[2]
sys.argv = sys.argv[:1]
del _m, types
exec(compile(_src, "<runner>", "exec"), {"__name__": "__main__"})
"""


@functools.cache
def _source(name: str) -> str:
    return (_HERE / name).read_text("utf-8")


def python_argv(runner: str) -> list[str]:
    """``python -I -S -B -c`` running ``runner`` (a file next to this one) with the guard importable.

    The base interpreter without ``site``: no site-packages, no ``.pth`` files; the runner adds the
    view's package roots to ``sys.path`` itself."""
    return [boundary.interpreter(), "-I", "-S", "-B", "-c", _BOOT, _source("_guard.py"), _source(runner)]


@dataclass(frozen=True)
class Launch:
    """How a runner process starts: argv, cwd, and the paths the child sees."""

    argv: list[str]
    cwd: str
    tmpdir: str  # the writable directory, as the child sees it
    sandboxed: bool
    view: boundary.View
    sockets: dict[str, str]  # host socket path -> path inside

    def popen(self, **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start it (:func:`boundary.popen`: bwrap's arguments travel in a memfd, out of sight)."""
        return boundary.popen(self.argv, **kwargs)

    def config(self) -> dict[str, Any]:
        """The config keys every runner needs to set up its side of the boundary."""
        return {
            "tmpdir": self.tmpdir,
            "site_path": boundary.site_path(self.sandboxed, self.view),
            "extension_roots": boundary.extension_roots(self.view, self.sandboxed),
            "denied_modules": boundary.denied_stdlib_extensions(self.view),
        }


def launch(
    runner: str,
    host_tmp: str,
    *,
    view: boundary.View,
    socket_paths: Sequence[str] = (),
    socket_dir: str | None = None,
    network: bool = True,
    namespaces: bool = True,
    tmp_mb: int = 256,
) -> Launch:
    """bwrap around ``runner`` when it works here; else (``--unsafe-no-sandbox``) ``unshare``
    where that works (``network=False`` keeps the host network), else nothing."""
    argv = python_argv(runner)
    sockets = {path: f"{boundary.SOCKETS}/s{i}.sock" for i, path in enumerate(socket_paths)}
    wrapped = boundary.command(
        argv,
        view=view,
        sockets=[(h, Path(i).name) for h, i in sockets.items()],
        socket_dir=socket_dir,
        layout=boundary.Layout(tmp_mb=tmp_mb),
    )
    if wrapped is not None:
        return Launch(wrapped, host_tmp, boundary.WORKDIR, True, view, sockets)
    prefix = unshare_prefix(network=network) if namespaces else ()
    return Launch([*prefix, *argv], host_tmp, host_tmp, False, view, {p: p for p in socket_paths})


@functools.cache
def unshare_prefix(network: bool = True) -> tuple[str, ...]:
    """The ``unshare`` command line that works here ((): none does); ``network=False`` keeps the
    host network namespace (new PID namespace only)."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    net = ("-n",) if network else ()
    for flags in ((*net, "-p", "-f", "--kill-child"), ("-r", *net, "-p", "-f", "--kill-child")):
        try:
            ok = subprocess.run([exe, *flags, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return (exe, *flags)
    return ()


@dataclass(frozen=True)
class ProgramLimits:
    timeout_s: float = (
        10.0  # CPU seconds of the program (all its threads); start-up, imports, setup not charged
    )
    memory_mb: int = 2048
    memory_limit: Literal["as", "data"] = "as"
    cpu_s: int | None = None  # RLIMIT_CPU for setup + program; None: setup_cpu_s + timeout_s + grace_s + 2
    setup_cpu_s: float = 60.0  # CPU seconds the trusted setup may take (more is a harness error)
    wall_s: float | None = None  # wall-clock backstop per run; None: max(60, 5 * timeout_s) + grace_s
    fsize_mb: int = 64
    nproc: int = 256
    max_output_bytes: int = 64 * 1024  # tail kept per stream
    max_result_bytes: int = 16 * 1024 * 1024  # JSON of variables + state; larger values are replaced
    grace_s: float = 2.0  # CPU seconds to collect results after the budget is spent
    namespaces: bool = True  # without bwrap (--unsafe-no-sandbox): use unshare when it works here
    tmp_mb: int = 256  # size of the sandbox's private /tmp

    def backstop_s(self) -> float:
        return self.wall_s if self.wall_s is not None else max(60.0, 5 * self.timeout_s) + self.grace_s


@dataclass
class ProgramResult:
    status: str
    variables: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    state: Any = None
    error: str | None = None
    line: int | None = None  # program line of the error, when it is in the program
    violations: list[str] = field(default_factory=list)
    finalize_error: str | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0  # wall clock of the run (start-up of a fresh sandbox included)
    cpu_s: float | None = None  # CPU time of the program's process (setup included; start-up not)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Tail:
    def __init__(self, keep: int):
        self.keep = keep
        self.buf = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > 2 * self.keep:
            del self.buf[: -self.keep]

    def text(self) -> str:
        data = bytes(self.buf[-self.keep :]) if self.keep else b""
        dropped = self.total - len(data)
        text = data.decode("utf-8", "replace")
        return f"[... {dropped} bytes truncated ...]\n{text}" if dropped else text


MAX_VIOLATIONS = 100  # kept per run (the runner reports at most 20; the rest would be forged)


class _Reports:
    """The result channel, read as it arrives: violations are kept from the first byte on, so no
    amount of output after them can push them out; one line longer than ``max_line`` (the runner's
    report is bounded by ``max_result_bytes``) is skipped whole, and every line is parsed with
    depth and size limits (:mod:`callbench.untrusted`)."""

    def __init__(self, max_line: int):
        self.max_line = max_line
        self.partial = bytearray()
        self.skipping = False
        self.violations: list[str] = []
        self.final: dict[str, Any] | None = None

    def add(self, chunk: bytes) -> None:
        lines = chunk.split(b"\n")
        for i, piece in enumerate(lines):
            last = i == len(lines) - 1
            if not self.skipping:
                self.partial += piece
                if len(self.partial) > self.max_line:
                    self.partial.clear()
                    self.skipping = True
            if not last:
                if not self.skipping:
                    self._line(bytes(self.partial))
                self.partial.clear()
                self.skipping = False

    def close(self) -> None:
        if not self.skipping and self.partial:
            self._line(bytes(self.partial))
        self.partial.clear()

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            msg = loads_json(raw, what="result channel line", max_depth=8)
        except UntrustedInputError:
            return  # not from the runner
        if not isinstance(msg, dict):
            return
        if isinstance(msg.get("violation"), str):
            if len(self.violations) < MAX_VIOLATIONS:
                self.violations.append(_text(msg["violation"]))
        elif msg.get("final") is True:
            if self.final is not None:  # the runner writes one; a second means the program forged one
                forged = "sandbox: more than one result report (forged by the program)"
                if len(self.violations) < MAX_VIOLATIONS and forged not in self.violations:
                    self.violations.append(forged)
                return
            self.final = msg


def _text(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _crash_message(rc: int | None) -> str:
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        hint = {"SIGKILL": " (memory or resource limit)", "SIGXCPU": " (CPU time limit)"}.get(name, "")
        return f"SandboxCrash: the program process was killed by {name}{hint}"
    return f"SandboxCrash: the program process exited with code {rc} without a result"


# -- the fork server ---------------------------------------------------------------------------

MODES = ("forkserver", "fresh")
_mode = os.environ.get("CALLBENCH_SANDBOX_MODE", "forkserver")


def set_mode(mode: str) -> None:
    """``forkserver`` (the default): warm sandboxed interpreters with the setup's imports loaded
    fork a fresh child per program; ``fresh``: a new sandbox and interpreter per program (start-up
    and imports paid each time; the figures before the fork server, kept for comparison)."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, not {mode!r}")
    _mode = mode


def mode() -> str:
    return _mode


class ServerError(Exception):
    """The fork server could not start or died (an infrastructure failure, not the program's)."""


class _CannotLink(Exception):
    """A service socket cannot be linked into a warm server's socket directory."""


def setup_imports(setup: str) -> tuple[str, ...]:
    """Modules the trusted setup imports (absolute imports), loaded once by the fork server."""
    names: set[str] = set()
    for node in ast.walk(pyast.parse(setup or "")):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return tuple(sorted(names))


# The sandbox's environment. One thread per math library: a program's CPU time then measures its
# work, not the spinning of idle pool threads on a busy machine (and a sample uses one core).
_THREADS_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# Servers are started from one long-lived thread: bwrap --die-with-parent (and unshare's
# --kill-child) signal on the exit of the *thread* that started them, which a scoring thread may be.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


@dataclass(frozen=True)
class _Key:
    view: boundary.View
    imports: tuple[str, ...]
    tmp_mb: int
    namespaces: bool
    network: bool  # unsandboxed only: a new network namespace (False keeps the host's for services)
    sandboxed: bool  # bwrap (False: --unsafe-no-sandbox), decided when the run asks for a server


#: Kinds of per-process host directories (``callbench-<kind>-<pid>-*``): fork servers' scratch and
#: socket directories, and the stateful track's service sockets.
PRIVATE_KINDS = ("prog", "sock", "svc", "mock")


def private_dir(kind: str) -> str:
    """A new host directory ``callbench-<kind>-<pid>-*``; the first call of a process removes those
    of processes that are gone (a harness killed by a signal runs no clean-up)."""
    _sweep_once()
    return tempfile.mkdtemp(prefix=f"callbench-{kind}-{os.getpid()}-")



def sweep_dead_owners() -> None:
    """Remove the :data:`PRIVATE_KINDS` directories whose owner process is gone."""
    root = tempfile.gettempdir()
    for kind in PRIVATE_KINDS:
        for entry in glob.glob(os.path.join(glob.escape(root), f"callbench-{kind}-*-*")):
            pid = os.path.basename(entry).split("-")[2]
            if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
                shutil.rmtree(entry, ignore_errors=True)


@functools.cache
def _sweep_once() -> None:
    sweep_dead_owners()


class _Server:
    """One sandbox (bwrap + interpreter) whose fork server runs one program at a time."""

    def __init__(self, key: _Key, sockets: Sequence[str] = (), start_timeout_s: float = 300.0):
        """``sockets``: service sockets bound at start (a server for one program); without them,
        a run's sockets are linked into a directory bound at :data:`boundary.SOCKETS`."""
        self.key = key
        self.fixed_sockets = tuple(sockets)
        self.proc: subprocess.Popen[bytes] | None = None
        self.usable = False
        # the scratch directory of a server without bwrap (with it: the private tmpfs, nothing here)
        self.tmp = private_dir("prog") if not key.sandboxed else None
        self.links: str | None = None
        self.buf = b""
        self.sock, theirs = socket.socketpair()
        try:
            if not self.fixed_sockets:
                self.links = private_dir("sock")
                os.chmod(self.links, 0o755)
            how = launch(
                "_program_runner.py",
                self.tmp or "/",
                view=key.view,
                socket_paths=self.fixed_sockets,
                socket_dir=self.links,
                network=key.network,
                namespaces=key.namespaces,
                tmp_mb=key.tmp_mb,
            )
            self.sandboxed = how.sandboxed
            scratch = [how.tmpdir, "/dev/shm"] if how.sandboxed else [how.tmpdir]
            self.config = {
                "control_fd": theirs.fileno(),
                "site_path": boundary.site_path(how.sandboxed, key.view),
                "imports": list(key.imports),
                "scratch": scratch,
                "program": {**how.config(), "tmpdir": how.tmpdir},
            }
            env = {
                "PATH": "/usr/bin:/bin",
                "HOME": how.tmpdir,
                "TMPDIR": how.tmpdir,
                "LANG": "C.UTF-8",
                **_THREADS_ENV,
            }
            self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close(); no path a program could find
            self.proc = _SPAWNER.submit(
                boundary.popen,
                how.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=self.log,
                cwd=how.cwd,
                env=env,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            ).result()
            theirs.close()
            threading.Thread(
                target=_feed, args=(self.proc.stdin, json.dumps(self.config).encode()), daemon=True
            ).start()
            hello = self._reply(time.monotonic() + start_timeout_s)
            if hello is None or hello.get("ready") is not True:
                raise ServerError(f"the sandbox's fork server did not start ({self._log_tail()})")
            self.import_errors = hello.get("import_errors") or []
            self.usable = True
        except BaseException:
            theirs.close()
            self.close()
            raise

    def _log_tail(self) -> str:
        try:
            self.log.seek(0)
            text = self.log.read()[-400:].decode("utf-8", "replace")
        except (OSError, AttributeError):
            text = ""
        return " ".join(text.split()) or f"exit {self.proc.poll() if self.proc else None}"

    def _reply(self, deadline: float) -> dict[str, Any] | None:
        """The next JSON line on the control socket; None at EOF or past ``deadline``."""
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            return None
        return reply if isinstance(reply, dict) else None

    def alive(self) -> bool:
        return self.usable and self.proc is not None and self.proc.poll() is None

    def run(
        self, cfg: dict[str, Any], services: Sequence[tuple[str, str]], lim: ProgramLimits
    ) -> ProgramResult:
        """Run one program; marks the server unusable when it must not serve another."""
        t0 = time.monotonic()
        linked: list[str] = []
        fds: list[int] = []
        try:
            inside = []
            if self.fixed_sockets and tuple(p for _, p in services) != self.fixed_sockets:
                raise ValueError("a server started with its sockets serves those only")
            for i, (_, path) in enumerate(services):
                if not self.sandboxed:
                    inside.append(path)
                    continue
                if self.links is not None:
                    link = os.path.join(self.links, f"s{i}.sock")
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(link)
                    try:
                        os.link(path, link)  # the service's socket inode, seen at SOCKETS/s<i>.sock inside
                    except OSError as e:  # another filesystem: the caller starts a server with it bound
                        raise _CannotLink(str(e)) from e
                    linked.append(link)
                inside.append(f"{boundary.SOCKETS}/s{i}.sock")
            cfg = {
                **cfg,
                "services": [{"var": var, "path": p} for (var, _), p in zip(services, inside, strict=True)],
                "allow_connect": inside,
            }
            payload = json.dumps(cfg).encode()  # TypeError: preload is not JSON
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            res_r, res_w = os.pipe()
            fds = [out_r, err_r, res_r]
            try:
                self.sock.settimeout(60)
                socket.send_fds(self.sock, [len(payload).to_bytes(8, "big")], [out_w, err_w, res_w])
                self.sock.sendall(payload)
                self.sock.settimeout(None)
            except OSError as e:
                self.usable = False
                raise ServerError(f"the sandbox's fork server is gone ({e})") from e
            finally:
                for fd in (out_w, err_w, res_w):
                    os.close(fd)
            out, err = _Tail(lim.max_output_bytes), _Tail(lim.max_output_bytes)
            reports = _Reports(lim.max_result_bytes + (1 << 20))
            reply, backstop = self._pump({out_r: out, err_r: err, res_r: reports}, t0 + lim.backstop_s())
            reports.close()
            if reply is not None and "fork_error" in reply:
                self.usable = False
                raise ServerError(
                    f"the sandbox's fork server could not fork ({_text(reply['fork_error'], 200)})"
                )
            if reply is None:
                self.usable = False
            elif reply.get("clean") is not True:
                self.usable = False  # the program left files it could not be cleaned of
            result = _judge(reports, reply, backstop, lim)
            result.stdout, result.stderr = out.text(), err.text()
            result.duration_s = time.monotonic() - t0
            return result
        finally:
            for fd in fds:
                os.close(fd)
            for link in linked:
                with contextlib.suppress(OSError):
                    os.unlink(link)

    def _pump(self, sinks: dict[int, Any], deadline: float) -> tuple[dict[str, Any] | None, bool]:
        """Read the pipes and the control socket: (the server's reply or None, whether the wall-clock
        backstop came first)."""
        sel = selectors.DefaultSelector()
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        sel.register(self.sock, selectors.EVENT_READ)
        reply: dict[str, Any] | None = None
        drain_until: float | None = None
        try:
            while len(sel.get_map()) > (0 if reply is None else 1):
                now = time.monotonic()
                limit = deadline if drain_until is None else min(deadline, drain_until)
                if now >= limit:
                    return reply, reply is None
                for key, _ in sel.select(limit - now):
                    if key.fileobj is self.sock:
                        chunk = self.sock.recv(1 << 16)
                        if not chunk:  # the server died
                            sel.unregister(self.sock)
                            drain_until = time.monotonic() + 2
                            continue
                        self.buf += chunk
                        if b"\n" in self.buf:
                            line, _, self.buf = self.buf.partition(b"\n")
                            try:
                                reply = json.loads(line)
                            except ValueError:
                                reply = {}
                            sel.unregister(self.sock)
                            drain_until = time.monotonic() + 5  # the pipes are at EOF by now
                        continue
                    fd = key.fd
                    chunk = os.read(fd, 1 << 16)
                    if chunk:
                        sinks[fd].add(chunk)
                    else:
                        sel.unregister(fd)
            return reply, False
        finally:
            sel.close()

    def close(self) -> None:
        self.usable = False
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                _kill(proc)
            proc.wait()
            if proc.stdin:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        with contextlib.suppress(OSError):
            self.sock.close()
        log = getattr(self, "log", None)
        if log is not None:
            log.close()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.links:
            shutil.rmtree(self.links, ignore_errors=True)


def _judge(
    reports: _Reports, reply: dict[str, Any] | None, backstop: bool, lim: ProgramLimits
) -> ProgramResult:
    """The verdict of one run from the result channel and the server's account of the child."""
    final = reports.final
    exit_code = reply.get("exit") if reply else None
    cpu = reply.get("cpu_s") if reply and isinstance(reply.get("cpu_s"), (int, float)) else None
    if final is not None and final.get("status") in STATUSES:
        variables = final.get("variables")
        variables = variables if isinstance(variables, dict) else {}
        result = ProgramResult(
            status=final["status"],
            variables={str(k): _loads(v, f"result variable {str(k)[:80]!r}") for k, v in variables.items()},
            state=_loads(final.get("state"), "final state"),
            error=_text(final["error"]) if final.get("error") is not None else None,
            line=final.get("line") if isinstance(final.get("line"), int) else None,
            finalize_error=_text(final["finalize_error"])
            if final.get("finalize_error") is not None
            else None,
        )
    elif backstop:
        result = ProgramResult(
            status="infra_timeout",
            error=f"InfraTimeout: the run passed the wall-clock backstop of {lim.backstop_s():g}s before the "
            f"program used its {lim.timeout_s:g}s of CPU time (a busy or stalled machine, or a program that waits)",
        )
    elif reply is None:
        result = ProgramResult(
            status="crash", error="SandboxCrash: the sandbox's fork server died during the run"
        )
    elif exit_code == -signal.SIGXCPU or (
        exit_code == -signal.SIGKILL and cpu is not None and cpu >= lim.timeout_s + lim.grace_s
    ):  # the kernel's RLIMIT_CPU: the program swallowed its CPU timer and went on
        result = ProgramResult(
            status="timeout", error=f"TimeoutError: program exceeded {lim.timeout_s:g}s of CPU time"
        )
    else:
        result = ProgramResult(
            status="crash", error=_crash_message(exit_code if isinstance(exit_code, int) else None)
        )
    result.cpu_s = cpu
    if reports.violations:
        result.violations = reports.violations
        result.error = reports.violations[0]
        result.status = "wrong_host" if all(_HOST_REFUSAL.match(v) for v in reports.violations) else "violation"
    return result


def _loads(text: Any, what: str) -> Any:
    if text is None:
        return None
    if not isinstance(text, str):
        return {"__unserializable__": "report"}
    try:
        return loads_json(text, what=what)
    except UntrustedInputError as e:
        return {"__unreadable__": str(e)[:500]}


class _Pool:
    """Idle fork servers; a thread takes one for a run and gives it back. At most ``max_idle``
    wait (the least recently used go first), so a process that meets many setups holds few."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Server] = []  # least recently used first
        self.max_idle = max(12, 4 * (os.cpu_count() or 1))

    def acquire(self, key: _Key) -> _Server:
        while True:
            with self.lock:
                i = next((i for i in range(len(self.idle) - 1, -1, -1) if self.idle[i].key == key), None)
                server = self.idle.pop(i) if i is not None else None
            if server is None:
                return _Server(key)
            if server.alive():
                return server
            server.close()

    def release(self, server: _Server) -> None:
        if not server.alive():
            server.close()
            return
        with self.lock:
            self.idle.append(server)
            evicted = self.idle[: -self.max_idle] if len(self.idle) > self.max_idle else []
            del self.idle[: len(evicted)]
        for old in evicted:
            old.close()

    def close(self) -> None:
        with self.lock:
            servers, self.idle = self.idle, []
        for server in servers:
            server.close()


_POOL = _Pool()
atexit.register(_POOL.close)


def close_servers() -> None:
    """Stop every idle fork server (they are started again when needed)."""
    _POOL.close()


def run_program(
    code: str,
    *,
    setup: str = "",
    preload: dict[str, Any] | None = None,
    result_vars: Sequence[str] = (),
    finalize: str | None = None,
    services: Sequence[tuple[str, str]] = (),
    view: boundary.View | None = None,
    limits: ProgramLimits | None = None,
) -> ProgramResult:
    """Run ``code`` in a fresh sandboxed process; see the module docstring.

    ``services``: (variable, host Unix socket path) pairs; ``view``: what may be imported beyond
    the stdlib (default: what ``setup`` imports). Status ``infra_timeout``: the wall-clock backstop
    was hit (not the program's CPU budget); the caller decides whether to run it again."""
    lim = limits or ProgramLimits()
    if lim.memory_limit not in ("as", "data"):
        raise ValueError(f"memory_limit must be 'as' or 'data', not {lim.memory_limit!r}")
    view = boundary.View.of_sources(setup) if view is None else view
    cfg = {
        "code": code,
        "setup": setup,
        "preload": dict(preload or {}),
        "result_vars": list(result_vars),
        "finalize": finalize,
        "timeout_s": lim.timeout_s,
        "setup_cpu_s": lim.setup_cpu_s,
        "grace_s": lim.grace_s,
        "memory_mb": lim.memory_mb,
        "memory_limit": lim.memory_limit,
        "cpu_s": lim.cpu_s
        if lim.cpu_s is not None
        else math.ceil(lim.setup_cpu_s + lim.timeout_s + lim.grace_s) + 2,
        "fsize_mb": lim.fsize_mb,
        "nproc": lim.nproc,
        "max_result_bytes": lim.max_result_bytes,
    }
    json.dumps(cfg["preload"])  # TypeError: preload is not JSON (before any sandbox starts)
    sandboxed = (
        boundary.bwrap() is not None
    )  # SandboxUnavailable: no bwrap, and running without it not allowed
    key = _Key(view, setup_imports(setup), lim.tmp_mb, lim.namespaces, not services, sandboxed)
    t0 = time.monotonic()
    sockets = [path for _, path in services]
    warm = _mode == "forkserver"
    server: _Server | None = None
    try:
        server = _POOL.acquire(key) if warm else _Server(key, sockets)
        try:
            result = server.run(cfg, services, lim)
        except _CannotLink:
            _POOL.release(server)
            warm, server = False, None
            server = _Server(key, sockets)
            result = server.run(cfg, services, lim)
    except ServerError as e:
        if server is not None:
            server.close()
        return ProgramResult(
            status="infra_timeout", error=f"InfraTimeout: {e}", duration_s=time.monotonic() - t0
        )
    except BaseException:
        if server is not None:
            server.close()
        raise
    if warm:
        _POOL.release(server)
    else:
        server.close()
    # judged here, not taken from the report: a program may have emptied the runner's list
    result.missing = [v for v in result_vars if v not in result.variables]
    result.duration_s = time.monotonic() - t0
    return result


def _feed(stream: Any, payload: bytes) -> None:
    """Write the config and close stdin (in a thread: a child that never reads must not block us)."""
    try:
        stream.write(payload)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except (BrokenPipeError, OSError, ValueError):
            pass


async def run_program_async(code: str, **kwargs: Any) -> ProgramResult:
    """:func:`run_program` in a worker thread, for harnesses that run many programs concurrently."""
    return await asyncio.to_thread(run_program, code, **kwargs)
