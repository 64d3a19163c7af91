"""Inference over real specs: the four WAPIIBench specs and CRUD-style specs of the APIs.guru
directory (the ones whose reports are in docs/one-spec/). Each model survives its YAML round trip
and maps onto a Scenario the sampler runs on; on three of them the mock server answers a
create -> read -> list of every resource that has both, with responses that fit the spec."""

from __future__ import annotations

import re
from random import Random

import pytest
import requests

from callbench.mock import MockService
from callbench.mock.validate import problem
from callbench.specs import load_spec
from callbench.specs.synthesize import synthesize_value
from callbench.statemodel import infer_model, read_model, to_yaml
from callbench.statemodel.entity import entity, success
from callbench.tracks.stateful.sampling import sample_program
from callbench.tracks.stateful.spec_scenario import build_scenario

# spec file -> least share of operations inference should make usable (what it reaches today,
# rounded down: a drop is a regression). netbox.dev (844 operations, report in docs/one-spec/) is
# left out here only for its load time.
DIRECTORY = {
    "asana.com.json": 0.95,
    "box.com.json": 0.8,
    "digitalocean.com.json": 0.95,
    "gitea.io.json": 0.85,
    "gitlab.com.json": 0.9,
    "gsmtasks.com.json": 0.95,
    "linode.com.json": 0.9,
    "mailchimp.com.json": 0.9,
    "mastodon.local.json": 0.8,
    "netlify.com.json": 0.95,
    "sendgrid.com.json": 0.9,
    "vercel.com.json": 0.8,
    "zoom.us.json": 0.9,
}


def _check_model(spec, tmp_path, least):
    model = infer_model(spec)
    used = sum(o.used for o in model.operations)
    assert used >= least * len(model.operations), (spec.source, used, len(model.operations))
    assert all(o.used or o.reason for o in model.operations)  # every unused operation says why
    f = tmp_path / "m.yaml"
    f.write_text(to_yaml(model))
    assert read_model(f).model == model
    return model


@pytest.mark.parametrize("name", sorted(DIRECTORY))
def test_directory_spec_inference(wild_specs_dir, tmp_path, name):
    spec = load_spec(wild_specs_dir / name)
    model = _check_model(spec, tmp_path, DIRECTORY[name])
    assert sum(o.role == "create" and o.used for o in model.operations) >= 5
    sc = build_scenario(spec, model)
    rng = Random(0)
    programs = [p for _ in range(5) if (p := sample_program(sc, rng, n_calls=4)) is not None]
    assert programs


@pytest.mark.parametrize(("api", "least", "resources"), [("asana", 0.95, 20), ("google_calendar_v3", 0.95, 4), ("google_sheet_v4", 0.8, 2), ("slack", 1.0, 0)])
def test_wapiibench_spec_inference(wapii_specs, tmp_path, api, least, resources):
    model = _check_model(wapii_specs[api], tmp_path, least)
    assert len(model.resources) >= resources
    if api == "slack":  # RPC-style paths (/chat.postMessage): no resources to see, all actions
        assert {o.role for o in model.operations} == {"action"}


@pytest.mark.parametrize(("name", "least_ok"), [("asana.com.json", 10), ("gitea.io.json", 10), ("mailchimp.com.json", 10)])
def test_mock_create_read_list_on_directory_specs(wild_specs_dir, name, least_ok):
    spec = load_spec(wild_specs_dir / name)
    ok = 0
    with MockService(spec, seed=0) as m:
        model = m.model
        for res in model.resources:
            creates = [o for o in model.operations if o.used and o.role == "create" and o.resource == res.name and not o.ids]
            reads = [o for o in model.operations if o.used and o.role == "read" and o.resource == res.name and len(o.ids) == 1]
            lists = [o for o in model.operations if o.used and o.role == "list" and o.resource == res.name and not o.ids and not o.values]
            if not creates or not reads:
                continue
            cop = spec.operation(creates[0].method.lower(), creates[0].path)
            ent = entity(cop)
            if ent is None:
                continue
            schema = cop.body_schema()
            body = synthesize_value(schema, seed=1, optional=0.0) if schema else None
            r = requests.request(cop.method, m.url + cop.path, json=body, timeout=5)
            assert r.status_code == int(success(cop)[0]), (cop.path, r.text[:300])
            assert problem(r.json(), success(cop)[1]) is None, cop.path
            obj = r.json()
            for k in ent.path:
                obj = obj[k]
            rop = spec.operation("get", reads[0].path)
            r2 = requests.get(m.url + re.sub(r"\{[^}]+\}", str(obj[res.id_field]), rop.path), timeout=5)
            assert r2.status_code == int(success(rop)[0]), (rop.path, r2.text[:300])
            assert problem(r2.json(), success(rop)[1]) is None, rop.path
            for lo in lists[:1]:
                lop = spec.operation("get", lo.path)
                r3 = requests.get(m.url + lop.path, timeout=5)
                assert r3.status_code == 200 and problem(r3.json(), success(lop)[1]) is None, lop.path
                items = r3.json()
                for k in entity(lop).path:
                    items = items[k]
                assert obj[res.id_field] in [i.get(res.id_field) for i in items]
            ok += 1
    assert ok >= least_ok


def test_a_resource_entry_unlocks_a_spec_without_response_schemas(wild_specs_dir, tmp_path):
    """Trello declares no response bodies, so inference sees no id field; one resource entry in a
    model file names it, and the board operations get their id source (the docs' example)."""
    from callbench.statemodel import load_model

    spec = load_spec(wild_specs_dir / "trello.com.json")
    before = {o.op: o for o in infer_model(spec).operations}
    f = tmp_path / "trello.model.yaml"
    f.write_text('resources:\n- name: board\n  collections: [/boards]\n  items: ["/boards/{idBoard}"]\n  id_field: id\n')
    after = {o.op: o for o in load_model(spec, f).operations}
    assert not before["GET /boards/{idBoard}"].used and "no JSON schema" in before["GET /boards/{idBoard}"].reason
    got = after["GET /boards/{idBoard}"]
    assert got.used and got.ids["idBoard"].field == "id" and got.ids["idBoard"].from_ == ["addBoards"]
    assert sum(o.used for o in after.values()) >= sum(o.used for o in before.values()) + 40


@pytest.mark.parametrize(
    ("key", "url"),
    [
        ("/alerts?lat={lat}&lon={lon}", "/alerts"),
        ("/api/?module=account&action=balance&address={address}", "/api/?module=account&action=balance"),
        ("/users/{id}", "/users/{id}"),
    ],
)
def test_a_path_key_with_a_query_keeps_only_its_fixed_pairs(key, url):
    from callbench.tracks.stateful.spec_scenario import _call_path

    assert _call_path(key) == url


def test_path_keys_with_templated_queries_build_a_scenario(wild_specs_dir):
    """medium.com's keys put parameters after a '?' (/search/articles?query={query}): the scenario
    used to fail with a KeyError naming the query parameter (issue 29: 0 nested tasks)."""
    spec = load_spec(wild_specs_dir / "medium.com.json")
    assert any("{" in op.path.partition("?")[2] for op in spec.operations)
    sc = build_scenario(spec, infer_model(spec))
    templates = [api.template for api in sc.apis]
    assert templates and not any("{$" in t.partition("?")[2].partition('"')[0] for t in templates), templates
