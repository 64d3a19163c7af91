"""callbench.files: writing a JSON file whole or not at all."""

from __future__ import annotations

import json
import os
import stat

import pytest

from callbench.files import write_json_atomic


def test_write_json_atomic_writes_the_whole_file_shared(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("old")
    write_json_atomic(path, {"x": [1, "é"]})
    assert path.read_text(encoding="utf-8") == '{\n  "x": [\n    1,\n    "\\u00e9"\n  ]\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["a.json"]


def test_write_json_atomic_uses_default_for_other_objects(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomic(path, {"s": {3}}, default=sorted)
    assert json.loads(path.read_text()) == {"s": [3]}


def test_write_json_atomic_failure_is_an_oserror_and_leaves_nothing(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError):
        write_json_atomic(tmp_path / "d", {"x": 1})  # a directory is in the way
    assert os.listdir(tmp_path) == ["d"] and os.listdir(tmp_path / "d") == []
    with pytest.raises(TypeError):
        write_json_atomic(tmp_path / "b.json", {"x": object()})  # not JSON: nothing written either
    assert os.listdir(tmp_path) == ["d"]
    with pytest.raises(OSError):
        write_json_atomic(tmp_path / "missing" / "c.json", {})
