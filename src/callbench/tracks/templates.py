"""Prompt templates are files in a track's ``prompts/<version>/`` package folder; a run records a
digest of the files it used, so a changed prompt never resumes an old run."""

from __future__ import annotations

import hashlib
from importlib import resources

from callbench.errors import ConfigError


def load_templates(package: str, version: str, files: tuple[str, ...]) -> dict[str, str]:
    base = resources.files(package).joinpath(version)
    if not base.is_dir():
        raise ConfigError(f"prompt version '{version}' not found in {package}")
    return {name: base.joinpath(name).read_text(encoding="utf-8") for name in files}


def templates_digest(templates: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name, text in sorted(templates.items()):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]
