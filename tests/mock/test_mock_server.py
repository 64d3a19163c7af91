"""The stateful mock server (issue 16, part 2): validation errors, state consistency, responses
that conform to the spec, determinism per seed, hostile clients, and ``serve mock``."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from pathlib import Path

import pytest
import requests
from typer.testing import CliRunner

from callbench.cli import app
from callbench.mock import MockService
from callbench.mock.validate import problem
from callbench.specs import load_spec
from callbench.statemodel.entity import success

PETSTORE = Path(__file__).resolve().parents[1] / "fixtures" / "one_spec" / "petstore.yaml"


@pytest.fixture(scope="module")
def spec():
    return load_spec(PETSTORE)


@pytest.fixture()
def mock(spec):
    with MockService(spec, seed=0, socket_timeout=0.5, max_body=4096) as m:
        yield m


def _conforms(spec, method, path, response):
    """The response body fits the schema of the operation's success status."""
    op = spec.operation(method, path)
    status, schema = success(op)
    assert response.status_code == int(status), response.text
    if schema is not None and response.status_code != 204:
        assert problem(response.json(), schema) is None, (method, path, response.text)


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "kw", "status", "needle"),
    [
        ("get", "/nowhere", {}, 404, "no operation matches"),
        ("put", "/pets", {}, 405, "allowed: GET, POST"),
        ("get", "/pets/abc", {}, 400, "path parameter 'petId'"),
        ("get", "/pets", {"params": {"limit": 0}}, 400, "query parameter 'limit'"),
        ("get", "/pets", {"params": {"colour": "red"}}, 400, "'colour' is not declared"),
        ("get", "/pets/findByStatus", {}, 400, "missing required query parameter 'status'"),
        ("get", "/pets/findByStatus", {"params": {"status": "lost"}}, 400, "is not one of"),
        ("post", "/pets", {}, 400, "missing request body"),
        ("post", "/pets", {"data": b"{not json", "headers": {"Content-Type": "application/json"}}, 400, "malformed JSON"),
        ("post", "/pets", {"data": b"[1, NaN]", "headers": {"Content-Type": "application/json"}}, 400, "malformed JSON"),
        ("post", "/pets", {"json": {"tag": "x"}}, 422, "'name' is a required property"),
        ("post", "/pets", {"json": {"name": 5}}, 422, "at /name"),
        ("post", "/pets", {"data": b"name=x", "headers": {"Content-Type": "text/plain"}}, 415, "not accepted"),
        ("post", "/store/orders", {"json": {"petId": 1, "quantity": 0}}, 422, "at /quantity"),
        ("get", "/pets/1", {}, 404, "no pet '1'"),
    ],
)
def test_bad_requests_get_a_4xx_with_the_reason(mock, method, path, kw, status, needle):
    r = requests.request(method, mock.url + path, timeout=5, **kw)
    assert r.status_code == status, r.text
    assert needle in r.json()["error"]
    if status == 405:
        assert r.headers["Allow"] == "GET, POST"


def test_server_prefix_and_form_bodies_are_accepted(mock):
    assert requests.get(mock.url + "/v1/pets", timeout=5).status_code == 200  # the spec's server path
    r = requests.post(mock.url + "/pets", json={"name": "Rex"}, timeout=5)
    assert r.status_code == 201


# -- state ---------------------------------------------------------------------------------------
def test_create_read_update_list_delete(mock, spec):
    u = mock.url
    r = requests.post(u + "/pets", json={"name": "Rex", "status": "available"}, timeout=5)
    _conforms(spec, "post", "/pets", r)
    rex = r.json()
    assert rex["id"] == 1 and rex["name"] == "Rex" and rex["status"] == "available"
    tom = requests.post(u + "/pets", json={"name": "Tom", "status": "sold"}, timeout=5).json()
    assert tom["id"] == 2
    r = requests.get(u + "/pets/1", timeout=5)
    _conforms(spec, "get", "/pets/{petId}", r)
    assert r.json() == rex
    r = requests.patch(u + "/pets/1", json={"tag": "dog"}, timeout=5)
    _conforms(spec, "patch", "/pets/{petId}", r)
    assert r.json() == {**rex, "tag": "dog"} and requests.get(u + "/pets/1", timeout=5).json()["tag"] == "dog"
    r = requests.get(u + "/pets", timeout=5)
    _conforms(spec, "get", "/pets", r)
    assert [p["id"] for p in r.json()] == [1, 2]
    r = requests.get(u + "/pets/findByStatus", params={"status": "sold"}, timeout=5)
    assert [p["name"] for p in r.json()] == ["Tom"]
    r = requests.delete(u + "/pets/1", timeout=5)
    assert r.status_code == 204 and r.content == b""
    assert requests.get(u + "/pets/1", timeout=5).status_code == 404
    assert requests.delete(u + "/pets/1", timeout=5).status_code == 404
    assert [p["id"] for p in requests.get(u + "/pets", timeout=5).json()] == [2]
    assert requests.post(u + "/pets", json={"name": "Kit"}, timeout=5).json()["id"] == 3  # ids are never reused
    assert [p["name"] for p in mock.snapshot()["pet"]] == ["Tom", "Kit"]


def test_client_chosen_ids_and_other_resources(mock, spec):
    u = mock.url
    r = requests.post(u + "/users", json={"username": "ana", "email": "ana@example.com"}, timeout=5)
    _conforms(spec, "post", "/users", r)
    assert requests.post(u + "/users", json={"username": "ana"}, timeout=5).status_code == 409
    r = requests.get(u + "/users/ana", timeout=5)
    assert r.json()["email"] == "ana@example.com"
    assert requests.get(u + "/users/bob", timeout=5).status_code == 404
    r = requests.post(u + "/store/orders", json={"petId": 7, "quantity": 2}, timeout=5)
    _conforms(spec, "post", "/store/orders", r)
    order = r.json()
    assert isinstance(order["id"], str) and order["quantity"] == 2
    assert requests.get(u + f"/store/orders/{order['id']}", timeout=5).json() == order
    for method, path, url, kw in [
        ("get", "/store/inventory", "/store/inventory", {}),
        ("get", "/users/login", "/users/login", {"params": {"username": "ana", "password": "pw"}}),
    ]:
        _conforms(spec, method, path, requests.request(method, u + url, timeout=5, **kw))


def test_wrapped_entities_asana(wapii_specs):
    """Asana wraps bodies and responses in {"data": ...}; ids are string gids."""
    spec = wapii_specs["asana"]
    with MockService(spec, seed=3) as m:
        r = requests.post(m.url + "/projects", json={"data": {"name": "Launch"}}, timeout=5)
        _conforms(spec, "post", "/projects", r)
        project = r.json()["data"]
        assert project["name"] == "Launch" and isinstance(project["gid"], str)
        r = requests.post(m.url + f"/projects/{project['gid']}/sections", json={"data": {"name": "Todo"}}, timeout=5)
        _conforms(spec, "post", "/projects/{project_gid}/sections", r)
        section = r.json()["data"]
        r = requests.get(m.url + f"/sections/{section['gid']}", timeout=5)
        _conforms(spec, "get", "/sections/{section_gid}", r)
        assert r.json()["data"]["name"] == "Todo"
        r = requests.get(m.url + f"/projects/{project['gid']}/sections", timeout=5)
        assert [s["gid"] for s in r.json()["data"]] == [section["gid"]]
        assert requests.post(m.url + "/projects/nope/sections", json={"data": {"name": "x"}}, timeout=5).status_code == 404
        r = requests.put(m.url + f"/projects/{project['gid']}", json={"data": {"name": "Renamed"}}, timeout=5)
        _conforms(spec, "put", "/projects/{project_gid}", r)
        assert r.json()["data"]["name"] == "Renamed"
        r = requests.delete(m.url + f"/projects/{project['gid']}", timeout=5)
        _conforms(spec, "delete", "/projects/{project_gid}", r)
        assert requests.get(m.url + f"/projects/{project['gid']}", timeout=5).status_code == 404


# -- determinism -----------------------------------------------------------------------------------
def _session(spec, seed):
    with MockService(spec, seed=seed) as m:
        u = m.url
        out = [
            requests.post(u + "/pets", json={"name": "Rex"}, timeout=5).json(),
            requests.post(u + "/store/orders", json={"petId": 1, "quantity": 1}, timeout=5).json(),
            requests.get(u + "/store/inventory", timeout=5).json(),
            requests.get(u + "/users/login", params={"username": "a", "password": "b"}, timeout=5).json(),
        ]
        return out, m.snapshot()


def test_same_seed_same_responses_other_seed_other_values(spec):
    a, b, c = _session(spec, 0), _session(spec, 0), _session(spec, 1)
    assert a == b
    assert a[0][0]["id"] == c[0][0]["id"] == 1  # integer ids count, whatever the seed
    assert a[0][1]["id"] != c[0][1]["id"]  # string ids and synthesized fields follow the seed
    assert a[0][2:] != c[0][2:]


# -- hostile clients --------------------------------------------------------------------------------
def _raw(mock, data: bytes, read_timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", mock.port), timeout=read_timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError):
            pass
        return b"".join(chunks)


def _alive(mock):
    assert requests.get(mock.url + "/pets", timeout=5).status_code == 200


def test_huge_body_is_413_before_it_is_read(mock):
    r = requests.post(mock.url + "/pets", data=b"x" * 100_000, headers={"Content-Type": "application/json"}, timeout=5)
    assert r.status_code == 413 and "over the limit" in r.json()["error"]
    reply = _raw(mock, b"POST /pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 413")
    _alive(mock)


def test_deeply_nested_json_is_a_400(mock):
    body = b"[" * 100_000 + b"]" * 100_000
    with MockService(mock.spec, seed=0, max_body=1 << 20) as big:
        r = requests.post(big.url + "/pets", data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]


def _closed_by_server(mock, data: bytes, client_timeout: float = 120.0) -> tuple[bytes, bool]:
    """(what came back, whether the server ended the connection) for ``data`` sent as it is;
    the client waits far longer than the server's socket timeout, so which side gave up says
    whether that timeout worked, on a busy machine as on an idle one."""
    with socket.create_connection(("127.0.0.1", mock.port), timeout=client_timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        except TimeoutError:
            return b"".join(chunks), False
        return b"".join(chunks), True


def test_partial_and_slow_requests_time_out_without_hurting_others(mock):
    reply, closed = _closed_by_server(
        mock, b"POST /pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na"
    )
    assert closed  # the server's socket timeout (0.5 s) ended it, not the client's
    assert b"HTTP/1.1 201" not in reply
    reply = _raw(mock, b"GET /pets HTTP/1.1\r\nHost: x\r\n")  # headers never finished
    assert b"HTTP/1.1 200" not in reply
    _alive(mock)


def test_garbage_and_non_utf8_requests(mock):
    assert _raw(mock, b"\x16\x03\x01garbage\r\n\r\n")[:12] in (b"HTTP/1.0 400", b"HTTP/1.1 400")
    # path traversal: dot segments are refused, not resolved (a client library would normalize them)
    reply = _raw(mock, b"GET /pets/1/../../users/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400") and b"'..'" in reply
    assert _raw(mock, b"GET /pets/\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 400")
    reply = _raw(mock, b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.startswith((b"HTTP/1.1 400", b"HTTP/1.1 404")) and b"root:" not in reply
    _alive(mock)


def test_many_connections_do_not_hang_the_server(spec):
    with MockService(spec, seed=0, socket_timeout=0.5, max_connections=8) as m:
        idle = [socket.create_connection(("127.0.0.1", m.port)) for _ in range(40)]
        try:
            results: list[int] = []

            def call(i):
                c = http.client.HTTPConnection("127.0.0.1", m.port, timeout=10)
                c.request("POST", "/pets", body=json.dumps({"name": f"p{i}"}), headers={"Content-Type": "application/json"})
                results.append(c.getresponse().status)
                c.close()

            threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(15)
            assert results == [201] * 20
            assert sorted(p["id"] for p in m.snapshot()["pet"]) == list(range(1, 21))  # no lost or doubled rows
        finally:
            for s in idle:
                s.close()


# -- model overlay and CLI ---------------------------------------------------------------------------
def test_overlay_switches_an_operation_to_action(spec, tmp_path):
    from callbench.statemodel import load_model

    f = tmp_path / "m.yaml"
    f.write_text("operations:\n- op: DELETE /pets/{petId}\n  role: action\n  resource: pet\n  effect: none\n")
    with MockService(spec, load_model(spec, f)) as m:
        requests.post(m.url + "/pets", json={"name": "Rex"}, timeout=5)
        assert requests.delete(m.url + "/pets/1", timeout=5).status_code == 204
        assert requests.get(m.url + "/pets/1", timeout=5).status_code == 200  # an action changes nothing
        assert requests.delete(m.url + "/pets/9", timeout=5).status_code == 204  # and has no precondition now


def test_cli_serve_mock_errors_are_one_line(tmp_path, one_line_error):
    res = CliRunner().invoke(app, ["serve", "mock", "--spec", str(tmp_path / "none.yaml")])
    one_line_error(res, "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("operations:\n- op: GET /pets\n  role: lists\n")
    res = CliRunner().invoke(app, ["serve", "mock", "--spec", str(PETSTORE), "--model", str(bad), "--port", "0"])
    one_line_error(res, "bad.yaml:3:", "operations.0.role")
    res = CliRunner().invoke(app, ["serve", "mock", "--spec", str(PETSTORE), "--port", "70000"])
    one_line_error(res, "--port 70000")
