"""A run's identity: everything that changes a verdict, in two parts.

``config.json``'s ``identity`` is one JSON object::

    {"track": ..., "model": ..., "mode": ..., "model_options": {...}, "generation": {...},
     <the track's fingerprint()>, "scoring": {<the track's scoring_fingerprint()>, "callbench_version"}}

Everything outside ``scoring`` is the *generation* part: what the model was asked and how (the
backend and every option of it that changes answers, decoding settings, prompt version and a
digest of the prompts, any data an episode runs against). The ``scoring`` part is what turns the
same answers into verdicts (content hashes of the data the scorer reads, of API specs and user
tools, sandbox limits, the scoring code's version).

A run directory is resumed only when both parts match. A changed scoring part can be adopted by
re-scoring every stored answer (``--rescore``); a changed generation part cannot (those answers
answer other prompts), only ``--force`` (start over) or another ``--run-id``. The default run
directory name hashes the generation part only, so re-running a command after editing a spec
finds its run and says what changed, while another model or prompt gets a directory of its own.

Identities written before the split (no ``scoring`` object) are compared on the keys they hold:
a key they did not record is not a difference, one they recorded is compared wherever it lives
now. Absent, ``null`` and ``{}`` are the same value.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: the runner passes them, this module reads what they say
    from callbench.models.base import GenerationConfig, ModelBackend
    from callbench.tracks.base import Track

SCORING = "scoring"
_MAX_SHOWN = 4  # changes named in the one-line refusal
_MAX_VALUE = 24  # characters of a value shown


@dataclass(frozen=True)
class Change:
    path: tuple[str, ...]
    old: object  # JSON values (a stored identity's and this run's)
    new: object

    @property
    def scoring(self) -> bool:
        """Does this change only how answers are scored (so ``--rescore`` may adopt it)?"""
        return self.path[0] == SCORING

    def __str__(self) -> str:
        return f"{'.'.join(self.path)} {_shown(self.old)} -> {_shown(self.new)}"


def build_identity(track: Track, model: ModelBackend, gen: GenerationConfig) -> dict[str, Any]:
    """The identity of a run of ``track`` with ``model`` and decoding settings ``gen`` (each
    fingerprint computed once: they hash files)."""
    from callbench.version import __version__

    ident: dict[str, Any] = {
        "track": track.name,
        "model": model.identity,
        "mode": model.mode,
        "model_options": dict(getattr(model, "identity_options", None) or {}),
        **track.fingerprint(),
        "generation": _generation(gen),
    }
    scoring = getattr(track, "scoring_fingerprint", None)
    ident[SCORING] = {**(scoring() if scoring else {}), "callbench_version": __version__}
    return _json_object(ident)


def _generation(gen: GenerationConfig) -> dict[str, Any]:
    """The decoding settings; a setting added later is recorded only when it is not at its
    default, so the runs made before it keep their identity (and resume)."""
    out = asdict(gen)
    if not out.get("stop_kept"):
        out.pop("stop_kept", None)
    return out


def generation_digest(ident: dict[str, Any]) -> str:
    """8 hex digits naming the generation part (the default run directory's suffix)."""
    part = {k: v for k, v in ident.items() if k != SCORING}
    return hashlib.sha256(json.dumps(part, sort_keys=True, default=str).encode()).hexdigest()[:8]


def diff(old: object, new: dict[str, Any]) -> list[Change]:
    """What differs between a stored identity (a JSON value read from ``config.json``) and this
    run's (see the module doc for identities stored by older versions)."""
    new = _json_object(new)
    if not isinstance(old, dict):
        return [Change(("identity",), old, "{...}")]
    if isinstance(old.get(SCORING), dict):
        return _compare(old, new, ())
    changes: list[Change] = []  # an identity from before the split: compare what it recorded
    new_scoring = new.get(SCORING)
    scoring: dict[str, Any] = new_scoring if isinstance(new_scoring, dict) else {}
    for key, value in old.items():
        if key in new and key != SCORING:
            changes += _compare({key: value}, {key: new[key]}, ())
        elif key in scoring:
            changes += _compare({key: value}, {key: scoring[key]}, (SCORING,))
    return changes


def refusal(where: Path | str, changes: list[Change], *, rescore: bool) -> str:
    """The one-line refusal to resume a run whose identity changed, naming what changed and the
    ways on."""
    regenerate = [c for c in changes if not c.scoring]
    if rescore and regenerate:
        return (
            f"{where}: --rescore keeps the stored answers, but they were generated with other settings "
            f"({_listed(regenerate)}); pass --force to start over, or another --run-id"
        )
    what = f"{where}: this directory holds a different run ({_listed(changes)})"
    if regenerate:
        return f"{what}; pass --force to start over, or another --run-id"
    return f"{what}; pass --rescore to keep the answers and score them again, --force to start over, or another --run-id"


def _listed(changes: list[Change]) -> str:
    text = ", ".join(str(c) for c in changes[:_MAX_SHOWN])
    if len(changes) > _MAX_SHOWN:
        text += f" and {len(changes) - _MAX_SHOWN} more"
    return text.replace(";", ",")  # the fix is what follows the line's last ';'


def _compare(old: dict[str, Any], new: dict[str, Any], prefix: tuple[str, ...]) -> list[Change]:
    a, b = dict(_leaves(old, prefix)), dict(_leaves(new, prefix))
    out: list[Change] = []
    for path in [*a, *(p for p in b if p not in a)]:
        x, y = a.get(path), b.get(path)
        if _blank(x) and _blank(y):
            continue
        if _canonical(x) != _canonical(y):
            out.append(Change(path, x, y))
    return out


def _leaves(d: dict[str, Any], prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
    for key, value in d.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, (*prefix, str(key)))
        else:
            yield (*prefix, str(key)), value


def _blank(value: object) -> bool:
    return value is None or value == {}


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    """As JSON reads it back (tuples as lists), so a stored identity compares equal."""
    from callbench.runs.text import encodable

    back: dict[str, Any] = json.loads(json.dumps(encodable(value), default=str))
    return back


def _shown(value: object) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) == 16 and all(ch in "0123456789abcdef" for ch in text):
        return text[:8] + "…"  # a content hash: its start tells two apart
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"
