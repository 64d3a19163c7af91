"""Built-in scenarios, by name (each module defines ``SCENARIO``; imported on first use)."""

from __future__ import annotations

import importlib

from callbench.errors import ConfigError
from callbench.tracks.stateful.scenario import Scenario

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
