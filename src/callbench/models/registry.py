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
#: ``check(options)``: a one-line ConfigError for an option the backend does not accept.
OptionCheck = Callable[[dict[str, Any]], Any]

_FACTORIES: dict[str, Factory] = {}
_CHECKS: dict[str, OptionCheck] = {}

# name -> module that registers it on import
_BUILTIN_MODULES: dict[str, str] = {
    "gold": "callbench.models.gold",
    "replay": "callbench.models.replay",
    "openai": "callbench.models.openai_compat",
    "llamacpp": "callbench.models.llamacpp",
    "hf": "callbench.models.hf",
    "litellm": "callbench.models.litellm_backend",
}


def register_model(name: str, *, check: OptionCheck | None = None) -> Callable[[Factory], Factory]:
    """Decorator: register ``factory(target, options) -> ModelBackend`` under ``name``; ``check``
    validates options without building anything (:func:`check_model_options`)."""

    def decorate(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        if check is not None:
            _CHECKS[name] = check
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


def check_model_options(spec: str, options: dict[str, Any]) -> None:
    """A one-line ConfigError now for a backend option ``spec``'s backend does not accept (or a
    value outside an option's choices), before data or weights load; a backend that registered no
    ``check`` has its options checked when it is built."""
    name, _ = parse_model_spec(spec)
    if not name:
        return  # load_model says what is wrong with the spec
    _ensure_registered(name)
    if name in _CHECKS:
        _CHECKS[name]({k: v for k, v in options.items() if k != "answer_cache"})


def load_model(spec: str, **options: Any) -> ModelBackend:
    """Build the backend for a spec such as ``gold``, ``replay:preds.jsonl`` or ``llamacpp:default``."""
    name, target = parse_model_spec(spec)
    if not name:
        raise ConfigError(f"--model '{spec}': empty backend name (expected NAME[:TARGET])")
    _ensure_registered(name)
    if name not in _FACTORIES:
        raise ConfigError(f"--model '{spec}': unknown backend '{name}' (available: {', '.join(available_models())})")
    options = dict(options)
    cache = options.pop("answer_cache", None)  # any backend: answers shared across runs
    backend = _FACTORIES[name](target, options)
    if cache:
        from callbench.models.answer_cache import AnswerStore, CachedBackend

        return CachedBackend(backend, AnswerStore(cache))
    return backend
