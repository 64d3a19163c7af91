"""What a server or a model sends is parsed within callbench.untrusted's limits (issue 28, item 3):
a reply body or tool-call arguments nested too deep are that sample's error (a malformed reply, a
malformed call), never a RecursionError out of the run."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp")

from callbench.models.openai_compat import MalformedResponse, _decode  # noqa: E402
from callbench.models.tool_calls import parse_arguments  # noqa: E402

HEADERS = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("depth", "needle"),
    [
        (100_000, "the reply: nested deeper than 200 levels (application/json, 200000 bytes)"),
        # parses (under the parser's recursion limit) but would break the walks after it
        (500, "the reply: nested deeper than 200 levels (application/json, 1000 bytes)"),
    ],
)
def test_a_reply_nested_too_deep_is_a_malformed_reply(depth, needle):
    with pytest.raises(MalformedResponse) as exc:
        _decode(b"[" * depth + b"]" * depth, HEADERS)
    assert str(exc.value) == needle


def test_a_normal_reply_and_a_broken_one_read_as_before():
    body = {"choices": [{"message": {"content": "hi", "tool_calls": None}}]}
    assert _decode(json.dumps(body).encode(), HEADERS) == body
    with pytest.raises(MalformedResponse, match="not valid JSON"):
        _decode(b"<html>", {"content-type": "text/html"})


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "the arguments: nested deeper than 100 levels"),
        ('{"a": ' + "[" * 300 + "]" * 300 + "}", "the arguments: nested deeper than 100 levels"),
        ('{"a": ', "the arguments are not valid JSON"),
        ("[1]", "the arguments must be a JSON object, got list"),
    ],
)
def test_tool_call_arguments_are_bounded(raw, problem):
    value, why = parse_arguments(raw)
    assert value is None and why.startswith(problem), why
    assert parse_arguments('{"a": [[1]]}') == ({"a": [[1]]}, None)
