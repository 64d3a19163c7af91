"""SIGTERM stops a run like Ctrl-C (issue 11): a message with the resume hint, finished samples
kept, and the same command resumes without redoing them."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402


@pytest.fixture()
def slow_server():
    """Chat completions that take 0.3 s each and answer with an empty call list."""
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        fake.delay = 0.3
        yield fake.url, fake


def _rows(out: Path) -> int:
    dbs = list(out.rglob("run.sqlite"))
    if not dbs:
        return 0
    con = sqlite3.connect(dbs[0])
    try:
        return con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def test_sigterm_stops_like_ctrl_c_and_the_run_resumes(slow_server, tmp_path):
    url, seen = slow_server
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "callbench.cli", "run", "nested", "--model", f"openai:m@{url}",
           "--model-arg", "mode=chat", "--limit", "40", "--concurrency", "1", "--out", str(out), "--no-progress"]
    env = {**os.environ, "OPENAI_API_KEY": "x"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while _rows(out) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # generous: CI machines can be loaded
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "run the same command to resume" in err and "Traceback" not in err
    kept = _rows(out)
    assert 2 <= kept < 40
    before = len(seen.requests)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _rows(out) == 40 and len(seen.requests) - before <= 40 - kept + 1  # finished samples are not asked again


# -- issue 28: every stop signal works, however the process was started ----------------------------

# What a batch script does: start the run in the background and wait for it. A non-interactive sh
# starts an asynchronous command with SIGINT (and SIGQUIT) ignored, so a handler that re-raises
# SIGTERM as SIGINT would be a no-op there.
BACKGROUND = 'cd "$1" || exit 1; shift; "$@" >run.log 2>&1 & echo $! >run.pid; wait $!'
# Seconds from the signal to the process's exit. The requirement is 2 s; the answer the run waits
# for takes 60 s, so anything that waits for it (or ignores the signal) is far above this bound,
# while a loaded machine still has room to tear down the interpreter.
STOP_WITHIN = 2.0
SLOW_ANSWER = 60.0


def _sig_ignored(pid: int, signum: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    raise AssertionError(f"no SigIgn line for process {pid}")


def _cmd(url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "callbench.cli", "run", "nested", "--model", f"openai:m@{url}",
            "--model-arg", "mode=chat", "--limit", "40", "--concurrency", "4", "--out", str(out),
            "--run-id", "r", "--no-progress", *extra]


def _wait_rows(out: Path, n: int, alive) -> None:
    deadline = time.monotonic() + 120  # process start and the first answers: not what is measured
    while _rows(out) < n and time.monotonic() < deadline and alive():
        time.sleep(0.05)


def test_sigterm_stops_a_run_started_in_the_background_by_a_script(tmp_path):
    """``sh -c 'callbench run ... &'``: SIGTERM stops the run promptly even though requests are in
    flight that would take a minute, says how to resume, and the same command then finishes it."""
    out = tmp_path / "runs"
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        # the first 8 requests answer at once; every later one would take a minute
        fake.script = [("ok", 0)] * 8 + [("sleep", SLOW_ANSWER)] * 40
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        shell = subprocess.Popen(["sh", "-c", BACKGROUND, "sh", str(tmp_path), *_cmd(fake.url, out)], env=env)
        try:
            pid_file = tmp_path / "run.pid"
            _wait_rows(out, 8, lambda: shell.poll() is None)
            assert shell.poll() is None, (tmp_path / "run.log").read_text()
            pid = int(pid_file.read_text())
            assert _sig_ignored(pid, signal.SIGINT), "the test must start the run with SIGINT ignored"
            time.sleep(0.5)  # the slow requests are in flight
            start = time.monotonic()
            os.kill(pid, signal.SIGTERM)
            shell.wait(timeout=120)
            took = time.monotonic() - start
        finally:
            if shell.poll() is None:
                shell.kill()
        log = (tmp_path / "run.log").read_text()
        assert shell.returncode == 143, log
        assert took < STOP_WITHIN, f"stopping took {took:.2f} s"
        assert "terminated (SIGTERM)" in log and "run the same command to resume" in log and "Traceback" not in log
        kept = _rows(out)
        assert kept == 8
        fake.script = []  # answer at once from now on
        fake.delay = 0.0
        before = len(fake.requests)
        done = subprocess.run(_cmd(fake.url, out), capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert _rows(out) == 40 and len(fake.requests) - before == 40 - kept  # the 8 are not asked again


@pytest.mark.parametrize(("signum", "rc", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGHUP, 129, "terminated (SIGHUP)")])
def test_sigint_and_sighup_stop_the_run_too(signum, rc, said, tmp_path):
    out = tmp_path / "runs"
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        fake.script = [("ok", 0)] * 4 + [("sleep", SLOW_ANSWER)] * 40
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        proc = subprocess.Popen(_cmd(fake.url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            _wait_rows(out, 4, lambda: proc.poll() is None)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
            start = time.monotonic()
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=120)
            took = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == rc, err
    assert took < STOP_WITHIN, f"stopping took {took:.2f} s"
    assert said in err and "run the same command to resume" in err and "Traceback" not in err


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_a_stateful_run_while_its_programs_run(tmp_path):
    """Issue 28: SIGTERM took up to 12 s on stateful runs (the run waited for the sandboxes in
    flight). Programs that would run 40 s are abandoned: the run stops promptly, their answers
    stay stored unscored for the resume, and no sandbox process outlives the run."""
    out = tmp_path / "runs"
    db = out / "r" / "run.sqlite"
    answer = "```python\nimport time\ntime.sleep(40)\nprint('done')\n```"

    def unscored() -> int:
        if not db.exists():
            return 0
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
        except sqlite3.Error:
            return 0
        finally:
            con.close()

    with FakeOpenAIServer(lambda body: {"content": answer}) as fake:
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        cmd = [sys.executable, "-m", "callbench.cli", "run", "stateful", "--model", f"openai:m@{fake.url}",
               "--limit", "6", "--concurrency", "4", "--out", str(out), "--run-id", "r", "--no-progress"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 120
            while unscored() < 4 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert proc.poll() is None, proc.communicate()
            while time.monotonic() < deadline and not any("bwrap" in _cmdline(p) for p in _descendants(proc.pid)):
                time.sleep(0.1)  # until the programs run
            below = _descendants(proc.pid)
            assert any("bwrap" in _cmdline(p) for p in below), "no sandbox was running"
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
            took = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, err
    assert took < STOP_WITHIN, f"stopping took {took:.2f} s"
    assert "terminated (SIGTERM)" in err and "Traceback" not in err
    assert unscored() >= 4  # scored by the next resume, not asked again
    time.sleep(1)  # bwrap's --die-with-parent: the kernel signals them as the run exits
    assert [p for p in below if _alive(p)] == []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def test_a_signal_the_run_was_started_ignoring_stays_ignored(tmp_path):
    """``nohup callbench run ...`` starts the run with SIGHUP ignored: a hang-up must not stop it
    (SIGTERM still does). The SIGHUP is sent first; had it stopped the run, the status would be 129."""
    out = tmp_path / "runs"
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        fake.script = [("ok", 0)] * 4 + [("sleep", SLOW_ANSWER)] * 40
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        proc = subprocess.Popen(["nohup", *_cmd(fake.url, out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=tmp_path)
        try:
            _wait_rows(out, 4, lambda: proc.poll() is None)
            assert proc.poll() is None, proc.communicate()
            assert _sig_ignored(proc.pid, signal.SIGHUP)
            proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "SIGHUP" not in err


def test_sigterm_stops_a_run_waiting_out_a_long_retry_after(tmp_path):
    """Issue 28: a run waiting out a server's Retry-After (here 300 s) was still alive 10 minutes
    after `kill PID`. The wait is cancelled with the rest of the run."""
    out = tmp_path / "runs"
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        fake.script = [("ok", 0)] * 4 + [("retry_after", 300)] * 40
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        shell = subprocess.Popen(["sh", "-c", BACKGROUND, "sh", str(tmp_path), *_cmd(fake.url, out)], env=env)
        try:
            _wait_rows(out, 4, lambda: shell.poll() is None)
            deadline = time.monotonic() + 120
            while len(fake.requests) < 8 and time.monotonic() < deadline:  # 4 answered, 4 told to wait
                time.sleep(0.05)
            assert shell.poll() is None and len(fake.requests) >= 8, (tmp_path / "run.log").read_text()
            time.sleep(0.5)
            start = time.monotonic()
            os.kill(int((tmp_path / "run.pid").read_text()), signal.SIGTERM)
            shell.wait(timeout=120)
            took = time.monotonic() - start
        finally:
            if shell.poll() is None:
                shell.kill()
    log = (tmp_path / "run.log").read_text()
    assert shell.returncode == 143, log
    assert took < STOP_WITHIN, f"stopping took {took:.2f} s"
    assert "terminated (SIGTERM)" in log and "run the same command to resume" in log
