import json

import pytest

from callbench.errors import DataError
from callbench.tracks.webapi.dataset import load_tasks, spec_path_for


def test_loads_all_395_upstream_tasks(wapii_tasks):
    assert len(wapii_tasks) == 395
    assert {t.api for t in wapii_tasks} == {"asana", "google_calendar_v3", "google_sheet_v4", "slack"}
    assert len({t.id for t in wapii_tasks}) == 395


def test_loads_per_api_layout(data_root):
    tasks = load_tasks(data_root / "wapiibench/data/synthetic/slack/test_data_corrected.json")
    assert len(tasks) == 174 and all(t.api == "slack" for t in tasks)
    assert tasks[3].index == 3


def _write(tmp_path, rows, name="tasks.json"):
    p = tmp_path / name
    if name.endswith(".jsonl"):
        p.write_text("\n".join(json.dumps(r) for r in rows))
    else:
        p.write_text(json.dumps(rows))
    return p


GOOD = {"index": 0, "api": "petstore", "task": "List pets", "config": {"method": "get", "url": "https://x/pets"}}


@pytest.mark.parametrize(
    "bad,needle",
    [
        ({**GOOD, "config": {"method": "fetch", "url": "https://x"}}, "[0].config.method"),
        ({**GOOD, "config": {"method": "get"}}, "[0].config.url"),
        ({k: v for k, v in GOOD.items() if k != "task"}, "[0].task"),
        ({**GOOD, "starter_code": "axios."}, "[0].starter_code: Value error, must contain a '// {task}' line"),
        ({**GOOD, "starter_code": "// {task}\nconst x = 1;"}, "[0].starter_code: Value error, must end at 'axios.'"),
        ({**GOOD, "definitions": {"not an id": 1}}, "not a usable JavaScript identifier"),
        ({**GOOD, "definitions": {"class": 1}}, "'class' is not a usable JavaScript identifier"),
        # a name the sandbox gives itself: was a ValueError when the sample ran, which ended the run
        ({**GOOD, "definitions": {"URL": "https://x"}}, "definition name 'URL' clashes with a sandbox binding"),
    ],
)
def test_bad_rows_name_file_index_and_field(tmp_path, bad, needle):
    p = _write(tmp_path, [bad])
    with pytest.raises(DataError) as exc:
        load_tasks(p)
    msg = str(exc.value)
    assert str(p) in msg and needle in msg and "\n" not in msg


def test_second_row_index_reported_and_duplicates(tmp_path):
    p = _write(tmp_path, [GOOD, {**GOOD, "config": None}])
    with pytest.raises(DataError, match=r"\[1\]\.config"):
        load_tasks(p)
    p = _write(tmp_path, [GOOD, GOOD])
    with pytest.raises(DataError, match="duplicate id 'petstore_0'"):
        load_tasks(p)


def test_jsonl_and_invalid_json(tmp_path):
    p = _write(tmp_path, [GOOD, {**GOOD, "index": 1}], "t.jsonl")
    assert [t.id for t in load_tasks(p)] == ["petstore_0", "petstore_1"]
    bad = tmp_path / "b.json"
    bad.write_text("[{]")
    with pytest.raises(DataError, match="invalid JSON"):
        load_tasks(bad)
    bad.write_text('{"rows": []}')
    with pytest.raises(DataError, match="expected a list"):
        load_tasks(bad)


def test_own_starter_code_and_definitions(tmp_path):
    row = {
        **GOOD,
        "starter_code": "const petId = 7;\n// {task}\nconst axios = require('axios');\naxios.",
        "definitions": {"token": "abc"},
        "spec": "petstore.yaml",
    }
    p = _write(tmp_path, [row])
    (t,) = load_tasks(p)
    assert t.definitions == {"token": "abc"}
    assert spec_path_for(t, p, tmp_path) == tmp_path / "petstore.yaml"


def test_unknown_api_without_spec(tmp_path):
    p = _write(tmp_path, [GOOD])
    (t,) = load_tasks(p)
    with pytest.raises(DataError, match=r"\[0\]\.spec: unknown API 'petstore'"):
        spec_path_for(t, p, tmp_path)


def test_task_whose_url_is_not_in_its_spec_is_skipped_or_fails_with_strict_data(tmp_path, data_root):
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    row = {"index": 0, "api": "slack", "task": "x", "config": {"method": "get", "url": "https://slack.com/api/no.such.method"}}
    p = _write(tmp_path, [row])
    track = WebApiTrack(WebApiOptions(data=str(data_root), tasks_file=str(p)))
    assert track.load_samples() == []
    assert track.data_findings[0]["reason"] == "config.url 'https://slack.com/api/no.such.method' matches no path of slack.yaml"
    track = WebApiTrack(WebApiOptions(data=str(data_root), tasks_file=str(p), strict_data=True))
    with pytest.raises(DataError, match=r"\[0\]: config\.url 'https://slack.com/api/no.such.method' matches no path of slack.yaml"):
        track.load_samples()


def test_a_validation_cache_that_cannot_be_written_only_means_checking_again(tmp_path, data_root, monkeypatch):
    """The track writes its "these files passed" marker with :func:`callbench.files.write_json_atomic`
    (not the run store's writer, whose RunStoreError is no OSError): when the marker cannot be
    written (here its path is a directory), loading goes on and a later load checks again."""
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    monkeypatch.setenv("CALLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    row = {"index": 0, "api": "slack", "task": "x", "config": {"method": "get", "url": "https://slack.com/api/no.such.method"}}
    p = _write(tmp_path, [row])
    track = WebApiTrack(WebApiOptions(data=str(data_root), tasks_file=str(p)))
    marker = track._validated_marker(load_tasks(p))
    assert marker is not None
    marker.mkdir(parents=True)  # os.replace onto it fails
    assert track.load_samples() == [] and len(track.data_findings) == 1
    assert marker.is_dir() and not [q for q in marker.parent.iterdir() if q.name.startswith(".")]  # no temporary left
    again = WebApiTrack(WebApiOptions(data=str(data_root), tasks_file=str(p)))
    assert again.load_samples() == [] and again.data_findings == track.data_findings
