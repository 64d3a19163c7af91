"""The published NESTFUL scorer's per-sample arithmetic (``--scoring compat``).

IBM/NESTFUL ``src/scorer.py`` (``calculate_scores``) and ``src/utils.py`` at the commit in
:data:`~callbench.tracks.nested.compat_parsers.UPSTREAM_COMMIT`, reimplemented (no code copied) so
that every per-sample verdict equals the published one: the calls come from one of its parsers
(:mod:`~callbench.tracks.nested.compat_parsers`) as grounded JSON text, and gold goes through the
same grounding. docs/nested-scoring.md lists the definitions and quirks (Q1-Q10).

Corpus F1 is a gold-fitted macro average (:func:`macro_prf_gold_fitted`), so each sample carries
its label rows (``_function_rows``, ``_parameter_rows``) for :func:`~callbench.tracks.nested.metrics.aggregate`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from callbench.tracks.nested.compat_parsers import CompatParse, ground

# The one call both F1 loops skip, recognised by its JSON text exactly as json.dumps writes it.
DUMMY_CALL = '{"name": "dummy", "arguments": {}}'
END_OF_TEXT = "<|endoftext|>"  # removed from each call's JSON text before it is decoded


def _decode(text: str) -> Any:
    return json.loads(text.replace(END_OF_TEXT, "").strip())


def _value(value: Any, *, pred: bool) -> Any:
    # Quirk Q5: a *predicted* string that starts with '$' and does not end with one gets one appended.
    if pred and type(value) is str and value.startswith("$") and not value.endswith("$"):
        return value + "$"
    return value


def gold_text(gold_calls: list[dict[str, Any]]) -> list[str]:
    """Gold calls as the published scorer prepares them: grounded (var_result dropped, references
    named by function) and written as JSON text. A ``label`` of None counts as no label."""
    calls = [{k: v for k, v in c.items() if not (k == "label" and v is None)} for c in gold_calls]
    return [json.dumps(c) for c in ground(calls)]


def function_names(texts: list[str], *, pred: bool) -> tuple[list[str], bool]:
    """The F1-function labels: each call's ``str(name)`` (a predicted ``dummy`` call skipped); and
    whether a call had no readable name (a parse error for predictions)."""
    names: list[str] = []
    failed = False
    for text in texts:
        if not text or (pred and text.strip() == DUMMY_CALL):
            continue
        try:
            names.append(str(_decode(text)["name"]))
        except Exception:  # noqa: BLE001 - upstream counts any failure as a parsing error
            failed = True
    return names, failed


def parameter_map(texts: list[str], *, pred: bool) -> tuple[dict[Any, list[str]], bool]:
    """The F1-parameter labels: name -> ``["arg = value", ...]`` of the *last* call of that name
    (quirk Q2), values written with Python's ``str`` (quirks Q3, Q4); and whether a call could not
    be read. A call failing midway keeps the labels it had (and its name's earlier ones are gone)."""
    out: dict[Any, list[str]] = {}
    failed = False
    for text in texts:
        if pred and text.strip() == DUMMY_CALL:
            continue
        try:
            if not text:
                continue
            call = _decode(text)
            if pred and (type(call) is not dict or "name" not in call):
                raise ValueError("not a named call")
            out[call["name"]] = []
            for arg, value in call["arguments"].items():
                out[call["name"]].append(f"{arg} = {_value(value, pred=pred)}")
        except Exception:  # noqa: BLE001
            failed = True
    return out, failed


def rendered_calls(texts: list[str], *, pred: bool) -> list[str]:
    """Each call as ``name(arg = value, ...)``, arguments sorted as text. A predicted call without a
    readable name is left out; one whose arguments cannot be read is ``name({})``. (Gold is read
    without such guards: upstream crashes on unreadable gold, which validated tasks never are.)"""
    out = []
    for text in texts:
        try:
            call = _decode(text)
            name = str(call["name"])
        except Exception:  # noqa: BLE001
            if not pred:
                raise
            continue
        try:
            args = ", ".join(sorted(f"{k} = {_value(v, pred=pred)}" for k, v in call["arguments"].items()))
        except Exception:  # noqa: BLE001
            if not pred:
                raise
            args = "{}"
        out.append(f"{name}({args})")
    return out


def align(gold: list[str], pred: list[str]) -> tuple[list[str], list[str]]:
    """The published alignment (quirk Q6). Equal lengths: unchanged. Otherwise the call names (text
    before the first ``(``) are walked greedily: equal names pair up; else the *gold* call pairs with
    a blank, and only once gold is exhausted do the remaining predictions pair with blanks. The
    calls are then dealt back into the non-blank name slots in order, so a call whose name is
    empty takes no slot of its own (it shifts the calls after it, as upstream)."""
    gold_names = [s.split("(", 1)[0] for s in gold]
    pred_names = [s.split("(", 1)[0] for s in pred]
    if len(gold_names) == len(pred_names):
        return gold, pred
    slots_g: list[str] = []
    slots_p: list[str] = []
    i = j = 0
    while i < len(gold_names) or j < len(pred_names):
        if i < len(gold_names) and j < len(pred_names) and gold_names[i] == pred_names[j]:
            slots_g.append(gold_names[i])
            slots_p.append(pred_names[j])
            i += 1
            j += 1
        elif i < len(gold_names):
            slots_g.append(gold_names[i])
            slots_p.append("")
            i += 1
        else:
            slots_g.append("")
            slots_p.append(pred_names[j])
            j += 1
    return _deal(slots_g, gold), _deal(slots_p, pred)


def _deal(slots: list[str], calls: list[str]) -> list[str]:
    queue = iter(calls)
    return ["" if name == "" else next(queue) for name in slots]


def sequence_accuracy(gold: list[str], pred: list[str]) -> float:
    """sklearn ``accuracy_score`` of the aligned lists: the share of equal positions; 0.0 for two
    empty lists (sklearn refuses them and upstream scores 0)."""
    gold, pred = align(gold, pred)
    if not gold or len(gold) != len(pred):
        return 0.0
    return sum(a == b for a, b in zip(gold, pred, strict=True)) / len(gold)


def score(pred: CompatParse, gold_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """One sample's published verdict: partial and full sequence accuracy, the parse-error flag
    (the parser's, or a call the F1 loops cannot read) and the F1 label rows."""
    gold = gold_text(gold_calls)
    gold_names, _ = function_names(gold, pred=False)
    pred_names, names_failed = function_names(pred.calls, pred=True)
    gold_map, _ = parameter_map(gold, pred=False)
    pred_map, params_failed = parameter_map(pred.calls, pred=True)
    slot_rows = [(gold_map.get(k, []), pred_map.get(k, [])) for k in set(pred_map) | set(gold_map)]
    partial = sequence_accuracy(rendered_calls(gold, pred=False), rendered_calls(pred.calls, pred=True))
    return {
        "partial_sequence_accuracy": partial,
        "full_sequence_accuracy": float(partial == 1),
        "parse_error": pred.parse_error or names_failed or params_failed,
        "_function_rows": [(gold_names, pred_names)],
        "_parameter_rows": sorted(slot_rows),  # upstream's row order is a set's; sorted, F1 is the same
    }


def win(decoded: Any, pred_answer: Any, gold_answer: Any, executed_ok: bool) -> bool:
    """The published win: nothing decoded loses; a failed execution answers ``False``, which equals
    a gold 0, 0.0 or false (quirk Q7); two floats compare after rounding the prediction to as many
    decimals as the gold prints (quirk Q8); a tuple equals a list with the same items."""
    if not decoded:
        return False
    ans = pred_answer if executed_ok else False
    if type(gold_answer) is float and type(ans) is float:
        text = str(gold_answer)
        if "." in text:
            ans = round(ans, len(text.split(".")[1]))
        # else (gold 1e-05): the published scorer raises IndexError; compat compares unrounded
    if ans == gold_answer:
        return True
    return isinstance(ans, tuple) and isinstance(gold_answer, list) and _listify(ans) == gold_answer


def _listify(v: Any) -> Any:
    return [_listify(x) for x in v] if isinstance(v, list | tuple) else v


def macro_prf_gold_fitted(
    rows: Iterable[tuple[Iterable[str], Iterable[str]]],
) -> tuple[float | None, float | None, float | None]:
    """Macro P/R/F1 as ``MultiLabelBinarizer().fit(gold)`` + sklearn ``average='macro'`` computes it.

    Classes are the labels seen in gold; predicted labels outside them are dropped (quirk Q1);
    each row is a *set* of labels, so repeats collapse.  Per-class precision with no predictions
    is 0 (sklearn's zero_division default).  None when gold has no labels at all (upstream's
    sklearn call raises there).
    """
    tp: dict[str, int] = {}
    fp: dict[str, int] = {}
    fn: dict[str, int] = {}
    extra: list[set[str]] = []  # each row's predicted labels outside its gold: fp once classes are known
    for g, p in rows:
        gold, pred = set(g), set(p)
        for label in gold:
            if label in pred:
                tp[label] = tp.get(label, 0) + 1
            else:
                fn[label] = fn.get(label, 0) + 1
        extra.append(pred - gold)
    classes = sorted(set(tp) | set(fn))
    if not classes:
        return None, None, None
    for labels in extra:
        for label in labels:
            fp[label] = fp.get(label, 0) + 1
    ps, rs, fs = [], [], []
    for c in classes:
        t, f_p, f_n = tp.get(c, 0), fp.get(c, 0), fn.get(c, 0)
        ps.append(t / (t + f_p) if t + f_p else 0.0)
        rs.append(t / (t + f_n) if t + f_n else 0.0)
        fs.append(2 * t / (2 * t + f_p + f_n) if 2 * t + f_p + f_n else 0.0)
    n = len(classes)
    return sum(ps) / n, sum(rs) / n, sum(fs) / n
