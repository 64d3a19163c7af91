"""The spec mock runs outside the harness process with the session service's per-run quotas
(issue 28, item 4): a sample flooding it breaks its own mock (its verdict), never the harness's
memory; the spec reaches the mock's process as its file, the state model as JSON."""

from __future__ import annotations

import os
import resource
import signal
import threading
from pathlib import Path

import pytest
import requests

from callbench.mock import MockService
from callbench.services.isolation import Quotas, ServiceLimitError
from callbench.specs import build_spec, load_spec
from callbench.statemodel import infer_model
from callbench.tracks.stateful.execution import Case, execute, judge
from callbench.tracks.stateful.spec_scenario import build_scenario

from .test_session_isolation import MB, rss_bytes

PETSTORE = Path(__file__).resolve().parents[2] / "fixtures" / "one_spec" / "petstore.yaml"
REF = (
    'pet = requests.post(f"{BASE_URL}/pets", json={"name": "rex"}).json()\n'
    "got = requests.get(f\"{BASE_URL}/pets/{pet['id']}\").json()\n"
    "result = [pet['id'], got['name']]\n"
)


@pytest.fixture(scope="module")
def spec():
    return load_spec(PETSTORE)


@pytest.fixture(scope="module")
def scenario(spec):
    return build_scenario(spec, infer_model(spec), name="petstore")


def test_a_flood_of_1mb_posts_is_the_samples_verdict_and_spares_the_harness(scenario):
    case = Case("base", {}, 7)
    expected = execute(scenario, REF, case)
    assert expected.status == "ok", expected.error
    # 400 bodies of 1 MB (just under the mock's per-request cap), errors ignored as a hostile
    # program would: served in the harness, every body was read and parsed there.
    flood = (
        'body = b\'{"name": "x", "tag": "\' + b\'a\' * ((1 << 20) - 64) + b\'"}\'\n'
        "codes = []\n"
        "for _ in range(400):\n"
        "    try:\n"
        "        codes.append(requests.post(f'{BASE_URL}/pets', data=body,\n"
        "                                   headers={'Content-Type': 'application/json'}).status_code)\n"
        "    except Exception as e:\n"
        "        codes.append(type(e).__name__)\n"
        "result = codes[:20]\n"
    )
    rss_before = rss_bytes()
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = execute(scenario, flood, case)
    grown = rss_bytes() - rss_before
    maxrss_grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - maxrss_before
    assert out.status == "runtime_error", (out.status, out.error, out.result)
    assert out.error.startswith("spec mock: ") and "quota of 4,194,304 bytes" in out.error, out.error
    assert judge(scenario, expected, out)[0] == "runtime"
    assert grown < 48 * MB and maxrss_grown < 48 * MB, (grown, maxrss_grown)
    # the next sample gets a fresh, healthy mock
    again = execute(scenario, REF, case)
    assert judge(scenario, expected, again) == ("pass", None)


def test_the_mock_is_another_process_and_answers_as_before(spec, tmp_path):
    harness_threads = threading.active_count()
    with MockService(spec, seed=3, unix_path=str(tmp_path / "m.sock")) as a, MockService(spec, seed=3) as b:
        assert a.socket_path == str(tmp_path / "m.sock")
        r = requests.post(f"{b.url}/pets", json={"name": "rex"}, timeout=60)
        assert r.status_code == 201, r.text
        pids = {a.stats()["pid"], b.stats()["pid"]}
        assert len(pids) == 2 and os.getpid() not in pids
        assert threading.active_count() == harness_threads  # no server thread in the harness
        assert [p["name"] for p in b.snapshot()["pet"]] == ["rex"] and a.snapshot() == {}
        assert b.request_log() == [("POST", "/pets", 201)]
        assert b.stats()["received"] > 0
    # the same seed and requests give the same answers from another process
    with MockService(spec, seed=3) as c:
        assert requests.post(f"{c.url}/pets", json={"name": "rex"}, timeout=60).json() == r.json()


def test_request_quota_is_the_runs_error(spec):
    with MockService(spec, quotas=Quotas(max_requests=3)) as svc, requests.Session() as client:
        for _ in range(3):
            assert client.get(f"{svc.url}/pets", timeout=60).status_code == 200
        assert svc.snapshot() == {}
        with pytest.raises(requests.RequestException):
            for _ in range(3):
                client.get(f"{svc.url}/pets", timeout=60)
        with pytest.raises(ServiceLimitError, match=r"^spec mock: more than 3 requests"):
            svc.snapshot()
        with pytest.raises(ServiceLimitError, match="more than 3 requests"):
            svc.request_log()


def test_a_state_too_big_to_compare_is_the_runs_error(spec):
    with MockService(spec, quotas=Quotas(max_state_values=40)) as svc:
        for n in range(3):
            assert requests.post(f"{svc.url}/pets", json={"name": f"p{n}"}, timeout=60).status_code == 201
        assert len(svc.snapshot()["pet"]) == 3
        for n in range(20):
            requests.post(f"{svc.url}/pets", json={"name": f"q{n}"}, timeout=60)
        with pytest.raises(ServiceLimitError, match=r"^spec mock: the stored state: more than 40 values"):
            svc.snapshot()


def test_a_killed_mock_is_the_runs_error(spec):
    with MockService(spec) as svc:
        os.kill(svc.stats()["pid"], signal.SIGKILL)
        with pytest.raises(ServiceLimitError, match=r"^spec mock: the service process ended"):
            svc.snapshot()


def test_a_spec_not_from_a_file_is_refused():
    doc = PETSTORE.read_text(encoding="utf-8")
    import yaml

    spec = build_spec(yaml.safe_load(doc), Path("/nowhere/petstore.yaml"))
    with pytest.raises(ValueError, match="is not a file: the mock runs in its own process"):
        MockService(spec)


def test_a_spec_file_changed_since_loading_is_refused(tmp_path):
    f = tmp_path / "pets.yaml"
    f.write_text(PETSTORE.read_text(encoding="utf-8"), encoding="utf-8")
    spec = load_spec(f)
    with MockService(spec) as svc:  # unchanged: served
        assert requests.get(f"{svc.url}/pets", timeout=60).status_code == 200
    text = PETSTORE.read_text(encoding="utf-8").replace("/pets/findByStatus", "/pets/findByState")
    assert text != PETSTORE.read_text(encoding="utf-8")
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="has changed since this spec was loaded"):
        MockService(spec)


def test_a_model_larger_than_the_hosts_message_reaches_the_mock(spec):
    """The state model goes to the mock's process as its start payload, written to the process
    itself: one far larger than the host's message (60,000 bytes) arrives whole."""
    model = infer_model(spec).model_copy(update={"title": "t" * 300_000})
    with MockService(spec, model) as svc:
        assert requests.post(f"{svc.url}/pets", json={"name": "rex"}, timeout=60).status_code == 201
        assert [p["name"] for p in svc.snapshot()["pet"]] == ["rex"]


def test_a_model_the_mock_cannot_read_is_a_one_line_start_error(spec):
    bad = infer_model(spec).model_copy(update={"version": 2})  # unvalidated: only the mock's process reads it
    with pytest.raises(
        ValueError, match=r"^spec mock: cannot serve .*petstore\.yaml: ValidationError: "
    ) as err:
        MockService(spec, bad).start()
    assert "\n" not in str(err.value)


def test_the_forking_host_holds_few_specs(tmp_path, monkeypatch):
    """Every mock process inherits the specs the host holds parsed: a fifth spec drops the others,
    so a run over many specs does not grow every child towards its memory limit."""
    from callbench.mock import server
    from callbench.specs.openapi import _CACHE

    monkeypatch.setattr(server, "_HOST_SPECS", set())
    paths = []
    for n in range(5):
        f = tmp_path / f"pets{n}.yaml"
        f.write_text(PETSTORE.read_text(encoding="utf-8"), encoding="utf-8")
        paths.append(str(f.resolve()))
        server._prepare({"spec": paths[-1]})
    held = {key[0] for key in _CACHE}
    assert server._HOST_SPECS == {paths[4]} and paths[4] in held
    assert not held & set(paths[:4])
