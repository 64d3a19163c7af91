"""A string that matches a regular expression (a spec's ``pattern``), deterministic given a seed.

Why hand-written and not ``rstr``/``exrex``: callbench's runtime dependencies do not include a
regex-to-string library (``hypothesis.strategies.from_regex`` is only a dev dependency and is not
deterministic per call), and the job is small: ``rstr.xeger`` and hypothesis both work exactly
this way, by walking the parse tree of Python's own regex parser (``re._parser``, formerly
``sre_parse``). Choices stay ASCII and printable (``\\d`` is ``[0-9]``, ``\\w`` is
``[A-Za-z0-9_]``), since a spec's pattern is ECMA-262, where those classes are ASCII too.
Repeats are kept short (``min .. min + 3``, never past ``max``), so ``.*`` adds a few characters,
unless a length bound asks for longer ones.
Each attempt is checked with the spec's pattern on RE2 (:mod:`callbench.specs.patterns`, linear
time; lookarounds and back-references are only approximated here), and another seed is tried if
needed. Generation is bounded too: an attempt stops after :data:`_MAX_STEPS` tree nodes, and a
repeat that must produce more than :data:`_MAX_LEN` copies is refused, so a pattern such as
``((a{1000}){1000}){1000}`` fails fast instead of building a billion characters.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

from callbench.specs.patterns import compile_pattern

try:  # Python >= 3.11
    import re._constants as _c  # type: ignore[import-not-found]
    import re._parser as _p  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["RegexUnsupported", "string_for_pattern"]

_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)]
_CATEGORY = {
    _c.CATEGORY_DIGIT: string.digits,
    _c.CATEGORY_NOT_DIGIT: string.ascii_letters,
    _c.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    _c.CATEGORY_NOT_WORD: " -.,:/",
    _c.CATEGORY_SPACE: " ",
    _c.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
    _c.CATEGORY_LINEBREAK: "\n",
    _c.CATEGORY_NOT_LINEBREAK: string.ascii_letters + string.digits,
}
_MAX_EXTRA = 3  # a repeat takes min .. min + 3 turns
_ONE_CHAR = (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY)  # opcodes emitting one character
_MAX_LEN = 2000
_MAX_STEPS = 200_000  # tree nodes one attempt may expand


class RegexUnsupported(ValueError):
    """The pattern cannot be read by Python's regex parser, or no string for it is found in bounds."""


class _TooBig(Exception):
    """An attempt ran past :data:`_MAX_STEPS` or :data:`_MAX_LEN`."""


def string_for_pattern(
    pattern: str, rng: random.Random, *, attempts: int = 8, min_len: int = 0, max_len: int | None = None
) -> str:
    """A string ``re.search(pattern, s)`` finds a match in, ``min_len`` to ``max_len`` characters
    long; raises RegexUnsupported when the pattern cannot be parsed or no attempt fits. A length
    bound lets unbounded repeats run longer (``^[a-f0-9-]+$`` with ``minLength: 36``)."""
    try:
        tree = _p.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError, TypeError) as exc:
        raise RegexUnsupported(f"pattern {pattern!r} cannot be parsed: {exc}") from None
    compiled = compile_pattern(pattern)  # the check: RE2, linear in the string
    top = min(max_len if max_len is not None else _MAX_LEN, _MAX_LEN)
    for i in range(attempts):
        groups: dict[int, str] = {}
        try:
            out = _emit(tree, rng, groups, 0, steps=[_MAX_STEPS])
            if len(out) < min_len and i % 2:
                # too short: the shortest string, then the first unbounded one-character repeat
                # (``[a-f0-9-]+``) takes the characters left to reach a length within the bounds
                shortest = len(_emit(tree, random.Random(i), {}, 0, 0, steps=[_MAX_STEPS]))
                want = rng.randint(min_len, max(min_len, min(top, min_len + _MAX_EXTRA)))
                out = _emit(tree, rng, {}, 0, 0, [max(0, want - shortest)], steps=[_MAX_STEPS])
        except RecursionError:
            raise RegexUnsupported(f"pattern {pattern!r} is nested too deeply") from None
        except _TooBig:
            raise RegexUnsupported(f"pattern {pattern!r} asks for strings too long to build") from None
        if min_len <= len(out) <= top and compiled.search(out):
            return out
    raise RegexUnsupported(f"no string matching {pattern!r} found")


def _chars_of(items: list[tuple[Any, Any]]) -> list[str]:
    """The characters an ``IN`` set offers (ASCII printable only), honouring NEGATE."""
    negate = False
    allowed: set[str] = set()
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            allowed.add(chr(av))
        elif op is _c.RANGE:
            lo, hi = av
            allowed.update(chr(c) for c in range(lo, min(hi, lo + 400) + 1))
        elif op is _c.CATEGORY:
            allowed.update(_CATEGORY.get(av, string.ascii_letters))
    if negate:
        # the complement of a negated set, among printable ASCII letters/digits first
        pool = [ch for ch in string.ascii_letters + string.digits + "-_." if ch not in allowed]
        return pool or [ch for ch in _PRINTABLE if ch not in allowed] or ["~"]
    printable = sorted(ch for ch in allowed if ch in _PRINTABLE)
    return printable or sorted(allowed) or ["a"]


def _emit(
    tree: Any, rng: random.Random, groups: dict[int, str], depth: int, extra: int = _MAX_EXTRA,
    budget: list[int] | None = None, *, steps: list[int],
) -> str:
    if depth > 60:
        raise RecursionError
    out: list[str] = []
    size = 0
    for op, av in tree:
        steps[0] -= 1
        if steps[0] < 0 or size > _MAX_LEN:
            raise _TooBig
        if op is _c.LITERAL:
            out.append(chr(av))
        elif op is _c.NOT_LITERAL:
            pool = [ch for ch in string.ascii_letters + string.digits if ord(ch) != av]
            out.append(rng.choice(pool))
        elif op is _c.ANY:
            out.append(rng.choice(string.ascii_letters + string.digits))
        elif op is _c.IN:
            out.append(rng.choice(_chars_of(av)))
        elif op is _c.CATEGORY:
            out.append(rng.choice(_CATEGORY.get(av, string.ascii_letters)))
        elif op is _c.BRANCH:
            out.append(_emit(rng.choice(av[1]), rng, groups, depth + 1, extra, budget, steps=steps))
        elif op is _c.SUBPATTERN:
            gid, _add, _del, sub = av
            text = _emit(sub, rng, groups, depth + 1, extra, budget, steps=steps)
            if gid is not None:
                groups[gid] = text
            out.append(text)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)):
            lo, hi, sub = av
            top = lo + extra if hi is _c.MAXREPEAT else min(hi, lo + extra)
            n = rng.randint(lo, max(lo, top))
            if budget and budget[0] and len(sub) == 1 and sub[0][0] in _ONE_CHAR:
                room = budget[0] if hi is _c.MAXREPEAT else min(budget[0], hi - lo)
                n, budget[0] = lo + room, budget[0] - room
            if n > _MAX_LEN:
                raise _TooBig
            for _ in range(n):
                piece = _emit(sub, rng, groups, depth + 1, extra, budget, steps=steps)
                out.append(piece)
                size += len(piece)
                if size > _MAX_LEN:
                    raise _TooBig
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            out.append(_emit(av, rng, groups, depth + 1, extra, budget, steps=steps))
        elif op is _c.GROUPREF:
            out.append(groups.get(av, ""))
        elif op is _c.GROUPREF_EXISTS:
            gid, yes, no = av
            branch = yes if gid in groups else no
            if branch is not None:
                out.append(_emit(branch, rng, groups, depth + 1, extra, budget, steps=steps))
        elif op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue  # anchors and lookarounds: positions, not characters
        else:  # pragma: no cover - opcodes a spec's pattern does not produce
            continue
    return "".join(out)
