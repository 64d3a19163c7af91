"""What a track is, said once: a :class:`TrackDefinition`, registered by name (as inspect_ai
registers tasks).

Everything outside the track that needs to know about it asks the registry: the runner's
``identity.track`` check and ``callbench.run`` (:func:`get_definition`: the ``Track`` class and
its options), the report (its view), ``callbench run`` (the summary printed after a run),
``callbench export``/``load_run`` (the columns derived from its verdicts), ``callbench show`` and
the report's sample views (where its task data is and how it is read). No module outside a
track's own definition switches on its name.

A definition names what lives above the tracks' layer (the report view, the summary printer, the
``show`` renderer) by a dotted ``"module:attr"`` string resolved on first use, so a track package
never imports the report or the CLI; anything may also be given as the object itself (a track
defined in user code). The built-in tracks register from ``callbench.tracks.<name>.definition``
(:data:`BUILTIN`), imported on first look-up; a track in user code calls :func:`register` (or
decorates its ``Track`` class with :func:`track`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator

from callbench.errors import ConfigError

#: ``"package.module:attr"`` (resolved on first use) or the object itself.
Ref = str | object

#: The built-in tracks and the modules that define them, each imported when its track is first
#: looked up (``callbench list`` names them without importing any).
BUILTIN = {
    "webapi": "callbench.tracks.webapi.definition",
    "nested": "callbench.tracks.nested.definition",
    "stateful": "callbench.tracks.stateful.definition",
}


def resolve(ref: Ref) -> Any:
    """The object a :data:`Ref` names (a dotted ``"module:attr"`` is imported)."""
    if isinstance(ref, str):
        module, sep, attr = ref.partition(":")
        if not sep or not module or not attr:
            raise ConfigError(f"track definition: '{ref}' is not 'package.module:attr'")
        return getattr(importlib.import_module(module), attr)
    return ref


def _one_file(path: Path) -> list[Path]:
    return [path]


def _same(value: str) -> str:
    return value


def _same_path(path: Path) -> Path:
    return path


class _Unset:
    """The marker of a :class:`Flag` attribute left as it is (a default may be None)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Flag:
    """How an options-model field is given on the command line: ``Annotated[T, Flag(...)]`` on the
    field, or a track command's change of a shared field (:class:`Opt`). The field's description is
    the option's help, its default the option's default, its name the keyword of ``callbench.run``.

    ``name``: the command's parameter, which is also the ``--config`` key (default: the field's
    name); ``opts``: the option's spellings (default ``--<name with dashes>``); ``panel``: its
    ``--help`` panel; ``choices``: the values the command line offers (the field keeps the text);
    ``cli_type``: the command-line type where it differs from the field's (``Path`` for a text
    field that names a file, ``str`` for a comma-separated list, ``list[str]`` for a repeatable
    option); ``invert``: a ``--no-x`` flag that sets the field to False; ``api``: False for an
    option of the command line only (not a ``callbench.run`` keyword). In an :class:`Opt`,
    ``help``, ``help_extra`` (appended) and ``default`` change the field's for that command.
    """

    name: str | None = None
    opts: tuple[str, ...] = ()
    panel: str | None = None
    hidden: bool = False
    choices: tuple[str, ...] = ()
    cli_type: object = None
    invert: bool = False
    api: bool = True
    help: str | None = None
    help_extra: str = ""
    default: object = UNSET

    def merged(self, other: Flag) -> Flag:
        """This flag with every attribute ``other`` sets (differs from a bare ``Flag()``'s)."""
        bare = Flag()
        changes = {f.name: getattr(other, f.name) for f in fields(Flag) if getattr(other, f.name) != getattr(bare, f.name)}
        if "help_extra" in changes:
            changes["help_extra"] = self.help_extra + changes["help_extra"]
        return replace(self, **changes)


@dataclass(frozen=True)
class Opt:
    """One option of a track's ``callbench run`` command (:attr:`TrackDefinition.command`): the field
    ``field`` of the track's options model or of the shared run settings
    (:class:`callbench.runs.settings.RunSettings`), with ``flag``'s changes for this command."""

    field: str
    flag: Flag = Flag()


def opt(field: str, **changes: Any) -> Opt:
    """``opt("limit", help="...")``: field ``field`` with the :class:`Flag` attributes ``changes``."""
    return Opt(field, Flag(**changes))


def _path_text(value: object) -> object:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


#: A text field that names a file: a ``Path`` given to ``callbench.run`` is taken as its text.
PathText = Annotated[str, BeforeValidator(_path_text)]

#: A message a track's hook asks the command line to print: (rich style, text).
Note = tuple[str, str]


@dataclass(frozen=True)
class TaskSource:
    """Where a track's task data lies and how it is read: ``callbench show`` shows a sample beside
    its task, the report's sample views show what was expected.

    A run's identity records a digest of the data it read (``digest_key``, at its top level or in
    its ``scoring`` part) and, in older runs, its path (``path_key``). The candidates are a file the
    user names (``given`` turns what ``--data`` names into the task file), the recorded path, then
    ``defaults(data_root)`` (the data dir's and the built-in sets; ``data_root`` None when the data
    dir is unknown); the first whose digest (SHA-256 over ``files(path)``) matches is read by ``load``.
    """

    load: Callable[[Path], dict[str, Any]]  # tasks by id
    defaults: Callable[[Path | None], list[Path]]
    digest_key: str = "data_sha256"
    path_key: str = "data_file"
    files: Callable[[Path], list[Path]] = _one_file
    given: Callable[[Path], Path] = _same_path
    task_id: Callable[[str], str] = _same  # a sample id -> the id of its task


@dataclass(frozen=True)
class TrackDefinition:
    """One track, everything callbench needs of it outside its own package.

    ``track``: the :class:`~callbench.tracks.base.Track` subclass, built as ``track(options(**kw))``
    (``options`` None: ``track(**kw)``). ``view``: its report view (a
    :class:`~callbench.report.model.TrackView` subclass). ``summary``: ``print(summary, console)``
    after ``callbench run``. ``columns``: ``add(mode, verdict, out)`` puts the columns derived
    from one scoring mode's verdict into ``out`` (export rows: the flattened verdict follows).
    ``tasks``: the reference loader (:class:`TaskSource`). ``show``: the ``callbench show``
    renderer (None: the generic one, which prints the task as it was loaded). ``model_option``:
    the option that gets the model's spec when ``callbench.run`` leaves it out.

    How the track is configured from outside, said once: ``settings`` names a pydantic model, the
    one source of the track's ``callbench run <name>`` flags (each field with its :class:`Flag`),
    ``--config`` keys and ``callbench.run`` keywords (None: ``options`` when it is a pydantic
    model). ``command``: the command's options in order, each a field of ``settings`` or of the
    shared run settings, by name or as an :class:`Opt` with this command's changes, and
    ``"config"`` (None: the shared options, then every field of ``settings``);
    ``command_help``: its ``--help`` text. Hooks: ``prepare(settings, run)`` turns the validated
    settings into the keyword arguments of ``options`` (None: its fields of the same names), and
    may check them against ``run`` (``model``, ``model_options``, which it may change, and
    ``scoring``); ``notes(track, run)``: lines to print once the track is built;
    ``check_backend(track, backend, run)``: a check of the loaded backend, and lines to print.
    """

    name: str
    track: Ref
    options: Ref | None = None
    description: str = ""
    view: Ref | None = None
    summary: Ref | None = None
    columns: Callable[[str, dict[str, Any], dict[str, Any]], None] | None = None
    tasks: TaskSource | None = None
    show: Ref | None = None
    model_option: str | None = None
    settings: Ref | None = None
    command: tuple[str | Opt, ...] | None = None
    command_help: str = ""
    prepare: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    # (the track and the backend untyped here: tracks.base imports this module)
    notes: Callable[[Any, dict[str, Any]], list[Note]] | None = None
    check_backend: Callable[[Any, Any, dict[str, Any]], list[Note]] | None = None

    def track_class(self) -> Any:
        return resolve(self.track)

    def make(self, **options: Any) -> Any:
        """The track, configured with ``options`` (the keyword arguments of ``callbench.run``)."""
        cls = self.track_class()
        if self.options is None:
            return cls(**options)
        return cls(self.make_options(**options))

    def settings_model(self) -> Any:
        """The pydantic model of the track's settings (``settings``, else a pydantic ``options``),
        or None (a track configured by keyword arguments only)."""
        for ref in (self.settings, self.options):
            if ref is not None:
                model = resolve(ref)
                if hasattr(model, "model_fields"):
                    return model
        return None

    def options_for(self, settings: BaseModel, run: dict[str, Any]) -> Any:
        """The track's options object from its validated ``settings`` (an instance of
        :meth:`settings_model`): the settings themselves when they are the options, else
        ``options(**prepare(settings, run))`` (no ``prepare``: the fields of the same names)."""
        target = resolve(self.options) if self.options is not None else None
        if target is None or target is type(settings):
            return settings
        if self.prepare is not None:
            return target(**self.prepare(settings, run))
        names = {f.name for f in fields(target)}
        return target(**{k: getattr(settings, k) for k in type(settings).model_fields if k in names})

    def make_options(self, **options: Any) -> Any:
        """The options object; a pydantic model's refusal is a one-line ConfigError naming the
        option (``callbench run`` names the flag instead, see :mod:`callbench.cli.run`)."""
        model = resolve(self.options)
        try:
            return model(**options)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            errors = getattr(exc, "errors", None)
            if not callable(errors):
                raise
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc") or ()) or self.name
            raise ConfigError(f"track '{self.name}': option '{where}': {first.get('msg')}") from None


_REGISTRY: dict[str, TrackDefinition] = {}


def _load(name: str) -> None:
    """Import the definition module of built-in track ``name`` (it registers itself)."""
    if name in BUILTIN and name not in _REGISTRY:
        importlib.import_module(BUILTIN[name])


def register(definition: TrackDefinition) -> TrackDefinition:
    """Add ``definition`` to the registry; a second, different definition of a name is an error
    (registering the same one again, as a re-imported module does, is not)."""
    if not definition.name or not definition.name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"track definition: name {definition.name!r} must be letters, digits, '-' or '_'")
    old = _REGISTRY.get(definition.name)
    if old is not None and old != definition:
        raise ConfigError(f"track '{definition.name}' is already defined (unregister it first)")
    _REGISTRY[definition.name] = definition
    return definition


def unregister(name: str) -> None:
    """Remove track ``name`` (a track that user code or a test registered for a while)."""
    _REGISTRY.pop(name, None)


@contextmanager
def registered(definition: TrackDefinition) -> Iterator[TrackDefinition]:
    """``definition`` registered for the ``with`` block only."""
    register(definition)
    try:
        yield definition
    finally:
        unregister(definition.name)


def track(name: str, **fields: Any) -> Callable[[type], type]:
    """Class decorator: register the decorated ``Track`` subclass as track ``name`` (``fields``:
    the other :class:`TrackDefinition` fields)."""

    def decorate(cls: type) -> type:
        register(TrackDefinition(name=name, track=cls, **fields))
        return cls

    return decorate


def definitions() -> list[TrackDefinition]:
    """Every registered track, by name (the built-in ones loaded)."""
    for name in BUILTIN:
        _load(name)
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def registered_definitions() -> list[TrackDefinition]:
    """The tracks registered so far (no built-in one is loaded for it)."""
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def track_names() -> list[str]:
    """Every track's name, sorted, without loading any definition."""
    return sorted({*BUILTIN, *_REGISTRY})


def get_definition(name: str) -> TrackDefinition:
    """The definition of track ``name``; an unknown name is a one-line ConfigError."""
    found = find_definition(name)
    if found is None:
        raise ConfigError(f"unknown track '{name}' (available: {', '.join(track_names())})")
    return found


def find_definition(name: str) -> TrackDefinition | None:
    """The definition of track ``name``, or None."""
    _load(name)
    return _REGISTRY.get(name)


def description(name: str) -> str:
    """Track ``name``'s one-line description. A built-in track's is read from its definition
    module's source (the ``description=`` of its ``TrackDefinition(...)``) when the module is not
    loaded yet: ``callbench list`` stays fast, as importing a track may load specs and scenarios."""
    if name in _REGISTRY or name not in BUILTIN:
        found = _REGISTRY.get(name)
        return found.description if found is not None else ""
    import ast

    source = _source_file(BUILTIN[name])
    try:
        tree = ast.parse(source.read_text(encoding="utf-8")) if source is not None else None
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is None:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "TrackDefinition":
            for kw in node.keywords:
                if kw.arg == "description" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
    return ""


def _source_file(module: str) -> Path | None:
    """The ``.py`` file of ``module``, found under its nearest loaded package without importing
    anything (``importlib.util.find_spec`` would run the ``__init__`` of its packages)."""
    import sys

    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        package = sys.modules.get(".".join(parts[:i]))
        if package is None:
            continue
        for base in getattr(package, "__path__", None) or []:
            path = Path(base, *parts[i:-1], parts[-1] + ".py")
            if path.is_file():
                return path
        return None
    return None
