"""The V8 side of the JS sandbox: one long-lived, locked-down context.

This runs inside the sandbox worker process (see `_worker.py`), never in the
caller's process: a few V8 builtins (e.g. `Array.prototype.fill` on a huge sparse
array) abort the whole process on out-of-memory instead of throwing, and no
in-isolate limit can stop them, so the isolate lives where a crash is survivable.

Per sample: one eval starts the sample in a fresh strict function scope with its own
stand-in objects, one eval collects the result (mini_racer drains the microtask queue
after each eval task, so `.then`/`await` chains, and any promise job the sample queued
however it reached Promise, complete in between), plus one eval per fired virtual
timer.  The result is never taken in the eval that ran sample code, so when it is
taken no job of the sample is pending, and nothing runs after it (the run is closed
and no sample code runs in that eval).  Intrinsics are frozen once at context build,
so nothing a sample does survives it; a cheap fingerprint check after each sample
rejects the sample and triggers a rebuild if that ever fails.

The runner is not on the global object: it lives in a global lexical binding whose
name is random per context (`const __cb_<hex> = ...`), which host evals can name and
sample code can neither enumerate nor guess.
"""

from __future__ import annotations

import json
import queue
import secrets
import time
from importlib import resources
from typing import Any

from py_mini_racer import MiniRacer
from py_mini_racer._exc import JSEvalException, JSOOMException, JSTimeoutException

MAX_TIMER_FIRINGS = 100
GC_CHECK_EVERY = 64


def standin_source() -> str:
    return resources.files(__package__).joinpath("axios_standin.js").read_text(encoding="utf-8")


def harness_source() -> str:
    return resources.files(__package__).joinpath("js_harness.js").read_text(encoding="utf-8")


# How long a cancelled eval may take to report before the isolate thread counts as lost (a
# microtask loop that termination cannot reach). Generous: on a busy machine a healthy thread can
# take seconds to get the CPU back, and only a truly lost one waits this out.
STUCK_GRACE_S = 5.0
# A sample's limit is CPU time: V8 only stops an eval after wall time, so an eval stopped before
# its process used the sample's CPU budget ran on a busy machine, and runs again with the wall
# time multiplied (1, 4, 16 x the budget). If even the last attempt ends before the budget is
# spent, the verdict is an infrastructure timeout and says so. A JS sample cannot wait without
# using CPU (no I/O, sleep or Atomics.wait; timers run on a virtual clock), so a stop below the
# budget is never the sample's doing.
WALL_ATTEMPTS = (1, 4, 16)
CPU_SHARE = 0.8  # of the budget that counts as spent (a terminate lands a little early)


def wall_allowance(timeout_s: float) -> float:
    """The most wall time a worker may spend on one sample (every attempt of :data:`WALL_ATTEMPTS`)."""
    return timeout_s * sum(WALL_ATTEMPTS)


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
        return self.many([code], timeout)[-1]

    def many(self, codes: list[str], timeout: float) -> list[Any]:
        """Evaluate `codes` as separate tasks posted at once; their values in order.

        Each is its own task, so the isolate thread runs a microtask checkpoint after
        each one exactly as with one call per code, but Python waits for the thread
        once, not once per code.  A JS exception in any of them is raised after all
        results are in (so the result queue stays in step).
        """
        handles = [self._to_handle(code) for code in codes]  # alive until the tasks ran
        tasks = [self._dll.mr_eval(self._raw, h.raw, 0) for h in handles]
        deadline = time.monotonic() + max(timeout, 0.0)
        results = []
        try:
            for i in range(len(tasks)):
                try:
                    results.append(self._queue.get(timeout=max(deadline - time.monotonic(), 0.0)))
                except queue.Empty:
                    self._cancel(tasks[i:])
                    raise _Timeout from None
        finally:
            del handles
        return [self._to_python(r) for r in results]

    def _cancel(self, tasks: list[Any]) -> None:
        """Cancel tasks and collect the one result each still reports (canceled or not)."""
        for task in tasks:
            self._dll.mr_cancel_task(self._raw, task)
        for _ in tasks:
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


class V8Engine:
    """A reusable V8 context with the axios stand-in, hardened against samples."""

    def __init__(self, memory_mb: int = 64, max_console: int = 200, recycle_every: int = 5000):
        self.memory_mb = memory_mb
        self.max_console = max_console
        self.recycle_every = recycle_every
        self._mr: MiniRacer | None = None
        self._eval_fn: Any = None
        self._eval_many: Any = None
        self.fast = False
        self.builds = 0
        self.lockdown_info: dict[str, Any] = {}
        self._since_build = 0
        self._dirty = True
        self._options_js = json.dumps({"maxConsole": max_console})
        self._setup_js = standin_source() + "\n" + harness_source()
        self._runner = ""  # the runner's secret global name in the current context

    # ------------------------------------------------------------------ lifecycle

    def _build(self, freeze: bool = True) -> None:
        self.close()
        mr = MiniRacer()
        mem = self.memory_mb * 1024 * 1024
        mr.eval(self._setup_js)
        runner = "__cb_" + secrets.token_hex(16)
        mr.eval(f"const {runner} = __callbench;")
        opts = {"maxBytes": mem, "maxElements": mem // 8, "freeze": freeze}
        info = mr.eval(f"__callbenchLockdown({json.dumps(opts)})")
        self._runner = runner
        self.lockdown_info = json.loads(str(info))
        mr.low_memory_notification()
        self._base_heap = int(mr.heap_stats()["used_heap_size"])
        mr.set_soft_memory_limit(self._base_heap + mem // 2)
        mr.set_hard_memory_limit(self._base_heap + mem)
        self._mr = mr
        try:
            direct = _DirectEval(mr)
            self._eval_fn, self._eval_many = direct, direct.many
            self.fast = True
        except Exception:  # noqa: BLE001 - private API changed: use the public one
            self._eval_fn, self._eval_many = self._public_eval, self._public_many
            self.fast = False
        self.builds += 1
        self._since_build = 0
        self._dirty = False

    def _public_many(self, codes: list[str], timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        return [self._public_eval(c, deadline - time.monotonic()) for c in codes]

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
        self,
        code: str,
        defs_json: str | None,
        skip: list[str],
        timeout_s: float,
        fresh: bool = False,
        mark: str | None = None,
    ) -> dict:
        """Run one sample; returns {status, requests, error, console, marked}.

        mark: 'name:offsets' of the picked call's token function (see js_harness.js `start`);
        `marked` is the index of the first request the picked call made, -1 if none.
        """
        retried = False
        attempt = 0
        while True:
            if fresh:
                self._build(freeze=False)  # a context that serves one sample needs no freezing
            elif self._mr is None or self._dirty or self._since_build >= self.recycle_every:
                self._build()
            self._since_build += 1
            self._maybe_gc()
            used_context = self._since_build > 1
            wall_s = timeout_s * WALL_ATTEMPTS[attempt]
            cpu0 = time.process_time()  # this worker's threads: V8's isolate, GC and compiler threads
            out = self._run_once(code, defs_json, skip, wall_s, mark)
            cpu_s = time.process_time() - cpu0
            if fresh:
                self._dirty = True
            # A memory hit in a context that already ran samples may be old garbage:
            # retry once in a fresh context before blaming the sample.
            if out["status"] == "memory" and used_context and not retried:
                retried = True
                continue
            if out["status"] == "timeout":
                if cpu_s >= timeout_s * CPU_SHARE:
                    out["error"] = f"execution exceeded the {timeout_s:g} s CPU time limit"
                elif not out.get("fatal") and attempt + 1 < len(WALL_ATTEMPTS):
                    attempt += 1  # stopped by the wall clock of a busy machine: run it again
                    continue
                else:
                    out["error"] = (
                        f"infrastructure timeout, not the sample's: {wall_s:g} s of wall time passed while "
                        f"the sample used {cpu_s:.2f} s of CPU (its limit {timeout_s:g} s); the machine was too busy"
                    )
                    out["infra"] = True
            return out

    def _run_once(
        self, code: str, defs_json: str | None, skip: list[str], timeout_s: float, mark: str | None
    ) -> dict:
        deadline = time.monotonic() + timeout_s
        defs_js = "null" if defs_json is None else f"JSON.parse({json.dumps(defs_json)})"
        runner = self._runner
        start_js = (
            f"{runner}.start({json.dumps(code)},{defs_js},{json.dumps(skip)},{self._options_js},"
            f"{json.dumps(mark)})"
        )
        settle_js, finish_js = f"{runner}.settle()", f"{runner}.finish()"
        try:
            # start returns nothing: the result is read in a later eval, after the
            # microtask checkpoint that follows this one (both posted at once).
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            raw = self._eval_many([start_js, settle_js], remaining)[-1]
            fired = 0
            while not isinstance(raw, str):
                fired += 1
                raw = self._eval(finish_js if fired >= MAX_TIMER_FIRINGS else settle_js, deadline)
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
        requests = data["requests"]
        if not data.get("intact", True):
            self._dirty = True  # something leaked: next sample gets a fresh context
            return {
                "status": "rejected",
                "requests": requests,
                "console": data["console"],
                "error": f"the sample changed shared sandbox state ({data.get('damage')}); its result is discarded",
            }
        error = data.get("error")
        status = "ok" if requests else ("runtime_error" if error else "no_request")
        out = {"status": status, "requests": requests, "console": data["console"], "error": error}
        out["marked"] = data.get("marked", -1)
        out["rejected"] = data.get("rejected", [])
        return out

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
            raw = self._eval_fn(f"{self._runner}.finish()", 0.2)
            return json.loads(raw) if isinstance(raw, str) else {}
        except _Stuck:
            return {"stuck": True}
        except Exception:  # noqa: BLE001 - best effort only
            return {}


def _one_line(msg: str, limit: int = 300) -> str:
    msg = " ".join(msg.split())
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."
