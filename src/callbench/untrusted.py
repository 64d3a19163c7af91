"""Parsing text nobody vouches for (a model's answer, a sandbox's report, a replay file, a spec, a
task file) with limits on size and nesting, so a hostile or broken text is that input's one-line
error, never a ``RecursionError`` or an exhausted process.

Why not the parsers alone: ``json.loads`` and PyYAML stop deep nesting only with a
``RecursionError`` (at about 1,000 levels for JSON, 10x deeper for YAML's composer, crashing
before it), and a value that parsed at 975 levels still breaks every recursive walk after it (the
encoder when the value is stored, ``copy.deepcopy``, the scorer). YAML aliases can make a small
text expand to an exponential tree when walked. So every parse here is followed by one iterative
walk (no recursion) that bounds depth and the number of nodes visited, aliases counted each time.

Callers choose the error class (``DataError`` for a file, ``SpecError`` for a spec, a sample's
verdict for model output) by catching :class:`UntrustedInputError`, whose message already says
what broke the limit; ``what`` names the file and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Nesting allowed in values a model or sandbox produces (request bodies, results, call lists).
#: Far above any real API payload (WAPIIBench's deepest body: 4 levels) and far below what breaks
#: Python's recursive code (~1,000 frames, several frames a level).
VALUE_MAX_DEPTH = 100
#: Nesting allowed in a spec or task file (Microsoft Graph's JSON reaches about 30 levels).
DOCUMENT_MAX_DEPTH = 200
#: Nodes one walk may visit: bounds YAML alias bombs (a 1 KB text can name 10^9 nodes).
MAX_NODES = 10_000_000


class UntrustedInputError(ValueError):
    """A text broke a parsing limit or is not valid; the message is one line starting with ``what``."""


def check_value(value: Any, *, what: str, max_depth: int = VALUE_MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """``value`` itself when no list/dict chain in it is deeper than ``max_depth`` and a walk visits
    at most ``max_nodes`` nodes; :class:`UntrustedInputError` otherwise. Iterative: safe at any depth."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > max_nodes:
            raise UntrustedInputError(f"{what}: more than {max_nodes:,} values (an expanding alias or a huge document)")
        if isinstance(node, Mapping):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:
            raise UntrustedInputError(f"{what}: nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children)
    return value


def loads_json(
    text: str | bytes,
    *,
    what: str,
    max_depth: int = VALUE_MAX_DEPTH,
    max_bytes: int | None = None,
    max_nodes: int = MAX_NODES,
) -> Any:
    """``json.loads(text)`` within the limits; :class:`UntrustedInputError` (one line, ``what``
    first) for invalid JSON, too many bytes, too deep or too many values."""
    if max_bytes is not None and len(text) > max_bytes:
        raise UntrustedInputError(f"{what}: {len(text):,} bytes, more than the limit of {max_bytes:,}")
    try:
        value = json.loads(text)
    except RecursionError:
        raise UntrustedInputError(f"{what}: nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise UntrustedInputError(f"{what}: not UTF-8 (byte {exc.start}: {exc.reason})") from None
    except ValueError as exc:  # JSONDecodeError; its message is one line with line and column
        raise UntrustedInputError(f"{what}: invalid JSON ({exc})") from None
    return check_value(value, what=what, max_depth=max_depth, max_nodes=max_nodes)


def load_yaml(
    text: str,
    *,
    what: str,
    max_depth: int = DOCUMENT_MAX_DEPTH,
    max_bytes: int | None = None,
    max_nodes: int = MAX_NODES,
) -> Any:
    """``yaml.safe_load(text)`` within the limits (PyYAML's C loader where built); the same errors
    as :func:`loads_json`. Aliases are counted at every use, so an alias bomb is refused."""
    import yaml

    if max_bytes is not None and len(text) > max_bytes:
        raise UntrustedInputError(f"{what}: {len(text):,} bytes, more than the limit of {max_bytes:,}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        value = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except RecursionError:
        raise UntrustedInputError(f"{what}: nested deeper than {max_depth} levels") from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise UntrustedInputError(f"{what}: invalid YAML ({problem})") from None
    return check_value(value, what=what, max_depth=max_depth, max_nodes=max_nodes)


def dumps_json(value: Any, *, what: str, max_depth: int = VALUE_MAX_DEPTH, **kwargs: Any) -> str:
    """``json.dumps(value, **kwargs)`` for a value that may come from untrusted code: checked first,
    so the encoder never recurses past ``max_depth``; values JSON cannot hold are
    :class:`UntrustedInputError` too."""
    check_value(value, what=what, max_depth=max_depth)
    try:
        return json.dumps(value, **kwargs)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UntrustedInputError(f"{what}: cannot be written as JSON ({exc})") from None


def clean_text(text: str, *, what: str) -> str:
    """``text`` when it can be written as UTF-8; :class:`UntrustedInputError` naming the position of
    the first lone surrogate otherwise (JSON's ``"\\ud800"`` decodes to one, and SQLite, files and
    terminals refuse it later, far from the input)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UntrustedInputError(f"{what}: contains a lone surrogate (U+{ord(text[exc.start]):04X} at character {exc.start})") from None
    return text
