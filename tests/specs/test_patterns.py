"""Spec ``pattern``s run on RE2 (issue 28, item 5): the ECMA-262 reading, the fallback for what
RE2 lacks, and every place a value is judged by a pattern (mock validation, the synthesizer, the
scorer's bounds, path matching) going through it. No timings here: the time a hostile pattern
takes is measured by ``benchmarks/hostile_patterns.py``."""

from __future__ import annotations

import json
import logging
import random

import pytest
import re2

from callbench.specs import load_spec
from callbench.specs.patterns import ENGINE, compile_pattern, unchecked_patterns, warn_unchecked_patterns
from callbench.specs.schema import bounds_violation
from callbench.specs.synth_regex import RegexUnsupported, string_for_pattern

HOSTILE = "^(a+)+$"
EVIL = "a" * 40 + "b"  # 41 characters: 2^40 steps for a backtracking engine


def test_hostile_pattern_is_compiled_for_re2():
    compiled = compile_pattern(HOSTILE)
    assert compiled.engine == ENGINE == "re2" and compiled.checked and compiled.exact
    assert isinstance(compiled._main, re2._Regexp)  # the linear engine, not Python's re
    assert not compiled.search(EVIL)
    assert compiled.search("aaaa")


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        (r"^[\u0020-\u007E]+$", "plain text", True),  # \uXXXX is a code point (RE2 has no \u)
        (r"^[\u0020-\u007E]+$", "caf\u00e9", False),
        ("\\uD83D\\uDE00", "\U0001f600", True),  # a surrogate pair outside a class: one code point
        (r"^\u{1F600}$", "\U0001f600", True),
        (r"\d{3}$", "123\n", False),  # ECMA's $ is the end of the text (Python's also before a final \n)
        (r"^\s+$", "\u00a0\v\u2028", True),  # ECMA's \s includes these
        (r"^\S+$", "a\u00a0b", False),
        (r"^.$", "\r", False),  # ECMA's . stops at \r, U+2028 and U+2029
        (r"^.$", "\u2028", False),
        ("[]", "anything", False),  # an empty class matches nothing
        ("^[^]$", "\n", True),  # and its negation anything
        (r"a{,3}", "a{,3}", True),  # a '{' that is no quantifier is literal (Annex B)
        (r"^x]$", "x]", True),
        (r"^[\w-.]+$", "a-.b", True),  # '-' after a class escape is literal
        (r"^(?<year>\d{4})$", "2024", True),  # ECMA named group
        (r"\A[a-z]+\Z", "abc", True),  # Python anchors keep the meaning Python gave them
        (r"\A[a-z]+\Z", "abc\n", False),
        ("(?i)^abc$", "ABC", True),
        (r"^\p{L}+$", "\u00e9t\u00e9", True),  # Unicode properties (Python's re cannot read them)
        (r"^\x41\0$", "A\x00", True),
        (r"^[\b]$", "\b", True),
    ],
)
def test_ecma_262_is_read_as_ecma_262(pattern, text, matches):
    compiled = compile_pattern(pattern)
    assert compiled.engine == "re2", compiled.problem
    assert compiled.search(text) is matches


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        (r"^(?!aws:)[a-zA-Z+-=._:/]+$", "aws:tag", False),
        (r"^(?!aws:)[a-zA-Z+-=._:/]+$", "my:tag", True),
        (r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{8,64}$", "abcdEFG1", True),
        (r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{8,64}$", "abcdEFGh", False),  # no digit
        (r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{8,64}$", "aB1", False),  # too short
        (r"(?!^.*--)(?!^[0-9]+$)^[A-Za-z0-9-]+$", "a--b", False),
        (r"(?!^.*--)(?!^[0-9]+$)^[A-Za-z0-9-]+$", "123", False),
        (r"(?!^.*--)(?!^[0-9]+$)^[A-Za-z0-9-]+$", "a-1", True),
    ],
)
def test_leading_lookaheads_of_an_anchored_pattern_are_exact(pattern, text, matches):
    compiled = compile_pattern(pattern)
    assert compiled.checked and compiled.exact, compiled.problem
    assert compiled.search(text) is matches


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"^[0-9a-z.-]*(?<!\.)$", "lookbehind"),
        (r"^a(?=b)", "lookahead"),
        (r"(?!\s*$)[a-z]*", "not anchored"),
        (r"^(?!x)a|b$", "alternative"),
        (r"^(a)\1$", "backreference"),
        (r"^(?<y>\d)\k<y>$", "backreference"),
        (r"^\p{Print}+$", "RE2 cannot read"),  # a Java class name
        (r"^\e$", "escape"),
        ("(" * 2000 + ")" * 2000, "nested deeper than 100"),
        ("a" * 30_000, "longer than"),
    ],
)
def test_what_re2_lacks_is_unchecked_with_a_reason(pattern, reason):
    compiled = compile_pattern(pattern)
    assert compiled.engine == "unchecked" and not compiled.checked
    assert reason in compiled.problem
    assert "\n" not in compiled.problem
    assert compiled.search("anything at all")  # lenient: nothing refused for it


def test_repeats_past_re2s_limit_lose_only_their_upper_bound():
    compiled = compile_pattern(r"^[a-z]{2,4096}$")
    assert compiled.checked and not compiled.exact and "1,000" in compiled.problem
    assert compiled.search("ab") and compiled.search("a" * 5000)
    assert not compiled.search("a") and not compiled.search("AB")
    nested = compile_pattern(r"^(?:[a-z]{0,100}){0,100}$")  # a product past the limit
    assert nested.checked and not nested.exact
    assert nested.search("abc") and not nested.search("ABC")


def test_a_lone_surrogate_matches_no_checked_pattern():
    assert not compile_pattern("^.*$").search("\ud800")
    assert compile_pattern(r"(?<!x)y").search("\ud800")  # unchecked: still lenient


def test_bounds_violation_uses_re2():
    # the scorer's check: a 10,000-character subject and the hostile pattern
    schema = {"type": "string", "pattern": HOSTILE}
    assert "does not match the pattern" in bounds_violation("a" * 9_999 + "b", schema)
    assert bounds_violation("a" * 9_999, schema) is None
    assert bounds_violation("abc", {"type": "string", "pattern": r"^(?!x)(?<!y)$"}) is None  # unchecked


def test_synthesizer_checks_with_re2_and_bounds_generation():
    assert string_for_pattern(HOSTILE, random.Random(0)).strip("a") == ""
    # the sampler's tree walk is bounded: these would build 10^9 characters or steps
    for pattern in ("((a{1000}){1000}){1000}", "((a?){1999}){1999}", "a{100000}"):
        with pytest.raises(RegexUnsupported, match="too long to build"):
            string_for_pattern(pattern, random.Random(0))
    # a value made for an ECMA pattern Python's parser reads differently still matches on RE2
    s = string_for_pattern(r"^[\u0041-\u0043]{3}$", random.Random(1))
    assert compile_pattern(r"^[\u0041-\u0043]{3}$").search(s)


_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "p", "version": "1"},
    "servers": [{"url": "https://api.example.com"}],
    "paths": {
        # Google-style twins told apart only by their parameters' patterns
        "/v1/{name}:run": {
            "post": {
                "operationId": "runName",
                "parameters": [
                    {
                        "name": "name",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": HOSTILE},
                    },
                    {"name": "q", "in": "query", "schema": {"type": "string", "pattern": r"^[a-z]*(?<!x)$"}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/v1/{parent}:run": {
            "post": {
                "operationId": "runParent",
                "parameters": [
                    {
                        "name": "parent",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^a+b$"},
                    }
                ],
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
    "components": {
        "schemas": {"S": {"type": "string", "pattern": r"^[a-z]{0,5000}$", "example": {"pattern": "(?<!z)"}}}
    },
}


def test_loading_a_spec_warns_once_per_unchecked_pattern_naming_file_and_field(tmp_path, caplog):
    f = tmp_path / "patterns.json"
    f.write_text(json.dumps(_SPEC))
    with caplog.at_level(logging.WARNING, logger="callbench.specs"):
        spec = load_spec(f)
    lines = [r.getMessage() for r in caplog.records if r.name == "callbench.specs"]
    assert len(lines) == 2, (
        lines
    )  # the lookbehind (unchecked) and the long repeat (approximate); not the example
    assert any(
        line.startswith("patterns.json: paths./v1/{name}:run.post.parameters[1].schema.pattern: ")
        and "is not checked: a lookbehind" in line
        for line in lines
    ), lines
    assert any(
        "components.schemas.S.pattern" in line and "checked approximately" in line for line in lines
    ), lines
    assert all("\n" not in line for line in lines)
    # the hostile path pattern is checked (on RE2) when URLs are matched: it tells the twins apart
    assert spec.match("post", "https://api.example.com/v1/aaaa:run").operation.operation_id == "runName"
    assert spec.match("post", f"https://api.example.com/v1/{EVIL}:run").operation.operation_id == "runParent"


def test_unchecked_patterns_walks_any_depth():
    deep: dict = {"pattern": "(?<=a)b"}
    for _ in range(5000):
        deep = {"items": deep}
    found = list(unchecked_patterns(deep))
    assert len(found) == 1 and found[0][0].endswith(".items.pattern")
    assert warn_unchecked_patterns({"pattern": "^a$"}, "x.yaml") == []


def test_directory_style_patterns_compile():
    # a sample of real patterns from the APIs.guru directory, all read by RE2
    for pattern in (
        r"^arn:aws:iam::\d{12}:user(?:(\u002F)|(\u002F[\u0021-\u007E]+\u002F))[\w+=,.@-]+$",
        r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDBFF-\uDC00\uDFFF\r\n\t]*",
        r"^[^\u0000\u0085\u2028\u2029\r\n]{1,255}$",
        r"^projects/[^/]+/locations/[^/]+$",
    ):
        assert compile_pattern(pattern).checked, pattern


def test_the_grammar_never_puts_a_spec_pattern_in(tmp_path):
    # the constrained-decoding grammar constrains URLs, names and types, not a value's pattern: the
    # same spec with and without its (hostile) patterns gives the same grammar text
    from callbench.constrain.webapi_grammar import build_webapi_grammar
    from callbench.specs.openapi import build_spec

    schema = {"type": "string", "pattern": HOSTILE}
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "p", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/things/{id}": {
                "post": {
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": schema},
                        {"name": "q", "in": "query", "schema": schema},
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"type": "object", "properties": {"name": schema}}}
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    doc = json.loads(json.dumps(doc))  # no shared objects, as in a parsed file
    plain = json.loads(json.dumps(doc).replace(', "pattern": "^(a+)+$"', ""))
    assert "pattern" not in json.dumps(plain)
    with_patterns = build_webapi_grammar(build_spec(doc, tmp_path / "spec.json"), setup="full").lark
    without = build_webapi_grammar(build_spec(plain, tmp_path / "spec.json"), setup="full").lark
    assert with_patterns == without
