"""A sample the backend cannot answer is a stored ``backend_error`` outcome, never a run abort
(issue 11): counted apart from the model's mistakes, asked again with ``--retry-errors``, and a
run whose backend mostly fails stops early with the cause."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

pytest.importorskip("aiohttp")

from callbench.cli import app  # noqa: E402
from callbench.runs.store import RunStore  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

REFUSAL = ("status", 400, "context length exceeded")


@pytest.fixture()
def server(monkeypatch):
    """Chat completions answering "[]" (a valid, empty call list) unless a test scripts a fault."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        yield fake


def _prompt(body):
    return json.dumps(body["messages"])


def _rows(out):
    store = RunStore.open(next(out.rglob("run.sqlite")).parent)
    try:
        return list(store.rows())
    finally:
        store.close()


def _summary(out):
    return json.loads(next(out.rglob("summary.json")).read_text())


def _args(url, out, *extra):
    return ["run", "nested", "--model", f"openai:m@{url}", "--model-arg", "mode=chat", "--limit", "12",
            "--concurrency", "1", "--out", str(out), "--no-progress", *extra]


def test_a_refused_sample_is_stored_counted_apart_and_retried(server, tmp_path):
    server.script = [("ok", 0), ("ok", 0), REFUSAL]  # the third request is refused
    r = CliRunner().invoke(app, _args(server.url, tmp_path))
    assert r.exit_code == 0, r.output
    assert "1 sample(s) got no usable answer" in r.output and "--retry-errors" in r.output
    summary = _summary(tmp_path)
    assert summary["n_backend_errors"] == 1 and summary["n"] == 11 and summary["n_selected"] == 12
    failed = [r for r in _rows(tmp_path) if r["status"] == "backend_error"]
    assert len(failed) == 1 and failed[0]["extra"]["backend_error"]["status"] == 400
    assert "context length exceeded" in failed[0]["error"]
    # a plain resume keeps the outcome; --retry-errors asks again, and only for that sample
    asked = len(server.requests)
    assert CliRunner().invoke(app, _args(server.url, tmp_path)).exit_code == 0 and len(server.requests) == asked
    again = CliRunner().invoke(app, _args(server.url, tmp_path, "--retry-errors"))
    assert again.exit_code == 0, again.output
    assert len(server.requests) == asked + 1
    assert _prompt(server.requests[-1][1]) == _prompt(server.requests[2][1])  # the refused sample's
    summary = _summary(tmp_path)
    assert summary["n_backend_errors"] == 0 and summary["n"] == 12 and summary["complete"]


def test_a_failing_backend_stops_the_run_with_the_cause(server, tmp_path):
    server.rules = [(lambda body: True, REFUSAL)]
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "40"))
    assert r.exit_code == 2
    error = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "--max-backend-error-rate" in error[0] and "context length exceeded" in error[0]
    assert "--retry-errors" in error[0] and len(server.requests) < 40


def test_report_says_when_a_run_is_incomplete(server, tmp_path):
    server.script = [("ok", 0), REFUSAL]
    assert CliRunner().invoke(app, _args(server.url, tmp_path)).exit_code == 0
    run_dir = next(tmp_path.rglob("run.sqlite")).parent
    r = CliRunner().invoke(app, ["report", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert "INCOMPLETE" in r.output and "1 backend error(s) not counted" in r.output
    assert CliRunner().invoke(app, _args(server.url, tmp_path, "--retry-errors")).exit_code == 0
    assert "INCOMPLETE" not in CliRunner().invoke(app, ["report", str(run_dir)]).output
    # a run that never finished (no summary.json) is incomplete too
    (run_dir / "summary.json").unlink()
    r = CliRunner().invoke(app, ["report", str(run_dir)])
    assert "INCOMPLETE" in r.output and "unfinished" in r.output


def _first_time(seen):
    """A rule predicate that is true the first time a conversation is asked, false after."""

    def first(body):
        key = _prompt(body)
        if key in seen:
            return False
        seen.add(key)
        return True

    return first


@pytest.mark.parametrize("fault", ["truncated", "html", "empty_choices", "null_content", "missing_fields"])
def test_malformed_replies_are_retried_not_scored(server, tmp_path, fault):
    server.rules = [(_first_time(set()), (fault, 0))]  # the first reply for each prompt is broken
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "4", "--model-arg", "backoff=0.01"))
    assert r.exit_code == 0, r.output
    summary = _summary(tmp_path)
    # every prompt was asked twice (the broken reply, then the good one) and nothing was scored
    # from a broken reply: the model's "[]" parses on every sample
    assert len(server.requests) == 8 and summary["n"] == 4 and summary["n_backend_errors"] == 0
    assert summary["metrics"]["parse_error_rate"] == 0.0
    assert all(row["extra"]["attempts"] == 2 for row in _rows(tmp_path))


def test_a_persistent_server_error_for_one_prompt_is_stored_after_its_retries(server, tmp_path):
    target = {}

    def the_first_prompt(body):  # every request for the first prompt asked fails
        return _prompt(body) == target.setdefault("prompt", _prompt(body))

    server.rules = [(the_first_prompt, ("status", 503, "upstream model crashed"))]
    fast = ("--model-arg", "backoff=0.01", "--model-arg", "backoff_max=0.02", "--model-arg", "max_retries=2")
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "5", *fast))
    assert r.exit_code == 0, r.output
    assert sum(_prompt(b) == target["prompt"] for _, b in server.requests) == 3  # 1 + max_retries
    assert len(server.requests) == 3 + 4
    summary = _summary(tmp_path)
    assert summary["n_backend_errors"] == 1 and summary["n"] == 4 and not summary["complete"]
    (failed,) = [row for row in _rows(tmp_path) if row["status"] == "backend_error"]
    info = failed["extra"]["backend_error"]
    assert info["status"] == 503 and info["attempts"] == 3
    assert "gave up after 3 attempt(s)" in failed["error"] and "upstream model crashed" in failed["error"]
    # still failing: --retry-errors asks again (3 more attempts) and keeps the outcome
    again = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "5", "--retry-errors", *fast))
    assert again.exit_code == 0, again.output
    assert len(server.requests) == 3 + 4 + 3 and _summary(tmp_path)["n_backend_errors"] == 1


def test_a_dropped_connection_is_retried(server, tmp_path):
    server.fail(("drop", 0), times=2)
    fast = ("--model-arg", "backoff=0.01", "--model-arg", "backoff_max=0.02")
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "2", *fast))
    assert r.exit_code == 0, r.output
    summary = _summary(tmp_path)
    assert summary["n"] == 2 and summary["n_backend_errors"] == 0 and summary["metrics"]["parse_error_rate"] == 0.0
    assert len(server.requests) == 4
    assert sorted(row["extra"]["attempts"] for row in _rows(tmp_path)) == [1, 3]


def test_a_refusal_keeps_the_servers_message(server, tmp_path):
    message = "This model's maximum context length is 8192 tokens; your prompt has 9001"
    target = {}
    server.rules = [(lambda b: _prompt(b) == target.setdefault("prompt", _prompt(b)), ("status", 400, message))]
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "3"))
    assert r.exit_code == 0, r.output
    (failed,) = [row for row in _rows(tmp_path) if row["status"] == "backend_error"]
    assert f"HTTP 400: {message}" in failed["error"] and "request refused" in failed["error"]
    assert failed["extra"]["backend_error"]["status"] == 400 and failed["extra"]["backend_error"]["attempts"] == 1
    assert message in failed["extra"]["backend_error"]["body"]
    assert len(server.requests) == 3  # a 400 is not asked again


def test_a_run_directory_is_locked_while_a_run_writes_it(tmp_path):
    """Two runs on one directory: the second is refused (one line naming the holder) until the
    first closes; the lock and the identity check are one step."""
    import os

    from callbench.errors import RunStoreError

    run_dir = tmp_path / "run"
    cfg = {"identity": {"track": "nested", "model": "a"}}
    first, resumed = RunStore.create_or_resume(run_dir, cfg)
    assert not resumed
    with pytest.raises(RunStoreError) as e:
        RunStore.create_or_resume(run_dir, {"identity": {"track": "nested", "model": "b"}})
    assert f"process {os.getpid()}" in str(e.value) and "\n" not in str(e.value)
    first.close()
    second, resumed = RunStore.create_or_resume(run_dir, cfg)
    assert resumed
    second.close()


def test_timeout_bounds_the_whole_request(server, tmp_path):
    server.script = [("trickle", 30)]  # a valid body, trickled over 30 s
    t0 = time.monotonic()
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "1", "--model-arg", "timeout=1", "--model-arg", "max_retries=0"))
    took = time.monotonic() - t0
    assert r.exit_code == 0, r.output
    summary = _summary(tmp_path)
    assert summary["n_backend_errors"] == 1 and took < 15  # the body alone takes 30 s to trickle
    (row,) = _rows(tmp_path)
    assert "no complete reply within 1 s" in row["error"]


def test_a_trickled_body_past_the_timeout_is_retried(server, tmp_path):
    server.script = [("trickle", 30)]
    fast = ("--model-arg", "backoff=0.01", "--model-arg", "backoff_max=0.02", "--model-arg", "timeout=1")
    t0 = time.monotonic()
    r = CliRunner().invoke(app, _args(server.url, tmp_path, "--limit", "2", *fast))
    assert r.exit_code == 0, r.output
    assert time.monotonic() - t0 < 15
    summary = _summary(tmp_path)
    assert summary["n"] == 2 and summary["n_backend_errors"] == 0 and len(server.requests) == 3
    assert sorted(row["extra"]["attempts"] for row in _rows(tmp_path)) == [1, 2]


def test_retry_after_is_honoured_beyond_the_backoff_cap(server, tmp_path):
    server.script = [("retry_after", 1.5)]
    args = _args(server.url, tmp_path, "--limit", "1", "--model-arg", "backoff=0.01", "--model-arg", "backoff_max=0.05")
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    times = server.request_times
    assert len(times) == 2 and times[1] - times[0] >= 1.4


def test_answers_never_pile_up_unstored(tmp_path):
    """Every answer is persisted before its concurrency slot frees (issue 11: a stateful kill
    lost up to 97 answered generations): at any moment at most ``concurrency`` samples are
    answered but neither persisted nor stored, however slow scoring is."""
    import asyncio

    from callbench.models.base import ModelBackend, ModelOutput
    from callbench.runs.runner import RunOptions, run
    from callbench.runs.store import RunStore
    from callbench.tracks.base import Sample, SampleResult, Track

    state = {"answered": 0, "stored": 0, "peak": 0}
    write = RunStore.write

    def persisted(self, generations, rows):
        write(self, generations, rows)
        state["stored"] += len(generations)  # an answer counts once it is on disk


    class Fast(ModelBackend):
        name = "fast"
        modes = ("completion",)

        @property
        def identity(self):
            return "fast"

        async def generate(self, inp, config):
            state["answered"] += 1
            state["peak"] = max(state["peak"], state["answered"] - state["stored"])
            await asyncio.sleep(0)
            return ModelOutput(text="x", mode="completion")

    class SlowScoring(Track):
        name = "slowscoring"
        evaluate_in_thread = True

        def load_samples(self):
            return [Sample(id=f"s{i}", group="g", payload=None) for i in range(40)]

        def fingerprint(self):
            return {}

        def build_input(self, sample):
            from callbench.models.base import ModelInput

            return ModelInput(sample_id=sample.id, prompt="p", messages=[{"role": "user", "content": "p"}])

        def evaluate(self, sample, output):
            time.sleep(0.02)
            return SampleResult(status="ok")

        @classmethod
        def aggregate(cls, samples, results, scoring):
            return {"metrics": {"n": len(results)}}

    import pytest as _pytest

    with _pytest.MonkeyPatch.context() as mp:
        mp.setattr(RunStore, "write", persisted)
        out = run(SlowScoring(), Fast("completion"), RunOptions(out_dir=tmp_path, concurrency=4, progress=False))
    assert state["answered"] == 40 and state["stored"] == 40 and state["peak"] <= 4 + 1, state
    assert out.summary["n"] == 40


def test_max_backend_error_rate_is_a_share(tmp_path):
    r = CliRunner().invoke(app, ["run", "nested", "--model", "gold", "--max-backend-error-rate", "1.5", "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 2 and "--max-backend-error-rate 1.5" in r.output and not list(tmp_path.iterdir())
