"""The published scorer's steps one by one, on hand-made inputs (issue 26, part 2).

Each expectation below is worked out from the published code's rules (evaluation.py,
mock.js, openapi_utils.py); the parity tests check the same steps together against the
published scorer's own output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import SampleVerdict
from callbench.tracks.webapi.upstream_call import (
    published_call,
    published_program,
    sandbox_script,
    script_error,
)
from callbench.tracks.webapi.upstream_mock import MockError, decode_uri_component, js_json_parse, mock_log

STARTER = "// Get things.\nconst axios = require('axios');\n\naxios."


# ---------------------------------------------------------------- the program and the cut


def test_cut_points_in_the_published_order():
    # .then wins over an earlier ");" (the order of preference, not the position, decides)
    code = "axios.get('u');\naxios.get('v').then(r => r);"
    assert published_call(code).code == "axios.get('u');\naxios.get('v');\n"
    assert published_call("x axios.post('u', {a: 1});\nmore();").code == "axios.post('u', {a: 1});\n"
    assert published_call("axios.get('u', {\n  a: 1\n}\n);").code == "axios.get('u', {\n  a: 1\n}\n);\n"
    assert published_call("axios.get('u');").code == "axios.get('u');\n"
    assert published_call("axios.get('u')\n```").code == "axios.get('u')\n"  # the fence is dropped
    assert published_call("axios.get('u')").error == "incomplete_request"
    assert published_call("fetch('u');").error == "no_request"


def test_program_text_as_evaluation_builds_it():
    # completions: the stop string ends the text, its last line break dropped
    assert (
        published_program(STARTER, "get('u');\n```\nprose\n```\n", "completion") == STARTER + "get('u');\n```"
    )
    assert published_program(STARTER, "get('u');", "completion") == STARTER + "get('u');"
    # chat answers, as for OpenAI models: from the answer's first "axios." after the starter's header
    chat = "Sure:\n```js\nconst axios = require('axios');\naxios.get('u');\n```"
    assert (
        published_program(STARTER, chat, "chat")
        == "// Get things.\nconst axios = require('axios');\n\naxios.get('u');\n```"
    )
    assert published_program(STARTER, "```javascript\nfetch('u');", "chat") == STARTER + "fetch('u');"


def test_scripts_node_refuses_and_implicit_globals():
    assert script_error("axios.get('u');\n") is None
    assert "import" in script_error("axios.VERSION;\nimport x from 'y';\n")
    assert "await" in script_error("axios.VERSION;\nconst r = await axios.get('u');\n")
    assert script_error("axios.VERSION;\n(async () => { await axios.get('u'); })();\n") is None
    assert "axios" in script_error("axios.VERSION;\nconst axios = 1;\n")
    assert "fs" in script_error("axios.VERSION;\nvar fs = 1;\n")
    assert sandbox_script("axios.VERSION;\ncfg = {url: 'u'};\naxios(cfg);\n").startswith("var cfg;\n")
    assert sandbox_script("axios.get(u);\n") == "axios.get(u);\n"  # read before any assignment: no global


# ---------------------------------------------------------------- mock.js's JavaScript


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_decode_uri_component_inverts_percent_encoding(text):
    assert decode_uri_component(quote(text, safe="")) == text


@settings(max_examples=200)
@given(
    url=st.text(alphabet="abc%/?&=+#:[]{}ü0123456789AF", max_size=30),
    body=st.text(alphabet='abc%=&[]{}":,+ 01ü', max_size=30),
)
def test_mock_log_raises_only_what_mock_js_throws(url, body):
    """Any URL and body text gives a logged config or a MockError (mock.js threw), nothing else."""
    raw = {
        "method": "post",
        "url": {"type": "string", "text": "https://h" + url},
        "params": {"present": False},
        "data": {"type": "string", "falsy": not body, "text": body},
        "headers": {},
        "rest": {},
    }
    try:
        out = mock_log(raw)
    except MockError:
        return
    assert isinstance(out, dict) and out["url"].startswith("https://h")
    json.dumps(out)  # what the config file holds is JSON


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_decode_and_json_parse_equal_node():
    """decodeURIComponent and JSON.parse against Node's own, on inputs that reach their edges."""
    inputs = [
        "a%20b",
        "%E2%82%AC",
        "%F0%9F%98%80",
        "%",
        "%2",
        "%zz",
        "%C3",
        "%C3%28",
        "%ED%A0%80",
        "%F4%90%80%80",
        "%C0%AF",
        "%e2%82%ac",
        "a+b",
        "%2B",
        "%00",
        "%7F%80",
    ]
    json_inputs = [
        '{"a": 1.0, "b": 12345678901234567890}',
        '{"a": NaN}',
        '{"a": 1e400}',
        '{"a": -0}',
        '{"a":\n 1}',
        '{"a": 1,}',
        '{"__proto__": 1}',
        '{"a": 1e21, "b": 1.5e-3}',
    ]
    script = (
        "const ins = JSON.parse(process.argv[1]); const js = JSON.parse(process.argv[2]);"
        "const out = ins.map(s => { try { return decodeURIComponent(s); } catch (e) { return null; } });"
        "const jout = js.map(s => { try { return JSON.stringify(JSON.parse(s)); } catch (e) { return null; } });"
        "process.stdout.write(JSON.stringify([out, jout]));"
    )
    proc = subprocess.run(
        ["node", "-e", script, json.dumps(inputs), json.dumps(json_inputs)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    node_decoded, node_json = json.loads(proc.stdout)
    for text, want in zip(inputs, node_decoded, strict=True):
        try:
            got = decode_uri_component(text)
        except MockError:
            got = None
        assert got == want, text
    for text, want in zip(json_inputs, node_json, strict=True):
        try:
            got = js_json_parse(text)
        except MockError:
            got = None
        assert got == (None if want is None else json.loads(want)), text


# ---------------------------------------------------------------- the comparison


def test_path_matching_follows_find_path_in_spec(wapii_specs):
    from callbench.tracks.webapi.upstream_compare import published_spec

    slack = published_spec(wapii_specs["slack"])
    assert [p.url for p in slack.find_paths("https://slack.com/api/chat.postMessage")] == [
        "/chat.postMessage"
    ]
    # the template is a regular expression: its "." matches any character
    assert [p.url for p in slack.find_paths("https://slack.com/api/chatXpostMessage")] == [
        "/chat.postMessage"
    ]
    assert slack.find_paths("https://slack.com/api/chat.postMessage/") == []  # exact: no trailing slash
    assert [p.url for p in slack.find_paths("/chat.postMessage")] == [
        "/chat.postMessage"
    ]  # no server: still a path
    asana = published_spec(wapii_specs["asana"])
    cfg = {"url": "https://app.asana.com/api/1.0/tasks/123/stories"}
    paths = asana.add_path_params(cfg)
    assert paths[0].url == "/tasks/{task_gid}/stories" and cfg["path_params"] == {"task_gid": "123"}
    # fewest parameters first: a literal segment beats a parameter
    assert asana.find_paths("https://app.asana.com/api/1.0/users/me")[0].url == "/users/{user_gid}"


def test_legality_follows_validate_argument(wapii_specs):
    from callbench.tracks.webapi.upstream_compare import published_spec

    asana = published_spec(wapii_specs["asana"])
    (path,) = [p for p in asana.paths if p.url == "/attachments"]
    assert asana.legal("Accept", "headers", "get", path)
    assert not asana.legal("Content-Type", "headers", "get", path) and asana.legal(
        "Content-Type", "headers", "post", path
    )
    assert asana.legal("Authorization", "headers", "get", path)  # http/oauth2 schemes
    assert not asana.legal("authorization", "headers", "get", path)  # exact names
    assert asana.legal("parent", "params", "get", path)
    assert not asana.legal("parent", "headers", "get", path)  # a parameter in another place
    assert not asana.legal("zzz", "params", "get", path)


def test_published_error_counts_expected_arguments(wapii_specs):
    from callbench.tracks.webapi.upstream_compare import published_error

    expected = {
        "method": "get",
        "url": "https://app.asana.com/api/1.0/tasks/1/stories",
        "headers": {"Accept": "x", "Authorization": "Bearer t"},
        "params": {"limit": 5},
    }
    v = published_error("runtime_error", expected, wapii_specs["asana"])
    assert v.expected_counts == {"headers": 1, "params": 1, "path_params": 1}  # Accept not counted


def test_dropped_samples_leave_every_figure():
    scored = SampleVerdict(url="correct", method="correct", endpoint="correct", sample="correct")
    dropped = SampleVerdict(sample="dropped", dropped=True, expected_counts={"params": 2})
    m = aggregate([scored, dropped, dropped], "compat")
    assert m["n"] == 1 and m["correct_implementations_t"] == 1.0 and m["dropped_samples"] == 2
    assert m["argument_counts"]["expected_t"] == 0
    assert SampleVerdict.from_dict(dropped.as_dict()).dropped
    assert "dropped" not in scored.as_dict()  # other rows are stored as before
