"""A run killed mid-way and re-run with the same command loses and duplicates nothing."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = r"""
import asyncio, sys
from callbench.models.registry import register_model
from callbench.models.gold import GoldModel

class SlowGold(GoldModel):
    name = "slowgold"
    max_concurrency = 4
    async def generate(self, inp, config):
        await asyncio.sleep(float(sys.argv[2]))
        return await super().generate(inp, config)

register_model("slowgold")(lambda target, options: SlowGold())
from callbench.api import run
out = run("webapi", "slowgold", out_dir=sys.argv[1], run_id="r", limit=40, concurrency=4)
print("GENERATED", out.generated + out.reused)  # asked now, or answered before the kill
"""


def _rows(db: Path) -> list[str]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT id FROM samples")]
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def test_kill_and_resume(tmp_path, data_root):
    env = {**os.environ, "CALLBENCH_DATA_DIR": str(data_root)}
    db = tmp_path / "r" / "run.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path), "0.15"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while len(_rows(db)) < 8 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _rows(db)
    assert 8 <= len(before) < 40, f"kill happened at {len(before)} rows"
    assert not (tmp_path / "r" / "summary.json").exists()

    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), "0"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"GENERATED {40 - len(before)}" in out.stdout
    after = _rows(db)
    assert len(after) == len(set(after)) == 40
    assert set(before) <= set(after)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["n"] == 40 and summary["complete"] is True
    assert summary["metrics"]["correct_implementations_t"] == 1.0


def test_different_settings_refuse_same_run_dir(tmp_path, data_root):
    from callbench.api import run
    from callbench.errors import ConfigError

    run("webapi", "gold", out_dir=tmp_path, run_id="x", limit=2)
    with pytest.raises(ConfigError, match="different run"):
        run("webapi", "gold", out_dir=tmp_path, run_id="x", limit=2, setup="args")
