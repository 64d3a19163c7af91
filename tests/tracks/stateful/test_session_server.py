"""The session service over real HTTP: CRUD, filters, checksums, resets, isolation, hostile clients."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading

import httpx
import pytest
import requests

from callbench.tracks.stateful.services.session_server import API_DOC, SessionService, checksum_of

# sha256sum of the bytes {"n":3,"name":"Ada","ok":true,"tags":["x","y"]} (computed with coreutils).
ADA = {"name": "Ada", "tags": ["x", "y"], "ok": True, "n": 3}
ADA_SHA256 = "a25762ac270ed0252c18643a9741cd4ac1091ca0bdf26560ce5e7dd8044440d9"
EMPTY_SHA256 = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

#: How long a client here waits for an answer: only a hung service reaches it, so a busy machine
#: never fails a test by being slow (no wall-clock limit, issue 28 item 7). A claim about a timeout
#: is checked by which side gave up, the other side's timeout being far longer.
WAIT = 120.0


@pytest.fixture
def svc():
    """Idle connections stay open long: a client off the CPU for a second between connecting and
    sending (or between two keep-alive requests, as with 50 client threads on a loaded machine)
    must not meet a short idle timeout (HTTP's idle-close race, seen as RemoteDisconnected). The
    idle timeout itself is tested with its own service."""
    with SessionService(socket_timeout=WAIT) as service:
        yield service


def _complete(reply: bytes) -> bool:
    """One whole HTTP reply: headers and the body its Content-Length announces (none for 1xx, 204)."""
    head, sep, body = reply.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = re.search(rb"\r\ncontent-length: *([0-9]+)", head, re.IGNORECASE)
    if length is None:
        return re.match(rb"HTTP/1\.[01] (1[0-9][0-9]|204|304) ", head) is not None
    return len(body) >= int(length.group(1))


def raw_exchange(port: int, payload: bytes, *, shut_write: bool = False) -> bytes:
    """Send raw bytes, read one whole reply (or everything until the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as conn:
        conn.sendall(payload)
        if shut_write:
            conn.shutdown(socket.SHUT_WR)
        reply = b""
        while not _complete(reply):
            chunk = conn.recv(65536)  # TimeoutError after WAIT: a hung service fails the test
            if not chunk:
                break
            reply += chunk
    return reply


def status_of(reply: bytes) -> int:
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", reply)
    assert match, reply[:200]
    return int(match.group(1))


# -- CRUD ---------------------------------------------------------------------------------


def test_crud_with_requests(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    r = requests.post(base, json={"data": {"items": 1}}, timeout=WAIT)
    assert r.status_code == 201
    created = r.json()
    assert created == {
        "id": 1,
        "source": "web",
        "type": "cart",
        "checksum": checksum_of({"items": 1}),
        "data": {"items": 1},
    }
    assert r.headers["Location"] == "/api/sessions/web/cart/1"
    assert requests.post(base, json={"data": {}}, timeout=WAIT).json()["id"] == 2

    assert requests.get(f"{base}/1", timeout=WAIT).json() == created
    assert [s["id"] for s in requests.get(base, timeout=WAIT).json()] == [1, 2]

    r = requests.put(f"{base}/1", json={"data": {"owner": "bo"}}, timeout=WAIT)
    assert r.status_code == 200 and r.json()["data"] == {"owner": "bo"}
    r = requests.patch(f"{base}/1", json={"data": {"items": 5, "owner": None}}, timeout=WAIT)
    assert r.status_code == 200
    assert r.json()["data"] == {"items": 5, "owner": None}
    assert r.json()["checksum"] == checksum_of({"items": 5, "owner": None})

    r = requests.delete(f"{base}/1", timeout=WAIT)
    assert r.status_code == 204 and r.content == b""
    assert requests.get(f"{base}/1", timeout=WAIT).status_code == 404
    assert requests.delete(f"{base}/1", timeout=WAIT).status_code == 404
    assert requests.put(f"{base}/1", json={"data": {}}, timeout=WAIT).status_code == 404
    # Ids are never reused, even after deleting the newest session.
    requests.delete(f"{base}/2", timeout=WAIT)
    assert requests.post(base, json={"data": {}}, timeout=WAIT).json()["id"] == 3
    assert [s["id"] for s in svc.snapshot()] == [3]


def test_crud_with_httpx(svc):
    with httpx.Client(base_url=svc.url, timeout=WAIT) as client:
        r = client.post("/api/sessions/app/profile", json={"data": {"name": "Ada"}})
        assert r.status_code == 201
        sid = r.json()["id"]
        assert client.get(f"/api/sessions/app/profile/{sid}").json()["data"] == {"name": "Ada"}
        assert client.patch(f"/api/sessions/app/profile/{sid}", json={"data": {"age": 36}}).json()["data"] == {
            "name": "Ada",
            "age": 36,
        }
        assert client.put(f"/api/sessions/app/profile/{sid}", json={"data": {"x": 1}}).json()["data"] == {"x": 1}
        assert client.delete(f"/api/sessions/app/profile/{sid}").status_code == 204
        assert client.get("/api/sessions/app/profile").json() == []
        assert client.get("/health").json() == {"status": "ok"}


def test_read_only_keys_in_the_body_are_ignored(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    created = requests.post(base, json={"data": {"a": 1}}, timeout=WAIT).json()
    echoed = {**created, "id": 99, "checksum": "stale", "data": {"a": 2}}
    r = requests.put(f"{base}/1", json=echoed, timeout=WAIT)
    assert r.status_code == 200
    assert r.json() == {**created, "checksum": checksum_of({"a": 2}), "data": {"a": 2}}


def test_sessions_are_scoped_by_source_and_type(svc):
    requests.post(f"{svc.url}/api/sessions/web/cart", json={"data": {}}, timeout=WAIT)
    requests.post(f"{svc.url}/api/sessions/web/order", json={"data": {}}, timeout=WAIT)
    assert requests.get(f"{svc.url}/api/sessions/web/order/1", timeout=WAIT).status_code == 404
    assert requests.get(f"{svc.url}/api/sessions/app/cart/1", timeout=WAIT).status_code == 404
    assert requests.delete(f"{svc.url}/api/sessions/web/order/1", timeout=WAIT).status_code == 404
    assert [s["id"] for s in requests.get(f"{svc.url}/api/sessions/web/order", timeout=WAIT).json()] == [2]
    assert [(s["id"], s["type"]) for s in requests.get(f"{svc.url}/api/sessions", timeout=WAIT).json()] == [
        (1, "cart"),
        (2, "order"),
    ]


def test_unicode_source_type_and_data(svc):
    data = {"名前": "Zoë 🚀", "lone": "\ud800"}  # a lone surrogate survives as a JSON escape
    r = requests.post(f"{svc.url}/api/sessions/ünï/类型", json={"data": data}, timeout=WAIT)
    assert r.status_code == 201, r.text
    assert r.json()["source"] == "ünï" and r.json()["type"] == "类型"
    assert r.json()["data"] == data and r.json()["checksum"] == checksum_of(data)
    # The same path with raw UTF-8 bytes in the request line instead of percent-escapes.
    reply = raw_exchange(
        svc.port, "GET /api/sessions/ünï/类型/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    )
    assert status_of(reply) == 200
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["data"] == data
    assert svc.snapshot()[0]["data"] == data


# -- query filters --------------------------------------------------------------------------


def test_query_by_field(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    rows = [
        {"name": "a", "qty": 3, "done": True, "note": None, "tags": ["x"]},
        {"name": "b", "qty": "3", "done": False},
        {"name": "c", "qty": 3.0, "meta": {"k": 1, "j": 2}},
    ]
    for data in rows:
        requests.post(base, json={"data": data}, timeout=WAIT)

    def ids(**params):
        r = requests.get(base, params=params, timeout=WAIT)
        assert r.status_code == 200, r.text
        return [s["id"] for s in r.json()]

    assert ids() == [1, 2, 3]
    assert ids(**{"data.name": "b"}) == [2]
    assert ids(**{"data.qty": "3"}) == [1, 2]  # int 3 as JSON and the string "3" as is; 3.0 is "3.0"
    assert ids(**{"data.qty": "3.0"}) == [3]
    assert ids(**{"data.done": "true"}) == [1]
    assert ids(**{"data.note": "null"}) == [1]
    assert ids(**{"data.tags": '["x"]'}) == [1]
    assert ids(**{"data.meta": '{"j":2,"k":1}'}) == [3]
    assert ids(**{"data.missing": "null"}) == []
    assert ids(id="2") == [2]
    assert ids(checksum=checksum_of(rows[2])) == [3]
    assert ids(**{"data.qty": "3", "data.done": "false"}) == [2]
    r = requests.get(f"{svc.url}/api/sessions", params={"data.name": "c"}, timeout=WAIT)
    assert [s["id"] for s in r.json()] == [3]

    for bad in ({"limit": "1"}, {"id": "x"}, {"id": "0"}, {"data.": "1"}):
        r = requests.get(base, params=bad, timeout=WAIT)
        assert r.status_code == 400 and "error" in r.json(), bad


# -- checksum -----------------------------------------------------------------------------


def test_checksum_is_sha256_of_canonical_json(svc):
    assert checksum_of(ADA) == ADA_SHA256
    r = requests.post(f"{svc.url}/api/sessions/s/t", json={"data": ADA}, timeout=WAIT)
    assert r.json()["checksum"] == ADA_SHA256
    assert list(r.json()["data"]) == ["n", "name", "ok", "tags"]  # keys come back sorted
    assert requests.post(f"{svc.url}/api/sessions/s/t", json={"data": {}}, timeout=WAIT).json()["checksum"] == EMPTY_SHA256


# -- reset, snapshot, log, isolation ----------------------------------------------------------


def test_reset_restarts_ids_and_clears_state(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    for _ in range(3):
        requests.post(base, json={"data": {}}, timeout=WAIT)
    svc.reset()
    assert svc.snapshot() == [] and svc.request_log() == []
    assert requests.post(base, json={"data": {}}, timeout=WAIT).json()["id"] == 1

    svc.reset([{"source": "web", "type": "cart", "data": ADA}, {"source": "app", "type": "user", "data": {}}])
    assert svc.snapshot() == [
        {"id": 1, "source": "web", "type": "cart", "checksum": ADA_SHA256, "data": ADA},
        {"id": 2, "source": "app", "type": "user", "checksum": EMPTY_SHA256, "data": {}},
    ]
    assert requests.post(base, json={"data": {}}, timeout=WAIT).json()["id"] == 3
    assert svc.request_log() == [("POST", "/api/sessions/web/cart", 201)]


def test_reset_of_a_snapshot_restores_it_exactly(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    for n in range(4):
        requests.post(base, json={"data": {"n": n}}, timeout=WAIT)
    requests.delete(f"{base}/2", timeout=WAIT)
    requests.delete(f"{base}/4", timeout=WAIT)
    state = svc.snapshot()
    svc.reset()
    svc.reset(state)
    assert svc.snapshot() == state
    assert requests.post(base, json={"data": {}}, timeout=WAIT).json()["id"] == 4


@pytest.mark.parametrize(
    "seeds",
    [
        [{"source": "s", "type": "t"}],
        [{"source": "s", "type": "t", "data": [1]}],
        [{"source": "", "type": "t", "data": {}}],
        [{"source": "..", "type": "t", "data": {}}],
        [{"source": "s", "type": "t", "data": {}, "extra": 1}],
        [{"source": "s", "type": "t", "data": {1: "int key"}}],
        [{"source": "s", "type": "t", "data": {"x": float("nan")}}],
        [{"source": "s", "type": "t", "data": {}, "checksum": "0" * 64}],
        [{"source": "s", "type": "t", "data": {}, "id": 2}, {"source": "s", "type": "t", "data": {}, "id": 2}],
    ],
)
def test_invalid_seeds_raise_and_leave_state_alone(svc, seeds):
    svc.reset([{"source": "keep", "type": "me", "data": {"a": 1}}])
    before = svc.snapshot()
    with pytest.raises(ValueError):
        svc.reset(seeds)
    assert svc.snapshot() == before


def test_request_log_counts_writes(svc):
    base = f"{svc.url}/api/sessions/web/cart"
    requests.post(base, json={"data": {}}, timeout=WAIT)
    requests.get(base, params={"data.x": "1"}, timeout=WAIT)
    requests.patch(f"{base}/1", json={"data": {"x": 1}}, timeout=WAIT)
    requests.delete(f"{base}/7", timeout=WAIT)
    assert svc.request_log() == [
        ("POST", "/api/sessions/web/cart", 201),
        ("GET", "/api/sessions/web/cart?data.x=1", 200),
        ("PATCH", "/api/sessions/web/cart/1", 200),
        ("DELETE", "/api/sessions/web/cart/7", 404),
    ]
    assert sum(m in {"POST", "PUT", "PATCH", "DELETE"} for m, _, _ in svc.request_log()) == 3


def test_two_instances_are_isolated():
    with SessionService() as a, SessionService() as b:
        assert a.port != b.port
        requests.post(f"{a.url}/api/sessions/s/t", json={"data": {"who": "a"}}, timeout=WAIT)
        assert requests.get(f"{b.url}/api/sessions", timeout=WAIT).json() == []
        assert requests.post(f"{b.url}/api/sessions/s/t", json={"data": {}}, timeout=WAIT).json()["id"] == 1
        assert [s["data"] for s in a.snapshot()] == [{"who": "a"}]
        assert b.request_log() == [("GET", "/api/sessions", 200), ("POST", "/api/sessions/s/t", 201)]


def test_lifecycle_and_file_persistence(tmp_path):
    service = SessionService(tmp_path / "s.db")
    with pytest.raises(RuntimeError, match="start"):
        _ = service.url
    service.start()
    requests.post(f"{service.url}/api/sessions/s/t", json={"data": {"kept": True}}, timeout=WAIT)
    service.close()
    service.close()  # idempotent
    with pytest.raises(RuntimeError):
        service.snapshot()
    with SessionService(tmp_path / "s.db") as again:
        assert [s["data"] for s in again.snapshot()] == [{"kept": True}]


def test_close_wakes_idle_keepalive_connections():
    # the idle socket's own timeout (600 s) is far past the client's (WAIT, 120 s): an empty read says
    # close() woke it, on a busy machine as on an idle one (no wall-clock limit)
    service = SessionService(socket_timeout=600).start()
    conn = socket.create_connection(("127.0.0.1", service.port), timeout=WAIT)
    conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while not reply.endswith(b'{"status": "ok"}'):
        reply += conn.recv(65536)
    assert status_of(reply) == 200
    service.close()
    assert conn.recv(65536) == b""  # the server side went away instead of waiting 600 s
    conn.close()


# -- hostile clients ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{bad", "malformed JSON"),
        (b"", "empty body"),
        (b"[1, 2]", "JSON object"),
        (b'{"data": [1]}', '"data" must be a JSON object'),
        (b'{"data": "x"}', '"data" must be a JSON object'),
        (b'{"items": 1}', "unknown body key"),
        (b'{"other": 1, "data": {}}', "unknown body key"),
        (b"{}", 'lacks "data"'),
        (b'{"data": {"x": NaN}}', "NaN"),
        (b'{"data": {"x": 1e999999}}', "out of range"),
        (b'{"data": {"x": -Infinity}}', "Infinity"),
        (b'{"data": {"x": "\xff\xfe"}}', "malformed JSON"),
        (b'{"data": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "malformed JSON"),
    ],
)
def test_bad_bodies_are_400(svc, body, fragment):
    for method, url in (("POST", "/api/sessions/s/t"), ("PUT", "/api/sessions/s/t/1"), ("PATCH", "/api/sessions/s/t/1")):
        r = requests.request(method, svc.url + url, data=body, headers={"Content-Type": "application/json"}, timeout=WAIT)
        assert r.status_code == 400, (method, r.text)
        assert fragment in r.json()["error"]
    assert svc.snapshot() == []


def test_non_json_content_type_is_415_and_missing_one_is_read_as_json(svc):
    url = f"{svc.url}/api/sessions/s/t"
    r = requests.post(url, data={"data": "x"}, timeout=WAIT)  # form-encoded: a real bug in a client
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    assert requests.post(url, data='{"data": {}}', headers={"Content-Type": "text/plain"}, timeout=WAIT).status_code == 415
    ok = requests.post(url, data=b'{"data": {"a": 1}}', timeout=WAIT)  # no Content-Type at all
    assert ok.status_code == 201
    vendor = requests.post(url, data=b'{"data": {}}', headers={"Content-Type": "application/merge-patch+json"}, timeout=WAIT)
    assert vendor.status_code == 201


def test_huge_body_is_413_without_reading_it(svc):
    r = requests.post(f"{svc.url}/api/sessions/s/t", data=b"x" * (2 << 20), timeout=WAIT)
    assert r.status_code == 413 and "limit" in r.json()["error"]
    # Headers only: the reply comes although the announced body never does (a server that
    # waited for it would time the socket out instead: no 413)
    reply = raw_exchange(svc.port, b"POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
    assert status_of(reply) == 413
    # Expect: 100-continue gets the 413 instead of the go-ahead.
    reply = raw_exchange(
        svc.port,
        b"PUT /api/sessions/s/t/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\nExpect: 100-continue\r\n\r\n",
    )
    assert status_of(reply) == 413 and b"100 Continue" not in reply
    assert svc.snapshot() == []


def test_small_cap_is_respected():
    with SessionService(max_body=64) as small:
        assert requests.post(f"{small.url}/api/sessions/s/t", json={"data": {"x": "y" * 100}}, timeout=WAIT).status_code == 413
        assert requests.post(f"{small.url}/api/sessions/s/t", json={"data": {}}, timeout=WAIT).status_code == 201


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: -1\r\n",
        b"Content-Length: abc\r\n",
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Transfer-Encoding: chunked\r\n",
    ],
)
def test_bad_framing_headers(svc, headers):
    reply = raw_exchange(svc.port, b"POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert status_of(reply) in (400, 411)
    assert b'"error"' in reply


def test_wrong_method_is_405_with_allow(svc):
    requests.post(f"{svc.url}/api/sessions/s/t", json={"data": {}}, timeout=WAIT)
    cases = [
        ("DELETE", "/api/sessions/s/t", "GET, HEAD, POST"),
        ("PUT", "/api/sessions/s/t", "GET, HEAD, POST"),
        ("POST", "/api/sessions/s/t/1", "GET, HEAD, PUT, PATCH, DELETE"),
        ("POST", "/api/sessions", "GET, HEAD"),
        ("OPTIONS", "/health", "GET, HEAD"),
        ("BREW", "/api/sessions/s/t/1", "GET, HEAD, PUT, PATCH, DELETE"),
    ]
    for method, path, allow in cases:
        r = requests.request(method, svc.url + path, timeout=WAIT)
        assert r.status_code == 405, (method, path)
        assert r.headers["Allow"] == allow and method in r.json()["error"]
    assert len(svc.snapshot()) == 1


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/", 404),
        ("/api", 404),
        ("/api/session/s/t", 404),
        ("/api/sessions/s", 404),
        ("/api/sessions/s/t/1/extra", 404),
        ("/etc/passwd", 404),
        ("/api/sessions/s/t/..%2F..%2Fetc", 400),
        ("/api/sessions/s/t/-1", 400),
        ("/api/sessions/s/t/0", 400),
        ("/api/sessions/s/t/1.5", 400),
        ("/api/sessions/s/t/99999999999999999999", 400),
        ("/api/sessions/s/t/%D9%A3", 400),  # an Arabic-Indic digit is not an id
        ("/api/sessions/%2E%2E/t", 400),
        ("/api/sessions/a%2Fb/t", 400),
        ("/api/sessions/s/%00", 400),
        ("/api/sessions/s/%FF", 400),
        ("/api/sessions/s/t/42", 404),
    ],
)
def test_unknown_or_hostile_paths(svc, path, status):
    reply = raw_exchange(svc.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    assert status_of(reply) == status, reply
    assert b'{"error": ' in reply


def test_garbage_request_line_gets_a_json_error(svc):
    reply = raw_exchange(svc.port, b"GARBAGE\r\n\r\n")
    assert status_of(reply) == 400 and b'"error"' in reply


def test_concurrent_creates_lose_nothing(svc):
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with requests.Session() as session:
                for k in range(20):
                    r = session.post(f"{svc.url}/api/sessions/load/t{n % 3}", json={"data": {"w": n, "k": k}}, timeout=WAIT)
                    assert r.status_code == 201, r.text
        except BaseException as e:  # surfaced below: a thread's assert would vanish otherwise
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors[:3]
    rows = svc.snapshot()
    assert len(rows) == 1000
    assert [r["id"] for r in rows] == list(range(1, 1001))
    assert sorted((r["data"]["w"], r["data"]["k"]) for r in rows) == [(w, k) for w in range(50) for k in range(20)]
    assert all(r["checksum"] == checksum_of(r["data"]) and r["type"] == f"t{r['data']['w'] % 3}" for r in rows)


def test_concurrent_patches_are_serialized(svc):
    svc.reset([{"source": "s", "type": "t", "data": {}}])
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with requests.Session() as session:
                for k in range(10):
                    r = session.patch(f"{svc.url}/api/sessions/s/t/1", json={"data": {f"w{n}_{k}": k}}, timeout=WAIT)
                    assert r.status_code == 200, r.text
        except BaseException as e:  # surfaced below: a thread's assert would vanish otherwise
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors[:3]
    (row,) = svc.snapshot()
    assert len(row["data"]) == 200  # a read-modify-write race would drop keys


def test_half_requests_and_disconnects_do_not_hang_the_server(svc):
    # Half a request line, half the headers, half a body: each client then goes away.
    for partial in (
        b"POST /api/sess",
        b"POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\nContent-Le",
        b'POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"data": {',
    ):
        with socket.create_connection(("127.0.0.1", svc.port)) as conn:
            conn.sendall(partial)
    # A half body whose sender stops writing still gets a clear answer.
    reply = raw_exchange(
        svc.port,
        b'POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"data": {',
        shut_write=True,
    )
    assert status_of(reply) == 400 and b"incomplete body" in reply
    # A client that disconnects before reading its response.
    with socket.create_connection(("127.0.0.1", svc.port)) as conn:
        conn.sendall(b'POST /api/sessions/s/t HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{"data": {}}')
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close
    assert requests.get(f"{svc.url}/health", timeout=WAIT).status_code == 200
    assert all(s["data"] == {} for s in svc.snapshot())  # only the complete POST may have landed


def _idle_clients(port: int) -> list[socket.socket]:
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    idle[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # slowloris: headers never finish
    return idle


def test_idle_connections_do_not_block_others():
    # the idle sockets' timeout (600 s) is far past the request's (WAIT, 120 s): an answer says the
    # server serves beside them, not after them (no wall-clock limit: a busy machine passes)
    with SessionService(socket_timeout=600) as service:
        idle = _idle_clients(service.port)
        try:
            assert requests.get(f"{service.url}/health", timeout=WAIT).status_code == 200
        finally:
            for conn in idle:
                conn.close()


def test_idle_connections_time_out():
    with SessionService(socket_timeout=1.0) as service:
        idle = _idle_clients(service.port)
        try:
            for conn in idle:
                conn.settimeout(WAIT)  # far past the service's 1 s: an empty read is the server closing
                assert conn.recv(1024) == b""
        finally:
            for conn in idle:
                conn.close()


# -- documentation and CLI ---------------------------------------------------------------------


def test_api_doc_example_runs_against_the_service(svc):
    code = re.search(r"```python\n(.*?)```", API_DOC, re.S).group(1)
    code = code.replace('BASE_URL = "http://127.0.0.1:8000"', f"BASE_URL = {svc.url!r}")
    scope: dict = {}
    exec(compile(code, "API_DOC", "exec"), scope)
    assert scope["session"]["id"] == 1
    assert [c["data"] for c in scope["carts"]] == [{"items": 2}]
    for word in ("GET", "POST", "PUT", "PATCH", "DELETE", "/health", "data.<key>", "413", "415", "405", "sha256"):
        assert word in API_DOC


def test_cli_serves_until_interrupted():
    proc = subprocess.Popen(
        [sys.executable, "-m", "callbench.tracks.stateful.services.session_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        assert requests.get(f"{url}/health", timeout=WAIT).json() == {"status": "ok"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
