"""Built-in scenarios, by name (each module defines ``SCENARIO``; imported on first use)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from callbench.errors import ConfigError
from callbench.tracks.stateful.scenario import Scenario, missing_extra

_SCENARIOS = {
    "session": "callbench.tracks.stateful.scenarios.session",
    "tensor": "callbench.tracks.stateful.scenarios.tensor",
    "voice": "callbench.tracks.stateful.scenarios.voice",
}


# scenarios built from OpenAPI specs (benchmarks made by `generate stateful --spec`), registered
# when their benchmark is loaded: name -> (scenario, where it came from)
_REGISTERED: dict[str, tuple[Scenario, str]] = {}


def register_scenario(scenario: Scenario, *, where: str) -> None:
    """Make ``scenario`` available by name; a built-in name, or the same name from another
    benchmark folder with a different spec, is a one-line ConfigError."""
    if scenario.name in _SCENARIOS:
        raise ConfigError(f"{where}: scenario name '{scenario.name}' is a built-in scenario's; generate with another --name")
    old = _REGISTERED.get(scenario.name)
    if old is not None and old[1] != where and getattr(old[0], "model", None) != getattr(scenario, "model", None):
        raise ConfigError(f"{where}: scenario '{scenario.name}' is also loaded from {old[1]} with another model; rename one")
    _REGISTERED[scenario.name] = (scenario, where)


def available_scenarios() -> list[str]:
    return sorted(_SCENARIOS)


def get_scenario(name: str) -> Scenario:
    if name in _REGISTERED:
        return _REGISTERED[name][0]
    if name not in _SCENARIOS:
        raise ConfigError(f"unknown scenario '{name}' (available: {', '.join(available_scenarios())})")
    return importlib.import_module(_SCENARIOS[name]).SCENARIO


def check_extras(names: Iterable[str]) -> None:
    """Before a run or a generation: raise :class:`~callbench.errors.MissingExtraError` (one line,
    with the exact ``pip install 'callbench[EXTRA]'``) when a scenario among ``names`` needs a
    package that is not installed. Where other scenarios of ``names`` could run, the message says
    how to run only those (``--scenario``)."""
    names = sorted(set(names))
    scenarios = [get_scenario(n) for n in names]
    blocked = [s for s in scenarios if missing_extra(s) is not None]
    if not blocked:
        return
    runnable = [s.name for s in scenarios if s not in blocked]
    alternative = f"run the others alone: --scenario {','.join(runnable)}" if runnable else None
    error = missing_extra(blocked[0], alternative)
    assert error is not None
    raise error
