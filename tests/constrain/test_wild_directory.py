"""Specs in the wild, on real specs of the APIs.guru directory (``wild_specs_dir``; skipped when
the directory cannot be fetched): the loader, the grammar (``check_invocation``) and the scorer
agree on the calls these specs' odd features allow."""

from __future__ import annotations

import pytest

pytest.importorskip("llguidance")

from callbench.constrain.check import check_invocation  # noqa: E402
from callbench.constrain.webapi_grammar import build_webapi_grammar, clear_grammar_cache  # noqa: E402
from callbench.specs.openapi import load_spec  # noqa: E402
from callbench.tracks.webapi.scoring import compare_requests  # noqa: E402

BEARER = "headers: {Authorization: 'Bearer <token>'}"


def _ok(spec, code: str) -> bool:
    r = check_invocation(spec, code)
    return r.allowed


def test_telegram_server_variable(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "telegram.org.json")
    url = "https://api.telegram.org/bot987654:XYZ-abc/getMe"
    assert spec.match("post", url).operation.path == "/getMe"
    assert _ok(spec, f"axios.post('{url}')")
    assert not _ok(spec, "axios.post('https://api.telegram.org/getMe')")
    v = compare_requests({"url": url, "method": "post"}, {"url": url, "method": "post"}, spec)
    assert v.sample == "correct"


def test_flickr_query_in_path_key(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "flickr.com.json")
    base = "https://api.flickr.com/services/rest"
    m = spec.match("get", f"{base}?method=flickr.favorites.getList&api_key=k&user_id=u")
    assert m.operation.path == "/rest?method=flickr.favorites.getList"
    assert spec.match("get", base, {"method": "flickr.favorites.getList"}).operation.path == m.operation.path
    call = f"axios.get('{base}?method=flickr.favorites.getList', {{params: {{api_key: 'k', user_id: 'u'}}}})"
    assert _ok(spec, call)
    assert not _ok(spec, f"axios.get('{base}?method=flickr.favorites.getList', {{params: {{api_key: 'k'}}}})")
    assert not _ok(
        spec, f"axios.get('{base}?method=flickr.nope', {{params: {{api_key: 'k', user_id: 'u'}}}})"
    )
    expected = {
        "url": f"{base}?method=flickr.favorites.getList",
        "method": "get",
        "params": {"api_key": "k", "user_id": "u"},
    }
    in_params = {
        "url": base,
        "method": "get",
        "params": {"method": "flickr.favorites.getList", "api_key": "k", "user_id": "u"},
    }
    assert compare_requests(expected, in_params, spec).sample == "correct"


def test_weatherbit_templated_query_in_path_key(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "weatherbit.io.json")
    path = "/alerts?lat={lat}&lon={lon}"
    op = next(o for o in spec.operations if o.path == path)
    server = spec.servers[0]
    url = f"{server}/alerts?lat=38.1&lon=-78.2"
    assert spec.match(op.method, url).operation.path == path
    g = build_webapi_grammar(spec, setup="full")
    assert "lat" in g.lark


def test_ec2_action_fragment(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "amazonaws.com" / "ec2.json")
    host = "https://ec2.eu-west-1.amazonaws.com"
    m = spec.match("get", f"{host}/?Action=DescribeInstances&Version=2016-11-15")
    assert m.operation.path == "/#Action=DescribeInstances"
    assert spec.match("get", f"{host}/", {"Action": "DescribeInstances"}).operation.path == m.operation.path
    assert spec.match("get", "https://ec2.mars-1.amazonaws.com/?Action=DescribeInstances") is None
    g = build_webapi_grammar(spec, setup="args", method="get", url=f"{host}/?Action=DescribeInstances")
    assert g.operation.path == "/#Action=DescribeInstances"
    g2 = build_webapi_grammar(spec, setup="args", method="get", url=f"{host}/#Action=DescribeInstances")
    assert g2.operation is g.operation


def test_youtube_part_array_parameter(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "googleapis.com" / "youtube.json")
    url = "https://youtube.googleapis.com/youtube/v3/videos"
    op = spec.match("get", url).operation
    part = op.parameter("query", "part")
    assert part.delimiter is None  # form + explode: one pair per item
    for value in ("'snippet'", "['snippet', 'id']"):
        assert _ok(spec, f"axios.get('{url}', {{params: {{part: {value}}}, {BEARER}}})"), value
    expected = {"url": url, "method": "get", "params": {"part": ["snippet"]}}
    actual = {"url": url, "method": "get", "params": {"part": "snippet"}}
    assert compare_requests(expected, actual, spec).sample == "correct"


def test_box_fragment_labels(wild_specs_dir):
    spec = load_spec(wild_specs_dir / "box.com.json")
    labelled = [op for op in spec.operations if "#" in op.path]
    assert labelled
    op = labelled[0]
    label = op.path.split("#", 1)[1]
    server = spec.servers[0]
    concrete = op.path.split("#", 1)[0].replace("{", "").replace("}", "")
    found = spec.match(op.method, f"{server}{concrete}#{label}")
    assert found is not None and found.operation is op


def test_largest_spec_builds(wild_specs_dir):
    # ~0.7 s here (was ~7 s: shadowing compared every pair of paths); the time is a figure of
    # benchmarks/bounded_work_timings.py (grammar/autotask), not a unit test's verdict
    spec = load_spec(wild_specs_dir / "autotask.net.json")
    assert len(spec.operations) > 2500
    clear_grammar_cache()
    assert build_webapi_grammar(spec, setup="full").lark


def test_apideck_deep_object_pass_through_members(wild_specs_dir):
    # PassThroughQuery allows additional properties: the scorer reads pass_through[search] as a
    # member of the deepObject parameter, so the grammar accepts it (declared filter[...] too)
    spec = load_spec(wild_specs_dir / "apideck.com" / "hris.json")
    url = "https://unify.apideck.com/hris/employees"
    hdr = "'x-apideck-consumer-id': 'c', 'x-apideck-app-id': 'a', Authorization: '<key>'"
    call = f"axios.get('{url}', {{params: {{'filter[company_id]': '1', 'pass_through[search]': 'SF'}}, headers: {{{hdr}}}}})"
    assert _ok(spec, call), check_invocation(spec, call).reason
    bad = f"axios.get('{url}', {{params: {{'filter[nope]': '1'}}, headers: {{{hdr}}}}})"
    assert not _ok(spec, bad)


def test_azure_encoded_resource_uri_scored_from_the_sandbox(wild_specs_dir):
    # an encodeURIComponent'ed path value keeps its %2F in the recorded URL (one segment)
    from callbench.sandbox import JsSandbox

    spec = load_spec(wild_specs_dir / "azure.com" / "resourcehealth-ResourceHealth.json")
    url = (
        "https://management.azure.com/subscriptions%2F1%2FresourceGroups%2Fg"
        "/providers/Microsoft.ResourceHealth/events"
    )
    code = f"axios.get('{url}', {{ params: {{ 'api-version': '2018-07-01-preview' }}, {BEARER} }});"
    with JsSandbox(timeout_s=2.0) as sb:
        sent = sb.run(code).request
    assert sent["url"] == url
    assert spec.match("get", sent["url"]).path_params == {"resourceUri": "subscriptions/1/resourceGroups/g"}
    expected = {**sent, "url": url}
    assert expected["headers"]["Authorization"] == "Bearer <token>"
    assert compare_requests(expected, sent, spec).sample == "correct"
    assert _ok(spec, code)
