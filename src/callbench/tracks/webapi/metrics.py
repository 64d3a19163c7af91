"""Aggregate per-sample verdicts into the metrics of the WAPIIBench paper (Table 7).

Every rate comes twice: ``_t`` over all samples and ``_e`` over executable samples only.
Argument rates are micro-averages over arguments (denominators as in the published scorer:
names/values/missing over *expected* arguments, unexpected/unnecessary/illegal over *all*
arguments = expected + unexpected). The ``mean_argument_*`` metrics first compute per sample
(precision = correct names / retrieved, recall = correct names / expected, Jaccard = correct names
/ all, conditional value accuracy = correct values / correct names) and then average over the
samples where the denominator is defined. A rate whose denominator is zero is ``None``.

``correct_except_credentials`` counts the samples whose request is right apart from its
credentials (:func:`~callbench.tracks.webapi.scoring.correct_except_credentials`: correct samples
included); its gap to ``correct_implementations`` is the share lost only to credentials. It is
``None`` for runs scored before credential arguments were marked.

Compat quirks kept in ``compat`` mode only: a non-executable sample whose expected arguments are
all ignored headers still counts in the recall/Jaccard denominators (with 0). ``strict`` counts a
sample in a mean only when it has at least one argument in that denominator. A sample compat
marks ``dropped`` (its code ran cleanly and sent no request: the published scorer then has no
config file for it and never counts it) is left out of every figure; ``dropped_samples`` says how
many (0 in strict, which counts such a sample as an absent request).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from callbench.tracks.webapi.scoring import SampleVerdict, correct_except_credentials

_ERROR_COUNT_NAMES = {
    "timeout": "timeouts",
    "unsatisfiable": "unsatisfiable_constraints",
    "no_request": "absent_requests",
    "incomplete_request": "incomplete_implementations",
    "runtime_error": "runtime_errors",
}


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _sample_counts(v: SampleVerdict) -> dict[str, Counter]:
    c = {k: Counter() for k in ("all", "expected", "unexpected", "correct_name", "correct_value", "missing", "unnecessary", "illegal")}
    if v.error is not None:
        for loc, n in v.expected_counts.items():
            c["all"][loc] += n
            c["expected"][loc] += n
            c["missing"][loc] += n
        return c
    for a in v.arguments:
        loc = a.location
        c["all"][loc] += 1
        if a.verdict in ("correct", "incorrect_value", "missing"):
            c["expected"][loc] += 1
        if a.verdict in ("correct", "incorrect_value"):
            c["correct_name"][loc] += 1
        if a.verdict == "correct":
            c["correct_value"][loc] += 1
        if a.verdict == "missing":
            c["missing"][loc] += 1
        if a.verdict in ("unnecessary", "illegal"):
            c["unexpected"][loc] += 1
        if a.verdict == "unnecessary":
            c["unnecessary"][loc] += 1
        if a.verdict == "illegal":
            c["illegal"][loc] += 1
    return c


def _has_location(counter: Counter, mode: str, *, error: bool) -> bool:
    """Does this sample count in a mean's denominator? (see the module docstring's quirk)"""
    if mode == "compat" and error:
        return len(counter) > 0  # published: counts the key even when its value is 0
    return sum(counter.values()) > 0


def aggregate(verdicts: Iterable[SampleVerdict], mode: str = "strict") -> dict[str, Any]:
    verdicts = list(verdicts)
    # compat: samples the published scorer never saw (no request, no error) are in no figure
    dropped = sum(1 for v in verdicts if v.dropped)
    verdicts = [v for v in verdicts if not v.dropped]
    n = len(verdicts)
    executable = [v for v in verdicts if v.error is None]
    n_e = len(executable)
    m: dict[str, Any] = {"n": n, "n_executable": n_e}

    def rate(name: str, count_t: int, count_e: int | None = None) -> None:
        m[f"{name}_t"] = _ratio(count_t, n)
        m[f"{name}_e"] = _ratio(count_t if count_e is None else count_e, n_e)

    rate("executable_implementations", n_e)
    for verdict in ("correct", "wrong", "illegal"):
        rate(f"{verdict}_implementations", sum(1 for v in verdicts if v.sample == verdict))
    except_cred = [correct_except_credentials(v) for v in verdicts]
    if None in except_cred:
        m["correct_except_credentials_t"] = m["correct_except_credentials_e"] = None
    else:
        rate("correct_except_credentials", sum(1 for x in except_cred if x))
    for part in ("url", "method", "endpoint"):
        for verdict in ("correct", "wrong", "illegal"):
            rate(f"{verdict}_{part}s", sum(1 for v in executable if getattr(v, part) == verdict))

    tot = {k: 0 for k in ("all", "expected", "missing")}
    exe = {k: 0 for k in ("all", "expected", "unexpected", "correct_name", "correct_value", "missing", "unnecessary", "illegal")}
    sums = {k: 0.0 for k in ("precision", "recall_t", "recall_e", "jaccard_t", "jaccard_e", "value_cond")}
    dens = {k: 0 for k in sums}
    for v in verdicts:
        c = _sample_counts(v)
        is_error = v.error is not None
        for k in tot:
            tot[k] += sum(c[k].values())
        total = {k: sum(c[k].values()) for k in c}
        has_expected = _has_location(c["expected"], mode, error=is_error)
        has_all = _has_location(c["all"], mode, error=is_error)
        recall = total["correct_name"] / total["expected"] if total["expected"] else 0.0
        jaccard = total["correct_name"] / total["all"] if total["all"] else 0.0
        if has_expected:
            sums["recall_t"] += recall
            dens["recall_t"] += 1
        if has_all:
            sums["jaccard_t"] += jaccard
            dens["jaccard_t"] += 1
        if is_error:
            continue
        for k in exe:
            exe[k] += total[k]
        retrieved = total["correct_name"] + total["unexpected"]
        if retrieved:
            sums["precision"] += total["correct_name"] / retrieved
            dens["precision"] += 1
        if has_expected:
            sums["recall_e"] += recall
            dens["recall_e"] += 1
        if has_all:
            sums["jaccard_e"] += jaccard
            dens["jaccard_e"] += 1
        if total["correct_name"]:
            sums["value_cond"] += total["correct_value"] / total["correct_name"]
            dens["value_cond"] += 1

    all_t = tot["all"]  # executable samples: expected + unexpected; others: their expected args
    m["correct_argument_names_t"] = _ratio(exe["correct_name"], tot["expected"])
    m["correct_argument_names_e"] = _ratio(exe["correct_name"], exe["expected"])
    m["correct_argument_values_t"] = _ratio(exe["correct_value"], tot["expected"])
    m["correct_argument_values_e"] = _ratio(exe["correct_value"], exe["expected"])
    m["missing_arguments_t"] = _ratio(tot["missing"], tot["expected"])
    m["missing_arguments_e"] = _ratio(exe["missing"], exe["expected"])
    for kind in ("unexpected", "unnecessary", "illegal"):
        m[f"{kind}_arguments_t"] = _ratio(exe[kind], all_t)
        m[f"{kind}_arguments_e"] = _ratio(exe[kind], exe["all"])
    m["mean_argument_precision_t"] = m["mean_argument_precision_e"] = _ratio(sums["precision"], dens["precision"])
    m["mean_argument_recall_t"] = _ratio(sums["recall_t"], dens["recall_t"])
    m["mean_argument_recall_e"] = _ratio(sums["recall_e"], dens["recall_e"])
    m["mean_argument_jaccard_t"] = _ratio(sums["jaccard_t"], dens["jaccard_t"])
    m["mean_argument_jaccard_e"] = _ratio(sums["jaccard_e"], dens["jaccard_e"])
    m["mean_argument_value_conditional_accuracy_t"] = m["mean_argument_value_conditional_accuracy_e"] = _ratio(
        sums["value_cond"], dens["value_cond"]
    )
    errors = [v.error for v in verdicts if v.error is not None]
    m["total_errors"] = len(errors)
    for err, name in _ERROR_COUNT_NAMES.items():
        m[name] = sum(1 for e in errors if e == err)
    m["argument_counts"] = {"expected_t": tot["expected"], "all_t": all_t, **{f"{k}_e": exe[k] for k in exe}}
    m["dropped_samples"] = dropped
    return m


# Metrics shown in the paper-style table, in order (label, key stem, has _t/_e).
TABLE_ROWS: tuple[tuple[str, str], ...] = (
    ("Executable implementations", "executable_implementations"),
    ("Correct implementations", "correct_implementations"),
    ("Correct except credentials", "correct_except_credentials"),
    ("Illegal implementations", "illegal_implementations"),
    ("Correct URLs", "correct_urls"),
    ("Illegal URLs", "illegal_urls"),
    ("Correct methods", "correct_methods"),
    ("Illegal methods", "illegal_methods"),
    ("Correct argument names", "correct_argument_names"),
    ("Correct argument values", "correct_argument_values"),
    ("Missing arguments", "missing_arguments"),
    ("Unexpected arguments", "unexpected_arguments"),
    ("Unnecessary arguments", "unnecessary_arguments"),
    ("Illegal arguments", "illegal_arguments"),
    ("Mean argument precision", "mean_argument_precision"),
    ("Mean argument recall", "mean_argument_recall"),
    ("Mean argument Jaccard", "mean_argument_jaccard"),
    ("Mean arg. value cond. accuracy", "mean_argument_value_conditional_accuracy"),
)
COUNT_ROWS: tuple[tuple[str, str], ...] = (
    ("Total errors", "total_errors"),
    ("Absent requests", "absent_requests"),
    ("Incomplete implementations", "incomplete_implementations"),
    ("Runtime errors", "runtime_errors"),
    ("Timeouts", "timeouts"),
    ("Unsatisfiable constraints", "unsatisfiable_constraints"),
    ("Dropped samples (compat)", "dropped_samples"),
)
