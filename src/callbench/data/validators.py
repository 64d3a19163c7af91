"""Checks that a fetched file is what it claims to be, registered by name by whoever reads the format.

A :class:`~callbench.data.fetch.RemoteFile` names its check (``validate="nestful-v2"``); the code
that knows the format (a track's loader) registers it here, so the data layer depends on no track:
tracks depend on the data layer. The built-in formats are registered by modules imported on first
use (like :mod:`callbench.models.registry`), so ``callbench data fetch nestful`` works before the
nested track has been loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

#: ``check(path) -> str``: parse the file, return a short description (``1861 rows``), raise
#: :class:`~callbench.errors.DataError` naming ``path`` when it is not the expected format.
Validator = Callable[[Path], str]

_VALIDATORS: dict[str, Validator] = {}

# name -> module that registers it on import
_BUILTIN_MODULES: dict[str, str] = {
    "nestful-v2": "callbench.tracks.nested.dataset",
}


def register_validator(name: str, check: Validator) -> Validator:
    """Make ``check`` the validator of files declared with ``validate=name``; returns ``check``."""
    _VALIDATORS[name] = check
    return check


def get_validator(name: str) -> Validator:
    if name not in _VALIDATORS and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
    try:
        return _VALIDATORS[name]
    except KeyError:
        raise ValueError(f"unknown validator {name!r}") from None
