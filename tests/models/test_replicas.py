"""Many replicas of one model (``openai:M@URL1,URL2,...``): requests spread over the replicas within
each one's concurrency; a replica that fails is taken out, its requests asked again elsewhere, and it
is used again after a cool-down and a probe; a whole run completes with every sample answered once.
Against real loopback servers (:class:`FakeOpenAIServer`), not mocks."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading

import pytest

pytest.importorskip("aiohttp")

import callbench  # noqa: E402
from callbench.errors import ConfigError  # noqa: E402
from callbench.models import load_model  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402
from callbench.models.openai_compat import ModelRequestError, OpenAICompatBackend  # noqa: E402
from callbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

FAST = {"backoff": 0.01, "backoff_max": 0.02, "max_retries": 2, "timeout": 10.0}


def _inp(i: int) -> ModelInput:
    text = f"question {i}"
    return ModelInput(sample_id=str(i), prompt=text, messages=[{"role": "user", "content": text}])


async def _ask_all(backend: OpenAICompatBackend, n: int, start: int = 0) -> list:
    return await asyncio.gather(*(backend.generate(_inp(i), GenerationConfig()) for i in range(start, start + n)))


def _stop_after(server: FakeOpenAIServer, answers: int, seen: dict[str, int]):
    """A responder that answers as the echo does, counts its answers in ``seen["n"]`` and stops
    ``server`` (from another thread) once it has answered ``answers`` requests (the requests in
    flight then may still be answered while it stops)."""

    def responder(body):
        seen["n"] += 1
        if seen["n"] == answers:
            threading.Thread(target=server.stop, daemon=True).start()
        return None  # the echo answer

    return responder


def test_requests_spread_over_every_replica_within_each_ones_concurrency():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b, FakeOpenAIServer() as c:
        for s in (a, b, c):
            s.delay = 0.05  # requests overlap, so in-flight counts mean something
        backend = load_model(f"openai:m@{a.url},{b.url}/,{c.url}", concurrency=2, **FAST)
        assert backend.base_urls == [a.url, b.url, c.url] and backend.max_concurrency == 6

        async def main():
            try:
                return await _ask_all(backend, 30)
            finally:
                await backend.aclose()

        outs = asyncio.run(main())
        assert [o.text for o in outs] == [f"chat:question {i}" for i in range(30)]
        counts = [len(s.requests) for s in (a, b, c)]
        assert counts == [10, 10, 10], counts  # fewest assigned first, ties round-robin
        assert [s.max_in_flight for s in (a, b, c)] == [2, 2, 2]  # each replica's own bound, reached
        served = {o.extra["replica"] for o in outs}
        assert served == {a.url, b.url, c.url}
        assert all(o.extra["attempts"] == 1 for o in outs)


def test_one_request_at_a_time_still_goes_round_robin():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=1, **FAST)

        async def main():
            try:
                return [await backend.generate(_inp(i), GenerationConfig()) for i in range(6)]
            finally:
                await backend.aclose()

        outs = asyncio.run(main())
        assert [o.extra["replica"] for o in outs] == [a.url, b.url] * 3
        assert len(a.requests) == len(b.requests) == 3


def test_a_replica_stopped_mid_way_is_taken_out_and_its_requests_answered_elsewhere():
    with FakeOpenAIServer() as a:
        b = FakeOpenAIServer().start()
        a.delay = b.delay = 0.02
        seen = {"n": 0}
        b.responder = _stop_after(b, 4, seen)
        backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=3, replica_cooldown=600, **FAST)

        async def main():
            try:
                return await _ask_all(backend, 40)
            finally:
                await backend.aclose()

        outs = asyncio.run(main())
        b.stop()
        assert [o.text for o in outs] == [f"chat:question {i}" for i in range(40)]  # every one answered
        by_b = [o for o in outs if o.extra["replica"] == b.url]
        assert 0 < len(by_b) <= seen["n"] < 40  # what b answered before it stopped, no more
        replica_b = backend._pool.replicas[1]
        assert replica_b.taken_out == 1 and not replica_b.up
        assert backend._pool.replicas[0].answered + replica_b.answered == 40  # each request answered once
        # the requests b never answered were asked again on a (their attempts on b count)
        assert any(o.extra["replica"] == a.url and o.extra["attempts"] > 1 for o in outs)


def test_a_replica_that_comes_back_is_used_again_after_the_cooldown():
    with FakeOpenAIServer() as a:
        b = FakeOpenAIServer().start()
        port = b.port
        b.stop()  # down from the start: refused connections
        backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=2, replica_cooldown=0.05, replica_cooldown_max=0.05, **FAST)
        replica_b = backend._pool.replicas[1]

        async def main():
            try:
                first = await _ask_all(backend, 6)
                assert replica_b.taken_out >= 1
                back = FakeOpenAIServer(port=port).start()
                try:
                    for i in range(500):  # requests keep coming; one of them starts the probe
                        out = await backend.generate(_inp(100 + i), GenerationConfig())
                        if out.extra["replica"] == back.url:
                            break
                        await asyncio.sleep(0.01)
                    return first, out, len(back.requests)
                finally:
                    back.stop()
            finally:
                await backend.aclose()

        first, out, sent_back = asyncio.run(main())
        assert all(o.extra["replica"] == a.url for o in first)  # b was out
        assert out.extra["replica"] == f"http://127.0.0.1:{port}/v1" and sent_back >= 1  # used again
        assert replica_b.up and replica_b.answered >= 1


def test_a_probe_left_on_a_closed_event_loop_does_not_block_the_next_one():
    """Runs use one event loop after another (the CLI, tests): a probe still pending when its loop
    closed never finishes, so the next loop must start its own instead of waiting on it."""
    from callbench.models.replicas import ReplicaPool

    class Down:
        base_url = "http://127.0.0.1:9/v1"
        probes = 0

        async def is_up(self):
            Down.probes += 1
            return True

    now = [100.0]
    pool = ReplicaPool([Down()], cooldown=1.0, cooldown_max=1.0, clock=lambda: now[0])
    r = pool.replicas[0]
    old = asyncio.new_event_loop()
    stale = r.probe = old.create_task(asyncio.sleep(3600))  # pending for ever: its loop closes unrun
    old.set_exception_handler(lambda *_: None)  # "destroyed but pending" is this test's point
    old.close()
    r.down_until = 50.0  # out, its cool-down over

    async def main():
        pool.choose(set())
        assert r.probe is not None and r.probe.get_loop() is asyncio.get_running_loop()
        await r.probe

    asyncio.run(main())
    assert Down.probes == 1 and r.up
    stale.get_coro().close()


def test_5xx_after_the_replicas_own_retries_takes_it_out():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        b.fault_rate = 1.0  # every request: 503
        backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=1, replica_cooldown=600, **FAST)

        async def main():
            try:
                return [await backend.generate(_inp(i), GenerationConfig()) for i in range(4)]
            finally:
                await backend.aclose()

        outs = asyncio.run(main())
        assert all(o.extra["replica"] == a.url for o in outs)
        assert len(b.requests) == 1 + FAST["max_retries"]  # one request's full retries, then out
        assert outs[1].extra["attempts"] == 1 + FAST["max_retries"] + 1
        assert backend._pool.replicas[1].taken_out == 1


def test_a_refused_request_is_not_asked_elsewhere():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.fail(("status", 400, "context too long"))
        backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=1, **FAST)

        async def main():
            try:
                return await backend.generate(_inp(0), GenerationConfig())
            finally:
                await backend.aclose()

        with pytest.raises(ModelRequestError, match="request refused: HTTP 400: context too long"):
            asyncio.run(main())
        assert len(a.requests) == 1 and len(b.requests) == 0
        assert all(r.up for r in backend._pool.replicas)


def test_when_every_replica_is_down_the_request_fails_with_one_line():
    a, b = FakeOpenAIServer().start(), FakeOpenAIServer().start()
    a.stop()
    b.stop()
    backend = load_model(f"openai:m@{a.url},{b.url}", concurrency=1, replica_cooldown=600, **FAST)

    async def main():
        try:
            return await backend.generate(_inp(0), GenerationConfig())
        finally:
            await backend.aclose()

    with pytest.raises(ModelRequestError) as info:
        asyncio.run(main())
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"openai:m@{a.url},{b.url}: no replica answered")
    assert "cannot connect" in msg
    # the second replica, tried when every one was out, had its full retries (as a single URL)
    assert info.value.attempts == 1 + 1 + FAST["max_retries"]


def test_preflight_takes_out_a_replica_that_is_not_there_and_refuses_when_none_is():
    with FakeOpenAIServer() as a:
        b = FakeOpenAIServer().start()
        b.stop()
        backend = load_model(f"openai:m@{a.url},{b.url}", replica_cooldown=600, **FAST)
        asyncio.run(backend.preflight())
        assert [r.up for r in backend._pool.replicas] == [True, False]
    dead = load_model(f"openai:m@{a.url},{b.url}", **FAST)
    with pytest.raises(ConfigError, match=r"no replica answers \(first: .*cannot connect"):
        asyncio.run(dead.preflight())


def test_a_replica_that_ignores_the_grammar_refuses_the_run():
    """Unlike a replica that is not there, one that answers wrongly is the run's error: its
    answers would be scored as constrained ones."""
    from callbench.models.openai_compat import GRAMMAR_PROBE

    def applies(body):
        so = body.get("structured_outputs") or {}
        return {"content": GRAMMAR_PROBE} if GRAMMAR_PROBE in str(so.get("grammar")) else None

    with FakeOpenAIServer(applies) as a, FakeOpenAIServer() as b:
        asyncio.run(load_model(f"openai:m@{a.url}", **FAST).preflight(True))  # a applies grammars
        with pytest.raises(ConfigError) as info:
            asyncio.run(load_model(f"openai:m@{a.url},{b.url}", **FAST).preflight(True))
        assert str(info.value).startswith(f"openai:m@{b.url}: the server ignored the grammar")


def test_token_healing_on_the_replica_that_answers():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.stop()  # the first replica is down: b tokenizes and answers
        b.completion_replies.append(".get('u')")
        backend = load_model(f"openai:m@{a.url},{b.url}", mode="completion", token_healing=True, replica_cooldown=600, **FAST)
        assert backend.identity == f"openai:m@{a.url},{b.url}[heal]"
        inp = ModelInput(sample_id="h", prompt="// x\naxios.", messages=[], heal_boundary=True)

        async def main():
            try:
                return await backend.generate(inp, GenerationConfig(max_tokens=5))
            finally:
                await backend.aclose()

        out = asyncio.run(main())
        assert out.text == "get('u')" and out.extra["token_healing"] == {"removed": ".", "tokens": 1}
        assert out.extra["replica"] == b.url and [p for p, _ in b.requests] == ["/tokenize", "/detokenize", "/v1/completions"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("m@", r"model 'openai:m@': no base URL after '@'"),
        ("m@http://a:1/v1,,http://b:1/v1", r"replica URL 2 is empty"),
        ("m@http://a:1/v1,", r"replica URL 2 is empty"),
        ("m@http://a:1/v1,http://a:1/v1/", r"replica URL 'http://a:1/v1' is listed twice"),
        ("m@http://a:1/v1,b:1/v1", r"replica URL 2 must start with http:// or https:// \(got 'b:1/v1'\)"),
        ("m@,http://a:1/v1", r"base URL must start with http:// or https://"),
    ],
)
def test_bad_replica_specs_are_one_line(target, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_model(f"openai:{target}")
    assert "\n" not in str(info.value)


def test_a_single_url_identity_is_unchanged_and_a_list_is_recorded():
    single = load_model("openai:m@http://10.0.0.1:9000/v1/")
    assert single.identity == "openai:m@http://10.0.0.1:9000/v1" and single._pool is None
    assert single.identity_options == {"mode": "chat", "extra_body": None, "token_healing": False}
    fleet = load_model("openai:m@http://10.0.0.1:9000/v1,http://10.0.0.2:9000/v1/", concurrency=4)
    assert fleet.identity == "openai:m@http://10.0.0.1:9000/v1,http://10.0.0.2:9000/v1"
    assert fleet.identity_options == single.identity_options and fleet.max_concurrency == 8


def _rows(run_dir):
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return db.execute("SELECT id, status, extra FROM samples").fetchall()


def test_a_whole_run_over_two_replicas_one_stopped_mid_run(tmp_path):
    with FakeOpenAIServer() as a:
        b = FakeOpenAIServer().start()
        a.delay = b.delay = 0.02
        seen = {"n": 0}
        b.responder = _stop_after(b, 3, seen)
        spec = f"openai:m@{a.url},{b.url}"
        opts = {**FAST, "replica_cooldown": 600}
        result = callbench.run("webapi", spec, out_dir=tmp_path, limit=12, concurrency=4, model_options=opts)
        b.stop()
        rows = _rows(result.run_dir)
        assert result.generated == 12 and len(rows) == len({r[0] for r in rows}) == 12
        assert all(status != "backend_error" for _, status, _ in rows), rows
        replicas = [json.loads(extra)["replica"] for _, _, extra in rows]
        assert set(replicas) <= {a.url, b.url} and 0 < replicas.count(b.url) <= seen["n"] < 12
        ident = json.loads((result.run_dir / "config.json").read_text())["identity"]
        assert ident["model"] == spec
        # the same command resumes the same run: nothing left to ask
        again = callbench.run("webapi", spec, out_dir=tmp_path, limit=12, concurrency=4, model_options=opts)
        assert again.resumed and again.generated == 0 and again.run_dir == result.run_dir


def test_a_whole_run_over_two_healthy_replicas_uses_both(tmp_path):
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        result = callbench.run("webapi", f"openai:m@{a.url},{b.url}", out_dir=tmp_path, limit=8, concurrency=2, model_options=FAST)
        assert result.generated == 8 and len(a.requests) + len(b.requests) == 8
        assert len(a.requests) == len(b.requests) == 4
        single = callbench.run("webapi", f"openai:m@{a.url}", out_dir=tmp_path, limit=8, model_options=FAST)
        # another identity, another directory; the answers (an echo on every replica) score alike
        assert single.run_dir != result.run_dir and single.summary["metrics"] == result.summary["metrics"]


def test_a_grid_lists_replicas_as_a_plain_model(tmp_path):
    from callbench.sweep.grid import load_grid

    spec = "openai:m@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1"
    grid = tmp_path / "grid.yaml"
    grid.write_text(f'models: [gold, "{spec}"]\ntracks:\n  webapi: {{limit: 2, setup: [full, args]}}\n')
    cells = load_grid(grid).cells
    assert len(cells) == 4 and sorted({c.model for c in cells}) == ["gold", spec]
    assert len({c.name for c in cells}) == 4
