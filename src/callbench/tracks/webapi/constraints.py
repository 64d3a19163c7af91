"""Constrained decoding for the web API track: one grammar per spec/setup/operation, shared by
all samples that need it, and a per-sample view that remembers what the constraint did."""

from __future__ import annotations

from typing import Any

from callbench.constrain.per_sample import SampleConstraint, summarize_constraint_stats  # noqa: F401 - re-exported
from callbench.specs import ApiSpec
from callbench.tracks.webapi.dataset import WebApiTask


def in_scope(starter: str) -> set[str]:
    """Variables the starter code declares (usable as values in the call), except axios itself."""
    if not starter:
        return set()
    from callbench.sandbox import prepare_code

    try:
        _, declared = prepare_code(starter)
    except Exception:  # noqa: BLE001 - a starter we cannot parse just contributes no names
        return set()
    return {name for name in declared if name != "axios"}


class ConstraintFactory:
    """Builds (and caches) the constraint for a task."""

    def __init__(self, setup: str, options: Any = None):
        self.setup = setup
        self.options = options
        self._shared: dict[tuple[Any, ...], Any] = {}

    def for_task(self, task: WebApiTask, spec: ApiSpec, starter: str = "") -> SampleConstraint:
        from callbench.constrain.webapi_constraint import webapi_constraint
        from callbench.constrain.webapi_grammar import GrammarOptions, build_webapi_grammar

        idents = tuple(sorted(set(task.definitions or {}) | in_scope(starter)))
        options = self.options or GrammarOptions()
        if self.setup == "args":
            key = (id(spec), "args", task.config.method, task.config.url, idents)
            method, url = task.config.method, task.config.url
        else:
            key = (id(spec), "full", None, None, idents)
            method = url = None
        shared = self._shared.get(key)
        if shared is None:
            grammar = build_webapi_grammar(spec, setup=self.setup, method=method, url=url, identifiers=idents, options=options)
            shared = webapi_constraint(grammar, spec, name=f"{task.api}/{self.setup}")
            self._shared[key] = shared
        return SampleConstraint(shared)
