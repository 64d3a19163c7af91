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
from typing import Any

from callbench.errors import CallbenchError

_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


def recorded(identity: dict[str, Any], key: str) -> Any:
    """``key`` from the identity, or from its ``scoring`` part (where scoring inputs live)."""
    if identity.get(key) is not None:
        return identity[key]
    scoring = identity.get("scoring")
    return scoring.get(key) if isinstance(scoring, dict) else None


def _files(track: str, path: Path) -> list[Path]:
    if track == "stateful":
        from callbench.tracks.stateful.track import bench_files

        return bench_files(path)
    return [path]


def digest(track: str, path: Path) -> str:
    h = hashlib.sha256()
    for f in _files(track, path):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _candidates(track: str, identity: dict[str, Any]) -> list[Path]:
    from callbench.data.paths import data_dir

    paths: list[Path] = []
    old = identity.get("bench" if track == "stateful" else "data_file")
    if isinstance(old, str) and old:
        paths.append(Path(old))
    try:
        root = data_dir()
    except (CallbenchError, OSError):
        root = None
    if track == "webapi":
        from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

        if root is not None:
            paths.append(root / DEFAULT_DATA_FILE)
    elif track == "nested":
        from callbench.tracks.nested.dataset import FETCHED_V2_FILES, builtin_tasks

        if root is not None:
            paths += [root / "nestful" / rel for rel in FETCHED_V2_FILES]
        paths.append(Path(str(builtin_tasks())))
    else:
        from callbench.tracks.stateful.track import builtin_bench

        paths.append(builtin_bench())
    out: list[Path] = []
    for p in paths:
        if p not in out and p.exists():
            out.append(p)
    return out


def _load(track: str, path: Path) -> dict[str, Any]:
    key = (track, str(path))
    if key not in _CACHE:
        if track == "webapi":
            from callbench.tracks.webapi.dataset import load_tasks

            _CACHE[key] = {t.id: t for t in load_tasks(path)}
        elif track == "nested":
            from callbench.tracks.nested.dataset import load_nested

            _CACHE[key] = {t.id: t for t in load_nested(path)}
        else:
            from callbench.tracks.stateful.track import load_bench

            _CACHE[key] = {t["id"]: t for t in load_bench(path)}
    return _CACHE[key]


def task_data(track: str, identity: dict[str, Any], what: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(tasks by id, note)``; ``what`` names what is missing without them (for the note)."""
    key = "bench_sha256" if track == "stateful" else "data_sha256"
    want = recorded(identity, key)
    try:
        candidates = _candidates(track, identity)
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
