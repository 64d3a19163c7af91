"""Child side of the program sandbox (stdlib only; started by :func:`callbench.sandbox.program.run_program`).

Reads its config (JSON) from stdin until EOF, then makes stdin ``/dev/null``; adds the view's
package roots to ``sys.path`` (the interpreter runs with ``-S``: no site-packages, no ``.pth``
files); starts a loopback forwarder per service socket; applies the limits, arms the audit hook,
binds the preloaded JSON values, runs the trusted setup, compiles and runs the program in the same
globals (a fresh ``__main__`` module), then collects the result variables and the ``finalize``
expression. Reports go to the result fd as JSON lines: ``{"violation": message}`` as soon as the
hook refuses something, and one ``{"final": true, ...}``.
"""

import ast
import gc
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import types

from _callbench_guard import apply_limits, install_guard

PROGRAM = "<program>"


class SandboxTimeout(BaseException):
    """Raised by SIGALRM when the wall-time budget of a phase is spent."""


def _alarm(signum, frame):
    raise SandboxTimeout("wall time limit exceeded")


def _one_line(text, limit=1000):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(exc, filename):
    """``ExcType: message`` and the deepest line of ``filename`` in the traceback."""
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = _one_line(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)
    return (f"{text} (line {line})" if line else text), line


class Runner:
    def __init__(self, cfg):
        self.cfg = cfg
        self.fd = cfg["result_fd"]
        self.reserve = bytearray(16 * 1024 * 1024)  # released on MemoryError so reporting still works
        self.deadline = time.monotonic() + cfg["timeout_s"]

    # -- reporting ------------------------------------------------------------------------------
    def emit(self, obj):
        try:
            data = (json.dumps(obj) + "\n").encode()
        except BaseException:  # noqa: BLE001 - e.g. MemoryError
            data = (
                json.dumps({"final": True, "status": "crash", "error": "result not encodable"}) + "\n"
            ).encode()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError:
                return
            view = view[n:]

    def violation_reporter(self):
        """The hook's reporter. Its count lives in a closure, not on the runner the program can reach
        through its caller's frame; the first report never depends on it."""
        emit = self.emit
        seen = [0]

        def on_violation(message):
            seen[0] += 1
            if seen[0] <= 20:
                emit({"violation": _one_line(message)})

        return on_violation

    def to_json(self, value, hook, budget):
        """JSON text of one value; never raises. ``__to_json__`` (when the setup defined one) is applied to
        the value and to nested values json cannot encode; what is still not JSON becomes its repr."""
        try:
            if hook is not None:
                value = hook(value)

            def default(obj):  # nested values json cannot encode: the hook, else their repr
                out = hook(obj) if hook is not None else obj
                return {"__repr__": repr(obj)} if out is obj else out

            text = json.dumps(value, default=default)
        except BaseException as exc:  # noqa: BLE001 - any failure is recorded, not raised
            if isinstance(exc, SandboxTimeout):
                raise
            text = json.dumps({"__unserializable__": type(value).__name__})
        if len(text) > budget[0]:
            text = json.dumps({"__too_large__": type(value).__name__, "bytes": len(text)})
        budget[0] -= len(text)
        return text

    # -- phases ---------------------------------------------------------------------------------
    def arm(self, seconds):
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))

    def run(self):
        cfg = self.cfg
        module = types.ModuleType("__main__")
        sys.modules["__main__"] = module
        sys.argv = [PROGRAM]
        g = module.__dict__
        g.update(cfg["preload"])
        signal.signal(signal.SIGALRM, _alarm)
        self.arm(self.deadline - time.monotonic())
        final = {"final": True, "status": "ok", "error": None, "line": None}
        try:
            try:
                exec(compile(cfg["setup"], "<setup>", "exec"), g)
            except SandboxTimeout:
                final.update(status="timeout", error="setup exceeded the wall time limit")
                return self.finish(final, g, None)
            except BaseException as exc:  # noqa: BLE001 - a harness error, reported
                final.update(status="crash", error="setup failed: " + _describe(exc, "<setup>")[0])
                return self.finish(final, g, None)
            to_json = g.get("__to_json__")
            to_json = to_json if callable(to_json) else None
            code = None
            try:
                tree = compile(cfg["code"], PROGRAM, "exec", ast.PyCF_ONLY_AST)
                if not tree.body:
                    final["status"] = "no_code"
                else:
                    code = compile(tree, PROGRAM, "exec")
            except SyntaxError as exc:
                msg = _one_line(f"{type(exc).__name__}: {exc.msg}")
                final.update(status="syntax_error", line=exc.lineno, error=f"{msg} (line {exc.lineno})")
            except (ValueError, MemoryError, RecursionError) as exc:
                final.update(status="syntax_error", error=_one_line(f"{type(exc).__name__}: {exc}"))
            if code is not None:
                try:
                    exec(code, g)
                except SandboxTimeout:
                    final.update(
                        status="timeout", error=f"TimeoutError: program exceeded {cfg['timeout_s']:g}s"
                    )
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        error, line = _describe(exc, PROGRAM)
                        final.update(status="runtime_error", error=error, line=line)
                except BaseException as exc:  # noqa: BLE001 - the program's failure is the result
                    if isinstance(exc, MemoryError):
                        self.reserve = None
                        gc.collect()
                    error, line = _describe(exc, PROGRAM)
                    final.update(status="runtime_error", error=error, line=line)
            return self.finish(final, g, to_json)
        except SandboxTimeout:  # fired between the guarded blocks
            final.update(status="timeout", error=f"TimeoutError: program exceeded {cfg['timeout_s']:g}s")
            return self.finish(final, g, None)

    def finish(self, final, g, to_json):
        """Collect variables and state within the grace period; then report and exit."""
        cfg = self.cfg
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.reserve = None
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - the program may have replaced or closed them
                pass
        variables, missing, state, finalize_error = {}, [], None, None
        budget = [cfg["max_result_bytes"]]
        try:
            self.arm(self.deadline + cfg["grace_s"] - 0.3 - time.monotonic())
            for name in cfg["result_vars"]:
                if name in g:
                    variables[name] = self.to_json(g[name], to_json, budget)
                else:
                    missing.append(name)
            if cfg["finalize"] and final["status"] != "crash":
                try:
                    value = eval(compile(cfg["finalize"], "<finalize>", "eval"), g)
                    state = self.to_json(value, to_json, budget)
                except SandboxTimeout:
                    raise
                except BaseException as exc:  # noqa: BLE001 - reported next to the status
                    finalize_error = _describe(exc, "<finalize>")[0]
        except SandboxTimeout:
            finalize_error = "TimeoutError: collecting the results exceeded the grace period"
        signal.setitimer(signal.ITIMER_REAL, 0)
        if final["status"] in ("ok", "runtime_error", "no_code") and time.monotonic() > self.deadline:
            # the program caught SandboxTimeout (a bare except) and went on: still a timeout
            final.update(status="timeout", error=f"TimeoutError: program exceeded {cfg['timeout_s']:g}s")
        final.update(missing=missing, finalize_error=finalize_error)
        # values travel as JSON text so one encoding failure cannot lose the whole report
        final["variables"] = variables
        final["state"] = state
        self.emit(final)
        os._exit(0)


def _pump(a, b):
    """Copy bytes both ways between two sockets until either side closes."""
    try:
        pair = {a: b, b: a}
        while True:
            ready, _, _ = select.select(list(pair), [], [])
            for src in ready:
                data = src.recv(1 << 16)
                if not data:
                    return
                pair[src].sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass


def _forward(listener, path):
    """Accept loopback connections and pump each to a new connection to the service socket."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            conn.close()
            upstream.close()
            continue
        threading.Thread(target=_pump, args=(conn, upstream), daemon=True).start()


def start_forwarders(services, preload):
    """Serve each service's Unix socket on a loopback port (the sandbox has no other network) and
    bind its URL in ``preload``. Runs before the guard, which refuses listening sockets. Returns
    the (host, port) pairs the program may connect to."""
    ports = []
    for svc in services:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        preload[svc["var"]] = f"http://127.0.0.1:{listener.getsockname()[1]}"
        threading.Thread(target=_forward, args=(listener, svc["path"]), daemon=True, name="forward").start()
        ports.append(["127.0.0.1", listener.getsockname()[1]])
    return ports


def main():
    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    cfg = json.loads(b"".join(chunks))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.path[:0] = cfg["site_path"]
    cfg["allow_connect"] += start_forwarders(cfg["services"], cfg["preload"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big file is an OSError, not a kill
    apply_limits(
        memory_mb=cfg["memory_mb"],
        cpu_s=cfg["cpu_s"],
        fsize_mb=cfg["fsize_mb"],
        nproc=cfg["nproc"],
        memory_limit=cfg["memory_limit"],
    )
    runner = Runner(cfg)
    install_guard(
        cfg["tmpdir"],
        program=True,
        allow_connect=[x if isinstance(x, str) else tuple(x) for x in cfg["allow_connect"]],
        on_violation=runner.violation_reporter(),
        extension_roots=cfg["extension_roots"],
        denied_modules=cfg["denied_modules"],
    )
    runner.run()


main()
