"""The tool sandbox's per-call limit is CPU time (issue 28): a call frozen past its limit by a busy
machine still returns its value; a call that spins is stopped at its CPU limit inside the worker."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from callbench.sandbox.python import Limits, PythonSandbox
from callbench.tools import ToolModule

SOURCE = """
def work(n):
    total = 0
    for i in range(n):
        total += i
    return {"result": total}

def spin():
    while True:
        pass
"""


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (bwrap and the sandboxed interpreter)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return out


def test_a_call_frozen_past_its_limit_returns_its_value():
    with PythonSandbox([ToolModule("t.py", SOURCE, ("work", "spin"))], Limits(timeout_s=0.5)) as sb:
        assert sb.call("work", {"n": 10})["ok"]  # the worker is up
        pids = _tree(sb._proc.pid)

        def freeze() -> None:
            time.sleep(0.02)
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            time.sleep(1.5)  # three times the call's limit without any CPU
            for p in pids:
                os.kill(p, signal.SIGCONT)

        t = threading.Thread(target=freeze)
        t.start()
        reply = sb.call("work", {"n": 2_000_000})
        t.join()
        assert reply == {"ok": True, "output": {"result": sum(range(2_000_000))}}, reply


def test_a_spinning_call_stops_at_its_cpu_limit_and_the_worker_stays():
    with PythonSandbox([ToolModule("t.py", SOURCE, ("work", "spin"))], Limits(timeout_s=0.3)) as sb:
        assert sb.call("work", {"n": 10})["ok"]
        pid = sb._proc.pid
        reply = sb.call("spin", {})
        assert reply == {"ok": False, "error": "TimeoutError: call exceeded 0.3s of CPU time"}
        assert sb._proc.pid == pid  # reported by the worker itself, not killed
        assert sb.call("work", {"n": 3}) == {"ok": True, "output": {"result": 3}}
