"""Typed reading of backend options.

Options reach a factory as a plain dict, often straight from the command line, where every value is a
string (``--model-opt timeout=30``). Each backend declares the options it knows with a type and a
default; this module coerces the strings and turns a typo or a bad value into a one-line
:class:`ConfigError` instead of a silently ignored setting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from callbench.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Opt:
    """One known option: its type (``int``, ``float``, ``bool``, ``str``, ``dict``), default and,
    for an option with a fixed set of values, those values (``choices``)."""

    type: type
    default: Any = None
    choices: tuple[Any, ...] | None = None


def _coerce(backend: str, name: str, value: Any, kind: type) -> Any:
    if value is None:
        return None
    bad = ConfigError(f"model '{backend}': option {name}={value!r} is not a valid {kind.__name__}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return bool(value)
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise bad
    if kind is int:
        if isinstance(value, bool):
            raise bad
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            raise bad from None
    if kind is float:
        if isinstance(value, bool):
            raise bad
        try:
            return float(value)
        except (TypeError, ValueError):
            raise bad from None
    if kind is dict:
        if isinstance(value, dict):
            return dict(value)
        try:
            parsed = json.loads(str(value))
        except json.JSONDecodeError:
            raise bad from None
        if not isinstance(parsed, dict):
            raise bad
        return parsed
    return str(value)


def read_options(backend: str, options: dict[str, Any], known: dict[str, Opt]) -> dict[str, Any]:
    """Return every known option (given or default), coerced; an unknown name or a value outside an
    option's ``choices`` is a one-line ConfigError naming the option and what is accepted."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        accepted = ", ".join(sorted(known)) or "none"
        raise ConfigError(f"model '{backend}': unknown option(s) {', '.join(unknown)} (known: {accepted})")
    out: dict[str, Any] = {}
    for name, opt in known.items():
        value = _coerce(backend, name, options[name], opt.type) if name in options else opt.default
        if name in options and opt.choices is not None and value not in opt.choices:
            raise ConfigError(
                f"model '{backend}': option {name}={options[name]!r} is not one of {', '.join(map(str, opt.choices))}"
            )
        out[name] = value
    return out
