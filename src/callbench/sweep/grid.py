"""A sweep's grid file and its expansion into cells.

A grid file (YAML) names the models and, per track, the settings of its runs::

    models: [gold, "openai:M@http://127.0.0.1:8000/v1"]
    tracks:
      webapi: {setup: [full, args], constrained: [false, true], limit: 20}
      nested: {limit: 20}

A list expands as a product: the grid above is 2 models x (2 x 2 webapi + 1 nested) = 10 cells.
A setting whose value is itself a list (``ids``, ``groups``, stateful's ``k`` and ``scenarios``)
expands only when given as a list of lists (``ids: [[a, b], [c]]`` is two cells; ``ids: [a, b]``
is one). Each cell is exactly one ``callbench.run(track, model, out_dir=..., run_id=cell.name,
**cell.settings)`` call: a track accepts the fields of its options class (the track registry,
:func:`callbench.tracks.definition.get_definition`) and the run options of :func:`callbench.api.run`
listed in :data:`RUN_SETTINGS`, and the decoding settings of :data:`GENERATION_SETTINGS`
(``max_tokens``, ``temperature``, ``seed``: each changes that field of the track's own decoding
defaults, as ``callbench run``'s flags of the same names do; ``seed: [0, 1, 2]`` is three cells).

The file is validated with pydantic: an unknown key or a value of the wrong type is one line
naming the file and the field (``grid.yaml: tracks.webapi.setup: ...``); a value the track itself
refuses (``setup: fulll``) is named by the track's own message after the file and the track.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from callbench.errors import CallbenchError, ConfigError, DataError
from callbench.files import read_text
from callbench.models.registry import available_models, check_model_options, parse_model_spec
from callbench.runs.settings import MAX_SEED  # the largest seed every backend reproduces, as --seed
from callbench.tracks.definition import get_definition, resolve

#: The keyword arguments of :func:`callbench.api.run` a grid may set per track, with their types.
#: Left out: ``out_dir`` and ``run_id`` (the sweep places each cell), ``progress``/``console``
#: (the sweep reports progress), ``force``/``rescore`` (per run, not per grid), ``generation``
#: (given field by field: :data:`GENERATION_SETTINGS`).
RUN_SETTINGS: dict[str, Any] = {
    "limit": int,
    "ids": list[str],
    "groups": list[str],
    "per_group": Annotated[int, Field(ge=1)],
    "concurrency": int,
    "scoring": str,
    "retry_errors": bool,
    "max_backend_error_rate": float,
    "count_backend_errors": bool,
    "eval_workers": int,
    "model_options": dict[str, Any],
}


#: Decoding settings a grid may set per track: each changes that field of the track's own decoding
#: defaults (``callbench.run(generation={...})``). A track whose options have a field of the same
#: name (stateful's ``temperature``) keeps its own meaning for it.
GENERATION_SETTINGS: dict[str, Any] = {
    "max_tokens": Annotated[int, Field(ge=1)],
    "temperature": Annotated[float, Field(ge=0, allow_inf_nan=False)],
    "seed": Annotated[int, Field(ge=0, le=MAX_SEED)],
}

#: Settings that change how a cell runs, not what it measures: left out of its directory name, so
#: a sweep re-run with more concurrency finds its cells again.
RUNTIME_SETTINGS = frozenset({"concurrency", "eval_workers", "max_backend_error_rate", "retry_errors"})

#: Backend options that are secrets: kept out of a cell's name and written to sweep.json redacted.
SECRET_OPTIONS = frozenset({"api_key"})


def _public(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with secret backend options redacted (what the manifest and the name hold)."""
    options = settings.get("model_options")
    if not isinstance(options, dict) or not SECRET_OPTIONS & set(options):
        return settings
    return {**settings, "model_options": {k: "<redacted>" if k in SECRET_OPTIONS else v for k, v in options.items()}}


@dataclass(frozen=True)
class Cell:
    """One run of the sweep: ``callbench.run(track, model, run_id=name, **settings)``."""

    track: str
    model: str
    settings: dict[str, Any]
    name: str

    def as_dict(self) -> dict[str, Any]:
        """What a worker runs (the settings whole, secrets too)."""
        return {"name": self.name, "track": self.track, "model": self.model, "settings": self.settings}

    def public_dict(self) -> dict[str, Any]:
        """What the manifest records (secret backend options redacted)."""
        return {**self.as_dict(), "settings": _public(self.settings)}


@dataclass(frozen=True)
class Grid:
    path: Path
    digest: str  # SHA-256 of the grid as parsed (canonical JSON: comments and layout do not count)
    models: list[str]
    cells: list[Cell]
    #: model server URL -> the most requests in flight to it at once (``servers:``; see
    #: :mod:`callbench.sweep.servers`)
    servers: dict[str, int] = dataclasses.field(default_factory=dict)


class _GridFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    models: list[str] = Field(min_length=1)
    tracks: dict[str, dict[str, Any]] = Field(min_length=1)
    servers: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)


def _slug(text: str) -> str:
    text = re.sub(r"https?://", "", text)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40].strip("-.") or "model"


def cell_name(track: str, model: str, settings: dict[str, Any]) -> str:
    """A cell's run directory name: stable (the same track, model and settings give the same name
    in any grid and any order), readable, and unique (a hash of all but the runtime settings)."""
    measured = {k: v for k, v in _public(settings).items() if k not in RUNTIME_SETTINGS}
    blob = json.dumps({"track": track, "model": model, "settings": measured}, sort_keys=True, separators=(",", ":"))
    return f"{track}-{_slug(model)}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def _is_sequence(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_is_sequence(a) for a in typing.get_args(tp) if a is not type(None))
    return origin in (list, tuple, Sequence) or tp in (list, tuple)


def _track_fields(track: str) -> dict[str, Any]:
    """What track ``track`` accepts in a grid: its options' fields and :data:`RUN_SETTINGS`, with types."""
    definition = get_definition(track)
    fields: dict[str, Any] = {}
    if definition.options is not None:
        cls = resolve(definition.options)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
            tp = hints.get(f.name, Any)
            # an option typed Any is an object (grammar options), not something a YAML file holds;
            # the model option is the cell's model (callbench.run fills it in)
            if tp is Any or f.name == definition.model_option:
                continue
            fields[f.name] = tp
    fields.update(RUN_SETTINGS)
    for name, tp in GENERATION_SETTINGS.items():
        fields.setdefault(name, tp)
    return fields


def run_arguments(track: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``callbench.run`` for a cell's settings: the decoding settings
    (:data:`GENERATION_SETTINGS`, unless the track's options have a field of that name) go
    into ``generation`` as changes to the track's defaults, the rest as they are."""
    own = _option_names(track)
    generation = {k: v for k, v in settings.items() if k in GENERATION_SETTINGS and k not in own}
    kwargs = {k: v for k, v in settings.items() if k not in generation}
    if generation:
        kwargs["generation"] = generation
    return kwargs


def _option_names(track: str) -> set[str]:
    definition = get_definition(track)
    if definition.options is None:
        return set()
    cls = resolve(definition.options)
    return {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()


def _validator(track: str, fields: dict[str, Any]) -> type[BaseModel]:
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"{track}_settings",
        __config__=ConfigDict(extra="forbid", strict=False, arbitrary_types_allowed=True),
        **{name: (tp | None, None) for name, tp in fields.items()},
    )


def _where(path: Path, loc: Sequence[Any]) -> str:
    return f"{path}: " + ".".join(str(p) for p in loc)


def _first_error(exc: ValidationError) -> tuple[tuple[Any, ...], str]:
    first = exc.errors()[0]
    return tuple(first.get("loc") or ()), str(first.get("msg"))


def _expand(track: str, raw: dict[str, Any], fields: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The product of the settings' lists, in the file's order of keys."""
    axes: list[list[Any]] = []
    for key, value in raw.items():
        if _is_sequence(fields.get(key)):
            many = isinstance(value, list) and bool(value) and all(isinstance(v, list) for v in value)
        else:
            many = isinstance(value, list)
            if many and not value:
                raise ConfigError(f"{path}: tracks.{track}.{key}: an empty list expands to no cells (give a value)")
        axes.append(list(value) if many else [value])
    return [dict(zip(raw, combo, strict=True)) for combo in itertools.product(*axes)]


def parse_grid(text: str, path: Path) -> Grid:
    """The grid in ``text`` (read from ``path``, which errors name), validated and expanded."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{at} ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: a grid is a mapping with 'models' and 'tracks' (got {type(doc).__name__})")
    if isinstance(doc.get("models"), str):  # models: gold
        doc = {**doc, "models": [doc["models"]]}
    if isinstance(doc.get("tracks"), dict):  # "nested:" with nothing after it: the track's defaults
        doc = {**doc, "tracks": {k: {} if v is None else v for k, v in doc["tracks"].items()}}
    try:
        top = _GridFile.model_validate(doc)
    except ValidationError as exc:
        loc, msg = _first_error(exc)
        raise ConfigError(f"{_where(path, loc)}: {msg}") from None
    for url in top.servers:
        if not re.match(r"https?://[^/\s]", url):
            raise ConfigError(f"{path}: servers.{url}: a server is named by an http(s) URL, as the models write it")
    if len(set(top.models)) != len(top.models):
        dup = next(m for m in top.models if top.models.count(m) > 1)
        raise ConfigError(f"{path}: models: '{dup}' is listed twice")
    known = available_models()
    for i, model in enumerate(top.models):
        backend, _ = parse_model_spec(model)
        if backend not in known:
            raise ConfigError(f"{path}: models.{i}: '{model}': unknown backend '{backend}' (available: {', '.join(known)})")
    cells: list[Cell] = []
    for track, raw in top.tracks.items():
        try:
            fields = _track_fields(track)
        except ConfigError as exc:
            raise ConfigError(f"{path}: tracks.{track}: {exc}") from None
        validator = _validator(track, fields)
        for settings in _expand(track, raw, fields, path):
            try:
                checked = validator.model_validate(settings)
            except ValidationError as exc:
                loc, msg = _first_error(exc)
                raise ConfigError(f"{_where(path, ('tracks', track, *loc))}: {msg}") from None
            values = {k: _plain(getattr(checked, k)) for k in settings}
            for model in top.models:
                cells.append(Cell(track, model, values, cell_name(track, model, values)))
    names: dict[str, Cell] = {}
    for c in cells:
        if c.name in names:
            raise ConfigError(
                f"{path}: tracks.{c.track}: two cells differ only in run settings "
                f"({', '.join(sorted(RUNTIME_SETTINGS))}); list one value"
            )
        names[c.name] = c
    _check_with_tracks(cells, path)
    servers = _servers(top.servers, cells, path)
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
    return Grid(path=path, digest=digest, models=list(top.models), cells=cells, servers=servers)


def _servers(given: dict[str, int], cells: list[Cell], path: Path) -> dict[str, int]:
    """The ``servers:`` bounds keyed as the models name their servers (no trailing ``/``); a
    server no cell talks to is a mistake (a typo would leave the real one unbounded)."""
    if not given:
        return {}
    used = {u for c in cells for u in server_urls(c.model, c.settings)}
    out: dict[str, int] = {}
    for url, n in given.items():
        key = url.rstrip("/")
        if key not in used:
            named = ", ".join(sorted(used)) or "none: no openai: model"
            raise ConfigError(f"{path}: servers.{url}: no model of the grid talks to this server (the models' servers: {named})")
        out[key] = n
    return out


def _plain(value: Any) -> Any:
    """A validated value as JSON holds it (tuples as lists)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_TRACK_ONLY = frozenset(RUN_SETTINGS)


def _check_with_tracks(cells: list[Cell], path: Path) -> None:
    """Build each distinct track configuration once, so that a value the track refuses (an unknown
    setup, a scoring mode it lacks) is an error before any cell runs. A track whose data is missing
    here is not checked (``--dry-run`` works anywhere; the cell fails with the track's message)."""
    seen: set[str] = set()
    for c in cells:
        model_options = c.settings.get("model_options")
        if model_options:
            try:
                check_model_options(c.model, model_options)
            except (CallbenchError, TypeError, ValueError) as exc:
                raise ConfigError(f"{path}: tracks.{c.track}.model_options: {' '.join(str(exc).split())}") from None
        definition = get_definition(c.track)
        arguments = run_arguments(c.track, c.settings)
        options = {k: v for k, v in arguments.items() if k not in _TRACK_ONLY and k != "generation"}
        if definition.model_option is not None:
            options.setdefault(definition.model_option, c.model)
        key = json.dumps([c.track, options, c.settings.get("scoring")], sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            track = definition.make(**options)
        except DataError:
            continue
        except (CallbenchError, TypeError, ValueError) as exc:
            message = " ".join(str(exc).split())
            # the track names its flag (--setup 'x': ...): name the grid's field instead
            flag = re.match(r"--([a-z][a-z0-9-]*)\b", message)
            field = flag.group(1).replace("-", "_") if flag else None
            where = f"tracks.{c.track}.{field}" if field in c.settings else f"tracks.{c.track}"
            raise ConfigError(f"{path}: {where}: {message}") from None
        try:
            scoring = c.settings.get("scoring")
            if scoring is not None and scoring not in track.scoring_modes:
                raise ConfigError(
                    f"{path}: tracks.{c.track}.scoring: '{scoring}' is not one of {', '.join(track.scoring_modes)}"
                )
        finally:
            close = getattr(track, "close", None)
            if callable(close):
                close()


def load_grid(path: Path) -> Grid:
    """Read, validate and expand the grid file ``path``."""
    return parse_grid(read_text(path, error=ConfigError), path)


def server_urls(model: str, settings: dict[str, Any]) -> list[str]:
    """The model server URLs of an ``openai:`` cell (its replicas too), as the grid writes them."""
    backend, target = parse_model_spec(model)
    if backend != "openai":
        return []
    from callbench.models.openai_compat import parse_target

    try:
        _, url = parse_target(target)
    except CallbenchError:
        return []  # the cell fails with the backend's own message
    if url is None:
        options = settings.get("model_options") or {}
        url = options.get("base_url") if isinstance(options.get("base_url"), str) else None
    return [u.rstrip("/") for u in (url or "").split(",") if u]
