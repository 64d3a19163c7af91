"""``--config FILE`` of the run commands: a YAML or JSON mapping whose keys are the command's long
option names (``max-tokens`` or ``max_tokens``), loaded into click's ``default_map`` so that an
option given on the command line still wins over the file.

Each value is checked here against the type the command function declares for the option, so a
wrong key, a wrong type or a malformed file is one line naming the file and the key (typer would
name only the option, or silently truncate ``max-tokens: 2.5`` to 2). Only what click and every
typer version share is used: a command's ``params`` (``name``, ``opts``, ``is_eager``), its
function's annotations and ``Context.default_map``. Values are what the flag takes: paths are
relative to the working directory, as on the command line.
"""

from __future__ import annotations

import datetime
import difflib
import enum
import hashlib
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError

# Options that take one comma-separated string on the command line; a file may give a list.
CSV_OPTIONS = frozenset({"ids", "api"})
_TEXT = (str, int, float, datetime.date)  # YAML reads run-id: 2024-01-01 as a date: it is text here


def read(path: Path, where: str) -> dict[Any, Any]:
    """The file's mapping (JSON for ``.json``, else YAML, of which JSON is a subset)."""
    from callbench.files import read_text

    text = read_text(path, error=ConfigError, label=where)
    try:
        if path.suffix.lower() == ".json":
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        else:
            import yaml

            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = f"line {mark.line + 1}: " if mark is not None else ""
                problem = getattr(exc, "problem", None) or str(exc)
                raise ConfigError(f"{where}: not valid YAML ({line}{problem})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply") from None
    from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value

    try:  # a value that parsed deep, or YAML aliases that expand to millions of values
        check_value(doc, what=where, max_depth=DOCUMENT_MAX_DEPTH)
    except UntrustedInputError as exc:
        raise ConfigError(str(exc)) from None
    if doc is None:
        raise ConfigError(f"{where}: empty; expected a mapping of option names to values")
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of option names to values, got {_kind(doc)}")
    return doc


def default_map(command: Any, path: Path, *, ctx: Any = None) -> dict[str, Any]:
    """``command``'s parameter names -> the values ``path`` sets, checked; a null value leaves the
    option at its default. ``command`` is the click command typer built (``ctx.command``)."""
    where = f"--config {path}"
    doc = read(path, where)
    options = _long_options(command)
    hints = _hints(command)
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, value in doc.items():
        name = options.get(key) if isinstance(key, str) else None
        if name is None:
            raise ConfigError(f"{where}: unknown key {_key(key)} (no such option of {_command_name(command, ctx)}{_hint(key, options)})")
        if name in seen:
            raise ConfigError(f"{where}: keys '{seen[name]}' and '{key}' set the same option")
        seen[name] = key
        if value is not None:
            out[name] = _value(name, hints.get(name), key, value, where)
    return out


def describe(path: Path) -> dict[str, Any]:
    """How the run's config.json names the file that gave this session's options: its path and a
    digest of its content (the options themselves are in the identity already)."""
    try:
        digest: str | None = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:  # gone since it was read: the path still says which file it was
        digest = None
    return {"path": str(path.resolve()), "sha256": digest}


def _long_options(command: Any) -> dict[str, str]:
    """Every spelling a key may take -> the parameter's name: ``max-tokens`` and ``max_tokens`` for
    ``--max-tokens``. Eager options (``--config``, ``--help``) cannot be set from a file."""
    out: dict[str, str] = {}
    for param in command.params:
        if getattr(param, "param_type_name", None) != "option" or param.is_eager:
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                out[opt[2:]] = param.name
                out[opt[2:].replace("-", "_")] = param.name
    return out


def _hints(command: Any) -> dict[str, Any]:
    """The command function's parameter types (typer wraps it; ``functools.wraps`` leads back)."""
    function = inspect.unwrap(command.callback) if command.callback is not None else None
    try:
        return typing.get_type_hints(function) if function is not None else {}
    except (NameError, TypeError):  # an annotation that cannot be resolved: values are taken as text
        return {}


def _shape(hint: Any) -> tuple[Any, bool]:
    """``int | None`` -> (int, False); ``list[str] | None`` -> (str, True)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else str
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint) or (str,)
        return item, True
    return hint, False


def _value(name: str, hint: Any, key: str, value: Any, where: str) -> Any:
    kind, many = _shape(hint)
    if many:
        if name == "model_arg" and isinstance(value, dict):  # model-arg: {n_threads: 1}
            value = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items()]
        items = value if isinstance(value, list) else [value]
        return [_scalar(kind, key, item, where) for item in items]
    if name in CSV_OPTIONS and isinstance(value, list):
        return ",".join(str(_scalar(kind, key, item, where)) for item in value)
    return _scalar(kind, key, value, where)


def _scalar(kind: Any, key: str, value: Any, where: str) -> Any:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is bool:
        ok, expected = isinstance(value, bool), "true or false"
    elif kind is int:
        ok, expected = number and isinstance(value, int), "an integer"
    elif kind is float:
        ok, expected = number, "a number"
    elif isinstance(kind, type) and issubclass(kind, enum.Enum):
        choices = [str(m.value) for m in kind]
        ok, expected = isinstance(value, str) and value in choices, f"one of {', '.join(choices)}"
    else:  # text and paths
        ok, expected = isinstance(value, _TEXT) and not isinstance(value, bool), "a string"
        value = str(value) if ok else value
    if not ok:
        raise ConfigError(f"{where}: {key}: expected {expected}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _key(key: Any) -> str:
    return f"'{key}'" if isinstance(key, str) else repr(key)


def _hint(key: Any, options: dict[str, str]) -> str:
    if not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, list(options), n=1)
    return f"; did you mean '{close[0].replace('_', '-')}'?" if close else ""


def _command_name(command: Any, ctx: Any) -> str:
    """``'callbench run webapi'`` (the root's own name differs between a shell and a test)."""
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return "'" + " ".join(["callbench", *reversed(names)] if names else [command.name or "command"]) + "'"
