"""Constrained decoding for the web API track: one grammar per spec/setup/operation, shared by
all samples that need it, and a per-sample view that remembers what the constraint did."""

from __future__ import annotations

from typing import Any

from callbench.constrain.per_sample import SampleConstraint, summarize_constraint_stats  # noqa: F401 - re-exported
from callbench.specs import ApiSpec
from callbench.tracks.webapi.dataset import WebApiTask


def in_scope(starter: str, *, real_world: bool = True) -> set[str]:
    """The names a completion of `starter` may use as values: those visible where the starter ends
    (`callbench.sandbox.js_scope.visible_names`: the enclosing functions' parameters, the locals
    declared before the cut in the enclosing blocks, top-level declarations and imports, implicit
    globals of sloppy code, ``this`` inside a method or function, the Node global ``process``),
    except axios itself.

    real_world: keep ``this`` and ``process``, which the real-world grammar profile reads as the
    roots of member chains (``this.baseUrl``, ``process.env.KEY``; see ``GrammarOptions.real_world``).
    Off (the paper profile, whose values are bare identifiers): only names the starter declares or
    binds, so WAPIIBench's top-level starters keep the identifiers they always had."""
    if not starter:
        return set()
    from callbench.sandbox.js_scope import NODE_GLOBALS, visible_names

    names = set(visible_names(starter)) - {"axios"}
    if not real_world:
        names -= {"this", *NODE_GLOBALS}
    return names


class ConstraintFactory:
    """Builds (and caches) the constraint for a task."""

    def __init__(self, setup: str, options: Any = None):
        self.setup = setup
        self.options = options
        self._shared: dict[tuple[Any, ...], Any] = {}

    def for_task(self, task: WebApiTask, spec: ApiSpec, starter: str = "") -> SampleConstraint:
        from callbench.constrain.webapi_constraint import webapi_constraint
        from callbench.constrain.webapi_grammar import GrammarOptions, build_webapi_grammar

        options = self.options or GrammarOptions()
        idents = tuple(sorted(set(task.definitions or {}) | in_scope(starter, real_world=options.real_world)))
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
