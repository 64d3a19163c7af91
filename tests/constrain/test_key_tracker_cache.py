"""The key tracker's shortcuts against its plain scan, on many prefixes of real and random calls.

The engine asks the tracker only about grammar-allowed tokens in its current ``sensitive`` set or
class, and ``allows`` answers from memos (kept across steps while a string value is being
written), normalised forms (leading blanks, a string's text before its closing quote, a number's
digits) and a prefix table for tokens that only write a key. None of that may change a verdict:

* soundness of ``sensitive``: a token outside it is allowed by a plain scan (``_scan``, which
  simulates the bytes one by one on a copy of the state);
* memo and shortcut exactness: ``allows(t) == _scan(t)`` for every token checked, asked in the
  engine's order at every step (so memo entries carried over from earlier steps are exercised);
* the engine's mask equals grammar mask AND the plain scan's verdicts.
* on synthetic tokens (every short string of the bytes that steer the scanner, plus given-key
  prefixes), from string states with an escape or `${` hole pending and from key states: the
  same soundness, and ``_scan``/``allows`` against feeding a full ``clone()``.

Prefixes: every step of gold decodes (all four WAPIIBench specs) and of random walks under the
engine's own mask, biased towards structural tokens so that walks close strings and objects.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("llguidance")

from callbench.constrain import GrammarConstraint, build_webapi_grammar, make_key_tracker  # noqa: E402
from callbench.constrain.engine import TokenClass, is_sensitive, vocab_for_lltokenizer  # noqa: E402
from callbench.constrain.key_tracker import M_CODE, O_AFTER, O_KEY, O_VALUE, _code_danger  # noqa: E402
from callbench.testing.gpt2 import gpt2_lltokenizer  # noqa: E402

APIS = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")
_STRUCT = set(b"'\"`,{}()[]:;")


@pytest.fixture(scope="module")
def vocab():
    return vocab_for_lltokenizer(gpt2_lltokenizer())


@pytest.fixture(scope="module")
def probe_tokens(vocab):
    """Tokens worth probing at every step: every one holding a structural byte or starting with a
    blank, plus a seeded sample of the rest (words, digits, non-ASCII pieces)."""
    rng = random.Random(7)
    ids = []
    for i, data in enumerate(vocab.token_bytes):
        if not data:
            continue
        if _STRUCT & set(data) or data[:1] in (b" ", b"\n") and rng.random() < 0.05 or rng.random() < 0.01:
            ids.append(i)
    return ids


def _check_step(tracker, vocab, probe_ids, rng, stats):
    """Engine order first (memo filled as the engine would), then the plain scan for each."""
    sens = tracker.sensitive
    declared = set(tracker.all_sensitive)
    for part in sens if isinstance(sens, tuple) else (sens,):
        # a free-form object's keys may start with bytes no declared name has: built on first use
        assert part in declared or isinstance(part, TokenClass) and "a key starting with" in part.name, part
    sample = rng.sample(probe_ids, min(400, len(probe_ids)))
    for i in sample:
        data = vocab.token_bytes[i]
        verdict = tracker.allows(data)
        plain = tracker._scan(data)
        assert verdict == plain, (tracker.context(), data)
        if not is_sensitive(sens, data):
            assert plain, ("token outside sensitive vetoed", tracker.context(), data, sens)
        stats["checked"] += 1
        stats["vetoed"] += not plain


def _gold_texts(wapii_tasks, api, n):
    from callbench.tracks.webapi.prompting import reference_completion

    return [reference_completion(t, "full") for t in wapii_tasks if t.api == api][:n]


def _walk(constraint, vocab, structural, rng, tracker_check, max_tokens=120):
    session = constraint.new_session(vocab, record=False)
    for _ in range(max_tokens):
        allowed = session.mask()
        tracker_check(session, allowed)
        allowed[list(vocab.eos_ids)] = False
        ids = np.flatnonzero(allowed)
        if not ids.size or session.filter.done:
            return
        struct = ids[structural[ids]]
        pick = struct if struct.size and rng.random() < 0.5 else ids
        session.advance(int(rng.choice(pick)))


@pytest.mark.parametrize("api", APIS)
def test_cached_verdicts_equal_plain_scans(api, wapii_specs, wapii_tasks, vocab, probe_tokens):
    spec = wapii_specs[api]
    g = build_webapi_grammar(spec, setup="full")
    rng = random.Random(api)
    stats = {"checked": 0, "vetoed": 0}
    # gold decodes: the tracker alone, fed token by token
    for text in _gold_texts(wapii_tasks, api, 8):
        tr = make_key_tracker(g, spec)
        for tok in vocab.lltok.tokenize_str(text):
            if tr.active():
                _check_step(tr, vocab, probe_tokens, rng, stats)
            tr.feed(vocab.token_bytes[tok])
    # random walks under grammar and tracker: the engine's own sessions
    constraint = GrammarConstraint(g.lark, lambda: make_key_tracker(g, spec))
    structural = np.array([bool(_STRUCT & set(b)) for b in vocab.token_bytes], dtype=bool)
    nprng = np.random.default_rng(len(api))

    def check(session, allowed):
        if session.filter.active():
            _check_step(session.filter, vocab, probe_tokens, rng, stats)

    for _ in range(6):
        _walk(constraint, vocab, structural, nprng, check)
    assert stats["checked"] > 20_000
    assert stats["vetoed"] > 0, "no probe was ever vetoed: the test exercises nothing"


def test_engine_mask_equals_grammar_and_plain_scan(wapii_specs, wapii_tasks, vocab):
    """At gold-decoding steps, every grammar-allowed token that holds a structural byte (and a
    sample of the others) is allowed by the engine iff the plain scan allows it."""
    rng = random.Random(3)
    checked = vetoed = 0
    for api in ("slack", "asana"):
        spec = wapii_specs[api]
        g = build_webapi_grammar(spec, setup="full")
        constraint = GrammarConstraint(g.lark, lambda g=g, spec=spec: make_key_tracker(g, spec))
        plain = GrammarConstraint(g.lark)
        for text in _gold_texts(wapii_tasks, api, 5):
            s, p = constraint.new_session(vocab, record=False), plain.new_session(vocab, record=False)
            for step, tok in enumerate(vocab.lltok.tokenize_str(text)):
                got, grammar = s.mask(), p.mask()
                assert not (got & ~grammar).any()
                if step % 3 == 0 and s.filter.active():
                    ids = np.flatnonzero(grammar).tolist()
                    some = [i for i in ids if _STRUCT & set(vocab.token_bytes[i])]
                    some += rng.sample(ids, min(200, len(ids)))
                    probe = s.filter.clone()  # fresh memo: judged without the engine's
                    for i in some:
                        want = probe._scan(vocab.token_bytes[i]) if vocab.token_bytes[i] else True
                        assert bool(got[i]) == want, (api, step, vocab.token_bytes[i])
                        checked += 1
                        vetoed += not want
                s.advance(tok)
                p.advance(tok)
    assert checked > 20_000 and vetoed > 0


def test_token_class_tables(vocab):
    """A TokenClass table (bool and packed like llguidance's mask) matches its predicate."""
    cls = TokenClass("test: code danger", _code_danger, prefilter=b",{}")
    table = vocab.sensitive_tokens(cls)
    want = np.array([bool(b) and _code_danger(b) for b in vocab.token_bytes])
    assert np.array_equal(table, want) and 10 < table.sum() < 5000
    words = vocab.sensitive_words(cls)
    assert words.dtype == np.int32 and words.size == vocab.mask_words
    unpacked = np.unpackbits(words.view(np.uint8), count=vocab.size, bitorder="little").astype(bool)
    assert np.array_equal(unpacked, table)
    assert vocab.sensitive_words(cls) is words  # cached per class
    assert all(
        is_sensitive(cls, b) == bool(t)
        for b, t in zip(vocab.token_bytes[:5000], table[:5000], strict=True)
        if b
    )


def test_first_key_byte_table(vocab):
    """The vectorised per-vocabulary table behind the "key starting with byte c" classes."""
    from callbench.constrain.key_tracker import _first_key_byte, _first_key_bytes, _key_first

    table = _first_key_bytes(vocab)
    assert table.tolist() == [_first_key_byte(b) if b else -1 for b in vocab.token_bytes]
    assert (
        _first_key_byte(b'  "na') == ord("n") and _first_key_byte(b"'") == -1 and _first_key_byte(b"x") == 120
    )
    cls = _key_first(ord("n"))
    assert _key_first(ord("n")) is cls
    assert np.array_equal(vocab.sensitive_tokens(cls), table == ord("n"))
    assert is_sensitive((cls, frozenset(b"}")), b" }") and not is_sensitive((cls, frozenset(b"}")), b" x")


# -- soundness of ``sensitive`` on synthetic tokens ----------------------------------------------
# The vocabulary-based tests above only see tokens a real tokenizer has; the classes must hold for
# any bytes. Every short byte string over the bytes that steer the scanner (quotes, escapes, `${`
# holes, structure) plus given-key prefixes, from string states with and without a pending escape,
# `$` or hole, and from value, after-value and key states of objects that already have keys.
_ALPHABET = [bytes((c,)) for c in b"\"'`\\${},:a"]
_LONGER = [b'"a", "app', b'"","', b'\\"","', b'\\\\","', b'a\\",', b"`}`,", b'}","', b'${x}`,"', b"\\`,a"]


def _short_tokens(max_len):
    out, layer = [], [b""]
    for _ in range(max_len):
        layer = [t + c for t in layer for c in _ALPHABET]
        out += layer
    return out


_SHORT4 = _short_tokens(4)
# what comes before a key prefix in _key_tokens: escapes and holes before the real close included
_STEMS = [b"", *_short_tokens(2), b'\\"",', b'\\"", "', b"\\'',", b"${x}`,", b"`}`,", b"\\``,{"]


def _synthetic_states(tracker_factory, text, per_kind=2):
    """(label, tracker) pairs: states met while feeding ``text`` byte by byte, in objects that
    already hold a key, and string states derived from them (each quote, each pending state)."""
    seen, counts, out = set(), {}, []
    tr = tracker_factory()
    for i in range(len(text)):
        if not tr.active():
            break
        top = tr._frames[-1]
        if tr._mode == M_CODE and top.kind == "obj" and top.used:
            kind = {O_KEY: "key", O_VALUE: "value", O_AFTER: "after"}.get(top.state)
            sig = (kind, top.path, top.used)
            if kind is not None and sig not in seen and counts.get(kind, 0) < per_kind:
                seen.add(sig)
                counts[kind] = counts.get(kind, 0) + 1
                out.append((f"{kind} {top.path} @{i}", tr.clone()))
                if kind == "value":
                    pendings = {
                        b'"': ("", "ab", "\\"),
                        b"'": ("", "\\"),
                        b"`": ("", "\\", "$", "${", "${id", "a$"),
                    }
                    for q, ps in pendings.items():
                        for p in ps:
                            c = tr.clone()
                            c.feed(q + p.encode())
                            out.append((f"string {q + p.encode()!r} {top.path} @{i}", c))
                elif kind == "key":
                    for key in sorted(top.used)[:2]:
                        for part in (key[:1], key[:-1]):
                            for q in ("", '"'):
                                c = tr.clone()
                                c.feed((q + part).encode())
                                if c.active():
                                    out.append((f"key {q + part!r} {top.path} @{i}", c))
        tr.feed(text[i : i + 1])
    return out


def _key_tokens(tracker):
    """Short tokens followed by prefixes of the keys the open object already holds."""
    top = tracker._frames[-1]
    parts = {k[:n].encode() for k in top.used for n in (1, len(k))} if top.kind == "obj" else set()
    return [t + q + p for t in _STEMS for p in sorted(parts) for q in (b"", b'"')]


@pytest.mark.parametrize("api", ("slack", "asana"))
def test_sensitive_sound_on_synthetic_tokens(api, wapii_specs, wapii_tasks):
    """If the plain scan vetoes a token, it is in ``sensitive``; ``_scan`` and ``allows`` agree
    with an independent oracle (feeding the token to a full ``clone()``)."""
    spec = wapii_specs[api]
    g = build_webapi_grammar(spec, setup="full")
    states = []
    for text in _gold_texts(wapii_tasks, api, 4):
        states += _synthetic_states(lambda: make_key_tracker(g, spec), text.encode())
    assert any(tr._esc for _, tr in states) and any(tr._hole for _, tr in states)
    checked = vetoed = 0
    misses = []
    declared = set()
    for label, tr in states:
        sens = tr.sensitive
        declared.update(tr.all_sensitive)
        for part in sens if isinstance(sens, tuple) else (sens,):
            assert part in declared or "a key starting with" in part.name, (label, part)
        for tok in _SHORT4 + _LONGER + _key_tokens(tr):
            plain = tr._scan(tok)
            oracle = tr.clone()
            oracle.feed(tok)
            want = oracle.violation is None
            assert plain == want, (label, tok)
            assert tr.allows(tok) == want, (label, tok)
            if not want and not is_sensitive(sens, tok):
                misses.append((label, sens.name if isinstance(sens, TokenClass) else sens, tok))
            checked += 1
            vetoed += not want
    assert not misses, (
        f"{len(misses)} vetoed tokens outside sensitive",
        misses[:3],
        sorted({m[0] for m in misses}),
    )
    assert checked > 100_000 and vetoed > 500
