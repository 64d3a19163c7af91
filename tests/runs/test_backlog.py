"""The scoring backlog and stops (issue 28): answers are scored as they arrive by a bounded pool,
a resume scores the answers a stopped session stored unscored *beside* new requests (not all of
them first), a stop never waits for scoring in progress and keeps what is unscored for the next
resume, and the backend-error-rate stop counts what is stored."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import threading

import pytest
from typer.testing import CliRunner

from callbench.models.base import ModelBackend, ModelInput, ModelOutput
from callbench.runs.runner import RunOptions, RunStopped, run, run_async
from callbench.runs.store import RunStore
from callbench.tracks.base import Sample, SampleResult, Track

N = 100


class Recorder(ModelBackend):
    """Answers at once; records each request (and can stop the run after some answers)."""

    name = "recorder"
    modes = ("completion",)
    max_concurrency = 4

    def __init__(self, log: list, stop_after: int | None = None):
        super().__init__("completion")
        self.log = log
        self.stop_after = stop_after
        self.asked = 0

    @property
    def identity(self):
        return "recorder"

    async def generate(self, inp, config):
        self.asked += 1
        self.log.append(("ask", inp.sample_id))
        if self.stop_after is not None and self.asked == self.stop_after:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` from outside
        await asyncio.sleep(0)
        return ModelOutput(text="x", mode="completion")


class Scored(Track):
    """A track whose scoring the test controls: ``gate`` (a threading.Event) holds every
    evaluation until it is set; each scored sample is logged."""

    name = "scoredtrack"
    evaluate_in_thread = True

    def __init__(self, log: list, gate: threading.Event | None = None):
        self.log = log
        self.gate = gate
        self.returned_early: list[str] = []

    def load_samples(self):
        return [Sample(id=f"s{i:03d}", group="g", payload=None) for i in range(N)]

    def fingerprint(self):
        return {}

    def build_input(self, sample):
        return ModelInput(sample_id=sample.id, prompt="p", messages=[{"role": "user", "content": "p"}])

    def evaluate(self, sample, output):
        if self.gate is not None:
            self.gate.wait(timeout=300)
        self.log.append(("score", sample.id))
        return SampleResult(status="ok", verdicts={"strict": {"ok": True}})

    @classmethod
    def aggregate(cls, samples, results, scoring):
        return {"metrics": {"n": len(results)}}


def _opts(tmp_path, **kw):
    return RunOptions(out_dir=tmp_path, run_id="r", concurrency=4, eval_workers=1, progress=False, **kw)


def _stopped_with_unscored_answers(tmp_path) -> set[str]:
    """A first session whose scoring never finishes, cancelled once its backlog is full: the
    answers it received are stored unscored. Returns their ids."""
    gate = threading.Event()

    async def session():
        task = asyncio.create_task(run_async(Scored([], gate), Recorder([]), _opts(tmp_path)))
        for _ in range(2000):
            await asyncio.sleep(0.01)
            store_file = tmp_path / "r" / "run.sqlite"
            if store_file.exists() and _unscored(tmp_path) >= 40:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(session())
    finally:
        gate.set()
    store = RunStore.open(tmp_path / "r")
    try:
        assert store.count() == 0
        return set(store.generations())
    finally:
        store.close()


def _unscored(tmp_path) -> int:
    import sqlite3

    con = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    try:
        return con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def test_a_resume_scores_stored_answers_beside_new_requests(tmp_path):
    stored = _stopped_with_unscored_answers(tmp_path)
    assert len(stored) >= 40  # a backlog worth interleaving
    log: list = []
    model = Recorder(log)
    outcome = run(Scored(log), model, _opts(tmp_path))
    assert outcome.summary["n"] == N and outcome.reused == len(stored) and outcome.generated == N - len(stored)
    assert model.asked == N - len(stored)  # stored answers are not asked again
    scores = [sid for kind, sid in log if kind == "score"]
    last_stored = max(i for i, sid in enumerate(scores) if sid in stored)
    fresh_before = [sid for sid in scores[:last_stored] if sid not in stored]
    asks_before = [e for e in log[: log.index(("score", scores[last_stored]))] if e[0] == "ask"]
    # The scorers alternate between the two while both hold answers: new requests go on while the
    # stored backlog is scored (before: every stored answer first, and one wave of 4 requests).
    assert len(fresh_before) >= len(stored) // 2 - 2, (len(fresh_before), len(stored))
    assert len(asks_before) > 4 + len(stored) // 2


def test_a_stop_abandons_scoring_in_progress_and_keeps_the_answers(tmp_path):
    """SIGTERM while every evaluation is stuck (a sandbox that never returns): the run stops
    without waiting for them, and the answers are scored on the resume without asking again."""
    gate = threading.Event()
    log: list = []
    track = Scored(log, gate)
    try:
        with pytest.raises(RunStopped) as stop:
            run(track, Recorder(log, stop_after=10), _opts(tmp_path), handle_signals=True)
        scored_before_return = [e for e in log if e[0] == "score"]
    finally:
        gate.set()
    assert stop.value.signum == signal.SIGTERM
    assert scored_before_return == []  # the run returned while every evaluation was still held
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is gone again
    store = RunStore.open(tmp_path / "r")
    try:
        unscored = set(store.generations())
        assert store.count() == 0 and len(unscored) >= 10 - 4  # at most 4 were in flight at the stop
    finally:
        store.close()
    log2: list = []
    model = Recorder(log2)
    outcome = run(Scored(log2), model, _opts(tmp_path))
    assert outcome.summary["n"] == N and outcome.reused == len(unscored)
    assert model.asked == N - len(unscored)


# -- the backend-error-rate stop says what is stored ---------------------------------------------

pytest.importorskip("aiohttp")

from callbench.cli import app  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

REFUSAL = ("status", 400, "context length exceeded")


def _args(url, out, *extra):
    return ["run", "nested", "--model", f"openai:m@{url}", "--model-arg", "mode=chat", "--limit", "60",
            "--out", str(out), "--run-id", "r", "--no-progress", *extra]


def _statuses(out):
    store = RunStore.open(out / "r")
    try:
        return store.statuses()
    finally:
        store.close()


def test_the_backend_error_rate_stop_counts_the_stored_rows(tmp_path, monkeypatch):
    """At concurrency 16 every request in flight fails at once: the stop's counts are the rows
    stored (before: "10 of 10 samples" while 16+ rows were stored), and rows of an earlier
    session are said apart."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(lambda body: {"content": "[]"}) as fake:
        fake.script = [("ok", 0)] * 3
        fake.rules = [(lambda body: True, REFUSAL)]
        fake.delay = 0.05  # the failures of a wave arrive together
        r = CliRunner().invoke(app, _args(fake.url, tmp_path, "--concurrency", "16"))
        assert r.exit_code == 2, r.output
        line = next(x for x in r.output.splitlines() if x.startswith("error:"))
        failed, answered = map(int, re.search(r"(\d+) of the (\d+) samples this session stored", line).groups())
        statuses = _statuses(tmp_path)
        assert failed == sum(1 for s in statuses.values() if s == "backend_error") and answered == len(statuses)
        assert "context length exceeded" in line and "--retry-errors" in line and "earlier sessions" not in line
        # a second session: its own counts, and what the directory holds in all
        r = CliRunner().invoke(app, _args(fake.url, tmp_path, "--concurrency", "2"))
        assert r.exit_code == 2, r.output
        line = next(x for x in r.output.splitlines() if x.startswith("error:"))
        failed2, answered2 = map(int, re.search(r"(\d+) of the (\d+) samples this session stored", line).groups())
        statuses2 = _statuses(tmp_path)
        total = sum(1 for s in statuses2.values() if s == "backend_error")
        assert failed2 == total - failed and answered2 == len(statuses2) - len(statuses)
        assert f"{total} stored in the run directory with earlier sessions'" in line


# -- a cut response body is said as such -----------------------------------------------------------


def _cut_body_server() -> tuple[socket.socket, threading.Thread]:
    """Answers every request with a 200 whose body stops after 10 of its 500 announced bytes."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1)) if b"ength" in head else 0
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
                             b'{"choices"')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return srv, thread


def test_a_cut_response_body_is_reported_as_cut_off_not_as_a_connection_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    srv, _ = _cut_body_server()
    try:
        url = f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
        from callbench.models.base import BackendError, GenerationConfig
        from callbench.models.openai_compat import OpenAICompatBackend

        backend = OpenAICompatBackend("m", base_url=url, mode="chat", max_retries=1, backoff=0.01)

        async def ask():
            try:
                return await backend.generate(ModelInput(sample_id="a", prompt="p", messages=[{"role": "user", "content": "p"}]),
                                              GenerationConfig())
            finally:
                await backend.aclose()

        with pytest.raises(BackendError) as err:
            asyncio.run(ask())
    finally:
        srv.close()
    message = str(err.value)
    assert "gave up after 2 attempt(s): response cut off before its end (" in message, message
    assert "cannot connect" not in message and "\n" not in message


# -- a scoring worker sends back whatever a sample's result holds ------------------------------------


def test_a_result_of_any_depth_comes_back_from_a_scoring_worker():
    """A worker pickles its replies, and pickle recursed past Python's limit on a result 100,000
    deep: the worker died and the run with it. The values are cut as the store cuts them; a
    result that cannot be pickled at all is that sample's error, not the batch's."""
    import pickle

    from callbench.runs.eval_worker import _evaluate_batch, _reply

    class Deep:
        def evaluate(self, sample, output):
            if sample.id == "odd":
                return SampleResult(status="ok", execution={"f": lambda: None})
            value: list = []
            for _ in range(100_000):
                value = [value]
            return SampleResult(status="ok", execution={"body": value}, verdicts={"strict": {"sample": "wrong"}})

    out = ModelOutput(text="x", mode="completion")
    batch = [(Sample(id=i, group="g", payload=None), out) for i in ("a", "odd", "b")]
    replies = pickle.loads(_reply(_evaluate_batch(Deep(), batch)))
    assert [ok for ok, _ in replies] == [True, False, True]
    assert replies[0][1].verdicts == {"strict": {"sample": "wrong"}} and replies[0][1].execution["body"]
    assert "its result cannot be sent back" in replies[1][1]


def test_a_request_a_worker_cannot_receive_fails_its_sample_instead_of_hanging(data_root):
    """The parent pickles each batch for a worker: an answer nested 100,000 deep is cut first (it
    is scored), and a request that cannot be pickled at all fails its waiters with one line (the
    driver died with it before, and the run waited forever)."""
    from callbench.api import make_track
    from callbench.runs.eval_worker import EvaluatorError, ProcessEvaluator

    track = make_track("webapi")
    sample = track.load_samples()[0]
    deep: list = []
    for _ in range(100_000):
        deep = [deep]

    async def go():
        pool = ProcessEvaluator(track.evaluator_factory(), 1)
        try:
            scored = await pool.evaluate(sample, ModelOutput(text="get('https://example.com')", mode="completion",
                                                             extra={"deep": deep}))
            with pytest.raises(EvaluatorError, match="cannot hand the samples to a worker process"):
                await pool.evaluate(Sample(id="x", group="g", payload=lambda: None), ModelOutput(text="", mode="completion"))
            again = await pool.evaluate(sample, ModelOutput(text="get('https://example.com')", mode="completion"))
            return scored, again
        finally:
            await pool.close()

    try:
        scored, again = asyncio.run(go())
    finally:
        track.close()
    assert scored.status == again.status and scored.verdicts == again.verdicts


def test_a_stop_while_the_data_loads_ends_the_run_at_once(tmp_path):
    """Loading the data is synchronous (seconds for a large spec set): a stop signal then unwinds
    at once instead of waiting for the load to finish."""
    done: list[str] = []

    class SlowLoad(Scored):
        def load_samples(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(600):  # 60 s, unless the stop interrupts it
                threading.Event().wait(0.1)
            done.append("loaded")
            return super().load_samples()

    with pytest.raises(RunStopped) as stop:
        run(SlowLoad([]), Recorder([]), _opts(tmp_path), handle_signals=True)
    assert stop.value.signum == signal.SIGTERM and done == []
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
