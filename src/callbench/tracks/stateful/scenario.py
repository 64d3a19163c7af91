"""The declarative model of an API's states that StateGen samples programs from.

A :class:`Scenario` is typed Python, validated when it is built: object types (the server-side
objects and client values a program handles), APIs with parameter domains, preconditions and
effects on an abstract :class:`World`, one Python *expression* template per API, how the result
binds to a variable, and one phrase per API for the template task writer. The generator
(:mod:`callbench.tracks.stateful.sampling`, :mod:`callbench.tracks.stateful.program`) reads only
this model: adding an API to a scenario is adding one :class:`Api` entry.

Why typed Python rather than YAML: effects need arithmetic a YAML dialect would have to invent
(conv2d output shapes, text durations); Python callables keep them exact and testable, while
the structure (names, params, templates, bindings) stays plain data that is validated here.

Templates use ``$name`` placeholders (one per parameter), so braces in f-strings and dict
literals need no escaping: ``requests.get(f"{BASE_URL}/api/sessions/{$source}/{$type}").json()``.
Object parameters render as ``ObjectType.ref`` applied to the variable holding the object
(e.g. ``{var}['id']``), value parameters as the preloaded input variable holding the value.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any, Literal

from callbench.errors import ConfigError, MissingExtraError

START = "<new>"  # "last API" of an object that no call has touched yet (seeded by the initial state)

_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass
class AbsObject:
    """One object in the abstract state: its type, attributes, the last API applied to it and the
    Python expression that reaches it in the program (``session_1``, ``voices_2[0]``)."""

    oid: int
    type: str
    attrs: dict[str, Any]
    last: str = START
    expr: str | None = None
    alive: bool = True


class World:
    """Abstract state while a trace is sampled: objects by id, plus client values.

    Effects call :meth:`create`, :meth:`update` and :meth:`delete`; the sampler records transition
    pairs from each object's ``last`` API before the effect runs.
    """

    def __init__(self) -> None:
        self.objects: dict[int, AbsObject] = {}
        self._next = 1
        self.data: dict[str, Any] = {}  # scenario-private bookkeeping (e.g. id counters)

    def create(self, type_: str, /, **attrs: Any) -> AbsObject:
        obj = AbsObject(self._next, type_, dict(attrs))
        self.objects[obj.oid] = obj
        self._next += 1
        return obj

    def update(self, obj: AbsObject, **attrs: Any) -> AbsObject:
        obj.attrs.update(attrs)
        return obj

    def delete(self, obj: AbsObject) -> None:
        obj.alive = False

    def live(self, type: str | None = None) -> list[AbsObject]:
        return [o for o in self.objects.values() if o.alive and (type is None or o.type == type)]

    def clone(self) -> World:
        return copy.deepcopy(self)


@dataclass(frozen=True)
class ObjectType:
    """A kind of object programs handle. ``ref`` renders a parameter that takes this object;
    ``probes`` are numeric views usable in injected conditions: name -> (code template with
    ``{var}``, function of the abstract object)."""

    name: str
    doc: str
    ref: str = "{var}"
    probes: dict[str, tuple[str, Callable[[AbsObject], float]]] = field(default_factory=dict)
    noun: str = ""  # for task text ("session", "audio clip"); defaults to the name

    @property
    def word(self) -> str:
        return self.noun or self.name


Domain = Callable[[Random, World, dict[str, Any]], Any]
"""Samples a value for a parameter given the world and the objects already bound for this call."""


@dataclass(frozen=True)
class Param:
    """A parameter of an API. ``object_type`` set: it takes a live object (optionally filtered by
    ``where``); otherwise ``domain`` samples its value, which the program receives as a preloaded
    input variable (named after ``var`` or the parameter) unless ``literal`` renders it inline."""

    name: str
    object_type: str | None = None
    where: Callable[[AbsObject, World, dict[str, Any]], bool] | None = None
    domain: Domain | None = None
    literal: bool = False
    var: str | None = None  # base name of the input variable (default: the parameter name)
    describe: str = ""  # how the task text refers to the value ("the text")
    resample: bool = True  # may a "resampled inputs" test case draw a new value?
    perturb: Callable[[Random, Any], Any] | None = None  # how to resample (default: draw again)

    @property
    def is_object(self) -> bool:
        return self.object_type is not None


Returns = Literal["object", "objects", "value"]


@dataclass(frozen=True)
class Api:
    """One API: parameters, when it may be called, what it does to the world, how it is written.

    ``effect(world, args, objs)`` returns the abstract result: an :class:`AbsObject`
    (``returns="object"``), a list of them (``"objects"``) or a plain value (``"value"``).
    ``target`` names the object parameter the call is *applied to*: transition pairs are
    (the target's last API, this API). ``out`` is the base name of the result variable.
    """

    name: str
    params: tuple[Param, ...]
    template: str
    effect: Callable[[World, dict[str, Any], dict[str, AbsObject]], Any]
    returns: Returns
    out: str
    phrase: str
    target: str | None = None
    returns_type: str | None = None  # object type of "object"/"objects" results
    precondition: Callable[[World, dict[str, AbsObject]], bool] | None = None
    writes: bool = True  # changes service state (reads are free to repeat)


@dataclass(frozen=True)
class Runtime:
    """How programs of this scenario execute (see :mod:`callbench.tracks.stateful.execution`).

    ``service``: "session" (the session server) or "mock" (a spec's mock) starts that loopback service
    per test case; None runs in-process.
    ``setup`` is trusted code run in the sandbox before the program (imports, object
    construction from ``__initial__``); ``finalize`` a trusted expression giving the final state.
    ``call_roots`` are the names whose calls count as API calls in static analysis.
    ``requires`` lists ``(module, extra)`` pairs: packages the setup or the programs import, and
    the callbench extra that installs each. Without them every program, the reference included,
    would fail at its first line, so a run or a generation checks them before any sample
    (:func:`missing_extra`) instead of scoring the failures as the model's.
    """

    setup: str
    finalize: str | None
    call_roots: tuple[str, ...]
    doc: str
    service: str | None = None
    memory_limit: str = "as"
    tolerance: tuple[float, float] | None = None  # (rtol, atol) for float results; None = exact
    state_view: Callable[[Any], Any] | None = None  # the part of the final state that is compared
    requires: tuple[tuple[str, str], ...] = ()  # (module, extra): see above

    @classmethod
    def http(cls, service: str, api_doc: str) -> Runtime:
        """The runtime of a scenario whose programs call a loopback HTTP ``service`` with
        ``requests`` (``BASE_URL`` preloaded): the session service, a spec's mock."""
        return cls(
            setup="import requests\n",
            finalize=None,
            call_roots=("requests",),
            doc="`requests` is imported and `BASE_URL` is preloaded.\n\n" + api_doc,
            service=service,
            requires=(("requests", "stateful"),),
        )


@dataclass
class Initial:
    """The starting point of one program: abstract objects already present (with expressions when
    the program receives them as inputs), preloaded input values, and the service seed."""

    world: World
    preload: dict[str, Any]
    service_seed: Any = None
    inputs: dict[str, str] = field(default_factory=dict)  # variable -> description
    alternatives: dict[str, list[Any]] = field(default_factory=dict)  # variable -> resampled values


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    object_types: tuple[ObjectType, ...]
    apis: tuple[Api, ...]
    runtime: Runtime
    initial: Callable[[Random], Initial]
    result_var: str = "result"

    def __post_init__(self) -> None:
        validate(self)

    def api(self, name: str) -> Api:
        for a in self.apis:
            if a.name == name:
                return a
        raise ConfigError(f"scenario '{self.name}': no API '{name}'")

    def otype(self, name: str) -> ObjectType:
        for t in self.object_types:
            if t.name == name:
                return t
        raise ConfigError(f"scenario '{self.name}': no object type '{name}'")


def validate(s: Scenario) -> None:
    """Reject a malformed model with a one-line error naming the scenario, API and field."""
    where = f"scenario '{s.name}'"
    if not _IDENT.match(s.name):
        raise ConfigError(f"{where}: name must be an identifier")
    types = {t.name for t in s.object_types}
    if len(types) != len(s.object_types):
        raise ConfigError(f"{where}: object_types: duplicate type name")
    for t in s.object_types:
        for label, text in [("ref", t.ref)] + [(f"probes['{k}']", code) for k, (code, _) in t.probes.items()]:
            if "{var}" not in text or re.sub(r"\{var\}", "", text).count("{") != re.sub(r"\{var\}", "", text).count("}"):
                raise ConfigError(f"{where}, object type '{t.name}': {label}: must contain {{var}} (and no other placeholder)")
            try:
                text.format(var="x")
            except (KeyError, IndexError, ValueError):
                raise ConfigError(f"{where}, object type '{t.name}': {label}: only {{var}} may be a placeholder") from None
    seen: set[str] = set()
    for api in s.apis:
        at = f"{where}, API '{api.name}'"
        if api.name in seen:
            raise ConfigError(f"{at}: defined twice")
        seen.add(api.name)
        names = [p.name for p in api.params]
        if len(set(names)) != len(names):
            raise ConfigError(f"{at}: params: duplicate parameter name")
        for p in api.params:
            if p.is_object and p.object_type not in types:
                raise ConfigError(f"{at}: param '{p.name}': unknown object_type '{p.object_type}'")
            if not p.is_object and p.domain is None:
                raise ConfigError(f"{at}: param '{p.name}': a value parameter needs a domain")
        used = set(_PLACEHOLDER.findall(api.template))
        if used != set(names):
            missing, extra = sorted(set(names) - used), sorted(used - set(names))
            raise ConfigError(f"{at}: template: placeholders {extra or '-'} unknown, params {missing or '-'} unused")
        if api.target is not None and api.target not in {p.name for p in api.params if p.is_object}:
            raise ConfigError(f"{at}: target '{api.target}' is not an object parameter")
        if api.returns not in ("object", "objects", "value"):
            raise ConfigError(f"{at}: returns: '{api.returns}' is not one of object, objects, value")
        if api.returns in ("object", "objects") and api.returns_type not in types:
            raise ConfigError(f"{at}: returns_type: '{api.returns_type}' is not an object type")
        if not _IDENT.match(api.out):
            raise ConfigError(f"{at}: out: '{api.out}' is not an identifier")
        phrase_refs = set(re.findall(r"\{(\w+)\}", api.phrase))
        if not phrase_refs <= set(names):
            raise ConfigError(f"{at}: phrase: unknown fields {sorted(phrase_refs - set(names))}")


_FOUND: dict[str, bool] = {}


def _installed(module: str) -> bool:
    """Is ``module`` importable here? (found, not imported: ``torch`` takes seconds to import;
    checked before every execution, so the search is remembered)"""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: blocked (how tests hide a package)
    if module not in _FOUND:
        try:
            _FOUND[module] = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            _FOUND[module] = False
    return _FOUND[module]


def missing_extra(scenario: Scenario, alternative: str | None = None) -> MissingExtraError | None:
    """The error to raise when a package ``scenario`` needs is not installed, else None; the
    message names the scenario and the exact ``pip install 'callbench[EXTRA]'``."""
    for module, extra in scenario.runtime.requires:
        if not _installed(module):
            return MissingExtraError(module, extra, what=f"the '{scenario.name}' scenario", alternative=alternative)
    return None


def check_extras(scenario: Scenario) -> None:
    """Raise :class:`MissingExtraError` when a package ``scenario`` needs is not installed."""
    error = missing_extra(scenario)
    if error is not None:
        raise error


def render_template(template: str, values: dict[str, str]) -> str:
    """Replace ``$name`` placeholders with code."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def choice(values: Sequence[Any]) -> Domain:
    """A domain drawing uniformly from fixed values."""
    vals = list(values)
    return lambda rng, world, objs: copy.deepcopy(rng.choice(vals))


def int_range(lo: int, hi: int) -> Domain:
    return lambda rng, world, objs: rng.randint(lo, hi)
