"""The harness at scale (issue 11, part 6 and the rest of part 1): backend errors counted on
request, evaluation in worker processes, one-line aborts naming the sample, scheme-less URLs,
the parsed-spec cache."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from typer.testing import CliRunner

pytest.importorskip("aiohttp")

from callbench.cli import app  # noqa: E402
from callbench.errors import ConfigError  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

REFUSAL = ("status", 400, "context length exceeded")


def _args(url, out, *extra):
    return ["run", "nested", "--model", f"openai:m@{url}", "--model-arg", "mode=chat", "--limit", "6",
            "--concurrency", "1", "--out", str(out), "--no-progress", *extra]


def _summary(out):
    return json.loads(next(out.rglob("summary.json")).read_text())


def test_count_backend_errors_scores_them_as_failed_samples(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as server:
        server.script = [("ok", 0), REFUSAL]
        r = CliRunner().invoke(app, _args(server.url, tmp_path))
        assert r.exit_code == 0, r.output
        apart = _summary(tmp_path)
        assert apart["n"] == 5 and apart["n_backend_errors"] == 1 and apart["backend_errors_counted"] is False
        # the same run, summarised with the failed sample scored as an empty answer
        r = CliRunner().invoke(app, _args(server.url, tmp_path, "--count-backend-errors"))
        assert r.exit_code == 0, r.output
        assert "scored as failed samples" in " ".join(r.output.split())
    counted = _summary(tmp_path)
    assert counted["n"] == 6 and counted["n_backend_errors"] == 1 and counted["backend_errors_counted"] is True
    # scored as an empty answer, i.e. a parse error: one more sample in every denominator
    assert counted["metrics"]["n"] == 6 and apart["metrics"]["n"] == 5
    assert counted["metrics"]["parse_error_rate"] == pytest.approx((apart["metrics"]["parse_error_rate"] * 5 + 1) / 6)
    run_dir = next(tmp_path.rglob("run.sqlite")).parent
    rep = CliRunner().invoke(app, ["report", str(run_dir), "--count-backend-errors"])
    assert rep.exit_code == 0, rep.output
    assert "1 backend error(s) counted as failed samples" in " ".join(rep.output.split())


def test_an_evaluation_failure_names_the_sample_and_how_to_resume(tmp_path, monkeypatch, data_root):
    from callbench.api import run
    from callbench.runs.runner import EvaluationFailed
    from callbench.tracks.nested.track import NestedTrack

    real = NestedTrack.evaluate
    seen = []

    def evaluate(self, sample, output):
        seen.append(sample.id)
        if len(seen) == 3:
            raise ValueError("scorer bug")
        return real(self, sample, output)

    monkeypatch.setattr(NestedTrack, "evaluate", evaluate)
    with pytest.raises(EvaluationFailed) as info:
        run("nested", "gold", out_dir=tmp_path, run_id="r", limit=6, concurrency=1)
    message = str(info.value)
    assert repr(seen[2]) in message and "scorer bug" in message and "resume" in message
    assert "\n" not in message


def test_webapi_scores_in_worker_processes_like_in_process(tmp_path, data_root):
    """The process pool gives the same verdicts as evaluating in this process."""
    from callbench.api import make_track
    from callbench.models.base import ModelOutput
    from callbench.runs.eval_worker import ProcessEvaluator

    track = make_track("webapi")
    samples = track.load_samples()[:6]
    outputs = []
    for i, s in enumerate(samples):
        ref = track.build_input(s).reference
        outputs.append(ModelOutput(text=ref if i % 2 == 0 else "get('https://example.com/x')", mode="completion"))
    expected = [track.evaluate(s, o).verdicts for s, o in zip(samples, outputs, strict=True)]
    track.close()

    async def go():
        pool = ProcessEvaluator(make_track("webapi").evaluator_factory(), 2)
        try:
            got = await asyncio.gather(*(pool.evaluate(s, o) for s, o in zip(samples, outputs, strict=True)))
            # a worker that dies is reported once, then replaced
            victim = pool._all[0]._proc
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            again = [await pool.evaluate(samples[0], outputs[0]) for _ in range(3)]
            return got, again
        finally:
            await pool.close()

    got, again = asyncio.run(go())
    assert [g.verdicts for g in got] == expected
    assert all(a.verdicts == expected[0] for a in again)


def test_constrained_webapi_runs_score_in_this_process(data_root):
    from callbench.api import make_track

    assert make_track("webapi").evaluator_factory() is not None
    assert make_track("webapi", constrained=True).evaluator_factory() is None


@pytest.mark.parametrize("target", ["m@127.0.0.1:8000/v1", "m@localhost:8000", "m@myhost/v1", "m@ftp://x/v1"])
def test_a_base_url_without_a_scheme_is_refused(target):
    from callbench.models.openai_compat import parse_target

    with pytest.raises(ConfigError, match="must start with http"):
        parse_target(target)


def test_model_names_with_at_signs_still_parse():
    from callbench.models.openai_compat import parse_target

    assert parse_target("org@team-model") == ("org@team-model", None)
    assert parse_target("a@b@http://h:1/v1") == ("a@b", "http://h:1/v1")


def test_parsed_specs_are_cached_by_content(tmp_path, monkeypatch, data_root):
    from callbench.specs.refs import read_document

    monkeypatch.setenv("CALLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    spec = data_root / "wapiibench" / "openapi" / "real_world_specs" / "asana.yaml"
    first = read_document(spec)
    cached = list((tmp_path / "cache" / "specs").glob("*.marshal"))
    assert len(cached) == 1
    assert read_document(spec) == first
    # a damaged cache file is ignored (the YAML is parsed again), never trusted
    cached[0].write_bytes(b"\x00garbage")
    assert read_document(spec) == first
    # the key is the content: an edited copy gets its own entry
    edited = tmp_path / "asana.yaml"
    edited.write_text(spec.read_text().replace("Asana", "Asana2", 1))
    assert read_document(edited) != first
    assert len(list((tmp_path / "cache" / "specs").glob("*.marshal"))) == 2
    monkeypatch.setenv("CALLBENCH_SPEC_CACHE", "0")
    os.remove(cached[0])
    read_document(spec)
    assert not cached[0].exists()


def test_a_long_webapi_run_scores_in_worker_processes(tmp_path, monkeypatch, data_root):
    """From _PROCESS_POOL_FROM samples on, answers are scored by worker processes: gold stays 100 %."""
    from callbench.api import run
    from callbench.runs import runner
    from callbench.runs.eval_worker import ProcessEvaluator

    calls = []
    real = ProcessEvaluator.evaluate

    async def spy(self, sample, output):
        calls.append(sample.id)
        return await real(self, sample, output)

    monkeypatch.setattr(runner, "_PROCESS_POOL_FROM", 10)
    monkeypatch.setattr(ProcessEvaluator, "evaluate", spy)
    out = run("webapi", "gold", out_dir=tmp_path, run_id="r", limit=12, concurrency=4, eval_workers=2)
    assert out.summary["n"] == 12 and out.summary["metrics"]["correct_implementations_t"] == 1.0
    assert len(calls) == 12
    calls.clear()
    small = run("webapi", "gold", out_dir=tmp_path, run_id="s", limit=8, concurrency=4)
    assert small.summary["metrics"]["correct_implementations_t"] == 1.0 and calls == []


def test_limit_counts_tasks_not_samples():
    """--limit N selects the first N tasks with all their samples (stateful pass@k draws)."""
    from callbench.runs.runner import RunOptions, select_samples
    from callbench.tracks.base import Sample

    samples = [Sample(id=f"t{t}#{i}", group="g", payload=None, task=f"t{t}") for t in range(5) for i in range(3)]
    picked = select_samples(samples, RunOptions(limit=2))
    assert [s.id for s in picked] == ["t0#0", "t0#1", "t0#2", "t1#0", "t1#1", "t1#2"]
    plain = [Sample(id=f"s{i}", group="g", payload=None) for i in range(5)]
    assert [s.id for s in select_samples(plain, RunOptions(limit=2))] == ["s0", "s1"]


def test_per_group_takes_the_first_tasks_of_each_group():
    """Issue 31: --limit 5 took 5 tasks of one API; --per-group N takes N of each (with all their
    samples), --limit then caps the total."""
    from callbench.runs.runner import RunOptions, select_samples
    from callbench.tracks.base import Sample

    samples = [Sample(id=f"{g}{t}#{i}", group=g, payload=None, task=f"{g}{t}") for g in "ab" for t in range(3) for i in range(2)]
    samples += [Sample(id="c0#0", group="c", payload=None, task="c0")]
    picked = select_samples(samples, RunOptions(per_group=2))
    assert [s.id for s in picked] == ["a0#0", "a0#1", "a1#0", "a1#1", "b0#0", "b0#1", "b1#0", "b1#1", "c0#0"]
    assert [s.task for s in select_samples(samples, RunOptions(per_group=2, limit=3))][::2] == ["a0", "a1", "b0"]
    with pytest.raises(ConfigError, match="--per-group must be >= 1"):
        select_samples(samples, RunOptions(per_group=0))


def test_a_batch_is_scored_as_one_by_one_and_a_failing_batch_names_its_sample(data_root):
    """``evaluate_many`` (programs sent to V8 together) gives each sample the verdict that
    ``evaluate`` gives it; when the batch call fails, every sample is scored alone, so the one
    error lands on the sample that caused it and the others keep their verdicts."""
    from callbench.api import make_track
    from callbench.models.base import ModelOutput
    from callbench.runs.eval_worker import _evaluate_batch

    track = make_track("webapi")
    samples = track.load_samples()[:8]
    answers = ["get('https://example.com/x')", "", "post('https://app.asana.com/api/1.0/tasks', {", "while (true) {}"]
    outputs = [ModelOutput(text=track.build_input(s).reference if i % 2 == 0 else answers[i // 2], mode="completion")
               for i, s in enumerate(samples)]
    try:
        one_by_one = [track.evaluate(s, o) for s, o in zip(samples, outputs, strict=True)]
        batch = _evaluate_batch(track, list(zip(samples, outputs, strict=True)))
        assert [(ok, r.status, r.verdicts) for ok, r in batch] == [(True, r.status, r.verdicts) for r in one_by_one]
        statuses = {r.status for r in one_by_one}
        assert "ok" in statuses and statuses - {"ok"}, statuses  # gold and broken answers in one batch

        real = track.evaluate_many

        def evaluate(sample, output):
            if sample.id == samples[3].id:
                raise RuntimeError("scorer bug")
            return real([(sample, output)])[0]

        track.evaluate = evaluate  # type: ignore[method-assign]
        track.evaluate_many = lambda items: [evaluate(s, o) for s, o in items]  # type: ignore[method-assign]
        mixed = _evaluate_batch(track, list(zip(samples, outputs, strict=True)))
        assert [ok for ok, _ in mixed] == [i != 3 for i in range(8)]
        assert "scorer bug" in mixed[3][1]
        assert [r.verdicts for ok, r in mixed if ok] == [r.verdicts for i, r in enumerate(one_by_one) if i != 3]
    finally:
        track.close()


def test_scoring_workers_run_at_a_lower_cpu_priority(data_root):
    """The event loop that turns answers into requests goes first when the cores are busy."""
    from callbench.api import make_track
    from callbench.runs.eval_worker import ProcessEvaluator

    async def go():
        pool = ProcessEvaluator(make_track("webapi").evaluator_factory(), 1)
        try:
            await pool.start()
            pid = pool._all[0]._proc.pid
            for _ in range(200):  # the worker lowers its priority first thing after it starts
                if os.getpriority(os.PRIO_PROCESS, pid) > os.getpriority(os.PRIO_PROCESS, 0):
                    break
                await asyncio.sleep(0.01)
            return os.getpriority(os.PRIO_PROCESS, pid)
        finally:
            await pool.close()

    assert asyncio.run(go()) > os.getpriority(os.PRIO_PROCESS, 0)
