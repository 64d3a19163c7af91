"""The axios stand-in against real axios (issue 26, part 3).

Real ``axios`` 1.21.1 (the version WAPIIBench's scorer figures were made with) and
``axios-mock-adapter`` 2.1.0 are installed from npm into the user cache once (reused later; the
test skips with the reason when node/npm is missing or the install fails offline). Every snippet
-- the gold program of each of the 395 WAPIIBench tasks and the edge cases below -- runs in the
sandbox and under Node with real axios (``real_axios_recorder.js``, one Node process for all),
and three things must agree, field by field:

1. ``raw``: the config axios hands its adapter, as the stand-in describes it (what
   axios-mock-adapter's reply function gets, and so what WAPIIBench's mock.js logs);
2. ``sent``: what axios' Node http adapter writes to a socket (a local HTTP server records
   method, request target, headers and body), against the stand-in's ``sent`` view;
3. whether the promise each axios call returns rejects.

The differences that remain are choices, each listed in docs/webapi-scoring.md and pinned here
(``KNOWN`` below: a snippet may differ only in the fields its entry names).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from callbench.sandbox import JsSandbox

HERE = Path(__file__).resolve().parent
AXIOS_VERSION = "1.21.1"
MOCK_ADAPTER_VERSION = "2.1.0"
# Headers the recorder sees that axios does not choose: Node's own.
NODE_HEADERS = {"host", "connection", "transfer-encoding"}
_BOUNDARY = re.compile(r"axios-1\.21\.1-boundary-[-_0-9A-Za-z]{25}|-{26}[0-9a-f]{24}")


def real_axios_dir() -> Path:
    """node_modules with the pinned axios and axios-mock-adapter, installed once into the cache."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed: the differential test needs real axios from npm")
    from callbench.data.paths import cache_dir

    root = Path(os.environ.get("CALLBENCH_REAL_AXIOS") or cache_dir() / "npm" / f"axios-{AXIOS_VERSION}")
    marker = root / "node_modules" / "axios" / "package.json"
    if marker.is_file() and json.loads(marker.read_text())["version"] == AXIOS_VERSION:
        return root
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text('{"name": "callbench-real-axios", "private": true}')
    cmd = [
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        f"axios@{AXIOS_VERSION}",
        f"axios-mock-adapter@{MOCK_ADAPTER_VERSION}",
    ]
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of axios timed out (offline?)")
    if proc.returncode != 0 or not marker.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        pytest.skip(f"npm install of axios@{AXIOS_VERSION} failed (offline?): {tail[0]}")
    return root


H = "const axios = require('axios');\n"
U = "https://api.example.com/v1"

# Edge cases beyond the gold programs: id -> program.
EDGE_CASES: dict[str, str] = {
    # credentials
    "basic_auth": H + f"axios.get('{U}/me', {{auth: {{username: 'u', password: 'p'}}}});",
    "basic_auth_replaces_bearer": H
    + f"axios.get('{U}/me', {{auth: {{username: 'u', password: 'p'}}, headers: {{Authorization: 'Bearer t'}}}});",
    "basic_auth_lowercase_header": H
    + f"axios.get('{U}/me', {{auth: {{username: 'ü', password: ''}}, headers: {{authorization: 'Bearer t'}}}});",
    "basic_auth_only_username": H + f"axios.get('{U}/me', {{auth: {{username: 'u'}}}});",
    "userinfo_in_url": H + "axios.get('https://u%40x:p%3Aq@api.example.com/v1/me');",
    "bearer_lowercase": H + f"axios.get('{U}/me', {{headers: {{authorization: 'Bearer t'}}}});",
    "header_case_duplicates": H + f"axios.get('{U}/me', {{headers: {{'X-Key': 'a', 'x-key': 'b'}}}});",
    "header_value_blanks": H
    + f"axios.get('{U}/me', {{headers: {{'X-A': '  padded  ', 'X-B': 12, 'X-C': true}}}});",
    "header_value_control_chars": H + f"axios.get('{U}/me', {{headers: {{'X-A': 'a\\u0001b'}}}});",
    "header_null_false": H
    + f"axios.get('{U}/me', {{headers: {{'X-A': null, 'X-B': false, 'X-C': undefined}}}});",
    "header_array_value": H + f"axios.get('{U}/me', {{headers: {{'X-A': ['a', 'b']}}}});",
    "headers_method_bucket": H
    + f"axios.get('{U}/me', {{headers: {{common: {{'X-C': '1'}}, get: {{'X-G': '2'}}, post: {{'X-P': '3'}}}}}});",
    "header_named_like_method": H + f"axios.get('{U}/me', {{headers: {{get: 'literal'}}}});",
    "accept_override": H + f"axios.get('{U}/me', {{headers: {{Accept: 'text/csv'}}}});",
    "content_type_lowercase": H
    + f"axios.post('{U}/x', {{a: 1}}, {{headers: {{'content-type': 'application/json'}}}});",
    # query strings
    "query_flag": H + f"axios.get('{U}/items?flag');",
    "query_bare_question_mark": H + f"axios.get('{U}/items?');",
    "url_blanks_around": H + f"axios.get(' {U}/items? ', {{params: {{a: 1}}}});",
    "url_newline_inside": H + f"axios.get('{U}/it\\nems?b=2\\t');",
    "query_repeated_keys": H + f"axios.get('{U}/items?tag=a&tag=b&x=1');",
    "query_fragment": H + f"axios.get('{U}/items?a=1#frag');",
    "fragment_only": H + f"axios.get('{U}/items#top', {{params: {{a: 1}}}});",
    "query_plus_and_space": H + f"axios.get('{U}/search?q=a+b c');",
    "query_unicode": H + f"axios.get('{U}/search?q=Zürich&emoji=😀');",
    "query_encoded": H + f"axios.get('{U}/search?q=a%20b%2Bc&d=%41');",
    "query_quote": H + f'axios.get("{U}/search?q=it\'s<b>");',
    "query_and_params": H + f"axios.get('{U}/items?a=1', {{params: {{b: 2}}}});",
    "query_same_key_in_params": H + f"axios.get('{U}/items?a=1', {{params: {{a: 2}}}});",
    "params_urlsearchparams": H
    + f"axios.get('{U}/items', {{params: new URLSearchParams([['t', 'a'], ['t', 'b'], ['q', 'x y']])}});",
    "params_urlsearchparams_string": H
    + f"axios.get('{U}/items', {{params: new URLSearchParams('a=1&a=2&b=%20')}});",
    "params_array": H + f"axios.get('{U}/items', {{params: {{ids: [1, 2, 3]}}}});",
    "params_nested_array_objects": H + f"axios.get('{U}/items', {{params: {{f: [{{a: 1}}, {{b: 2}}]}}}});",
    "params_nested_object": H
    + f"axios.get('{U}/items', {{params: {{filter: {{name: 'x', tags: ['a']}}}}}});",
    "params_date": H
    + f"axios.get('{U}/items', {{params: {{since: new Date(Date.UTC(2024, 0, 2, 3, 4, 5))}}}});",
    "params_null_undefined": H
    + f"axios.get('{U}/items', {{params: {{a: null, b: undefined, c: 0, d: false, e: ''}}}});",
    "params_special_chars": H
    + f"axios.get('{U}/items', {{params: {{q: 'a&b=c d+e/f?g#h', k: 'x:y$z,w[0]'}}}});",
    "params_unicode": H + f"axios.get('{U}/items', {{params: {{city: 'Zürich', e: '😀'}}}});",
    "params_keys_with_brackets": H
    + f"axios.get('{U}/items', {{params: {{'a[]': [1, 2], 'b{{}}': {{c: 1}}}}}});",
    "params_string": H + f"axios.get('{U}/items', {{params: 'a=1'}});",
    "params_null": H + f"axios.get('{U}/items', {{params: null}});",
    "params_empty": H + f"axios.get('{U}/items', {{params: {{}}}});",
    "params_serializer_fn": H
    + f"axios.get('{U}/items', {{params: {{a: [1, 2]}}, paramsSerializer: p => 'a=' + p.a.join('|')}});",
    "params_serializer_serialize": H
    + f"axios.get('{U}/items', {{params: {{a: 1, b: 2}}, paramsSerializer: {{serialize: p => Object.keys(p).map(k => k + '-' + p[k]).join(';')}}}});",
    "params_serializer_encode": H
    + f"axios.get('{U}/items', {{params: {{q: 'a b'}}, paramsSerializer: {{encode: v => String(v).toUpperCase()}}}});",
    "params_serializer_indexes_true": H
    + f"axios.get('{U}/items', {{params: {{a: [1, 2]}}, paramsSerializer: {{indexes: true}}}});",
    "params_serializer_indexes_null": H
    + f"axios.get('{U}/items', {{params: {{a: [1, 2]}}, paramsSerializer: {{indexes: null}}}});",
    "params_serializer_dots": H
    + f"axios.get('{U}/items', {{params: {{a: {{b: 1}}}}, paramsSerializer: {{dots: true}}}});",
    "params_key_constructor": H + f"axios.get('{U}/items', {{params: {{constructor: 'x', a: 1}}}});",
    # paths
    "dot_segments": H + "axios.get('https://api.example.com/v1/a/../b/./c');",
    "dot_segments_encoded": H + "axios.get('https://api.example.com/v1/a/%2e%2e/b/%2E/c');",
    "dot_segments_above_root": H + "axios.get('https://api.example.com/../../x');",
    "trailing_dot_segment": H + "axios.get('https://api.example.com/v1/a/..');",
    "backslash_path": H + "axios.get('https://api.example.com\\\\v1\\\\x');",
    "placeholder_path": H
    + "axios.get('https://www.googleapis.com/calendar/v3/calendars/<calendarId>/events');",
    "space_and_braces_path": H + "axios.get('https://api.example.com/v1/p q/{id}/\"x\"/`t`');",
    "unicode_path": H + "axios.get('https://api.example.com/v1/Zürich/😀');",
    "encoded_slash_path": H
    + "axios.get('https://api.example.com/v1/r/' + encodeURIComponent('a/b c') + '/x');",
    "percent_malformed_path": H + "axios.get('https://api.example.com/v1/100%/x%zz');",
    "upper_case_host_port": H + "axios.get('HTTPS://API.Example.COM:443/v1/x');",
    "explicit_port": H + "axios.get('http://api.example.com:8080/v1/x');",
    "trailing_slash": H + f"axios.get('{U}/items/');",
    "root_url": H + "axios.get('https://api.example.com');",
    "leading_whitespace_url": H + "axios.get('  https://api.example.com/v1/x  ');",
    "relative_url_no_base": H + "axios.get('/v1/items');",
    "missing_slashes": H + "axios.get('https:api.example.com/v1/x');",
    "ftp_url": H + "axios.get('ftp://api.example.com/x');",
    # baseURL
    "base_url_join": H + f"axios.get('/items', {{baseURL: '{U}'}});",
    "base_url_trailing_slash": H + f"axios.get('items', {{baseURL: '{U}/'}});",
    "base_url_double_slashes": H + f"axios.get('//items', {{baseURL: '{U}//'}});",
    "base_url_absolute_wins": H + f"axios.get('https://other.example.com/x', {{baseURL: '{U}'}});",
    "base_url_allow_absolute_false": H
    + f"axios.get('https://other.example.com/x', {{baseURL: '{U}', allowAbsoluteUrls: false}});",
    "base_url_empty_url": H + f"axios.get('', {{baseURL: '{U}/items'}});",
    "create_defaults": H
    + f"const api = axios.create({{baseURL: '{U}', headers: {{Authorization: 'Bearer t', 'X-Common': '1'}}, params: {{key: 'k'}}, timeout: 5000}});\n"
    "api.get('/items', {params: {a: 1}, headers: {'X-Req': '2'}});",
    "create_then_default_header": H
    + f"const api = axios.create({{baseURL: '{U}'}});\napi.defaults.headers.common['Authorization'] = 'Bearer z';\napi.post('/items', {{a: 1}});",
    "global_default_header": H
    + f"axios.defaults.headers.common['Authorization'] = 'Bearer g';\naxios.defaults.headers.post['X-Post'] = 'p';\naxios.post('{U}/x', {{a: 1}});",
    "default_base_url": H + f"axios.defaults.baseURL = '{U}';\naxios.get('/x');",
    # interceptors and transforms
    "interceptor_sync_header": H
    + f"axios.interceptors.request.use(c => {{ c.headers.Authorization = 'Bearer i'; return c; }}, null, {{synchronous: true}});\naxios.get('{U}/x');",
    "interceptor_async_params": H
    + f"axios.interceptors.request.use(async c => {{ c.params = {{...(c.params || {{}}), added: 1}}; return c; }});\naxios.get('{U}/x', {{params: {{a: 1}}}});",
    "interceptor_order": H
    + f"axios.interceptors.request.use(c => {{ c.headers['X-Order'] = (c.headers['X-Order'] || '') + '1'; return c; }});\n"
    f"axios.interceptors.request.use(c => {{ c.headers['X-Order'] = (c.headers['X-Order'] || '') + '2'; return c; }});\naxios.get('{U}/x');",
    "interceptor_throws": H
    + f"axios.interceptors.request.use(() => {{ throw new Error('no'); }});\naxios.get('{U}/x');",
    "interceptor_set_method_url": H
    + f"axios.interceptors.request.use(c => {{ c.method = 'post'; c.url = c.url + '/more'; c.data = {{z: 1}}; return c; }});\naxios.get('{U}/x');",
    "transform_request_custom": H
    + f"axios.post('{U}/x', {{a: 1}}, {{transformRequest: [(d, h) => {{ h['X-T'] = '1'; return 'a=' + d.a; }}]}});",
    "transform_request_append_default": H
    + f"axios.post('{U}/x', {{a: 1}}, {{transformRequest: [d => ({{...d, b: 2}})].concat(axios.defaults.transformRequest)}});",
    "transform_request_identity_object": H
    + f"axios.post('{U}/x', {{a: 1}}, {{transformRequest: [d => d]}});",
    # bodies
    "json_body": H + f"axios.post('{U}/x', {{a: 1, b: [true, null], c: {{d: 'é'}}}});",
    "json_string_body": H + f"axios.post('{U}/x', JSON.stringify({{a: 1}}));",
    "json_string_body_json_ct": H
    + f"axios.post('{U}/x', '  {{\"a\": 1}}  ', {{headers: {{'Content-Type': 'application/json'}}}});",
    "plain_string_json_ct": H
    + f"axios.post('{U}/x', 'hello', {{headers: {{'Content-Type': 'application/json'}}}});",
    "plain_string_body": H + f"axios.post('{U}/x', 'a=1&b=2');",
    "broken_json_string_body": H + f"axios.post('{U}/x', '{{a: 1}}');",
    "array_body": H + f"axios.post('{U}/x', [1, 2, 3]);",
    "number_body": H + f"axios.post('{U}/x', 5);",
    "false_body": H + f"axios.post('{U}/x', false);",
    "null_body": H + f"axios.post('{U}/x', null);",
    "empty_string_body": H + f"axios.post('{U}/x', '');",
    "no_body_post": H + f"axios.post('{U}/x');",
    "urlsearchparams_body": H + f"axios.post('{U}/x', new URLSearchParams({{a: '1', b: 'x y&z'}}));",
    "urlencoded_object_body": H
    + f"axios.post('{U}/x', {{a: 1, b: [1, 2], c: {{d: 'e f'}}}}, {{headers: {{'Content-Type': 'application/x-www-form-urlencoded'}}}});",
    "multipart_object_body": H
    + f"axios.post('{U}/x', {{a: 1, b: 'two'}}, {{headers: {{'Content-Type': 'multipart/form-data'}}}});",
    "web_formdata_body": H
    + f"const f = new FormData();\nf.append('a', '1');\nf.append('b', 'line\\nbreak');\naxios.post('{U}/x', f);",
    "web_formdata_json_ct": H
    + f"const f = new FormData();\nf.append('a', '1');\nf.append('a', '2');\naxios.post('{U}/x', f, {{headers: {{'Content-Type': 'application/json'}}}});",
    "web_formdata_user_boundary": H
    + f"const f = new FormData();\nf.append('a', '1');\naxios.post('{U}/x', f, {{headers: {{'Content-Type': 'multipart/form-data; boundary=myboundary1234'}}}});",
    "package_formdata_body": H
    + f"const FormData = require('form-data');\nconst f = new FormData();\nf.append('a', 1);\nf.append('b', 'two');\nf.append('q\"x', 'quoted');\naxios.post('{U}/x', f);",
    "package_formdata_headers": H
    + f"const FormData = require('form-data');\nconst f = new FormData();\nf.append('a', 'x');\naxios.post('{U}/x', f, {{headers: f.getHeaders()}});",
    "post_form_object": H + f"axios.postForm('{U}/x', {{a: 1, b: [1, 2]}});",
    "put_patch_delete_data": H + f"axios.delete('{U}/x', {{data: {{id: 1}}}});",
    "put_json": H + f"axios.put('{U}/x/1', {{a: 1}});",
    "patch_json": H + f"axios.patch('{U}/x/1', {{a: 1}});",
    "head_options": H + f"axios.head('{U}/x');",
    "options_method": H + f"axios.options('{U}/x');",
    "buffer_body": H + f"axios.post('{U}/x', Buffer.from('bytes é'));",
    # call forms
    "axios_config": H + f"axios({{method: 'POST', url: '{U}/x', data: {{a: 1}}, params: {{b: 2}}}});",
    "axios_url_config": H + f"axios('{U}/x', {{method: 'put', data: 'raw'}});",
    "axios_request": H + f"axios.request({{url: '{U}/x', method: 'delete'}});",
    "axios_default_method": H + f"axios({{url: '{U}/x'}});",
    "axios_unknown_method": H + f"axios({{url: '{U}/x', method: 'trace'}});",
    "axios_query_method": H + f"axios.query('{U}/x', {{q: 1}});",
    "axios_path_params_key": H + f"axios.get('{U}/x', {{path_params: {{id: 1}}}});",
    "two_requests": H + f"axios.get('{U}/a');\naxios.get('{U}/b', {{params: {{n: 2}}}});",
    "cancel_signal": H + f"axios.get('{U}/x', {{signal: AbortSignal.abort()}});",
    "cancel_token": H
    + f"const s = axios.CancelToken.source();\ns.cancel('stop');\naxios.get('{U}/x', {{cancelToken: s.token}});",
    "awaited_then_second": H
    + f"(async () => {{ const r = await axios.get('{U}/a'); await axios.post('{U}/b', {{ok: typeof r.status}}); }})();",
    "get_uri_not_request": H + f"axios.getUri({{url: '{U}/x', params: {{a: 1}}}});\naxios.get('{U}/y');",
    "url_object": H + "axios.get(new URL('https://api.example.com/v1/x?a=1'));",
    "query_flag_and_params": H + f"axios.get('{U}/items?flag', {{params: {{a: [1, 2]}}}});",
    "serializer_urlsearchparams": H
    + f"axios.get('{U}/items', {{params: {{q: 'a b', n: 1}}, paramsSerializer: {{serialize: p => new URLSearchParams(p).toString()}}}});",
    "default_auth_header_and_auth": H
    + f"axios.defaults.headers.common.Authorization = 'Bearer d';\naxios.get('{U}/x', {{auth: {{username: 'a', password: 'b'}}}});",
    "body_undefined_member": H + f"axios.post('{U}/x', {{a: undefined, b: null, c: 1}});",
    "body_nested_json": H
    + f"axios.put('{U}/x', {{data: {{name: 'High', color: 'red', list: [{{a: 1}}]}}}});",
    "body_date": H + f"axios.post('{U}/x', {{when: new Date(Date.UTC(2024, 5, 1))}});",
    "method_uppercase": H + f"axios.request({{url: '{U}/x', method: 'PATCH', data: {{a: 1}}}});",
    "params_boolean_number": H + f"axios.get('{U}/x', {{params: {{a: true, b: 1.5, c: -0, d: 1e21}}}});",
    "header_numeric_auth": H + f"axios.get('{U}/x', {{headers: {{Authorization: 123}}}});",
}


def _gold_programs(data_root: Path | None) -> dict[str, str]:
    if data_root is None:
        return {}
    from callbench.tracks.webapi.dataset import load_tasks
    from callbench.tracks.webapi.prompting import reference_completion, starter_code

    tasks = load_tasks(data_root / "wapiibench" / "data" / "synthetic" / "all" / "test_data_final.json")
    return {f"gold:{t.id}": starter_code(t, "full") + reference_completion(t, "full") for t in tasks}


def _normalize_boundaries(value):
    if isinstance(value, str):
        return _BOUNDARY.sub("<boundary>", value)
    if isinstance(value, list):
        return [_normalize_boundaries(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalize_boundaries(v) for k, v in value.items()}
    return value


def _sandbox_side(programs: dict[str, str]) -> tuple[dict[str, dict], dict[str, str]]:
    """Per id: what the stand-in recorded; and the code the sandbox ran (what Node runs too)."""
    out: dict[str, dict] = {}
    codes: dict[str, str] = {}
    ids = list(programs)
    with JsSandbox(timeout_s=2.0) as sb:
        for i, res in sb.run_many([(programs[k], None) for k in ids]):
            key = ids[i]
            codes[key] = res.code
            sent = []
            for r in res.sent:
                s = dict(r)
                if "error" not in s:
                    s = {
                        "method": s["method"],
                        "url": s["url"],
                        "target": s["target"],
                        "headers": s["headers"],
                        "body": s["body"] or "",
                    }
                sent.append(_normalize_boundaries(s))
            out[key] = {
                "status": res.status,
                "raw": [_normalize_boundaries(r) for r in res.raw],
                "sent": [s for s in sent if "error" not in s],
                "sent_errors": len([s for s in sent if "error" in s]),
                "rejected": len(res.rejected),
            }
    return out, codes


def _node_side(codes: dict[str, str], node_modules_parent: Path, tmp: Path) -> dict[str, dict]:
    snippets = [{"id": k, "code": c} for k, c in codes.items() if c]
    path = tmp / "snippets.json"
    path.write_text(json.dumps(snippets))
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    proc = subprocess.run(
        ["node", str(HERE / "real_axios_recorder.js"), str(path), str(node_modules_parent)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, dict] = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        sent = []
        for s in row["sent"]:
            headers = {k: v for k, v in s["headers"].items() if k.lower() not in NODE_HEADERS}
            url = s["protocol"] + "//" + s["host"] + s["target"]
            sent.append(
                _normalize_boundaries(
                    {
                        "method": s["method"],
                        "url": url,
                        "target": s["target"],
                        "headers": headers,
                        "body": s["body"],
                    }
                )
            )
        out[row["id"]] = {
            "raw": [_normalize_boundaries(r) for r in row["raw"]],
            "sent": sent,
            "rejected": len(row["raw_rejected"]),
            "sent_rejected": len(row["sent_rejected"]),
            "error": row["raw_error"],
        }
    return out


# axios-mock-adapter keeps handler lists only for its verbs: a request with another method
# (`trace`, `query`) is refused before any reply function sees its config (the promise rejects).
# The stand-in records the config; upstream_mock.mock_log refuses it the same way.
MOCK_REFUSES = frozenset({"axios_unknown_method", "axios_query_method"})


@pytest.fixture(scope="module")
def differential(tmp_path_factory):
    root = real_axios_dir()
    data = Path(os.environ.get("CALLBENCH_DATA_DIR") or HERE.parents[2] / "shared" / "data")
    has_data = (data / "wapiibench" / "data" / "synthetic" / "all" / "test_data_final.json").is_file()
    programs = {**_gold_programs(data if has_data else None), **EDGE_CASES}
    sandbox, codes = _sandbox_side(programs)
    node = _node_side(codes, root, tmp_path_factory.mktemp("real-axios"))
    return programs, sandbox, node, has_data


def _first_mismatch(ids, sandbox, node, field):
    for k in ids:
        if sandbox[k][field] != node[k][field]:
            return f"{k}: stand-in {sandbox[k][field]!r}\nreal axios {node[k][field]!r}"
    return None


def test_covers_gold_programs_and_edge_cases(differential):
    programs, sandbox, node, has_data = differential
    if not has_data:
        pytest.skip(
            "WAPIIBench data not found: only the edge cases ran (the gold programs need ../shared/data)"
        )
    assert len(programs) >= 300
    assert set(node) == set(programs)  # every snippet ran under Node too
    assert all(sandbox[k]["status"] == "ok" for k in programs if k.startswith("gold:"))
    assert sum(1 for k in programs if node[k]["sent"]) >= 300  # the recorder really saw requests


def test_adapter_config_equals_real_axios(differential):
    programs, sandbox, node, _ = differential
    ids = [k for k in programs if k not in MOCK_REFUSES]
    problem = _first_mismatch(ids, sandbox, node, "raw")
    assert problem is None, problem
    assert sum(1 for k in ids if sandbox[k]["raw"]) >= len(ids) - 10


def test_mock_adapter_refusals_are_the_known_ones(differential):
    from callbench.tracks.webapi.upstream_mock import MockError, mock_log

    programs, sandbox, node, _ = differential
    for k in MOCK_REFUSES:
        assert node[k]["raw"] == [] and node[k]["rejected"] == 1, k
        assert len(sandbox[k]["raw"]) == 1, k
        with pytest.raises(MockError):
            mock_log(sandbox[k]["raw"][0])


def test_sent_request_equals_what_real_axios_writes(differential):
    programs, sandbox, node, _ = differential
    problem = _first_mismatch(list(programs), sandbox, node, "sent")
    assert problem is None, problem


def test_sent_view_errors_where_node_sends_nothing(differential):
    programs, sandbox, node, _ = differential
    for k in programs:
        # sent mode: a request rejects before dispatch (both sides count it) or fails to go out
        assert sandbox[k]["sent_errors"] + sandbox[k]["rejected"] == node[k]["sent_rejected"], k
    assert sandbox["relative_url_no_base"]["sent_errors"] == 1
    assert sandbox["params_serializer_encode"]["sent_errors"] == 1


def test_rejections_equal_real_axios(differential):
    programs, sandbox, node, _ = differential
    ids = [k for k in programs if k not in MOCK_REFUSES]
    bad = [k for k in ids if sandbox[k]["rejected"] != node[k]["rejected"]]
    assert not bad, bad
    assert sandbox["cancel_signal"]["rejected"] == 1 and sandbox["interceptor_throws"]["rejected"] == 1


def test_edge_cases_show_what_real_axios_sends(differential):
    """Spot checks of the ``sent`` view (hand-written expectations; the comparison above shows
    they are real axios' too)."""
    _, sandbox, _, _ = differential
    sent = {k: v["sent"][0] for k, v in sandbox.items() if v["sent"]}
    assert sent["basic_auth_replaces_bearer"]["headers"]["Authorization"] == "Basic dTpw"  # base64("u:p")
    assert "authorization" not in {h.lower() for h in sent["basic_auth_lowercase_header"]["headers"]} - {
        "authorization"
    }
    assert sent["dot_segments"]["target"] == "/v1/b/c"
    assert sent["dot_segments_encoded"]["target"] == "/v1/b/c"
    assert sent["query_flag"]["target"] == "/v1/items?flag"
    assert sent["query_bare_question_mark"]["target"] == "/v1/items"
    assert sent["query_repeated_keys"]["target"] == "/v1/items?tag=a&tag=b&x=1"
    assert sent["params_urlsearchparams"]["target"] == "/v1/items?t=a&t=b&q=x+y"
    assert sent["params_serializer_fn"]["target"] == "/v1/items?a=1|2"
    assert sent["placeholder_path"]["target"] == "/calendar/v3/calendars/%3CcalendarId%3E/events"
    assert sent["params_array"]["target"] == "/v1/items?ids%5B%5D=1&ids%5B%5D=2&ids%5B%5D=3"
    assert sent["web_formdata_body"]["headers"]["Content-Type"] == "multipart/form-data; boundary=<boundary>"
    assert 'name="b"\r\n\r\nline\r\nbreak\r\n' in sent["web_formdata_body"]["body"]
