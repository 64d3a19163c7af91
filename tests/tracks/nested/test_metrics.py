"""Hand-computed cases for the nested-track metrics, in both modes.

Expected values were worked out by hand (fractions in the comments) from the definitions in
docs/nested-scoring.md, not by running the code.  Compat per-sample F1 is the published macro-F1
with the label set fitted on that one sample's gold.
"""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[3] / "src" / "callbench" / "tracks" / "nested" / "metrics.py"
try:
    from callbench.tracks.nested import metrics as m
except ImportError:  # the package __init__ belongs to another module owner and may not exist yet
    _spec = importlib.util.spec_from_file_location("_nested_metrics_under_test", _PATH)
    m = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = m
    _spec.loader.exec_module(m)


def call(name, label, **args):
    return {"name": name, "label": label, "arguments": args}


# G: multiply(150, 2) -> add(480, $var_1) ; answer 780
A = call("multiply", "$var_1", arg_0=150, arg_1=2)
B = call("add", "$var_2", arg_0=480, arg_1="$var_1.result$")
G = [A, B]
# GI: two independent calls feeding a third; answer 0.2 + 12 = 12.2
I1 = call("divide", "$var_1", arg_0=20, arg_1=100)
I2 = call("multiply", "$var_2", arg_0=3, arg_1=4)
I3 = call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_2.result$")
GI = [I1, I2, I3]

KEYS = ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy", "win", "parse_error")


def check(res, expected):
    f1f, f1p, partial, full, win, perr = expected
    got = tuple(res[k] for k in KEYS)
    for g, e, k in zip(got, (f1f, f1p, partial, full, win, perr), KEYS, strict=True):
        if isinstance(e, bool) or e is None:
            assert g is e or g == e, (k, g, e)
        else:
            assert g == pytest.approx(float(e)), (k, g, e)


# (id, pred, gold, kwargs, strict expected, compat expected)
# expected tuple: f1_function, f1_parameter, partial, full, win, parse_error
CASES = [
    # 1 exact match: everything 1 in both modes.
    ("exact", G, G, dict(pred_answer=780, gold_answer=780, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 2 wrong name (add -> subtract). strict: names tp1 fp1 fn1 -> 2/4; params tp2 fp2 fn2 -> 1/2;
    #   partial 1 correct / 2. compat: classes {add:0, multiply:1} -> 1/2; param classes
    #   {arg_0=150:1, arg_1=2:1, arg_0=480:0, arg_1=$var_1.result$:0} -> 2/4; positional 1/2.
    ("wrong_name", [A, {**B, "name": "subtract"}], G, dict(pred_answer=-180, gold_answer=780, executed_ok=True),
     (F(1, 2), F(1, 2), F(1, 2), 0, False, False), (F(1, 2), F(1, 2), F(1, 2), 0, False, False)),
    # 3 wrong argument value 480 -> 481. strict params tp3 fp1 fn1 -> 6/8 = 3/4; partial 1/2.
    #   compat: class arg_0=480 gets 0, other three 1 -> 3/4; partial 1/2.
    ("wrong_arg_value", [A, call("add", "$var_2", arg_0=481, arg_1="$var_1.result$")], G,
     dict(pred_answer=781, gold_answer=780, executed_ok=True),
     (1, F(3, 4), F(1, 2), 0, False, False), (1, F(3, 4), F(1, 2), 0, False, False)),
    # 4 missing call. strict names tp1 fn1 -> 2/3; params tp2 fn2 -> 4/6 = 2/3; partial 1/max(1,2) = 1/2.
    #   compat names {add:0, multiply:1} -> 1/2; params two of four classes -> 1/2;
    #   alignment [mul,add] vs [mul,""] -> 1/2.
    ("missing_call", [A], G, dict(pred_answer=300, gold_answer=780, executed_ok=True),
     (F(2, 3), F(2, 3), F(1, 2), 0, False, False), (F(1, 2), F(1, 2), F(1, 2), 0, False, False)),
    # 5 extra call subtract($var_2, 1). strict names tp2 fp1 -> 4/5; params tp4 fp2 -> 8/10 = 4/5;
    #   partial 2/max(3,2) = 2/3. compat: 'subtract' and its labels are not gold classes -> ignored,
    #   so F1 = 1 and 1 (quirk Q1); alignment [mul,add,""] vs [mul,add,sub] -> 2/3.
    ("extra_call", [A, B, call("subtract", "$var_3", arg_0="$var_2.result$", arg_1=1)], G,
     dict(pred_answer=779, gold_answer=780, executed_ok=True),
     (F(4, 5), F(4, 5), F(2, 3), 0, False, False), (1, 1, F(2, 3), 0, False, False)),
    # 6 swapped independent calls, relabelled consistently. strict: same DAG -> all 1.
    #   compat grounds references to function names: pred add(arg_0=$divide.result$, arg_1=$multiply.result$)
    #   equals gold's -> params 1; positional: multiply/divide swapped, add equal -> 1/3.
    ("swap_independent_relabelled",
     [call("multiply", "$var_1", arg_0=3, arg_1=4), call("divide", "$var_2", arg_0=20, arg_1=100),
      call("add", "$var_3", arg_0="$var_2.result$", arg_1="$var_1.result$")], GI,
     dict(pred_answer=12.2, gold_answer=12.2, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, F(1, 3), 0, True, False)),
    # 7 swapped independent calls keeping labels: strict all 1; compat F1 1, positional 1/3.
    ("swap_independent_same_labels", [I2, I1, I3], GI, dict(pred_answer=12.2, gold_answer=12.2, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, F(1, 3), 0, True, False)),
    # 8 swapped dependent calls [B, A]: B references var_1 before it exists -> crash.
    #   strict: B's reference is an unresolved literal: params tp3 fp1 fn1 -> 3/4; partial: A exact,
    #   B paired by name but differs -> 1/2. compat: F1 set-based -> 1, 1; positional 0/2.
    ("swap_dependent", [B, A], G, dict(pred_answer=None, gold_answer=780, executed_ok=False),
     (1, F(3, 4), F(1, 2), 0, False, False), (1, 1, 0, 0, False, False)),
    # 9 wrong reference: add($var_1, $var_1). strict params tp5 fp1 fn1 -> 10/12 = 5/6; partial 2/3.
    #   compat: class arg_1=$var_2.result$ gets 0 of 6 -> 5/6; positional 2/3.
    ("wrong_reference", [I1, I2, call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_1.result$")], GI,
     dict(pred_answer=0.4, gold_answer=12.2, executed_ok=True),
     (1, F(5, 6), F(2, 3), 0, False, False), (1, F(5, 6), F(2, 3), 0, False, False)),
    # 10 label style var1 / $var1.result$: strict normalises -> all 1. compat grounds both $var1.result$
    #   and gold's $var_1.result$ to $multiply.result$ -> all 1.
    ("label_style", [call("multiply", "var1", arg_0=150, arg_1=2), call("add", "var2", arg_0=480, arg_1="$var1.result$")],
     G, dict(pred_answer=780, gold_answer=780, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 11 int vs float arg 150.0: strict numeric -> all 1. compat "150.0" != "150" -> 3/4, 1/2;
    #   win: 780.0 == 780 in both.
    ("int_vs_float", [call("multiply", "$var_1", arg_0=150.0, arg_1=2), B], G,
     dict(pred_answer=780.0, gold_answer=780, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, F(3, 4), F(1, 2), 0, True, False)),
    # 12 string number "480": strict type-aware -> params 3/4, partial 1/2. compat str("480") == str(480)
    #   -> 1, 1, 1 (quirk Q3). Answer "780" (string) never equals 780 in either mode.
    ("string_number", [A, call("add", "$var_2", arg_0="480", arg_1="$var_1.result$")], G,
     dict(pred_answer="780", gold_answer=780, executed_ok=True),
     (1, F(3, 4), F(1, 2), 0, False, False), (1, 1, 1, 1, False, False)),
    # 13 right calls but execution crashed: win False in both; structure 1.
    ("crash_nonzero_gold", G, G, dict(pred_answer=None, gold_answer=780, executed_ok=False),
     (1, 1, 1, 1, False, False), (1, 1, 1, 1, False, False)),
    # 14 crash where gold answer is 0: compat False == 0 -> win (quirk Q7); strict no win.
    #   subtract(5,6) vs subtract(5,5): strict params tp1 fp1 fn1 -> 1/2; compat classes
    #   {arg_0=5:1, arg_1=5:0} -> 1/2; partial 0 in both.
    ("crash_zero_gold", [call("subtract", "$var_1", arg_0=5, arg_1=6)], [call("subtract", "$var_1", arg_0=5, arg_1=5)],
     dict(pred_answer=None, gold_answer=0, executed_ok=False),
     (1, F(1, 2), 0, 0, False, False), (1, F(1, 2), 0, 0, True, False)),
    # 15 parse error (None): all 0, parse_error True.  strict tp0 fp0 fn2 -> 0; compat classes all 0.
    ("parse_error", None, G, dict(gold_answer=780), (0, 0, 0, 0, False, True), (0, 0, 0, 0, False, True)),
    # 16 empty list: all 0, not a parse error.
    ("empty_list", [], G, dict(gold_answer=780, executed_ok=True),
     (0, 0, 0, 0, False, False), (0, 0, 0, 0, False, False)),
    # 17 repeated function, error in the FIRST divide(21,...). strict params tp5 fp1 fn1 -> 5/6; partial:
    #   divide#1 paired by name differs, divide#2 and add exact -> 2/3. compat: only the last divide is
    #   kept per name (quirk Q2) -> params 1; positional 2/3.
    ("repeated_function_first_wrong",
     [call("divide", "$var_1", arg_0=21, arg_1=100), call("divide", "$var_2", arg_0=30, arg_1=100),
      call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_2.result$")],
     [call("divide", "$var_1", arg_0=20, arg_1=100), call("divide", "$var_2", arg_0=30, arg_1=100),
      call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_2.result$")],
     dict(pred_answer=0.51, gold_answer=0.5, executed_ok=True),
     (1, F(5, 6), F(2, 3), 0, False, False), (1, 1, F(2, 3), 0, True, False)),
    # 18 same, error in the LAST divide(31,...): strict 5/6 again; downstream add still counts as right
    #   because its reference points at the (name-paired) divide#2 -> partial 2/3.
    #   compat: kept divide row {arg_0=31,arg_1=100} vs {arg_0=30,...}: 4 classes, arg_0=30 gets 0 -> 3/4.
    #   In cases 17-18 compat also wins: 0.51 is rounded to gold's one decimal -> 0.5 (quirk Q8).
    ("repeated_function_last_wrong",
     [call("divide", "$var_1", arg_0=20, arg_1=100), call("divide", "$var_2", arg_0=31, arg_1=100),
      call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_2.result$")],
     [call("divide", "$var_1", arg_0=20, arg_1=100), call("divide", "$var_2", arg_0=30, arg_1=100),
      call("add", "$var_3", arg_0="$var_1.result$", arg_1="$var_2.result$")],
     dict(pred_answer=0.51, gold_answer=0.5, executed_ok=True),
     (1, F(5, 6), F(2, 3), 0, False, False), (1, F(3, 4), F(2, 3), 0, True, False)),
    # 19 two identical calls, reference to the other twin: same computation -> strict all 1.
    #   compat: both references ground to $divide.result$ -> all 1.
    ("identical_twins_reference",
     [call("divide", "$var_1", arg_0=20, arg_1=100), call("divide", "$var_2", arg_0=20, arg_1=100),
      call("multiply", "$var_3", arg_0="$var_1.result$", arg_1=5)],
     [call("divide", "$var_1", arg_0=20, arg_1=100), call("divide", "$var_2", arg_0=20, arg_1=100),
      call("multiply", "$var_3", arg_0="$var_2.result$", arg_1=5)],
     dict(pred_answer=1.0, gold_answer=1.0, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 20 reference missing its closing '$': compat appends it to predictions (quirk Q5); strict resolves it.
    ("ref_missing_dollar", [A, call("add", "$var_2", arg_0=480, arg_1="$var_1.result")], G,
     dict(pred_answer=780, gold_answer=780, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 21 boolean answer True vs gold 1: compat True == 1 wins; strict booleans never equal numbers.
    ("bool_answer", G, G, dict(pred_answer=True, gold_answer=1, executed_ok=True),
     (1, 1, 1, 1, False, False), (1, 1, 1, 1, True, False)),
    # 22 float answer off in the 2nd decimal: compat rounds to gold's 1 decimal (12.24 -> 12.2) and wins
    #   (quirk Q8); strict |12.24-12.2|/12.2 > 1e-6 -> loss.
    ("float_rounding", GI, GI, dict(pred_answer=12.24, gold_answer=12.2, executed_ok=True),
     (1, 1, 1, 1, False, False), (1, 1, 1, 1, True, False)),
    # 23 float noise within tolerance: both win.
    ("float_noise", GI, GI, dict(pred_answer=12.2 + 1e-9, gold_answer=12.2, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 24 tuple answer vs list gold: both win.
    ("tuple_vs_list", G, G, dict(pred_answer=(1, 2), gold_answer=[1, 2], executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 1, 1, 1, True, False)),
    # 25 wrong argument name x=150: strict params tp3 fp1 fn1 -> 3/4; compat class arg_0=150 -> 0 -> 3/4;
    #   partial 1/2 in both.
    ("wrong_arg_name", [call("multiply", "$var_1", x=150, arg_1=2), B], G,
     dict(pred_answer=None, gold_answer=780, executed_ok=False),
     (1, F(3, 4), F(1, 2), 0, False, False), (1, F(3, 4), F(1, 2), 0, False, False)),
    # 26 a 'dummy' call in the middle: compat drops it from F1 (quirk Q9) but the greedy alignment gives
    #   [mul,add,"",""] vs [mul,"",dummy,add] -> 1/4 (quirk Q6). strict: names tp2 fp1 -> 4/5; params 1;
    #   partial 2/3.
    ("dummy_call", [A, {"name": "dummy", "arguments": {}}, B], G,
     dict(pred_answer=780, gold_answer=780, executed_ok=True),
     (F(4, 5), 1, F(2, 3), 0, True, False), (1, 1, F(1, 4), 0, True, False)),
    # 27 v1-style gold (labels var1, named fields) vs $var_1 predictions: strict all 1; compat grounds
    #   $var_1.skyId$ and $var1.skyId$ alike to $search.skyId$ -> all 1.
    ("v1_fields_label_style",
     [call("search", "$var_1", query="NY"), call("flights", "$var_2", origin="$var_1.skyId$")],
     [call("search", "var1", query="NY"), call("flights", "var2", origin="$var1.skyId$")],
     dict(), (1, 1, 1, 1, None, False), (1, 1, 1, 1, None, False)),
    # 28 wrong output field: strict params tp1 fp1 fn1 -> 1/2, partial 1/2; compat same.
    ("wrong_field",
     [call("search", "var1", query="NY"), call("flights", "var2", origin="$var1.entityId$")],
     [call("search", "var1", query="NY"), call("flights", "var2", origin="$var1.skyId$")],
     dict(), (1, F(1, 2), F(1, 2), 0, None, False), (1, F(1, 2), F(1, 2), 0, None, False)),
    # 29 list argument [1.0,2,3] vs [1,2,3]: strict numeric -> 1; compat str differs -> 0 of 1 class, 0.
    ("list_arg_int_float", [call("total", "$var_1", xs=[1.0, 2, 3])], [call("total", "$var_1", xs=[1, 2, 3])],
     dict(pred_answer=6.0, gold_answer=6, executed_ok=True),
     (1, 1, 1, 1, True, False), (1, 0, 0, 0, True, False)),
    # 30 independent calls swapped so the FINAL call differs: strict pairs every call exactly (partial 1)
    #   but full 0, since the last call (the answer) is another computation; compat positional 0.
    ("swap_changes_final_call",
     [call("add", "$var_1", arg_0=1, arg_1=1), call("multiply", "$var_2", arg_0=2, arg_1=3)],
     [call("multiply", "$var_1", arg_0=2, arg_1=3), call("add", "$var_2", arg_0=1, arg_1=1)],
     dict(pred_answer=6, gold_answer=2, executed_ok=True),
     (1, 1, 1, 0, False, False), (1, 1, 0, 0, False, False)),
    # 31 malformed call (no name): strict -> parse error, all 0. compat: flagged as parse error; no
    #   names, no slot rows from it -> 0, 0; partial 0.
    ("malformed_call", [{"arguments": {"arg_0": 1}}], G, dict(gold_answer=780),
     (0, 0, 0, 0, False, True), (0, 0, 0, 0, False, True)),
    # 32 forward reference with consistent relabelling that breaks order: pred add first referring to
    #   a later label. strict: unresolved -> params tp3 fp1 fn1 -> 3/4, partial 1/2 (same as case 8).
    ("forward_reference", [call("add", "$var_2", arg_0=480, arg_1="$var_1.result$"), A], G,
     dict(pred_answer=None, gold_answer=780, executed_ok=False),
     (1, F(3, 4), F(1, 2), 0, False, False), (1, 1, 0, 0, False, False)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_case_strict(case):
    _, pred, gold, kw, strict_exp, _ = case
    check(m.score_sample(pred, gold, mode="strict", **kw), strict_exp)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_case_compat(case):
    _, pred, gold, kw, _, compat_exp = case
    check(m.score_sample(pred, gold, mode="compat", **kw), compat_exp)


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


# ---- one test per published-scorer quirk: compat reproduces it, strict fixes it ----------------


def test_quirk_q1_gold_fitted_labels_ignore_hallucinated_calls():
    # An extra call with a name absent from gold costs nothing in compat F1 (label set fitted on gold).
    pred = [A, B, call("hallucinated", "$var_3", arg_0=1)]
    c = m.score_sample(pred, G, mode="compat")
    s = m.score_sample(pred, G, mode="strict")
    assert c["f1_function"] == 1 and c["f1_parameter"] == 1
    assert s["f1_function"] == pytest.approx(4 / 5)  # tp2 fp1 fn0
    assert s["f1_parameter"] == pytest.approx(8 / 9)  # tp4 fp1 fn0


def test_quirk_q1_macro_vs_micro_corpus():
    # Corpus: sample 1 exact, sample 2 misses 'add'.  compat macro over classes {add: tp1 fn1 -> 2/3,
    # multiply: 1} -> 5/6.  strict micro: tp3 fp0 fn1 -> 6/7.
    c = [m.score_sample(G, G, mode="compat"), m.score_sample([A], G, mode="compat")]
    s = [m.score_sample(G, G, mode="strict"), m.score_sample([A], G, mode="strict")]
    assert m.aggregate(c, "compat")["f1_function"] == pytest.approx(5 / 6)
    assert m.aggregate(s, "strict")["f1_function"] == pytest.approx(6 / 7)


def test_quirk_q2_repeated_names_overwrite():
    case = next(c for c in CASES if c[0] == "repeated_function_first_wrong")
    assert m.score_sample(case[1], case[2], mode="compat")["f1_parameter"] == 1
    assert m.score_sample(case[1], case[2], mode="strict")["f1_parameter"] == pytest.approx(5 / 6)


def test_quirk_q2_multiplicity_of_names():
    # compat function labels are sets per sample: predicting divide once for three gold divides is perfect.
    gold = [call("divide", f"$var_{i}", arg_0=i, arg_1=2) for i in (1, 2, 3)]
    pred = gold[:1]
    assert m.score_sample(pred, gold, mode="compat")["f1_function"] == 1
    assert m.score_sample(pred, gold, mode="strict")["f1_function"] == pytest.approx(1 / 2)  # tp1 fn2 -> 2/4


def test_quirk_q3_string_numbers_match_arguments():
    pred = [A, call("add", "$var_2", arg_0="480", arg_1="$var_1.result$")]
    assert m.score_sample(pred, G, mode="compat")["full_sequence_accuracy"] == 1
    assert m.score_sample(pred, G, mode="strict")["full_sequence_accuracy"] == 0


def test_quirk_q4_int_float_mismatch_and_label_grounding():
    pred = [call("multiply", "$var_1", arg_0=150.0, arg_1=2), B]
    assert m.score_sample(pred, G, mode="compat")["full_sequence_accuracy"] == 0
    assert m.score_sample(pred, G, mode="strict")["full_sequence_accuracy"] == 1
    # a relabelling is no mismatch: compat grounds references to function names, strict normalises labels
    pred = [call("multiply", "var1", arg_0=150, arg_1=2), call("add", "var2", arg_0=480, arg_1="$var1.result$")]
    assert m.score_sample(pred, G, mode="compat")["full_sequence_accuracy"] == 1
    assert m.score_sample(pred, G, mode="strict")["full_sequence_accuracy"] == 1
    # ...but a reference to the wrong call of the same name is invisible to compat only
    twins = [call("divide", "$var_1", arg_0=1, arg_1=2), call("divide", "$var_2", arg_0=3, arg_1=4)]
    gold = [*twins, call("add", "$var_3", arg_0="$var_2.result$", arg_1=1)]
    pred = [*twins, call("add", "$var_3", arg_0="$var_1.result$", arg_1=1)]
    assert m.score_sample(pred, gold, mode="compat")["full_sequence_accuracy"] == 1
    assert m.score_sample(pred, gold, mode="strict")["full_sequence_accuracy"] == 0


def test_quirk_q5_missing_dollar_fixed_for_predictions_only():
    gold = [A, call("add", "$var_2", arg_0=480, arg_1="$var_1.result")]  # gold itself lacks the '$'
    # compat appends '$' to the prediction only, so an identical prediction no longer matches gold.
    assert m.score_sample(gold, gold, mode="compat")["full_sequence_accuracy"] == 0
    assert m.score_sample(gold, gold, mode="strict")["full_sequence_accuracy"] == 1


def test_quirk_q6_greedy_alignment_and_positional_order():
    pred = [I2, I1, I3]
    assert m.score_sample(pred, GI, mode="compat")["partial_sequence_accuracy"] == pytest.approx(1 / 3)
    assert m.score_sample(pred, GI, mode="strict")["partial_sequence_accuracy"] == 1
    # an inserted call early shifts everything after it: gold [mul,add] vs pred [add?]: see dummy case
    pred = [A, call("noop", "$var_9"), B]
    assert m.score_sample(pred, G, mode="compat")["partial_sequence_accuracy"] == pytest.approx(1 / 4)
    assert m.score_sample(pred, G, mode="strict")["partial_sequence_accuracy"] == pytest.approx(2 / 3)


def test_quirk_q7_crash_counts_as_win_when_gold_is_falsy():
    for gold_answer in (0, 0.0, False):
        kw = dict(pred_answer=None, gold_answer=gold_answer, executed_ok=False)
        assert m.score_sample(G, G, mode="compat", **kw)["win"] is True
        assert m.score_sample(G, G, mode="strict", **kw)["win"] is False


def test_quirk_q7_bool_equals_number():
    kw = dict(pred_answer=True, gold_answer=1, executed_ok=True)
    assert m.score_sample(G, G, mode="compat", **kw)["win"] is True
    assert m.score_sample(G, G, mode="strict", **kw)["win"] is False


def test_quirk_q8_rounding_to_gold_decimals():
    kw = dict(pred_answer=0.1666, gold_answer=0.17, executed_ok=True)  # rounds to 0.17
    assert m.score_sample(G, G, mode="compat", **kw)["win"] is True
    assert m.score_sample(G, G, mode="strict", **kw)["win"] is False
    # exponent notation: the published scorer crashes; compat compares unrounded instead
    kw = dict(pred_answer=1e-05, gold_answer=1e-05, executed_ok=True)
    assert m.score_sample(G, G, mode="compat", **kw)["win"] is True


def test_quirk_q9_dummy_calls_ignored_in_f1_only():
    pred = [A, {"name": "dummy", "arguments": {}}, B]
    c = m.score_sample(pred, G, mode="compat")
    assert c["f1_function"] == 1 and c["partial_sequence_accuracy"] == pytest.approx(1 / 4)
    assert m.score_sample(pred, G, mode="strict")["f1_function"] == pytest.approx(4 / 5)


def test_strict_tolerance_is_configurable():
    kw = dict(pred_answer=12.24, gold_answer=12.2, executed_ok=True)
    assert m.score_sample(GI, GI, mode="strict", tolerance=m.Tolerance(rel=1e-2), **kw)["win"] is True


def test_answers_equal_rules():
    eq = m.answers_equal
    assert eq(6, 6.0) and eq([1, 2.0], (1, 2)) and eq({"a": 1}, {"a": 1.0}) and eq(None, None)
    assert not eq(True, 1) and not eq("6", 6) and not eq(0, False) and not eq([1], [1, 2])


def test_normalise_label():
    assert m.normalise_label("$var1") == m.normalise_label("var_1") == m.normalise_label("$var_1$") == "var_1"
    assert m.normalise_label("$out") == "out" and m.normalise_label(None) is None


# ---- aggregation -------------------------------------------------------------------------------


def _corpus(mode):
    return [
        # domain math, length 2: exact (win) and missing call (loss)
        m.score_sample(G, G, mode=mode, domain="math", pred_answer=780, gold_answer=780, executed_ok=True),
        m.score_sample([A], G, mode=mode, domain="math", pred_answer=300, gold_answer=780, executed_ok=True),
        # domain math, length 3: parse error
        m.score_sample(None, GI, mode=mode, domain="math", gold_answer=12.2),
        # domain code, length 2: non-executable, exact
        m.score_sample(
            [call("search", "var1", query="NY"), call("flights", "var2", origin="$var1.skyId$")],
            [call("search", "var1", query="NY"), call("flights", "var2", origin="$var1.skyId$")],
            mode=mode, domain="code",
        ),
    ]


def test_aggregate_strict():
    agg = m.aggregate(_corpus("strict"), "strict")
    for k in m.SUMMARY_KEYS:
        assert k in agg
    # names: (2,0,0)+(1,0,1)+(0,0,3)+(2,0,0) -> tp5 fp0 fn4 -> 10/14 = 5/7
    assert agg["f1_function"] == pytest.approx(5 / 7)
    # params: (4,0,0)+(2,0,2)+(0,0,6)+(2,0,0) -> tp8 fn8 -> 16/24 = 2/3
    assert agg["f1_parameter"] == pytest.approx(2 / 3)
    assert agg["partial_sequence_accuracy"] == pytest.approx((1 + 1 / 2 + 0 + 1) / 4)  # 5/8
    assert agg["full_sequence_accuracy"] == pytest.approx(2 / 4)
    assert agg["win_rate"] == pytest.approx(1 / 3) and agg["win_n"] == 3  # code sample has no answer
    assert agg["parse_error_rate"] == pytest.approx(1 / 4)


def test_aggregate_compat():
    agg = m.aggregate(_corpus("compat"), "compat")
    # function classes: multiply (rows G,A: tp2; GI: fn1) -> 2*2/(4+1)=4/5; add (tp1 fn2) -> 2/4=1/2;
    # divide (fn1) 0; search 1; flights 1 -> (4/5 + 1/2 + 0 + 1 + 1)/5 = 33/50
    assert agg["f1_function"] == pytest.approx(33 / 50)
    assert agg["parse_error_rate"] == pytest.approx(1 / 4)
    assert agg["win_rate"] == pytest.approx(1 / 3)


def test_by_domain_and_length():
    s = _corpus("strict")
    dom = m.by_domain(s, "strict")
    assert set(dom) == {"math", "code"}
    assert dom["code"]["full_sequence_accuracy"] == 1 and dom["code"]["win_rate"] is None
    # math: names (2,0,0)+(1,0,1)+(0,0,3) -> tp3 fn4 -> 6/10 = 3/5
    assert dom["math"]["f1_function"] == pytest.approx(3 / 5)
    assert dom["math"]["parse_error_rate"] == pytest.approx(1 / 3)
    length = m.by_length(s, "strict")
    assert set(length) == {2, 3}
    assert length[3]["parse_error_rate"] == 1 and length[3]["f1_function"] == 0
    assert length[2]["n"] == 3 and length[2]["partial_sequence_accuracy"] == pytest.approx(5 / 6)
    summary = m.summarize(s, "strict")
    assert summary["by_length"][2]["n"] == 3 and summary["by_domain"]["math"]["n"] == 3


def test_compat_by_group_refits_labels():
    # On the math/length-2 subset only: classes multiply (tp2) -> 1; add (tp1 fn1) -> 2/3 -> 5/6
    s = _corpus("compat")[:2]
    assert m.by_length(s, "compat")[2]["f1_function"] == pytest.approx(5 / 6)


def test_aggregate_empty_and_undefined():
    agg = m.aggregate([], "strict")
    assert agg["n"] == 0 and all(agg[k] is None for k in m.SUMMARY_KEYS)
    assert m.aggregate([], "compat")["f1_function"] is None


def test_mode_mismatch_and_bad_mode():
    with pytest.raises(ValueError):
        m.aggregate([m.score_sample(G, G, mode="strict")], "compat")
    with pytest.raises(ValueError):
        m.score_sample(G, G, mode="lenient")


def test_real_gold_scores_itself_perfectly(tmp_path):
    import json
    import os

    root = Path(os.environ.get("CALLBENCH_DATA_DIR", "")) / "nestful" / "v2-samples" / "toy_data_jan2025_schema.jsonl"
    if not root.is_file():
        pytest.skip(f"NESTFUL samples not found at {root}")
    rows = [json.loads(line) for line in root.read_text().splitlines() if line.strip()]
    for mode in m.MODES:
        samples = [
            m.score_sample(r["output"], r["output"], mode=mode, pred_answer=r["gold_answer"],
                           gold_answer=r["gold_answer"], executed_ok=True)
            for r in rows
        ]
        agg = m.aggregate(samples, mode)
        assert agg["f1_function"] == 1 and agg["f1_parameter"] == 1
        assert agg["full_sequence_accuracy"] == 1 and agg["win_rate"] == 1
