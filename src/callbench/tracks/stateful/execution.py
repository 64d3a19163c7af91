"""Run one program on one test case in the sandbox and compare it with the recorded oracle.

A test case is the preloaded inputs plus the service's initial state. For the *session*
scenario the harness starts a fresh server per case (so no case can see another's writes) on a
Unix socket in a private directory; the sandbox sees that one socket (forwarded to a loopback
port, bound to ``BASE_URL``) and no other network; in-process services (voice, tensor)
are built by the scenario's trusted setup code inside the sandbox, and their final state comes
back through ``Runtime.finalize``. A scenario built from an OpenAPI spec (service ``"mock"``,
:class:`~callbench.tracks.stateful.spec_scenario.SpecScenario`) gets a fresh
:class:`~callbench.mock.MockService` of its spec and state model per case, seeded by the case's
``service_seed``, on a Unix socket the same way; its final state is the mock's ``snapshot()``, and
a request the mock refused (4xx/5xx: an invalid body, a missing item) makes the run a runtime
error, so no reference whose requests fail is kept and a program's refused request is named.

Comparison: the result variable, the final state (through ``Runtime.state_view``) and, for
HTTP services, the number of successful writes. Floats compare with ``math.isclose`` under the
scenario's (rtol, atol) when it declares a tolerance, exactly otherwise.

A scenario whose packages are not installed (``Runtime.requires``: torch for *tensor*) is never
run: :func:`execute` raises :class:`~callbench.errors.MissingExtraError` instead of returning a
runtime error, so a missing extra is never scored as the model's failure (nor a reference
dropped as failing on its own inputs). The CLI checks the same before the first sample
(:func:`callbench.tracks.stateful.scenarios.check_extras`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import shutil
from dataclasses import asdict, dataclass
from typing import Any

from callbench.sandbox.boundary import View
from callbench.sandbox.program import ProgramLimits, ProgramResult, private_dir, run_program
from callbench.services.isolation import ServiceLimitError
from callbench.tracks.stateful.scenario import Scenario, check_extras

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Error taxonomy of the track (summary keys are error_<class>).
# ``infra_timeout``: the wall-clock backstop was hit twice (a stalled machine, or a program that only
# waits), never the program's CPU budget: rows and summaries count it apart from ``timeout``.
# ``wrong_host``: the program only tried to reach hosts it was not given (a hard-coded base URL
# instead of BASE_URL): the model's mistake, counted apart from ``sandbox_violation`` (an attack).
ERROR_CLASSES = (
    "no_code", "syntax", "runtime", "wrong_result", "wrong_state", "timeout", "sandbox_violation", "infra_timeout",
    "wrong_host",
)
_FROM_SANDBOX = {
    "no_code": "no_code",
    "syntax_error": "syntax",
    "runtime_error": "runtime",
    "crash": "runtime",
    "timeout": "timeout",
    "violation": "sandbox_violation",
    "wrong_host": "wrong_host",
    "infra_timeout": "infra_timeout",
}


@dataclass
class Case:
    name: str  # "base", "else", "resampled_1", ...
    preload: dict[str, Any]
    service_seed: Any = None


@dataclass
class Outcome:
    """What one run produced: ``status`` is the sandbox's ("ok", "runtime_error", ...)."""

    status: str
    result: Any = None
    result_set: bool = False
    state: Any = None
    writes: int | None = None
    error: str | None = None
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=64)
def _view(setup: str) -> View:
    """The sandbox view a setup needs, parsed once per setup rather than once per case (the
    parse itself is safe in evaluation threads: :mod:`callbench.pyast`)."""
    return View.of_sources(setup)


def default_limits(scenario: Scenario, timeout_s: float = 20.0, memory_mb: int = 2048) -> ProgramLimits:
    """``timeout_s``: CPU seconds of the program (interpreter start-up, the scenario's imports and
    its setup are not charged); the wall clock is only a backstop, several times that."""
    return ProgramLimits(timeout_s=timeout_s, memory_mb=memory_mb, memory_limit=scenario.runtime.memory_limit)


def execute(scenario: Scenario, code: str, case: Case, limits: ProgramLimits | None = None) -> Outcome:
    """Run ``code`` for ``case`` against a fresh service state (MissingExtraError: the scenario's
    packages are not installed). A run that hits the wall-clock backstop (status ``infra_timeout``:
    the machine, not the program's CPU budget) runs once more, from a fresh service state; a second
    one stays ``infra_timeout``, and its error says it was retried."""
    first = _execute_once(scenario, code, case, limits)
    if first.status != "infra_timeout":
        return first
    again = _execute_once(scenario, code, case, limits)
    again.duration_s += first.duration_s
    if again.status == "infra_timeout":
        again.error = f"{again.error} (twice: retried once; an infrastructure timeout, not the program's CPU budget)"
    return again


def _execute_once(scenario: Scenario, code: str, case: Case, limits: ProgramLimits | None = None) -> Outcome:
    check_extras(scenario)
    rt = scenario.runtime
    limits = limits or default_limits(scenario)
    preload = dict(case.preload)
    preload["__preload__"] = sorted(case.preload)
    preload["__initial__"] = case.service_seed
    if rt.service not in (None, "session", "mock"):
        raise ValueError(f"scenario '{scenario.name}': unknown service '{rt.service}'")
    if rt.service == "mock" and getattr(scenario, "spec", None) is None:
        raise ValueError(f"scenario '{scenario.name}': service 'mock' needs a scenario built from a spec (build_scenario)")
    with contextlib.ExitStack() as stack:
        services: list[tuple[str, str]] = []
        svc = None
        if rt.service == "session":
            from callbench.tracks.stateful.services.session_server import SessionService

            where = private_dir("svc")  # swept by a later process if this one is killed
            stack.callback(shutil.rmtree, where, ignore_errors=True)
            # started on entry; its database goes with it
            svc = stack.enter_context(SessionService(unix_path=f"{where}/session.sock"))
            svc.reset(case.service_seed or [])
            services = [("BASE_URL", svc.socket_path)]
        elif rt.service == "mock":
            from callbench.mock import MockService

            where = private_dir("mock")
            stack.callback(shutil.rmtree, where, ignore_errors=True)
            seed = case.service_seed if isinstance(case.service_seed, int) and not isinstance(case.service_seed, bool) else 0
            svc = stack.enter_context(MockService(scenario.spec, scenario.model, seed=seed, unix_path=f"{where}/mock.sock"))  # type: ignore[attr-defined]
            services = [("BASE_URL", svc.socket_path)]
        res = run_program(
            code,
            setup=rt.setup,
            preload=preload,
            result_vars=[scenario.result_var],
            finalize=rt.finalize,
            services=services,
            view=_view(rt.setup),
            limits=limits,
        )
        if svc is None:
            return _outcome(scenario, res, res.state, None)
        try:
            state = svc.snapshot()
            log = svc.request_log()
        except ServiceLimitError as e:  # the sample broke its own service (a quota, its memory): its verdict
            if res.status == "violation":
                return Outcome("violation", error=res.error, duration_s=res.duration_s)
            return Outcome("runtime_error", error=str(e), duration_s=res.duration_s)
        writes = sum(1 for method, _path, status in log if method in WRITE_METHODS and status < 400)
        failed = next(((m, p, st) for m, p, st in log if st >= 400), None) if rt.service == "mock" else None
        if failed is not None and res.status == "ok":
            # a spec's mock answers a bad request with a 4xx body the program may well read on; a
            # request the API refused is a failed program (and a reference making one is dropped)
            m, target, st = failed
            shown = target if len(target) <= 120 else target[:117] + "..."
            return Outcome("runtime_error", error=f"the API answered HTTP {st} to {m} {shown}", writes=writes, duration_s=res.duration_s)
        return _outcome(scenario, res, state, writes)


def _outcome(scenario: Scenario, res: ProgramResult, state: Any, writes: int | None) -> Outcome:
    if res.status == "ok" and res.finalize_error:
        return Outcome("runtime_error", error=f"finalize: {res.finalize_error}", duration_s=res.duration_s)
    if scenario.runtime.state_view is not None:
        state = scenario.runtime.state_view(state)
    return Outcome(
        status=res.status,
        result=res.variables.get(scenario.result_var),
        result_set=scenario.result_var in res.variables,
        state=state,
        writes=writes,
        error=res.error,
        duration_s=res.duration_s,
    )


def judge(
    scenario: Scenario,
    expected: Outcome,
    actual: Outcome,
    tolerance: tuple[float, float] | None = None,
    unordered_result: bool = False,
) -> tuple[str, str | None]:
    """("pass" or an error class, a one-line reason). A task may compare as its benchmark's own
    evaluator does (the published StateEval's): ``tolerance`` (rtol, atol) replaces the scenario's,
    ``unordered_result`` compares a list result as a multiset of its elements."""
    if actual.status != "ok":
        return _FROM_SANDBOX.get(actual.status, "runtime"), actual.error
    tol = tuple(tolerance) if tolerance is not None else scenario.runtime.tolerance
    if not actual.result_set:
        return "wrong_result", f"the program did not set `{scenario.result_var}`"
    if unordered_result and isinstance(expected.result, list) and isinstance(actual.result, list):
        result_ok = same_multiset(expected.result, actual.result, tol)
    else:
        result_ok = same(expected.result, actual.result, tol)
    if not result_ok:
        return "wrong_result", f"`{scenario.result_var}` differs from the reference's"
    if not same(expected.state, actual.state, tol):
        return "wrong_state", "the final service state differs from the reference's"
    if expected.writes is not None and actual.writes != expected.writes:
        return "wrong_state", f"{actual.writes} successful writes to the service, the reference made {expected.writes}"
    return "pass", None


def same_multiset(a: list[Any], b: list[Any], tol: tuple[float, float] | None) -> bool:
    """The same elements (each matched to one, under :func:`same`) in any order."""
    if len(a) != len(b):
        return False
    left = list(b)
    for x in a:
        hit = next((i for i, y in enumerate(left) if same(x, y, tol)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def same(a: Any, b: Any, tol: tuple[float, float] | None) -> bool:
    """Structural equality; floats within (rtol, atol) when ``tol`` is given. Tuples equal lists
    (both arrive as JSON arrays); bools never equal numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if tol is None or (isinstance(a, int) and isinstance(b, int)):
            return a == b
        return math.isclose(a, b, rel_tol=tol[0], abs_tol=tol[1])
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
