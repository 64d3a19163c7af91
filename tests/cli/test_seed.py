"""``--seed`` on the run commands (issue 12, part 6): sent to the backend, part of the run
identity, and varied per draw for pass@k so that a re-run repeats every draw."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from callbench.cli import app

runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_a_changed_seed_is_refused_on_resume(tmp_path, data_root):
    args = ["run", "webapi", "--model", "gold", "--ids", "asana_0", "--out", tmp_path, "--run-id", "r", "--no-progress",
            "--data", data_root]
    assert _invoke(*args, "--seed", "1").exit_code == 0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["identity"]["generation"]["seed"] == 1
    res = _invoke(*args, "--seed", "2")
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "generation.seed 1 -> 2" in lines[0] and "--force" in lines[0], res.output
    assert _invoke(*args, "--seed", "1").exit_code == 0  # the same seed resumes


def test_the_default_run_directory_differs_by_seed(tmp_path):
    for seed in ("0", "3"):
        res = _invoke("run", "nested", "--model", "gold", "--limit", "1", "--seed", seed, "--out", tmp_path, "--no-progress")
        assert res.exit_code == 0, res.output
    seeds = sorted(json.loads((d / "config.json").read_text())["identity"]["generation"]["seed"] for d in tmp_path.iterdir())
    assert seeds == [0, 3]


@pytest.mark.parametrize("track", ["webapi", "nested", "stateful"])
@pytest.mark.parametrize("seed", ["-1", "2147483648"])
def test_a_seed_out_of_range_is_one_line(tmp_path, track, seed):
    res = _invoke("run", track, "--model", "gold", "--seed", seed, "--out", tmp_path, "--no-progress")
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and f"--seed {seed}: must be between 0 and 2147483647" in lines[0], res.output
    assert not list(tmp_path.iterdir())


def test_every_request_carries_the_seed(tmp_path, monkeypatch):
    pytest.importorskip("aiohttp")
    from callbench.testing.fake_openai import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as server:
        res = _invoke("run", "nested", "--model", f"openai:m@{server.url}", "--limit", "3", "--seed", "7",
                      "--out", tmp_path, "--no-progress")
        assert res.exit_code == 0, res.output
        assert len(server.requests) == 3 and {body.get("seed") for _, body in server.requests} == {7}


def test_pass_at_k_draws_use_seed_plus_draw_number(tmp_path, monkeypatch):
    """Draw i of a task is asked with seed + i: the draws differ, and a re-run asks the same."""
    pytest.importorskip("aiohttp")
    from callbench.testing.fake_openai import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    drawn = []
    for run_id in ("a", "b"):
        with FakeOpenAIServer(lambda body: {"content": "```python\nprint('done')\n```"}) as server:
            res = _invoke("run", "stateful", "--model", f"openai:m@{server.url}", "--samples", "3", "--limit", "1",
                          "--seed", "40", "--out", tmp_path, "--run-id", run_id, "--no-progress")
            assert res.exit_code == 0, res.output
            drawn.append(sorted(body["seed"] for _, body in server.requests))
    assert drawn[0] == [40, 41, 42] and drawn[1] == drawn[0]
