"""``kill -9`` in the middle of a run against an OpenAI-compatible server, then the same command
again, for every track: each selected sample ends with exactly one stored row, the rows stored
before the kill are left as they were, answers received but not yet scored are scored without
asking again, and only the samples that were in flight at the kill (at most ``--concurrency`` of
them) are asked again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

CONCURRENCY = 4
# The console entry point, as an installed ``callbench`` runs it (``python -m callbench.cli`` and
# ``python -m callbench`` work as well).
CLI = [sys.executable, "-c", "import sys; from callbench.cli import main; sys.argv[0] = 'callbench'; main()"]

ANSWERS = {
    "webapi": "```javascript\naxios.get('https://app.asana.com/api/1.0/tasks', {headers: {Authorization: 'Bearer token'}});\n```",
    "nested": "[]",
    "stateful": "```python\nprint('done')\n```",
}
# (selection, rows stored before the kill)
SETUP = {"webapi": (["--limit", "40"], 8), "nested": (["--limit", "40"], 8), "stateful": (["--limit", "12"], 2)}


def _rows(db: Path) -> dict[str, tuple]:
    """Every stored row by sample id (all columns), or {} before the table exists."""
    if not db.exists():
        return {}
    con = sqlite3.connect(db)
    try:
        return {row[0]: row for row in con.execute("SELECT * FROM samples")}
    except sqlite3.Error:
        return {}
    finally:
        con.close()


def _key(messages) -> str:
    return json.dumps(messages, sort_keys=True)


@pytest.mark.parametrize("track", ["webapi", "nested", "stateful"])
def test_kill_9_then_the_same_command_finishes_the_run(track, tmp_path, request):
    if track == "webapi":
        request.getfixturevalue("data_root")  # skips, with the reason, without WAPIIBench
    selection, kill_at = SETUP[track]
    limit = int(selection[1])
    out = tmp_path / "runs"
    db = out / "r" / "run.sqlite"
    with FakeOpenAIServer(lambda body: {"content": ANSWERS[track]}) as server:
        server.delay = 0.15
        cmd = [*CLI, "run", track, "--model", f"openai:m@{server.url}", "--concurrency", str(CONCURRENCY),
               "--out", str(out), "--run-id", "r", "--no-progress", *selection]
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 60
            while len(_rows(db)) < kill_at and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            assert proc.poll() is None, f"the run ended before the kill: {proc.communicate()[1][-2000:]}"
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        before = _rows(db)
        con = sqlite3.connect(db)
        unscored = {row[0] for row in con.execute("SELECT id FROM generations")}
        con.close()
        asked_before = [_key(body["messages"]) for _, body in server.requests]
        assert kill_at <= len(before) < limit, f"killed at {len(before)} rows"
        assert not (out / "r" / "summary.json").exists()

        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        asked_after = [_key(body["messages"]) for _, body in server.requests[len(asked_before):]]

    after = _rows(db)
    assert len(after) == limit  # one row per selected sample (the id is the table's primary key)
    assert {i: after[i] for i in before} == before  # the rows stored before the kill are untouched
    summary = json.loads((out / "r" / "summary.json").read_text())
    assert summary["n_selected"] == limit and summary["complete"] and summary["n_backend_errors"] == 0

    con = sqlite3.connect(db)
    stored_keys = {i: _key(json.loads(m)) for i, m in con.execute("SELECT id, messages FROM samples")}
    con.close()
    assert set(stored_keys.values()) == set(asked_before) | set(asked_after)  # rows map to requests
    assert len(set(stored_keys.values())) == limit  # one conversation per sample: requests name samples
    # the second run asks each remaining sample once, never a stored or answered one, and asks
    # again only the samples that were in flight at the kill
    assert not unscored & set(before)  # an answer is either pending scoring or stored, never both
    assert all(n == 1 for n in Counter(asked_after).values())
    assert len(asked_after) == limit - len(before) - len(unscored)
    kept = {stored_keys[i] for i in before} | {stored_keys[i] for i in unscored}
    assert not kept & set(asked_after)
    asked_twice = set(asked_before) & set(asked_after)
    assert len(asked_twice) <= CONCURRENCY, f"{len(asked_twice)} samples asked twice"
    assert set(asked_before) - set(asked_after) == kept
