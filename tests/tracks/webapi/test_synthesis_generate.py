"""``generate webapi`` with the template writer (issue 15, parts 1, 2, 4, 5, 6): operation
selection, difficulty, starters, determinism, the manifest, the split, and rows that
``run webapi --tasks`` scores 100 % with the gold model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import ConfigError
from callbench.specs import load_spec
from callbench.tracks.webapi.dataset import load_tasks
from callbench.tracks.webapi.synthesis.generate import (
    GenerateOptions,
    generate_webapi,
    spec_ref_for,
    split_of,
)
from callbench.tracks.webapi.synthesis.gold import gold_request
from callbench.tracks.webapi.synthesis.selection import OperationPicker, select_operations, weight
from callbench.tracks.webapi.synthesis.text import missing_values, template_text

MINI = """
openapi: 3.0.3
info: {title: Mini Shop, version: '1'}
servers: [{url: 'https://api.shop.example/v1'}]
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
security: [{bearer: []}]
paths:
  /items:
    get:
      operationId: listItems
      summary: List the items of the shop.
      tags: [items]
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 100}}
        - {name: q, in: query, schema: {type: string}}
        - {name: sort, in: query, schema: {type: string, enum: [name, price]}}
        - {name: X-Trace, in: header, schema: {type: string}}
    post:
      operationId: createItem
      summary: Create an item.
      tags: [items]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name, price]
              properties:
                name: {type: string}
                price: {type: number, minimum: 0}
                tags: {type: array, items: {type: string}}
                details:
                  type: object
                  properties:
                    color: {type: string}
                    size: {type: object, properties: {width: {type: integer}, height: {type: integer}}}
  /items/{itemId}:
    parameters:
      - {name: itemId, in: path, required: true, schema: {type: string}}
    get:
      operationId: getItem
      summary: Get one item.
      tags: [items]
    delete:
      operationId: deleteItem
      summary: Delete an item.
      deprecated: true
      tags: [admin]
  /orders:
    get:
      operationId: listOrders
      summary: List orders.
      tags: [orders]
      parameters:
        - {name: status, in: query, required: true, schema: {type: string, enum: [open, closed]}}
    trace:
      operationId: traceOrders
      summary: Trace.
"""


@pytest.fixture()
def mini(tmp_path: Path) -> Path:
    p = tmp_path / "mini.yaml"
    p.write_text(MINI)
    return p


def _gen(spec: Path, out: Path, **kw):
    return generate_webapi(spec, spec_ref_for(str(spec), spec, out), out, GenerateOptions(**kw))


def test_selection_filters_and_order(mini: Path):
    spec = load_spec(mini)
    sel = select_operations(spec)
    keys = {f"{o.method.upper()} {o.path}" for o in sel.operations}
    assert keys == {"GET /items", "POST /items", "GET /items/{itemId}", "GET /orders"}
    assert sel.skipped == {"deprecated": 1, "method TRACE (a task row cannot hold it)": 1}
    assert len(select_operations(spec, include_deprecated=True).operations) == 5
    assert {o.operation_id for o in select_operations(spec, tags=["orders"]).operations} == {"listOrders"}
    assert {o.operation_id for o in select_operations(spec, operations=["getItem", "GET /orders"]).operations} == {"getItem", "listOrders"}
    with pytest.raises(ConfigError, match="'nope' names no operation"):
        select_operations(spec, operations=["nope"])
    # every operation once before any twice; repeats favour operations with more optional arguments
    picker = OperationPicker(sel.operations, seed=3)
    first = [picker.next() for _ in range(4)]
    assert len({id(o) for o in first}) == 4
    assert weight(spec.operation("get", "/items")) == 5 and weight(spec.operation("get", "/items/{itemId}")) == 1
    later = [picker.next().operation_id for _ in range(400)]
    assert later.count("listItems") > 2 * later.count("getItem")
    picker.exclude(spec.operation("get", "/items"))
    assert all(picker.next().operation_id != "listItems" for _ in range(50))


def test_difficulty_cuts_optional_arguments(mini: Path):
    spec = load_spec(mini)
    get, post = spec.operation("get", "/items"), spec.operation("post", "/items")
    for seed in range(8):
        easy = gold_request(spec, get, seed=seed, difficulty="easy").config
        assert not easy.get("params") and set(easy["headers"]) == {"Accept", "Authorization"}
        medium = gold_request(spec, get, seed=seed, difficulty="medium").config
        assert len(medium.get("params", {})) + len(set(medium["headers"]) - {"Accept", "Authorization"}) == 2
        hard = gold_request(spec, get, seed=seed, difficulty="hard").config
        assert len(hard.get("params", {})) + len(set(hard["headers"]) - {"Accept", "Authorization"}) == 4
        assert set(gold_request(spec, post, seed=seed, difficulty="easy").config["data"]) == {"name", "price"}
        deep = gold_request(spec, post, seed=seed, difficulty="hard").config["data"]
        mid = gold_request(spec, post, seed=seed, difficulty="medium").config["data"]
        assert {"name", "price"} <= set(mid) and len(mid) <= 5
        assert set(deep) == {"name", "price", "tags", "details"} and "size" in deep["details"]
    # depth: medium keeps no optional property below depth 2 (details.size.* is depth 3)
    for seed in range(8):
        mid = gold_request(spec, post, seed=seed, difficulty="medium").config["data"]
        assert mid.get("details", {}).get("size", {}) == {} or "size" not in mid.get("details", {})


def test_template_text_states_every_value(mini: Path):
    spec = load_spec(mini)
    gold = gold_request(spec, spec.operation("post", "/items"), seed=1, difficulty="hard")
    text = template_text(gold)
    assert missing_values(text, gold.facts) == []
    assert text.startswith("Create an item") and "Bearer" not in text
    for f in gold.facts:
        if isinstance(f.value, str):
            assert f.value in text


def test_generate_is_complete_deterministic_and_runs_gold(mini: Path, tmp_path: Path):
    out = tmp_path / "bench"
    res = _gen(mini, out, n=12, seed=5, difficulty="mixed", starter="mixed", test_share=0.3)
    m = res.manifest
    assert m["n_gold"] == m["n_rows"] == 12 and m["n_requested"] == 12
    assert m["operations"]["covered"] == m["operations"]["eligible"] == 4
    assert m["format"] == "callbench-webapi-synthesis/1" and m["writer"] == "template"
    assert set(m["files"]) == {"tasks", "train", "test"}
    assert sum(m["starter"].values()) == 12 and sum(m["difficulty"].values()) == 12
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(12))
    # every operation once before any twice
    first4 = [r["operation"] for r in rows[:4]]
    assert len(set(first4)) == 4
    # the split is by operation, fixed by the operation alone
    train = {r["operation"] for r in rows if r["split"] == "train"}
    test = {r["operation"] for r in rows if r["split"] == "test"}
    assert train and test and not train & test
    hashed = {op: split_of(op, 0.3) for op in train | test}
    assert all(hashed[op] == "train" for op in train) or "test" not in hashed.values()
    assert {op for op in test if hashed[op] == "test"} == {op for op, part in hashed.items() if part == "test"}
    assert len((out / "train.jsonl").read_text().splitlines()) + len((out / "test.jsonl").read_text().splitlines()) == 12
    for r in rows:
        if r["starter"] != "plain":
            assert r["starter_code"].rstrip().endswith("axios.")
        if r["operation"] == "GET /items/{itemId}" and r["starter"] != "plain":
            assert r["definitions"] == {"itemId": r["config"]["url"].rsplit("/", 1)[1]} and "`itemId`" in r["task"]
    # same seed: byte-identical files; another seed: other requests
    again = tmp_path / "again"
    _gen(mini, again, n=12, seed=5, difficulty="mixed", starter="mixed", test_share=0.3)
    for name in ("tasks.jsonl", "train.jsonl", "test.jsonl"):
        assert (out / name).read_bytes() == (again / name).read_bytes()
    man_a, man_b = json.loads((out / "manifest.json").read_text()), json.loads((again / "manifest.json").read_text())
    assert man_a == man_b
    other = tmp_path / "other"
    _gen(mini, other, n=12, seed=6, difficulty="mixed", starter="mixed", test_share=0.3)
    assert (other / "tasks.jsonl").read_bytes() != (out / "tasks.jsonl").read_bytes()
    # the rows load as a task file and the gold model scores 100 % in both modes
    assert len(load_tasks(out / "tasks.jsonl")) == 12
    from callbench.api import run

    outcome = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(out / "tasks.jsonl"))
    assert outcome.summary["n"] == 12 and not outcome.summary.get("data_findings")
    assert outcome.summary["metrics"]["correct_implementations_t"] == 1.0
    compat = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(out / "tasks.jsonl"), scoring="compat", rescore=True)
    assert compat.summary["metrics"]["correct_implementations_t"] == 1.0
    args = run("webapi", "gold", out_dir=tmp_path / "runs_args", tasks_file=str(out / "tasks.jsonl"), setup="args")
    assert args.summary["metrics"]["correct_implementations_t"] == 1.0


def test_bad_options(mini: Path, tmp_path: Path):
    with pytest.raises(ConfigError, match="--difficulty"):
        _gen(mini, tmp_path / "x", n=2, difficulty="brutal")
    with pytest.raises(ConfigError, match="--paraphrases > 1 needs --writer"):
        _gen(mini, tmp_path / "x", n=2, paraphrases=2)
    with pytest.raises(ConfigError, match="no operation left"):
        _gen(mini, tmp_path / "x", n=2, tags=["nothing"])


@pytest.mark.needs_data
def test_petstore_and_wapiibench_specs(data_root: Path, tmp_path: Path):
    """A small fixed part of the acceptance run: petstore and Slack, every row checked."""
    for spec in (data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml",
                 data_root / "wapiibench/openapi/real_world_specs/slack.yaml"):
        res = _gen(spec, tmp_path / spec.stem, n=20, seed=0, difficulty="mixed", starter="mixed")
        m = res.manifest
        assert m["n_gold"] == 20, m["drops"]
        # the one other drop allowed: a path value the published scorer's mock compares decoded
        # (`Ahmed%20Okafor` logged as `Ahmed Okafor`), refused where compat follows that scorer
        bad = [d for d in m["drops"] if d["kind"] != "duplicate" and not (
            d["where"].endswith("compat: published scorer)") and "path_params." in d["detail"])]
        assert not bad, m["drops"]


def test_directory_specs(wild_specs_dir: Path, tmp_path: Path):
    """The directory half of the acceptance run, small: two real-world specs, every row checked."""
    for rel in ("uscann.net.json", "oxforddictionaries.com.json"):
        spec = wild_specs_dir / rel
        res = _gen(spec, tmp_path / spec.stem, n=15, seed=0, difficulty="mixed", starter="mixed")
        assert res.manifest["n_gold"] == 15, res.manifest["drops"]
        assert res.manifest["operations"]["covered"] >= 5


QUERY_DISPATCH = {
    "openapi": "3.0.3",
    "info": {"title": "Query protocol", "version": "1"},
    "servers": [{"url": "https://svc.example"}],
    "paths": {
        f"/#Action={name}": {
            "get": {
                "operationId": name,
                "parameters": [
                    {"name": "Action", "in": "query", "required": True, "schema": {"type": "string", "enum": [name]}},
                    {"name": "ImageId", "in": "query", "required": True, "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
        for name in ("RunInstances", "StopInstances")
    },
}


def test_query_dispatched_operations_keep_the_fixed_pair_in_the_url(tmp_path: Path):
    """AWS's query protocol: every operation is GET /, told apart by Action. The gold URL names the
    operation (the grammar's form, the args setup's starter), the row passes the cross-check and
    scores 100 % (the scorer reads the URL's query as params in both modes)."""
    spec = tmp_path / "query.json"
    spec.write_text(json.dumps(QUERY_DISPATCH))
    out = tmp_path / "bench"
    _gen(spec, out, n=2, seed=0)
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    urls = sorted(r["config"]["url"] for r in rows)
    assert urls == ["https://svc.example/?Action=RunInstances", "https://svc.example/?Action=StopInstances"]
    assert all(set(r["config"]["params"]) == {"ImageId"} for r in rows)
    manifest = json.loads((out / "manifest.json").read_text())
    assert not manifest.get("dropped"), manifest.get("drops")
