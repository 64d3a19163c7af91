"""A spec's ``pattern`` (an ECMA-262 regular expression) run in linear time, with RE2.

Why: Python's ``re`` backtracks, so a spec pattern such as ``^(a+)+$`` takes 2^n steps on a
41-character value, and a request, a generated task or a score waits on it (measured: the mock
server froze, ``generate webapi --spec`` hung for over a minute). RE2 (``google-re2``, the
binding Google maintains) matches in time linear in the text for every pattern it accepts.

Every place that judges a value by a spec's pattern goes through :func:`compile_pattern`: the mock
server's request validation (:mod:`callbench.mock.validate`), the synthesizer's check of the
strings it makes (:mod:`callbench.specs.synthesize`), the scorer's bounds check
(:func:`callbench.specs.schema.bounds_violation`) and the path matching that tells twin templates
apart by their parameters' patterns (:mod:`callbench.specs.openapi`). The constrained-decoding
grammar never puts a spec's ``pattern`` into the grammar (it constrains URLs, names and types;
llguidance's own regexes are linear anyway), so there is nothing to change there.

Reading ECMA-262 as RE2 (a translation, not a pass-through): ``\\uXXXX`` (and surrogate pairs) and
``\\u{...}`` become code points, ``\\s``/``\\S`` and ``.`` get ECMA's sets (``.`` stops at
``\\r``, U+2028 and U+2029 too), ``(?<name>`` is a named group, a ``{`` that is no quantifier and a
lone ``]`` or ``}`` are literal (Annex B), ``[]`` matches nothing and ``[^]`` any character, lone
surrogates (which no UTF-8 text holds) are dropped from classes. ``$`` already means the end of
the text in RE2, as in ECMA (Python's ``$`` also matches before a final newline). Python/Perl
anchors some specs use (``\\A``, ``\\Z``, ``(?i)``) keep the meaning Python gave them.

What RE2 lacks, and the fallback:

* leading lookaheads of an anchored pattern, ``^(?!aws:)[a-z:]+$`` or
  ``^(?=.*\\d)(?=.*[A-Z]).{8,}$`` (password rules; the most common lookarounds in the APIs.guru
  directory), are exact: each lookahead is one more RE2 match at position 0;
* a counted repeat past RE2's limit of 1,000 (``^.{0,4096}$``) is read without its upper bound
  (:attr:`SpecPattern.exact` is False): a longer text is accepted, never a matching one refused;
* anything else (a lookbehind, a lookahead elsewhere, a backreference, an escape ECMA and RE2
  read differently, a pattern RE2 refuses) is **unchecked**: every value passes it, and loading
  the spec logs one line naming the file, the field and the reason
  (:func:`warn_unchecked_patterns`). Why not Python's ``re`` for these: it has no step limit, and a
  length bound does not help (``^(?=(a+)+$)`` takes 2^30 steps at 30 characters), so the only
  timeout-free safeguard is not to run a backtracking engine on a spec's pattern at all. Being
  lenient keeps every verdict possible: a value is never refused for a pattern nobody can check in
  bounded time, and the line says so.

A text RE2 cannot hold (a lone surrogate, which a JSON body can carry) does not match any checked
pattern.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import re2

__all__ = [
    "ENGINE",
    "MAX_PATTERN_CHARS",
    "SpecPattern",
    "compile_pattern",
    "pattern_matches",
    "unchecked_patterns",
    "warn_unchecked_patterns",
]

#: The engine every checked pattern runs on (tests assert it).
ENGINE = "re2"
#: A longer pattern is unchecked (no spec in the APIs.guru directory comes near: the longest is
#: under 2,000 characters).
MAX_PATTERN_CHARS = 20_000
#: Groups one inside the other (the translator recurses per group; real patterns nest a few).
_MAX_GROUP_DEPTH = 100
#: RE2's largest counted repeat.
_RE2_MAX_REPEAT = 1000
#: RE2's memory budget for one compiled pattern, program and DFA cache (RE2's default): a
#: pattern that needs more is refused (unchecked), and the cache below holds at most this many.
_MAX_MEM = 8 << 20
_CACHE_SIZE = 2048

log = logging.getLogger("callbench.specs")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 writes refused patterns to stderr otherwise
_OPTIONS.max_mem = _MAX_MEM

_WS = r"\t\n\x{b}\x{c}\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}"
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_ANY = r"[\x{0}-\x{10ffff}]"
_NOTHING = r"[^\x{0}-\x{10ffff}]"
_HEX = frozenset("0123456789abcdefABCDEF")


class _Unsupported(Exception):
    """The pattern uses something RE2 cannot run (the message says what)."""


@dataclass(frozen=True)
class SpecPattern:
    """A compiled spec pattern. ``search(text)``: does the pattern match somewhere in ``text``
    (JSON Schema's reading of ``pattern``)? Always True when :attr:`checked` is False."""

    source: str
    #: ``"re2"``, or ``"unchecked"`` (see :attr:`problem`).
    engine: str
    #: Why the pattern is unchecked, or why it is checked only approximately; None otherwise.
    problem: str | None = None
    #: False when a counted repeat past RE2's limit was read without its upper bound.
    exact: bool = True
    _main: Any = field(default=None, repr=False)
    _ahead: tuple[tuple[bool, Any], ...] = field(default=(), repr=False)

    @property
    def checked(self) -> bool:
        return self._main is not None

    def search(self, text: str) -> bool:
        if self._main is None:
            return True
        try:
            if self._main.search(text) is None:
                return False
            return all((rx.search(text) is not None) is positive for positive, rx in self._ahead)
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text, no match
            return False


@lru_cache(maxsize=_CACHE_SIZE)
def compile_pattern(source: str) -> SpecPattern:
    """``source`` (a spec's ``pattern``) compiled for RE2; never raises (see the module doc)."""
    if not isinstance(source, str):
        return SpecPattern(str(source), "unchecked", "not a string")
    if len(source) > MAX_PATTERN_CHARS:
        return SpecPattern(source, "unchecked", f"longer than {MAX_PATTERN_CHARS:,} characters")
    for relax in (False, True):
        try:
            tr = _Translator(source, relax)
            main, aheads = tr.top()
        except _Unsupported as exc:
            return SpecPattern(source, "unchecked", str(exc))
        except RecursionError:  # pragma: no cover - the group bound comes first
            return SpecPattern(source, "unchecked", "groups nested too deeply")
        try:
            compiled_main = re2.compile(main, _OPTIONS)
            compiled_ahead = tuple((pos, re2.compile(f"^(?:{body})", _OPTIONS)) for pos, body in aheads)
        except re2.error as exc:
            why = _re2_reason(exc)
            if not relax and "repetition" in why:
                continue  # nested counted repeats past RE2's limit: try again without upper bounds
            return SpecPattern(source, "unchecked", f"RE2 cannot read it ({why})")
        approx = tr.relaxed
        problem = (
            "a counted repeat past RE2's limit of 1,000 is read without its upper bound" if approx else None
        )
        return SpecPattern(source, ENGINE, problem, not approx, compiled_main, compiled_ahead)
    raise AssertionError("unreachable")  # pragma: no cover


def pattern_matches(source: str, text: str) -> bool:
    """Does ``source`` match somewhere in ``text`` (True for an unchecked pattern)?"""
    return compile_pattern(source).search(text)


def _re2_reason(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    return " ".join(text.split())


def _lit(cp: int) -> str:
    ch = chr(cp)
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\x{{{cp:x}}}"


def _surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


class _Translator:
    """ECMA-262 pattern text -> RE2 syntax (see the module doc); ``top()`` also splits off the
    leading lookaheads of an anchored pattern."""

    def __init__(self, src: str, relax: bool):
        self.s = src
        self.i = 0
        self.relax_all = relax
        self.relaxed = False
        self.top_alternatives = 1

    # -- the top level -----------------------------------------------------------------------
    def top(self) -> tuple[str, list[tuple[bool, str]]]:
        aheads: list[tuple[bool, str]] = []
        out: list[str] = []
        anchored = False
        # leading anchors and lookaheads
        while True:
            if self.s.startswith("^", self.i) or self.s.startswith("\\A", self.i):
                out.append("^")
                self.i += 1 if self.s[self.i] == "^" else 2
                anchored = True
            elif self.s.startswith("(?=", self.i) or self.s.startswith("(?!", self.i):
                positive = self.s[self.i + 2] == "="
                self.i += 3
                body = self.alternatives(depth=1)
                self.expect_close()
                if self.s.startswith(("*", "+", "?", "{"), self.i):
                    raise _Unsupported("a quantified lookahead")
                aheads.append((positive, body))
            else:
                break
        rest = self.alternatives(depth=0, top=True)
        if self.i < len(self.s):  # a ')' with no '('
            raise _Unsupported(f"an unmatched ')' at character {self.i}")
        if aheads and not (anchored or rest.startswith("^")):
            raise _Unsupported("a lookahead in a pattern not anchored with ^")
        if aheads and self.top_alternatives > 1:
            raise _Unsupported("a lookahead before an alternative ('|')")
        return "".join(out) + rest, aheads

    def expect_close(self) -> None:
        if self.i >= len(self.s) or self.s[self.i] != ")":
            raise _Unsupported("an unclosed group")
        self.i += 1

    # -- sequences and alternatives ----------------------------------------------------------
    def alternatives(self, depth: int, top: bool = False) -> str:
        parts = [self.sequence(depth)]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            parts.append(self.sequence(depth))
        if top:
            self.top_alternatives = len(parts)
        return "|".join(parts)

    def sequence(self, depth: int) -> str:
        out: list[str] = []
        last: int | None = None  # index in out of the last quantifiable atom
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "|" or c == ")":
                if c == ")" and depth == 0:
                    raise _Unsupported(f"an unmatched ')' at character {self.i}")
                break
            if c in "*+?{":
                q = self.quantifier()
                if q is None:  # a '{' that is no quantifier: a literal (Annex B)
                    out.append(r"\{")
                    last = len(out) - 1
                    self.i += 1
                    continue
                if last is None:
                    raise _Unsupported(f"a quantifier with nothing to repeat at character {self.i}")
                out[last] = f"(?:{out[last]}){q}" if not _single(out[last]) else out[last] + q
                last = None
                continue
            start = self.i
            atom, quantifiable = self.atom(depth)
            out.append(atom)
            last = len(out) - 1 if quantifiable else None
            if self.i == start:  # pragma: no cover - every branch consumes
                raise _Unsupported("internal error")
        return "".join(out)

    def quantifier(self) -> str | None:
        s, i = self.s, self.i
        c = s[i]
        if c in "*+?":
            q = c
            i += 1
        else:
            j = i + 1
            while j < len(s) and s[j].isdigit():
                j += 1
            if j == i + 1:
                return None
            lo = int(s[i + 1 : j])
            hi: int | None = lo
            if j < len(s) and s[j] == ",":
                k = j + 1
                while k < len(s) and s[k].isdigit():
                    k += 1
                hi = int(s[j + 1 : k]) if k > j + 1 else None
                j = k
            if j >= len(s) or s[j] != "}":
                return None
            if hi is not None and hi < lo:
                raise _Unsupported(f"a repeat {{{lo},{hi}}} with its bounds out of order")
            i = j + 1
            q = self.counted(lo, hi)
        if i < len(s) and s[i] == "?":
            q += "?"
            i += 1
        if i < len(s) and s[i] in "*+?" or s.startswith("{", i) and _counted_at(s, i):
            raise _Unsupported(f"a quantifier after a quantifier at character {i}")
        self.i = i
        return q

    def counted(self, lo: int, hi: int | None) -> str:
        big = lo > _RE2_MAX_REPEAT or (hi is not None and hi > _RE2_MAX_REPEAT)
        if self.relax_all and (hi is None or hi > 1):
            self.relaxed = True
            return "*" if lo == 0 else "+"
        if big:
            self.relaxed = True
            return f"{{{min(lo, _RE2_MAX_REPEAT)},}}"
        if hi is None:
            return f"{{{lo},}}"
        return f"{{{lo}}}" if hi == lo else f"{{{lo},{hi}}}"

    # -- atoms -------------------------------------------------------------------------------
    def atom(self, depth: int) -> tuple[str, bool]:
        s = self.s
        c = s[self.i]
        if c == "(":
            return self.group(depth)
        if c == "[":
            return self.char_class(), True
        if c == "\\":
            return self.escape(in_class=False)
        self.i += 1
        if c == "^":
            return "^", False
        if c == "$":
            return "$", False
        if c == ".":
            return _DOT, True
        cp = ord(c)
        if _surrogate(cp):
            return self.surrogate_literal(cp), True
        return _lit(cp), True

    def surrogate_literal(self, cp: int) -> str:
        """A surrogate code unit outside a class: with its partner, the code point of the pair;
        alone, nothing (no UTF-8 text holds it)."""
        if 0xD800 <= cp <= 0xDBFF:
            low = self.peek_unit()
            if low is not None and 0xDC00 <= low[0] <= 0xDFFF:
                self.i = low[1]
                return _lit(0x10000 + ((cp - 0xD800) << 10) + (low[0] - 0xDC00))
        return _NOTHING

    def peek_unit(self) -> tuple[int, int] | None:
        """The next code unit (a raw character or ``\\uXXXX``) and the index after it."""
        s, i = self.s, self.i
        if i < len(s) and s[i] != "\\":
            return ord(s[i]), i + 1
        if s.startswith("\\u", i) and len(s) >= i + 6 and all(ch in _HEX for ch in s[i + 2 : i + 6]):
            return int(s[i + 2 : i + 6], 16), i + 6
        return None

    def group(self, depth: int) -> tuple[str, bool]:
        s = self.s
        if depth >= _MAX_GROUP_DEPTH:
            raise _Unsupported(f"groups nested deeper than {_MAX_GROUP_DEPTH} levels")
        self.i += 1
        if s.startswith("?", self.i):
            rest = s[self.i + 1 : self.i + 3]
            if rest[:1] == ":":
                self.i += 2
                head = "(?:"
            elif rest[:1] in ("=", "!"):
                raise _Unsupported(
                    "a lookahead (RE2 has none; only leading lookaheads of an anchored pattern are run)"
                )
            elif rest in ("<=", "<!"):
                raise _Unsupported("a lookbehind (RE2 has none)")
            elif rest[:1] == "<" or rest == "P<":  # (?<name> (ECMA) or (?P<name> (Python)
                end = s.find(">", self.i)
                name = s[self.i + 1 + len(rest) if rest == "P<" else self.i + 2 : end] if end > 0 else ""
                if (
                    not name
                    or not (name[0].isalpha() or name[0] == "_")
                    or not all(ch.isalnum() or ch == "_" for ch in name)
                ):
                    raise _Unsupported("a group name RE2 cannot read")
                self.i = end + 1
                head = f"(?P<{name}>"
            else:
                j = self.i + 1
                while j < len(s) and s[j] in "imsU-":
                    j += 1
                if j == self.i + 1 or j >= len(s) or s[j] not in ":)":
                    raise _Unsupported(f"an unknown group '(?{s[self.i + 1 : self.i + 2]}'")
                flags = s[self.i + 1 : j]
                self.i = j + 1
                if s[j] == ")":
                    return f"(?{flags})", False
                head = f"(?{flags}:"
        else:
            head = "("
        body = self.alternatives(depth + 1)
        self.expect_close()
        return head + body + ")", True

    def escape(self, in_class: bool) -> tuple[str, bool]:
        """An escape; in a class the text is a class item (no brackets around sets)."""
        s = self.s
        i = self.i + 1
        if i >= len(s):
            raise _Unsupported("a trailing backslash")
        c = s[i]
        self.i = i + 1
        if c in "dDwW":
            return "\\" + c, True
        if c == "s":
            return (_WS if in_class else f"[{_WS}]"), True
        if c == "S":
            return ("\\S" if in_class else f"[^{_WS}]"), True
        if c in "bB":
            if in_class:
                return ("\\x{8}" if c == "b" else self.bad(c)), True
            return "\\" + c, False
        if c in "tnrfv":
            return _lit({"t": 9, "n": 10, "r": 13, "f": 12, "v": 11}[c]), True
        if c == "0" and not (self.i < len(s) and s[self.i].isdigit()):
            return _lit(0), True
        if c.isdigit():
            raise _Unsupported("a backreference (RE2 has none)")
        if c == "k" and s.startswith("<", self.i):
            raise _Unsupported("a backreference (RE2 has none)")
        if c == "x":
            h = s[self.i : self.i + 2]
            if len(h) == 2 and all(ch in _HEX for ch in h):
                self.i += 2
                return _lit(int(h, 16)), True
            return "x", True
        if c == "u":
            if s.startswith("{", self.i):
                end = s.find("}", self.i)
                h = s[self.i + 1 : end] if end > 0 else ""
                if h and all(ch in _HEX for ch in h) and int(h, 16) <= 0x10FFFF:
                    self.i = end + 1
                    cp = int(h, 16)
                    return (self.unit(cp, in_class)), True
                return self.bad("u")
            h = s[self.i : self.i + 4]
            if len(h) == 4 and all(ch in _HEX for ch in h):
                self.i += 4
                return self.unit(int(h, 16), in_class), True
            return "u", True
        if c == "c":
            if self.i < len(s) and s[self.i].isascii() and s[self.i].isalpha():
                self.i += 1
                return _lit(ord(s[self.i - 1]) % 32), True
            return self.bad("c")
        if c in "pP" and s.startswith("{", self.i):
            end = s.find("}", self.i)
            if end < 0:
                return self.bad(c)
            name = s[self.i + 1 : end]
            self.i = end + 1
            return f"\\{c}{{{name}}}", True
        if c == "A" and not in_class:
            return "^", False
        if c in "zZ" and not in_class:
            return "\\z", False
        if c.isascii() and c.isalnum():
            return self.bad(c)
        cp = ord(c)
        return (_NOTHING if _surrogate(cp) and not in_class else _lit(cp)), True

    def unit(self, cp: int, in_class: bool) -> str:
        """A code unit written as ``\\uXXXX``: a surrogate is handled as a raw one is."""
        if not _surrogate(cp):
            return _lit(cp)
        if in_class:
            return ""  # dropped from the class: no UTF-8 text holds it
        return self.surrogate_literal(cp)

    def bad(self, c: str) -> Any:
        raise _Unsupported(f"the escape \\{c}, which ECMA-262 and RE2 read differently")

    # -- classes -----------------------------------------------------------------------------
    def char_class(self) -> str:
        s = self.s
        self.i += 1
        negate = s.startswith("^", self.i)
        if negate:
            self.i += 1
        items: list[str] = []
        first = True
        while True:
            if self.i >= len(s):
                raise _Unsupported("an unclosed character class")
            if s[self.i] == "]":
                self.i += 1
                break
            lo_text, lo_cp = self.class_atom()
            if (
                s.startswith("-", self.i)
                and not s.startswith("-]", self.i)
                and self.i + 1 < len(s)
                and lo_cp is not None
            ):
                save = self.i
                self.i += 1
                hi_text, hi_cp = self.class_atom()
                if hi_cp is None:  # [\w-.]: the '-' is a literal (Annex B)
                    self.i = save
                else:
                    if hi_cp < lo_cp:
                        raise _Unsupported("a class range out of order")
                    items.extend(_range(lo_cp, hi_cp))
                    first = False
                    continue
            if lo_cp is not None:
                items.append("" if _surrogate(lo_cp) else _lit(lo_cp))
            else:
                items.append(lo_text)
            first = False
        del first
        body = "".join(items)
        if not body:
            return _ANY if negate else _NOTHING
        return f"[{'^' if negate else ''}{body}]"

    def class_atom(self) -> tuple[str, int | None]:
        """One class item: (text, code point) for a single character, (text, None) for a set."""
        s = self.s
        c = s[self.i]
        if c != "\\":
            self.i += 1
            return "", ord(c)
        nxt = s[self.i + 1 : self.i + 2]
        if nxt == "u":
            save = self.i
            self.i += 2
            h = s[self.i : self.i + 4]
            if len(h) == 4 and all(ch in _HEX for ch in h):
                self.i += 4
                return "", int(h, 16)
            if s.startswith("{", self.i):
                end = s.find("}", self.i)
                hh = s[self.i + 1 : end] if end > 0 else ""
                if hh and all(ch in _HEX for ch in hh) and int(hh, 16) <= 0x10FFFF:
                    self.i = end + 1
                    return "", int(hh, 16)
            self.i = save
        if nxt == "x":
            h = s[self.i + 2 : self.i + 4]
            if len(h) == 2 and all(ch in _HEX for ch in h):
                self.i += 4
                return "", int(h, 16)
            self.i += 2
            return "", ord("x")
        if nxt in ("t", "n", "r", "f", "v"):
            self.i += 2
            return "", {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11}[nxt]
        if nxt == "b":
            self.i += 2
            return "", 8
        if nxt == "0" and not s[self.i + 2 : self.i + 3].isdigit():
            self.i += 2
            return "", 0
        if nxt and not (nxt.isascii() and nxt.isalnum()):
            self.i += 2
            return "", ord(nxt)
        text, _ = self.escape(in_class=True)
        return text, None


def _range(lo: int, hi: int) -> list[str]:
    """A class range without surrogate code points (split around them)."""
    parts = []
    for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
        if a <= b:
            parts.append(_lit(a) if a == b else f"{_lit(a)}-{_lit(b)}")
    return parts


def _single(text: str) -> bool:
    """Is ``text`` one RE2 atom a quantifier can follow as is?"""
    if len(text) == 1 or (text.startswith("\\") and len(text) == 2):
        return True
    if text.startswith("\\x{") and text.endswith("}") and text.count("}") == 1:
        return True
    if text.startswith("\\p{") or text.startswith("\\P{"):
        return text.count("}") == 1 and text.endswith("}")
    if text.startswith("[") and text.endswith("]") and _class_end(text) == len(text) - 1:
        return True
    if text.startswith("(") and text.endswith(")") and _group_end(text) == len(text) - 1:
        return True
    return False


def _class_end(text: str) -> int:
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "]" and i > 1:
            return i
        i += 1
    return -1


def _group_end(text: str) -> int:
    depth = 0
    i = 0
    in_class = False
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _counted_at(s: str, i: int) -> bool:
    j = i + 1
    while j < len(s) and s[j].isdigit():
        j += 1
    if j == i + 1:
        return False
    if j < len(s) and s[j] == ",":
        j += 1
        while j < len(s) and s[j].isdigit():
            j += 1
    return j < len(s) and s[j] == "}"


# -- the patterns of a spec that are not checked --------------------------------------------
_DATA_KEYS = frozenset({"example", "examples", "default", "enum", "const"})


def unchecked_patterns(document: Any) -> Iterator[tuple[str, SpecPattern]]:
    """``(location, compiled)`` for every ``pattern`` of a raw (unresolved) spec document that is
    unchecked or checked only approximately. Iterative: any depth."""
    if not any(compile_pattern(p).problem is not None for p in _pattern_texts(document)):
        return  # the common case, found without building a location for every node
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, Mapping):
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                compiled = compile_pattern(pattern)
                if compiled.problem is not None:
                    yield _location((*loc, "pattern")), compiled
            for k, v in node.items():
                if isinstance(v, Mapping | list) and not (
                    isinstance(k, str) and (k in _DATA_KEYS or k.startswith("x-"))
                ):
                    stack.append((v, (*loc, k)))
        elif isinstance(node, list):
            stack.extend((v, (*loc, i)) for i, v in enumerate(node) if isinstance(v, Mapping | list))


def _pattern_texts(document: Any) -> set[str]:
    """Every string ``pattern`` value outside data keywords (a quick pass: no locations)."""
    found: set[str] = set()
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                found.add(pattern)
            for k, v in node.items():
                if isinstance(v, dict | list) and not (
                    isinstance(k, str) and (k in _DATA_KEYS or k.startswith("x-"))
                ):
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
        elif isinstance(node, Mapping):
            stack.append(dict(node))
    return found


def _location(tokens: tuple[Any, ...]) -> str:
    from callbench.specs.refs import format_location

    return format_location(list(tokens))


def warn_unchecked_patterns(document: Any, label: str) -> list[str]:
    """Log one warning line per ``pattern`` of ``document`` that is unchecked or approximate
    (``<file>: <field>: pattern '...' is not checked: <why>``) and return the lines."""
    lines = []
    for where, compiled in unchecked_patterns(document):
        shown = compiled.source if len(compiled.source) <= 60 else compiled.source[:57] + "..."
        verdict = "is not checked" if not compiled.checked else "is checked approximately"
        line = f"{label}: {where}: pattern {shown!r} {verdict}: {compiled.problem}"
        lines.append(" ".join(line.split()))
    for line in lines:
        log.warning("%s", line)
    return lines
