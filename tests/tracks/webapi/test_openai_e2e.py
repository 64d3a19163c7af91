"""``callbench run webapi --model openai:...`` end to end against a loopback OpenAI look-alike.

The server answers chat requests the way chat models do — prose around a fenced block that
repeats the whole snippet — with the gold program, or continues the prompt with the gold
continuation for /completions. Both paths must then score 100 % correct, which checks prompt
building, the chat-answer parser, concurrency and scoring together.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

pytest.importorskip("aiohttp")

from callbench.cli import app  # noqa: E402
from callbench.tracks.webapi.prompting import build_prompt, reference_completion  # noqa: E402


@pytest.fixture(scope="module")
def gold_server(wapii_tasks):
    by_task = {}
    for t in wapii_tasks:
        if t.api != "google_sheet_v4":
            continue
        p = build_prompt(t, "full")
        by_task[t.task] = (p.starter, reference_completion(t, "full"))
    state = {"max_in_flight": 0, "in_flight": 0, "n": 0}
    lock = threading.Condition()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state["n"] += 1
                state["in_flight"] += 1
                state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
                lock.notify_all()
                # Hold requests until 12 overlap (or 2 s pass): makes the concurrency check
                # independent of scheduling; a client capped at 8 cannot get past the timeout.
                lock.wait_for(lambda: state["in_flight"] >= 12 or state["n"] > 12, timeout=2.0)
            text = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
            task = re.search(r"^// (.*)$", text, re.MULTILINE).group(1)
            starter, gold = by_task[task]
            if "messages" in body:
                answer = f"Sure, here is the code:\n\n```javascript\n{starter}{gold}```\n\nIt sends the request."
                choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
                obj = "chat.completion"
            else:
                choice = {"index": 0, "text": gold + "```\n", "finish_reason": "stop"}
                obj = "text_completion"
            payload = {"id": "x", "object": obj, "created": 0, "model": body["model"], "choices": [choice],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
            data = json.dumps(payload).encode()
            with lock:
                state["in_flight"] -= 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_openai_backend_scores_gold_answers_fully(tmp_path, data_root, gold_server, mode):
    url, state = gold_server
    res = CliRunner().invoke(app, [
        "run", "webapi", "--model", f"openai:fake-coder@{url}", "--mode", mode, "--api", "google_sheet_v4",
        "--concurrency", "16", "--out", str(tmp_path), "--no-progress", "--data", str(data_root),
    ], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (run_dir,) = list(tmp_path.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n"] == 17
    assert summary["metrics"]["correct_implementations_t"] == 1.0
    assert 8 < state["max_in_flight"] <= 16  # --concurrency reaches the backend (its default is 8)
