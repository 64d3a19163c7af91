"""Metrics for the nested tool-call track (NESTFUL-style sequences of labelled calls).

Two modes exist because the published NESTFUL scorer (IBM/NESTFUL ``src/scorer.py`` + ``src/utils.py``)
has behaviours that make its numbers hard to interpret, yet results must stay comparable with the
paper.  ``compat`` reproduces that scorer's arithmetic, quirks included; ``strict`` (the default)
fixes them.  docs/nested-scoring.md lists every definition and quirk with sources.

Per-sample scores come from :func:`score_sample`; corpus numbers from :func:`aggregate`, because the
published F1 is a corpus-level macro average that cannot be computed as a mean of per-sample values.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from callbench.tracks.nested import compat_scorer
from callbench.tracks.nested.analysis import REFERENCE_BINS, SHAPES, analyse, reference_bin
from callbench.tracks.nested.compat_parsers import CompatParse, from_calls
from callbench.tracks.nested.compat_scorer import macro_prf_gold_fitted
from callbench.tracks.nested.schema import FINAL_CALL, label_number

Mode = Literal["strict", "compat"]
MODES: tuple[str, ...] = ("strict", "compat")

SUMMARY_KEYS: tuple[str, ...] = (
    "f1_function",
    "f1_parameter",
    "partial_sequence_accuracy",
    "full_sequence_accuracy",
    "win_rate",
    "parse_error_rate",
)


class _NoAnswer:
    """Sentinel type: the sample has no gold answer (non-executable domain), so win is undefined."""

    _instance: _NoAnswer | None = None

    def __new__(cls) -> _NoAnswer:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER: Any = _NoAnswer()


@dataclass(frozen=True)
class Tolerance:
    """Numeric tolerance for strict answer comparison (win rate).

    ``math.isclose(a, b, rel_tol=rel, abs_tol=abs)``: relative 1e-6 absorbs float noise from
    differently ordered arithmetic chains; absolute 1e-9 makes answers near zero comparable.
    """

    rel: float = 1e-6
    abs: float = 1e-9


DEFAULT_TOLERANCE = Tolerance()

# Call-argument literals are compared after rounding numbers to this many significant digits
# (hash-based multiset matching needs an exact key, so a transitive quantisation replaces isclose).
ARG_SIGNIFICANT_DIGITS = 12


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------

_VAR_LABEL = re.compile(r"^var_?(\d+)$", re.IGNORECASE)


def normalise_label(label: Any) -> str | None:
    """Canonical label text: ``$var1``, ``var_1`` and ``$var_1$`` all become ``var_1``.

    v1 data labels ``var1`` while v2 uses ``$var_1``; models mix both, and the choice carries no meaning.
    """
    if not isinstance(label, str):
        return None
    body = label.strip().strip("$").strip()
    if not body:
        return None
    m = _VAR_LABEL.match(body)
    return f"var_{label_number(m.group(1))}" if m else body


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _prf(tp: int, fp: int, fn: int) -> tuple[float | None, float | None, float | None]:
    """Micro precision/recall/F1; None where the denominator is zero (undefined, not zero)."""
    return _ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(2 * tp, 2 * tp + fp + fn)


def _well_formed(calls: Any) -> bool:
    if not isinstance(calls, list):
        return False
    for c in calls:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            return False
        if not isinstance(c.get("arguments", {}), dict):
            return False
        if c.get("label") is not None and not isinstance(c["label"], str):
            return False
    return True


# --------------------------------------------------------------------------------------------
# strict mode
# --------------------------------------------------------------------------------------------


def _norm_literal(v: Any) -> Hashable:
    """Type-aware canonical form: bools never equal numbers, strings never equal numbers,
    ints equal floats numerically (to ARG_SIGNIFICANT_DIGITS), lists equal tuples."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        f = float(v)
        if math.isnan(f):
            return ("num", "nan")
        if math.isinf(f):
            return ("num", f)
        return ("num", float(f"{f:.{ARG_SIGNIFICANT_DIGITS}g}") + 0.0)
    if isinstance(v, str):
        return ("str", v)
    if v is None:
        return ("none",)
    if isinstance(v, list | tuple):
        return ("list", tuple(_norm_literal(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((str(k), _norm_literal(x)) for k, x in v.items())))
    return ("other", repr(v))


@dataclass
class _Ref:
    target: int
    field: str | None


class _Seq:
    """A call sequence with references resolved to call indices and Merkle signatures per call.

    A reference resolves only to a label defined by an *earlier* call, so a forward reference
    (an impossible execution order) stays a literal string and can never match gold.
    """

    def __init__(self, calls: list[dict]):
        self.calls = calls
        self.names: list[str] = [c["name"] for c in calls]
        self.args: list[dict[str, Any]] = []
        defined: dict[str, int] = {}
        for i, c in enumerate(calls):
            resolved: dict[str, Any] = {}
            for k, v in (c.get("arguments") or {}).items():
                resolved[str(k)] = self._resolve(v, defined)
            self.args.append(resolved)
            lab = normalise_label(c.get("label"))
            if lab is not None:
                defined[lab] = i
        self.sigs: list[str] = []
        for i in range(len(calls)):
            self.sigs.append(self._sig(i))

    @staticmethod
    def _resolve(v: Any, defined: dict[str, int]) -> Any:
        if isinstance(v, str) and v.startswith("$"):
            head, _, field = v.strip().strip("$").partition(".")
            lab = normalise_label(head)
            if lab is not None and lab in defined:
                return _Ref(defined[lab], field or None)
        return v

    def _sig(self, i: int) -> str:
        # Called in index order, and references only point backwards, so self.sigs[target] exists.
        items = []
        for k, v in sorted(self.args[i].items()):
            if isinstance(v, _Ref):
                items.append((k, ("ref", self.sigs[v.target], v.field)))
            else:
                items.append((k, _norm_literal(v)))
        return hashlib.sha1(repr((self.names[i], tuple(items))).encode()).hexdigest()


def _match(pred: _Seq, gold: _Seq) -> dict[int, int]:
    """Pair predicted calls with gold calls: identical computations first, then same name in order.

    The first pass makes order-insensitive comparison exact; the second keeps a call with one wrong
    literal paired with its gold counterpart so references *to* it still count as right.
    """
    mapping: dict[int, int] = {}
    free_gold: dict[Hashable, list[int]] = defaultdict(list)
    for g, s in enumerate(gold.sigs):
        free_gold[s].append(g)
    used: set[int] = set()
    for p, s in enumerate(pred.sigs):
        if free_gold[s]:
            g = free_gold[s].pop(0)
            mapping[p] = g
            used.add(g)
    by_name: dict[str, list[int]] = defaultdict(list)
    for g, n in enumerate(gold.names):
        if g not in used:
            by_name[n].append(g)
    for p, n in enumerate(pred.names):
        if p not in mapping and by_name[n]:
            mapping[p] = by_name[n].pop(0)
    return mapping


def _param_values(seq: _Seq, i: int, ref_key: Callable[[int], Hashable]) -> dict[str, Hashable]:
    out: dict[str, Hashable] = {}
    for k, v in seq.args[i].items():
        out[k] = ("ref", ref_key(v.target), v.field) if isinstance(v, _Ref) else _norm_literal(v)
    return out


def answers_equal(pred: Any, gold: Any, tolerance: Tolerance = DEFAULT_TOLERANCE) -> bool:
    """Strict answer equality: numbers within tolerance (int 6 == float 6.0), bools only equal bools,
    strings never equal numbers, tuples equal lists, containers compared element-wise."""
    if isinstance(pred, bool) or isinstance(gold, bool):
        return isinstance(pred, bool) and isinstance(gold, bool) and pred == gold
    if isinstance(pred, int | float) and isinstance(gold, int | float):
        try:
            if math.isnan(pred) or math.isnan(gold):
                return math.isnan(pred) and math.isnan(gold)
            return math.isclose(pred, gold, rel_tol=tolerance.rel, abs_tol=tolerance.abs)
        except OverflowError:  # an int past the float range (e.g. power(10, 400)): only exact equality
            return pred == gold
    if isinstance(pred, list | tuple) and isinstance(gold, list | tuple):
        return len(pred) == len(gold) and all(answers_equal(a, b, tolerance) for a, b in zip(pred, gold, strict=True))
    if isinstance(pred, dict) and isinstance(gold, dict):
        return pred.keys() == gold.keys() and all(answers_equal(pred[k], gold[k], tolerance) for k in gold)
    if type(pred) is not type(gold) and not (pred is None and gold is None):
        return False
    return pred == gold


def _without_final_call(calls: list[dict]) -> list[dict]:
    """``calls`` without v1's ``var_result`` pseudo-call: it computes nothing (it names the outputs
    that form the answer), so strict neither requires nor counts it."""
    return [c for c in calls if c.get("name") != FINAL_CALL]


def _score_strict(pred_calls, gold_calls, *, parse_error, pred_answer, gold_answer, executed_ok, tolerance):
    # With var_result, gold names its answer itself, so full accuracy needs the same computations
    # only; without it the last call's output is the answer and must be the same computation.
    answer_is_last_call = len(_without_final_call(gold_calls)) == len(gold_calls)
    gold = _Seq(_without_final_call(gold_calls))
    gold_triples: Counter = Counter()
    for g in range(len(gold.calls)):
        for k, v in _param_values(gold, g, lambda t: gold.sigs[t]).items():
            gold_triples[(gold.names[g], k, v)] += 1
    gold_names = Counter(gold.names)

    if parse_error:
        fn_counts = (0, 0, sum(gold_names.values()))
        par_counts = (0, 0, sum(gold_triples.values()))
        partial, full = 0.0, False
        win = None if gold_answer is NO_ANSWER else False
    else:
        pred = _Seq(_without_final_call(pred_calls))
        mapping = _match(pred, gold)

        def pred_ref_key(t: int) -> Hashable:
            return gold.sigs[mapping[t]] if t in mapping else ("unmatched-pred", t)

        pred_names = Counter(pred.names)
        tp = sum((pred_names & gold_names).values())
        fn_counts = (tp, sum(pred_names.values()) - tp, sum(gold_names.values()) - tp)

        pred_triples: Counter = Counter()
        for p in range(len(pred.calls)):
            for k, v in _param_values(pred, p, pred_ref_key).items():
                pred_triples[(pred.names[p], k, v)] += 1
        tp = sum((pred_triples & gold_triples).values())
        par_counts = (tp, sum(pred_triples.values()) - tp, sum(gold_triples.values()) - tp)

        correct = 0
        for p, g in mapping.items():
            if pred.names[p] == gold.names[g] and _param_values(pred, p, pred_ref_key) == _param_values(
                gold, g, lambda t: gold.sigs[t]
            ):
                correct += 1
        denom = max(len(pred.calls), len(gold.calls))
        partial = correct / denom if denom else 1.0
        # Same computations (a relabelling that keeps a valid order) and the same final call,
        # because the last call's output is the sequence's answer.
        full = Counter(pred.sigs) == Counter(gold.sigs) and (
            not answer_is_last_call or not gold.sigs or (bool(pred.sigs) and pred.sigs[-1] == gold.sigs[-1])
        )
        if gold_answer is NO_ANSWER:
            win = None
        else:
            win = bool(pred_calls) and executed_ok and answers_equal(pred_answer, gold_answer, tolerance)

    return {
        "f1_function": _prf(*fn_counts)[2],
        "f1_parameter": _prf(*par_counts)[2],
        "partial_sequence_accuracy": partial,
        "full_sequence_accuracy": float(full),
        "win": win,
        "_function_counts": fn_counts,
        "_parameter_counts": par_counts,
    }


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def score_sample(
    pred_calls: list[dict] | None,
    gold_calls: list[dict],
    *,
    mode: Mode = "strict",
    pred_answer: Any = None,
    gold_answer: Any = NO_ANSWER,
    executed_ok: bool = False,
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    domain: str | None = None,
    sample_id: str | None = None,
    not_executable: str | None = None,
    compat_parse: CompatParse | None = None,
) -> dict:
    """Score one prediction against its gold sequence.

    ``pred_calls`` is None when the model output could not be parsed; ``pred_answer`` and
    ``executed_ok`` come from executing the *predicted* sequence (done elsewhere); leave
    ``gold_answer`` unset for non-executable samples, whose win is then None and not counted.
    Per-sample F1 values are returned for inspection, but :func:`aggregate` recomputes corpus
    F1 from the raw counts/labels carried under ``_``-prefixed keys.

    ``not_executable`` says why a sample's win cannot be computed (see :data:`NO_GOLD_ANSWER` and
    :func:`tools_not_implemented`); it is stored as ``non_executable_reason`` and listed by
    :func:`aggregate` under ``non_executable``, so no such row is dropped silently.

    ``compat_parse`` (compat mode): the model output as one of the published parsers read it
    (:func:`~callbench.tracks.nested.compat_parsers.parse`); without it, ``pred_calls`` are taken
    as read and grounded as upstream grounds parsed calls (the ``lenient`` parser). In compat mode
    ``pred_answer``/``executed_ok`` must come from executing ``compat_parse.decoded``.
    """
    _check_mode(mode)
    structure = analyse(gold_calls)
    base = {
        "mode": mode,
        "domain": domain,
        "sample_id": sample_id,
        "gold_length": len(gold_calls),
        # the gold sequence's structure, for by_references / by_shape (see analysis.py)
        "gold_references": structure.references,
        "gold_referencing_calls": structure.referencing_calls,
        "gold_shape": structure.shape,
    }
    if not_executable is not None:
        base["non_executable_reason"] = not_executable
    if mode == "compat":
        prepared = compat_parse if compat_parse is not None else from_calls(pred_calls)
        parts = compat_scorer.score(prepared, gold_calls)
        parts["win"] = (
            None
            if gold_answer is NO_ANSWER
            else compat_scorer.win(prepared.decoded, pred_answer, gold_answer, executed_ok)
        )
        parts["f1_function"] = macro_prf_gold_fitted(parts["_function_rows"])[2]
        parts["f1_parameter"] = macro_prf_gold_fitted(parts["_parameter_rows"])[2]
        return {**base, **parts}
    parse_error = not _well_formed(pred_calls)
    parts = _score_strict(
        pred_calls,
        gold_calls,
        parse_error=parse_error,
        pred_answer=pred_answer,
        gold_answer=gold_answer,
        executed_ok=executed_ok,
        tolerance=tolerance,
    )
    return {**base, **parts, "parse_error": parse_error}


def aggregate(samples: list[dict], mode: Mode = "strict") -> dict:
    """Corpus summary: strict F1 is micro over summed counts; compat F1 is the published macro-F1
    with the label binarizer fitted on these samples' gold.  Undefined values are None."""
    _check_mode(mode)
    wrong = {s.get("mode") for s in samples} - {mode}
    if wrong:
        raise ValueError(f"samples scored in mode(s) {sorted(wrong)} cannot be aggregated as {mode!r}")
    n = len(samples)
    out: dict[str, Any] = {"mode": mode, "n": n}
    if mode == "strict":
        for kind in ("function", "parameter"):
            tp = sum(s[f"_{kind}_counts"][0] for s in samples)
            fp = sum(s[f"_{kind}_counts"][1] for s in samples)
            fn = sum(s[f"_{kind}_counts"][2] for s in samples)
            p, r, f = _prf(tp, fp, fn)
            out[f"precision_{kind}"], out[f"recall_{kind}"], out[f"f1_{kind}"] = p, r, f
    else:
        for kind in ("function", "parameter"):
            rows = [row for s in samples for row in s[f"_{kind}_rows"]]
            p, r, f = macro_prf_gold_fitted(rows)
            out[f"precision_{kind}"], out[f"recall_{kind}"], out[f"f1_{kind}"] = p, r, f
    out["partial_sequence_accuracy"] = _ratio(sum(s["partial_sequence_accuracy"] for s in samples), n)
    out["full_sequence_accuracy"] = _ratio(sum(s["full_sequence_accuracy"] for s in samples), n)
    wins = [s["win"] for s in samples if s["win"] is not None]
    out["win_rate"] = _ratio(sum(bool(w) for w in wins), len(wins))
    out["win_n"] = len(wins)
    out["n_executable"] = len(wins)  # the rows win_rate is over (win_n, kept for stored summaries)
    out["non_executable"] = non_executable(samples)
    out["parse_error_rate"] = _ratio(sum(bool(s["parse_error"]) for s in samples), n)
    return out


NO_GOLD_ANSWER = "no gold answer"
_NOT_IMPLEMENTED = "tool not implemented: "
_UNKNOWN_REASON = "not executable (reason not recorded)"


def tools_not_implemented(names: Iterable[str]) -> str:
    """The ``not_executable`` reason of a row whose gold calls use tools without an implementation."""
    return _NOT_IMPLEMENTED + ", ".join(sorted(set(names)))


def non_executable(samples: list[dict]) -> dict:
    """The rows whose win is not computed (``win`` None), never dropped silently: ``n``, counts
    ``by_reason`` (``no gold answer``, ``tool not implemented``) and ``rows`` (``id``, ``reason``;
    the reason names the missing tools). ``missing_tools`` counts rows per unimplemented tool."""
    rows = []
    by_reason: dict[str, int] = defaultdict(int)
    missing: dict[str, int] = defaultdict(int)
    for s in samples:
        if s.get("win") is not None:
            continue
        reason = s.get("non_executable_reason") or _UNKNOWN_REASON
        if reason.startswith(_NOT_IMPLEMENTED):
            kind = _NOT_IMPLEMENTED[:-2]
            for name in reason[len(_NOT_IMPLEMENTED) :].split(", "):
                missing[name] += 1
        else:
            kind = reason
        by_reason[kind] += 1
        rows.append({"id": s.get("sample_id"), "reason": reason})
    return {
        "n": len(rows),
        "by_reason": dict(sorted(by_reason.items())),
        "missing_tools": dict(sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))),
        "rows": rows,
    }


def win_rate_line(metrics: dict) -> str:
    """``win rate 0.xx over N of M rows`` (``win rate – over 0 of M rows`` when none is executable)."""
    n_exec = metrics.get("n_executable", metrics.get("win_n", 0)) or 0
    rate = metrics.get("win_rate")
    shown = "–" if rate is None else f"{rate:.2f}"
    return f"win rate {shown} over {n_exec} of {metrics.get('n', 0)} rows"


def win_rate_note(metrics: dict) -> str:
    """:func:`win_rate_line` plus why the other rows are not executable, e.g. ``win rate 0.50 over
    3 of 5 rows (not executable: 1 no gold answer, 1 tool not implemented)``."""
    line = win_rate_line(metrics)
    reasons = (metrics.get("non_executable") or {}).get("by_reason") or {}
    if reasons:
        line += " (not executable: " + ", ".join(f"{n} {why}" for why, n in reasons.items()) + ")"
    return line


def by_group(samples: list[dict], key: Callable[[dict], Hashable], mode: Mode = "strict") -> dict:
    """Aggregate each group separately (compat F1 refits its label set per group, as running the
    published scorer on that subset would)."""
    groups: dict[Hashable, list[dict]] = defaultdict(list)
    for s in samples:
        groups[key(s)].append(s)
    out = {g: aggregate(members, mode) for g, members in sorted(groups.items(), key=lambda kv: str(kv[0]))}
    for agg in out.values():  # the row list is in the overall summary; groups keep the counts
        agg["non_executable"] = {k: v for k, v in agg["non_executable"].items() if k != "rows"}
    return out


def by_domain(samples: list[dict], mode: Mode = "strict") -> dict:
    """Breakdown by the ``domain`` given to :func:`score_sample` (None when it was not given)."""
    return by_group(samples, lambda s: s.get("domain"), mode)


def by_length(samples: list[dict], mode: Mode = "strict") -> dict:
    """Breakdown by gold sequence length (number of gold calls): accuracy falls with depth."""
    return by_group(samples, lambda s: s["gold_length"], mode)


def by_references(samples: list[dict], mode: Mode = "strict") -> dict:
    """Breakdown by the number of nested references in the gold sequence, binned 0, 1, 2, 3, 4, 5, 6+
    (:data:`~callbench.tracks.nested.analysis.REFERENCE_BINS`, in that order)."""
    groups = by_group(samples, lambda s: reference_bin(s["gold_references"]), mode)
    return {b: groups[b] for b in REFERENCE_BINS if b in groups}


def by_shape(samples: list[dict], mode: Mode = "strict") -> dict:
    """Breakdown by the gold dependency graph's shape, in the order of
    :data:`~callbench.tracks.nested.analysis.SHAPES` (independent, chain, fan-in, fan-out, mixed)."""
    groups = by_group(samples, lambda s: s["gold_shape"], mode)
    return {k: groups[k] for k in (*SHAPES, *sorted(set(groups) - set(SHAPES))) if k in groups}


def has_structure(samples: list[dict]) -> bool:
    """Whether every sample carries the gold structure (verdicts stored before it was added do not)."""
    return all("gold_references" in s and "gold_shape" in s for s in samples)


def summarize(samples: list[dict], mode: Mode = "strict") -> dict:
    """Overall summary plus the ``by_domain`` and ``by_length`` breakdowns, and ``by_references``
    and ``by_shape`` when every sample carries its gold structure."""
    out = {**aggregate(samples, mode), "by_domain": by_domain(samples, mode), "by_length": by_length(samples, mode)}
    if has_structure(samples):
        out["by_references"] = by_references(samples, mode)
        out["by_shape"] = by_shape(samples, mode)
    return out
