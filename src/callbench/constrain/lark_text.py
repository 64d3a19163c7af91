"""Small helpers for writing llguidance Lark grammars as text (shared by every grammar builder)."""

from __future__ import annotations

from functools import lru_cache

# ASCII other than letters, digits and ``_`` as ``\\xHH``: one ``str.translate``
_RX_TABLE = {o: f"\\x{o:02x}" for o in range(128) if not (chr(o).isalnum() or o == ord("_"))}


@lru_cache(maxsize=1 << 16)  # key names and URL pieces repeat across operations and builds
def literal_regex(text: str) -> str:
    """Regex for literal text: ASCII punctuation as \\xHH (no escaping pitfalls inside /.../)."""
    return text.translate(_RX_TABLE)
