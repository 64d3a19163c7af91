"""Find and load the task data a run was scored against, so sample views can show what was expected
(the expected request, the gold call sequence, the reference's recorded result and state).

A run's identity records a content digest of its data (``data_sha256``; ``bench_sha256`` for a
stateful benchmark), at its top level or in its ``scoring`` part, and older runs also its path.
Candidates are that path, then the data dir's and the built-in sets; the first whose digest matches
is loaded (once per report). When none matches, nothing is shown rather than another file's
expectations; a run that recorded no digest uses the first candidate, with a note.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from callbench.errors import CallbenchError, ConfigError

if TYPE_CHECKING:
    from callbench.tracks.definition import TaskSource

_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


def recorded(identity: dict[str, Any], key: str) -> Any:
    """``key`` from the identity, or from its ``scoring`` part (where scoring inputs live)."""
    if identity.get(key) is not None:
        return identity[key]
    scoring = identity.get("scoring")
    return scoring.get(key) if isinstance(scoring, dict) else None


def _source(track: str) -> TaskSource:
    from callbench.tracks.definition import get_definition

    source = get_definition(track).tasks
    if source is None:
        raise ConfigError(f"track '{track}' names no task data")
    return source


def digest(track: str, path: Path) -> str:
    h = hashlib.sha256()
    for f in _source(track).files(path):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _candidates(track: str, identity: dict[str, Any], data_file: str | None = None) -> list[Path]:
    from callbench.data.paths import data_dir

    source = _source(track)
    paths: list[Path] = []
    for old in (data_file, identity.get(source.path_key)):  # where the run read its tasks
        if isinstance(old, str) and old:
            paths.append(Path(old))
    try:
        root: Path | None = data_dir()
    except (CallbenchError, OSError):
        root = None
    paths += source.defaults(root)
    out: list[Path] = []
    for p in paths:
        if p not in out and p.exists():
            out.append(p)
    return out


def _load(track: str, path: Path) -> dict[str, Any]:
    key = (track, str(path))
    if key not in _CACHE:
        _CACHE[key] = _source(track).load(path)
    return _CACHE[key]


def task_data(
    track: str, identity: dict[str, Any], what: str, data_file: str | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """``(tasks by id, note)``; ``what`` names what is missing without them (for the note);
    ``data_file``: where the run read its tasks (its config's ``data_file``), tried first."""
    try:
        key = _source(track).digest_key
        want = recorded(identity, key)
        candidates = _candidates(track, identity, data_file)
        if not candidates:
            return None, f"the run's task data was not found: {what} not shown"
        note = None
        if isinstance(want, str):
            chosen = next((p for p in candidates if digest(track, p) == want), None)
            if chosen is None:
                return None, f"the task data this run used ({key} {want}) was not found: {what} not shown"
        else:
            chosen = candidates[0]
            note = f"{what} read from {chosen}, not verified (the run recorded no {key})"
        return _load(track, chosen), note
    except (CallbenchError, OSError, ValueError, ImportError) as exc:
        return None, f"the run's task data could not be read ({' '.join(str(exc).split())[:200]}): {what} not shown"
