"""The stand-in records the request URL's path as axios sends it.

Real axios (1.x, Node http adapter) sends the path exactly as the code wrote it, never decoded:
an ``encodeURIComponent``'ed path value keeps its ``%2F`` and stays one segment. Node's URL
parser then percent-encodes the characters that cannot appear raw in a path (space, ``"``,
``<``, ``>``, backtick, ``{``, ``}``, non-ASCII); the stand-in records the path as written,
before that step (gold URLs are written with such characters raw), so the record equals the
wire path after :func:`_whatwg_path`. The expected values below were taken from axios 1.x in
Node 20 against a local HTTP server (``req.url``); the last test repeats that comparison live
when ``CALLBENCH_REAL_AXIOS`` names a directory holding ``node_modules/axios``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest

from callbench.sandbox import JsSandbox

BASE = "http://h.example"



def _whatwg_path(url: str) -> str:
    """What Node's URL parser makes of a path: the characters it cannot send raw encoded."""
    return "".join(quote(c, safe="") if (ord(c) <= 0x20 or c in '"<>`{}\x7f' or ord(c) > 0x7F) else c for c in url)


# (URL the code writes, path + query real axios sent)
CASES = [
    ("/r/' + encodeURIComponent('subscriptions/abc/rg') + '/events", "/r/subscriptions%2Fabc%2Frg/events"),
    ("/p%20q/r", "/p%20q/r"),
    ("/p q/\u00fc/{id}/\"x\"", "/p%20q/%C3%BC/%7Bid%7D/%22x%22"),
    ("/a%25b/c%3Fd/e%23f", "/a%25b/c%3Fd/e%23f"),
    ("/x%2fy", "/x%2fy"),
]


@pytest.fixture(scope="module")
def sb():
    with JsSandbox(timeout_s=1.0) as s:
        yield s


def _request(sb: JsSandbox, code: str) -> dict:
    r = sb.run(code)
    assert r.status == "ok", (r.status, r.error)
    assert r.request is not None
    return r.request


@pytest.mark.parametrize(("written", "wire"), CASES)
def test_path_recorded_as_on_the_wire(sb, written, wire):
    code = "axios.get('" + BASE + written.replace('"', '\\"') + "');"
    assert _whatwg_path(_request(sb, code)["url"]) == BASE + wire


def test_path_kept_as_written(sb):
    assert _request(sb, "axios.get('https://h.example/calendars/<calendarId>/{x} y');")["url"] == (
        "https://h.example/calendars/<calendarId>/{x} y"
    )


def test_encoded_slash_path_value_stays_one_segment(sb):
    code = (
        "const id = encodeURIComponent('subscriptions/1/resourceGroups/g');\n"
        "axios.get(`https://management.azure.com/${id}/providers/Microsoft.ResourceHealth/events`, "
        "{ params: { 'api-version': '2018-07-01-preview' } });"
    )
    r = _request(sb, code)
    assert r["url"] == (
        "https://management.azure.com/subscriptions%2F1%2FresourceGroups%2Fg/providers/Microsoft.ResourceHealth/events"
    )
    assert r["params"] == {"api-version": "2018-07-01-preview"}


def test_query_values_still_decoded(sb):
    # params are recorded as the values the server decodes: an encodeURIComponent'ed value is
    # sent double-encoded by axios (q=a%252Fb), so the server reads the encoded text
    r = _request(sb, "axios.get('" + BASE + "/v?s=a%2Fb', { params: { q: encodeURIComponent('a/b') } });")
    assert r["url"] == BASE + "/v"
    assert r["params"] == {"s": "a/b", "q": "a%2Fb"}


def test_relative_url_and_base_url(sb):
    assert _request(sb, "axios.get('/a%20b/c%2Fd');")["url"] == "/a%20b/c%2Fd"
    r = _request(sb, "axios.get('x%2Fy', { baseURL: 'https://h.example/v1/' });")
    assert r["url"] == "https://h.example/v1/x%2Fy"


def test_scorer_reads_encoded_slash_as_one_path_value(sb):
    from callbench.specs.openapi import load_spec

    spec_text = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://h.example"}],
        "paths": {
            "/{resourceUri}/events": {
                "get": {
                    "parameters": [
                        {"name": "resourceUri", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    with tempfile.TemporaryDirectory() as tmp:  # removed again: the suite leaves no file behind
        return_spec = Path(tmp) / "callbench_url_encoding_spec.json"
        return_spec.write_text(json.dumps(spec_text))
        spec = load_spec(return_spec)
    r = _request(sb, "axios.get(`https://h.example/${encodeURIComponent('a/b/c')}/events`);")
    m = spec.match("get", r["url"])
    assert m is not None and m.path_params == {"resourceUri": "a/b/c"}


@pytest.mark.skipif(
    not os.environ.get("CALLBENCH_REAL_AXIOS") or shutil.which("node") is None,
    reason="set CALLBENCH_REAL_AXIOS to a directory with node_modules/axios to compare with real axios",
)
def test_matches_real_axios(sb):
    script = textwrap.dedent(
        """
        const http = require('http'); const axios = require('axios');
        const cases = JSON.parse(process.argv[process.argv.length - 1]);
        const srv = http.createServer((req, res) => res.end(req.url));
        srv.listen(0, async () => {
          const base = 'http://127.0.0.1:' + srv.address().port;
          const out = [];
          for (const c of cases) out.push((await axios.get(base + eval("'" + c + "'"))).data);
          console.log(JSON.stringify(out)); srv.close();
        });
        """
    )
    cases = [w.replace('"', '\\"') for w, _ in CASES]
    got = subprocess.run(
        ["node", "-e", script, json.dumps(cases)],
        cwd=os.environ["CALLBENCH_REAL_AXIOS"], capture_output=True, text=True, timeout=60, check=True,
    )
    assert json.loads(got.stdout) == [wire for _, wire in CASES]
    for written, wire in CASES:
        code = "axios.get('" + BASE + written.replace('"', '\\"') + "');"
        assert _whatwg_path(_request(sb, code)["url"]) == BASE + wire


# (body the code passes with Content-Type application/json, what the server decodes). Real axios
# 1.x sent: 'project-429' -> "project-429" (a string that is no JSON text is JSON-encoded),
# 5 -> 5, '{"a":1}' -> {"a":1}, '"q"' -> "q" (checked against axios in Node 20, req body).
JSON_BODIES = [("'project-429'", "project-429"), ("5", 5), ("true", True), ("'{\"a\":1}'", {"a": 1}), ("'\"q\"'", "q")]


@pytest.mark.parametrize(("written", "decoded"), JSON_BODIES)
def test_json_body_recorded_as_the_server_decodes_it(sb, written, decoded):
    code = "axios.post('" + BASE + "/x', " + written + ", { headers: { 'Content-Type': 'application/json' } });"
    assert _request(sb, code)["data"] == decoded


def test_text_body_without_json_media_type_stays_text(sb):
    code = "axios.post('" + BASE + "/x', 'project-429', { headers: { 'Content-Type': 'text/plain' } });"
    assert _request(sb, code)["data"] == "project-429"
