"""Aggregate metrics on four hand-built samples, every value computed by hand in the comments."""

import pytest

from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import ArgumentVerdict as A
from callbench.tracks.webapi.scoring import SampleVerdict as V


def _samples():
    a = V(url="correct", method="correct", endpoint="correct", sample="correct",
          arguments=[A("params", "limit", "correct"), A("headers", "Authorization", "correct")])
    b = V(url="correct", method="correct", endpoint="correct", sample="wrong",
          arguments=[A("data", "text", "incorrect_value"), A("data", "channel", "correct"), A("data", "extra", "unnecessary")])
    c = V(url="illegal", method="illegal", endpoint="illegal", sample="illegal",
          arguments=[A("params", "x", "illegal"), A("headers", "Authorization", "missing")])
    d = V(error="runtime_error", expected_counts={"headers": 1, "data": 2})
    return [a, b, c, d]


@pytest.mark.parametrize("mode", ["strict", "compat"])
def test_hand_computed_metrics(mode):
    m = aggregate(_samples(), mode)
    approx = pytest.approx
    assert (m["n"], m["n_executable"]) == (4, 3)
    assert m["executable_implementations_t"] == 0.75 and m["executable_implementations_e"] == 1.0
    for kind in ("correct", "wrong", "illegal"):
        assert m[f"{kind}_implementations_t"] == 0.25 and m[f"{kind}_implementations_e"] == approx(1 / 3)
    assert m["correct_urls_t"] == 0.5 and m["correct_urls_e"] == approx(2 / 3)
    assert m["illegal_urls_t"] == 0.25 and m["illegal_methods_e"] == approx(1 / 3)
    # expected args: A2 B2 C1 D3 = 8 (executable 5); all args: A2 B3 C2 D3 = 10 (executable 7)
    assert m["correct_argument_names_t"] == 4 / 8 and m["correct_argument_names_e"] == 4 / 5
    assert m["correct_argument_values_t"] == 3 / 8 and m["correct_argument_values_e"] == 3 / 5
    assert m["missing_arguments_t"] == 4 / 8 and m["missing_arguments_e"] == 1 / 5
    assert m["unexpected_arguments_t"] == 2 / 10 and m["unexpected_arguments_e"] == approx(2 / 7)
    assert m["unnecessary_arguments_t"] == 1 / 10 and m["illegal_arguments_e"] == approx(1 / 7)
    # precision A 1, B 2/3, C 0 ; recall A 1, B 1, C 0, D 0 ; jaccard A 1, B 2/3, C 0, D 0
    assert m["mean_argument_precision_t"] == approx(5 / 9) == m["mean_argument_precision_e"]
    assert m["mean_argument_recall_t"] == 0.5 and m["mean_argument_recall_e"] == approx(2 / 3)
    assert m["mean_argument_jaccard_t"] == approx(5 / 12) and m["mean_argument_jaccard_e"] == approx(5 / 9)
    # conditional value accuracy: A 2/2, B 1/2 (C has no correct name)
    assert m["mean_argument_value_conditional_accuracy_t"] == 0.75
    assert (m["total_errors"], m["runtime_errors"], m["timeouts"], m["absent_requests"]) == (1, 1, 0, 0)


def test_compat_quirk_error_sample_with_only_ignored_headers():
    """Published scorer: a non-executable sample whose only expected headers are Accept/Content-Type
    still enters the recall/Jaccard denominators (with 0); strict leaves it out."""
    e = V(error="timeout", expected_counts={"headers": 0})
    compat = aggregate(_samples() + [e], "compat")
    strict = aggregate(_samples() + [e], "strict")
    assert compat["mean_argument_recall_t"] == pytest.approx(2 / 5)
    assert compat["mean_argument_jaccard_t"] == pytest.approx((5 / 3) / 5)
    assert strict["mean_argument_recall_t"] == 0.5
    assert strict["mean_argument_jaccard_t"] == pytest.approx(5 / 12)
    assert compat["timeouts"] == strict["timeouts"] == 1


def test_empty_denominators_are_none():
    m = aggregate([V(error="no_request", expected_counts={})], "strict")
    assert m["executable_implementations_t"] == 0.0
    assert m["correct_implementations_e"] is None
    assert m["correct_argument_names_t"] is None
    assert m["mean_argument_precision_t"] is None


def test_correct_except_credentials():
    """Samples right apart from their credential arguments, correct ones included."""
    auth_missing = A("headers", "Authorization", "missing", credential=True)
    auth_extra = A("headers", "Authorization", "unnecessary", credential=True)
    ok = A("params", "limit", "correct", credential=False)
    bad = A("params", "limit", "incorrect_value", credential=False)
    e = {"url": "correct", "method": "correct", "endpoint": "correct"}
    auth_ok = A("headers", "Authorization", "correct", credential=True)
    samples = [
        V(**e, sample="correct", arguments=[ok, auth_ok]),  # yes: correct
        V(**e, sample="wrong", arguments=[ok, auth_missing]),  # yes: only the credential missing
        V(**e, sample="wrong", arguments=[ok, auth_extra]),  # yes: only an extra credential
        V(**e, sample="wrong", arguments=[bad, auth_missing]),  # no: limit wrong too
        V(url="wrong", method="correct", endpoint="wrong", sample="wrong", arguments=[ok]),  # no: endpoint
        V(error="timeout", expected_counts={"headers": 1}),  # no: not executable
    ]
    m = aggregate(samples, "strict")
    assert m["correct_except_credentials_t"] == pytest.approx(3 / 6)
    assert m["correct_except_credentials_e"] == pytest.approx(3 / 5)
    assert m["correct_implementations_t"] == pytest.approx(1 / 6)
    # verdicts stored before credentials were marked: unknown where it matters -> None
    old = V(**e, sample="wrong", arguments=[ok, A("headers", "Authorization", "missing")])
    assert aggregate([*samples, old], "strict")["correct_except_credentials_t"] is None
    # ... but an all-correct old verdict is known to count
    old_ok = V(**e, sample="correct", arguments=[A("params", "limit", "correct")])
    assert aggregate([old_ok], "strict")["correct_except_credentials_e"] == 1.0
    # stored and read back, the flag survives
    assert V.from_dict(samples[1].as_dict()).arguments[1].credential is True


def test_table_shows_correct_except_credentials():
    from callbench.tracks.webapi.metrics import TABLE_ROWS

    assert ("Correct except credentials", "correct_except_credentials") in TABLE_ROWS
