"""NESTFUL's code-domain tool implementations: one Python file per function, named by a map.

Layout (upstream ``data_v2/executable_functions/`` of github.com/IBM/NESTFUL, which
``callbench data fetch nestful`` fetches to ``<data dir>/nestful/data_v2/executable_functions/``;
any local directory laid out the same way works too)::

    func_file_map.json      {"count_the_word": "py_code_file_2201.py", ...}
    py_code_file_2201.py    def count_the_word(string): ...

A tool is implemented when the map names it and its file is present. Only the mapped function of a
file is a tool (helper functions in the file are not). The files are never imported here: the
harness reads them as text and :class:`~callbench.tracks.nested.executor.NestedExecutor` runs a
sequence with the files of the tools it calls, in the same sandbox process as the math tools
(per-call timeout; see :mod:`callbench.sandbox.python`). A code tool returns a plain value, stored
as ``output_0`` -- the field the v2 code-domain rows reference and answer with.

Upstream's scorer looks up math functions in its own ``basic_functions.py`` before the map; here the
built-in MathQA tools take that place (they are loaded after the library, so they win a name that
both have, e.g. ``divide``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from callbench import pyast
from callbench.data.func_map import read_func_file_map
from callbench.errors import DataError
from callbench.tools import ToolModule
from callbench.tracks.nested.tools import _module

FUNC_FILE_MAP = "func_file_map.json"
# Under the data dir: where `data fetch nestful` puts the implementations (upstream path).
FETCHED_DIR = "nestful/data_v2/executable_functions"
# A file the map may name: a plain file name in the directory, never a path.
class CodeLibrary:
    """The implemented tools of one directory (see the module docstring)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        map_path = self.directory / FUNC_FILE_MAP
        if not map_path.is_file():
            raise DataError(f"{self.directory}: no {FUNC_FILE_MAP} (a directory of NESTFUL tool files)")
        mapping = read_func_file_map(map_path)
        self.map_path = map_path
        self.files: dict[str, str] = {n: f for n, f in mapping.items() if (self.directory / f).is_file()}
        self.missing_files = sorted({f for f in mapping.values() if not (self.directory / f).is_file()})

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.files)

    def modules_for(self, names: Iterable[str]) -> list[ToolModule]:
        """The tool modules holding ``names`` (those the library has), each exposing only its
        mapped functions; a file that does not parse is left out (its calls then fail)."""
        by_file: dict[str, set[str]] = {}
        for n in names:
            f = self.files.get(n)
            if f is not None:
                by_file.setdefault(f, set()).add(n)
        out = []
        for f in sorted(by_file):
            try:
                m = _load(str(self.directory / f))
            except (DataError, OSError, UnicodeDecodeError):
                continue
            exposed = tuple(n for n in _defined(m.path, m.source) if n in by_file[f])
            if exposed:
                out.append(ToolModule(m.path, m.source, exposed))
        return out

    def digest(self) -> str:
        """SHA-256 over the map and every present file (what a run's scores depend on)."""
        h = hashlib.sha256(self.map_path.read_bytes())
        for f in sorted(set(self.files.values())):
            h.update(f.encode() + b"\0" + hashlib.sha256((self.directory / f).read_bytes()).digest())
        return h.hexdigest()


@functools.lru_cache(maxsize=512)
def _load(path: str) -> ToolModule:
    return _module(Path(path))


@functools.lru_cache(maxsize=512)
def _defined(path: str, source: str) -> tuple[str, ...]:
    """Every top-level function of a tool file, private ones too (the map names e.g. ``_format``)."""
    tree = pyast.parse(source, filename=path)
    return tuple(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def fetched_library(root: Path) -> CodeLibrary | None:
    """The library that ``data fetch nestful`` put under the data dir ``root``, or None."""
    directory = root / FETCHED_DIR
    if not (directory / FUNC_FILE_MAP).is_file():
        return None
    return CodeLibrary(directory)
