"""Specs in the wild (issue 14, part 2): what real OpenAPI specs do that callbench's own four do
not. Each hand-built mini spec checks that the loader's matching, the grammar's acceptance
(``check_invocation``) and the scorer judge the same calls the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llguidance")

from callbench.constrain.check import check_invocation  # noqa: E402
from callbench.constrain.webapi_grammar import GrammarOptions, build_webapi_grammar  # noqa: E402
from callbench.specs.openapi import build_spec  # noqa: E402
from callbench.tracks.webapi.scoring import compare_requests  # noqa: E402


def _spec(paths: dict[str, Any], servers: list[Any] | None = None, **extra: Any) -> Any:
    doc: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": "wild", "version": "1"}, "paths": paths}
    if servers is not None:
        doc["servers"] = servers
    doc.update(extra)
    return build_spec(doc, Path("wild.json"))


def _q(name: str, schema: dict[str, Any], required: bool = False, **kw: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, **kw}


def _ok(spec: Any, code: str) -> bool:
    return check_invocation(spec, code).allowed


# ------------------------------------------------------------------ query string in the path key
ETHER = {
    "/?module=account&action=balance": {
        "get": {"parameters": [_q("address", {"type": "string"}, True)], "responses": {}}
    },
    "/?module=account&action=txlist": {"get": {"responses": {}}},
    "/alerts?lat={lat}&lon={lon}": {
        "get": {
            "parameters": [_q("lat", {"type": "number"}, True), _q("lon", {"type": "number"}, True)],
            "responses": {},
        }
    },
}


def test_query_in_path_key_matches_by_fixed_pairs():
    spec = _spec(ETHER, [{"url": "https://api.ether.io/api"}])
    base = "https://api.ether.io/api"
    assert spec.match("get", f"{base}/?module=account&action=balance&address=0x1").operation.path == (
        "/?module=account&action=balance"
    )
    # the fixed pairs may come from params as well (the same query on the wire)
    m = spec.match("get", f"{base}/", {"module": "account", "action": "txlist"})
    assert m.operation.path == "/?module=account&action=txlist"
    assert spec.match("get", f"{base}/?module=account&action=nope") is None
    assert spec.match("get", f"{base}/") is None
    # a templated query value ({lat}) needs the name, any value
    assert spec.match("get", f"{base}/alerts?lat=1&lon=2").operation.path == "/alerts?lat={lat}&lon={lon}"
    assert spec.match("get", f"{base}/alerts?lat=1") is None


def test_query_in_path_key_grammar():
    spec = _spec(ETHER, [{"url": "https://api.ether.io/api"}])
    u = "https://api.ether.io/api"
    assert _ok(spec, f"axios.get('{u}/?module=account&action=balance', {{params: {{address: '0x1'}}}})")
    assert _ok(spec, f"axios.get('{u}/?module=account&action=txlist')")
    assert not _ok(spec, f"axios.get('{u}/?module=account&action=balance')")  # address is required
    assert not _ok(spec, f"axios.get('{u}/?module=account&action=other')")
    assert not _ok(spec, f"axios.get('{u}/?module=account&action=txlist', {{params: {{address: '1'}}}})")
    assert _ok(spec, f"axios.get('{u}/alerts?lat=1.5&lon=-2')")
    assert not _ok(spec, f"axios.get('{u}/alerts?lat=north&lon=2')")  # lat is a number


def test_query_in_path_key_scoring_agrees():
    spec = _spec(ETHER, [{"url": "https://api.ether.io/api"}])
    u = "https://api.ether.io/api"
    expected = {"url": f"{u}/?module=account&action=balance", "method": "get", "params": {"address": "0x1"}}
    same_in_params = {
        "url": f"{u}/",
        "method": "get",
        "params": {"module": "account", "action": "balance", "address": "0x1"},
    }
    v = compare_requests(expected, same_in_params, spec)
    assert (v.endpoint, v.sample) == ("correct", "correct"), v.as_dict()
    v = compare_requests(expected, {**expected}, spec)
    assert v.sample == "correct"
    other = {"url": f"{u}/?module=account&action=txlist", "method": "get"}
    v = compare_requests(expected, other, spec)
    assert v.url == "wrong" and v.sample != "correct"
    nothing = {"url": f"{u}/?module=account&action=nope", "method": "get"}
    assert compare_requests(expected, nothing, spec).endpoint == "illegal"


# ------------------------------------------------------------------ fragments: AWS-style and labels
AWS = {
    "/#Action=DescribeInstances": {
        "get": {
            "parameters": [
                _q("Action", {"type": "string", "enum": ["DescribeInstances"]}, True),
                _q("MaxResults", {"type": "integer"}),
            ],
            "responses": {},
        }
    },
    "/#Action=RunInstances": {
        "get": {
            "parameters": [
                _q("Action", {"type": "string", "enum": ["RunInstances"]}, True),
                _q("ImageId", {"type": "string"}, True),
            ],
            "responses": {},
        }
    },
    "/files/{id}": {"put": {"responses": {}}},
    "/files/{id}#share": {
        "put": {
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {"type": "object", "properties": {"access": {"type": "string"}}}
                    }
                }
            },
            "responses": {},
        }
    },
}
REGION = {
    "url": "https://ec2.{region}.amazonaws.com",
    "variables": {"region": {"default": "us-east-1", "enum": ["us-east-1", "eu-west-1"]}},
}


def test_fragment_action_is_a_fixed_query_pair():
    spec = _spec(AWS, [REGION])
    u = "https://ec2.eu-west-1.amazonaws.com"
    assert spec.match("get", f"{u}/?Action=RunInstances&ImageId=x").operation.path == "/#Action=RunInstances"
    assert (
        spec.match("get", f"{u}/", {"Action": "DescribeInstances"}).operation.path
        == "/#Action=DescribeInstances"
    )
    assert _ok(spec, f"axios.get('{u}/?Action=DescribeInstances')")
    assert _ok(spec, f"axios.get('{u}/?Action=DescribeInstances', {{params: {{MaxResults: 5}}}})")
    assert _ok(spec, f"axios.get('{u}/?Action=RunInstances', {{params: {{ImageId: 'ami-1'}}}})")
    assert not _ok(spec, f"axios.get('{u}/?Action=RunInstances')")  # ImageId required
    assert not _ok(
        spec, f"axios.get('{u}/?Action=RunInstances', {{params: {{MaxResults: 5, ImageId: 'a'}}}})"
    )
    expected = {"url": f"{u}/", "method": "get", "params": {"Action": "RunInstances", "ImageId": "ami-1"}}
    actual = {"url": f"{u}/?Action=RunInstances", "method": "get", "params": {"ImageId": "ami-1"}}
    assert compare_requests(expected, actual, spec).sample == "correct"


def test_fragment_label_selects_its_operation():
    spec = _spec(AWS, [REGION])
    u = "https://ec2.us-east-1.amazonaws.com"
    assert spec.match("put", f"{u}/files/1#share").operation.path == "/files/{id}#share"
    assert spec.match("put", f"{u}/files/1").operation.path == "/files/{id}"
    assert _ok(spec, f"axios.put('{u}/files/1#share', {{access: 'open'}})")
    assert not _ok(spec, f"axios.put('{u}/files/1', {{access: 'open'}})")  # the plain PUT has no body keys
    assert _ok(spec, f"axios.put('{u}/files/1')")
    expected = {"url": f"{u}/files/1#share", "method": "put", "data": {"access": "open"}}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"
    # axios never sends a fragment, so the recorded request lacks the label: it is the same
    # request on the wire, the labelled template is among those it matches (after the plain one)
    plain = {"url": f"{u}/files/1", "method": "put", "data": {"access": "open"}}
    assert [m.template for m in spec.match_paths(plain["url"])] == ["/files/{id}", "/files/{id}#share"]
    assert compare_requests(expected, plain, spec).sample == "correct"
    assert compare_requests(expected, {**plain, "method": "post"}, spec).method == "illegal"


def _h(name: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": required, "schema": schema}


def _target_op(target: str, prop: str) -> dict[str, Any]:
    body = {"type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}
    return {
        "post": {
            "parameters": [_h("X-Amz-Target", {"type": "string", "enum": [target]}, True)],
            "requestBody": {"content": {"application/json": {"schema": body}}},
            "responses": {},
        }
    }


def test_header_label_selects_its_operation_by_the_header():
    # AWS JSON protocol: every operation POSTs to "/", the X-Amz-Target header names it
    spec = _spec(
        {
            "/#X-Amz-Target=Svc.AddTags": _target_op("Svc.AddTags", "Tags"),
            "/#X-Amz-Target=Svc.ListThings": _target_op("Svc.ListThings", "Filter"),
            "/2020/objects/{Key}#If-Match": {"delete": {"parameters": [_h("If-Match", {"type": "string"}, True)], "responses": {}}},
            "/2020/objects/{Key}": {"delete": {"responses": {}}},
        },
        [REGION],
    )
    u = "https://ec2.us-east-1.amazonaws.com"
    add = {"X-Amz-Target": "Svc.AddTags"}
    assert spec.match("post", f"{u}/", headers=add).operation.path == "/#X-Amz-Target=Svc.AddTags"
    assert spec.match("post", f"{u}/", headers={"x-amz-target": "Svc.ListThings"}).operation.path.endswith("ListThings")
    assert spec.match("post", f"{u}/", headers={"X-Amz-Target": "Svc.Other"}) is None
    assert spec.match("post", f"{u}/") is None  # headers unknown: a header label needs them
    # the URL naming the label still selects it (the grammar writes it)
    assert spec.match("post", f"{u}/#X-Amz-Target=Svc.ListThings").operation.path.endswith("ListThings")
    # a header named without a value: present or not
    assert spec.match("delete", f"{u}/2020/objects/k1", headers={"If-Match": "etag1"}).operation.path.endswith("#If-Match")
    assert spec.match("delete", f"{u}/2020/objects/k1", headers={}).operation.path == "/2020/objects/{Key}"
    # the scorer reads the recorded request's headers: a request as axios sends it is correct
    expected = {
        "url": f"{u}/#X-Amz-Target=Svc.AddTags",
        "method": "post",
        "headers": add,
        "data": {"Tags": "a"},
    }
    sent = {"url": f"{u}/", "method": "post", "headers": add, "data": {"Tags": "a"}}
    for mode in ("strict", "compat"):
        assert compare_requests(expected, sent, spec, mode).sample == "correct"
        other = {**sent, "headers": {"X-Amz-Target": "Svc.ListThings"}}
        v = compare_requests(expected, other, spec, mode)
        assert (v.url, v.sample) == ("wrong", "wrong")  # another operation, a legal one
        v = compare_requests(expected, {**sent, "headers": {}}, spec, mode)
        assert v.url == "illegal"  # no operation without the header


def test_bare_fragment_name_is_written_in_the_url_with_a_typed_value():
    # S3: DELETE /{Bucket}?cors is DeleteBucketCors, DELETE /{Bucket} is DeleteBucket
    spec = _spec(
        {
            "/{Bucket}": {"delete": {"responses": {}}},
            "/{Bucket}#cors": {"delete": {"parameters": [_q("cors", {"type": "boolean"}, True)], "responses": {}}},
        },
        [REGION],
    )
    u = "https://ec2.us-east-1.amazonaws.com"
    assert _ok(spec, f"axios.delete('{u}/b1?cors=true')")
    assert not _ok(spec, f"axios.delete('{u}/b1?cors=maybe')")  # the value keeps the schema
    assert _ok(spec, f"axios.delete('{u}/b1')")  # DeleteBucket
    assert spec.match("delete", f"{u}/b1?cors=true").operation.path == "/{Bucket}#cors"
    assert spec.match("delete", f"{u}/b1", {"cors": "true"}).operation.path == "/{Bucket}#cors"
    assert spec.match("delete", f"{u}/b1").operation.path == "/{Bucket}"


# ------------------------------------------------------------------ servers with variables
def test_server_variables_enum_and_free():
    servers = [
        {"url": "https://api.telegram.org/bot{token}", "variables": {"token": {"default": "123:ABC"}}},
        REGION,
        {"url": "/relative/v2"},
    ]
    spec = _spec({"/getMe": {"get": {"responses": {}}}}, servers)
    for url in (
        "https://api.telegram.org/bot987:XYZ/getMe",
        "https://ec2.eu-west-1.amazonaws.com/getMe",
        "/relative/v2/getMe",
    ):
        assert spec.match("get", url) is not None, url
        assert _ok(spec, f"axios.get('{url}')"), url
        v = compare_requests({"url": url, "method": "get"}, {"url": url, "method": "get"}, spec)
        assert v.sample == "correct"
    for url in ("https://ec2.mars-1.amazonaws.com/getMe", "https://api.telegram.org/getMe"):
        assert spec.match("get", url) is None, url
        assert not _ok(spec, f"axios.get('{url}')"), url


def test_path_and_operation_servers_are_accepted():
    paths = {
        "/a": {"servers": [{"url": "https://a.example.com"}], "get": {"responses": {}}},
        "/b": {"get": {"servers": [{"url": "https://b.example.com/v1"}], "responses": {}}},
    }
    spec = _spec(paths, [{"url": "https://root.example.com"}])
    assert spec.servers[0] == "https://root.example.com"
    for url in ("https://root.example.com/a", "https://a.example.com/a", "https://b.example.com/v1/b"):
        assert spec.match("get", url) is not None, url
        assert _ok(spec, f"axios.get('{url}')"), url


# ------------------------------------------------------------------ style / explode of array parameters
VIDEOS = {
    "/videos": {
        "get": {
            "parameters": [
                _q("part", {"type": "array", "items": {"type": "string", "enum": ["snippet", "id"]}}, True),
                _q("ids", {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, explode=False),
                _q(
                    "n", {"type": "array", "items": {"type": "integer"}}, style="pipeDelimited", explode=False
                ),
            ],
            "responses": {},
        }
    }
}


@pytest.mark.parametrize(
    ("params", "legal"),
    [
        ("{part: 'snippet'}", True),  # form + explode: one item alone
        ("{part: ['snippet', 'id']}", True),
        ("{part: 'snippet,id'}", False),  # with explode, 'snippet,id' is one (unknown) item
        ("{part: 'id', ids: 'a,b'}", True),  # explode false: comma-joined items
        ("{part: 'id', ids: 'a'}", True),
        ("{part: 'id', ids: 'a,c'}", False),
        ("{part: 'id', n: '1|2|3'}", True),
        ("{part: 'id', ids: 'a|b'}", False),  # form's delimiter is the comma
    ],
)
def test_style_explode_grammar_and_scorer_agree(params, legal):
    spec = _spec(VIDEOS, [{"url": "https://yt.example.com"}])
    url = "https://yt.example.com/videos"
    assert _ok(spec, f"axios.get('{url}', {{params: {params}}})") is legal
    import json
    import re

    pyparams = json.loads(re.sub(r"(\w+):", r'"\1":', params).replace("'", '"'))
    expected = {"url": url, "method": "get", "params": {"part": ["snippet", "id"]}}
    v = compare_requests(expected, {"url": url, "method": "get", "params": pyparams}, spec)
    assert (v.sample != "illegal") is legal, v.as_dict()


def test_style_explode_values_compare_on_the_wire():
    spec = _spec(VIDEOS, [{"url": "https://yt.example.com"}])
    url = "https://yt.example.com/videos"
    expected = {"url": url, "method": "get", "params": {"part": ["snippet"], "ids": ["a", "b"]}}
    actual = {"url": url, "method": "get", "params": {"part": "snippet", "ids": "a,b"}}
    assert compare_requests(expected, actual, spec).sample == "correct"


def test_swagger2_csv_arrays_default_to_comma_joined():
    doc = {
        "swagger": "2.0",
        "info": {"title": "s2", "version": "1"},
        "host": "s2.example.com",
        "schemes": ["https"],
        "paths": {
            "/x": {
                "get": {
                    "parameters": [
                        {
                            "name": "tags",
                            "in": "query",
                            "type": "array",
                            "items": {"type": "string", "enum": ["a", "b"]},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    spec = build_spec(doc, Path("s2.json"))
    assert spec.operations[0].parameters[0].delimiter == ","
    assert _ok(spec, "axios.get('https://s2.example.com/x', {params: {tags: 'a,b'}})")


# ------------------------------------------------------------------ grammar build time on a large spec
def test_many_paths_build():
    # was quadratic in the number of paths (shadowing checks); the time is a figure of
    # benchmarks/bounded_work_timings.py (grammar/many_paths), not a unit test's verdict
    paths = {f"/r{i % 50}/{{id}}/s{i}": {"get": {"responses": {}}} for i in range(1500)}
    paths.update({f"/r{i % 50}/x/s{i}": {"get": {"responses": {}}} for i in range(1500)})
    spec = _spec(paths, [{"url": "https://big.example.com"}])
    g = build_webapi_grammar(spec, setup="full", options=GrammarOptions(staged=False))  # one grammar
    assert g.lark and not g.staged
    # the literal path still shadows the templated one, in the grammar as in the loader
    assert spec.match("get", "https://big.example.com/r3/x/s3").operation.path == "/r3/x/s3"
    assert "~" in g.lark


def test_fragment_naming_a_header_is_a_label():
    target = {"name": "X-Amz-Target", "in": "header", "required": True}
    paths = {
        f"/#X-Amz-Target=Svc.{name}": {
            "post": {
                "parameters": [{**target, "schema": {"type": "string", "enum": [f"Svc.{name}"]}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {},
            }
        }
        for name in ("Create", "Delete")
    }
    spec = _spec(paths, [{"url": "https://svc.example.com"}])
    u = "https://svc.example.com"
    assert spec.match("post", f"{u}/#X-Amz-Target=Svc.Delete").operation.path == "/#X-Amz-Target=Svc.Delete"
    assert spec.match("post", f"{u}/") is None
    hdr = "{headers: {'X-Amz-Target': 'Svc.Delete'}}"
    assert _ok(spec, f"axios.post('{u}/#X-Amz-Target=Svc.Delete', {{}}, {hdr})")
    assert not _ok(spec, f"axios.post('{u}/#X-Amz-Target=Svc.Create', {{}}, {hdr})")  # enum of the other op
    assert not _ok(spec, f"axios.post('{u}/', {{}}, {hdr})")


def test_openapi31_external_ref_and_recursion(tmp_path):
    import json

    (tmp_path / "common.json").write_text(
        json.dumps(
            {
                "components": {
                    "schemas": {
                        "Node": {
                            "type": "object",
                            "properties": {
                                "name": {"type": ["string", "null"]},
                                "kind": {"const": "leaf"},
                                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                            },
                        }
                    }
                }
            }
        )
    )
    body = {"content": {"application/json": {"schema": {"$ref": "common.json#/components/schemas/Node"}}}}
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "x", "version": "1"},
        "servers": [{"url": "https://t.io"}],
        "paths": {"/nodes": {"post": {"requestBody": body, "responses": {}}}},
    }
    (tmp_path / "main.json").write_text(json.dumps(doc))
    from callbench.specs.openapi import load_spec

    spec = load_spec(tmp_path / "main.json")
    good = (
        "axios.post('https://t.io/nodes', {name: null, kind: 'leaf', children: [{name: 'a', children: []}]})"
    )
    assert _ok(spec, good)
    assert not _ok(spec, "axios.post('https://t.io/nodes', {kind: 'tree'})")
    assert not _ok(spec, "axios.post('https://t.io/nodes', {name: 3})")
    expected = {"url": "https://t.io/nodes", "method": "post", "data": {"kind": "leaf"}}
    v = compare_requests(expected, {**expected, "data": {"kind": "tree"}}, spec)
    assert v.sample == "illegal"  # const breaks the bounds, as the grammar refuses it


def test_required_accept_header_parameter_is_ignored():
    accept = {"name": "Accept", "in": "header", "required": True, "schema": {"type": "string"}}
    spec = _spec({"/r": {"get": {"parameters": [accept], "responses": {}}}}, [{"url": "https://h.io"}])
    assert spec.required_arguments(spec.operations[0])["header"] == frozenset()
    assert _ok(spec, "axios.get('https://h.io/r')")
    assert _ok(spec, "axios.get('https://h.io/r', {headers: {Accept: 'application/json'}})")


def test_url_query_gives_required_query_parameters():
    from callbench.constrain.webapi_grammar import GrammarOptions

    q = _q("path", {"type": "string"}, True)
    spec = _spec(
        {"/a": {"get": {"parameters": [q, _q("w", {"type": "string"})], "responses": {}}}},
        [{"url": "https://x.io"}],
    )
    opts = GrammarOptions(allow_url_query=True)

    def ok(code: str) -> bool:
        return check_invocation(spec, code, options=opts).allowed

    assert ok("axios.get('https://x.io/a?path=x&w=2')")
    assert ok("axios.get('https://x.io/a?w=2', {params: {path: 'x'}})")
    assert not ok("axios.get('https://x.io/a?w=2')")
    assert not ok("axios.get('https://x.io/a', {params: {w: 'x'}})")
    expected = {"url": "https://x.io/a", "method": "get", "params": {"path": "x", "w": "2"}}
    actual = {"url": "https://x.io/a?path=x&w=2", "method": "get"}
    assert compare_requests(expected, actual, spec).sample == "correct"


def test_deep_object_members_as_their_own_pairs():
    filt = _q(
        "filter",
        {"type": "object", "properties": {"company_id": {"type": "string"}, "size": {"type": "integer"}}},
        style="deepObject",
        explode=True,
    )
    spec = _spec({"/employees": {"get": {"parameters": [filt], "responses": {}}}}, [{"url": "https://d.io"}])
    url = "https://d.io/employees"
    assert _ok(spec, f"axios.get('{url}', {{params: {{'filter[company_id]': '12', 'filter[size]': 3}}}})")
    assert _ok(spec, f"axios.get('{url}', {{params: {{filter: {{company_id: '12'}}}}}})")
    assert not _ok(spec, f"axios.get('{url}', {{params: {{'filter[other]': '1'}}}})")
    assert spec.is_legal_argument(spec.operations[0], "query", "filter[company_id]")
    assert not spec.is_legal_argument(spec.operations[0], "query", "filter[other]")
    expected = {"url": url, "method": "get", "params": {"filter": {"company_id": "12"}}}
    actual = {"url": url, "method": "get", "params": {"filter[company_id]": "12"}}
    assert compare_requests(expected, actual, spec).sample == "correct"


def test_fragment_query_name_given_in_params():
    arn = _q("ResourceArn", {"type": "string"}, True)
    paths = {
        "/tags#ResourceArn": {"get": {"parameters": [arn], "responses": {}}},
        "/tags": {"post": {"responses": {}}},
    }
    spec = _spec(paths, [{"url": "https://e.io"}])
    url = "https://e.io/tags"
    assert spec.match("get", url, {"ResourceArn": "a"}).operation.path == "/tags#ResourceArn"
    assert spec.match("get", url) is None
    # the grammar writes a fixed name in the URL with a value (so the URL names the operation
    # even where a plain twin shares the path, S3's ``#cors``); the scorer takes either form
    assert _ok(spec, f"axios.get('{url}?ResourceArn=a')")
    assert not _ok(spec, f"axios.get('{url}', {{params: {{ResourceArn: 'a'}}}})")
    assert not _ok(spec, f"axios.get('{url}')")
    g = build_webapi_grammar(spec, setup="args", method="get", url=url)
    assert g.operation.path == "/tags#ResourceArn"
    expected = {"url": url, "method": "get", "params": {"ResourceArn": "a"}}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"
    assert compare_requests(expected, {"url": f"{url}?ResourceArn=a", "method": "get"}, spec).sample == "correct"


def test_server_variable_spanning_segments_and_adjacent_host_variables():
    servers = [
        {"url": "https://api.shop.io{basePath}", "variables": {"basePath": {"default": "/sell/v1"}}},
        {
            "url": "https://s3{dash}{region}.aws.io",
            "variables": {
                "dash": {"default": ".", "enum": [".", "-"]},
                "region": {"default": "eu", "enum": ["eu", "us"]},
            },
        },
    ]
    spec = _spec({"/order": {"get": {"responses": {}}}, "x-codegen": {"a": 1}}, servers)
    assert spec.servers[0] == "https://api.shop.io/sell/v1"
    for url in (
        "https://api.shop.io/sell/v1/order",
        "https://s3-us.aws.io/order",
        "https://s3.eu.aws.io/order",
    ):
        assert spec.match("get", url) is not None, url
        assert _ok(spec, f"axios.get('{url}')"), url
    for url in ("https://api.shop.io/order", "https://s3_us.aws.io/order"):
        assert spec.match("get", url) is None, url
        assert not _ok(spec, f"axios.get('{url}')"), url


def test_unparseable_and_invalid_specs_fail_in_one_line(tmp_path):
    from callbench.errors import SpecError
    from callbench.specs.openapi import load_spec

    bad = tmp_path / "broken.json"
    bad.write_text('{"openapi": "3.0.0", "paths": {')
    with pytest.raises(SpecError) as err:
        load_spec(bad)
    assert "broken.json" in str(err.value) and "\n" not in str(err.value)
    nameless = {"/a": {"get": {"parameters": [{"in": "query", "schema": {}}], "responses": {}}}}
    with pytest.raises(SpecError, match=r"paths\./a\.get\.parameters\[0\]: parameter has no 'name'"):
        _spec(nameless)


def test_fixed_query_pairs_in_any_order():
    # the scorer reads the fixed pairs as a set: the grammar takes them in any order too
    spec = _spec(ETHER, [{"url": "https://api.ether.io/api"}])
    u = "https://api.ether.io/api"
    call = f"axios.get('{u}/?action=balance&module=account', {{params: {{address: '0x1'}}}})"
    assert _ok(spec, call)
    assert not _ok(spec, f"axios.get('{u}/?action=balance&module=other', {{params: {{address: '0x1'}}}})")
    assert _ok(spec, f"axios.get('{u}/alerts?lon=-2&lat=1.5')")
    expected = {"url": f"{u}/?module=account&action=balance", "method": "get", "params": {"address": "0x1"}}
    sent = {"url": f"{u}/?action=balance&module=account", "method": "get", "params": {"address": "0x1"}}
    assert compare_requests(expected, sent, spec).sample == "correct"


def test_deep_object_members_beyond_declared_properties():
    # a deepObject parameter whose schema allows additional properties: the scorer takes any
    # name[prop] as its own params key (any value), so the grammar does as well
    free = {"type": "object", "additionalProperties": True, "properties": {"known": {"type": "integer"}}}
    closed = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}
    spec = _spec(
        {
            "/items": {
                "get": {
                    "parameters": [
                        _q("pass_through", free, style="deepObject", explode=True),
                        _q("filter", closed, style="deepObject", explode=True),
                    ],
                    "responses": {},
                }
            }
        },
        [{"url": "https://x.io"}],
    )
    u = "https://x.io/items"
    assert _ok(spec, f"axios.get('{u}', {{params: {{'pass_through[search]': 'SF', 'filter[a]': 'x'}}}})")
    assert _ok(spec, f"axios.get('{u}', {{params: {{\"pass_through[known]\": 3}}}})")
    assert not _ok(spec, f"axios.get('{u}', {{params: {{'pass_through[known]': 'three'}}}})")
    assert not _ok(spec, f"axios.get('{u}', {{params: {{'filter[b]': 'x'}}}})")
    assert not _ok(spec, f"axios.get('{u}', {{params: {{'pass_through[a][b]': 'x'}}}})")
    assert not _ok(spec, f"axios.get('{u}', {{params: {{'pass_through[x]': 1, 'pass_through[x]': 2}}}})")
    expected = {"url": u, "method": "get", "params": {"pass_through[search]": "SF"}}
    assert compare_requests(expected, {**expected}, spec).sample == "correct"


@pytest.mark.timeout(30)
def test_host_with_many_free_variables_and_an_enum_matches_fast():
    letters = "abcdefghijklmnopqrstuvwxyz"
    server = {
        "url": "https://" + "".join("{" + c + "}" for c in letters) + "{region}-api.example.com",
        "variables": {**{c: {"default": "x"} for c in letters}, "region": {"default": "eu", "enum": ["eu", "us"]}},
    }
    spec = _spec({"/items": {"get": {"responses": {}}}}, [server])
    assert spec.match("get", "https://" + "a" * 3000 + ".example.com/items") is None
    assert spec.match("get", "https://" + "a" * 40 + "eu-api.example.com/items") is not None
    assert spec.match("get", "https://" + "a" * 40 + "xx-api.example.com/items") is None


def test_trailing_slash_twins_are_both_reachable():
    # peoplegeneratorapi.live has GET /api/lifestory and GET /api/lifestory/ (two operations)
    spec = _spec(
        {
            "/api/lifestory": {"get": {"parameters": [_q("a", {"type": "string"})], "responses": {}}},
            "/api/lifestory/": {"get": {"parameters": [_q("b", {"type": "string"})], "responses": {}}},
            "/api/only": {"get": {"responses": {}}},
        },
        [{"url": "https://e.io"}],
    )
    assert spec.match("get", "https://e.io/api/lifestory").operation.path == "/api/lifestory"
    assert spec.match("get", "https://e.io/api/lifestory/").operation.path == "/api/lifestory/"
    assert spec.match("get", "https://e.io/api/only/") is None  # the trailing slash is matched exactly
    assert spec.match_paths("https://e.io/api/only/") == []
    assert not _ok(spec, "axios.get('https://e.io/api/only/')")
    assert _ok(spec, "axios.get('https://e.io/api/only')")
    assert _ok(spec, "axios.get('https://e.io/api/lifestory/', {params: {b: 'x'}})")
    assert not _ok(spec, "axios.get('https://e.io/api/lifestory/', {params: {a: 'x'}})")
    assert _ok(spec, "axios.get('https://e.io/api/lifestory', {params: {a: 'x'}})")
    expected = {"url": "https://e.io/api/lifestory/", "method": "get", "params": {"b": "x"}}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"


def _p(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def test_enum_suffix_holes_with_a_dot():
    # healthcare.gov / bufferapp: /api/states{mediaTypeExtension} and /blog/{pageName}{mediaTypeExtension},
    # the extension an enum ['.json']. The grammar wrote the member's dot as a regex dot (any
    # character; the lexer then took /api/... as a hole and refused /api/states.json) and the
    # matcher split report.json greedily into 'report.jso' + 'n'.
    ext = {"name": "mediaTypeExtension", "in": "path", "required": True, "schema": {"type": "string", "enum": [".json"]}}
    ok = {"get": {"parameters": [ext], "responses": {}}}
    page = {"get": {"parameters": [_p("pageName", {"type": "string"}), ext], "responses": {}}}
    spec = _spec({"/api/states{mediaTypeExtension}": ok, "/api/topics{mediaTypeExtension}": ok,
                  "/blog/{pageName}{mediaTypeExtension}": page, "/{pageName}{mediaTypeExtension}": page},
                 [{"url": "https://h.gov"}])
    assert spec.match("get", "https://h.gov/blog/report-678.json").path_params == {"pageName": "report-678", "mediaTypeExtension": ".json"}
    assert _ok(spec, "axios.get('https://h.gov/api/states.json')")
    assert _ok(spec, "axios.get('https://h.gov/blog/report-678.json')")
    assert _ok(spec, "axios.get('https://h.gov/report.json')")
    assert not _ok(spec, "axios.get('https://h.gov/api/statesXjson')")
    assert not _ok(spec, "axios.get('https://h.gov/blog/report-678.xml')")
    code = "axios.get(`https://h.gov/blog/${pageName}${mediaTypeExtension}`)"
    assert check_invocation(spec, code, identifiers=("pageName", "mediaTypeExtension")).allowed
    expected = {"url": "https://h.gov/blog/report-678.json", "method": "get"}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"


def test_odata_function_with_two_parameters_is_reachable():
    # Microsoft Graph: GET /communications/callRecords/{callRecord-id} beside
    # .../getPstnCalls(fromDateTime={a},toDateTime={b}); the function's URLs match both templates
    fn = "/callRecords/getPstnCalls(fromDateTime={fromDateTime},toDateTime={toDateTime})"
    spec = _spec(
        {
            "/callRecords/{id}": {"get": {"parameters": [_p("id", {"type": "string"}), _q("expand", {"type": "string"})], "responses": {}}},
            fn: {"get": {"parameters": [_p("fromDateTime", {"type": "string"}), _p("toDateTime", {"type": "string"}),
                                        _q("top", {"type": "integer"})], "responses": {}}},
        },
        [{"url": "https://g.io/v1"}],
    )
    call = "https://g.io/v1/callRecords/getPstnCalls(fromDateTime=2024-01-01,toDateTime=2024-02-01)"
    assert spec.match("get", call).operation.path == fn
    assert _ok(spec, f"axios.get('{call}', {{params: {{top: 5}}}})")
    assert not _ok(spec, f"axios.get('{call}', {{params: {{expand: 'x'}}}})")  # the other operation's argument
    assert _ok(spec, "axios.get('https://g.io/v1/callRecords/abc', {params: {expand: 'x'}})")
    expected = {"url": call, "method": "get", "params": {"top": 5}}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"
    wrong = compare_requests(expected, {"url": "https://g.io/v1/callRecords/abc", "method": "get", "params": {"top": 5}}, spec)
    assert wrong.sample != "correct"


def test_twin_templates_told_apart_by_path_patterns_else_the_first_listed():
    jobs = {"type": "string", "pattern": "^projects/[^/]+/jobs/[^/]+$"}
    spec = _spec(
        {
            "/v1/{parent}:run": {"post": {"parameters": [_p("parent", {"type": "string", "pattern": "^projects/[^/]+$"})], "responses": {}}},
            "/v1/{name}:run": {"post": {"parameters": [_p("name", jobs)], "responses": {}}},
            "/v1/{a}:stop": {"post": {"parameters": [_p("a", {"type": "string"})], "responses": {}}},
            "/v1/{b}:stop": {"post": {"parameters": [_p("b", {"type": "string"})], "responses": {}}},
        },
        [{"url": "https://e.io"}],
    )
    # matching decodes segments, so an encoded "/" stays in the value the pattern sees
    assert spec.match("post", "https://e.io/v1/projects%2Fp1%2Fjobs%2Fj1:run").operation.path == "/v1/{name}:run"
    assert spec.match("post", "https://e.io/v1/projects%2Fp1:run").operation.path == "/v1/{parent}:run"
    # no pattern: the same request for both, the first by template text; the other stays a match
    assert [m.template for m in spec.match_paths("https://e.io/v1/x:stop")] == ["/v1/{a}:stop", "/v1/{b}:stop"]
    expected = {"url": "https://e.io/v1/x:stop", "method": "post"}
    assert compare_requests(expected, dict(expected), spec).sample == "correct"


def test_exploded_object_query_parameter_and_array_header():
    # AWS query protocol (cloudformation RegisterType): LoggingConfig, style form + explode, is sent
    # as one pair per property; an array header (style simple) travels as 'a,b'
    cfg = {"type": "object", "required": ["LogRoleArn"], "properties": {"LogRoleArn": {"type": "string"}, "LogGroupName": {"type": "string"}}}
    spec = _spec(
        {
            "/register": {
                "get": {
                    "parameters": [
                        _q("LoggingConfig", cfg, True),
                        {"name": "x-attrs", "in": "header", "schema": {"type": "array", "items": {"type": "string", "enum": ["Owner", "Size"]}}},
                    ],
                    "responses": {},
                }
            }
        },
        [{"url": "https://e.io"}],
    )
    op = spec.operations[0]
    assert spec.is_legal_argument(op, "query", "LogRoleArn") and spec.is_legal_argument(op, "query", "LogGroupName")
    assert not spec.is_legal_argument(op, "query", "Other")
    assert _ok(spec, "axios.get('https://e.io/register', {params: {LogRoleArn: 'arn:1'}})")
    assert _ok(spec, "axios.get('https://e.io/register', {params: {LogRoleArn: 'a', LogGroupName: 'g'}, headers: {'x-attrs': 'Owner,Size'}})")
    assert _ok(spec, "axios.get('https://e.io/register', {params: {LogRoleArn: 'a'}, headers: {'x-attrs': ['Owner']}})")
    assert not _ok(spec, "axios.get('https://e.io/register', {params: {LogGroupName: 'g'}})")  # LogRoleArn required
    assert not _ok(spec, "axios.get('https://e.io/register', {params: {LogRoleArn: 'a'}, headers: {'x-attrs': 'Owner,Color'}})")
    expected = {"url": "https://e.io/register", "method": "get", "params": {"LogRoleArn": "a"}}
    extra = {**expected, "params": {"LogRoleArn": "a", "LogGroupName": "g"}}
    v = compare_requests(expected, extra, spec)
    assert [a.verdict for a in v.arguments if a.name == "LogGroupName"] == ["unnecessary"]


def test_credential_in_the_url_query_counts_under_allow_url_query():
    # Trello: apiKey `key` and `token` in the query, both required; written in the URL
    spec = _spec(
        {"/boards": {"get": {"parameters": [_q("fields", {"type": "string"})], "responses": {}}}},
        [{"url": "https://trello.com/1"}],
        components={"securitySchemes": {
            "APIKey": {"type": "apiKey", "in": "query", "name": "key"},
            "APIToken": {"type": "apiKey", "in": "query", "name": "token"},
        }},
        security=[{"APIKey": [], "APIToken": []}],
    )
    opts = GrammarOptions(allow_url_query=True)

    def ok(code: str) -> bool:
        return check_invocation(spec, code, options=opts).allowed

    assert ok("axios.get('https://trello.com/1/boards?key=<key>&token=<key>')")
    assert ok("axios.get('https://trello.com/1/boards', {params: {key: '<key>', token: '<key>'}})")
    assert not ok("axios.get('https://trello.com/1/boards?key=<key>')")  # the token is missing
    assert not ok("axios.get('https://trello.com/1/boards')")
