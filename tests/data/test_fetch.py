import hashlib

import httpx
import pytest

from callbench.data.fetch import DATASETS, fetch_data, is_complete
from callbench.errors import DataError


def _transport(root, *, corrupt=None, fail_first=0):
    calls = {"n": 0}
    base = DATASETS["wapiibench"].base_url

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] <= fail_first:
            return httpx.Response(503)
        rel = str(request.url).removeprefix(base + "/")
        body = (root / "wapiibench" / rel).read_bytes()
        if corrupt and rel == corrupt:
            body = body + b" "
        return httpx.Response(200, content=body)

    return httpx.MockTransport(handler), calls


def test_fetch_downloads_and_verifies(tmp_path, data_root):
    transport, calls = _transport(data_root, fail_first=1)
    with httpx.Client(transport=transport) as client:
        dest = fetch_data("wapiibench", root=tmp_path, client=client)
    assert dest == tmp_path / "wapiibench"
    assert is_complete("wapiibench", tmp_path)
    n_files = len(DATASETS["wapiibench"].files)
    assert calls["n"] == n_files + 1  # one 503 retried
    # second fetch: everything present, nothing downloaded
    transport2, calls2 = _transport(data_root)
    with httpx.Client(transport=transport2) as client:
        fetch_data("wapiibench", root=tmp_path, client=client)
    assert calls2["n"] == 0


def test_checksum_mismatch_leaves_no_file(tmp_path, data_root):
    transport, _ = _transport(data_root, corrupt="openapi/real_world_specs/slack.yaml")
    with httpx.Client(transport=transport) as client, pytest.raises(DataError, match="slack.yaml: checksum mismatch"):
        fetch_data("wapiibench", root=tmp_path, client=client)
    assert not (tmp_path / "wapiibench/openapi/real_world_specs/slack.yaml").exists()
    assert not list((tmp_path / "wapiibench/openapi/real_world_specs").glob(".part-*"))


def test_fetch_from_local_mirror(tmp_path, data_root):
    fetch_data("wapiibench", root=tmp_path, mirror=data_root / "wapiibench")
    f = tmp_path / "wapiibench/data/synthetic/all/test_data_final.json"
    assert hashlib.sha256(f.read_bytes()).hexdigest() == DATASETS["wapiibench"].files[1].sha256


def test_unknown_dataset_and_offline_message(tmp_path):
    with pytest.raises(DataError, match="unknown dataset 'nope'"):
        fetch_data("nope", root=tmp_path)

    def offline(request):
        raise httpx.ConnectError("no network")

    with httpx.Client(transport=httpx.MockTransport(offline)) as client, pytest.raises(DataError, match="--from DIR"):
        fetch_data("wapiibench", root=tmp_path, client=client)
