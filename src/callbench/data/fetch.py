"""Download datasets from their upstream repositories and verify them by SHA-256.

Files are pinned to an upstream commit and a checksum each, so a fetched dataset is byte-identical
to the one the project's numbers were measured on. ``--from DIR`` copies from a local mirror
(e.g. a checkout of the upstream repository) with the same verification.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from callbench.data.paths import data_dir
from callbench.errors import DataError


@dataclass(frozen=True)
class RemoteFile:
    path: str  # relative to the dataset root, same as upstream
    sha256: str


@dataclass(frozen=True)
class DatasetSource:
    name: str
    base_url: str  # upstream raw-file URL prefix at a pinned commit
    files: tuple[RemoteFile, ...]
    license: str

    def url(self, f: RemoteFile) -> str:
        return f"{self.base_url}/{f.path}"


_WAPIIBENCH_COMMIT = "5234c50c1e6474bcd06ac5d1e18970a6852aec52"

DATASETS: dict[str, DatasetSource] = {
    "wapiibench": DatasetSource(
        name="wapiibench",
        base_url=f"https://raw.githubusercontent.com/stg-tud/WAPIIBench/{_WAPIIBENCH_COMMIT}",
        license="Apache-2.0 (specs keep their vendors' terms)",
        files=(
            RemoteFile("LICENSE", "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
            RemoteFile(
                "data/synthetic/all/test_data_final.json",
                "09c778d61f2bf791b1f9bb1572e2a35c5784abcac7fc4382b1d6e30b0e6ef507",
            ),
            RemoteFile(
                "data/synthetic/asana/test_data_corrected.json",
                "0f4d1e8edf7a135f2b8ca8d453fd8c95c67070a56d6c18a16c00ebcfbf449c2a",
            ),
            RemoteFile(
                "data/synthetic/google_calendar_v3/test_data_corrected.json",
                "d60342345a1f1330c4086e5e89a39f4364c457f1ec471ac97509e3ad59681733",
            ),
            RemoteFile(
                "data/synthetic/google_sheet_v4/test_data_corrected.json",
                "b5f0b1e2108c5e4d88b24fc2156aa7c85c85792ae6036c449828f8ed30f6aa7a",
            ),
            RemoteFile(
                "data/synthetic/slack/test_data_corrected.json",
                "f83ce91507a6197d23644fc084493fcc34bc47afaf481a71a7afde58b1a633ce",
            ),
            RemoteFile(
                "openapi/real_world_specs/asana.yaml",
                "e2c89bf47fab78478a28e71f58bd4b6c24648779f062a33c624dc80874de4e5c",
            ),
            RemoteFile(
                "openapi/real_world_specs/google_calendar_v3.yaml",
                "a9cf387984922208a1e3f8631c802234cfbdec2e64d9b540bc721cd498ee02fd",
            ),
            RemoteFile(
                "openapi/real_world_specs/google_sheet_v4.yaml",
                "f546383df3d67a9669a46b2009d5a26a7713a48b91da3f5aaef0a56be74e1ac4",
            ),
            RemoteFile(
                "openapi/real_world_specs/slack.yaml",
                "6aa49f2b5869e2b0da57973e814460f0642eda09039671c693ea9c613929448f",
            ),
            RemoteFile(
                "openapi/test/petstore-expanded-modified.yaml",
                "e89cf6c1863cce8155f1e435ed5d2af04a1f3c6944f8d28271501b95769004b6",
            ),
        ),
    ),
}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_complete(name: str, root: Path | None = None) -> bool:
    """True when every file of the dataset is present with the pinned checksum."""
    source = _source(name)
    base = (root or data_dir()) / name
    return all((base / f.path).is_file() and _sha256(base / f.path) == f.sha256 for f in source.files)


def _source(name: str) -> DatasetSource:
    if name not in DATASETS:
        raise DataError(f"unknown dataset '{name}' (available: {', '.join(sorted(DATASETS))})")
    return DATASETS[name]


@retry(
    retry=retry_if_exception_type((httpx.TransportError, httpx.HTTPStatusError)),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.5, max=8),
    reraise=True,
)
def _download(client: httpx.Client, url: str, dest: Path) -> None:
    with client.stream("GET", url) as resp:
        if resp.status_code in (429,) or resp.status_code >= 500:
            resp.raise_for_status()
        if resp.status_code != 200:
            raise DataError(f"{url}: HTTP {resp.status_code}")
        with dest.open("wb") as fh:
            for chunk in resp.iter_bytes():
                fh.write(chunk)


def fetch_data(
    name: str,
    *,
    root: str | os.PathLike[str] | None = None,
    mirror: str | os.PathLike[str] | None = None,
    force: bool = False,
    client: httpx.Client | None = None,
    on_file: Callable[[str, str], None] | None = None,
) -> Path:
    """Download (or copy from ``mirror``) dataset ``name`` into the data dir; returns its directory.

    Files already present with the right checksum are kept unless ``force``. Every file is written
    to a temporary name and renamed only after its checksum matched, so an interrupted fetch never
    leaves a corrupt file behind.
    """
    source = _source(name)
    dest_root = data_dir(root) / name
    own_client = client is None
    if own_client and mirror is None:
        client = httpx.Client(timeout=60.0, follow_redirects=True)
    try:
        for f in source.files:
            dest = dest_root / f.path
            if not force and dest.is_file() and _sha256(dest) == f.sha256:
                if on_file:
                    on_file(f.path, "present")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
            os.close(fd)
            tmp = Path(tmp_name)
            try:
                if mirror is not None:
                    src = Path(mirror) / f.path
                    if not src.is_file():
                        raise DataError(f"{src}: missing in mirror {mirror}")
                    shutil.copyfile(src, tmp)
                    origin = str(src)
                else:
                    try:
                        _download(client, source.url(f), tmp)
                    except httpx.HTTPError as exc:
                        raise DataError(
                            f"{source.url(f)}: download failed ({type(exc).__name__}: {exc}); "
                            f"offline? use 'callbench data fetch {name} --from DIR' with a local copy"
                        ) from exc
                    origin = source.url(f)
                digest = _sha256(tmp)
                if digest != f.sha256:
                    raise DataError(f"{origin}: checksum mismatch (sha256 {digest}, expected {f.sha256})")
                tmp.replace(dest)
            finally:
                tmp.unlink(missing_ok=True)
            if on_file:
                on_file(f.path, "fetched")
    finally:
        if own_client and client is not None:
            client.close()
    return dest_root
