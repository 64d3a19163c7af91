"""Resolve the data directory: ``--data DIR`` > ``$CALLBENCH_DATA_DIR`` > the user cache dir.

Datasets keep their upstream layout under it (``wapiibench/data/synthetic/...``), so a checkout of
the upstream repository can be pointed at directly.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The directory that holds one sub-directory per dataset."""
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get("CALLBENCH_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return Path(platformdirs.user_cache_dir("callbench")) / "data"


def cache_dir() -> Path:
    """Cache for downloaded models and other large artefacts (``$CALLBENCH_CACHE_DIR`` overrides)."""
    env = os.environ.get("CALLBENCH_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return Path(platformdirs.user_cache_dir("callbench"))
