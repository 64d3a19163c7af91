"""Tool libraries for the nested track, kept as source text.

Tools run only inside the sandbox process (:mod:`callbench.sandbox.python`): the harness reads the
files and lists their top-level functions with :mod:`ast`, but never imports or executes user code.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from callbench.errors import DataError

_MATHQA = Path(__file__).with_name("mathqa.py")


@dataclass(frozen=True)
class ToolModule:
    path: str
    source: str
    functions: tuple[str, ...]


def _module(path: Path) -> ToolModule:
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise DataError(f"{path}:{exc.lineno}: syntax error ({exc.msg})") from exc
    names = tuple(
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
    )
    return ToolModule(str(path), source, names)


def builtin_tools() -> list[ToolModule]:
    """The MathQA operation library."""
    return [_module(_MATHQA)]


@functools.lru_cache(maxsize=1)
def mathqa_names() -> frozenset[str]:
    """Cached: loading a task file asks once per call, and each ask would re-parse the library."""
    return frozenset(builtin_tools()[0].functions)


def load_tools(directory: str | Path) -> list[ToolModule]:
    """Every top-level public function of every ``*.py`` in ``directory`` (sorted by file name;
    a later file's function overrides an earlier one of the same name)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a directory of tool files")
    return [_module(p) for p in sorted(directory.glob("*.py"))]
