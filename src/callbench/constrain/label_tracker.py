"""Token filter for the nested answer grammar: labels, references, argument keys.

:mod:`callbench.constrain.nested_grammar` fixes the JSON shape, the tool names, argument names and
value types. What depends on the text written so far is checked here, byte by byte:

* a label already used by an earlier call cannot be completed (checked at its closing quote);
* a reference ``"$<label>.<key>$"`` must name a label of an *earlier* call (finished before this one
  started) and a key of that call's tool's ``output_parameters``. Where the parameter takes only a
  reference (not a plain string), every byte of the string must keep it a prefix of such a
  reference; elsewhere only the closing quote matters (an unfinished string can still become a
  plain one);
* argument keys are unique per call, a ``,`` needs a parameter left to write, and ``arguments``
  closes only with the tool's required parameters present. When ``arguments`` comes before
  ``name``, the tool is unknown: the tracker keeps the tools still consistent with the keys and
  value kinds written (exactly the alternatives the grammar keeps alive), and then the name must be
  one of those whose required parameters are present.

``sensitive`` is narrow: inside a label or plain string only the quote; inside a key, a name to
check or a reference-only string the bytes those can contain; elsewhere ``"``, ``,`` and ``}``.
"""

from __future__ import annotations

from typing import Any

from callbench.constrain.nested_grammar import NestedGrammar, ToolInfo

__all__ = ["LabelTracker", "make_label_tracker"]

_DQ, _BSL, _COMMA, _COLON = 0x22, 0x5C, 0x2C, 0x3A
_LBRACE, _RBRACE, _LBRACK, _RBRACK = 0x7B, 0x7D, 0x5B, 0x5D
_WS = frozenset(b" \t\r\n")
_NOTHING: frozenset[int] = frozenset()
_QUOTE = frozenset({_DQ})
_STRUCT = frozenset({_DQ, _COMMA, _RBRACE})

# value kind written -> parameter kinds that accept it (a reference fits every parameter)
_FITS = {
    "int": frozenset({"int", "num", "any"}),
    "float": frozenset({"num", "any"}),
    "str": frozenset({"str", "any"}),
    "bool": frozenset({"bool", "any"}),
    "null": frozenset({"any"}),
    "list": frozenset({"list", "any"}),
    "dict": frozenset({"dict", "any"}),
    "ref": frozenset({"int", "num", "str", "bool", "list", "dict", "any"}),
}

# levels
PRE, LIST, CALL, ARGS, FREE, DONE = range(6)
# states within CALL / ARGS / LIST
KEY, COLON, VALUE, AFTER = range(4)
# string purposes
S_NONE, S_CKEY, S_NAME, S_LABEL, S_AKEY, S_AVAL, S_FREE = range(7)


def _content(text: str) -> bytes:
    """The bytes between the quotes of the grammar's JSON literal of ``text``."""
    import json

    return json.dumps(text, ensure_ascii=False).encode()[1:-1]


class LabelTracker:
    """A :class:`~callbench.constrain.engine.TokenFilter` for one answer under a :class:`NestedGrammar`."""

    def __init__(self, grammar: NestedGrammar):
        self.grammar = grammar
        self.violation: str | None = None
        self._level = PRE if grammar.allow_prose_prefix else LIST
        self._st = KEY
        self._str = S_NONE
        self._esc = False
        self._buf = bytearray()
        self._scalar: bytearray | None = None
        self._depth = 0
        self._free_kind = ""
        #: label -> tool of every finished call; ref label bytes -> ToolInfo
        self.labels: dict[str, str] = {}
        self._defined: dict[bytes, ToolInfo] = {}
        self._reset_call()

    def _reset_call(self) -> None:
        self._ckey = ""
        self._name: str | None = None
        self._label: str | None = None
        self._args_done = False
        self._used: dict[str, str | None] = {}  # argument key -> value kind (None while written)
        self._akey = ""
        self._ref_only = False

    # -- TokenFilter -------------------------------------------------------------------
    @property
    def sensitive(self) -> frozenset[int]:
        if self._level == DONE or self.violation is not None:
            return _NOTHING
        s = self._str
        if s == S_NONE:
            return _STRUCT
        if s == S_AKEY:
            return self.grammar.key_bytes
        if s == S_NAME and self._args_done:
            return self.grammar.name_bytes
        if s == S_AVAL and self._ref_only:
            return self.grammar.ref_bytes
        return _QUOTE

    def clone(self) -> LabelTracker:
        t = LabelTracker.__new__(LabelTracker)
        t.__dict__.update(self.__dict__)
        t._buf = bytearray(self._buf)
        t._scalar = bytearray(self._scalar) if self._scalar is not None else None
        t.labels = dict(self.labels)
        t._defined = dict(self._defined)
        t._used = dict(self._used)
        return t

    def active(self) -> bool:
        return self._level != DONE and self.violation is None

    def feed(self, data: bytes) -> None:
        for b in data:
            if self._level == DONE:
                return
            self._step(b)

    def allows(self, data: bytes) -> bool:
        if self._level == DONE or self.violation is not None:
            return True
        t = self.clone()
        for b in data:
            if t._level == DONE:
                return True
            t._step(b)
            if t.violation is not None:
                return False
        return True

    @property
    def done(self) -> bool:
        return self._level == DONE

    # -- candidates ----------------------------------------------------------------------
    def candidates(self) -> list[ToolInfo]:
        """Tools consistent with the current call so far (one once its name is known)."""
        tools = self.grammar.tools
        if self._name is not None:
            return [tools[self._name]]
        out = []
        for info in tools.values():
            ok = True
            for k, kind in self._used.items():
                pk = info.kinds.get(k)
                if pk is None or (kind is not None and not (pk & _FITS[kind])):
                    ok = False
                    break
            if ok:
                out.append(info)
        return out

    def _fail(self, message: str) -> None:
        if self.violation is None:
            self.violation = message

    # -- the scanner ---------------------------------------------------------------------
    def _step(self, b: int) -> None:
        if self._str != S_NONE:
            self._string_byte(b)
            return
        if self._scalar is not None:
            if b not in _WS and b not in (_COMMA, _RBRACE):
                self._scalar.append(b)
                return
            text = bytes(self._scalar)
            self._scalar = None
            if text in (b"true", b"false"):
                kind = "bool"
            elif text == b"null":
                kind = "null"
            elif any(c in text for c in b".eE"):
                kind = "float"
            else:
                kind = "int"
            self._value_done(kind)
        self._code_byte(b)

    def _open(self, purpose: int) -> None:
        self._str, self._esc = purpose, False
        self._buf.clear()

    def _code_byte(self, b: int) -> None:
        if b in _WS:
            return
        lv, st = self._level, self._st
        if lv == PRE:
            if b == _LBRACK:
                self._level, self._st = LIST, KEY
        elif lv == LIST:
            if b == _LBRACE:
                self._level, self._st = CALL, KEY
                self._reset_call()
            elif b == _RBRACK:
                self._level = DONE
        elif lv == CALL:
            if st == KEY and b == _DQ:
                self._open(S_CKEY)
            elif st == COLON and b == _COLON:
                self._st = VALUE
            elif st == VALUE:
                if b == _DQ:
                    self._open(S_NAME if self._ckey == "name" else S_LABEL)
                elif b == _LBRACE:
                    self._level, self._st = ARGS, KEY
            elif st == AFTER:
                if b == _COMMA:
                    self._st = KEY
                elif b == _RBRACE:
                    self._finish_call()
        elif lv == ARGS:
            if st == KEY:
                if b == _DQ:
                    self._open(S_AKEY)
                    self._check_key_prefix()
                elif b == _RBRACE:
                    self._close_args()
            elif st == COLON and b == _COLON:
                self._st = VALUE
            elif st == VALUE:
                if b == _DQ:
                    self._open(S_AVAL)
                    self._ref_only = self._value_needs_ref()
                    if self._ref_only and not self._refs():
                        self._fail("the parameter takes only a reference, and no earlier call defines one")
                elif b in (_LBRACE, _LBRACK):
                    self._level, self._depth = FREE, 1
                    self._free_kind = "dict" if b == _LBRACE else "list"
                else:
                    self._scalar = bytearray((b,))
            elif st == AFTER:
                if b == _COMMA:
                    if not any(set(c.params) - self._used.keys() for c in self.candidates()):
                        self._fail("',' but every parameter of the tool is already given")
                    self._st = KEY
                elif b == _RBRACE:
                    self._close_args()
        elif lv == FREE:
            if b == _DQ:
                self._open(S_FREE)
            elif b in (_LBRACE, _LBRACK):
                self._depth += 1
            elif b in (_RBRACE, _RBRACK):
                self._depth -= 1
                if self._depth == 0:
                    self._level = ARGS
                    self._value_done(self._free_kind)

    def _string_byte(self, b: int) -> None:
        if self._esc:
            self._esc = False
            self._buf.append(b)
        elif b == _BSL:
            self._esc = True
            self._buf.append(b)
        elif b == _DQ:
            purpose = self._str
            self._str = S_NONE
            self._string_done(purpose, bytes(self._buf))
            return
        else:
            self._buf.append(b)
        purpose = self._str
        if purpose == S_AKEY:
            self._check_key_prefix()
        elif purpose == S_NAME and self._args_done:
            part = bytes(self._buf)
            if not any(_content(c.name).startswith(part) for c in self._closable()):
                self._fail(f"no tool whose required arguments are all given starts with {part!r}")
        elif purpose == S_AVAL and self._ref_only:
            part = bytes(self._buf)
            if not any(r.startswith(part) for r in self._refs()):
                self._fail(f"no reference to an earlier call starts with {part!r}")

    def _string_done(self, purpose: int, raw: bytes) -> None:
        if purpose == S_FREE:
            return
        text = raw.decode("utf-8", "replace")
        if purpose == S_CKEY:
            self._ckey, self._st = text, COLON
            return
        if purpose == S_NAME:
            if self._args_done and all(_content(c.name) != raw for c in self._closable()):
                self._fail(f"tool {text!r} does not fit the arguments written (or misses a required one)")
                return
            self._name, self._st = text, AFTER
            return
        if purpose == S_LABEL:
            if text in self.labels:
                self._fail(f"label {text!r} is already used by an earlier call")
                return
            self._label, self._st = text, AFTER
            return
        if purpose == S_AKEY:
            if text in self._used:
                self._fail(f"argument {text!r} given twice")
                return
            self._used[text] = None
            self._akey, self._st = text, COLON
            return
        # S_AVAL
        m = self.grammar.ref_shape.fullmatch(raw)
        if m is None:
            self._value_done("str")
            return
        info = self._defined.get(m.group(1))
        key = m.group(2).decode("utf-8", "replace")
        if info is None:
            self._fail(f"reference {text!r}: no earlier call has that label")
            return
        if key not in info.outputs:
            self._fail(f"reference {text!r}: tool {info.name!r} has no output {key!r}")
            return
        self._value_done("ref")

    def _value_done(self, kind: str) -> None:
        self._used[self._akey] = kind
        self._st = AFTER

    def _value_needs_ref(self) -> bool:
        key = self._akey
        return not any(
            c.kinds.get(key, frozenset()) & {"str", "any"} for c in self.candidates() if key in c.kinds
        )

    def _refs(self) -> list[bytes]:
        return [b"$" + lab + b"." + k.encode() + b"$" for lab, info in self._defined.items() for k in info.outputs]

    def _closable(self) -> list[ToolInfo]:
        used = self._used.keys()
        return [c for c in self.candidates() if c.required <= used]

    def _check_key_prefix(self) -> None:
        part = bytes(self._buf)
        used = self._used.keys()
        for c in self.candidates():
            for p in c.params:
                if p not in used and _content(p).startswith(part):
                    return
        self._fail(f"argument name {part!r}… can only become arguments already given (or none)")

    def _close_args(self) -> None:
        if not self._closable():
            missing = sorted(set().union(*(c.required - self._used.keys() for c in self.candidates())))
            self._fail(f"'arguments' closed without required argument(s) {', '.join(missing)}")
            return
        self._args_done = True
        self._level, self._st = CALL, AFTER

    def _finish_call(self) -> None:
        name, label = self._name, self._label
        if name is not None and label is not None:
            self.labels[label] = name
            self._defined[self.grammar.ref_label(label).encode()] = self.grammar.tools[name]
        self._level, self._st = LIST, AFTER

    def context(self) -> dict[str, Any]:
        return {
            "level": ("pre", "list", "call", "args", "free", "done")[self._level],
            "name": self._name,
            "label": self._label,
            "used": dict(self._used),
            "labels": dict(self.labels),
        }


def make_label_tracker(grammar: NestedGrammar) -> LabelTracker:
    """A fresh tracker for one generation under ``grammar`` (a :class:`TokenFilter`)."""
    return LabelTracker(grammar)


def check_answer(grammar: NestedGrammar, text: str | bytes, tokenizer: Any = None) -> str | None:
    """Why grammar + tracker reject ``text`` as a complete answer, or None if they accept it.

    ``tokenizer``: an ``llguidance.LLTokenizer`` (default: one token per byte); the text is
    tokenized by it and fed token by token, as a model's output would be.
    """
    import llguidance as llg

    from callbench.constrain.check import byte_tokenizer

    tok = tokenizer if tokenizer is not None else byte_tokenizer()
    data = text.encode() if isinstance(text, str) else text
    m = llg.LLMatcher(tok, llg.LLMatcher.grammar_from_lark(grammar.lark), log_level=0)
    if m.is_error():
        return f"grammar rejected: {m.get_error()}"
    tracker = make_label_tracker(grammar)
    done = b""
    for t in tok.tokenize_bytes(data):
        piece = tok.decode_bytes([t])
        if not m.consume_token(t):
            return f"grammar rejects {piece!r} after {done[-80:]!r}: {m.get_error()}"
        if not tracker.allows(piece):
            tracker.feed(piece)
            return f"tracker: {tracker.violation} (after {done[-80:]!r})"
        tracker.feed(piece)
        done += piece
    if not m.is_accepting():
        return f"incomplete answer (after {done[-80:]!r})"
    return None
