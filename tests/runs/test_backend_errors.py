"""A sample the backend cannot answer is a stored ``backend_error`` outcome, never a run abort
(issue 11): counted apart from the model's mistakes, asked again with ``--retry-errors``, and a
run whose backend mostly fails stops early with the cause."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

pytest.importorskip("openai")

from callbench.cli import app  # noqa: E402
from callbench.runs.store import RunStore  # noqa: E402


@pytest.fixture()
def flaky_server():
    """Chat completions answering "[]"; requests numbered in ``state["refuse"]`` get HTTP 400."""
    state = {"n": 0, "refuse": set(), "refuse_all": False}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state["n"] += 1
                refuse = state["refuse_all"] or state["n"] in state["refuse"]
            if refuse:
                data = json.dumps({"error": {"message": "context length exceeded", "type": "invalid_request_error"}}).encode()
                self.send_response(400)
            else:
                choice = {"index": 0, "message": {"role": "assistant", "content": "[]"}, "finish_reason": "stop"}
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                   "choices": [choice]}).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", state
    srv.shutdown()


def _args(url, out, *extra):
    return ["run", "nested", "--model", f"openai:m@{url}", "--model-arg", "mode=chat", "--limit", "12",
            "--concurrency", "1", "--out", str(out), "--no-progress", *extra]


def test_a_refused_sample_is_stored_counted_apart_and_retried(flaky_server, tmp_path, monkeypatch):
    url, state = flaky_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["refuse"] = {3}
    r = CliRunner().invoke(app, _args(url, tmp_path))
    assert r.exit_code == 0, r.output
    assert "1 sample(s) got no usable answer" in r.output and "--retry-errors" in r.output
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    assert summary["n_backend_errors"] == 1 and summary["n"] == 11 and summary["n_selected"] == 12
    store = RunStore.open(next(tmp_path.rglob("run.sqlite")).parent)
    failed = [r for r in store.rows() if r["status"] == "backend_error"]
    store.close()
    assert len(failed) == 1 and failed[0]["extra"]["backend_error"]["status"] == 400
    assert "context length exceeded" in failed[0]["error"]
    # a plain resume keeps the outcome; --retry-errors asks again, and only for that sample
    asked = state["n"]
    assert CliRunner().invoke(app, _args(url, tmp_path)).exit_code == 0 and state["n"] == asked
    again = CliRunner().invoke(app, _args(url, tmp_path, "--retry-errors"))
    assert again.exit_code == 0, again.output
    assert state["n"] == asked + 1
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    assert summary["n_backend_errors"] == 0 and summary["n"] == 12 and summary["complete"]


def test_a_failing_backend_stops_the_run_with_the_cause(flaky_server, tmp_path, monkeypatch):
    url, state = flaky_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["refuse_all"] = True
    r = CliRunner().invoke(app, _args(url, tmp_path, "--limit", "40"))
    assert r.exit_code == 2
    error = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "--max-backend-error-rate" in error[0] and "context length exceeded" in error[0]
    assert "--retry-errors" in error[0] and state["n"] < 40


def test_report_says_when_a_run_is_incomplete(flaky_server, tmp_path, monkeypatch):
    url, state = flaky_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["refuse"] = {2}
    assert CliRunner().invoke(app, _args(url, tmp_path)).exit_code == 0
    run_dir = next(tmp_path.rglob("run.sqlite")).parent
    r = CliRunner().invoke(app, ["report", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert "INCOMPLETE" in r.output and "1 backend error(s) not counted" in r.output
    assert CliRunner().invoke(app, _args(url, tmp_path, "--retry-errors")).exit_code == 0
    assert "INCOMPLETE" not in CliRunner().invoke(app, ["report", str(run_dir)]).output
    # a run that never finished (no summary.json) is incomplete too
    (run_dir / "summary.json").unlink()
    r = CliRunner().invoke(app, ["report", str(run_dir)])
    assert "INCOMPLETE" in r.output and "unfinished" in r.output


@pytest.fixture()
def malformed_server():
    """The first reply for each prompt is broken in the way ``state["fault"]`` says; the retry
    gets a good answer."""
    state = {"fault": None, "seen": set(), "n": 0}
    lock = threading.Lock()
    good = {"role": "assistant", "content": "[]"}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            body = json.loads(raw)
            key = json.dumps(body["messages"])
            with lock:
                state["n"] += 1
                first = key not in state["seen"]
                state["seen"].add(key)
            fault = state["fault"] if first else None
            ctype = "application/json"
            if fault == "html":
                data, ctype = b"<html><body>502 Bad Gateway</body></html>", "text/html"
            else:
                choices = [{"index": 0, "message": good, "finish_reason": "stop"}]
                if fault == "empty_choices":
                    choices = []
                elif fault == "null_content":
                    choices = [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"], "choices": choices}).encode()
                if fault == "truncated":
                    data = data[: len(data) // 2]
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", state
    srv.shutdown()


@pytest.mark.parametrize("fault", ["truncated", "html", "empty_choices", "null_content"])
def test_malformed_replies_are_retried_not_scored(malformed_server, tmp_path, monkeypatch, fault):
    url, state = malformed_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["fault"] = fault
    r = CliRunner().invoke(app, _args(url, tmp_path, "--limit", "4", "--model-arg", "backoff=0.01"))
    assert r.exit_code == 0, r.output
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    # every prompt was asked twice (the broken reply, then the good one) and nothing was scored
    # from a broken reply: the model's "[]" parses on every sample
    assert state["n"] == 8 and summary["n"] == 4 and summary["n_backend_errors"] == 0
    assert summary["metrics"]["parse_error_rate"] == 0.0


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


@pytest.fixture()
def timing_server():
    """``state["mode"]``: "trickle" sends a valid body one byte per 0.2 s; "retry_after" answers
    the first request with 429 and ``Retry-After: 1.5``, then normally. Request times are kept."""
    state = {"mode": None, "times": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["times"].append(time.monotonic())
            choice = {"index": 0, "message": {"role": "assistant", "content": "[]"}, "finish_reason": "stop"}
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [choice]}).encode()
            if state["mode"] == "retry_after" and len(state["times"]) == 1:
                self.send_response(429)
                self.send_header("Retry-After", "1.5")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if state["mode"] == "trickle":
                try:
                    for b in data:
                        self.wfile.write(bytes([b]))
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass
                return
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", state
    srv.shutdown()


def test_timeout_bounds_the_whole_request(timing_server, tmp_path, monkeypatch):
    url, state = timing_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["mode"] = "trickle"
    t0 = time.monotonic()
    r = CliRunner().invoke(app, _args(url, tmp_path, "--limit", "1", "--model-arg", "timeout=1", "--model-arg", "max_retries=0"))
    took = time.monotonic() - t0
    assert r.exit_code == 0, r.output
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    assert summary["n_backend_errors"] == 1 and took < 15  # the body alone takes ~30 s to trickle
    store = RunStore.open(next(tmp_path.rglob("run.sqlite")).parent)
    (row,) = list(store.rows())
    store.close()
    assert "no complete reply within 1 s" in row["error"]


def test_retry_after_is_honoured_beyond_the_backoff_cap(timing_server, tmp_path, monkeypatch):
    url, state = timing_server
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    state["mode"] = "retry_after"
    args = _args(url, tmp_path, "--limit", "1", "--model-arg", "backoff=0.01", "--model-arg", "backoff_max=0.05")
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert len(state["times"]) == 2 and state["times"][1] - state["times"][0] >= 1.4


def test_answers_never_pile_up_unstored(tmp_path):
    """Evaluation runs inside the concurrency bound (issue 11: a stateful kill lost up to 97
    answered generations): at any moment at most ``concurrency`` samples are answered but not
    yet stored."""
    import asyncio

    from callbench.models.base import ModelBackend, ModelOutput
    from callbench.runs.runner import RunOptions, run
    from callbench.tracks.base import Sample, SampleResult, Track

    state = {"answered": 0, "stored": 0, "peak": 0}

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
            state["stored"] += 1  # stored right after this returns, inside the same slot
            return SampleResult(status="ok")

        @classmethod
        def aggregate(cls, samples, results, scoring):
            return {"metrics": {"n": len(results)}}

    run(SlowScoring(), Fast("completion"), RunOptions(out_dir=tmp_path, concurrency=4, progress=False))
    assert state["answered"] == 40 and state["peak"] <= 4 + 1, state


def test_max_backend_error_rate_is_a_share(tmp_path):
    r = CliRunner().invoke(app, ["run", "nested", "--model", "gold", "--max-backend-error-rate", "1.5", "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 2 and "--max-backend-error-rate 1.5" in r.output and not list(tmp_path.iterdir())
