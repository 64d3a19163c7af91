"""The fake OpenAI server of :mod:`callbench.testing.fake_openai`: every fault action does what its
docstring says, over real sockets, and the server keeps connections alive, runs rules and seeded
fault rates, and runs in its own process with ``python -m callbench.testing.fake_openai serve``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from callbench.testing.fake_openai import FakeOpenAIServer, parse_fault, reply_key

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def server():
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def _chat(content: str = "hello") -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_ok_answers_chat_and_completions(server, client):
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json()["choices"][0]["message"] == {"role": "assistant", "content": "chat:hello"}
    r = client.post("/completions", json={"model": "m", "prompt": "abcdefgh"})
    assert r.json()["choices"][0]["text"] == "completion:defgh"
    assert [p for p, _ in server.requests] == ["/v1/chat/completions", "/v1/completions"]
    assert len(server.request_times) == 2 and server.request_times[0] <= server.request_times[1]


def test_status_with_default_and_custom_message(server, client):
    server.script = [("status", 503), ("status", 400, "context length exceeded"), ("status", 429)]
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 503 and r.json() == {"error": {"message": "scripted failure 503", "type": "server_error"}}
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 400
    assert r.json() == {"error": {"message": "context length exceeded", "type": "invalid_request_error"}}
    assert client.post("/chat/completions", json=CHAT).json()["error"]["type"] == "rate_limit_error"
    assert client.post("/chat/completions", json=CHAT).status_code == 200  # the script is used up


def test_retry_after(server, client):
    server.script = [("retry_after", 1.5)]
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 429 and r.headers["retry-after"] == "1.5"
    assert "retry after 1.5" in r.json()["error"]["message"]


def test_sleep_and_delay_do_not_block_other_connections(server):
    server.script = [("sleep", 1.0)]
    with httpx.Client(base_url=server.url, timeout=10) as slow, httpx.Client(base_url=server.url, timeout=10) as fast:
        done = {}

        def ask_slow():
            t0 = time.monotonic()
            slow.post("/chat/completions", json=_chat("slow"))
            done["slow"] = time.monotonic() - t0

        t = threading.Thread(target=ask_slow)
        t.start()
        deadline = time.monotonic() + 5
        while server.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fast.post("/chat/completions", json=_chat("fast")).json()["choices"][0]["message"]["content"] == "chat:fast"
        slow_still_asleep = "slow" not in done  # the fast answer did not wait for the 1 s sleep
        t.join()
    assert done["slow"] >= 1.0 and slow_still_asleep

    server.delay = 0.3

    async def many():
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as c:
            return await asyncio.gather(*(c.post("/chat/completions", json=_chat(str(i))) for i in range(20)))

    t0 = time.monotonic()
    replies = asyncio.run(many())
    took = time.monotonic() - t0
    assert [r.json()["choices"][0]["message"]["content"] for r in replies] == [f"chat:{i}" for i in range(20)]
    assert took >= 0.3  # the delay was applied (a lower bound: a busy machine only adds to it)
    # served together, not one after another: counted by the server, not timed (a busy machine
    # slows both ways of serving)
    assert server.max_in_flight >= 10


def test_html(server, client):
    server.script = [("html", 0)]
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.text.startswith("<html>")
    with pytest.raises(ValueError):
        r.json()


def test_truncated_body_is_cut_in_half_under_a_matching_length(server, client):
    full = client.post("/chat/completions", json=CHAT)
    server.script = [("truncated", 0)]
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert int(r.headers["content-length"]) == len(r.content) < len(full.content)
    assert len(r.content) >= len(full.content) // 2 - 20  # about half of a whole answer
    with pytest.raises(ValueError):
        json.loads(r.content)
    # the connection is still usable: the next answer is whole
    assert client.post("/chat/completions", json=CHAT).json()["choices"]


@pytest.mark.parametrize("path, body", [("/chat/completions", CHAT), ("/completions", {"model": "m", "prompt": "p"})])
def test_empty_choices_null_content_missing_fields(server, client, path, body):
    server.script = [("empty_choices", 0), ("null_content", 0), ("missing_fields", 0)]
    assert client.post(path, json=body).json()["choices"] == []
    choice = client.post(path, json=body).json()["choices"][0]
    if path == "/chat/completions":
        assert "content" in choice["message"] and choice["message"]["content"] is None
    else:
        assert "text" in choice and choice["text"] is None
    r = client.post(path, json=body)
    assert r.status_code == 200 and isinstance(r.json(), dict) and "choices" not in r.json()


def test_malformed_answers_consume_no_scripted_reply(server, client):
    server.chat_replies = [{"content": "the real one"}]
    server.script = [("html", 0), ("empty_choices", 0)]
    client.post("/chat/completions", json=CHAT)
    client.post("/chat/completions", json=CHAT)
    assert client.post("/chat/completions", json=CHAT).json()["choices"][0]["message"]["content"] == "the real one"


def test_trickle_sends_a_correct_body_slowly(server):
    server.script = [("trickle", 1.0)]
    with httpx.Client(base_url=server.url, timeout=10) as c:
        t0 = time.monotonic()
        with c.stream("POST", "/chat/completions", json=CHAT) as r:
            head_at = time.monotonic() - t0
            body, pieces = b"", 0
            for chunk in r.iter_raw():
                body += chunk
                pieces += 1
        took = time.monotonic() - t0
        normal = c.post("/chat/completions", json=CHAT).json()
    assert json.loads(body) == normal and normal["choices"][0]["message"]["content"] == "chat:hello"
    # the head first, then the body in many pieces over about the second asked for (lower bounds
    # only: a busy machine can delay the head but cannot make the trickle after it shorter)
    assert took >= 0.9 and took - head_at >= 0.5 and pieces >= 10


def test_drop_closes_without_answering(server, client):
    server.script = [("drop", 0)]
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/chat/completions", json=CHAT)
    assert client.post("/chat/completions", json=CHAT).status_code == 200
    # the handler counts a request out after its response is sent: the client may be faster
    deadline = time.monotonic() + 2.0
    while server.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.requests) == 2 and server.in_flight == 0
    server.script = [("drop", 0.3)]
    t0 = time.monotonic()
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/chat/completions", json=CHAT)
    assert time.monotonic() - t0 >= 0.3


def test_keep_alive_reuses_one_connection(server, client):
    for i in range(20):
        assert client.post("/chat/completions", json=_chat(str(i))).status_code == 200
    assert server.connections == 1 and len(server.requests) == 20
    # "Connection: close" is honoured, and said in the answer
    for _ in range(3):
        r = httpx.post(server.url + "/chat/completions", json=CHAT, headers={"Connection": "close"})
        assert r.status_code == 200 and r.headers["connection"] == "close"
    assert server.connections == 4


def test_pipelined_and_http10_requests(server):
    raw = json.dumps(CHAT).encode()
    one = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw)
    with socket.create_connection((server.host, server.port)) as s:
        s.sendall(one * 3)  # three requests in one write: three answers, in order, on one connection
        data = b""
        while data.count(b"HTTP/1.1 200") < 3 or not data.endswith(b"}"):
            piece = s.recv(65536)
            assert piece
            data += piece
    assert data.count(b"chat:hello") == 3 and server.connections == 1
    with socket.create_connection((server.host, server.port)) as s:  # curl's Expect: 100-continue
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(raw))
        assert s.recv(65536).startswith(b"HTTP/1.1 100 ")
        s.sendall(raw)
        data = b""
        while b"chat:hello" not in data:
            piece = s.recv(65536)
            assert piece
            data += piece
        assert data.startswith(b"HTTP/1.1 200")
    with socket.create_connection((server.host, server.port)) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw))
        data = b""
        while piece := s.recv(65536):  # HTTP/1.0: the server closes after the answer
            data += piece
    assert data.startswith(b"HTTP/1.1 200") and b"chat:hello" in data


def test_rules_come_before_the_script(server, client):
    server.rules = [(lambda b: "poison" in b["messages"][-1]["content"], ("status", 400, "no poison here"))]
    server.script = [("status", 503)]
    for _ in range(3):
        r = client.post("/chat/completions", json=_chat("some poison"))
        assert r.status_code == 400 and r.json()["error"]["message"] == "no poison here"
    assert server.script == [("status", 503)]  # not consulted while a rule matched
    assert client.post("/chat/completions", json=_chat("fine")).status_code == 503
    assert client.post("/chat/completions", json=_chat("fine")).status_code == 200
    server.rules = [(lambda b: 1 / 0, ("ok", 0))]
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 500 and "ZeroDivisionError" in r.json()["error"]["message"]


def test_fault_rate_is_a_seeded_share(server, client):
    def statuses(seed):
        server.seed = seed
        return [client.post("/chat/completions", json=CHAT).status_code for _ in range(200)]

    server.fault_rate = 0.25
    first = statuses(7)
    assert set(first) == {200, 503} and 25 <= first.count(503) <= 75
    assert statuses(7) == first and statuses(8) != first
    server.fault, server.fault_rate = ("html", 0), 1.0
    assert client.post("/chat/completions", json=CHAT).headers["content-type"].startswith("text/html")
    server.fault_rate = 0.0
    assert all(client.post("/chat/completions", json=CHAT).status_code == 200 for _ in range(20))


def test_fail_repeats_an_action(server, client):
    assert server.fail(("status", 502), times=3) is server
    assert [client.post("/chat/completions", json=CHAT).status_code for _ in range(4)] == [502, 502, 502, 200]
    with pytest.raises(ValueError, match="unknown action"):
        server.fail(("explode", 0))


def test_other_requests(server, client):
    assert client.post("/tokenize", json={"model": "m", "prompt": "ab"}).status_code == 404  # /v1/tokenize
    with httpx.Client(base_url=server.url.removesuffix("/v1")) as root:
        assert root.post("/tokenize", json={"prompt": "ab"}).json() == {"tokens": [97, 98], "count": 2}
        assert root.post("/detokenize", json={"tokens": [97]}).json() == {"prompt": "a"}
    assert client.get("/models").json()["data"][0]["id"] == "fake"
    r = client.post("/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
    server.responder = lambda body: 1 / 0
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 500 and "ZeroDivisionError" in r.json()["error"]["message"]


def test_stop_closes_the_port():
    fake = FakeOpenAIServer().start()
    assert httpx.post(fake.url + "/chat/completions", json=CHAT).status_code == 200
    fake.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.post(fake.url + "/chat/completions", json=CHAT, timeout=2)


def test_faults_are_what_the_openai_backend_retries(server):
    pytest.importorskip("aiohttp")
    from callbench.models.base import GenerationConfig, ModelInput
    from callbench.models.registry import load_model

    inp = ModelInput(sample_id="s", prompt="p", messages=[{"role": "user", "content": "hi"}])
    faults = [("html", 0), ("truncated", 0), ("empty_choices", 0), ("null_content", 0), ("missing_fields", 0),
              ("drop", 0), ("status", 503), ("retry_after", 0.05), ("trickle", 2.0)]
    for fault in faults:
        server.script = [fault]
        backend = load_model(f"openai:m@{server.url}", backoff=0.01, backoff_max=0.02, timeout=0.5)
        out = asyncio.run(backend.generate(inp, GenerationConfig()))
        assert out.text == "chat:hi" and out.extra["attempts"] == 2, fault


def test_reply_key_and_parse_fault():
    assert reply_key(_chat("abc")) == hashlib.sha256(b"abc").hexdigest()
    assert reply_key({"model": "m", "prompt": "xyz"}) == hashlib.sha256(b"xyz").hexdigest()
    assert parse_fault("status:400:context length exceeded") == ("status", 400, "context length exceeded")
    assert parse_fault("status") == ("status", 503) and parse_fault("trickle:2") == ("trickle", 2.0)
    with pytest.raises(ValueError):
        parse_fault("nonsense:1")


def _serve(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "callbench.testing.fake_openai", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("URL http://127.0.0.1:") and line.rstrip().endswith("/v1"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split()[1]


def _finish(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and out == "", err


def test_serve_prints_its_url_and_answers(tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({reply_key(_chat("known")): "from the file",
                                   reply_key({"prompt": "known prompt"}): "completion from the file"}))
    proc, url = _serve("--replies", str(replies), "--latency", "0.2")
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            t0 = time.monotonic()
            assert c.post("/chat/completions", json=_chat("known")).json()["choices"][0]["message"]["content"] == "from the file"
            assert time.monotonic() - t0 >= 0.2
            assert c.post("/chat/completions", json=_chat("other")).json()["choices"][0]["message"]["content"] == "chat:other"
            r = c.post("/completions", json={"model": "m", "prompt": "known prompt"})
            assert r.json()["choices"][0]["text"] == "completion from the file"
    finally:
        _finish(proc)


def test_serve_with_faults():
    proc, url = _serve("--fault", "status:400:too long", "--fault-rate", "0.5", "--seed", "3")
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            rs = [c.post("/chat/completions", json=CHAT) for _ in range(60)]
        codes = [r.status_code for r in rs]
        assert set(codes) == {200, 400} and 10 <= codes.count(400) <= 50
        assert all(r.json()["error"]["message"] == "too long" for r in rs if r.status_code == 400)
    finally:
        _finish(proc)
    proc, url = _serve("--fault", "drop")  # --fault alone: every request
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(url + "/chat/completions", json=CHAT, timeout=5)
    finally:
        _finish(proc)
    bad = subprocess.run([sys.executable, "-m", "callbench.testing.fake_openai", "serve", "--fault", "boom"],
                         capture_output=True, text=True, timeout=30, env={**os.environ})
    assert bad.returncode == 2 and "unknown kind 'boom'" in bad.stderr and bad.stdout == ""
