"""Child side of the Python tool sandbox (stdlib only; started with
``callbench.sandbox.program.python_argv``, which makes the shared ``_guard.py`` importable as
``_callbench_guard``: limits and audit hook).

Protocol: the first stdin line is the config (limits, temp dir, tool sources); each further line is
``{"name", "arguments", "fields"}`` and gets one JSON line back on the saved stdout fd. Tool output
printed to stdout goes to stderr (discarded by the parent) so it cannot corrupt the protocol.
Limits are applied before any tool source runs.
"""

import inspect
import json
import os
import signal
import sys

from _callbench_guard import apply_limits, install_guard


def _bind(fn, arguments):
    """Keyword arguments by name; ``arg_i`` that is not a parameter name binds to the i-th parameter."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = {p.name for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
    args, kwargs, extra = [], {}, {}
    for key, value in arguments.items():
        if key in names:
            kwargs[key] = value
        elif key.startswith("arg_") and key[4:].isdigit():
            extra[int(key[4:])] = value
        else:
            kwargs[key] = value  # let the call raise a clear TypeError
    for i in sorted(extra):
        if (
            i < len(positional)
            and positional[i].name not in kwargs
            and positional[i].kind != positional[i].POSITIONAL_ONLY
        ):
            kwargs[positional[i].name] = extra[i]
        elif i < len(positional) or var_pos:
            args.append(extra[i])
        else:
            raise TypeError(f"{fn.__name__}() has no parameter for arg_{i}")
    return args, kwargs


def _wrap(value, fields):
    """Named output fields pass through when the spec lists them (or, without a spec, when the tool
    returns the MathQA ``{"result": ...}`` shape); anything else becomes ``output_0`` (tuples:
    ``output_i``), the convention of the v2 code rows."""
    if isinstance(value, dict) and (all(f in value for f in fields) if fields else set(value) == {"result"}):
        return value
    if isinstance(value, tuple):
        return {f"output_{i}": v for i, v in enumerate(value)}
    return {"output_0": value}


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


class _CallCpuLimit(BaseException):
    """Raised in a call that used its CPU budget (a BaseException: a tool's ``except Exception``
    does not swallow it)."""


def _over_budget(signum, frame):
    raise _CallCpuLimit


def main():
    os.closerange(3, 1 << 20)  # bwrap's --args memfd and anything else inherited
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    cfg = json.loads(sys.stdin.readline())
    sys.path[:0] = cfg["site_path"]
    apply_limits(memory_mb=cfg["memory_mb"], cpu_s=cfg["cpu_s"], fsize_mb=cfg["fsize_mb"], nproc=cfg["nproc"])
    os.chdir(cfg["tmpdir"])
    install_guard(cfg["tmpdir"], extension_roots=cfg["extension_roots"], denied_modules=cfg["denied_modules"])
    tools, load_errors = {}, []
    for mod in cfg["modules"]:
        ns = {"__name__": "callbench_tool", "__file__": mod["path"]}
        try:
            exec(compile(mod["source"], mod["path"], "exec"), ns)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            load_errors.append(f"{mod['path']}: {type(exc).__name__}: {exc}")
            continue
        for name in mod["functions"]:
            if callable(ns.get(name)):
                tools[name] = ns[name]
    proto.write(json.dumps({"ready": True, "tools": sorted(tools), "load_errors": load_errors}) + "\n")
    proto.flush()
    # Each call's limit is its CPU time (the parent's wall clock is only a backstop), so a busy
    # machine cannot turn a call into a timeout.
    call_cpu_s = cfg.get("call_cpu_s")
    if call_cpu_s:
        signal.signal(signal.SIGPROF, _over_budget)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            fn = tools.get(req["name"])
            if fn is None:
                raise LookupError(f"unknown tool '{req['name']}'")
            args, kwargs = _bind(fn, req.get("arguments") or {})
            if call_cpu_s:
                signal.setitimer(signal.ITIMER_PROF, call_cpu_s)
            try:
                value = fn(*args, **kwargs)
            finally:
                if call_cpu_s:
                    signal.setitimer(signal.ITIMER_PROF, 0)
            out = _wrap(value, req.get("fields"))
            text = json.dumps({"ok": True, "output": _jsonable(out)})
        except _CallCpuLimit:
            text = json.dumps({"ok": False, "error": f"TimeoutError: call exceeded {call_cpu_s:g}s of CPU time"})
        except MemoryError:
            text = json.dumps({"ok": False, "error": "MemoryError: memory limit exceeded"})
        except BaseException as exc:  # noqa: BLE001 - any tool failure is a call error
            text = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})
        proto.write(text + "\n")
        proto.flush()


main()
