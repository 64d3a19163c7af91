"""Which directories below a directory are runs (``callbench runs``, ``callbench view``, and
``callbench report`` pointing a directory of runs to them)."""

from __future__ import annotations

import os
from pathlib import Path


def is_run_dir(path: Path) -> bool:
    return (path / "config.json").is_file() or os.path.lexists(path / "run.sqlite")


def find_run_dirs(root: Path) -> list[Path]:
    """Every run directory at or below ``root`` (a run's own subdirectories are not searched)."""
    found: list[Path] = []
    if not root.is_dir():
        return found
    if is_run_dir(root):
        return [root]
    for dirpath, dirnames, _files in os.walk(root, followlinks=False):
        here = Path(dirpath)
        keep = []
        for name in sorted(dirnames):
            sub = here / name
            if name.startswith("."):
                continue
            if is_run_dir(sub):
                found.append(sub)
            else:
                keep.append(name)
        dirnames[:] = keep
    return found
