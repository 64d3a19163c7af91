"""String escapes the grammar allows are exactly those strict-mode JavaScript accepts
(found by the random-decoding property test: `\\u` + non-hex is a SyntaxError)."""

import pytest

pytest.importorskip("llguidance")

from callbench.constrain.check import check_continuation  # noqa: E402
from callbench.sandbox import JsSandbox  # noqa: E402

CALL = "get('https://slack.com/api/conversations.list', {params: {cursor: '%s'}, headers: {Authorization: 'Bearer <token>'}});"


@pytest.mark.parametrize(
    "escape,ok",
    [("\\u0041", True), ("\\x41", True), ("\\n", True), ("\\'", True), ("\\\\", True), ("\\u{1F600}", True),
     ("\\uZZ", False), ("\\x4", False), ("\\1", False), ("\\u{110000}", False)],
)
def test_escapes_match_strict_javascript(wapii_specs, escape, ok):
    text = CALL % escape
    assert check_continuation(wapii_specs["slack"], text).allowed is ok
    with JsSandbox() as sb:  # the sandbox agrees in strict mode (the directive opens the file)
        res = sb.run("'use strict';\nconst axios = require('axios');\naxios." + text)
    assert (res.status == "ok") is ok, (escape, res.status, res.error)
