"""Trust-on-first-use record of a dataset's files: ``<data dir>/<dataset>/callbench.lock.json``.

Upstream files without a checksum pinned in the code (NESTFUL) are hashed when first fetched and
validated; the digest, the URL and the time go into the lock, and every later fetch or default
data resolution is checked against it. ``callbench data fetch NAME --force`` re-records.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from callbench.errors import DataError

LOCK_NAME = "callbench.lock.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def lock_path(dataset_root: Path) -> Path:
    return dataset_root / LOCK_NAME


def read_lock(dataset_root: Path) -> dict[str, dict[str, Any]]:
    """``{path: {"sha256", "url", "fetched_at"}}``; empty when there is no lock yet."""
    path = lock_path(dataset_root)
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(
            f"{path}: unreadable lock file ({exc}); delete it and re-fetch with --force"
        ) from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        raise DataError(f"{path}: files: expected an object of path -> {{sha256, url, fetched_at}}")
    for rel, entry in files.items():
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or len(digest) != 64:
            raise DataError(f"{path}: files.{rel}.sha256: expected 64 hex digits")
    return files


def write_lock(dataset_root: Path, dataset: str, files: dict[str, dict[str, Any]]) -> Path:
    """Write atomically (temporary file + rename), so an interrupted fetch never truncates it."""
    path = lock_path(dataset_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"dataset": dataset, "files": dict(sorted(files.items()))}
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".part-lock-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
        Path(tmp_name).replace(path)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return path


def lock_entry(digest: str, url: str) -> dict[str, str]:
    return {"sha256": digest, "url": url, "fetched_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
