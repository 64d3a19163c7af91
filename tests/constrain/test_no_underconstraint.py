"""No under-constraint: whatever a model writes under the grammar executes and is spec-legal.

Property test: decode under each spec's grammar with *random* token choices (no model), for the
4 WAPIIBench specs and both setups, run every finished invocation in the sandbox and judge it with
the strict scorer: it must execute, and its URL, method and every argument must be legal for the
generated endpoint, with every required argument present.

Random choices are biased towards tokens holding a structural byte (quote, comma, bracket, colon)
half of the time; uniform choices alone almost never close a string (one allowed token in tens of
thousands does), so walks would not finish. The bias changes which strings are visited, not which
are allowed: every token is still drawn from the engine's exact mask.

``CALLBENCH_PROPERTY_WALKS`` sets walks per (spec, setup); the default keeps CI fast, and the slow
variant runs thousands in all.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

pytest.importorskip("llguidance")

from callbench.constrain import GrammarConstraint, build_webapi_grammar, make_key_tracker  # noqa: E402
from callbench.constrain.engine import vocab_for_lltokenizer  # noqa: E402
from callbench.sandbox import JsSandbox  # noqa: E402
from callbench.testing.gpt2 import gpt2_lltokenizer  # noqa: E402
from callbench.tracks.webapi.scoring import compare_requests  # noqa: E402

APIS = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")
HEADER = "// task\nconst axios = require('axios');\n\naxios."
_STRUCT = set(b"'\"`,{}()[]:;")
_LOC = {"header": "headers", "query": "params", "body": "data"}


@pytest.fixture(scope="module")
def vocab():
    return vocab_for_lltokenizer(gpt2_lltokenizer())


@pytest.fixture(scope="module")
def structural(vocab):
    return np.array([bool(_STRUCT & set(b)) for b in vocab.token_bytes], dtype=bool)


@pytest.fixture(scope="module")
def sandbox():
    with JsSandbox() as sb:
        yield sb


def _walk(constraint, vocab, structural, rng, max_tokens=400) -> str | None:
    """One biased random walk; the generated text once the call is closed, else None."""
    session = constraint.new_session(vocab, record=False)
    for _ in range(max_tokens):
        allowed = session.mask()
        allowed[list(vocab.eos_ids)] = False
        choices = np.flatnonzero(allowed)
        if choices.size == 0:
            return None
        struct = choices[structural[choices]]
        pool = struct if struct.size and rng.random() < 0.5 else choices
        session.advance(int(pool[rng.integers(pool.size)]))
        if session.unsatisfiable:
            raise AssertionError(f"walk dead-ended: {session.generated_bytes()!r}")
        if session.is_accepting():
            return session.generated_bytes().decode("utf-8", errors="replace")
    return None


# Properties of Node's `process` (any of them as an argument: the object was sent whole).
_PROCESS_PROPERTIES = frozenset({"argv", "argv0", "execArgv", "pid", "platform", "versions", "env", "hrtime"})


def _check_legal(spec, program, request, expected, *, in_scope=False):
    """Legal, with every required argument; with names ``in_scope`` (whose values cannot be
    known), no runtime object sent whole and legal where no name's value is read."""
    v = compare_requests(expected, request, spec, "strict")
    if in_scope:
        # never an object of the runtime sent whole (`headers: process`: every property a header)
        sent = {str(k) for loc in ("params", "headers", "data") if isinstance(request.get(loc), dict) for k in request[loc]}
        assert not sent & _PROCESS_PROPERTIES, (program, request)
        if "process.env." in program or "this." in program:
            return  # a value read from a name cannot be known (`${process.env.BASE}/x`): legal or not
    bad = [a for a in v.arguments if a.verdict == "illegal"]
    assert v.url != "illegal" and v.method != "illegal" and not bad, (program, request, v.as_dict())
    if in_scope:
        return
    op = spec.match(request["method"], request["url"], real_world=True).operation  # as strict reads it
    for loc, names in spec.required_arguments(op).items():
        if loc not in _LOC:
            continue
        got = request.get(_LOC[loc])
        have = {k.lower() for k in got} if isinstance(got, dict) and loc == "header" else set(got or {})
        want = {n.lower() for n in names} if loc == "header" else set(names)
        assert want <= have, (program, request, f"missing required {loc}: {sorted(want - have)}")


def task_grammar(spec, setup: str, task, identifiers=()):
    """The web API grammar for ``task`` in ``setup`` and the starter code it continues."""
    if setup == "full":
        return build_webapi_grammar(spec, setup="full", identifiers=identifiers), HEADER
    g = build_webapi_grammar(spec, setup="args", method=task.config.method, url=task.config.url, identifiers=identifiers)
    return g, f"{HEADER}{task.config.method}('{task.config.url}',"


def _run(api, setup, n_walks, wapii_tasks, wapii_specs, vocab, structural, sandbox, *, in_scope=False):
    """``in_scope``: the grammar names what the track's grammar names for these starters (the
    callbench profile's ``process`` and ``this``). What a name holds cannot be known (it may be
    undefined and drop a required argument), so those walks are checked for legality only."""
    spec = wapii_specs[api]
    tasks = [t for t in wapii_tasks if t.api == api]
    rng = np.random.default_rng(zlib.crc32(f"{api}/{setup}/{os.environ.get('CALLBENCH_PROPERTY_SEED', '0')}".encode()))
    finished = 0
    for i in range(n_walks):
        task = tasks[i % len(tasks)]
        idents = ()
        if in_scope:
            from callbench.tracks.webapi.constraints import in_scope as names_in_scope

            idents = tuple(sorted(names_in_scope(HEADER)))
        g, starter = task_grammar(spec, setup, task, idents)
        constraint = GrammarConstraint(g.lark, lambda g=g: make_key_tracker(g, spec))
        text = _walk(constraint, vocab, structural, rng)
        if text is None:
            continue
        finished += 1
        program = starter + text
        res = sandbox.run(program)
        assert res.status == "ok", (program, res.status, res.error)
        _check_legal(spec, program, res.request, task.config.as_dict(), in_scope=in_scope)
    # most walks close the call within the token budget; all that do are legal
    # (names in scope give longer values: fewer walks close within the budget)
    share = 0.5 if in_scope else 0.7
    assert finished >= n_walks * share, f"only {finished} of {n_walks} walks finished"


@pytest.mark.parametrize("setup", ["full", "args"])
@pytest.mark.parametrize("api", APIS)
def test_random_decoding_under_grammar_is_always_legal(api, setup, wapii_tasks, wapii_specs, vocab, structural, sandbox):
    n = int(os.environ.get("CALLBENCH_PROPERTY_WALKS", "12"))
    _run(api, setup, n, wapii_tasks, wapii_specs, vocab, structural, sandbox)


@pytest.mark.parametrize("setup", ["full", "args"])
@pytest.mark.parametrize("api", APIS)
def test_random_decoding_with_the_names_in_scope_is_legal(api, setup, wapii_tasks, wapii_specs, vocab, structural, sandbox):
    """As the track builds it for WAPIIBench's starters: ``process`` and ``this`` in scope (their
    whole objects as headers or params were once admitted and sent every property)."""
    n = int(os.environ.get("CALLBENCH_PROPERTY_WALKS", "12"))
    _run(api, setup, n, wapii_tasks, wapii_specs, vocab, structural, sandbox, in_scope=True)


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["full", "args"])
@pytest.mark.parametrize("api", APIS)
def test_thousands_of_random_decodings_are_legal(api, setup, wapii_tasks, wapii_specs, vocab, structural, sandbox):
    _run(api, setup, 300, wapii_tasks, wapii_specs, vocab, structural, sandbox)
