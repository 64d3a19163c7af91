"""Small helpers for writing llguidance Lark grammars as text (shared by every grammar builder)."""

from __future__ import annotations


def literal_regex(text: str) -> str:
    """Regex for literal text: ASCII punctuation as \\xHH (no escaping pitfalls inside /.../)."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch.isascii() and (ch.isalnum() or ch == "_"):
            out.append(ch)
        elif o < 128:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)
