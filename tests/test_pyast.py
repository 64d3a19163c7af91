"""callbench.pyast: the one ``ast.parse`` for code that may run in worker threads."""

from __future__ import annotations

import ast
import warnings

from callbench import pyast


def test_parse_gives_the_tree_ast_gives():
    text = 'f(a=1, b=[2, "x"])'
    assert ast.dump(pyast.parse(text, mode="eval")) == ast.dump(ast.parse(text, mode="eval"))


def test_model_text_with_an_invalid_escape_shows_no_warning():
    # NESTFUL answers written Markdown-style (`"a\_b"`) are read as Python by some parsers; the
    # compiler's invalid-escape warning says nothing about the answer and must not reach the user
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = pyast.parse('f(a="x\\_y")', mode="eval")
    assert tree.body.keywords[0].value.value == "x\\_y"
