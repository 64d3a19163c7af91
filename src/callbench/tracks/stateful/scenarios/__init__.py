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


def available_scenarios() -> list[str]:
    return sorted(_SCENARIOS)


def get_scenario(name: str) -> Scenario:
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
