"""The Ray executor on a Ray cluster these tests start themselves (loopback only, 2 CPUs: two worker
processes): a grid over all three tracks with gold, replay and the fake OpenAI-compatible server
gives exactly the local executor's results and manifest; a worker killed mid-cell (SIGKILL) is
retried by Ray and the cell resumes its run directory, losing and re-scoring nothing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor's tests need ray (pip install 'callbench[ray]')")

from callbench.api import make_track  # noqa: E402
from callbench.sweep.grid import Cell, load_grid  # noqa: E402
from callbench.sweep.local import CellResult, run_cell, run_local  # noqa: E402
from callbench.sweep.ray_executor import (  # noqa: E402
    LOCAL_MODEL_RESOURCE,
    cell_resources,
    local_cluster,
    run_ray,
    unplaceable,
)
from callbench.testing.fake_openai import FakeOpenAIServer, reply_key  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster for the module (starting one takes seconds): 2 CPUs, loopback."""
    with local_cluster(num_cpus=2) as connected:
        yield connected


def _first(track: str, n: int) -> list[Any]:
    tr = make_track(track)
    try:
        return [(s, tr.build_input(s)) for s in tr.load_samples()[:n]]
    finally:
        getattr(tr, "close", lambda: None)()


@pytest.fixture(scope="module")
def fake_server(data_root):
    """The fake server answers the first webapi and nested tasks with their gold answers (asked as
    a completion or as a chat) and echoes anything else (a wrong answer, the same every time)."""
    os.environ["CALLBENCH_DATA_DIR"] = str(data_root)
    with FakeOpenAIServer() as srv:
        for track in ("webapi", "nested"):
            for _, inp in _first(track, 2):
                if inp.prompt:
                    srv.replies[reply_key({"prompt": inp.prompt})] = inp.reference
                if inp.messages:
                    srv.replies[reply_key({"messages": inp.messages})] = inp.reference
        yield srv


def _replay_file(path: Path) -> Path:
    """Predictions for the first two samples of each track: the gold answer for the first, a
    wrong one for the second."""
    rows = []
    for track in ("webapi", "nested", "stateful"):
        (s1, i1), (s2, _) = _first(track, 2)
        rows.append({"id": s1.id, "output": i1.reference})
        rows.append({"id": s2.id, "output": "nothing useful"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _untimed(value: Any) -> Any:
    """``value`` without its timings (keys ending in ``_s``: seconds, which differ run to run)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _results(out: Path, cell: Cell) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cell's summary metrics and its per-sample (status, verdicts, error), timings left out."""
    run_dir = out / "runs" / cell.name
    summary = json.loads((run_dir / "summary.json").read_text())
    con = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT id, status, verdicts, error FROM samples ORDER BY id").fetchall()
        (dups,) = con.execute("SELECT count(*) FROM (SELECT id FROM samples GROUP BY id HAVING count(*) > 1)").fetchone()
    finally:
        con.close()
    assert dups == 0
    return _untimed(summary["metrics"]), {r[0]: (r[1], _untimed(json.loads(r[2] or "null")), r[3]) for r in rows}


def _manifest(out: Path) -> dict[str, Any]:
    manifest = json.loads((out / "sweep.json").read_text())
    manifest.pop("written_at")
    return manifest


def test_the_local_cluster_listens_on_loopback_only(cluster):
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert [n["NodeManagerAddress"] for n in nodes] == ["127.0.0.1"]
    assert ray.cluster_resources()["CPU"] == 2 and ray.cluster_resources()[LOCAL_MODEL_RESOURCE] == 1


def test_a_ray_sweep_gives_exactly_the_local_executors_results(cluster, fake_server, tmp_path):
    replay = _replay_file(tmp_path / "preds.jsonl")
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(
        f'models: [gold, "replay:{replay}", "openai:m@{fake_server.url}"]\n'
        "tracks:\n  webapi: {limit: 2}\n  nested: {limit: 2}\n  stateful: {limit: 1}\n",
        encoding="utf-8",
    )
    grid = load_grid(grid_file)
    assert len(grid.cells) == 9 and {c.track for c in grid.cells} == {"webapi", "nested", "stateful"}
    local = run_local(grid, tmp_path / "local", workers=2)
    events: list[tuple[str, str]] = []
    remote = run_ray(grid, tmp_path / "ray", report=lambda e, c, d: events.append((e, c.name)))
    assert [r.ok for r in local.results] == [True] * 9, [r.error for r in local.results]
    assert sorted((r.name, r.ok, r.generated) for r in remote.results) == sorted((r.name, r.ok, r.generated) for r in local.results)
    assert sorted(events) == sorted((e, c.name) for c in grid.cells for e in ("start", "finish"))
    assert {n: s.text() for n, s in remote.states.items()} == {n: s.text() for n, s in local.states.items()}
    headline = {"webapi": "correct_implementations_t", "nested": "win_rate", "stateful": "pass@1"}
    for cell in grid.cells:
        metrics, verdicts = _results(tmp_path / "ray", cell)
        assert (metrics, verdicts) == _results(tmp_path / "local", cell), cell.name
        assert len(verdicts) == cell.settings["limit"]
        if cell.model == "gold":  # the comparison compares real results: gold's are right
            assert metrics[headline[cell.track]] == 1.0, cell.name
    # the replay and fake-server cells are mixed, right and wrong: not all alike
    fake_webapi = [c for c in grid.cells if c.model.startswith("openai:") and c.track == "webapi"]
    assert any(_results(tmp_path / "ray", c)[0]["correct_implementations_t"] > 0 for c in fake_webapi)
    assert _manifest(tmp_path / "ray") == {**_manifest(tmp_path / "local")}
    # the run directories resume as usual: a second Ray sweep skips every cell
    again = run_ray(grid, tmp_path / "ray")
    assert again.results == [] and again.skipped == [c.name for c in grid.cells]


def _reporting_runner(pid_dir: str):
    """A cell runner that records its worker's pid (a nested function: Ray pickles it by value)."""

    def runner(out: str, cell: dict[str, Any]) -> CellResult:
        Path(pid_dir, f"{cell['name']}.{os.getpid()}").touch()
        return run_cell(out, cell)

    return runner


def _stored(run_db: Path) -> dict[str, float]:
    try:
        con = sqlite3.connect(f"file:{run_db}?mode=ro", uri=True, timeout=5)
        try:
            return dict(con.execute("SELECT id, finished_at FROM samples").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def test_a_killed_worker_loses_nothing_and_scores_nothing_twice(cluster, fake_server, tmp_path):
    """SIGKILL the worker running a cell once it has stored some samples: Ray runs the task again,
    the cell resumes its run directory, and every sample is stored exactly once, the ones stored
    before the kill untouched (not scored again); the results equal the local executor's."""
    grid_file = tmp_path / "grid.yaml"
    n = 30
    grid_file.write_text(
        f'models: ["openai:m@{fake_server.url}"]\n'
        f"tracks:\n  webapi: {{limit: {n}, concurrency: 1, model_options: {{mode: completion}}}}\n  nested: {{limit: 3}}\n",
        encoding="utf-8",
    )
    grid = load_grid(grid_file)
    victim = next(c for c in grid.cells if c.track == "webapi")
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    run_db = tmp_path / "ray" / "runs" / victim.name / "run.sqlite"
    before_kill: dict[str, float] = {}
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pids = [int(p.suffix[1:]) for p in pid_dir.glob(f"{victim.name}.*")]
            stored = _stored(run_db) if pids else {}
            if len(stored) >= 3:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                before_kill.update(stored)
                return
            time.sleep(0.02)

    fake_server.delay = 0.1  # each answer takes 0.1 s: the cell runs for seconds
    asked_before = len(fake_server.requests)
    thread = threading.Thread(target=killer)
    thread.start()
    try:
        outcome = run_ray(grid, tmp_path / "ray", runner=_reporting_runner(str(pid_dir)))
    finally:
        thread.join()
        fake_server.delay = 0.0
    asked = len(fake_server.requests) - asked_before
    assert killed, "the cell finished before the test could kill its worker"
    assert 3 <= len(before_kill) < n
    assert [r.ok for r in outcome.results] == [True, True], [r.error for r in outcome.results]
    attempts = sorted(int(p.suffix[1:]) for p in pid_dir.glob(f"{victim.name}.*"))
    assert len(attempts) == 2 and killed[0] in attempts  # Ray ran the cell again, in another process
    assert "resuming" in (tmp_path / "ray" / "logs" / f"{victim.name}.log").read_text()
    after = _stored(run_db)
    assert sorted(after) == sorted(s.id for s, _ in _first("webapi", n))  # nothing lost
    assert {k: after[k] for k in before_kill} == before_kill  # nothing stored before was scored again
    # an answer in flight when the worker died is asked again, no more (1 in flight at concurrency 1)
    nested_asked = 3
    assert n + nested_asked <= asked <= n + nested_asked + 1
    # the outcome of the resumed cell is the local executor's
    run_local(grid, tmp_path / "local", workers=1)
    for cell in grid.cells:
        assert _results(tmp_path / "ray", cell) == _results(tmp_path / "local", cell), cell.name
    assert _manifest(tmp_path / "ray") == _manifest(tmp_path / "local")


def test_cell_resources_and_cells_no_node_can_run():
    """A llamacpp cell needs a GPU or the local-model resource; a cluster with neither would leave
    the task pending forever, so the cell fails at once with one line."""
    cell = Cell("nested", "llamacpp:default", {"limit": 1}, "nested-llamacpp-x")
    assert cell_resources(cell, {"CPU": 2, "GPU": 1}) == {"num_cpus": 1, "num_gpus": 1}
    assert cell_resources(cell, {"CPU": 2}) == {"num_cpus": 1, "resources": {LOCAL_MODEL_RESOURCE: 1}}
    url = "http://10.0.0.5:8000/v1"
    served = Cell("nested", f"openai:m@{url}", {}, "n-o")
    assert cell_resources(served, {"CPU": 2}) == {"num_cpus": 1}
    # as many units as the requests the cell keeps in flight (its concurrency, 8 by default), at
    # most what the cluster has
    assert cell_resources(served, {"CPU": 2, f"model_server:{url}": 4}) == {"num_cpus": 1, "resources": {f"model_server:{url}": 4}}
    few = Cell("nested", f"openai:m@{url}", {"concurrency": 2}, "n-f")
    assert cell_resources(few, {"CPU": 2, f"model_server:{url}": 32}) == {"num_cpus": 1, "resources": {f"model_server:{url}": 2}}
    why = unplaceable({"num_cpus": 1, "resources": {LOCAL_MODEL_RESOURCE: 1}}, [{"CPU": 4.0}])
    assert why is not None and "missing: callbench_local_model" in why and "\n" not in why
    assert unplaceable({"num_cpus": 1, "num_gpus": 1}, [{"CPU": 4.0}, {"CPU": 1.0, "GPU": 1.0}]) is None
    assert "missing: CPU" in (unplaceable({"num_cpus": 3}, [{"CPU": 2.0}]) or "")


def test_the_cli_runs_a_sweep_on_ray(cluster, tmp_path):
    """``callbench sweep --executor ray``: in a process already connected to Ray the cells run on
    that cluster; the summary line and manifest are the local executor's."""
    from typer.testing import CliRunner

    from callbench.cli import app

    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text("models: [gold]\ntracks:\n  nested: {limit: [1, 2]}\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["sweep", str(grid_file), "--out", str(tmp_path / "s"), "--executor", "ray"])
    assert res.exit_code == 0, res.output
    assert "2 cells: 0 already done, 2 run, 0 failed" in res.output
    bad = CliRunner().invoke(app, ["sweep", str(grid_file), "--out", str(tmp_path / "t"), "--address", "127.0.0.1:1"])
    assert bad.exit_code == 2 and "--address 127.0.0.1:1: only with --executor ray" in bad.output


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    import builtins

    from callbench.errors import ConfigError
    from callbench.sweep.ray_executor import import_ray

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ConfigError, match=r"^--executor ray needs Ray, which is not installed: pip install 'callbench\[ray\]'$"):
        import_ray()


def test_without_an_address_a_local_cluster_is_started_on_loopback_and_stopped(tmp_path, data_root):
    """In a process not connected to Ray, ``run_ray`` starts a cluster on this machine (loopback,
    with --workers CPUs) for the sweep and stops it after (a fresh process: this module's cluster
    would otherwise be used)."""
    import subprocess
    import sys

    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text("models: [gold]\ntracks:\n  nested: {limit: [1, 2]}\n", encoding="utf-8")
    script = (
        "import json, sys, ray\n"
        "from pathlib import Path\n"
        "from callbench.sweep.grid import load_grid\n"
        "from callbench.sweep.ray_executor import run_ray\n"
        "seen = []\n"
        "def report(event, cell, detail):\n"
        "    if event == 'start':\n"
        "        seen.append([[n['NodeManagerAddress'] for n in ray.nodes()], ray.cluster_resources().get('CPU')])\n"
        "out = run_ray(load_grid(Path(sys.argv[1])), Path(sys.argv[2]), workers=1, report=report)\n"
        "print(json.dumps({'ok': [r.ok for r in out.results], 'seen': seen, 'connected_after': ray.is_initialized()}))\n"
    )
    env = {**os.environ, "CALLBENCH_DATA_DIR": str(data_root)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(grid_file), str(tmp_path / "s")], capture_output=True, text=True, env=env, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"ok": [True, True], "seen": [[["127.0.0.1"], 1.0]] * 2, "connected_after": False}
    assert [c["state"] for c in json.loads((tmp_path / "s" / "sweep.json").read_text())["cells"]] == ["done", "done"]
