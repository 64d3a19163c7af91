"""Constrained decoding for the web API track: one grammar per spec/setup/operation, shared by
all samples that need it, and a per-sample view that remembers what the constraint did."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from callbench.constrain.per_sample import SampleConstraint, summarize_constraint_stats  # noqa: F401 - re-exported
from callbench.specs import ApiSpec
from callbench.tracks.webapi.dataset import WebApiTask

if TYPE_CHECKING:
    from callbench.constrain.webapi_grammar import GrammarOptions


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


def url_values_in_scope(starter: str) -> dict[str, str]:
    """What the starter's names hold where the code fixes it, as URL patterns
    (:func:`callbench.sandbox.js_values.url_values`: text, ``\x01`` for each unknown part): the
    grammar takes a name whose value is an operation's URL as the URL (``axios.get(url)``,
    ``axios.get(urlLink + key)``; ``build_webapi_grammar``'s ``url_values``). Only names also in
    scope (:func:`in_scope`) are used there."""
    if not starter:
        return {}
    from callbench.sandbox.js_values import url_values

    try:
        return url_values(starter)
    except Exception:  # noqa: BLE001 - a starter we cannot read just fixes no value
        return {}


def request_configs_in_scope(starter: str, spec: ApiSpec, options: Any = None) -> tuple[str, ...]:
    """Names the starter binds to a whole request config of literal values
    (:func:`callbench.sandbox.js_values.request_configs`) that the grammar itself would take
    written out (``request({ method: ..., url: ..., ... })`` under ``options``, key tracker
    included) and whose request the data check allows
    (:func:`callbench.tracks.webapi.audit.cross_check_config`): the grammar takes
    ``request(name)`` for them (``build_webapi_grammar``'s ``request_configs``), as the request is
    then exactly the one the starter states, held to the same rules as the literal object."""
    if not starter:
        return ()
    from callbench.constrain.check import check_continuation
    from callbench.constrain.webapi_grammar import GrammarOptions
    from callbench.sandbox.js_values import request_configs
    from callbench.tracks.webapi.audit import cross_check_config

    try:
        configs = request_configs(starter)
    except Exception:  # noqa: BLE001 - a starter we cannot read offers no config
        return ()
    names = in_scope(starter) if configs else set()
    out = []
    for name, config in configs.items():
        if name not in names or cross_check_config(config, spec):
            continue
        ordered = {"method": config.get("method", "get"), "url": config["url"]}
        ordered.update((k, v) for k, v in config.items() if k not in ordered)
        literal = "request(" + json.dumps(ordered, ensure_ascii=False) + ")"
        try:
            res = check_continuation(spec, literal, options=options or GrammarOptions())
        except Exception:  # noqa: BLE001 - no grammar for this spec: nothing is offered
            return ()
        if res.allowed:
            out.append(name)
    return tuple(sorted(out))


def task_grammar_options(task: WebApiTask, options: GrammarOptions) -> GrammarOptions:
    """The grammar options for ``task``: a task whose request goes without a credential
    (``credentials: "none"``) is not made to write one (``require_credentials=False``; one written
    is still allowed). The paper's credential rule is WAPIIBench's own and stays as it is."""
    if task.credentials == "none" and options.credential_rule != "paper" and options.require_credentials:
        return replace(options, require_credentials=False)
    return options


class ConstraintFactory:
    """Builds (and caches) the constraint for a task."""

    def __init__(self, setup: str, options: Any = None):
        self.setup = setup
        self.options = options
        self._shared: dict[tuple[Any, ...], Any] = {}

    def for_task(self, task: WebApiTask, spec: ApiSpec, starter: str = "") -> SampleConstraint:
        from callbench.constrain.webapi_constraint import webapi_constraint
        from callbench.constrain.webapi_grammar import GrammarOptions, build_webapi_grammar

        options = task_grammar_options(task, self.options or GrammarOptions())
        idents = tuple(sorted(set(task.definitions or {}) | in_scope(starter, real_world=options.real_world)))
        values: dict[str, str] = {}
        configs: tuple[str, ...] = ()
        if self.setup == "args":
            key: tuple[Any, ...] = (id(spec), options, "args", task.config.method, task.config.url, idents)
            method, url = task.config.method, task.config.url
        else:
            if options.real_world:
                values = {k: v for k, v in url_values_in_scope(starter).items() if k in idents}
                configs = request_configs_in_scope(starter, spec, options)
            key = (id(spec), options, "full", None, None, idents, configs, tuple(sorted(values.items())))
            method = url = None
        shared = self._shared.get(key)
        if shared is None:
            extra: dict[str, Any] = {"url_values": values} if values else {}  # names whose value the starter fixes
            if configs:  # names holding a whole request config the spec allows
                extra["request_configs"] = configs
            grammar = build_webapi_grammar(
                spec, setup=self.setup, method=method, url=url, identifiers=idents, options=options, **extra
            )
            shared = webapi_constraint(grammar, spec, name=f"{task.api}/{self.setup}")
            self._shared[key] = shared
        return SampleConstraint(shared)
