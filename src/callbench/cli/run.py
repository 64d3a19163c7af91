"""``callbench run <track>``: one command per registered track, generated from its options.

A track's definition (:mod:`callbench.tracks.definition`) names a pydantic settings model, and
the shared run settings are :class:`callbench.runs.settings.RunSettings`; each field carries a
:class:`~callbench.tracks.definition.Flag` (its parameter and option names, panel, command-line
type), its description is the help and its default the option's default. The track's
``command`` lists its options in order, with this command's changes (a help text, a default).
So the models are the one source of the flags, the ``--config`` keys (:mod:`callbench.cli.runconfig`
reads the generated signature) and the keyword arguments of ``callbench.run``, and the command's
body is one call of :func:`callbench.api.prepare` (the same path ``callbench.run`` takes).

The commands are built when the ``run`` group is used (:class:`TrackCommands`): ``callbench
--help`` imports no track, and a track registered after the CLI was imported has its command.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from callbench.cli.options import (
    ConfigFile,
    csv_list,
    err_console,
    fail,
    out_console,
    parse_model_args,
    print_outcome,
    run_track,
    setup_sandbox,
)
from callbench.cli.root import run_app
from callbench.errors import CallbenchError, ConfigError

#: The options of a track's command when its definition lists none: the shared ones, ``--config``,
#: then every field of its settings model.
DEFAULT_COMMAND = (
    "model", "scoring", "limit", "per_group", "ids", "concurrency", "max_tokens", "temperature", "seed",
    "model_options", "out_dir", "run_id", "progress", "retry_errors", "max_backend_error_rate",
    "count_backend_errors", "eval_workers", "force", "rescore", "log_to", "config",
)
CONFIG = "config"
_SCALARS = (str, int, float, bool, Path)


@dataclass(frozen=True)
class Param:
    """One option of a generated command: the field it sets (``own``: of the track's settings
    model, else of the shared run settings) and how the command line gives it."""

    field: str
    own: bool
    name: str
    opts: tuple[str, ...]
    cli_type: Any  # what typer gets: a scalar, an optional one, a list, or an Enum of choices
    default: Any
    help: str
    panel: str | None
    hidden: bool
    invert: bool
    target: Any  # the field's own type (to turn a comma list or KEY=VALUE items into it)

    def annotation(self) -> Any:
        option = typer.Option(*self.opts, help=self.help, hidden=self.hidden, rich_help_panel=self.panel)
        return Annotated[self.cli_type, option]


def _optional(hint: Any) -> tuple[Any, bool]:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) < len(typing.get_args(hint)):
        return (args[0] if len(args) == 1 else hint), True
    return hint, False


def _cli_type(param: str, field: str, hint: Any, flag: Any, optional: bool) -> Any:
    """The type typer gets: the flag's choices as an Enum, its ``cli_type``, or the field's type
    (a scalar, or a list of scalars: a repeatable option); anything else is refused by name."""
    if flag.choices:
        inner: Any = enum.Enum(param, {c: c for c in flag.choices}, type=str)
    else:
        inner = flag.cli_type if flag.cli_type is not None else _optional(hint)[0]
    if typing.get_origin(inner) in (list, tuple):
        (item, *_rest) = typing.get_args(inner) or (str,)
        if item not in _SCALARS:
            raise ConfigError(f"options model field '{field}': type {hint!r} has no command-line form")
        return list[item] | None  # type: ignore[valid-type]
    if inner not in _SCALARS and not (isinstance(inner, type) and issubclass(inner, enum.Enum)):
        raise ConfigError(
            f"options model field '{field}': type {hint!r} has no command-line form "
            "(use str, int, float, bool, Path or list[str])"
        )
    return inner | None if optional else inner


def command_params(definition: Any) -> list[Param | None]:
    """The generated command's options in order (None: ``--config``), from the definition's
    ``command`` (or :data:`DEFAULT_COMMAND` and every settings field)."""
    from callbench.runs.settings import RunSettings
    from callbench.tracks.definition import UNSET, Flag, Opt

    model_cls = definition.settings_model()
    own = model_cls.model_fields if model_cls is not None else {}
    layout = definition.command
    if layout is None:
        clash = sorted(set(own) & set(DEFAULT_COMMAND))
        if clash:
            raise ConfigError(f"options model field '{clash[0]}': clashes with the run option --{clash[0].replace('_', '-')}")
        layout = (*DEFAULT_COMMAND, *own)
    out: list[Param | None] = []
    for entry in layout:
        entry = entry if isinstance(entry, Opt) else Opt(entry)
        if entry.field == CONFIG:
            out.append(None)
            continue
        mine = entry.field in own
        info = own[entry.field] if mine else RunSettings.model_fields.get(entry.field)
        if info is None:
            raise ConfigError(f"track '{definition.name}': command option '{entry.field}' is no field of its settings or of the run settings")
        base = next((m for m in info.metadata if isinstance(m, Flag)), Flag())
        flag = base.merged(entry.flag)
        name = flag.name or entry.field
        if flag.default is not UNSET:
            default = flag.default
        elif flag.invert:
            default = False
        else:
            default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        optional = default is None
        cli_type = _cli_type(name, entry.field, info.annotation, flag, optional)
        if typing.get_origin(cli_type) in (typing.Union, types.UnionType) and typing.get_origin(typing.get_args(cli_type)[0]) is list:
            default = None  # a repeatable option: None when not given (the field's default applies)
        if flag.choices and default not in (None, inspect.Parameter.empty):
            default = cli_type(default)
        help_text = (flag.help if flag.help is not None else info.description or "") + flag.help_extra
        out.append(
            Param(
                field=entry.field, own=mine, name=name, opts=flag.opts or ("--" + name.replace("_", "-"),),
                cli_type=cli_type, default=default, help=help_text, panel=flag.panel, hidden=flag.hidden,
                invert=flag.invert, target=_optional(info.annotation)[0],
            )
        )
    return out


def settings_from(params: list[Param], values: dict[str, Any]) -> dict[str, Any]:
    """The command's values as ``callbench.run`` keywords: a value left at None is left out (the
    field's default applies), a choice is its text, a ``--no-x`` flag inverted, a comma list or
    ``KEY=VALUE`` items read into the field's list or mapping."""
    out: dict[str, Any] = {}
    for p in params:
        value = values.get(p.name)
        if value is None:
            continue
        if isinstance(value, enum.Enum):
            value = value.value
        if p.invert:
            value = not value
        elif typing.get_origin(p.target) is dict and isinstance(value, list):
            value = parse_model_args(value)
        elif p.field == "log_to":
            value = csv_list(",".join(value), p.opts[0])
        elif typing.get_origin(p.target) is list and isinstance(value, str):
            value = csv_list(value, p.opts[0])
        out[p.field] = value
    return out


def run_generated(name: str, values: dict[str, Any]) -> None:
    """The body of ``callbench run <name>``: the same preparation as ``callbench.run``, the run
    with signal handling and the ``--config`` record, the track's summary, then the trackers."""
    from callbench.api import log_run_to, prepare
    from callbench.tracks.definition import get_definition, resolve

    config = values.pop(CONFIG, None)
    try:
        definition = get_definition(name)
        params = [p for p in command_params(definition) if p is not None]
        flags = {p.field: p.opts[0] for p in params}
        settings = settings_from(params, values)
        if "unsafe_no_sandbox" in flags:  # decided before any model loads (see docs/security.md)
            setup_sandbox(settings.pop("unsafe_no_sandbox", False))
        prepared = prepare(
            name, settings, name_of=lambda field: flags.get(field, "--" + field.replace("_", "-")), note=_note
        )
        outcome = run_track(prepared.track, prepared.backend, prepared.options, config_file=config)
        printer = resolve(definition.summary) if definition.summary is not None else _print_summary_json
    except CallbenchError as exc:
        fail(exc)
    print_outcome(outcome, printer)
    try:
        log_run_to(outcome.run_dir, prepared.settings.log_to, console=out_console)
    except CallbenchError as exc:
        fail(exc)


def _note(style: str, text: str) -> None:
    """A line a track's hook asked for (a path in it with undecodable bytes shown with escapes)."""
    from callbench.runs.text import encodable

    err_console.print(f"[{style}]{escape(encodable(text))}[/{style}]", highlight=False)


def _print_summary_json(summary: dict[str, Any], console: Any) -> None:
    """A track without a summary printer: its metrics as JSON."""
    import json

    console.print_json(json.dumps(summary.get("metrics", {}), default=str))


def generated_command(definition: Any) -> Callable[..., None]:
    """The function of ``callbench run <name>``, its signature built from the definition."""
    name = definition.name

    def command(**values: Any) -> None:
        run_generated(name, values)

    params = []
    for p in command_params(definition):
        if p is None:
            params.append(inspect.Parameter(CONFIG, inspect.Parameter.KEYWORD_ONLY, annotation=ConfigFile, default=None))
        else:
            params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=p.annotation(), default=p.default))
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = definition.command_help or (definition.description or f"Run track '{name}'.") + (
        "\n\nRe-running the same command resumes: finished samples are kept and skipped."
    )
    command.__name__ = f"run_{name}"
    return command


def _build(name: str) -> Any:
    """The click command of ``callbench run <name>`` (None: no such track, or no settings model)."""
    from callbench.tracks.definition import find_definition

    definition = find_definition(name)
    if definition is None or definition.settings_model() is None:
        return None
    single = typer.Typer(add_completion=False)
    command = generated_command(definition)
    if command.__doc__:  # one line per paragraph, as root.reflow_help does for the other commands
        command.__doc__ = "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(command.__doc__).split("\n\n"))
    single.command(name)(command)
    return typer.main.get_command(single)


class _Commands(MutableMapping[str, Any]):
    """The ``run`` group's commands: its own, plus one per track, built on first use (listing the
    names imports no track)."""

    def __init__(self, own: dict[str, Any]):
        self._own = dict(own)
        self._built: dict[str, Any] = {}

    def _names(self) -> list[str]:
        from callbench.tracks.definition import track_names

        return [n for n in track_names() if n not in self._own]

    def __getitem__(self, key: str) -> Any:
        if key in self._own:
            return self._own[key]
        if key not in self._built:
            command = _build(key)
            if command is None:
                raise KeyError(key)
            self._built[key] = command
        return self._built[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._own[key] = value

    def __delitem__(self, key: str) -> None:
        del self._own[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._own
        yield from (n for n in self._names() if n not in self._own)

    def __len__(self) -> int:
        return len(self._own) + len(self._names())

    def __contains__(self, key: object) -> bool:
        try:
            self[str(key)]
        except KeyError:
            return False
        return True


class TrackCommands(TyperGroup):
    """The ``run`` group: ``run <name>`` for every registered track, generated (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)  # type: ignore[assignment]

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        try:
            return self.commands[cmd_name]
        except KeyError:
            return None


run_app.info.cls = TrackCommands
