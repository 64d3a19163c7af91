"""Integer ``minimum``/``maximum`` in the grammar: random decodings under the Google Calendar
grammar wrote ``maxAttendees: -463`` and ``conferenceDataVersion: 420`` (maximum 1), which the
scorer judges out of bounds, i.e. an illegal call under constraints. The default profile now
bounds integers; the paper profile (WAPIIBench's CD) does not, as before."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

pytest.importorskip("llguidance")

from callbench.constrain import GrammarOptions, check_continuation  # noqa: E402
from callbench.constrain.webapi_grammar import _int_bound, int_range_regex  # noqa: E402
from callbench.specs import build_spec  # noqa: E402

BASE = "https://api.example.com"


def _in(lo, hi, n):
    return (lo is None or n >= lo) and (hi is None or n <= hi)


def test_int_range_regex_by_hand():
    assert int_range_regex(1, 1) == "1"
    assert int_range_regex(3, 2) == ""
    assert re.fullmatch(int_range_regex(0, 1), "1") and not re.fullmatch(int_range_regex(0, 1), "2")
    rx = re.compile(int_range_regex(1, 2500))
    assert [bool(rx.fullmatch(s)) for s in ("0", "1", "9", "10", "999", "2500", "2501", "-1", "01")] == [
        False, True, True, True, True, True, False, False, False,
    ]


def test_int_range_regex_equals_the_range():
    """Property: for random (possibly open) ranges, the regex matches exactly the decimal
    integers of the range, written without leading zeros and without '-0'."""
    rng = random.Random(29)
    for _ in range(2000):
        lo = rng.choice([None, 0, 1, -1, rng.randint(-5000, 5000), rng.randint(-30, 30)])
        hi = rng.choice([None, 0, -1, 2500, rng.randint(-5000, 5000), rng.randint(-30, 30)])
        rx = int_range_regex(lo, hi)
        c = re.compile(rx) if rx else None
        probes = [rng.randint(-6000, 6000) for _ in range(40)] + list(range(-12, 12))
        probes += [x for b in (lo, hi) if b is not None for x in (b - 1, b, b + 1)] + [10**7, -(10**7)]
        for n in probes:
            assert bool(c and c.fullmatch(str(n))) == _in(lo, hi, n), (lo, hi, n, rx)
        for text in ("01", "-0", "00", "-01", "+1", "1.0", ""):
            assert not (c and c.fullmatch(text)), (lo, hi, text)


@pytest.mark.parametrize(
    ("bound", "exclusive", "up", "edge"),
    [(0, None, True, 0), (0, True, True, 1), (None, 0, True, 1), (2.5, None, True, 3), (1, None, False, 1),
     (1, True, False, 0), (None, 5, False, 4), (float("inf"), None, False, None), (True, None, True, None)],
)
def test_bounds_of_both_openapi_versions(bound, exclusive, up, edge):
    assert _int_bound(bound, exclusive, up=up) == edge


SPEC = build_spec(
    {
        "openapi": "3.0.0",
        "info": {"title": "cal", "version": "1"},
        "servers": [{"url": BASE}],
        "paths": {
            "/events": {
                "get": {
                    "parameters": [
                        {"name": "maxAttendees", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                        {"name": "version", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 1}},
                        {"name": "page", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    },
    Path("/cal/openapi.yaml"),
    "cal.yaml",
)


@pytest.mark.parametrize(
    ("params", "default", "paper"),
    [
        ("{maxAttendees: 3, version: 1}", True, True),
        ("{maxAttendees: '3', version: '0'}", True, True),
        ("{maxAttendees: -463}", False, True),
        ("{maxAttendees: 0}", False, True),
        ("{version: 420}", False, True),
        ("{version: '2'}", False, True),
        ("{page: -7}", True, True),
    ],
)
def test_the_grammar_keeps_integer_bounds(params, default, paper):
    text = f"get('{BASE}/events', {{params: {params}}});"
    assert check_continuation(SPEC, text, options=GrammarOptions()).allowed is default
    assert check_continuation(SPEC, text, options=GrammarOptions(profile="paper")).allowed is paper


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen", "smollm2"])
def test_integer_bounds_in_the_masks_of_real_vocabularies(vocab_name, real_vocab):
    """Token by token under each vocabulary's mask: an in-range value is written whole and
    accepted; after ``version: `` (0..1) no token starting with ``-`` or ``2``..``9`` is allowed,
    and after ``maxAttendees: `` (>= 1) none starting with ``-`` or ``0``."""
    from callbench.constrain import GrammarConstraint, build_webapi_grammar, make_key_tracker

    vocab = real_vocab(vocab_name)
    g = build_webapi_grammar(SPEC, setup="full", options=GrammarOptions())

    def session():
        return GrammarConstraint(g.lark, lambda: make_key_tracker(g, SPEC)).new_session(vocab, record=False)

    text = f"get('{BASE}/events', {{ params: {{ maxAttendees: 250, version: 1 }} }});"
    s = session()
    for t in vocab.lltok.tokenize_str(text):
        assert s.mask()[t], (vocab_name, s.generated_bytes(), vocab.token_bytes[t])
        s.advance(t)
    assert s.generated_bytes() == text.encode() and s.is_accepting()

    def firsts(prefix: str) -> set[int]:
        s = session()
        for t in vocab.lltok.tokenize_str(prefix):
            s.advance(t)
        return {vocab.token_bytes[i][0] for i in s.mask().nonzero()[0] if vocab.token_bytes[i]}

    version = firsts(f"get('{BASE}/events', {{ params: {{ version: ")
    assert {ord("0"), ord("1")} <= version and not version & set(b"-23456789"), vocab_name
    attendees = firsts(f"get('{BASE}/events', {{ params: {{ maxAttendees: ")
    assert {ord("1"), ord("9")} <= attendees and not attendees & set(b"-0"), vocab_name
