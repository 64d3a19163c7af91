"""The valid-invocation synthesizer (issue 14, part 3): hand-built mini specs, hand-checked outputs."""

from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

import jsonschema
import pytest

from callbench.specs import build_spec
from callbench.specs.schema import to_json_schema
from callbench.specs.synth_regex import RegexUnsupported, string_for_pattern
from callbench.specs.synthesize import (
    DEFAULT_ACCEPT,
    INVALID_KINDS,
    invalid_invocations,
    js_literal,
    plan_request,
    synthesize_value,
    valid_invocations,
)

HAVE_LLG = importlib.util.find_spec("llguidance") is not None

PETS = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "1"},
    "servers": [{"url": "https://api.pets.example/v1"}],
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List pets",
                "parameters": [
                    {"name": "species", "in": "query", "required": True,
                     "schema": {"type": "string", "enum": ["cat", "dog", "parrot"]}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 5}},
                    {"name": "since", "in": "query", "required": True, "schema": {"type": "string", "format": "date-time"}},
                    {"name": "X-Request-Id", "in": "header", "required": True,
                     "schema": {"type": "string", "pattern": "^req-[0-9]{6}$"}},
                    {"name": "tags", "in": "query", "required": True, "style": "form", "explode": False,
                     "schema": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["a", "b", "c"]}}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "createPet",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {
                        "type": "object",
                        "required": ["name", "owner_email", "born"],
                        "properties": {
                            "name": {"type": "string", "example": "Rex"},
                            "owner_email": {"type": "string", "format": "email"},
                            "born": {"type": "string", "format": "date"},
                            "weight": {"type": "number", "minimum": 0.5, "maximum": 80, "multipleOf": 0.5},
                            "code": {"type": "string", "minLength": 8, "maxLength": 8},
                        },
                    }}},
                },
                "responses": {"201": {"description": "created"}},
            },
        },
        "/pets/{petId}": {
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "integer", "example": 42}}],
            "get": {"operationId": "getPet", "responses": {"200": {"description": "ok"}}},
            "delete": {"operationId": "deletePet", "security": [{"key": []}],
                       "responses": {"204": {"description": "gone"}}},
        },
        "/pets/mine": {"get": {"operationId": "myPets", "responses": {"200": {"description": "ok"}}}},
    },
}
PETS["components"]["securitySchemes"]["key"] = {"type": "apiKey", "in": "header", "name": "X-API-Key"}


@pytest.fixture(scope="module")
def pets():
    return build_spec(PETS, Path("pets.json"))


def op_of(spec, method, path):
    op = spec.operation(method, path)
    assert op is not None
    return op


# ------------------------------------------------------------------------------- values
def test_enum_example_required_format_pattern(pets):
    plan = plan_request(pets, op_of(pets, "get", "/pets"), seed=3, optional=0.0)
    cfg = plan.config
    assert cfg["method"] == "get" and cfg["url"] == "https://api.pets.example/v1/pets"
    params = cfg["params"]
    assert params["species"] in ("cat", "dog", "parrot")  # an enum member
    assert "limit" not in params  # optional 0.0: required only
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", params["since"])  # looks like a date-time
    # form without explode: the array is one comma-joined value of enum members, at least two
    assert re.fullmatch(r"[abc](,[abc])+", params["tags"])
    assert re.fullmatch(r"req-[0-9]{6}", cfg["headers"]["X-Request-Id"])  # the pattern kept
    assert cfg["headers"]["Accept"] == DEFAULT_ACCEPT
    assert cfg["headers"]["Authorization"] == "Bearer <token>"
    assert "data" not in cfg and "Content-Type" not in cfg["headers"]


def test_body_values_and_content_type(pets):
    cfg = plan_request(pets, op_of(pets, "post", "/pets"), seed=1, optional=1.0).config
    body = cfg["data"]
    assert body["name"] == "Rex"  # the example
    assert re.fullmatch(r"[a-z]+\.[a-z]+@example\.com", body["owner_email"])  # a real-looking email
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", body["born"])
    assert 0.5 <= body["weight"] <= 80 and (body["weight"] * 2) == int(body["weight"] * 2)
    assert len(body["code"]) == 8
    assert cfg["headers"]["Content-Type"] == "application/json"
    schema = to_json_schema(op_of(pets, "post", "/pets").body_schema())
    jsonschema.validate(body, schema, format_checker=jsonschema.FormatChecker())


def test_path_example_and_shadowing(pets):
    cfg = plan_request(pets, op_of(pets, "get", "/pets/{petId}"), seed=0).config
    assert cfg["url"] == "https://api.pets.example/v1/pets/42"  # the parameter's example
    m = pets.match("get", cfg["url"])
    assert m is not None and m.operation.path == "/pets/{petId}"


def test_deterministic_given_a_seed(pets):
    op = op_of(pets, "post", "/pets")
    assert plan_request(pets, op, seed=7).config == plan_request(pets, op, seed=7).config
    seen = {repr(plan_request(pets, op, seed=s, optional=1.0).config) for s in range(6)}
    assert len(seen) > 1  # the seed matters


def test_value_bounds_and_names():
    assert synthesize_value({"type": "integer", "minimum": 10, "maximum": 12}) in (10, 11, 12)
    assert synthesize_value({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 5}) == 4  # 3.1 numeric form
    assert synthesize_value({"type": "integer", "multipleOf": 7, "minimum": 1}) % 7 == 0
    assert synthesize_value({"type": "string", "format": "uuid"}).count("-") == 4
    assert synthesize_value({"type": "string"}, name="first_name") in ("Jane", "John", "Maria", "Ahmed", "Yuki", "Lena", "Carlos", "Priya", "Oliver", "Fatima")
    assert "@" in synthesize_value({"type": "string"}, name="contactEmail")
    assert synthesize_value({"const": "fixed"}) == "fixed"
    assert synthesize_value({"type": "string", "default": "dflt"}) == "dflt"
    assert synthesize_value({"type": "string", "example": 5}) != 5  # an example that breaks the schema is not used
    items = synthesize_value({"type": "array", "minItems": 3, "uniqueItems": True, "items": {"type": "integer"}})
    assert len(items) >= 3 and len(set(items)) == len(items)
    nested = synthesize_value({"allOf": [{"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}}},
                                         {"required": ["b"], "properties": {"b": {"type": "string", "enum": ["x"]}}}]})
    assert isinstance(nested["a"], bool) and nested["b"] == "x"


def test_recursive_schema_terminates():
    spec = build_spec({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {"/n": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/N"}}}},
                                  "responses": {"200": {"description": "ok"}}}}},
        "components": {"schemas": {"N": {"type": "object", "required": ["child"],
                                         "properties": {"child": {"anyOf": [{"$ref": "#/components/schemas/N"}, {"type": "null"}]}}}}},
    }, Path("n.json"))
    body = plan_request(spec, spec.operations[0], seed=0).config["data"]
    depth = 0
    while isinstance(body, dict) and body.get("child") is not None:
        body, depth = body["child"], depth + 1
    assert depth <= 8


@pytest.mark.parametrize("pattern", [r"^[A-Z]{2}-\d{4}$", r"^(foo|bar)_[a-z]+$", r"^\w+@\w+\.com$", r"[^0-9]{3}", r"^(ab)\1$", r"^$"])
def test_regex_strings_match(pattern):
    rng = random.Random(0)
    for _ in range(5):
        assert re.search(pattern, string_for_pattern(pattern, rng))


@pytest.mark.parametrize(("pattern", "lo", "hi"), [(r"^[a-f0-9\-]+$", 36, 36), (r"^arn:aws:[a-z]+:\d{12}:\w+$", 40, 60), (r"^[A-Z]{2}$", 2, 2)])
def test_regex_strings_keep_length_bounds(pattern, lo, hi):
    # cloudtrail's QueryId: pattern ^[a-f0-9\-]+$ with minLength = maxLength = 36
    for seed in range(5):
        s = string_for_pattern(pattern, random.Random(seed), attempts=12, min_len=lo, max_len=hi)
        assert re.search(pattern, s) and lo <= len(s) <= hi, s
    value = synthesize_value({"type": "string", "pattern": pattern, "minLength": lo, "maxLength": hi}, seed=3, name="QueryId")
    assert re.search(pattern, value) and lo <= len(value) <= hi


def test_required_but_undeclared_body_names_are_sent_and_legal():
    # vestorly POST /posts: required ["name"], properties {title}, no additionalProperties
    doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://h.example"}],
           "paths": {"/posts": {"post": {"requestBody": {"content": {"application/json": {"schema": {
               "type": "object", "required": ["name"], "properties": {"title": {"type": "string"}}}}}}, "responses": {}}},
               "/closed": {"post": {"requestBody": {"content": {"application/json": {"schema": {
                   "type": "object", "required": ["name"], "additionalProperties": False,
                   "properties": {"title": {"type": "string"}}}}}}, "responses": {}}}}}
    spec = build_spec(doc, Path("req.json"))
    body = plan_request(spec, spec.operation("post", "/posts"), optional=0.0).config["data"]
    assert set(body) == {"name"}
    assert spec.is_legal_argument(spec.operation("post", "/posts"), "body", "name")
    assert not spec.is_legal_argument(spec.operation("post", "/posts"), "body", "other")
    # additionalProperties: false contradicts it: required wins (sent, and legal)
    assert "name" in plan_request(spec, spec.operation("post", "/closed"), optional=0.0).config["data"]
    assert spec.is_legal_argument(spec.operation("post", "/closed"), "body", "name")


def test_regex_unreadable_pattern():
    with pytest.raises(RegexUnsupported):
        string_for_pattern(r"(?<=x", random.Random(0))


# ------------------------------------------------------------------------------- serialization
def _spec_with(param: dict, path: str = "/s") -> object:
    return build_spec({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "/api"}],
                       "paths": {path: {"get": {"parameters": [param], "responses": {"200": {"description": "ok"}}}}}},
                      Path("s.json"))


@pytest.mark.parametrize(
    ("param", "check"),
    [
        ({"style": "form", "explode": True, "schema": {"type": "array", "minItems": 2, "items": {"type": "integer", "enum": [1, 2]}}},
         lambda p: isinstance(p["v"], list) and len(p["v"]) >= 2),
        ({"style": "pipeDelimited", "schema": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["x", "y"]}}},
         lambda p: re.fullmatch(r"[xy](\|[xy])+", p["v"])),
        ({"style": "spaceDelimited", "schema": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["x"]}}},
         lambda p: p["v"] == "x x" or p["v"].startswith("x x")),
        ({"style": "deepObject", "explode": True, "schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "enum": ["q"]}}}},
         lambda p: p == {"v[a]": "q"}),
        ({"schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "enum": [3]}}}},
         lambda p: p == {"a": 3}),  # form + explode object: its properties become parameters
    ],
)
def test_query_styles(param, check):
    spec = _spec_with({"name": "v", "in": "query", "required": True, **param})
    cfg = plan_request(spec, spec.operations[0], seed=0).config
    assert cfg["url"] == "/api/s"
    assert check(cfg["params"]), cfg["params"]


def test_path_label_and_matrix_styles_and_header_arrays():
    arr = {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string", "enum": ["a"]}}
    label = _spec_with({"name": "v", "in": "path", "required": True, "style": "label", "schema": arr}, "/s/{v}")
    assert plan_request(label, label.operations[0]).config["url"] == "/api/s/.a,a"
    matrix = _spec_with({"name": "v", "in": "path", "required": True, "style": "matrix", "explode": True, "schema": arr}, "/s/{v}")
    assert plan_request(matrix, matrix.operations[0]).config["url"] == "/api/s/;v=a;v=a"
    header = _spec_with({"name": "X-V", "in": "header", "required": True, "schema": arr})
    assert plan_request(header, header.operations[0]).config["headers"]["X-V"] == "a,a"


def test_credentials_follow_the_security_scheme():
    def spec_for(scheme):
        return build_spec({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
                           "components": {"securitySchemes": {"s": scheme}}, "security": [{"s": []}],
                           "paths": {"/x": {"get": {"responses": {"200": {"description": "ok"}}}}}}, Path("c.json"))

    def cfg(scheme):
        s = spec_for(scheme)
        return plan_request(s, s.operations[0]).config

    assert cfg({"type": "http", "scheme": "basic"})["headers"]["Authorization"] == "Basic <credentials>"
    assert cfg({"type": "oauth2", "flows": {}})["headers"]["Authorization"] == "Bearer <token>"
    assert cfg({"type": "apiKey", "in": "header", "name": "X-Key"})["headers"]["X-Key"] == "<key>"
    assert cfg({"type": "apiKey", "in": "query", "name": "api_key"})["params"] == {"api_key": "<key>"}
    assert cfg({"type": "apiKey", "in": "cookie", "name": "sid"})["headers"]["Cookie"] == "sid=<key>"


def test_path_key_with_fragment_and_query():
    spec = build_spec({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://h.example"}],
                       "paths": {"/#X-Target=Do": {"post": {"responses": {"200": {"description": "ok"}}}},
                                 "/run?action=start": {"get": {"responses": {"200": {"description": "ok"}}}}}},
                      Path("f.json"))
    post = plan_request(spec, spec.operation("post", "/#X-Target=Do")).config
    # the fragment's pair is a fixed query parameter (or, with an older loader, a label in the URL)
    assert post["url"] == "https://h.example/" and post["params"] == {"X-Target": "Do"} or post["url"] == "https://h.example/#X-Target=Do"
    run = plan_request(spec, spec.operation("get", "/run?action=start")).config
    assert run["url"] == "https://h.example/run" and run["params"] == {"action": "start"}


# ------------------------------------------------------------------------------- code
def test_code_styles(pets):
    invs = valid_invocations(pets, op_of(pets, "get", "/pets/{petId}"), seed=0)
    styles = [i.style for i in invs]
    assert styles[:2] == ["method", "method"] and {"template", "config", "request"} <= set(styles)
    by = {i.style: i for i in invs}
    assert by["template"].completion_full.startswith("get(`https://api.pets.example/v1/pets/${petId}`")
    assert by["template"].definitions == {"petId": "42"}
    assert by["config"].program.rstrip().endswith("});") and "axios({" in by["config"].program
    assert by["request"].completion_full.startswith("request({")
    assert invs[0].completion_full == "get('https://api.pets.example/v1/pets/42', { headers: { Authorization: 'Bearer <token>' } });\n"
    assert invs[0].completion_args == " { headers: { Authorization: 'Bearer <token>' } });\n"
    q = valid_invocations(pets, op_of(pets, "get", "/pets"), seed=0)
    uq = next(i for i in q if i.style == "url_query")
    assert "/pets?species=" in uq.completion_full and all(isinstance(v, str | list) for v in uq.config["params"].values())


def test_js_literal():
    assert js_literal({"a": 1, "b-c": "it's", "d": [True, None]}) == "{ a: 1, 'b-c': 'it\\'s', d: [true, null] }"
    assert js_literal("x`${y}", "`") == "`x\\`\\${y}`"


# ------------------------------------------------------------------------------- invalid variants
def test_invalid_variants_are_invalid(pets):
    op = op_of(pets, "get", "/pets")
    invs = {i.kind: i for i in invalid_invocations(pets, op, seed=0)}
    assert set(invs) == set(INVALID_KINDS)
    declared = {p.name for p in op.parameters}
    unk = invs["unknown_parameter"]
    assert set(unk.config["params"]) - set(unk.expected.get("params", {})) - declared == {"cbUnknownParam"}
    wt = invs["wrong_type"]
    loc, name, verdict = wt.expect.argument
    assert verdict == "incorrect_value"
    param = op.parameter("query" if loc == "params" else "header", name, case_insensitive=True)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wt.config[loc][name], to_json_schema(param.schema))
    jsonschema.validate(_typed(wt.expected[loc][name], param.schema), to_json_schema(param.schema))
    miss = invs["missing_required"]
    loc, name, verdict = miss.expect.argument
    assert verdict == "missing" and name not in miss.config.get(loc, {}) and name in miss.expected[loc]
    wm = invs["wrong_method"]
    assert pets.match(wm.config["method"], wm.config["url"]) is None and pets.match_paths(wm.config["url"])
    up = invs["unknown_path"]
    assert pets.match_paths(up.config["url"]) == []
    post = op_of(pets, "post", "/pets")
    body = {i.kind: i for i in invalid_invocations(pets, post, seed=0)}
    schema = to_json_schema(post.body_schema())
    for kind in ("missing_required", "wrong_type"):
        assert body[kind].expect.argument[0] == "data"
        jsonschema.validate(body[kind].expected["data"], schema)  # derived from a valid body...
        with pytest.raises(jsonschema.ValidationError):  # ...and made invalid
            jsonschema.validate(body[kind].config["data"], schema)


def _typed(value, schema):
    """A query value read as its schema types it (the config holds the wire text for a csv array)."""
    if schema.get("type") == "array" and isinstance(value, str):
        return value.split(",")
    return value


def test_requests_run_and_score_correct_against_themselves(pets):
    from callbench.sandbox.js import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    invs = [i for op in pets.operations for i in valid_invocations(pets, op, seed=0) + invalid_invocations(pets, op, seed=0)]
    with JsSandbox() as sb:
        results = dict(sb.run_many([(i.program, i.definitions) for i in invs]))
    for j, inv in enumerate(invs):
        res = results[j]
        assert res.status == "ok", (inv.kind, inv.style, res.error)
        for mode in ("strict", "compat"):
            v = compare_requests(inv.expected, res.request, pets, mode)
            if inv.kind == "valid":
                assert v.sample == "correct", (inv.style, mode, v.as_dict(), res.request)
            else:
                e = inv.expect
                assert v.sample in e.sample, (inv.kind, mode, v.as_dict())
                if e.url:
                    assert v.url == e.url
                if e.method:
                    assert v.method == e.method
                if e.argument:
                    loc, name, verdict = e.argument
                    assert any(a.location == loc and a.name == name and a.verdict == verdict for a in v.arguments), v.as_dict()


def test_method_without_an_axios_shortcut_is_written_as_request():
    # axios.trace is undefined: httpbin's TRACE /anything was written trace(...) and sent nothing
    from callbench.sandbox.js import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    spec = build_spec({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://h.io"}],
                       "paths": {"/anything": {"trace": {"parameters": [{"name": "q", "in": "query", "required": True,
                                                                         "schema": {"type": "string"}}],
                                                         "responses": {}}}}}, Path("t.json"))
    (op,) = spec.operations
    invs = valid_invocations(spec, op) + invalid_invocations(spec, op)
    method_style = [i for i in invs if i.style in ("method", "template") and i.kind != "wrong_method"]
    assert method_style and all(i.completion_full.startswith("request({") and "trace" in i.completion_full for i in method_style)
    assert all(i.completion_args is None and i.grammar_setups == () for i in method_style)
    with JsSandbox() as sb:
        results = dict(sb.run_many([(i.program, i.definitions) for i in invs]))
    for j, inv in enumerate(invs):
        assert results[j].status == "ok", (inv.kind, inv.style, results[j].error)
        v = compare_requests(inv.expected, results[j].request, spec, "strict")
        assert (v.sample == "correct") == (inv.kind == "valid"), (inv.kind, inv.style, v.as_dict())


@pytest.mark.skipif(not HAVE_LLG, reason="llguidance (the constrain extra) is not installed")
def test_grammar_accepts_valid_and_rejects_invalid(pets):
    from callbench.constrain.check import check_invocation
    from callbench.constrain.webapi_grammar import GrammarOptions

    for op in pets.operations:
        for inv in valid_invocations(pets, op, seed=0) + invalid_invocations(pets, op, seed=0):
            for setup in inv.grammar_setups:
                res = check_invocation(
                    pets, inv.program, setup=setup,
                    method=inv.expected["method"] if setup == "args" else None,
                    url=inv.starter_url if setup == "args" else None,
                    identifiers=tuple(inv.definitions or ()),
                    options=GrammarOptions(allow_url_query=inv.allow_url_query),
                )
                if inv.kind == "valid" and inv.style != "url_query":
                    assert res.allowed, (op.method, op.path, inv.style, setup, res.reason, inv.program)
                elif inv.kind != "valid":
                    assert not res.allowed, (op.method, op.path, inv.kind, setup, inv.program)


# ------------------------------------------------------------ dispatch by query, header, twins
def _q(name, schema, required=False):
    return {"name": name, "in": "query", "required": required, "schema": schema}


DISPATCH = {
    "openapi": "3.0.3",
    "info": {"title": "dispatch", "version": "1"},
    "servers": [{"url": "https://svc.example"}],
    "paths": {
        # AWS query protocol: the Action pair selects the operation
        "/#Action=Run&Version=2020": {"get": {"parameters": [
            _q("Action", {"type": "string", "enum": ["Run"]}, True), _q("Version", {"type": "string"}, True),
            _q("ImageId", {"type": "string"}, True)], "responses": {}}},
        "/#Action=Stop&Version=2020": {"get": {"parameters": [
            _q("Action", {"type": "string", "enum": ["Stop"]}, True), _q("Version", {"type": "string"}, True),
            _q("Force", {"type": "boolean"})], "responses": {}}},
        # AWS JSON protocol: every operation POSTs to "/", the header names it
        "/#X-Amz-Target=Svc.Tag": {"post": {
            "parameters": [{"name": "X-Amz-Target", "in": "header", "required": True, "schema": {"type": "string", "enum": ["Svc.Tag"]}}],
            "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "required": ["Tags"], "properties": {"Tags": {"type": "string"}}}}}},
            "responses": {}}},
        # S3: a bare name selects DeleteBucketCors over DeleteBucket
        "/{Bucket}": {"delete": {"parameters": [{"name": "Bucket", "in": "path", "required": True, "schema": {"type": "string"}}], "responses": {}}},
        "/{Bucket}#cors": {"delete": {"parameters": [
            {"name": "Bucket", "in": "path", "required": True, "schema": {"type": "string"}},
            _q("cors", {"type": "boolean"}, True)], "responses": {}}},
        # twins: the same request, told apart by nothing
        "/v1/{a}:stop": {"post": {"parameters": [{"name": "a", "in": "path", "required": True, "schema": {"type": "string"}}], "responses": {}}},
        "/v1/{b}:stop": {"post": {"parameters": [{"name": "b", "in": "path", "required": True, "schema": {"type": "string"}}], "responses": {}}},
    },
}


@pytest.fixture(scope="module")
def dispatch():
    return build_spec(DISPATCH, Path("dispatch.json"))


def test_dispatch_keys_written_in_the_url_recorded_in_params(dispatch):
    run = plan_request(dispatch, dispatch.operation("get", "/#Action=Run&Version=2020"), optional=0.0)
    # the request as recorded: the fixed pairs in params; the code writes them in the URL
    assert run.config["url"] == "https://svc.example/"
    assert run.config["params"]["Action"] == "Run" and run.config["params"]["Version"] == "2020"
    assert run.code_url() == "https://svc.example/?Action=Run&Version=2020"
    assert set(run.code_config()["params"]) == {"ImageId"}
    cors = plan_request(dispatch, dispatch.operation("delete", "/{Bucket}#cors"))
    assert cors.code_url().endswith("?cors=true") or cors.code_url().endswith("?cors=false")
    [inv] = [i for i in valid_invocations(dispatch, cors.operation, seed=0, styles=("method",))][:1]
    assert inv.starter_url.startswith(inv.config["url"] + "?cors=")  # the args starter names the operation
    tag = plan_request(dispatch, dispatch.operation("post", "/#X-Amz-Target=Svc.Tag"))
    assert tag.config["url"] == "https://svc.example/#X-Amz-Target=Svc.Tag"
    assert tag.config["headers"]["X-Amz-Target"] == "Svc.Tag"
    # a twin's request is synthesized (it is the same request as the first twin's)
    assert plan_request(dispatch, dispatch.operation("post", "/v1/{b}:stop")).config["url"].endswith(":stop")


def test_dispatch_chain_sandbox_scorer_grammar(dispatch):
    from callbench.sandbox.js import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    invs = [i for op in dispatch.operations for i in valid_invocations(dispatch, op, seed=0) + invalid_invocations(dispatch, op, seed=0)]
    with JsSandbox() as sb:
        results = dict(sb.run_many([(i.program, i.definitions) for i in invs]))
    for j, inv in enumerate(invs):
        assert results[j].status == "ok", (inv.kind, inv.style, results[j].error)
        for mode in ("strict", "compat"):
            v = compare_requests(inv.expected, results[j].request, dispatch, mode)
            if inv.kind == "valid":
                assert v.sample == "correct", (inv.operation.path, inv.style, mode, v.as_dict(), results[j].request)
            else:
                assert v.sample in inv.expect.sample, (inv.operation.path, inv.kind, mode, v.as_dict())
    if not HAVE_LLG:
        return
    from callbench.constrain.check import check_invocation
    from callbench.constrain.webapi_grammar import GrammarOptions

    for inv in invs:
        for setup in inv.grammar_setups:
            res = check_invocation(
                dispatch, inv.program, setup=setup,
                method=inv.expected["method"] if setup == "args" else None,
                url=inv.starter_url if setup == "args" else None,
                identifiers=tuple(inv.definitions or ()),
                options=GrammarOptions(allow_url_query=inv.allow_url_query),
            )
            assert res.allowed == (inv.kind == "valid"), (inv.operation.path, inv.kind, inv.style, setup, res.reason, inv.program)
