"""Run Python tool functions in a separate, isolated process.

What is enforced (verified by tests/tracks/nested/test_executor.py and
tests/sandbox/test_redteam_python.py):

* the OS sandbox of :mod:`callbench.sandbox.boundary` (bubblewrap: no network at all, a read-only
  root with only the interpreter and the packages the tool sources import, a private size-limited
  ``/tmp``, its own PID namespace, not root);
* a call's limit is its CPU time (``timeout_s``; ``ITIMER_PROF`` in the worker raises
  ``TimeoutError`` in the call), so a busy machine cannot time a call out; past the wall-clock
  backstop (``Limits.backstop_s``: a call that waits, or C code that ignores signals) the whole
  process group is killed and the next call starts a fresh process;
* ``setrlimit``: address space (``memory_mb``), CPU seconds, no core files, file size, processes;
* an audit hook (``_guard.py``, shared with the program sandbox; a second layer with clear
  messages) refuses sockets, fork/exec/subprocess, ctypes loading, C extensions outside the stdlib
  and the view, and opening for write / deleting / renaming anything outside the temp dir.

Without bwrap (``--unsafe-no-sandbox``) only the rlimits, the hook and ``unshare`` namespaces
(where they work) remain: C code is then not contained.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from callbench.sandbox import boundary
from callbench.sandbox.program import launch
from callbench.tools import ToolModule

__all__ = ["Limits", "PythonSandbox"]


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0  # CPU time per call (the wall clock is only a backstop: backstop_s)
    memory_mb: int = 1024
    cpu_s: int = 60  # per worker process, a backstop behind timeout_s
    fsize_mb: int = 16
    nproc: int = 64
    backstop_extra_s: float = 30.0  # see backstop_s
    startup_s: float = 300.0  # wall: only a worker that is slow to start waits it out (a busy machine)


    @property
    def backstop_s(self) -> float:
        """Wall time after which a call is stopped however little CPU it used: 10 x its CPU
        budget, at least the budget + 30 s (a call that sleeps, or a stalled machine)."""
        return max(10 * self.timeout_s, self.timeout_s + self.backstop_extra_s)


class PythonSandbox:
    """A worker process holding the tools; ``call`` returns ``{"ok", "output"|"error"}``."""

    def __init__(self, modules: list[ToolModule], limits: Limits | None = None, *, namespaces: bool = True):
        self.modules = modules
        self.limits = limits or Limits()
        self.namespaces = namespaces
        self.view = boundary.View.of_sources(*(m.source for m in modules))
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._tmp: str | None = None
        self.tools: list[str] = []
        self.load_errors: list[str] = []

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        self.close()
        self._tmp = tempfile.mkdtemp(prefix="callbench-py-")
        how = launch("_py_runner.py", self._tmp, view=self.view, namespaces=self.namespaces, tmp_mb=64)
        env = {"PATH": "/usr/bin:/bin", "HOME": how.tmpdir, "TMPDIR": how.tmpdir, "LANG": "C.UTF-8"}
        self._proc = how.popen(
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=how.cwd,
            env=env,
            start_new_session=True,
        )
        lim = self.limits
        cfg = {
            **how.config(),
            "memory_mb": lim.memory_mb,
            "cpu_s": lim.cpu_s,
            "call_cpu_s": lim.timeout_s,
            "fsize_mb": lim.fsize_mb,
            "nproc": lim.nproc,
            "modules": [
                {"path": m.path, "source": m.source, "functions": list(m.functions)} for m in self.modules
            ],
        }
        hello = self._exchange(cfg, lim.startup_s)
        if hello is None or not hello.get("ready"):
            self.close()
            raise RuntimeError("python sandbox failed to start")
        self.tools = hello["tools"]
        self.load_errors = hello["load_errors"]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            proc.wait()
            for f in (proc.stdin, proc.stdout):
                if f:
                    f.close()
        self._buf = b""
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> PythonSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls ------------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any], fields: list[str] | None = None) -> dict[str, Any]:
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        t0 = time.monotonic()
        backstop = self.limits.backstop_s
        reply = self._exchange({"name": name, "arguments": arguments, "fields": fields}, backstop)
        if reply is None:
            timed_out = time.monotonic() - t0 >= backstop
            self.close()  # kill the group; next call gets a fresh worker
            if timed_out:
                return {
                    "ok": False,
                    "error": f"TimeoutError: call exceeded the {backstop:g}s wall-clock backstop "
                    f"(its CPU limit is {self.limits.timeout_s:g}s: a call that waits, or a stalled machine)",
                }
            return {"ok": False, "error": "SandboxCrash: the tool process died (resource limit or crash)"}
        return reply

    def _exchange(self, message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError, TypeError, ValueError):
            return None
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)
