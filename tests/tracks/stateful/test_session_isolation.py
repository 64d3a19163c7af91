"""The session service runs outside the harness process with per-run quotas (issue 28, item 5):
a sample that floods it breaks its own service (its verdict), never the harness's memory, and the
next sample gets a healthy service."""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
import requests

from callbench.services.isolation import Quotas, ServiceLimitError
from callbench.tracks.stateful.execution import Case, execute, judge
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.services.session_server import SessionService

SESSION_REF = (
    "session_1 = requests.post(f\"{BASE_URL}/api/sessions/{source_1}/chat\", json={'data': data_1}).json()\n"
    "result = session_1['id']\n"
)
MB = 1 << 20


def rss_bytes() -> int:
    """This process's resident memory now (VmRSS)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_a_flood_of_1mb_posts_is_the_samples_verdict_and_spares_the_harness():
    scen = get_scenario("session")
    case = Case(
        "base",
        {"source_1": "web", "data_1": {"user": "ana"}},
        [{"source": "web", "type": "chat", "data": {"a": 1}}],
    )
    expected = execute(scen, SESSION_REF, case)
    assert expected.status == "ok", expected.error
    # 400 bodies of 1 MB (just under the per-request cap): stored in the harness, as before, they
    # grew it by hundreds of MB. Errors are ignored, as a hostile program would.
    flood = (
        "body = b'{\"data\": {\"x\": \"' + b'a' * ((1 << 20) - 64) + b'\"}}'\n"
        "codes = []\n"
        "for _ in range(400):\n"
        "    try:\n"
        "        codes.append(requests.post(f'{BASE_URL}/api/sessions/web/chat', data=body,\n"
        "                                   headers={'Content-Type': 'application/json'}).status_code)\n"
        "    except Exception as e:\n"
        "        codes.append(type(e).__name__)\n"
        "result = codes[:20]\n"
    )
    rss_before = rss_bytes()
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = execute(scen, flood, case)
    grown = rss_bytes() - rss_before
    maxrss_grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - maxrss_before
    assert out.status == "runtime_error", (out.status, out.error, out.result)
    assert out.error.startswith("session service: ") and "quota of 4,194,304 bytes" in out.error, out.error
    assert judge(scen, expected, out)[0] == "runtime"
    assert grown < 48 * MB and maxrss_grown < 48 * MB, (grown, maxrss_grown)  # was +613 MB and +956 MB
    # the next sample gets a fresh, healthy service
    again = execute(scen, SESSION_REF, case)
    assert judge(scen, expected, again) == ("pass", None)


def test_the_service_is_another_process_with_capped_threads(tmp_path):
    with SessionService(unix_path=str(tmp_path / "s.sock"), max_connections=8, socket_timeout=2) as svc:
        harness_threads = threading.active_count()
        socks = []
        for _ in range(100):
            s = socket.socket(socket.AF_UNIX)
            s.connect(svc.socket_path)
            socks.append(s)
        # the service accepts the connections at its own pace: sample until the cap is reached (a
        # busy machine may need many samples), and check it is never exceeded on the way
        peak = 0
        for _ in range(2000):
            peak = max(peak, svc.stats()["threads"])
            if peak >= 10:
                break
            time.sleep(0.01)
        peak = max([peak] + [svc.stats()["threads"] for _ in range(5)])
        for s in socks:
            s.close()
        assert threading.active_count() == harness_threads  # no connection thread in the harness
        assert 8 <= peak - 2 <= 8, peak  # the serve loop, the control loop and 8 connection threads
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(10)
        c.connect(svc.socket_path)
        c.sendall(b"GET /api/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := c.recv(65536):
            reply += chunk
        c.close()
        assert reply.startswith(b"HTTP/1.1 200")


def test_services_started_from_many_threads_at_once_are_separate():
    errors: list[BaseException] = []
    seen: dict[int, tuple[int, list]] = {}

    def worker(n: int) -> None:
        try:
            with SessionService() as svc:
                svc.reset([{"source": "s", "type": "t", "data": {"n": n}}])
                r = requests.post(f"{svc.url}/api/sessions/s/t", json={"data": {"w": n}}, timeout=60)
                assert r.status_code == 201 and r.json()["id"] == 2, r.text
                seen[n] = (svc.stats()["pid"], [row["data"] for row in svc.snapshot()])
        except BaseException as e:  # surfaced below: a thread's assert would vanish otherwise
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors[:3]
    assert {n: data for n, (_pid, data) in seen.items()} == {n: [{"n": n}, {"w": n}] for n in range(12)}
    assert len({pid for pid, _ in seen.values()}) == 12 and os.getpid() not in {
        pid for pid, _ in seen.values()
    }


def test_byte_quota_is_a_413_then_the_runs_error_and_reset_starts_a_new_run():
    with SessionService(quotas=Quotas(max_total_bytes=200_000)) as svc:
        url = f"{svc.url}/api/sessions/s/t"
        pid = svc.stats()["pid"]
        assert requests.post(url, json={"data": {"x": "a" * 100_000}}, timeout=30).status_code == 201
        r = requests.post(url, json={"data": {"x": "b" * 150_000}}, timeout=30)
        assert r.status_code == 413 and "quota of 200,000 bytes" in r.json()["error"]
        # from now on nothing is read: a new connection is closed without an answer
        with pytest.raises(requests.ConnectionError):
            requests.post(url, json={"data": {}}, timeout=30)
        with pytest.raises(ServiceLimitError, match=r"^session service: .*quota of 200,000 bytes"):
            svc.snapshot()
        with pytest.raises(ServiceLimitError, match="quota"):
            svc.request_log()
        svc.reset([{"source": "s", "type": "t", "data": {"kept": 1}}])
        assert svc.stats()["pid"] == pid  # a quota leaves a sound process: it is kept
        assert requests.post(url, json={"data": {"y": 1}}, timeout=30).status_code == 201
        assert [row["data"] for row in svc.snapshot()] == [{"kept": 1}, {"y": 1}]
        assert svc.request_log() == [("POST", "/api/sessions/s/t", 201)]


def test_discarded_bodies_count_against_the_quota():
    """A body refused for its size (413) is still read off the socket so the client sees the
    answer: those bytes count too, so refused requests cannot go on for ever either."""
    with SessionService(max_body=1000, quotas=Quotas(max_total_bytes=300_000)) as svc:
        url = f"{svc.url}/api/sessions/s/t"
        statuses = []
        for _ in range(10):
            try:
                statuses.append(requests.post(url, data=b"x" * 100_000, timeout=30).status_code)
            except requests.ConnectionError:
                statuses.append("closed")
        assert statuses[0] == 413 and statuses[-1] == "closed", statuses
        with pytest.raises(ServiceLimitError, match="quota of 300,000 bytes"):
            svc.snapshot()


def test_request_count_quota():
    with SessionService(quotas=Quotas(max_requests=5)) as svc, requests.Session() as client:
        for _ in range(5):
            assert client.get(f"{svc.url}/health", timeout=30).status_code == 200
        assert svc.snapshot() == []
        with pytest.raises(requests.RequestException):
            for _ in range(3):
                client.get(f"{svc.url}/health", timeout=30)
        with pytest.raises(ServiceLimitError, match="more than 5 requests"):
            svc.snapshot()


@pytest.fixture
def fresh_host():
    """A new forking host for the test: one that imported only the session service's modules. A
    host that also started a spec mock has imported far more (specs, jsonschema, RE2), and its
    children start too large for the tight memory limit the test sets."""
    from callbench.services import isolation

    with isolation._host_lock:
        if isolation._host is not None and isolation._host.pid == os.getpid():
            isolation._host.stop()
        isolation._host = None


def test_memory_limit_breach_is_the_runs_error(fresh_host):
    # The child starts at about 35 MB of address space under a limit (its malloc arenas shrink to
    # fit); one 1 MB body of empty lists is over 24 MB of objects once parsed, and its peak is
    # about 55 MB above the start, so with 64 MB the service runs out of memory on it.
    body = b'{"data": {"x": [' + b"[]," * 340_000 + b"[]]}}"
    assert len(body) < 1 << 20
    with SessionService(quotas=Quotas(memory_mb=64)) as svc:
        pid = svc.stats()["pid"]
        try:
            r = requests.post(f"{svc.url}/api/sessions/s/t", data=body, timeout=120)
            assert r.status_code == 503 and "out of memory" in r.json()["error"], r.text[:200]
        except requests.ConnectionError:
            pass  # the process ended (a limit met outside Python's allocator)
        with pytest.raises(
            ServiceLimitError,
            match=r"^session service: (the service ran out of memory|the service process ended)",
        ):
            svc.snapshot()
        svc.reset()  # a fresh process after running out of memory (the old one may still be dying)
        assert svc.stats()["pid"] != pid
        assert requests.post(f"{svc.url}/api/sessions/s/t", json={"data": {}}, timeout=30).status_code == 201
        assert len(svc.snapshot()) == 1


def test_a_reset_replaces_a_process_that_ran_out_of_memory_unobserved(fresh_host):
    """Nothing asked the service about its state after it ran out of memory: the reset itself
    learns it (its reply says so) and starts a fresh process."""
    body = b'{"data": {"x": [' + b"[]," * 340_000 + b"[]]}}"
    with SessionService(quotas=Quotas(memory_mb=64)) as svc:
        pid = svc.stats()["pid"]
        try:
            requests.post(f"{svc.url}/api/sessions/s/t", data=body, timeout=120)
        except requests.ConnectionError:
            pass
        svc.reset()
        assert svc.stats()["pid"] != pid
        assert requests.post(f"{svc.url}/api/sessions/s/t", json={"data": {}}, timeout=30).status_code == 201
        assert len(svc.snapshot()) == 1


def test_a_state_too_big_to_compare_is_the_runs_error():
    """Each JSON value read back costs the harness memory however short its text: the service
    counts them before sending the state."""
    with SessionService(quotas=Quotas(max_state_values=1000)) as svc:
        url = f"{svc.url}/api/sessions/s/t"
        assert requests.post(url, json={"data": {"x": list(range(900))}}, timeout=30).status_code == 201
        assert len(svc.snapshot()) == 1
        assert requests.post(url, json={"data": {"x": list(range(900))}}, timeout=30).status_code == 201
        with pytest.raises(ServiceLimitError, match="more than 1,000 values"):
            svc.snapshot()


def test_a_killed_service_is_the_runs_error_and_reset_replaces_it(tmp_path):
    with SessionService(unix_path=str(tmp_path / "s.sock")) as svc:
        svc.reset([{"source": "s", "type": "t", "data": {}}])
        os.kill(svc.stats()["pid"], signal.SIGKILL)
        with pytest.raises(ServiceLimitError, match="service process ended"):
            svc.snapshot()
        svc.reset([{"source": "s", "type": "t", "data": {"n": 2}}])  # same socket path, new process
        assert [row["data"] for row in svc.snapshot()] == [{"n": 2}]
        assert svc.stats()["pid"] != os.getpid()


def test_bodies_nested_deeper_than_the_harness_reads_are_400():
    with SessionService() as svc:
        url = f"{svc.url}/api/sessions/s/t"
        deep = {"x": 1}
        for _ in range(99):
            deep = {"d": deep}
        assert requests.post(url, json={"data": deep}, timeout=30).status_code == 201  # data 100 levels deep
        r = requests.post(url, json={"data": {"d": deep}}, timeout=30)
        assert r.status_code == 400 and "nested deeper than 100 levels" in r.json()["error"]
        assert len(svc.snapshot()) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("memory_mb", 10), ("max_total_bytes", -1), ("max_requests", 0), ("cpu_s", True)],
)
def test_bad_quotas_are_refused(field, value):
    with pytest.raises(ValueError, match=f"Quotas.{field} must be"):
        Quotas(**{field: value})


def test_service_kinds_are_registered_by_their_own_modules():
    """services/ names none of its users (issue 30: layers point down): each kind is registered by
    the module that defines it, and only callbench's own modules can be named (the host process
    imports the name it is sent)."""
    import callbench.mock.server  # noqa: F401 - registers "mock"
    from callbench.services import isolation

    assert isolation.KINDS["session"] == "callbench.tracks.stateful.services.session_server:_engine"
    assert isolation.KINDS["mock"] == "callbench.mock.server:_engine"
    source = Path(isolation.__file__).read_text(encoding="utf-8")
    named = set(re.findall(r"callbench\.[\w.]+:\w+", source)) - {"callbench.module:factory"}
    assert not named, named  # no user's factory is named there
    for bad in ("os:system", "callbench.x", "callbench.x:not an identifier", "subprocess:run"):
        with pytest.raises(ValueError, match="callbench.module:factory"):
            isolation.register_kind("evil", bad)
        assert not isolation._valid_target(bad)
    with pytest.raises(ValueError, match="no service factory"):
        isolation._factory("os:system")
    with pytest.raises(ValueError, match="unknown service kind 'evil'"):
        isolation.spawn("evil", {}, Quotas(), "evil service")
