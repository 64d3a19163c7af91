"""Nested tasks from read-only specs (issue 29, item 3): response fields inside arrays and nested
objects linked to later parameters (by name, by resource, by schema, by the spec's OpenAPI
``links``), references that address them (``$var_1.artists.0.id$``), the mock's seeded catalogue
that makes the links real, gold win rate 1.0 and the reference-aware grammar on the rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from callbench.constrain.label_tracker import check_answer
from callbench.constrain.nested_grammar import build_nested_grammar
from callbench.models.base import ModelOutput
from callbench.tracks.nested.from_spec import (
    NestedSpecOptions,
    SpecExecutor,
    _noun,
    arg_resource,
    deep_fields,
    field_link,
    field_links,
    generate_nested_from_spec,
    key_owner,
    link_graph,
    readonly_scenario,
    spec_links,
    task_scenario,
    tool_shapes,
    write_rows,
)
from callbench.tracks.nested.references import parse_reference
from callbench.tracks.nested.schema import ToolCall
from callbench.tracks.stateful.spec_bench import prepare_folder, spec_scenario

PETSTORE = Path(__file__).resolve().parents[2] / "fixtures" / "one_spec" / "petstore.yaml"

_S = {"type": "string"}
_REF = {
    "ArtistRef": {"type": "object", "required": ["id", "name"], "properties": {"id": _S, "name": _S}},
    "TrackRef": {"type": "object", "required": ["id", "name"], "properties": {"id": _S, "name": _S}},
    "AlbumRef": {"type": "object", "required": ["id", "name"], "properties": {
        "id": _S, "name": _S, "artists": {"type": "array", "items": {"$ref": "#/components/schemas/ArtistRef"}}}},
}


def _get(op_id: str, schema: dict, params: list | None = None, links: dict | None = None) -> dict:
    resp: dict = {"description": "ok", "content": {"application/json": {"schema": schema}}}
    if links:
        resp["links"] = links
    return {"get": {"operationId": op_id, "summary": op_id, "parameters": params or [], "responses": {"200": resp}}}


def _path(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


MUSIC = {
    "openapi": "3.0.3",
    "info": {"title": "Tiny Music API", "version": "1"},
    "paths": {
        "/albums/{id}": _get("getAlbum", {"type": "object", "required": ["id", "name", "artists", "tracks"], "properties": {
            "id": _S, "name": _S,
            "artists": {"type": "array", "items": {"$ref": "#/components/schemas/ArtistRef"}},
            "tracks": {"type": "object", "required": ["items"], "properties": {
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/TrackRef"}}}},
        }}, [_path("id")]),
        "/artists/{id}": _get("getArtist", {"type": "object", "required": ["id", "name"], "properties": {
            "id": _S, "name": _S, "genre": _S, "popularity": {"type": "integer"}}}, [_path("id")]),
        "/charts/{chart}": _get("getChart", {"type": "object", "required": ["title", "top"], "properties": {
            "title": _S, "top": {"type": "array", "items": {"$ref": "#/components/schemas/TrackRef"}}}}, [
            _path("chart"), {"name": "X-API-KEY", "in": "header", "required": True, "schema": {"type": "string", "minLength": 8}}]),
        "/genres/{genre}": _get("getGenre", {"type": "object", "required": ["title"], "properties": {
            "title": _S, "size": {"type": "integer"}}}, [_path("genre")]),
        "/artists/{id}/albums": _get("getArtistAlbums", {"type": "object", "required": ["items"], "properties": {
            "items": {"type": "array", "items": {"$ref": "#/components/schemas/AlbumRef"}}}}, [_path("id")]),
        "/tracks/{id}": _get("getTrack", {"type": "object", "required": ["id", "name", "album", "artists"], "properties": {
            "id": _S, "name": _S, "album": {"$ref": "#/components/schemas/AlbumRef"},
            "artists": {"type": "array", "items": {"$ref": "#/components/schemas/ArtistRef"}}}}, [_path("id")]),
        "/search": _get(
            "search",
            {"type": "object", "required": ["albums"], "properties": {"albums": {"type": "object", "required": ["items"], "properties": {
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/AlbumRef"}}}}}},
            [{"name": "q", "in": "query", "required": True, "schema": {"type": "string", "enum": ["jazz", "rock"]}}],
            {"FirstRelease": {"operationId": "getRelease", "parameters": {"path.release_key": "$response.body#/albums/items/0/id"}}},
        ),
        "/releases/{release_key}": _get("getRelease", {"type": "object", "required": ["release_key", "title"], "properties": {
            "release_key": _S, "title": _S}}, [_path("release_key")]),
    },
    "components": {"schemas": _REF},
}


@pytest.fixture(scope="module")
def music(tmp_path_factory) -> Path:
    f = tmp_path_factory.mktemp("music") / "music.json"
    f.write_text(json.dumps(MUSIC))
    return f


@pytest.fixture(scope="module")
def sc(music: Path):
    return readonly_scenario(spec_scenario(music, name="music"))


def _op(sc, tool: str):
    info = sc.ops[tool]
    return sc.spec.operation(info.method.lower(), info.path)


def test_a_read_only_spec_takes_field_links_and_a_crud_spec_keeps_path_links(music: Path, sc):
    raw = spec_scenario(music, name="music")
    assert field_links(raw) is True and field_links(sc) is True
    # inference leaves out reads whose id no create or list returns; field links use them
    assert sorted(raw.ops) == ["getAlbum", "getRelease", "search"]
    assert sorted(sc.ops) == ["getAlbum", "getArtist", "getArtistAlbums", "getChart", "getGenre", "getRelease", "getTrack", "search"]
    why = {o.op: o.reason for o in raw.model.operations if not o.used}
    assert "no create or list operation returns" in why["GET /tracks/{id}"]
    assert "no id-like field among its response fields" in why["GET /genres/{genre}"]
    assert readonly_scenario(raw) is readonly_scenario(raw) and readonly_scenario(sc) is sc  # built once
    pet = spec_scenario(PETSTORE)
    assert field_links(pet) is False and readonly_scenario(pet) is pet  # its rows stay exactly as they were


def test_deep_fields_walk_arrays_and_nested_objects_shallow_first(sc):
    assert list(deep_fields(_op(sc, "getAlbum"))) == [
        "id", "name", "artists.0.id", "artists.0.name", "tracks.items.0.id", "tracks.items.0.name",
    ]
    assert list(deep_fields(_op(sc, "getTrack"))) == [
        "id", "name", "album.id", "album.name", "artists.0.id", "artists.0.name", "album.artists.0.id", "album.artists.0.name",
    ]


def test_owner_of_a_key_and_nouns():
    assert [_noun(w) for w in ("Albums", "categories", "matches", "status", "album_id")] == [
        "album", "category", "match", "status", "albumid",
    ]
    assert key_owner("albums.items.0.id", None) == "album"  # generic containers and positions skipped
    assert key_owner("artists.0.id", "album") == "artist"
    assert key_owner("id", "album") == "album"  # a top-level field: the response's own resource
    assert key_owner("items.0.id", None) is None


def test_links_by_resource_name_and_schema(sc):
    shapes = tool_shapes(sc)
    artist_id = shapes["getArtist"].arg_schemas["id"]
    want = arg_resource(sc, shapes["getArtist"], "id")
    assert want == "artist"
    # an artist's id: the album's artists[0].id, never the album's own id nor a track's id
    assert field_link(deep_fields(_op(sc, "getAlbum")), "album", "id", artist_id, want) == ["artists.0.id"]
    # shallower first: a track's own artists before its album's artists
    assert field_link(deep_fields(_op(sc, "getTrack")), "track", "id", artist_id, want) == ["artists.0.id", "album.artists.0.id"]
    assert field_link(deep_fields(_op(sc, "getTrack")), "track", "id", artist_id, "album") == ["album.id"]
    # by name: a query or path parameter named as the field; a body's name is the caller's own
    fields = {"owner.user_id": {"type": "string"}, "name": {"type": "string"}}
    assert field_link(fields, None, "user_id", {"type": "string"}, "user") == ["owner.user_id"]
    assert field_link(fields, None, "name", {"type": "string"}, None) == ["name"]
    assert field_link(fields, None, "name", {"type": "string"}, None, in_body=True) == []
    # by schema: ids (named *id) sharing a distinctive format, where no resource says otherwise
    uuid = {"type": "string", "format": "uuid"}
    fields = {"items.0.token_id": uuid, "items.0.other": uuid, "items.0.key_id": {"type": "string"}, "x.0.id": {"type": "integer"}}
    assert field_link(fields, None, "object_id", uuid, "object") == ["items.0.token_id"]
    # a field whose type the argument does not take is never linked
    assert field_link({"n": {"type": "integer"}}, None, "n", {"type": "string", "pattern": "^[a-z]+$"}, None) == []
    # an integer id into a plain string path or query parameter (its text), not into a body
    assert field_link({"items.0.question_id": {"type": "integer"}}, "question", "question_id", {"type": "string"}, "question") == ["items.0.question_id"]
    assert field_link({"items.0.question_id": {"type": "integer"}}, "question", "question_id", {"type": "string"}, "question", in_body=True) == []


def test_openapi_links_are_taken_where_names_say_nothing(sc):
    shapes = tool_shapes(sc)
    assert spec_links(sc, shapes) == {("search", "getRelease"): {"release_key": "albums.items.0.id"}}
    g = link_graph(sc, shapes)
    assert g.edges["getRelease"] == {"release_key": [("search", ["albums.items.0.id"])]}
    # the path segment before a parameter names its resource: /artists/{id}/albums takes an artist id
    assert arg_resource(sc, shapes["getArtistAlbums"], "id") == "artist"
    assert g.edges["getArtistAlbums"]["id"][1] == ("getArtist", ["id"])
    assert g.edges["getGenre"] == {"genre": [("getArtist", ["genre"])]}  # by name
    assert {src for src, _ in g.edges["getArtist"]["id"]} == {"getAlbum", "getArtistAlbums", "getTrack"}


def test_the_seeded_catalogue_makes_links_real(sc):
    from callbench.mock import MockService

    with MockService(sc.spec, sc.model, seed=5, seeded_catalog=True) as m:
        a = requests.get(f"{m.url}/albums/abc", timeout=10)
        assert a.status_code == 200 and a.json()["id"] == "abc" and a.json()["artists"]
        assert requests.get(f"{m.url}/albums/abc", timeout=10).json() == a.json()  # the same id, the same object
        artist = a.json()["artists"][0]["id"]
        b = requests.get(f"{m.url}/artists/{artist}", timeout=10)
        assert b.status_code == 200 and b.json()["id"] == artist
        assert requests.get(f"{m.url}/artists/other", timeout=10).json() != b.json()
    with MockService(sc.spec, sc.model, seed=5) as m:  # off by default: other tracks' mock is unchanged
        assert requests.get(f"{m.url}/albums/abc", timeout=10).status_code == 404


@pytest.fixture(scope="module")
def rows(music: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rows") / "music.jsonl"
    folder = out.with_name("music.openapi")
    sc = prepare_folder(folder, music, name="music")
    rows, info = generate_nested_from_spec(sc, folder.name, NestedSpecOptions(n=6, seed=0))
    assert len(rows) == 6, info
    write_rows(rows, out)
    return out


def test_rows_reference_nested_fields_and_gold_wins(rows: Path):
    from callbench.tracks.nested.track import NestedOptions, NestedTrack

    track = NestedTrack(NestedOptions(data=str(rows)))
    samples = track.load_samples()
    refs = [parse_reference(v) for s in samples for c in s.payload.output for v in c.arguments.values()
            if isinstance(v, str) and parse_reference(v)]
    assert all(any(isinstance(v, str) and v.startswith("$var_") for c in s.payload.output for v in c.arguments.values()) for s in samples)
    assert any(len(r.path) > 1 for r in refs)  # some reference addresses a field inside an array or object
    for s in samples:
        gold = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in s.payload.output]
        assert track.evaluate(s, ModelOutput(text=json.dumps(gold), mode="completion")).verdicts["strict"]["win"] is True
        g = build_nested_grammar(s.payload.tools)
        assert check_answer(g, json.dumps(gold)) is None
        bad = json.loads(json.dumps(gold))
        bad[-1]["arguments"][next(iter(bad[-1]["arguments"]))] = "$var_1.no.such.key$"
        assert check_answer(g, json.dumps(bad)) is not None  # a key the tool does not return


def test_win_rate_of_gold_and_a_wrong_index(rows: Path):
    """Hand-computed: gold on one row wins, the same row with its nested reference's index moved
    past the array (the mock's arrays hold one or two items) loses: win rate 1/2."""
    from callbench.tracks.nested.track import NestedOptions, NestedTrack

    track = NestedTrack(NestedOptions(data=str(rows)))
    s = next(s for s in track.load_samples() if ".0." in json.dumps([c.arguments for c in s.payload.output]))
    gold = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in s.payload.output]
    wrong = json.loads(json.dumps(gold).replace(".0.", ".7.", 1))
    wins = [track.evaluate(s, ModelOutput(text=json.dumps(x), mode="completion")).verdicts["strict"]["win"] for x in (gold, wrong)]
    assert wins == [True, False] and sum(wins) / len(wins) == 0.5
    calls = [ToolCall.model_validate(c) for c in wrong]
    sc, seed = task_scenario(s.payload, rows)  # the row's folder, as `run nested` loads it
    res = SpecExecutor(sc, seed=seed).run(calls)
    assert any(not c.ok and "UnknownKeyError" in c.output.message and "not an index" in c.output.message for c in res.calls)


def test_spotify_directory_spec_gives_gold_verified_tasks(wild_specs_dir: Path, tmp_path: Path):
    spec = wild_specs_dir / "spotify.com.json"
    folder = tmp_path / "spotify.openapi"
    sc = prepare_folder(folder, spec, name="spotify")
    assert field_links(sc)
    rows, info = generate_nested_from_spec(sc, folder.name, NestedSpecOptions(n=3, seed=0))
    assert len(rows) == 3, info  # was 0: "dropped: 200 no reference between calls"
    text = json.dumps([r["output"] for r in rows])
    assert "artists.0.id" in text or "items.0.id" in text


def test_catalogue_responses_keep_read_only_fields():
    """RAWG declares its ids readOnly: a request leaves such optional fields out, a response (the
    catalogue's, every optional field kept) has them, so a reference to ``results.0.id`` resolves."""
    from callbench.specs.synthesize import synthesize_value

    schema = {"type": "object", "properties": {"id": {"type": "integer", "readOnly": True}, "name": {"type": "string"}}}
    assert set(synthesize_value(schema, seed=1, optional=1.0)) == {"name"}  # a request's value, as before
    assert set(synthesize_value(schema, seed=1, optional=1.0, read_only=True)) == {"id", "name"}


def test_the_task_text_shows_a_field_with_brackets():
    from callbench.tracks.nested.from_spec import _bracketed

    assert [_bracketed(k) for k in ("albums.items.0.id", "0.year", "id", "a.0.1.b")] == [
        "albums.items[0].id", "[0].year", "id", "a[0][1].b",
    ]


def test_required_headers_are_sent_by_the_executor_not_named_by_the_model(sc):
    """dodo.ac declares its API key as a required header parameter: the mock refuses a request
    without it (400), so the executor sends a value its schema accepts; the tool has no such
    argument (a task names no credential)."""
    from callbench.mock import MockService

    shape = tool_shapes(sc)["getChart"]
    assert list(shape.args) == ["chart"] and [k for k, _ in shape.headers] == ["X-API-KEY"]
    assert len(shape.headers[0][1]) >= 8  # the schema's minLength
    res = SpecExecutor(sc, seed=1).run([ToolCall(name="getChart", label="$var_1", arguments={"chart": "top50"})])
    assert res.ok and res.final["top"], res.calls[0].output
    with MockService(sc.spec, sc.model, seed=1, seeded_catalog=True) as m:
        r = requests.get(f"{m.url}/charts/top50", timeout=10)
        assert r.status_code == 400 and "X-API-KEY" in r.text
    # a CRUD spec's tools send no headers: its rows stay as they were
    assert all(not s.headers for s in tool_shapes(spec_scenario(PETSTORE)).values())


def test_deep_fields_are_bounded_on_wide_deep_and_recursive_schemas():
    from types import SimpleNamespace

    from callbench.tracks.nested.from_spec import FIELD_DEPTH, FIELD_KEYS

    def op(schema):
        body = {"description": "ok", "content": {"application/json": {"schema": schema}}}
        return SimpleNamespace(responses={"200": body})

    wide = {"type": "object", "properties": {f"f{i}": _S for i in range(400)}}
    assert list(deep_fields(op(wide))) == [f"f{i}" for i in range(FIELD_KEYS)]
    deep: dict = {"type": "object", "properties": {"id": _S}}
    for i in range(8):
        deep = {"type": "object", "properties": {f"l{i}": deep, "id": _S}}
    keys = list(deep_fields(op(deep)))
    assert max(k.count(".") + 1 for k in keys) == FIELD_DEPTH and keys[:2] == ["id", "l7.id"]
    node: dict = {"type": "object", "properties": {"id": _S}}
    node["properties"]["children"] = {"type": "array", "items": node}  # a cycle, as a resolved $ref makes
    assert list(deep_fields(op(node))) == ["id"]  # walked once per branch, then stopped
