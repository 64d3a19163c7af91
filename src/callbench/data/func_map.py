"""NESTFUL's ``func_file_map.json`` (function name -> the file implementing it): read by the data
layer, which fetches the files it names, and by the nested track, which runs them. It lives here so
the data layer never imports a track."""

from __future__ import annotations

import json
import re
from pathlib import Path

from callbench.errors import DataError

SAFE_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\.py")


def read_func_file_map(path: Path) -> dict[str, str]:
    """The map ``function name -> file name``; DataError (one line) when it is not such a map or
    names a file outside its directory."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable JSON map of function -> file ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object mapping function names to file names")
    for name, file in data.items():
        if not isinstance(file, str) or not SAFE_FILE.fullmatch(file) or not name.isidentifier():
            raise DataError(f"{path}: entry {name!r}: {file!r} is not a file name like py_code_file_1.py")
    return data
