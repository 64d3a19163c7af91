"""run.log and plain progress lines (issue 31): a run written to a file shows its progress while it
runs; every run directory keeps a log of its sessions; --log-level sets what goes to stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from callbench.runs import run_log as rl
from callbench.runs.run_log import RunLog


def test_a_progress_line_by_hand(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(rl.time, "monotonic", lambda: clock[0])
    log = RunLog(tmp_path, "webapi", total=60, done=2, interval=10.0)
    for _ in range(10):
        log.advance()
    log.advance(error=True)
    clock[0] = 105.5  # 11 samples in 5.5 s: 2.0/s; 47 left: 23.5 s -> 0:24 (rounded)
    assert log.line() == "webapi 13/60 samples, 2.0/s, ETA 0:24, 1 errors"
    log.tick()  # 5.5 s since the start: under the interval, nothing written
    clock[0] = 111.0
    log.tick()
    log.close("finished")
    lines = (tmp_path / "run.log").read_text().splitlines()
    assert len(lines) == 2 and lines[0].endswith("webapi 13/60 samples, 1.0/s, ETA 0:47, 1 errors")
    assert lines[1].endswith("; finished after 0:11")


def test_every_run_directory_has_a_log_of_its_sessions(tmp_path, data_root):
    import callbench

    first = callbench.run("webapi", "gold", out_dir=tmp_path, limit=2)
    callbench.run("webapi", "gold", out_dir=tmp_path, limit=3)  # resumes, asks one more
    text = (first.run_dir / "run.log").read_text()
    assert text.count("session: webapi · gold") == 2
    assert "2 samples selected, 0 done before, 2 to ask" in text and "3 samples selected, 2 done before, 1 to ask" in text
    assert "(resumed)" in text and text.count("finished after") == 2


@pytest.mark.skipif(os.name != "posix", reason="the CLI is started as a process with its stderr in a file")
def test_a_run_written_to_a_file_shows_progress_while_it_runs(tmp_path):
    from callbench.testing.fake_openai import FakeOpenAIServer

    log = tmp_path / "out.log"
    env = {**os.environ, "CALLBENCH_PROGRESS_INTERVAL": "0.3"}
    with FakeOpenAIServer() as server, log.open("w") as sink:
        server.delay = 0.25  # ~12 samples one at a time: about 3 s
        proc = subprocess.Popen(
            [sys.executable, "-m", "callbench", "run", "nested", "--model", f"openai:m@{server.url}", "--limit", "12",
             "--concurrency", "1", "--out", str(tmp_path / "runs")],
            stdout=sink, stderr=sink, env=env,
        )
        seen_while_running = False
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if "samples," in log.read_text() and proc.poll() is None:
                seen_while_running = True
            time.sleep(0.1)
        proc.wait(timeout=60)
    text = log.read_text()
    assert proc.returncode == 0, text
    assert seen_while_running, text
    assert "nested " in text and "/12 samples," in text and "ETA" in text
    (run_dir,) = list(Path(tmp_path / "runs").iterdir())
    assert "finished after" in (run_dir / "run.log").read_text()


def test_log_level_is_checked(tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app

    res = CliRunner().invoke(app, ["--log-level", "chatty", "list"])
    assert res.exit_code == 2 and "choose from debug, info, warning, error" in " ".join(res.output.split())


def test_the_progress_bar_keeps_its_time_columns_on_80_columns(tmp_path, data_root):
    """Issue 31: a long model identity pushed the bar's time columns off the terminal; and a
    '[chat,heal]' in it is text, not markup."""
    import io
    import json

    from rich.console import Console

    import callbench
    from callbench.runs.runner import _bar_label

    label = _bar_label("webapi", "llamacpp:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf[chat,heal]")
    assert len(label) <= len("webapi · ") + 36 and label.endswith("…")
    long = tmp_path / ("a-rather-long-folder-name-for-predictions" * 2) / "preds.jsonl"
    long.parent.mkdir()
    long.write_text(json.dumps({"id": "asana_0", "output": "get('x');"}) + "\n")
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    callbench.run("webapi", f"replay:{long}", out_dir=tmp_path / "runs", ids=["asana_0"], progress=True, console=console)
    last = [line for line in buf.getvalue().splitlines() if "1/1" in line][-1]
    assert "0:00:0" in last, last  # the elapsed column is on the line
