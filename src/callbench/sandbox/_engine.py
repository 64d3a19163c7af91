"""The V8 side of the JS sandbox: one long-lived, locked-down context.

This runs inside the sandbox worker process (see `_worker.py`), never in the
caller's process: a few V8 builtins (e.g. `Array.prototype.fill` on a huge sparse
array) abort the whole process on out-of-memory instead of throwing, and no
in-isolate limit can stop them, so the isolate lives where a crash is survivable.

Per sample: one eval starts the sample in a fresh strict function scope with its own
stand-in objects, one eval collects the result (V8 drains microtasks after each
eval, so `.then`/`await` chains complete in between), plus one eval per fired
virtual timer.  Intrinsics are frozen once at context build, so nothing a sample
does survives it; a cheap fingerprint check after each sample triggers a rebuild if
that ever fails.
"""

from __future__ import annotations

import json
import queue
import re
import time
from importlib import resources
from typing import Any

from py_mini_racer import MiniRacer
from py_mini_racer._exc import JSEvalException, JSOOMException, JSTimeoutException

MAX_TIMER_FIRINGS = 100
# Code without any of these cannot leave microtasks or timers behind, so it runs as a
# plain function and its result comes back in the same eval.  Method names only count
# after a dot, so words in comments ("get all users") keep the fast path.
_ASYNC_TOKENS = re.compile(
    r"\b(?:await|async|Promise|nextTick|setTimeout|setInterval|setImmediate|queueMicrotask|"
    r"interceptors|import|fromAsync)\b"
    r"|\.\s*(?:then|catch|finally|all|allSettled|any|race)\b"
)
GC_CHECK_EVERY = 64


def standin_source() -> str:
    return resources.files(__package__).joinpath("axios_standin.js").read_text(encoding="utf-8")


def harness_source() -> str:
    return resources.files(__package__).joinpath("js_harness.js").read_text(encoding="utf-8")


STUCK_GRACE_S = 0.25


class _Timeout(Exception):
    pass


class _Stuck(_Timeout):
    """V8 did not stop when asked (a builtin or a microtask loop that ignores
    termination); only ending the process frees the isolate thread."""


class _DirectEval:
    """Evaluate on the isolate thread without MiniRacer.eval's asyncio round trip.

    MiniRacer.eval hops through an asyncio loop thread (~270 us per call on the
    dev box); posting the task directly and waiting on mini_racer's own result
    queue costs ~35 us.  This touches mini_racer 0.14 internals, so it is probed at
    startup and the engine falls back to the public API if the probe fails.
    """

    def __init__(self, mr: MiniRacer):
        ctx = mr._ctx
        self._dll = ctx._dll
        self._raw = ctx._ctx
        self._queue = ctx._non_cancelable_mr_task_results_queue
        self._to_handle = ctx._python_to_value_handle
        self._to_python = ctx._value_handle_to_python
        if self("1+1", 5.0) != 2:
            raise RuntimeError("direct eval probe failed")

    def __call__(self, code: str, timeout: float) -> Any:
        handle = self._to_handle(code)
        task = self._dll.mr_eval(self._raw, handle.raw, 0)
        try:
            result = self._queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            self._dll.mr_cancel_task(self._raw, task)
            try:
                result = self._queue.get(timeout=STUCK_GRACE_S)
            except queue.Empty:
                # mini_racer drains microtasks outside eval tasks, where a cancel
                # cannot reach them; some builtins ignore termination too.
                raise _Stuck from None
            try:
                self._to_python(result)
            except Exception:  # noqa: BLE001 - the terminated result is an exception
                pass
            raise _Timeout from None
        finally:
            del handle
        return self._to_python(result)


class V8Engine:
    """A reusable V8 context with the axios stand-in, hardened against samples."""

    def __init__(self, memory_mb: int = 64, max_console: int = 200, recycle_every: int = 5000):
        self.memory_mb = memory_mb
        self.max_console = max_console
        self.recycle_every = recycle_every
        self._mr: MiniRacer | None = None
        self._eval_fn: Any = None
        self.fast = False
        self.builds = 0
        self.lockdown_info: dict[str, Any] = {}
        self._since_build = 0
        self._dirty = True
        self._options_js = json.dumps({"maxConsole": max_console})
        self._setup_js = standin_source() + "\n" + harness_source()

    # ------------------------------------------------------------------ lifecycle

    def _build(self, freeze: bool = True) -> None:
        self.close()
        mr = MiniRacer()
        mem = self.memory_mb * 1024 * 1024
        mr.eval(self._setup_js)
        opts = {"maxBytes": mem, "maxElements": mem // 8, "freeze": freeze}
        info = mr.eval(f"__callbenchLockdown({json.dumps(opts)})")
        self.lockdown_info = json.loads(str(info))
        mr.low_memory_notification()
        self._base_heap = int(mr.heap_stats()["used_heap_size"])
        mr.set_soft_memory_limit(self._base_heap + mem // 2)
        mr.set_hard_memory_limit(self._base_heap + mem)
        self._mr = mr
        try:
            self._eval_fn = _DirectEval(mr)
            self.fast = True
        except Exception:  # noqa: BLE001 - private API changed: use the public one
            self._eval_fn = self._public_eval
            self.fast = False
        self.builds += 1
        self._since_build = 0
        self._dirty = False

    def _public_eval(self, code: str, timeout: float) -> Any:
        assert self._mr is not None
        try:
            return self._mr.eval(code, timeout_sec=max(timeout, 0.001))
        except JSTimeoutException:
            raise _Stuck from None  # the public API cannot tell whether V8 stopped

    def close(self) -> None:
        if self._mr is not None:
            mr, self._mr = self._mr, None
            mr.close()

    def v8_version(self) -> str:
        if self._mr is None or self._dirty:
            self._build()
        assert self._mr is not None
        return self._mr.v8_version

    # ------------------------------------------------------------------ per sample

    def _eval(self, code: str, deadline: float) -> Any:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout
        return self._eval_fn(code, remaining)

    def _maybe_gc(self) -> None:
        assert self._mr is not None
        if self._since_build % GC_CHECK_EVERY == 0:
            used = int(self._mr.heap_stats()["used_heap_size"])
            if used > self._base_heap + self.memory_mb * 1024 * 1024 // 4:
                self._mr.low_memory_notification()

    def run(
        self, code: str, defs_json: str | None, skip: list[str], timeout_s: float, fresh: bool = False
    ) -> dict:
        """Run one sample; returns {status, requests, error, console}."""
        retried = False
        while True:
            if fresh:
                self._build(freeze=False)  # a context that serves one sample needs no freezing
            elif self._mr is None or self._dirty or self._since_build >= self.recycle_every:
                self._build()
            self._since_build += 1
            self._maybe_gc()
            used_context = self._since_build > 1
            out = self._run_once(code, defs_json, skip, timeout_s)
            if fresh:
                self._dirty = True
            # A memory hit in a context that already ran samples may be old garbage:
            # retry once in a fresh context before blaming the sample.
            if out["status"] == "memory" and used_context and not retried:
                retried = True
                continue
            return out

    def _run_once(self, code: str, defs_json: str | None, skip: list[str], timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        defs_js = "null" if defs_json is None else f"JSON.parse({json.dumps(defs_json)})"
        sync = "true" if _ASYNC_TOKENS.search(code) is None else "false"
        start_js = (
            f"__callbench.start({json.dumps(code)},{defs_js},{json.dumps(skip)},{self._options_js},{sync})"
        )
        try:
            raw = self._eval(start_js, deadline)
            if raw is None or not isinstance(raw, (str, int, float)):
                raw = self._eval("__callbench.settle()", deadline)
            fired = 0
            while not isinstance(raw, str):
                fired += 1
                raw = self._eval(
                    "__callbench.finish()" if fired >= MAX_TIMER_FIRINGS else "__callbench.settle()", deadline
                )
        except _Timeout as stop:
            stuck = isinstance(stop, _Stuck)
            partial = {} if stuck else self._salvage()
            self._dirty = True
            out = {
                "status": "timeout",
                "requests": partial.get("requests", []),
                "console": partial.get("console", []),
                "error": f"execution exceeded the {timeout_s:g} s time limit",
            }
            if stuck or partial.get("stuck"):
                out["fatal"] = True  # the worker must exit: its isolate thread is lost
            return out
        except JSOOMException:
            self._dirty = True
            return self._memory_result()
        except JSEvalException as e:
            self._dirty = True
            assert self._mr is not None
            if self._mr.was_hard_memory_limit_reached():
                return self._memory_result()
            return {"status": "runtime_error", "requests": [], "console": [], "error": _one_line(str(e))}
        assert self._mr is not None
        if self._mr.was_hard_memory_limit_reached():
            # The limit can also stop microtasks, which run outside our evals.
            self._dirty = True
            return self._memory_result()
        data = json.loads(raw)
        if data.get("lost"):
            self._dirty = True
            return {
                "status": "runtime_error",
                "requests": [],
                "console": [],
                "error": "the sample interfered with the sandbox harness",
            }
        if not data.get("intact", True):
            self._dirty = True  # something leaked: next sample gets a fresh context
        requests = data["requests"]
        error = data.get("error")
        status = "ok" if requests else ("runtime_error" if error else "no_request")
        return {"status": status, "requests": requests, "console": data["console"], "error": error}

    def _memory_result(self) -> dict:
        return {
            "status": "memory",
            "requests": [],
            "console": [],
            "error": f"the sample exceeded the {self.memory_mb} MB heap limit",
        }

    def _salvage(self) -> dict:
        """After a timeout, read what the sample recorded before it was stopped."""
        try:
            raw = self._eval_fn("__callbench.finish()", 0.2)
            return json.loads(raw) if isinstance(raw, str) else {}
        except _Stuck:
            return {"stuck": True}
        except Exception:  # noqa: BLE001 - best effort only
            return {}


def _one_line(msg: str, limit: int = 300) -> str:
    msg = " ".join(msg.split())
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."
