"""The cross-check (issue 15, parts 4 and 7): seeded bad rows of every class are caught, a good
row passes, and the audit of the 395 WAPIIBench rows finds exactly the known contradictions."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.specs import load_spec
from callbench.tracks.webapi.audit import SPEC_CLASSES, cross_check_config
from callbench.tracks.webapi.dataset import WebApiTask
from callbench.tracks.webapi.synthesis.crosscheck import EXEC_CLASSES, ExecutionChecker, audit_file

SPEC = """
openapi: 3.0.3
info: {title: Pets, version: '1'}
servers: [{url: 'https://pets.example/v2'}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Api-Key}
security: [{key: []}]
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - {name: limit, in: query, schema: {type: integer, maximum: 100}}
        - {name: kind, in: query, required: true, schema: {type: string, enum: [cat, dog]}}
        - {name: flag, in: query, schema: {type: boolean, enum: ['false', 'true']}}
    post:
      operationId: addPet
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              additionalProperties: false
              properties:
                name: {type: string}
                age: {type: integer}
                owner: {type: object, required: [email], properties: {email: {type: string}}}
  /pets/{id}:
    get:
      operationId: getPet
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
"""
URL = "https://pets.example/v2/pets"
GOOD_GET = {"method": "get", "url": URL, "params": {"kind": "cat", "limit": 20},
            "headers": {"Accept": "application/json, text/plain, */*", "X-Api-Key": "<key>"}}
GOOD_POST = {"method": "post", "url": URL, "data": {"name": "Rex", "owner": {"email": "a@b.example"}},
             "headers": {"Accept": "application/json, text/plain, */*", "X-Api-Key": "<key>", "Content-Type": "application/json"}}


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    p = tmp_path / "pets.yaml"
    p.write_text(SPEC)
    return p


def _bad(cfg: dict, **changes) -> dict:
    out = copy.deepcopy(cfg)
    for key, value in changes.items():
        loc, _, name = key.partition("__")
        if name:
            if value is None:
                out[loc].pop(name)
            else:
                out.setdefault(loc, {})[name] = value
        else:
            out[loc] = value
    return out


# one seeded bad row per spec class: (config, class, where)
SEEDED = [
    (_bad(GOOD_GET, url=URL + "?kind=cat"), "query_in_url", "config.url"),
    (_bad(GOOD_GET, url="https://pets.example/v2/owners"), "unknown_path", "config.url"),
    (_bad(GOOD_GET, method="put"), "unknown_method", "config.method"),
    (_bad(GOOD_GET, params__colour="red"), "unknown_argument", "config.params.colour"),
    (_bad(GOOD_POST, data={"name": "Rex", "colour": "red"}), "unknown_argument", "config.data.colour"),
    (_bad(GOOD_GET, params__kind=None), "missing_required", "config.params.kind"),
    (_bad(GOOD_POST, data={"age": 3}), "missing_required", "config.data.name"),
    (_bad(GOOD_GET, params__kind="horse"), "schema_violation", "config.params.kind"),
    (_bad(GOOD_GET, params__limit=500), "schema_violation", "config.params.limit"),
    (_bad(GOOD_GET, params__limit="many"), "schema_violation", "config.params.limit"),
    (_bad(GOOD_POST, data={"name": 7}), "schema_violation", "config.data"),
    (_bad(GOOD_POST, data={"name": "Rex", "owner": {}}), "schema_violation", "config.data"),
    ({"method": "get", "url": URL + "/abc", "headers": {"X-Api-Key": "<key>"}}, "schema_violation", "config.url ({id})"),
]


def test_good_rows_pass(spec_file: Path):
    spec = load_spec(spec_file)
    for cfg in (GOOD_GET, GOOD_POST, {"method": "get", "url": URL + "/12", "headers": {"X-Api-Key": "<key>"}}):
        assert cross_check_config(cfg, spec) == []
    # query values travel as text: "20" is an integer for the check
    assert cross_check_config(_bad(GOOD_GET, params__limit="20"), spec) == []
    # a spec's boolean with string enum members: judged on the wire text
    assert cross_check_config(_bad(GOOD_GET, params__flag=True), spec) == []
    assert [f.where for f in cross_check_config(_bad(GOOD_GET, params__flag="maybe"), spec)] == ["config.params.flag"]


@pytest.mark.parametrize("cfg,kind,where", SEEDED, ids=[f"{k}:{w}" for _, k, w in SEEDED])
def test_seeded_bad_rows_are_caught(spec_file: Path, cfg: dict, kind: str, where: str):
    found = cross_check_config(cfg, load_spec(spec_file))
    assert any(f.kind == kind and f.where == where for f in found), found


def test_every_spec_class_is_seeded():
    assert {k for _, k, _ in SEEDED} == set(SPEC_CLASSES)


def test_execution_classes(spec_file: Path):
    spec = load_spec(spec_file)

    def task(i: int, cfg: dict, **extra) -> WebApiTask:
        return WebApiTask.model_validate({"index": i, "api": "pets", "task": f"t{i}", "config": cfg, **extra})

    items = [
        task(0, GOOD_GET),
        task(1, {**GOOD_GET, "headers": {"X-Api-Key": "<key>", "X-Empty": None}}),  # axios drops a null header
        task(2, GOOD_GET, starter_code="// {task}\nconst axios = require('axios');\nthrow new Error('boom');\naxios."),
        task(3, _bad(GOOD_GET, params__colour="red")),  # the grammar cannot write an unknown argument
    ]
    with ExecutionChecker(grammar=True) as checker:
        found = checker.check([(t, spec) for t in items])
    assert found[0] == []
    assert {f.kind for f in found[1]} >= {"not_correct"}
    # this spec has one server and the row the published starter: compat is the published scorer's
    assert {f.where for f in found[1] if f.kind == "not_correct"} == {
        f"gold ({s}, {m})" for s in ("full", "args") for m in ("strict", "compat: published scorer")}
    assert {f.kind for f in found[2]} >= {"sandbox_error"}
    assert {f.where for f in found[3] if f.kind == "grammar_rejects" and "params of GET /pets" in f.detail} == {"grammar (full)", "grammar (args)"}, found[3]
    assert {f.kind for fs in found for f in fs} == set(EXEC_CLASSES)


def test_audit_command_on_a_bad_file(spec_file: Path, tmp_path: Path):
    rows = [{"index": i, "api": "pets", "task": f"t{i}", "spec": str(spec_file), "config": cfg} for i, (cfg, _, _) in enumerate(SEEDED)]
    rows.append({"index": 99, "api": "pets", "task": "good", "spec": str(spec_file), "config": GOOD_POST})
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, ["audit", "webapi", "--tasks", str(path), "--json", str(tmp_path / "a.json"), "--fail-on-findings"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 1, res.output
    assert f"{len(rows)} rows checked, {len(SEEDED)} with findings" in res.output
    data = json.loads((tmp_path / "a.json").read_text())
    assert set(data["by_class"]) == set(SPEC_CLASSES)
    assert 99 not in {f["row"] for f in data["findings"]}
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps(rows[-1]) + "\n")
    ok = CliRunner().invoke(app, ["audit", "webapi", "--tasks", str(clean), "--execute", "--fail-on-findings"])
    assert ok.exit_code == 0 and "1 rows checked, 0 with findings" in ok.output, ok.output


def test_audit_missing_file_is_one_line(tmp_path: Path, one_line_error):
    res = CliRunner().invoke(app, ["audit", "webapi", "--tasks", str(tmp_path / "nope.jsonl")])
    one_line_error(res, "nope.jsonl", "no such file")


# What the cross-check finds in the 395 WAPIIBench rows (docs/webapi-synthesis.md). The load-time
# audit (audit_gold) knows slack_102 only; the schema check adds the rows the constrained-decoding
# docs list as rejected by the grammar (asana_7/57/62/65/109/161, slack_163), the five number fields
# sent as strings (asana_15/22/26/27, slack_74), and slack_156 (its spec requires a body).
WAPII_EXPECTED = {
    ("asana_7", "schema_violation"), ("asana_15", "schema_violation"), ("asana_22", "schema_violation"),
    ("asana_26", "schema_violation"), ("asana_27", "schema_violation"), ("asana_57", "schema_violation"),
    ("asana_62", "schema_violation"), ("asana_65", "schema_violation"), ("asana_109", "schema_violation"),
    ("asana_161", "schema_violation"), ("slack_74", "schema_violation"), ("slack_163", "schema_violation"),
    ("slack_102", "unknown_argument"), ("slack_102", "missing_required"), ("slack_156", "missing_required"),
}


@pytest.mark.needs_data
def test_audit_of_the_wapiibench_rows(data_root: Path):
    n, findings = audit_file(data_root / "wapiibench/data/synthetic/all/test_data_final.json", data=data_root)
    assert n == 395
    assert {(f["task"], f["kind"]) for f in findings} == WAPII_EXPECTED
    assert len(findings) == 17


# With --execute --grammar: every gold runs and scores correct against itself; the grammar refuses
# exactly the 12 golds docs/constrained-decoding.md lists (8 that break their spec, 4 without the
# credential their operation requires).
GRAMMAR_REJECTED = {"asana_7", "asana_57", "asana_62", "asana_65", "asana_109", "asana_161", "slack_102", "slack_163",
                    "slack_64", "slack_123", "slack_124", "slack_125"}


@pytest.mark.needs_data
def test_audit_of_the_wapiibench_rows_with_execution(data_root: Path):
    n, findings = audit_file(data_root / "wapiibench/data/synthetic/all/test_data_final.json", data=data_root, execute=True, grammar=True)
    assert n == 395
    extra = {(f["task"], f["kind"]) for f in findings} - WAPII_EXPECTED
    assert {k for _, k in extra} == {"grammar_rejects"}
    assert {t for t, _ in extra} == GRAMMAR_REJECTED


OWNERS = """
openapi: 3.0.3
info: {title: Owners, version: '1'}
servers: [{url: 'https://owners.example/v1'}]
paths:
  /owners/{name}:
    get:
      operationId: getOwner
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
"""


def test_compat_is_checked_by_the_published_scorer_where_the_track_uses_it(tmp_path: Path):
    """Where compat follows WAPIIBench's published scorer (a task it can read: the published
    starter, one server), the cross-check asks that scorer, as the track does. Its mock logs the
    URL through decodeURIComponent, so a percent-encoded path value compares decoded and the
    gold is called wrong: such a row is a finding (the generator then picks another), while
    callbench's own compat rules, which decode both sides, would keep it."""
    p = tmp_path / "owners.yaml"
    p.write_text(OWNERS)
    spec = load_spec(p)

    def task(i: int, url: str, **extra) -> WebApiTask:
        return WebApiTask.model_validate({"index": i, "api": "owners", "task": f"t{i}",
                                          "config": {"method": "get", "url": url}, **extra})

    base = "https://owners.example/v1/owners/"
    own_starter = "const axios = require('axios');\n// {task}\naxios."
    items = [task(0, base + "Ahmed%20Okafor"), task(1, base + "AhmedOkafor"),
             task(2, base + "Ahmed%20Okafor", starter_code=own_starter)]  # own starter: callbench's compat
    with ExecutionChecker(grammar=False) as checker:
        found = checker.check([(t, spec) for t in items])
    assert {f.where for f in found[0]} == {"gold (full, compat: published scorer)", "gold (args, compat: published scorer)"}, found[0]
    assert all(f.kind == "not_correct" for f in found[0])
    assert found[1] == [] and found[2] == []
