"""Model backends registered by name, imported lazily.

``load_model("openai:qwen@http://127.0.0.1:8000/v1")`` splits the spec at the first ``:`` into a
backend name and a target, imports the backend's module only then (so a missing optional SDK is a
one-line error, not an import failure at startup) and calls its registered factory.
Third-party packages add backends through the ``callbench.models`` entry-point group.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from callbench.errors import ConfigError
from callbench.models.base import ModelBackend

Factory = Callable[[str, dict[str, Any]], ModelBackend]

_FACTORIES: dict[str, Factory] = {}

# name -> module that registers it on import
_BUILTIN_MODULES: dict[str, str] = {
    "gold": "callbench.models.gold",
    "replay": "callbench.models.replay",
    "openai": "callbench.models.openai_compat",
    "llamacpp": "callbench.models.llamacpp",
    "hf": "callbench.models.hf",
}


def register_model(name: str) -> Callable[[Factory], Factory]:
    """Decorator: register ``factory(target, options) -> ModelBackend`` under ``name``."""

    def decorate(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def available_models() -> list[str]:
    names = set(_BUILTIN_MODULES) | set(_FACTORIES)
    names |= {ep.name for ep in entry_points(group="callbench.models")}
    return sorted(names)


def _ensure_registered(name: str) -> None:
    if name in _FACTORIES:
        return
    if name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
        return
    for ep in entry_points(group="callbench.models"):
        if ep.name == name:
            ep.load()
            return


def parse_model_spec(spec: str) -> tuple[str, str]:
    name, _, target = spec.partition(":")
    return name.strip(), target.strip()


def load_model(spec: str, **options: Any) -> ModelBackend:
    """Build the backend for a spec such as ``gold``, ``replay:preds.jsonl`` or ``llamacpp:default``."""
    name, target = parse_model_spec(spec)
    if not name:
        raise ConfigError(f"--model '{spec}': empty backend name (expected NAME[:TARGET])")
    _ensure_registered(name)
    if name not in _FACTORIES:
        raise ConfigError(f"--model '{spec}': unknown backend '{name}' (available: {', '.join(available_models())})")
    return _FACTORIES[name](target, dict(options))
