"""Cost of constrained decoding for the web API track, against WAPIIBench's regex method.

For each spec (asana, google_calendar_v3, google_sheet_v4, slack, petstore) and the 151,936-token
Qwen2.5 vocabulary, in one run:

* build: grammar derivation from the spec (grammar cache cleared), ``GrammarConstraint``
  construction (llguidance parses and validates the Lark text) and the first matcher compile for
  the vocabulary (the first ``new_session``), timed apart and summed as ``build_s``.
* mask: every gold continuation (the text after ``axios.``) is tokenized with the Qwen
  tokenizer and decoded by teacher forcing: at each step ``session.mask()`` is timed, the gold
  token must be allowed, then ``session.advance(gold)``. Once with the key tracker (the real
  configuration: ``mask_*``), once with the grammar alone (``grammar_only_mask_*``). Plus random
  walks under the mask (``mask_time_profile``: a worst case, ``random_walk_*``).
* timeouts: gold-decoding masks over ``--mask-budget-ms`` plus llguidance errors. Gold calls the
  constraint rejects are counted apart (a few golds contradict their own spec).
* baseline: the published method rebuilt (``callbench.constrain.baseline_regex``): one regex per
  spec, and per step the candidates are tried in score order with partial matching until one
  fits. The "model" is a seeded random order of the vocabulary with the gold token moved to rank
  R ~ Geometric(p=0.2) (R >= 1, mean 5), so R - 1 candidates are tried before the gold one.

    python benchmarks/constraints.py [--json PATH] [--specs asana slack] [--max-golds N]

Prints rich tables (figures, targets met or not) and writes ``{"settings", "method", "specs":
{"<spec>": {"build_s", "mask_median_ms", "mask_p99_ms", "timeouts", "baseline_build_s",
"baseline_mask_median_ms", "baseline_timeouts", ...}}}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import regex
from rich.console import Console
from rich.table import Table

from callbench.constrain.baseline_regex import RegexBaseline, build_baseline_regex
from callbench.constrain.engine import ConstraintSession, GrammarConstraint, TokenVocab
from callbench.constrain.key_tracker import make_key_tracker
from callbench.constrain.sampling import mask_time_profile
from callbench.constrain.webapi_grammar import build_webapi_grammar, clear_grammar_cache
from callbench.data.paths import data_dir
from callbench.specs import ApiSpec, load_spec
from callbench.testing.constrain import qwen_vocab
from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE, load_tasks
from callbench.tracks.webapi.prompting import reference_completion

SPEC_FILES = {
    "asana": "wapiibench/openapi/real_world_specs/asana.yaml",
    "google_calendar_v3": "wapiibench/openapi/real_world_specs/google_calendar_v3.yaml",
    "google_sheet_v4": "wapiibench/openapi/real_world_specs/google_sheet_v4.yaml",
    "slack": "wapiibench/openapi/real_world_specs/slack.yaml",
    "petstore": "wapiibench/openapi/test/petstore-expanded-modified.yaml",
}

# Golds that contradict their own spec (see tests/constrain/test_no_overconstraint.py): no
# spec-derived constraint can accept them, so they must be rejected, and are not timeouts. The
# last four send no credential although their operations require one (required credentials).
KNOWN_SPEC_BREAKING = frozenset(
    {"asana_7", "asana_57", "asana_161", "asana_62", "asana_65", "asana_109", "slack_102", "slack_163"}
    | {"slack_64", "slack_123", "slack_124", "slack_125"}
)

# Targets from the issue.
TARGET_BUILD_S = 0.5
TARGET_MEDIAN_MS = 0.1
TARGET_P99_MS = 2.0

# Petstore has no gold tasks: hand-written calls, one or two per operation (all legal under the spec).
_PET = "https://petstore.swagger.io/v2"
PETSTORE_CALLS = [
    f"get('{_PET}/pets', {{ params: {{ tags: ['dog', 'cat'], limit: 10 }} }});\n",
    f"get('{_PET}/pets');\n",
    f"post('{_PET}/pets', {{ name: 'Rex', tag: 'dog' }});\n",
    f"get('{_PET}/pets/42');\n",
    f"delete('{_PET}/pets/7');\n",
    f"get('{_PET}/pets-secure/3', {{ headers: {{ Authorization: 'Bearer <token>' }} }});\n",
    f"put('{_PET}/pets-secure/3', {{ name: 'Rex', tag: 'good dog' }}, {{ params: {{ api_key: '<key>' }} }});\n",
    f'put("{_PET}/pets-secure/3", {{"name": "Rex"}}, {{"headers": {{"Authorization": "Basic <credentials>"}}}});\n',
    f"delete('{_PET}/pets-secure/9', {{ params: {{ api_key: '<key>' }} }});\n",
    f"post('{_PET}/foods', {{ name: 'Kibble', nutrition: {{ calories: 350, fat: 12, protein: 25, carbs: 40 }} }});\n",
    f"get('{_PET}/customers', {{ params: {{ corporate: true }} }});\n",
    f"post('{_PET}/customers', {{\n  name: 'Ada',\n  addresses: [\n    {{ city: 'London', house: {{ number: 12, "
    f"street: 'Baker Street', features: {{ garages: 1, pool: false }} }} }},\n  ],\n}});\n",
    f"get(`{_PET}/customers/ada`);\n",
    f"post('{_PET}/customers/ada/ping', {{}}, {{ params: {{ priority: 2 }} }});\n",
    f"post('{_PET}/crm/v3/objects/contacts/batch/archive', {{ inputs: [{{ id: '101' }}, {{ id: '102' }}] }});\n",
    f"get('{_PET}/emoji.list', {{ params: {{ $foo: true, 'foo-bar': false }} }});\n",
]

# Baseline "model": the gold token's rank among the candidates, R ~ Geometric(p), R >= 1, mean 1/p.
RANK_P = 0.2


# ------------------------------------------------------------------------------ helpers
def _ms(seconds: list[float] | np.ndarray) -> np.ndarray:
    return np.asarray(seconds, dtype=np.float64) * 1000.0


def _stats(ms: np.ndarray, prefix: str) -> dict[str, Any]:
    if not ms.size:
        return {f"{prefix}_median_ms": None, f"{prefix}_p99_ms": None, f"{prefix}_max_ms": None}
    return {
        f"{prefix}_median_ms": round(float(np.median(ms)), 4),
        f"{prefix}_p99_ms": round(float(np.percentile(ms, 99)), 4),
        f"{prefix}_max_ms": round(float(ms.max()), 4),
    }


def _golds(name: str, tasks: list[Any], max_golds: int | None) -> list[tuple[str, str]]:
    """(id, continuation after ``axios.``) of the spec's gold calls, in dataset order."""
    if name == "petstore":
        golds = [(f"petstore_hand_{i}", text) for i, text in enumerate(PETSTORE_CALLS)]
    else:
        golds = [(t.id, reference_completion(t, "full")) for t in tasks if t.api == name]
    return golds[:max_golds] if max_golds is not None else golds


class GcMonitor:
    """Seconds spent in Python's garbage collector so far (a full collection can stall a mask)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


GC = GcMonitor()


class GoldRun:
    """Teacher-forced decoding of every gold of one spec under one constraint, timing each mask."""

    def __init__(self) -> None:
        self.times: list[float] = []  # every mask computation, seconds
        self.first: list[float] = []  # the first mask of each gold
        self.positions: list[tuple[int, int]] = []  # (gold index, step) of each entry of times
        self.gc_times: list[float] = []  # garbage collection inside each timed mask, seconds
        self.filter_active: list[bool] = []
        self.filter_candidates: list[int] = []  # grammar-allowed tokens the filter had to judge
        self.rejected: dict[str, str] = {}  # gold id -> why
        self.errors: dict[str, str] = {}  # gold id -> llguidance / engine error

    def decode(
        self,
        gi: int,
        gold_id: str,
        tokens: list[int],
        constraint: GrammarConstraint,
        vocab: TokenVocab,
        *,
        diagnose: bool,
    ) -> None:
        session = constraint.new_session(vocab, record=False)
        for step, tok in enumerate(tokens):
            gc0 = GC.seconds
            t0 = time.perf_counter()
            allowed = session.mask()
            dt = time.perf_counter() - t0
            self.times.append(dt)
            self.gc_times.append(GC.seconds - gc0)
            self.positions.append((gi, step))
            if step == 0:
                self.first.append(dt)
            if diagnose:
                self._diagnose(session, vocab)
            if session.unsatisfiable:
                self.errors[gold_id] = f"step {step}: {session.error}"
                return
            if not allowed[tok]:
                # Stop at the first rejected token: a real decode would have left the gold here.
                self.rejected[gold_id] = _why_rejected(session, vocab, tok, step)
                return
            session.advance(tok)
            if session.unsatisfiable:
                self.errors[gold_id] = f"step {step}: allowed token then failed: {session.error}"
                return
        if not session.is_accepting():
            self.rejected[gold_id] = "the grammar does not accept the complete gold"

    def _diagnose(self, session: ConstraintSession, vocab: TokenVocab) -> None:
        # Untimed: how many tokens did the filter have to ask about at this step? (the engine's
        # grammar bitmask of the step is still in the session's buffer)
        f = session.filter
        active = f is not None and f.active()
        self.filter_active.append(active)
        if not active:
            self.filter_candidates.append(0)
            return
        grammar = _grammar_bits(session, vocab)
        self.filter_candidates.append(int(np.count_nonzero(grammar & vocab.sensitive_tokens(f.sensitive))))


def _grammar_bits(session: ConstraintSession, vocab: TokenVocab) -> np.ndarray:
    bits = session._bitmask.view(np.uint8)  # noqa: SLF001 - diagnostics only
    return np.unpackbits(bits, count=vocab.size, bitorder="little").view(np.bool_)


def _why_rejected(session: ConstraintSession, vocab: TokenVocab, tok: int, step: int) -> str:
    by = "key tracker" if _grammar_bits(session, vocab)[tok] else "grammar"
    done = session.generated_bytes().decode("utf-8", "replace")
    piece = vocab.token_bytes[tok].decode("utf-8", "replace")
    return f"{by} at step {step}: ...{done[-40:]!r} + {piece!r}"


# ------------------------------------------------------------------------------ baseline
def run_baseline(
    spec: ApiSpec,
    name: str,
    golds_tokens: list[list[int]],
    positions: list[tuple[int, int]],
    token_strings: list[str],
    text_ids: np.ndarray,
    args: argparse.Namespace,
) -> tuple[dict[str, Any], list[int]]:
    t0 = time.perf_counter()
    pattern = build_baseline_regex(spec)
    t1 = time.perf_counter()
    baseline = RegexBaseline(pattern, token_strings, timeout_s=args.baseline_timeout_s)
    t2 = time.perf_counter()
    rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
    n = min(args.baseline_max_steps, len(positions))
    picked = sorted(rng.choice(len(positions), size=n, replace=False).tolist()) if n else []
    times, checked, ranks, in_lang, hit_budget = [], [], [], [], []
    timeouts = not_gold = gold_unfit = exhausted = 0
    for idx in picked:
        gi, step = positions[idx]
        toks = golds_tokens[gi]
        gold = toks[step]
        completion = "".join(token_strings[t] for t in toks[:step])
        rank = int(rng.geometric(RANK_P))
        order = rng.permutation(text_ids)
        at = int(np.flatnonzero(order == gold)[0])
        order[at], order[rank - 1] = order[rank - 1], order[at]
        s0 = time.perf_counter()
        res = baseline.next_token(completion, order)
        times.append(time.perf_counter() - s0)
        checked.append(res.checked)
        ranks.append(rank)
        timeouts += res.timed_out
        hit_budget.append(res.timed_out)
        exhausted += res.token_id is None and not res.timed_out
        if res.token_id != gold and not res.timed_out:
            not_gold += 1
        # Untimed: is the gold's prefix still in the regex's language, and does the gold token fit?
        in_lang.append(_fits(baseline, completion, args.baseline_timeout_s))
        gold_unfit += not _fits(baseline, completion + token_strings[gold], args.baseline_timeout_s)
    ms = _ms(times)
    inside = np.asarray(in_lang, dtype=bool)
    timed_out = np.asarray(hit_budget, dtype=bool)
    golds_unmatched = 0
    for toks in golds_tokens:
        try:
            whole = baseline.compiled.fullmatch("".join(token_strings[t] for t in toks), timeout=10.0)
        except TimeoutError:
            whole = None
        golds_unmatched += whole is None
    out = {
        "baseline_build_s": round(t2 - t0, 4),
        "baseline_regex_build_s": round(t1 - t0, 4),
        "baseline_compile_s": round(t2 - t1, 4),
        "baseline_regex_chars": len(pattern),
        "baseline_steps": n,
        "baseline_mask_median_ms": round(float(np.median(ms)), 4) if ms.size else None,
        "baseline_mask_p99_ms": round(float(np.percentile(ms, 99)), 4) if ms.size else None,
        "baseline_mask_max_ms": round(float(ms.max()), 4) if ms.size else None,
        "baseline_timeouts": timeouts,
        "baseline_steps_prefix_in_language": int(inside.sum()),
        "baseline_timeouts_prefix_in_language": int((timed_out & inside).sum()),
        "baseline_mask_median_ms_prefix_in_language": round(float(np.median(ms[inside])), 4)
        if inside.any()
        else None,
        "baseline_mask_p99_ms_prefix_in_language": round(float(np.percentile(ms[inside], 99)), 4)
        if inside.any()
        else None,
        "baseline_golds_not_in_language": golds_unmatched,
        "baseline_candidates_median": float(np.median(checked)) if checked else None,
        "baseline_candidates_mean": round(float(np.mean(checked)), 2) if checked else None,
        "baseline_gold_rank_mean": round(float(np.mean(ranks)), 2) if ranks else None,
        "baseline_chose_other_token": not_gold,
        "baseline_nothing_fits": exhausted,
        "baseline_gold_not_in_language": gold_unfit,
    }
    return out, picked


def _fits(baseline: RegexBaseline, text: str, timeout: float) -> bool:
    try:
        return baseline.fits(text, timeout=timeout)
    except TimeoutError:
        return False


# Buckets of "grammar-allowed tokens the key tracker had to judge" for the cost breakdown.
CANDIDATE_BUCKETS = [(0, 0), (1, 9), (10, 99), (100, 999), (1000, None)]


def _by_candidates(ms: np.ndarray, cands: np.ndarray) -> dict[str, dict[str, Any]]:
    out = {}
    for lo, hi in CANDIDATE_BUCKETS:
        sel = (cands >= lo) & ((cands <= hi) if hi is not None else True)
        label = f"{lo}" if lo == hi else (f"{lo}-{hi}" if hi is not None else f"{lo}+")
        out[label] = {
            "steps": int(sel.sum()),
            "median_ms": round(float(np.median(ms[sel])), 4) if sel.any() else None,
            "p99_ms": round(float(np.percentile(ms[sel], 99)), 4) if sel.any() else None,
        }
    return out


# ------------------------------------------------------------------------------ one spec
def measure_spec(
    name: str,
    root: Path,
    tasks: list[Any],
    vocab: TokenVocab,
    token_strings: list[str],
    text_ids: np.ndarray,
    args: argparse.Namespace,
    console: Console,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    spec = load_spec(root / SPEC_FILES[name])
    spec_load_s = time.perf_counter() - t0

    clear_grammar_cache()
    t0 = time.perf_counter()
    grammar = build_webapi_grammar(spec, setup="full")
    t1 = time.perf_counter()
    constraint = GrammarConstraint(grammar.lark, lambda: make_key_tracker(grammar, spec), name=f"{name}/full")
    t2 = time.perf_counter()
    first_session = constraint.new_session(vocab, record=False)  # compiles the matcher for the vocabulary
    t3 = time.perf_counter()
    first_session.mask()
    t4 = time.perf_counter()
    grammar_s, constraint_s, compile_s = t1 - t0, t2 - t1, t3 - t2
    build_s = t3 - t0
    # The same build again in this process (warm interpreter and allocator): the cold figure
    # above is the one compared with the target; this one shows how much of it is first-use cost.
    clear_grammar_cache()
    r0 = time.perf_counter()
    again = build_webapi_grammar(spec, setup="full")
    GrammarConstraint(again.lark, lambda: make_key_tracker(again, spec)).new_session(vocab, record=False)
    rebuild_s = time.perf_counter() - r0
    grammar_only = GrammarConstraint(grammar.lark, name=f"{name}/full/grammar-only")

    golds = _golds(name, tasks, args.max_golds)
    golds_tokens = [list(vocab.lltok.tokenize_str(text)) for _, text in golds]

    tracked, plain = GoldRun(), GoldRun()
    t0 = time.perf_counter()
    for gi, ((gid, _), toks) in enumerate(zip(golds, golds_tokens, strict=True)):
        tracked.decode(gi, gid, toks, constraint, vocab, diagnose=True)
    tracked_s = time.perf_counter() - t0
    for gi, ((gid, _), toks) in enumerate(zip(golds, golds_tokens, strict=True)):
        plain.decode(gi, gid, toks, grammar_only, vocab, diagnose=False)

    budget_s = args.mask_budget_ms / 1000.0
    over_budget = sum(t > budget_s for t in tracked.times)
    over_budget_gc = sum(t > budget_s and g > 0 for t, g in zip(tracked.times, tracked.gc_times, strict=True))
    slowest = sorted(range(len(tracked.times)), key=tracked.times.__getitem__, reverse=True)[:5]
    ms = _ms(tracked.times)
    active = np.asarray(tracked.filter_active, dtype=bool)
    cands = np.asarray(tracked.filter_candidates, dtype=np.int64)

    t0 = time.perf_counter()
    walk = mask_time_profile(constraint, vocab, n=args.walks, seed=args.seed, max_tokens=args.walk_tokens)
    walk_s = time.perf_counter() - t0

    expected = sorted(g for g in tracked.rejected if g in KNOWN_SPEC_BREAKING)
    unexpected = {g: why for g, why in tracked.rejected.items() if g not in KNOWN_SPEC_BREAKING}
    known_here = sorted(g for g in KNOWN_SPEC_BREAKING if g in {gid for gid, _ in golds})
    still_accepted = [g for g in known_here if g not in tracked.rejected and g not in tracked.errors]

    out: dict[str, Any] = {
        "operations": len(spec.operations),
        "spec_load_s": round(spec_load_s, 4),
        "build_s": round(build_s, 4),
        "rebuild_warm_s": round(rebuild_s, 4),
        "grammar_s": round(grammar_s, 4),
        "constraint_s": round(constraint_s, 4),
        "compile_s": round(compile_s, 4),
        "first_mask_after_compile_ms": round((t4 - t3) * 1000.0, 4),
        "grammar_chars": len(grammar.lark),
        "grammar_rules": grammar.n_rules,
        "grammar_terminals": grammar.n_terminals,
        "golds": len(golds),
        "golds_source": "hand-written calls (no gold tasks)" if name == "petstore" else DEFAULT_DATA_FILE,
        "gold_tokens": sum(len(t) for t in golds_tokens),
        "mask_steps": len(tracked.times),
        "mask_median_ms": round(float(np.median(ms)), 4),
        "mask_p99_ms": round(float(np.percentile(ms, 99)), 4),
        "mask_max_ms": round(float(ms.max()), 4),
        "mask_mean_ms": round(float(ms.mean()), 4),
        "first_step_median_ms": round(float(np.median(_ms(tracked.first))), 4),
        "first_step_max_ms": round(float(_ms(tracked.first).max()), 4),
        **_stats(_ms(plain.times), "grammar_only_mask"),
        "grammar_only_steps": len(plain.times),
        "filter_active_steps": int(active.sum()),
        "filter_candidates_median_when_active": float(np.median(cands[active])) if active.any() else 0.0,
        "filter_candidates_max": int(cands.max()) if cands.size else 0,
        "mask_by_tracker_candidates": _by_candidates(ms, cands),
        "tracked_decode_s": round(tracked_s, 3),
        "timeouts": over_budget + len(tracked.errors) + len(plain.errors),
        "timeouts_over_budget": over_budget,
        "timeouts_over_budget_during_gc": over_budget_gc,
        "slowest_masks": [
            {
                "gold": golds[tracked.positions[i][0]][0],
                "step": tracked.positions[i][1],
                "ms": round(tracked.times[i] * 1000.0, 3),
                "tracker_candidates": int(cands[i]),
                "gc_ms": round(tracked.gc_times[i] * 1000.0, 3),
            }
            for i in slowest
        ],
        "llguidance_errors": {
            **tracked.errors,
            **{f"{k} (grammar only)": v for k, v in plain.errors.items()},
        },
        "rejected_expected": expected,
        "rejected_unexpected": unexpected,
        "known_spec_breaking_still_accepted": still_accepted,
        "grammar_only_rejected": sorted(plain.rejected),
        "random_walks": walk["walks"],
        "random_walk_steps": walk["steps"],
        "random_walk_median_ms": walk["mask_ms_median"],
        "random_walk_p99_ms": walk["mask_ms_p99"],
        "random_walk_max_ms": walk["mask_ms_max"],
        "random_walk_first_ms_median": walk["first_ms_median"],
        "random_walk_unsatisfiable": walk["unsatisfiable"],
        "random_walk_s": round(walk_s, 3),
    }

    t0 = time.perf_counter()
    base, picked = run_baseline(spec, name, golds_tokens, tracked.positions, token_strings, text_ids, args)
    out.update(base)
    out["baseline_run_s"] = round(time.perf_counter() - t0, 3)
    same = _ms([tracked.times[i] for i in picked])
    out["mask_median_ms_on_baseline_steps"] = round(float(np.median(same)), 4) if same.size else None
    med, bmed = out["mask_median_ms"], out["baseline_mask_median_ms"]
    out["ratio"] = round(bmed / med, 2) if bmed is not None and med else None
    same_med = out["mask_median_ms_on_baseline_steps"]
    out["ratio_same_steps"] = round(bmed / same_med, 2) if bmed is not None and same_med else None
    gmed = out["grammar_only_mask_median_ms"]
    out["ratio_vs_grammar_only"] = round(bmed / gmed, 2) if bmed is not None and gmed else None
    out["targets"] = {
        "build_s": out["build_s"] <= TARGET_BUILD_S,
        "mask_median_ms": out["mask_median_ms"] <= TARGET_MEDIAN_MS,
        "mask_p99_ms": out["mask_p99_ms"] <= TARGET_P99_MS,
        "timeouts": out["timeouts"] == 0,
    }
    console.log(
        f"{name}: {len(golds)} golds, {out['mask_steps']} steps, decode {tracked_s:.1f}s, "
        f"walks {walk_s:.1f}s, baseline {out['baseline_run_s']:.1f}s"
    )
    return out


# ------------------------------------------------------------------------------ output
def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _mark(ok: bool) -> str:
    return "[green]✓[/green]" if ok else "[red]✗[/red]"


def print_tables(console: Console, specs: dict[str, dict[str, Any]], settings: dict[str, Any]) -> None:
    budget = settings["mask_budget_ms"]
    eng = Table(
        title=f"Constrained decoding on the Qwen2.5 vocabulary ({settings['vocab_size']:,} tokens): ms per mask"
    )
    for col, just in [
        ("spec", "left"),
        ("golds / steps", "right"),
        ("build s\n(grammar+lark+compile)\n\\[warm rebuild]", "right"),
        ("mask med", "right"),
        ("mask p99", "right"),
        ("mask max", "right"),
        ("1st step\nmed", "right"),
        ("grammar-only\nmed / p99", "right"),
        ("random walk\nmed / p99 / max", "right"),
        (f"timeouts\n(>{budget:g} ms + err)\n\\[in a GC pause]", "right"),
        ("golds rejected\nexpected / other", "right"),
    ]:
        eng.add_column(col, justify=just)
    for name, r in specs.items():
        eng.add_row(
            name,
            f"{r['golds']} / {r['mask_steps']:,}",
            f"{r['build_s']:.3f} ({r['grammar_s']:.3f}+{r['constraint_s']:.3f}+{r['compile_s']:.3f})"
            f" [{r['rebuild_warm_s']:.3f}]",
            f"{r['mask_median_ms']:.3f}",
            f"{r['mask_p99_ms']:.3f}",
            f"{r['mask_max_ms']:.2f}",
            f"{r['first_step_median_ms']:.3f}",
            f"{r['grammar_only_mask_median_ms']:.3f} / {r['grammar_only_mask_p99_ms']:.3f}",
            f"{r['random_walk_median_ms']:.3f} / {r['random_walk_p99_ms']:.2f} / {r['random_walk_max_ms']:.1f}",
            f"{r['timeouts']} [{r['timeouts_over_budget_during_gc']}]",
            f"{len(r['rejected_expected'])} / {len(r['rejected_unexpected'])}",
        )
    console.print(eng)

    base = Table(
        title=f"Baseline: regex partial matching in score order (gold at rank ~Geometric, mean {1 / RANK_P:g}), "
        f"timeout {settings['baseline_timeout_s']:g} s"
    )
    for col in [
        "spec",
        "build s\n(regex+compile)",
        "steps",
        "ms/step med",
        "p99",
        "candidates\nmean",
        "timeouts\n(all / prefix\nin language)",
        "med, prefix\nin language",
        "golds not in\nregex language",
        "engine med,\nsame steps",
        "ratio baseline/engine\n(same steps)\n\\[grammar only]",
    ]:
        base.add_column(col, justify="left" if col == "spec" else "right")
    for name, r in specs.items():
        base.add_row(
            name,
            f"{r['baseline_build_s']:.2f} ({r['baseline_regex_build_s']:.2f}+{r['baseline_compile_s']:.2f})",
            str(r["baseline_steps"]),
            _f(r["baseline_mask_median_ms"]),
            _f(r["baseline_mask_p99_ms"], 1),
            _f(r["baseline_candidates_mean"], 1),
            f"{r['baseline_timeouts']} / {r['baseline_timeouts_prefix_in_language']}",
            _f(r["baseline_mask_median_ms_prefix_in_language"]),
            f"{r['baseline_golds_not_in_language']} / {r['golds']}",
            _f(r["mask_median_ms_on_baseline_steps"]),
            f"{_f(r['ratio'], 1)}× ({_f(r['ratio_same_steps'], 1)}×) [{_f(r['ratio_vs_grammar_only'], 1)}×]",
        )
    console.print(base)

    split = Table(
        title="Where the key tracker's time goes: mask ms (median) by grammar-allowed tokens it had to judge"
    )
    split.add_column("spec")
    labels = list(next(iter(specs.values()))["mask_by_tracker_candidates"])
    for label in labels:
        split.add_column(f"{label} tokens\nsteps: med ms", justify="right")
    for name, r in specs.items():
        cells = []
        for label in labels:
            b = r["mask_by_tracker_candidates"][label]
            cells.append(f"{b['steps']:,}: {_f(b['median_ms'])}" if b["steps"] else "-")
        split.add_row(name, *cells)
    console.print(split)

    tgt = Table(title="Targets (key tracker on, i.e. the real configuration)")
    tgt.add_column("target")
    for name in specs:
        tgt.add_column(name, justify="right")
    rows = [
        (f"build ≤ {TARGET_BUILD_S:g} s", "build_s", "{:.3f} s"),
        (f"mask median ≤ {TARGET_MEDIAN_MS:g} ms", "mask_median_ms", "{:.3f} ms"),
        (f"mask p99 ≤ {TARGET_P99_MS:g} ms", "mask_p99_ms", "{:.3f} ms"),
        ("0 timeouts", "timeouts", "{}"),
    ]
    for label, key, fmt in rows:
        tgt.add_row(label, *[f"{fmt.format(r[key])} {_mark(r['targets'][key])}" for r in specs.values()])
    tgt.add_row(
        "(grammar only) median / p99",
        *[
            f"{r['grammar_only_mask_median_ms']:.3f} / {r['grammar_only_mask_p99_ms']:.3f}"
            for r in specs.values()
        ],
    )
    console.print(tgt)

    for name, r in specs.items():
        for gid, why in r["rejected_unexpected"].items():
            console.print(f"[red]{name}: gold {gid} rejected unexpectedly[/red]: {why}")
        for gid, why in r["llguidance_errors"].items():
            console.print(f"[red]{name}: {gid}: error[/red] {why}")
        if r["known_spec_breaking_still_accepted"]:
            console.print(
                f"[yellow]{name}: known spec-breaking golds accepted: {r['known_spec_breaking_still_accepted']}"
            )


METHOD = {
    "build": "build_s = grammar_s (build_webapi_grammar after clear_grammar_cache) + constraint_s "
    "(GrammarConstraint: llguidance parses/validates the Lark text) + compile_s (first new_session: "
    "LLMatcher compile for the Qwen vocabulary, key tracker). Spec loading (spec_load_s) is not included.",
    "mask": "Every gold continuation after 'axios.' is tokenized with the Qwen tokenizer (llguidance "
    "tokenize_str) and decoded by teacher forcing: per step session.mask() is timed (perf_counter around "
    "the call: llguidance bitmask, unpacking to a bool array, key-tracker veto), the gold token must be "
    "allowed, then session.advance(gold). All steps count, the first step of each gold too (also "
    "reported apart). A gold whose token is not allowed ends there (counted as rejected, not a timeout). "
    "mask_* = grammar + key tracker; grammar_only_mask_* = the same golds without the tracker.",
    "random_walk": "mask_time_profile: walks choosing uniformly among allowed tokens (grammar + tracker), "
    "first step of each walk excluded by that function; closer to a worst case than a model.",
    "timeouts": "gold-decoding masks (tracker on) slower than mask_budget_ms, plus llguidance/engine "
    "errors in either gold pass.",
    "baseline": "build_baseline_regex + regex.compile; then baseline_max_steps (gold, step) positions drawn "
    "uniformly (seeded) from the engine's measured steps. Per position: completion = the gold's tokens "
    "so far; candidate order = seeded random permutation of all non-empty tokens with the gold token "
    "swapped to rank R ~ Geometric(p=0.2) (R >= 1, mean 5); RegexBaseline.next_token is timed. "
    "Candidates ahead of the gold that fit end the step early (baseline_chose_other_token). "
    "baseline_timeouts = steps hitting baseline_timeout_s (split by whether the gold prefix is still in the "
    "regex's language: once it is not, no candidate can fit and the step always runs into the timeout). ratio = baseline_mask_median_ms / "
    "mask_median_ms; ratio_same_steps uses the engine's median on the same positions.",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument(
        "--specs", nargs="+", choices=list(SPEC_FILES), default=list(SPEC_FILES), help="specs to measure"
    )
    ap.add_argument("--max-golds", type=int, default=None, help="gold calls per spec (default: all)")
    ap.add_argument("--data", type=Path, help="data dir (default: $CALLBENCH_DATA_DIR or the user cache)")
    ap.add_argument("--mask-budget-ms", type=float, default=50.0, help="a mask slower than this is a timeout")
    ap.add_argument(
        "--baseline-timeout-s", type=float, default=1.0, help="per-step budget of the regex baseline"
    )
    ap.add_argument("--baseline-max-steps", type=int, default=300, help="baseline steps measured per spec")
    ap.add_argument("--walks", type=int, default=20, help="random walks per spec (mask_time_profile)")
    ap.add_argument("--walk-tokens", type=int, default=150, help="max tokens per random walk")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    console = Console(width=max(Console().width, 200) if not sys.stdout.isatty() else None)
    started = time.perf_counter()
    load_before = os.getloadavg()
    root = data_dir(args.data)
    tasks = load_tasks(root / DEFAULT_DATA_FILE)
    t0 = time.perf_counter()
    vocab = qwen_vocab()
    vocab_s = time.perf_counter() - t0
    token_strings = [b.decode("utf-8", errors="replace") for b in vocab.token_bytes]
    text_ids = np.flatnonzero(np.fromiter((len(s) > 0 for s in token_strings), dtype=bool, count=vocab.size))

    specs: dict[str, dict[str, Any]] = {}
    for name in args.specs:
        specs[name] = measure_spec(name, root, tasks, vocab, token_strings, text_ids, args, console)

    runtime = time.perf_counter() - started
    import llguidance

    settings = {
        "command": " ".join(["python", "benchmarks/constraints.py", *sys.argv[1:]]),
        "vocab": vocab.label,
        "vocab_size": vocab.size,
        "vocab_build_s": round(vocab_s, 3),
        "setup": "full",
        "mask_budget_ms": args.mask_budget_ms,
        "baseline_timeout_s": args.baseline_timeout_s,
        "baseline_max_steps": args.baseline_max_steps,
        "baseline_rank_model": f"geometric p={RANK_P} (mean {1 / RANK_P:g})",
        "max_golds": args.max_golds,
        "walks": args.walks,
        "walk_tokens": args.walk_tokens,
        "seed": args.seed,
        "targets": {
            "build_s": TARGET_BUILD_S,
            "mask_median_ms": TARGET_MEDIAN_MS,
            "mask_p99_ms": TARGET_P99_MS,
            "timeouts": 0,
        },
        "runtime_s": round(runtime, 1),
        "cpu_count": os.cpu_count(),
        "load_average_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "python": platform.python_version(),
        "llguidance": getattr(llguidance, "__version__", "?"),
        "regex": regex.__version__,
        "numpy": np.__version__,
    }
    print_tables(console, specs, settings)
    console.print(f"runtime {runtime:.1f} s (vocabulary build {vocab_s:.2f} s)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"settings": settings, "method": METHOD, "specs": specs}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
