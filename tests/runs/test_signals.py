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

from callbench.models.testing import FakeOpenAIServer  # noqa: E402


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
