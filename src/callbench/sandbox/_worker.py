"""Sandbox worker process: hosts the V8 engine, one JSON line in, one JSON line out.

Started by `JsSandbox` as ``python -m callbench.sandbox._worker``.  First input line
is the engine configuration; the worker answers ``{"ready": ...}`` and then one
result line per request line.  fd 1 is redirected to stderr so that nothing but
protocol lines can reach the parent on the protocol pipe.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> int:
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer

    from callbench.sandbox._engine import V8Engine  # after the fd shuffle

    config = json.loads(inp.readline() or b"{}")
    engine = V8Engine(
        memory_mb=int(config.get("memory_mb", 64)),
        max_console=int(config.get("max_console", 200)),
        recycle_every=int(config.get("recycle_every", 5000)),
    )

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n")

    version = engine.v8_version()
    send({"ready": True, "v8": version, "fast": engine.fast, "lockdown": engine.lockdown_info})
    for line in inp:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "stats":
            send({"builds": engine.builds, "fast": engine.fast})
            continue
        try:
            out = engine.run(
                req["code"],
                req.get("defs"),
                req.get("skip") or [],
                float(req["timeout"]),
                bool(req.get("fresh")),
                req.get("mark"),
            )
        except Exception as e:  # noqa: BLE001 - report, rebuild, keep serving
            traceback.print_exc()
            engine.close()
            out = {"status": "runtime_error", "requests": [], "console": [], "error": f"sandbox error: {e}"}
        send(out)
        if out.get("fatal"):
            # V8 is stuck in a loop we cannot interrupt; leaving is the only way
            # out.  The parent starts a new worker for the next sample.
            os._exit(0)
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
