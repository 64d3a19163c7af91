"""Child side of the program sandbox (stdlib only; started by :mod:`callbench.sandbox.program`).

A fork server. Started once per sandbox (inside bwrap), it reads its server config (JSON) from
stdin until EOF, makes stdin ``/dev/null``, closes every fd but 1, 2 and the control socket, adds
the view's package roots to ``sys.path`` (the interpreter runs with ``-S``) and imports the
modules the scenario's setup imports (torch, requests, a service's source): start-up and those
imports are paid here once, never charged to a program. Then, for each request on the control
socket (a length-prefixed JSON config with three fds attached: stdout, stderr, result channel) it
forks a child, waits for it (its CPU time is the child's rusage), empties the private ``/tmp`` and
``/dev/shm`` for the next program and answers one JSON line ``{"exit", "cpu_s", "clean"}``. One
program at a time, so no program ever sees another's files or processes.

The child (a fresh process: new session, fresh ``random`` seed, only its three fds) starts a
loopback forwarder per service socket, applies the limits (``RLIMIT_CPU`` as the hard backstop),
arms the audit hook, binds the preloaded JSON values, runs the trusted setup, and then compiles
and runs the program in the same globals (a fresh ``__main__``) under a CPU-time budget
(``ITIMER_PROF``: CPU of all its threads, counted from the program's start, so setup and the
imports are not charged). It collects the result variables and the ``finalize`` expression.
Reports go to the result fd as JSON lines, each preceded by a newline (bytes a program wrote
there without one cannot swallow them): ``{"violation": message}`` as soon as the hook refuses
something, and one ``{"final": true, ...}``.
"""

import ast
import gc
import json
import math
import os
import random
import resource
import select
import shutil
import signal
import socket
import sys
import threading
import time
import types

from _callbench_guard import apply_limits, install_guard

PROGRAM = "<program>"


class SandboxTimeout(BaseException):
    """Raised by SIGPROF when the CPU-time budget of a phase is spent."""


def _alarm(signum, frame):
    raise SandboxTimeout("CPU time limit exceeded")


def _cpu():
    """CPU seconds of this process (all threads)."""
    return time.process_time()


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
        self.budget = cfg["timeout_s"]  # CPU seconds of the program
        self.start = None  # CPU clock when the program started
        self.fired = False  # the program's CPU timer went off
        self.timeout_error = f"TimeoutError: program exceeded {self.budget:g}s of CPU time"

    # -- reporting ------------------------------------------------------------------------------
    def emit(self, obj):
        try:
            data = ("\n" + json.dumps(obj) + "\n").encode()
        except BaseException:  # noqa: BLE001 - e.g. MemoryError
            data = (
                "\n" + json.dumps({"final": True, "status": "crash", "error": "result not encodable"}) + "\n"
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
    def on_alarm(self, signum, frame):
        if self.start is not None:
            self.fired = True  # the kernel's CPU clock, coarser than process_time(), ran out
        _alarm(signum, frame)

    def arm(self, seconds):
        signal.setitimer(signal.ITIMER_PROF, max(seconds, 0.001))

    def lower_cpu_backstop(self):
        """RLIMIT_CPU (the kernel's backstop, for a program that swallows or blocks SIGPROF) at the
        program's budget plus the grace period, counted from now."""
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        stop = math.ceil(self.start + self.budget + self.cfg["grace_s"]) + 1
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (min(stop, hard), min(stop + 1, hard)))
        except (ValueError, OSError):
            pass  # the limit from apply_limits stays

    def run(self):
        cfg = self.cfg
        module = types.ModuleType("__main__")
        sys.modules["__main__"] = module
        sys.argv = [PROGRAM]
        g = module.__dict__
        g.update(cfg["preload"])
        signal.signal(signal.SIGPROF, self.on_alarm)
        self.arm(cfg["setup_cpu_s"])
        final = {"final": True, "status": "ok", "error": None, "line": None}
        try:
            try:
                exec(compile(cfg["setup"], "<setup>", "exec"), g)
            except SandboxTimeout:
                final.update(status="crash", error=f"setup exceeded {cfg['setup_cpu_s']:g}s of CPU time")
                return self.finish(final, g, None)
            except BaseException as exc:  # noqa: BLE001 - a harness error, reported
                final.update(status="crash", error="setup failed: " + _describe(exc, "<setup>")[0])
                return self.finish(final, g, None)
            to_json = g.get("__to_json__")
            to_json = to_json if callable(to_json) else None
            signal.setitimer(signal.ITIMER_PROF, 0)
            self.start = _cpu()  # the program's budget starts here: imports and setup are not charged
            self.lower_cpu_backstop()
            self.arm(self.budget)
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
                    final.update(status="timeout", error=self.timeout_error)
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
            final.update(status="timeout", error=self.timeout_error)
            return self.finish(final, g, None)

    def finish(self, final, g, to_json):
        """Collect variables and state within the grace period; then report and exit."""
        cfg = self.cfg
        signal.setitimer(signal.ITIMER_PROF, 0)
        used = None if self.start is None else _cpu() - self.start
        self.reserve = None
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - the program may have replaced or closed them
                pass
        variables, missing, state, finalize_error = {}, [], None, None
        budget = [cfg["max_result_bytes"]]
        try:
            self.arm(cfg["grace_s"])
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
        signal.setitimer(signal.ITIMER_PROF, 0)
        over = self.fired or (used is not None and used > self.budget)
        if final["status"] in ("ok", "runtime_error", "no_code") and over:
            # the program caught SandboxTimeout (a bare except) and went on: still a timeout
            final.update(status="timeout", error=self.timeout_error)
        final.update(missing=missing, finalize_error=finalize_error, cpu_s=used)
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


def _receive(sock):
    """One request: (config, [stdout fd, stderr fd, result fd]); None when the harness hung up."""
    head, fds = b"", []
    while len(head) < 8:
        data, got, _flags, _addr = socket.recv_fds(sock, 8 - len(head), 3)
        if not data:
            for fd in got:
                os.close(fd)
            return None
        head += data
        fds += got
    size = int.from_bytes(head, "big")
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 20))
        if not chunk:
            return None
        body += chunk
    return json.loads(bytes(body)), fds


def _empty(path):
    """Delete everything under ``path`` (the program's files); False when something stayed."""
    ok = True
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                for root, dirs, _files in os.walk(entry.path):
                    for d in dirs:  # a program may have left directories without write permission
                        try:
                            os.chmod(os.path.join(root, d), 0o700, follow_symlinks=False)
                        except OSError:
                            pass
                os.chmod(entry.path, 0o700)
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            ok = False
    return ok and not os.listdir(path)


def child(cfg, fds, control):
    """In the forked child: become a fresh process for one program, then run it (never returns)."""
    try:
        os.setsid()
        out, err, result = fds
        os.dup2(out, 1)
        os.dup2(err, 2)
        control.close()
        keep = sorted({0, 1, 2, result})
        for lo, hi in zip(keep, [*keep[1:], 1 << 20], strict=True):
            os.closerange(lo + 1, hi)  # the harness's other fds, the zygote's: nothing else reaches here
        cfg["result_fd"] = result
        random.seed()  # a fork would share the server's state
        os.chdir(cfg["tmpdir"])
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
    except BaseException as exc:  # noqa: BLE001 - reported as a crash by the harness (no final report)
        try:
            os.write(2, f"sandbox child: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(70)
    os._exit(0)


def serve(server, control):
    """Fork one child per request, one at a time; answer with its exit status and CPU time."""
    while True:
        got = _receive(control)
        if got is None:
            return
        cfg, fds = got
        cfg = {**server["program"], **cfg}
        try:
            pid = os.fork()
        except OSError as exc:  # no process to run it in: the machine's failure, not the program's
            for fd in fds:
                os.close(fd)
            control.sendall((json.dumps({"fork_error": str(exc)}) + "\n").encode())
            continue
        if pid == 0:
            child(cfg, fds, control)
        for fd in fds:
            os.close(fd)
        _, status, usage = os.wait4(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)  # anything the program left in its session
        except OSError:
            pass
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        clean = all(_empty(d) for d in server["scratch"])
        reply = {"exit": code, "cpu_s": usage.ru_utime + usage.ru_stime, "clean": clean}
        control.sendall((json.dumps(reply) + "\n").encode())


def main():
    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    server = json.loads(b"".join(chunks))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    control_fd = server["control_fd"]
    keep = sorted({0, 1, 2, control_fd})
    for lo, hi in zip(keep, [*keep[1:], 1 << 20], strict=True):
        os.closerange(lo + 1, hi)  # bwrap's --args memfd and anything else inherited
    control = socket.socket(fileno=control_fd)
    sys.path[:0] = server["site_path"]
    errors = []
    for name in server["imports"]:
        try:
            __import__(name)
        except BaseException as exc:  # noqa: BLE001 - the setup meets it again and reports it
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    gc.collect()
    gc.freeze()  # children share these pages instead of copying them on the first collection
    control.sendall((json.dumps({"ready": True, "import_errors": errors}) + "\n").encode())
    serve(server, control)


main()
