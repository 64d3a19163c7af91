"""``ast.parse`` that threads may call at the same time.

CPython 3.11's AST constructor keeps its recursion depth in state that threads share: two threads
parsing at once can fail with ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905; seen here when evaluation threads read answers and set up sandboxes),
which would turn a readable answer into a parse error, or a sandbox setup into a crash, at random.
Every parse that can run in a worker thread goes through :func:`parse`, under one process-wide
lock (parses of answers and tool files are short). Model text such as ``"a\\_b"`` makes the
compiler warn (an invalid escape sequence); those warnings say nothing about the answer and are
not shown.
"""

from __future__ import annotations

import ast
import threading
import warnings
from typing import Any

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """:func:`ast.parse`, one thread at a time."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, filename=filename, mode=mode)
