"""The web-API sandbox's time limit is the sample's CPU time, not the machine's wall clock
(issue 28): a sample stopped by the wall clock before it used its CPU budget ran on a busy machine
and runs again with more wall time; a sample that really loops is still a timeout."""

from __future__ import annotations

import os
import signal
import threading
import time

from callbench.sandbox import JsSandbox, _engine

# about 0.1-0.3 s of CPU in V8, then the request
SPIN_THEN_CALL = "let x = 0; for (let i = 0; i < 1e8; i++) { x += i; }\naxios.get('https://a/after?x=' + (x > 0));"


def _freeze(pid: int, after_s: float, for_s: float) -> threading.Thread:
    """Stop process ``pid`` (SIGSTOP) ``after_s`` from now for ``for_s``: what a busy machine does
    to a worker, in the extreme: it gets no CPU at all for a while."""

    def run() -> None:
        time.sleep(after_s)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(for_s)
        os.kill(pid, signal.SIGCONT)

    t = threading.Thread(target=run)
    t.start()
    return t


def test_a_sample_frozen_past_its_limit_still_gets_its_verdict():
    with JsSandbox(timeout_s=0.5) as s:
        assert s.run("axios.get('https://a/warm')").status == "ok"
        pid = s._proc.pid
        freezer = _freeze(pid, 0.02, 1.5)  # three times the limit without any CPU
        r = s.run(SPIN_THEN_CALL)
        freezer.join()
        assert r.status == "ok", (r.status, r.error)
        assert r.request["url"].startswith("https://a/after")
        assert s.worker_starts == 1  # the worker was not killed for it


def test_a_real_loop_is_a_cpu_timeout():
    with JsSandbox(timeout_s=0.3) as s:
        r = s.run("while (true) {}", extract=False)
        assert r.status == "timeout"
        assert r.error == "execution exceeded the 0.3 s CPU time limit"


def test_no_cpu_in_every_attempt_is_an_infrastructure_timeout(monkeypatch):
    # the worker's CPU clock stands still, as if the machine never ran it: every attempt ends by
    # the wall clock with nothing used, and the verdict says it is not the sample's
    monkeypatch.setattr(_engine.time, "process_time", lambda: 0.0)
    engine = _engine.V8Engine()
    out = engine.run("while (true) {}", None, [], 0.05)
    assert out["status"] == "timeout" and out.get("infra") is True
    assert out["error"].startswith("infrastructure timeout, not the sample's: 0.8 s of wall time passed")


def test_a_worker_slow_to_start_is_started_again(monkeypatch):
    # the first worker gets no CPU at all (stopped) past the start-up limit, as on a machine too
    # busy to build its V8 context in time: the sandbox starts another instead of failing the run
    from callbench.sandbox import js

    real_popen = js.subprocess.Popen
    stopped = []

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        if not stopped:
            os.kill(proc.pid, signal.SIGSTOP)
            stopped.append(proc)
        return proc

    monkeypatch.setattr(js.subprocess, "Popen", popen)
    with JsSandbox(timeout_s=1.0, startup_timeout_s=2.0) as s:
        assert s.run("axios.get('https://a/b')").status == "ok"
        assert s.worker_starts == 2
    assert stopped[0].poll() is not None  # the stopped worker was killed, not left behind
