"""Run Python tool functions in a separate, limited process.

What is enforced (verified by tests/tracks/nested/test_executor.py):

* separate process (``python -I -B``), started in its own session; on a call's wall-time timeout the
  whole process group is killed and the next call starts a fresh process;
* when ``unshare`` works here (root, or user namespaces allowed), the child gets a new network
  namespace (no interfaces but a down loopback: nothing is reachable) and a new PID namespace
  (killing it kills every process it started);
* ``setrlimit``: address space (``memory_mb``), CPU seconds, no core files, file size, processes;
  ``RLIMIT_NPROC`` is ignored by the kernel for root, so for root the process guard is the audit hook;
* an audit hook (not removable from Python; ``_guard.py``, shared with the program sandbox) refuses
  sockets, fork/exec/subprocess, ctypes loading, process creation through ``_posixsubprocess.fork_exec`` (which has no audit event), and opening for
  write / deleting / renaming anything outside the fresh temp dir (the cwd).

Not guaranteed: code that escapes the interpreter (a C extension already importable, e.g. numpy
doing its own syscalls) is limited only by the rlimits and namespaces, and without ``unshare`` such
code could reach the network and write wherever the user running the harness may write.
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

from callbench.sandbox.program import python_argv, unshare_prefix
from callbench.tracks.nested.tools import ToolModule

__all__ = ["Limits", "PythonSandbox", "unshare_prefix"]


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0  # wall time per call
    memory_mb: int = 1024
    cpu_s: int = 60  # per worker process, a backstop behind timeout_s
    fsize_mb: int = 16
    nproc: int = 64
    startup_s: float = 20.0


class PythonSandbox:
    """A worker process holding the tools; ``call`` returns ``{"ok", "output"|"error"}``."""

    def __init__(self, modules: list[ToolModule], limits: Limits | None = None, *, namespaces: bool = True):
        self.modules = modules
        self.limits = limits or Limits()
        self.namespaces = namespaces and bool(unshare_prefix())
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._tmp: str | None = None
        self.tools: list[str] = []
        self.load_errors: list[str] = []

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        self.close()
        self._tmp = tempfile.mkdtemp(prefix="callbench-py-")
        cmd = [
            *(unshare_prefix() if self.namespaces else ()),
            *python_argv("_py_runner.py"),
        ]
        env = {"PATH": "/usr/bin:/bin", "HOME": self._tmp, "TMPDIR": self._tmp, "LANG": "C.UTF-8"}
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._tmp,
            env=env,
            start_new_session=True,
        )
        lim = self.limits
        cfg = {
            "tmpdir": self._tmp,
            "memory_mb": lim.memory_mb,
            "cpu_s": lim.cpu_s,
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
        reply = self._exchange(
            {"name": name, "arguments": arguments, "fields": fields}, self.limits.timeout_s
        )
        if reply is None:
            timed_out = time.monotonic() - t0 >= self.limits.timeout_s
            self.close()  # kill the group; next call gets a fresh worker
            if timed_out:
                return {"ok": False, "error": f"TimeoutError: call exceeded {self.limits.timeout_s:g}s"}
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
