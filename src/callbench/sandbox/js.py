"""Run model-written axios code in a V8 sandbox and capture the request it makes.

`JsSandbox.run(code)` extracts the first axios call from the model output (see
`js_extract`), runs it against an axios stand-in that records the request config
instead of sending it, and returns a `JsResult`.

Design (why it looks like this):

* V8 lives in a worker process.  Some V8 builtins abort the process on huge
  allocations instead of throwing, so the isolate must not share a process with the
  caller.  If the worker dies or hangs, it is killed and restarted and the sample is
  reported as "memory"/"timeout"; the caller never crashes.
* One long-lived, locked-down context serves all samples (a fresh isolate per sample
  is ~10x slower).  At build time every intrinsic, the stand-in and globalThis are
  deep-frozen, timer/shared-memory APIs and RegExp.prototype.compile are removed, the
  global `eval` evaluates strict code in global scope only (no direct eval), and
  the runner leaves the global object (the host reaches it through a global lexical
  binding with a random name, so a sample cannot start, settle or finish runs).  Each
  sample's code becomes the body of a fresh async function whose parameters are fresh
  stand-in objects (axios, console, process, require, ...), so sample state dies with
  the function.  The function is sloppy, as Node runs a CommonJS file, unless the code
  opens with a 'use strict' directive (the extractor puts one in front of an ES module,
  which Node runs strict).  A write to a frozen object throws in strict code (a
  tampering sample ends as "runtime_error") and fails silently in sloppy code (nothing
  changes).  A name sloppy code assigns without declaring it would become a property of
  the frozen global object, i.e. vanish: the extractor gives each such name a `var` at
  the end of the code (hoisted), a binding of the sample's own function that dies with it
  (chosen over a `with`-scope Proxy: no Proxy sits on every name lookup, nothing per
  sample is left anywhere else).  A fingerprint check after each sample (global keys,
  frozen prototypes, every shared regex's source and flags) rejects the sample and
  rebuilds the context if anything changed anyway, and the context is rebuilt after any
  timeout or memory hit.
* A sample's result is taken only after every promise job it queued has run (however
  it reached Promise), and the run is closed then: nothing it scheduled can record,
  log or run during a later sample.  Timers run on a virtual clock: after the sample's
  synchronous part and microtasks, pending timers fire earliest first (up to 100),
  then the rest are dropped.
* The first recorded request is the one scored, so it must come from the call the
  extractor picked, and a sample whose first request came from elsewhere (an alias,
  `require` of a computed name, a nested call) is "rejected".  The one exception: with
  ``call_from`` (where the answer starts after a task's starter) and axios calls of the
  starter's own before it, the first request the picked call makes is scored
  (`JsResult.scored` its index), and the starter's earlier requests are neither scored nor
  a reason to reject.  Only the starter's: each of its axios calls gets `<starter>()` as an
  extra last argument (random name, bound like `<name>` below), a one-shot token whose request
  counts as the starter's only if the entry point was called straight from that call (the
  stack below it is the one `<starter>` saw, but for the first frame's position); a request the
  answer sends another way before its call (an alias, a computed `require`, a starter call
  re-routed through a substitute `axios`) makes the sample "rejected".  The picked call gets
  `<name>()` as an extra last argument, `<name>` random per sample and bound to the
  stand-in's `arm` in a closure around the sample's function (no parameter of it): each
  time the call runs, `arm` makes a fresh one-shot token just before it and saves the
  stack below the call.  An axios entry point spends a token it finds last at once, before
  any code of the sample can run, and marks its request only if the token is the newest
  and the stack below itself is that saved stack (with the call's own position, which the
  extractor gives in two forms V8 uses), i.e. it was called straight from the picked call.
* mini_racer drains microtasks outside its eval tasks, where termination cannot reach
  them; a sample stuck there (e.g. `while (true) await null`) makes the worker report
  "timeout" and exit, and the next sample starts a new worker (~0.25 s).  After 100
  recorded requests axios calls return a never-settling promise, so polling loops
  (`do { r = await axios.get(u) } while (r.data.status !== 'done')`) stall instead.
* Speed: two V8 evals per sample (start, then collect after the microtask checkpoint
  between them), posted together so that Python waits for the isolate thread once.
  `run_many` writes a batch of samples to the worker at once (each still runs alone, with
  its own limit and integrity check): both processes wake once per batch, and the caller
  scores one result while V8 runs the next.
* Budget: code over `MAX_CODE_CHARS` characters or nested deeper than `MAX_NESTING`
  brackets is "rejected" before it is parsed or run (see `js_extract.budget_error`).

Behaviour a caller should know: sample code runs as Node runs CommonJS, in sloppy mode unless
it opens with 'use strict' (ES modules run strict): in sloppy code reserved words of strict
mode (`package`, `interface`, ...) are identifiers, assigning an undeclared variable makes a
binding later code sees (the sample's own, not a global), and writing to a builtin fails
silently; in strict code the assignment throws ReferenceError and the write TypeError.
Top-level `this` is `module.exports`.  `require('axios')` gives the stand-in; 'fs' and
'fs/promises' give an empty, read-only virtual file system (reads fail as Node's do for a
missing file, ENOENT; writes fail with EROFS; `existsSync` is false; no host file is ever
there); 'child_process' throws "require('child_process') is not allowed in the sandbox";
`require('form-data')` gives the stand-in's model of that package (a
multipart body with its own boundary and parts); any other module (express, ws, lodash,
'./config', ...) gives an inert stand-in that never throws (called, constructed, read, chained,
awaited) and records nothing; `JsResult.stubbed_modules` lists those the code requires by name.
`process.env` answers from the definitions (the variables in scope; values as strings, as in
Node): `process.env.API_KEY`, `const { API_KEY } = process.env`.

Real-world starters (see `js_extract`): when the axios call sits in a function, method,
promise executor or callback that the text leaves open, the code is cut after the call and
closed; the functions on the way to the call are invoked with what is in scope (definitions,
the starter's own constants), and a callback handed to an inert library (an express route, a
ws handler) is called at the end of the run, after timers, if nothing called it (arguments it
was not given are inert stand-ins, or the definition of the same name).  So are exported
functions and factories, and the methods of the objects they return that lead to the call
(`module.exports = function (apiKey) { return { balance(address) { ... } } }`: the factory is
called with `apiKey`, then `balance` with `address`, from the definitions).  A handler's
request (`req`, `request`, `ctx`) answers `params`, `query`, `body`, `headers` (and Koa's
`ctx.request`, Express's `req.get(name)`) from the definitions of the same name
(`req.body.hashtag` is `hashtag`), anything else from an inert stand-in.

With ``alone=True`` (the web API track sets it for tasks with starter code), when the whole
program cannot reach the call ("no_request" or "runtime_error"), the completed statement
holding the call runs once more alone: after the program's top-level definitions (function and
class declarations; variable declarations and assignments with each value guarded, so one that
throws leaves its name undefined), inside an async function whose `this` answers from the
definitions, after the parameters of the functions on the way (from the definitions, else
inert stand-ins) and the declarations before the statement in each block on the way (a
definition of the same name wins).  It is a sample of its own under every guarantee below (the
call token included).  When it makes the request, that is scored, with
`JsResult.reached_by == "call"` (else the program's own result stands);
`reached_by == "program"` when the whole program reached it.

Status values: "ok" (at least one request captured; later errors, e.g. from
processing the empty fake response, are kept in `error`), "no_request",
"incomplete" (the first axios call is cut off), "incomplete_program" (the call is complete
but the code around it cannot be completed into a runnable program; `error` says why),
"runtime_error", "timeout", "memory",
"rejected" (over the code budget, first request not from the extracted call, or the
sample changed shared sandbox state; `error` says which).

What is enforced: no sample code can get another request counted as the picked call's.
The token never sits where code can look for it (not in `arguments`, the global object or
anything handed to the sample; the name in the sample's own source leads nowhere without
direct eval); patching `Function.prototype.call/apply/bind`, `Reflect`, `Error` or any
builtin the stand-in uses fails (frozen); stack traces hold no values; the harness and the
stand-in are strict code, so `caller`/`arguments` of their functions throw and a sloppy
function's `caller` is null where they called it (a sloppy sample's `fn.caller`,
`fn.arguments`, `arguments.callee` and `with` reach only the sample's own functions and
bindings; the closure that holds `arm` has returned before any sample code runs); getters,
Proxies and `Symbol` hooks on what the call is given run only after the token is spent.  A function of the sample's own that the picked call
invokes instead of axios (a wrapper, a Proxy, a substitute `axios`) does receive the token,
but a request it makes is not marked: its stack is not the call's (and stack text is
compared whole, so frame names cannot forge it).  A bound axios method at the call marks
its request: no sample code runs in between, so that request is the call's own.
(`tests/sandbox/test_marker_redteam.py` has one test per route; the sloppy-only routes are in
`tests/sandbox/test_reaching_the_call.py`.)

Not guaranteed: the marker check needs an argument list, so a tagged-template call
(axios.get`...`) is not checked; with `extract=False` there is no chosen call and no
check.  The picked call is never matched when it runs 100 frames deep or more
(`Error.stackTraceLimit` is 100 in the sandbox, Node's is 10): such a sample is
"rejected".  `fresh_context=True` does not freeze the intrinsics, so none of these
guarantees hold there (it is for comparisons).  V8's own limits (stack depth, heap) still
end very deep or very large code as "runtime_error" or "memory".
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callbench.sandbox._engine import harness_source, standin_source, wall_allowance
from callbench.sandbox.js_extract import budget_error, extract_invocation, prepare_code, required_modules

__all__ = ["STATUSES", "JsResult", "JsSandbox", "node_script", "standin_source"]

STATUSES = (
    "ok",
    "no_request",
    "incomplete",
    "incomplete_program",
    "runtime_error",
    "timeout",
    "memory",
    "rejected",
)

# Names the stand-in binds in every sample; definitions may not reuse them.
BINDING_NAMES = frozenset(
    {
        "axios",
        "require",
        "module",
        "exports",
        "console",
        "process",
        "FormData",
        "URLSearchParams",
        "URL",
        "AbortController",
        "AbortSignal",
        "Buffer",
        "btoa",
        "atob",
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "setImmediate",
        "clearImmediate",
        "global",
        "__dirname",
        "__filename",
        "__callbench_rt",
    }
)
_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false "
    "finally for function if import in instanceof new null return super switch this throw true try typeof "
    "var void while with yield let static implements interface package private protected public await "
    "arguments eval undefined NaN Infinity globalThis".split()
)
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# V8 aborts with "Fatal JavaScript ..." for heap exhaustion and oversized objects.
_OOM_MARKERS = ("out of memory", "heap limit", "fatal javascript", "invalid table size", "allocation failed")


@dataclass
class JsResult:
    """Outcome of one sample.

    status: one of STATUSES.  request: the first captured request config (dict with
    method, url, params?, headers, data?, syntax) or None.  requests: all captured
    configs in call order.  error: one-line message or None.  code: the code that
    actually ran (after extraction).  console: captured console output lines.
    elapsed_s: wall time of the whole `run` call.  stubbed_modules: modules other than axios
    the code that ran requires by a literal name; each got an inert stand-in.  rejected: one line
    per promise an axios call returned that rejected (handled or not), in order.

    raw: per request (aligned with `requests`), the config as axios hands it to its adapter, as a
    logger of it sees it (what WAPIIBench's mock.js reads: see ``rawView`` in the stand-in).  sent:
    per request, what axios' Node http adapter would write (method, url, target, headers, body), or
    ``{"error": ...}`` where it would send nothing (see ``sentView``).

    scored: the index in `requests` (and `raw`, `sent`) of `request`: 0, unless the starter's own
    calls sent requests before the answer's call (see `run`'s ``call_from``).  reached_by: how the
    scored request was reached: "program" (the whole program ran to the call) or "call" (it could
    not, and the completed call statement ran alone; see `run`); None when nothing was scored.
    """

    status: str
    request: dict | None = None
    requests: list[dict] = field(default_factory=list)
    error: str | None = None
    code: str = ""
    console: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    stubbed_modules: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    raw: list[dict] = field(default_factory=list)
    sent: list[dict] = field(default_factory=list)
    scored: int = 0
    reached_by: str | None = None


def definition_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a variable in scope of a sample (a definition), or None: a task
    file states it as that row's one-line error before anything runs."""
    if not isinstance(name, str) or not _IDENT.match(name) or name in _RESERVED:
        return f"definition name {name!r} is not a usable JavaScript identifier"
    if name in BINDING_NAMES:
        return f"definition name {name!r} clashes with a sandbox binding (the sandbox gives {name} itself)"
    return None


def _check_definitions(definitions: dict | None) -> str | None:
    if not definitions:
        return None
    for name in definitions:
        problem = definition_name_problem(name)
        if problem:
            raise ValueError(problem)
    try:
        return json.dumps(definitions, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"definitions must be JSON values: {e}") from None


# Linux pipes hold 64 KiB: unanswered request lines are kept below that (see run_many).
_PIPE_WINDOW = 60_000


def _line(payload: dict) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode("utf-8") + b"\n"


class _WorkerGone(Exception):
    def __init__(self, status: str, error: str):
        super().__init__(error)
        self.status = status
        self.error = error


@dataclass
class _Job:
    """One sample on its way through the worker: what is sent, and what its result needs."""

    line: bytes  # the request line for the worker
    run_code: str
    mark: str | None
    call_text: str | None
    started: float
    stubbed: tuple[str, ...] = ()
    starter_calls: int = 0  # the starter's own axios calls before the picked one (see run's call_from)
    retry: tuple[str, dict | None, int | None] | None = None  # what the call alone is built from
    program: JsResult | None = None  # for the call alone: the whole program's result

    def result_for_gone(self, gone: _WorkerGone) -> JsResult:
        return JsResult(
            gone.status,
            error=gone.error,
            code=self.run_code,
            elapsed_s=time.perf_counter() - self.started,
            stubbed_modules=list(self.stubbed),
        )

    def result(self, out: dict) -> JsResult:
        requests = [json.loads(r) if isinstance(r, str) else r for r in out.get("requests", [])]
        raw = [r.pop("raw", {}) for r in requests]
        sent = [r.pop("sent", {}) for r in requests]
        from_starter = [r.pop("from_starter", False) is True for r in requests]
        status, error = out["status"], out.get("error")
        if error is not None:
            error = " ".join(str(error).split())[:500]
        marked = out.get("marked", -1)
        scored = 0
        if self.mark is not None and status == "ok" and marked != 0:
            if self.starter_calls and marked > 0 and not all(from_starter[:marked]):
                # the answer sent a request another way before its call (an alias, a computed
                # require): only the starter's own calls' requests may come first
                status = "rejected"
                error = (
                    "a request before the answer's axios call "
                    f"({_clip(self.call_text or '')}) came from neither it nor the starter's own calls"
                )
            elif self.starter_calls and marked > 0:
                # the starter's own calls sent requests first: the answer's call's request is scored
                scored = marked
            elif self.starter_calls:
                status = "no_request"
                error = (
                    f"the answer's axios call ({_clip(self.call_text or '')}) sent no request; "
                    "only the starter's own calls did"
                )
            else:
                status = "rejected"
                error = (
                    "the first request did not come from the extracted axios call "
                    f"({_clip(self.call_text or '')}); the code reached axios another way first"
                )
        return JsResult(
            status=status,
            request=requests[scored] if requests and status == "ok" else None,
            requests=requests,
            error=error,
            code=self.run_code,
            console=list(out.get("console", [])),
            elapsed_s=time.perf_counter() - self.started,
            stubbed_modules=list(self.stubbed),
            rejected=[str(r) for r in out.get("rejected", [])],
            raw=raw,
            sent=sent,
            scored=scored,
            reached_by="program" if status == "ok" else None,
        )


# The whole program's outcomes after which the call runs alone (see JsSandbox.run).
_ALONE_AFTER = frozenset({"no_request", "runtime_error"})

_REBUILDS_S = 10.0  # context rebuilds between a sample's attempts, on a busy machine


class JsSandbox:
    """Sandboxed execution of axios snippets; see the module docstring.

    timeout_s: CPU-time limit per sample (V8 stops an eval by wall time, so a sample
    stopped before it used this much CPU ran on a busy machine and runs again with more
    wall time; see ``_engine.WALL_ATTEMPTS``).  memory_mb: V8 heap allowance per sample
    (also the cap for single buffer allocations).  fresh_context: build a new V8
    isolate for every sample (slow; for comparison).  kill_grace_s: how long past every
    attempt's wall time (and context rebuilds) the worker may stay unresponsive before it
    is killed.  Not thread safe: use one sandbox per thread.
    """

    def __init__(
        self,
        timeout_s: float = 1.0,
        memory_mb: int = 64,
        *,
        fresh_context: bool = False,
        kill_grace_s: float = 2.0,
        max_console: int = 200,
        startup_timeout_s: float = 300.0,
    ):
        if timeout_s <= 0 or memory_mb <= 0:
            raise ValueError("timeout_s and memory_mb must be positive")
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.fresh_context = fresh_context
        self.kill_grace_s = float(kill_grace_s)
        self.max_console = int(max_console)
        self.startup_timeout_s = float(startup_timeout_s)
        self.worker_starts = 0
        self.last_worker_stderr = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buf = b""

    # ------------------------------------------------------------------ worker management

    def _start_worker(self, retry: bool = False) -> None:
        # Isolated (-I): neither the cwd nor PYTHONPATH is on the worker's sys.path, so a stray
        # ``concurrent.py`` next to the user's run cannot break or enter the worker; this source
        # tree goes first explicitly (it may not be the installed one).
        src_root = str(Path(__file__).resolve().parents[2])
        boot = (
            f"import sys; sys.path.insert(0, {src_root!r}); import runpy; "
            "runpy.run_module('callbench.sandbox._worker', run_name='__main__', alter_sys=True)"
        )
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", boot],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            close_fds=True,
        )
        self._buf = b""
        self.worker_starts += 1
        config = {"memory_mb": self.memory_mb, "max_console": self.max_console}
        try:
            ready = self._exchange(config, time.monotonic() + self.startup_timeout_s)
        except _WorkerGone as gone:
            if gone.status == "timeout" and not retry:
                # a worker that cannot start fails at once; one that is merely slow met a busy
                # machine (its V8 build is CPU-bound): an infrastructure delay, tried once more
                return self._start_worker(retry=True)
            raise RuntimeError(
                f"sandbox worker failed to start: {gone.error}\n{self.last_worker_stderr}"
            ) from None
        if not ready.get("ready"):
            self._kill_worker()
            raise RuntimeError(f"sandbox worker failed to start: {ready}")
        self.worker_info = ready

    def _stderr_tail(self, limit: int = 4000) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def _kill_worker(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.kill()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for f in (proc.stdin, proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _exchange(self, payload: dict, deadline: float) -> dict:
        """Send one line, read one line; raise _WorkerGone if the worker dies or hangs."""
        self._send_lines([_line(payload)])
        return self._receive(deadline)

    def _send_lines(self, lines: list[bytes]) -> None:
        """Write request lines (one write); raise _WorkerGone if the worker is gone."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(b"".join(lines))
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._gone() from None

    def _receive(self, deadline: float) -> dict:
        """Read one result line; raise _WorkerGone if the worker dies or passes ``deadline``."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill_worker()
                raise _WorkerGone(
                    "timeout", "execution exceeded the time limit; the sandbox worker was killed"
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise self._gone()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _gone(self) -> _WorkerGone:
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        tail = self._stderr_tail()
        self.last_worker_stderr = tail
        self._kill_worker()
        if any(m in tail.lower() for m in _OOM_MARKERS):
            return _WorkerGone("memory", "V8 ran out of memory; the sandbox worker was restarted")
        return _WorkerGone(
            "runtime_error", f"the sandbox worker crashed (exit code {code}); it was restarted"
        )

    # ------------------------------------------------------------------ public API

    def start(self) -> JsSandbox:
        """Start the worker now (else the first `run` pays ~0.25 s for it)."""
        if self._proc is not None and self._proc.poll() is not None:
            self._kill_worker()
        if self._proc is None:
            self._start_worker()
        return self

    def run(
        self,
        code: str,
        definitions: dict | None = None,
        *,
        extract: bool = True,
        call_from: int | None = None,
        alone: bool = False,
    ) -> JsResult:
        """Run one sample.

        code: model output (markdown and prose allowed when extract=True) or plain JS.
        definitions: variable name -> JSON value, bound in scope before the code (code
        that declares the same name itself wins).  extract: find the first axios call
        and drop everything after it (see `extract_invocation`); with False the code
        runs whole (ES imports are still rewritten to require).  call_from: where in `code`
        the answer starts (the text before it is the task's starter): the call scored is the
        first axios call that ends after it, and requests the starter's own calls send before
        it are not scored (nor rejected).

        alone: when the whole program cannot reach the call (no request, or an error before
        it), run the completed statement holding the call once more alone, after the program's
        top-level definitions (see `extract_invocation`'s ``alone``); its request, when it
        makes one, is scored, with ``reached_by="call"`` (else the program's result stands).
        For real-world starter code whose surroundings the sandbox cannot run; off by default,
        where an error before the call is the answer's own.
        """
        return next(self.run_many([(code, definitions, call_from, alone)], extract=extract))[1]

    def run_many(
        self, items: list[tuple], *, extract: bool = True
    ) -> Iterator[tuple[int, JsResult]]:
        """Run several samples, yielding ``(index, result)`` as each finishes (those that
        need no run, e.g. no axios call found, first; then in order).

        Every sample is exactly as in :meth:`run` (its own fresh scope, its own time limit,
        the integrity check after it); the requests are written to the worker in one go, so
        the caller and the worker wake once per batch rather than once per sample, and the
        caller can score one result while V8 runs the next. A sample that kills or hangs
        the worker ends as in :meth:`run`; the ones after it are sent again to a new worker.
        An item is ``(code, definitions)`` or ``(code, definitions, call_from, alone)`` (see
        :meth:`run`).
        """
        queue: list[tuple[int, _Job]] = []
        for i, item in enumerate(items):
            code, definitions = item[0], item[1]
            call_from = item[2] if len(item) > 2 else None
            job = self._prepare(code, definitions, extract, call_from)
            if isinstance(job, JsResult):
                yield i, job
            else:
                if extract and len(item) > 3 and item[3]:
                    job.retry = (code, definitions, call_from)
                queue.append((i, job))
        queue.reverse()  # popped from the end: oldest last
        sent, in_flight = 0, 0  # the last `sent` of the queue are with the worker (in_flight bytes)
        try:
            while queue:
                try:
                    self.start()  # (re)starts a worker that is missing or died between samples
                    # Sent but unanswered lines stay under one pipe buffer: a write then never
                    # blocks while the worker waits to write its results (no deadlock).
                    batch = []
                    while sent < len(queue):
                        line = queue[-1 - sent][1].line
                        if sent and in_flight + len(line) > _PIPE_WINDOW:
                            break
                        batch.append(line)
                        in_flight += len(line)
                        sent += 1
                    if batch:
                        self._send_lines(batch)
                    # the worker may re-run a sample stopped by the wall clock of a busy machine
                    # (its limit is CPU time): wait for every attempt, context rebuilds included
                    out = self._receive(
                        time.monotonic() + wall_allowance(self.timeout_s) + _REBUILDS_S + self.kill_grace_s
                    )
                except _WorkerGone as gone:
                    # the oldest unanswered sample took the worker down; the others go to a new one
                    i, job = queue.pop()
                    sent, in_flight = 0, 0
                    # the call alone took it down: the whole program's result stands
                    yield i, job.program if job.program is not None else job.result_for_gone(gone)
                    continue
                i, job = queue.pop()
                sent, in_flight = sent - 1, in_flight - len(job.line)
                if out.get("fatal"):
                    self._kill_worker()  # it is exiting on its own; reap it before the next sample
                    sent, in_flight = 0, 0  # what was queued behind it died with the worker: send it again
                result = job.result(out)
                if job.program is not None:  # the call alone: scored if it made the request
                    if result.status == "ok":
                        result.reached_by = "call"
                        yield i, result
                    else:
                        yield i, job.program
                    continue
                alone = self._alone(job, result)
                if alone is not None:
                    # sent right after those already with the worker
                    queue.insert(len(queue) - sent, (i, alone))
                    continue
                yield i, result
        finally:
            if sent:
                # the caller stopped early (an error while it scored a result): results of lines
                # the worker still holds must never be read as answers to a later call
                self._kill_worker()

    def _alone(self, job: _Job, result: JsResult) -> _Job | None:
        """The job that runs the call alone after `job`'s whole program could not reach it, or
        None (it did, or it failed in a way the call alone cannot help: time, memory, a rejected
        sample, a program that could not be prepared)."""
        if job.retry is None or result.status not in _ALONE_AFTER:
            return None
        code, definitions, call_from = job.retry
        alone = self._prepare(code, definitions, True, call_from, alone=True)
        if isinstance(alone, JsResult):
            return None
        alone.program = result
        return alone

    def _prepare(
        self, code: str, definitions: dict | None, extract: bool, call_from: int | None = None, alone: bool = False
    ) -> _Job | JsResult:
        """Check and extract one sample: the request for the worker, or the result already."""
        t0 = time.perf_counter()
        defs_json = _check_definitions(definitions)
        problem = budget_error(code)
        if problem is not None:
            return JsResult("rejected", error=problem, elapsed_s=time.perf_counter() - t0)
        mark = None
        ex = None
        if extract:
            ex = extract_invocation(code, call_from, alone=alone)
            if ex.status != "ok":
                msg = {
                    "no_request": "no axios call found in the code",
                    "incomplete": "the first axios call is cut off (unfinished code)",
                }.get(ex.status, ex.error)
                return JsResult(
                    ex.status,
                    error=msg,
                    code=ex.code,
                    elapsed_s=time.perf_counter() - t0,
                    stubbed_modules=list(ex.stubbed_modules),
                )
            run_code, declared = ex.code, ex.declared
            sent = run_code
            if ex.mark is not None:
                # the extracted call gets `<mark>()` as its last argument: a call token made
                # just before that call (see js_harness.js); the name is random per sample
                name = "__cb_mark_" + secrets.token_hex(8)
                at, prefix, calls_at = ex.mark
                # the starter's own calls get `<starter>()`, the starter's token (one per run,
                # random name): only requests it marks may come before the answer's call
                starter = "__cb_starter_" + secrets.token_hex(8) if ex.starter_marks else ""
                inserts = [(s_at, s_prefix + starter + "()") for s_at, s_prefix in ex.starter_marks]
                inserts.append((at, prefix + name + "()"))
                pieces, pos = [], 0
                for i_at, i_text in inserts:  # in text order: the starter's calls lie before the call
                    pieces += [run_code[pos:i_at], i_text]
                    pos = i_at
                sent = "".join(pieces) + run_code[pos:]

                def moved(c: int) -> int:  # an offset of run_code in sent
                    return c + sum(len(t) for i_at, t in inserts if i_at < c)

                # where the name starts and where V8 may place the call, in UTF-16 units
                offsets = [_utf16_len(sent[: moved(at) + len(prefix)])] + [
                    _utf16_len(sent[: moved(c)]) for c in calls_at
                ]
                mark = ":".join([name + ("/" + starter if starter else "")] + [str(o) for o in offsets])
        else:
            run_code, declared = prepare_code(code)
            sent = run_code
        stubbed = ex.stubbed_modules if ex is not None else required_modules(run_code)
        payload = {
            "code": sent,
            "defs": defs_json,
            "skip": list(declared),
            "timeout": self.timeout_s,
            "fresh": self.fresh_context,
            "mark": mark,
        }
        return _Job(
            _line(payload), run_code, mark, ex.call_text if ex is not None else None, t0, stubbed,
            ex.starter_calls if ex is not None else 0,
        )

    def close(self) -> None:
        """Stop the worker process (a later `run` starts a new one)."""
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill_worker()

    def __enter__(self) -> JsSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def node_script(code: str, definitions: dict | None = None, *, extract: bool = True) -> str:
    """A standalone Node.js program that runs `code` against the same stand-in.

    It prints one JSON line: {"requests": [...], "raw": [...], "sent": [...], "console": [...],
    "error": ..., ...}.
    For benchmarks that compare the V8 sandbox with `node` per sample; the sandbox
    itself never uses node.  Returns "" if extraction finds nothing runnable.
    """
    defs_json = _check_definitions(definitions)
    if extract:
        ex = extract_invocation(code)
        if ex.status != "ok":
            return ""
        run_code, declared = ex.code, ex.declared
    else:
        run_code, declared = prepare_code(code)
    defs_js = "null" if defs_json is None else f"JSON.parse({json.dumps(defs_json)})"
    driver = f"""
process.on('unhandledRejection', function () {{}});
// as JsResult holds them: each request's raw and sent views in lists of their own
function apart(text) {{
  var out = JSON.parse(text);
  out.requests = out.requests.map(function (q) {{ return typeof q === 'string' ? JSON.parse(q) : q; }});
  out.raw = out.requests.map(function (q) {{ var v = q.raw; delete q.raw; return v; }});
  out.sent = out.requests.map(function (q) {{ var v = q.sent; delete q.sent; return v; }});
  return JSON.stringify(out);
}}
__callbench.start({json.dumps(run_code)}, {defs_js}, {json.dumps(list(declared))}, {{}}, null);
(function loop(n) {{
  setImmediate(function () {{
    var r = n >= 100 ? __callbench.finish() : __callbench.settle();
    if (typeof r === 'string') process.stdout.write(apart(r) + '\\n');
    else loop(n + 1);
  }});
}})(0);
"""
    return standin_source() + "\n" + harness_source() + "\n" + driver
