"""Run a whole generated Python program in a separate, isolated process.

``run_program(code, setup=..., preload=..., result_vars=..., finalize=...)`` starts a fresh child
per program inside the OS sandbox (:mod:`callbench.sandbox.boundary`: bubblewrap namespaces, a
read-only root with only the interpreter and the :class:`~callbench.sandbox.boundary.View`'s
packages, a private size-limited ``/tmp``, no network but its own loopback, not root). The child
(``python -I -S -B``) reads its config from stdin, applies the limits, arms the audit hook, binds
``preload`` (JSON values) as globals, runs the trusted ``setup`` (it may import what the view
holds and create objects), compiles and runs ``code`` in the same globals (``__name__ ==
"__main__"``), then reports the ``result_vars`` and the value of the trusted ``finalize``
expression as JSON. ``services`` ((variable, host Unix socket) pairs) are reachable inside: the
runner forwards a loopback port to each socket and binds ``http://127.0.0.1:<port>`` to the
variable.

What is enforced (verified by tests/sandbox/test_program.py and tests/sandbox/test_redteam_python.py):

* the boundary above; the view defaults to what ``setup`` imports (:meth:`View.of_sources`);
* separate process in its own session; wall time ``timeout_s`` (the child raises a timeout in the
  program and still reports variables/state; ``grace_s`` later the whole process group is killed,
  and with it the sandbox's PID namespace);
* ``setrlimit``: memory (``memory_limit="as"``: address space; ``"data"``: data segment and private
  writable mappings, for libraries such as torch that reserve large virtual ranges), CPU seconds, no
  core files, file size (SIGXFSZ ignored: a too-big file is an ``OSError``), processes;
* an audit hook (a second layer that gives clear violation messages; see ``_guard.py``) refuses
  fork/exec/subprocess/os.system, signals to other processes, raising rlimits, ctypes function
  lookup/calls/raw memory, C extensions from outside the stdlib and the view, sockets other than
  connections to the services, listening, and writes/renames/deletes outside the temp dir. Every
  refusal is reported at once, so status is ``"violation"`` even if the program catches the error;
* stdout/stderr are read concurrently; only the last ``max_output_bytes`` of each are kept.

Not guaranteed: the report is written by the runner inside the program's own process, so it
holds the program's values — a program can set or fake them, as it could compute them; what the
harness judges besides them (violations, the wall-clock timeout, a session service's state) it
reads outside the process. Without bwrap (``--unsafe-no-sandbox``) only the rlimits, the audit hook
and ``unshare`` namespaces (where they work) remain: C code is then not contained.
``finalize`` is evaluated in the program's globals, so the program can rebind the names it uses;
``__to_json__`` is taken as the setup left it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from callbench.sandbox import boundary

_HERE = Path(__file__).parent
STATUSES = ("ok", "no_code", "syntax_error", "runtime_error", "timeout", "violation", "crash")

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
    network: bool = True,
    namespaces: bool = True,
    tmp_mb: int = 256,
) -> Launch:
    """bwrap around ``runner`` when it works here; else (``--unsafe-no-sandbox``) ``unshare``
    where that works (``network=False`` keeps the host network), else nothing."""
    argv = python_argv(runner)
    sockets = {path: f"{boundary.SOCKETS}/s{i}.sock" for i, path in enumerate(socket_paths)}
    wrapped = boundary.command(
        argv, view=view, sockets=[(h, Path(i).name) for h, i in sockets.items()], layout=boundary.Layout(tmp_mb=tmp_mb)
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
    timeout_s: float = 10.0  # wall time for setup + program, from the child's start
    memory_mb: int = 2048
    memory_limit: Literal["as", "data"] = "as"
    cpu_s: int | None = None  # None: max(60, 4 * timeout_s), a backstop behind the wall time
    fsize_mb: int = 64
    nproc: int = 256
    max_output_bytes: int = 64 * 1024  # tail kept per stream
    max_result_bytes: int = 16 * 1024 * 1024  # JSON of variables + state; larger values are replaced
    grace_s: float = 2.0  # after timeout_s: time to collect results before the group is killed
    namespaces: bool = True  # without bwrap (--unsafe-no-sandbox): use unshare when it works here
    tmp_mb: int = 256  # size of the sandbox's private /tmp


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
    duration_s: float = 0.0

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
    the stdlib (default: what ``setup`` imports)."""
    lim = limits or ProgramLimits()
    if lim.memory_limit not in ("as", "data"):
        raise ValueError(f"memory_limit must be 'as' or 'data', not {lim.memory_limit!r}")
    view = boundary.View.of_sources(setup) if view is None else view
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="callbench-prog-")
    res_r, res_w = os.pipe()
    proc = None
    try:
        how = launch(
            "_program_runner.py",
            tmp,
            view=view,
            socket_paths=[path for _, path in services],
            network=not services,
            namespaces=lim.namespaces,
            tmp_mb=lim.tmp_mb,
        )
        inside = [how.sockets[path] for _, path in services]
        cfg = {
            **how.config(),
            "services": [{"var": var, "path": p} for (var, _), p in zip(services, inside, strict=True)],
            "result_fd": res_w,
            "code": code,
            "setup": setup,
            "preload": dict(preload or {}),
            "result_vars": list(result_vars),
            "finalize": finalize,
            "allow_connect": inside,
            "timeout_s": lim.timeout_s,
            "grace_s": lim.grace_s,
            "memory_mb": lim.memory_mb,
            "memory_limit": lim.memory_limit,
            "cpu_s": lim.cpu_s if lim.cpu_s is not None else max(60, math.ceil(4 * lim.timeout_s)),
            "fsize_mb": lim.fsize_mb,
            "nproc": lim.nproc,
            "max_result_bytes": lim.max_result_bytes,
        }
        payload = json.dumps(cfg).encode()  # TypeError: preload is not JSON
        env = {"PATH": "/usr/bin:/bin", "HOME": how.tmpdir, "TMPDIR": how.tmpdir, "LANG": "C.UTF-8"}
        proc = subprocess.Popen(
            how.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=how.cwd,
            env=env,
            start_new_session=True,
            pass_fds=(res_w,),
        )
        os.close(res_w)
        res_w = -1
        threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True).start()
        out, err = _Tail(lim.max_output_bytes), _Tail(lim.max_output_bytes)
        report = _Tail(lim.max_result_bytes + (1 << 20))
        timed_out = _pump(
            proc, {proc.stdout: out, proc.stderr: err, res_r: report}, t0 + lim.timeout_s + lim.grace_s
        )
        _kill(proc)  # whatever is left of the group (before reaping, so the pgid cannot be reused)
        rc = proc.wait()
        result = _parse(bytes(report.buf) if report.total == len(report.buf) else b"", timed_out, rc, lim)
        # judged here, not taken from the report: a program may have emptied the runner's list
        result.missing = [v for v in result_vars if v not in result.variables]
        result.stdout, result.stderr = out.text(), err.text()
        result.duration_s = time.monotonic() - t0
        return result
    finally:
        if proc is not None:
            if proc.poll() is None:
                _kill(proc)
                proc.wait()
            for f in (proc.stdout, proc.stderr):
                if f:
                    f.close()
        for fd in (res_r, res_w):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)


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


def _pump(proc: subprocess.Popen[bytes], sinks: dict[Any, _Tail], deadline: float) -> bool:
    """Read every pipe until all are closed; True when the deadline came first."""
    sel = selectors.DefaultSelector()
    for f in sinks:
        sel.register(f, selectors.EVENT_READ)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            for key, _ in sel.select(left):
                fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    sinks[key.fileobj].add(chunk)
                else:
                    sel.unregister(key.fileobj)
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(left, 0.01))
        except subprocess.TimeoutExpired:
            return True  # pipes closed but the process lives on
        return False
    finally:
        sel.close()


def _parse(data: bytes, timed_out: bool, rc: int | None, lim: ProgramLimits) -> ProgramResult:
    violations: list[str] = []
    final: dict[str, Any] | None = None
    for raw in data.splitlines():
        try:
            msg = json.loads(raw)
        except ValueError:
            continue  # not from the runner
        if not isinstance(msg, dict):
            continue
        if isinstance(msg.get("violation"), str):
            violations.append(msg["violation"])
        elif msg.get("final") is True:
            if final is not None:  # the runner writes one; a second means the program forged one
                violations.append("sandbox: more than one result report (forged by the program)")
                continue
            final = msg
    if final is not None and final.get("status") in STATUSES:
        result = ProgramResult(
            status=final["status"],
            variables={k: _loads(v) for k, v in (final.get("variables") or {}).items()},
            missing=list(final.get("missing") or []),
            state=_loads(final.get("state")),
            error=final.get("error"),
            line=final.get("line"),
            finalize_error=final.get("finalize_error"),
        )
    elif timed_out:
        result = ProgramResult(status="timeout", error=f"TimeoutError: program exceeded {lim.timeout_s:g}s")
    else:
        result = ProgramResult(status="crash", error=_crash_message(rc))
    if violations:
        result.violations = violations
        result.error = violations[0]
        result.status = "violation"
    return result


def _loads(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {"__unserializable__": "report"}


async def run_program_async(code: str, **kwargs: Any) -> ProgramResult:
    """:func:`run_program` in a worker thread, for harnesses that run many programs concurrently."""
    return await asyncio.to_thread(run_program, code, **kwargs)
