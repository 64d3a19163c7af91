"""Loading the published StateEval layout (issue 13, part 10).

The fixtures are hand-written tasks in the published *format* (Hugging Face rows exported as JSON
Lines; the upstream trace directory of ``evaluator_<idx>.json`` + ``<split>_metadata.json``);
no upstream data is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import DataError
from callbench.tracks.stateful import published
from callbench.tracks.stateful.track import bench_files, load_bench

pytest.importorskip("requests")

# -- hand-written tasks in the published shape ------------------------------------------------
_CREATE = """url = f"{BASE_URL}/api/sessions/{user_variable_0['source']}/{user_variable_0['type']}"
response_1 = requests.get(url)
response_1.raise_for_status()
response_1 = response_1.json()
if len(response_1) == condition_variable:
    response_2 = requests.post(url, json={"data": user_variable_0['data']})
    response_2.raise_for_status()
    RESULT = response_2.json()
else:
    RESULT = response_1[0]
"""

_SEED = {"1": {"id": "1", "source": "web", "type": "cart", "checksum": "", "data": {"title": "Seeded cart"}}}
_VAR = {"id": None, "source": "web", "type": "cart", "checksum": "", "data": {"title": "New cart"}}


def _case(init_local_str: str, result, oracle) -> dict:
    return {
        "result": result,
        "state_oracle": oracle,
        "program_info": {
            "init_local_str": init_local_str,
            "init_local_info": [],
            "init_implicit_dict": _SEED,
            "end_implict_list": [],
            "init_load_str": None,
            "init_load_info": None,
        },
        "program": _CREATE,
    }


def _session_ok() -> dict:
    seeded = {"source": "web", "type": "cart", "data": {"title": "Seeded cart"}}
    new = {"source": "web", "type": "cart", "data": {"title": "New cart"}}
    base = _case(
        f"user_variable_0 = {_VAR!r}\ncondition_variable = 1\nRESULT = None\n",
        new,
        {"web||cart": [seeded, new]},
    )
    flipped = _case(
        f"user_variable_0 = {_VAR!r}\ncondition_variable = 2\nRESULT = None\n",
        seeded,
        {"web||cart": [seeded]},
    )
    return {"test_cases": [base, flipped], "config": {"base_url": "http://localhost:8080"}}


def _session_raw_body() -> dict:
    """Posts the bare data dict (no {"data": ...} envelope): callbench's service answers 400."""
    ev = _session_ok()
    for tc in ev["test_cases"]:
        tc["program"] = tc["program"].replace(
            "json={\"data\": user_variable_0['data']}", "data=json.dumps(user_variable_0['data'])"
        )
        tc["program"] = "import json\n" + tc["program"]
    return ev


def _session_wrong_oracle() -> dict:
    ev = _session_ok()
    ev["test_cases"][0]["result"] = {"source": "web", "type": "cart", "data": {"title": "Something else"}}
    return ev


def _session_non_literal() -> dict:
    ev = _session_ok()
    ev["test_cases"][0]["program_info"]["init_local_str"] = (
        "user_variable_0 = make_session()\ncondition_variable = 1\n"
    )
    return ev


def _tensor_loaded(result=1.0, tensor=None) -> dict:
    """Preloads a one-element tensor (1.0 as float32 bytes); RESULT is that tensor, which upstream
    records as its number."""
    tensor = tensor or {"__tensor__": True, "shape": [1], "dtype": "<f4", "data_b64": "AACAPw=="}
    return {
        "test_cases": [
            {
                "result": result,
                "state_oracle": None,
                "program_info": {
                    "init_local_str": "",
                    "init_local_info": [],
                    "init_implicit_dict": None,
                    "end_implict_list": None,
                    "init_load_str": "user_tensor_0 = ...",
                    "init_load_info": [["user_tensor_0", tensor]],
                },
                "program": "response_1 = torch.transpose(user_tensor_0, 0, 0)\nRESULT = response_1\n",
            }
        ],
        "config": {},
    }


_HELLO = {
    "text": "Hello",
    "voice_name": "Emma",
    "stability": None,
    "similarity_boost": None,
    "style": None,
    "duration": 16.0,
    "transitions": [["text_to_speech", {"voice_name": "Emma", "stability": None, "similarity_boost": None, "style": None}]],
    "is_speech": True,
}


def _voice_upstream_api(voice: str = "Emma", result=None, oracle=None) -> dict:
    """Calls the module-level functions of upstream's voice mock (SpeechLab): synthesize, then phone
    out with it; RESULT is (the speech, True), recorded as a list with the speech's JSON."""
    info = {
        "init_local_str": f'user_text_0 = "Hello"\nuser_voice = "{voice}"\n',
        "init_local_info": [],
        "init_implicit_dict": None,
        "end_implict_list": None,
        "init_load_str": None,
        "init_load_info": None,
    }
    program = (
        "response_1 = text_to_speech(text=user_text_0, voice_name=user_voice)\n"
        "response_2 = make_outbound_call(input_speech=response_1, voice_name=user_voice)\n"
        "RESULT = (response_1, response_2)\n"
    )
    result = [_HELLO, True] if result is None else result
    oracle = [[_HELLO, "Emma"]] if oracle is None else oracle
    return {
        "test_cases": [{"result": result, "state_oracle": oracle, "program_info": info, "program": program}],
        "config": {},
    }


def _session_loaded() -> dict:
    """init_load_info on a session task: the session scenario takes no preloaded objects."""
    ev = _session_ok()
    for tc in ev["test_cases"]:
        tc["program_info"]["init_load_info"] = [["user_blob_0", {"x": 1}]]
    return ev


_PROMPT = "Using the session description in user_variable_0, list the sessions under its source and type; if there are exactly condition_variable of them, create a new session there with its data, otherwise take the first one listed."
_META = {"evaluation_config": {"base_url": "http://localhost:8080"}, "doc": "(api doc)"}


def _row(example_id: int, evaluator: dict, prompt: str = _PROMPT) -> dict:
    return {
        "example_id": example_id,
        "evaluator_json": json.dumps(evaluator),
        "prompt": prompt,
        "metadata_json": json.dumps(_META),
    }


def _write_rows(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _fresh_cache():
    published._CACHE.clear()
    yield
    published._CACHE.clear()


# -- detection and reading --------------------------------------------------------------------
def test_detects_rows_not_callbench_layout(tmp_path: Path):
    rows = _write_rows(tmp_path / "pub" / "session.jsonl", [_row(0, _session_ok())])
    assert published.detect(tmp_path / "pub") == [rows]
    assert published.detect(rows) == [rows]
    assert bench_files(tmp_path / "pub") == [rows]
    own = tmp_path / "own" / "session"
    own.mkdir(parents=True)
    (own / "tasks.jsonl").write_text("{}\n")
    assert published.detect(tmp_path / "own") is None


def test_gold_passes_converted_tasks_and_skips_are_listed(tmp_path: Path, capsys):
    bench = tmp_path / "pub"
    _write_rows(
        bench / "session.jsonl",
        [
            _row(0, _session_ok()),
            _row(1, _session_raw_body()),
            _row(2, _session_wrong_oracle()),
            _row(3, _session_non_literal()),
            _row(4, _session_loaded()),
        ],
    )
    _write_rows(
        bench / "voice.jsonl",
        [
            _row(0, _voice_upstream_api(), "Say hello with Emma's voice and phone out with it."),
            _row(1, _voice_upstream_api(oracle=[]), "The same, published without its call."),
            _row(2, _voice_upstream_api(voice="Adam"), "Adam is not in upstream's voice library."),
        ],
    )
    tasks, skipped = published.load(bench)
    assert [t["id"] for t in tasks] == ["stateeval_session_000", "stateeval_voice_000"]
    t = tasks[0]
    assert (
        t["scenario"] == "session"
        and t["text"] == _PROMPT
        and [c["name"] for c in t["cases"]] == ["base", "case_1"]
    )
    assert t["cases"][0]["expected"]["writes"] == 1 and t["cases"][1]["expected"]["writes"] == 0
    assert t["cases"][0]["service_seed"] == [
        {"source": "web", "type": "cart", "data": {"title": "Seeded cart"}}
    ]
    assert set(t["inputs"]) == {"user_variable_0", "condition_variable"}
    voice = tasks[1]
    assert voice["cases"][0]["expected"]["result"] == [_HELLO, True]
    assert voice["cases"][0]["expected"]["state"]["outbound_calls"] == [[_HELLO, "Emma"]]
    assert "make_outbound_call(input_speech: Speech" in voice["doc"]  # StateGen's API, not callbench's `api`
    reasons = {s.task: s.reason for s in skipped}
    assert set(reasons) == {
        "stateeval_session_001",
        "stateeval_session_002",
        "stateeval_session_003",
        "stateeval_session_004",
        "stateeval_voice_001",
        "stateeval_voice_002",
    }
    assert "fails under callbench's session service" in reasons["stateeval_session_001"]
    assert "differs from the published oracle" in reasons["stateeval_session_002"]
    assert "not a literal" in reasons["stateeval_session_003"]
    assert "init_load_info (user_blob_0), which callbench's session scenario does not take" in reasons["stateeval_session_004"]
    assert "0 outbound calls published, 1 under callbench" in reasons["stateeval_voice_001"]
    assert "SpeechLabError: Voice name Adam not found in voice library" in reasons["stateeval_voice_002"]
    err = capsys.readouterr().err
    assert "2 tasks loaded, 6 skipped" in err and err.count("  skipped ") == 6

    r = CliRunner().invoke(
        app,
        [
            "run",
            "stateful",
            "--bench",
            str(bench),
            "--model",
            "gold",
            "--out",
            str(tmp_path / "runs"),
            "--no-progress",
        ],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(next((tmp_path / "runs").rglob("summary.json")).read_text())
    assert summary["metrics"]["pass@1"] == 1.0 and summary["metrics"]["n_tasks"] == 2


def test_tensor_objects_are_preloaded_from_their_bytes(tmp_path: Path):
    """init_load_info tensors are rebuilt from base64 bytes; RESULT, a one-element tensor, is
    read as its number (upstream's rule), for the reference and for a model's program alike, and
    numbers compare within upstream's 1e-2."""
    pytest.importorskip("torch")
    from callbench.models.base import ModelOutput
    from callbench.tracks.base import Sample
    from callbench.tracks.stateful.track import StatefulTrack

    bad_length = {"__tensor__": True, "shape": [2], "dtype": "<f4", "data_b64": "AACAPw=="}
    big_endian = {"__tensor__": True, "shape": [1], "dtype": ">f4", "data_b64": "P4AAAA=="}
    bench = _write_rows(
        tmp_path / "tensor.jsonl",
        [
            _row(0, _tensor_loaded(), "Transpose the tensor."),
            _row(1, _tensor_loaded(result=2.0), "Published with another number."),
            _row(2, _tensor_loaded(tensor=bad_length), "Two floats announced, one sent."),
            _row(3, _tensor_loaded(tensor=big_endian), "Big-endian bytes."),
        ],
    )
    # each sandboxed run imports torch: a generous limit, so a busy machine does not skip the task
    tasks, skipped = published.load(bench, report=False, timeout_s=90)
    assert [t["id"] for t in tasks] == ["stateeval_tensor_000"], skipped
    task = tasks[0]
    assert task["cases"][0]["expected"]["result"] == 1.0 and task["inputs"] == {"user_tensor_0": "a preloaded tensor"}
    reasons = {s.task: s.reason for s in skipped}
    assert "differs from the published oracle" in reasons["stateeval_tensor_001"]
    assert "init_load_info 'user_tensor_0': not a readable tensor" in reasons["stateeval_tensor_002"]
    assert "not a readable tensor" in reasons["stateeval_tensor_003"]
    track = StatefulTrack(bench=str(bench), timeout_s=90)
    sample = Sample(id=task["id"], group="tensor", payload=(task, 0), task=task["id"])
    zero_dim = "result = user_tensor_0.sum()\n"  # a 0-dim tensor: upstream reads it as 1.0
    assert track.evaluate(sample, ModelOutput(text=zero_dim, mode="chat")).status == "ok"
    near = "result = float(user_tensor_0.sum()) + 0.005\n"  # within upstream's 1e-2 (absolute)
    assert track.evaluate(sample, ModelOutput(text=near, mode="chat")).status == "ok"
    wrong = "result = user_tensor_0.sum() + 0.02\n"
    assert track.evaluate(sample, ModelOutput(text=wrong, mode="chat")).status == "wrong_result"


def test_a_result_too_large_for_the_sandbox_is_named(tmp_path: Path, monkeypatch):
    import dataclasses

    from callbench.tracks.stateful import execution
    from callbench.tracks.stateful.scenarios import get_scenario

    # the task's result, (speech, True), is about 400 bytes of JSON
    small = dataclasses.replace(execution.default_limits(get_scenario("voice")), max_result_bytes=100)
    monkeypatch.setattr(execution, "default_limits", lambda scenario, timeout_s=20.0: small)
    bench = _write_rows(tmp_path / "voice.jsonl", [_row(0, _voice_upstream_api(), "Say hello.")])
    tasks, skipped = published.load(bench, report=False)
    assert not tasks and "the result (" in skipped[0].reason and "larger than the sandbox returns" in skipped[0].reason


def test_a_published_voice_task_is_scored_as_upstream_scores_it(tmp_path: Path):
    """A list result in another order passes (upstream matches its elements as a multiset); a
    missing outbound call is a wrong state; callbench's own `api` does not solve it."""
    from callbench.models.base import ModelOutput
    from callbench.tracks.base import Sample
    from callbench.tracks.stateful.track import StatefulTrack

    bench = _write_rows(tmp_path / "voice.jsonl", [_row(0, _voice_upstream_api(), "Say hello.")])
    (task,), _ = published.load(bench, report=False)
    track = StatefulTrack(bench=str(bench))
    sample = Sample(id=task["id"], group="voice", payload=(task, 0), task=task["id"])

    def status(code: str) -> str:
        return track.evaluate(sample, ModelOutput(text=code, mode="chat")).status

    speak = "s = text_to_speech(text=user_text_0, voice_name=user_voice)\n"
    assert status(speak + "ok = make_outbound_call(input_speech=s, voice_name=user_voice)\nresult = [ok, s]\n") == "ok"
    assert status(speak + "result = [s, True]\n") == "wrong_state"
    assert status(speak + "ok = make_outbound_call(input_speech=s, voice_name=user_voice)\nresult = [ok, ok]\n") == (
        "wrong_result"
    )


def test_published_voice_tasks_refuse_mcp_mode(tmp_path: Path):
    """Their programs call StateGen's functions, which the MCP server's tools are not: one line."""
    bench = _write_rows(tmp_path / "voice.jsonl", [_row(0, _voice_upstream_api(), "Say hello.")])
    r = CliRunner().invoke(
        app, ["run", "stateful", "--bench", str(bench), "--mode", "mcp", "--model", "gold", "--out", str(tmp_path / "r")]
    )
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "task stateeval_voice_000 calls StateGen's own voice functions" in lines[0]


def test_trace_directory_layout(tmp_path: Path):
    d = tmp_path / "session_traces"
    d.mkdir()
    (d / "evaluator_0.json").write_text(json.dumps(_session_ok()))
    (d / "session_metadata.json").write_text(json.dumps({**_META, "prompt_book": {"0": _PROMPT}}))
    tasks = load_bench(d)
    assert [t["id"] for t in tasks] == ["stateeval_session_000"] and tasks[0]["text"] == _PROMPT


def test_state_oracle_is_cross_checked(tmp_path: Path):
    ev = _session_ok()
    ev["test_cases"][0]["state_oracle"] = {
        "web||cart": [{"source": "web", "type": "cart", "data": {"title": "Seeded cart"}}]
    }
    bench = _write_rows(tmp_path / "session.jsonl", [_row(0, ev)])
    tasks, skipped = published.load(bench, report=False)
    assert (
        not tasks
        and "state_oracle['web||cart']: 1 sessions published, 2 under callbench" in skipped[0].reason
    )


# -- malformed rows: one line naming the file and field ---------------------------------------
@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"example_id": 0, "prompt": "x", "metadata_json": "{}"},
            "session.jsonl:1: missing field 'evaluator_json'",
        ),
        (
            {**_row(0, _session_ok()), "example_id": "zero"},
            "session.jsonl:1: field 'example_id' must be an integer",
        ),
        (
            {**_row(0, _session_ok()), "evaluator_json": "{not json"},
            "session.jsonl:1: field 'evaluator_json' is not JSON",
        ),
        (
            {**_row(0, _session_ok()), "prompt": ""},
            "session.jsonl:1: field 'prompt' must be a non-empty string",
        ),
        (
            _row(0, {"test_cases": []}),
            "session.jsonl:1: evaluator_json: field 'test_cases' must be a non-empty list",
        ),
        (
            _row(0, {"test_cases": [{"program": "x = 1", "program_info": {}, "result": None}]}),
            "test_cases[0].program_info.init_local_str must be a string",
        ),
    ],
)
def test_malformed_rows_give_one_line_errors(tmp_path: Path, row: dict, message: str):
    bench = _write_rows(tmp_path / "session.jsonl", [row])
    with pytest.raises(DataError) as exc:
        load_bench(bench)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_row_file_that_is_not_utf8_is_one_line(tmp_path: Path):
    bench = _write_rows(tmp_path / "session.jsonl", [_row(0, _session_ok())])
    bench.write_bytes(bench.read_bytes() + b'{"example_id": 1, "prompt": "caf\xe9"}\n')  # a Latin-1 byte on line 2
    with pytest.raises(DataError) as exc:
        load_bench(bench)
    assert "session.jsonl: not UTF-8 text" in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_split_and_missing_prompt_book(tmp_path: Path):
    bench = _write_rows(tmp_path / "other.jsonl", [_row(0, _session_ok())])
    with pytest.raises(DataError, match="cannot tell the scenario"):
        load_bench(bench)
    d = tmp_path / "traces"
    d.mkdir()
    (d / "evaluator_0.json").write_text(json.dumps(_session_ok()))
    (d / "session_metadata.json").write_text(json.dumps(_META))
    with pytest.raises(DataError, match=r"session_metadata.json: field 'prompt_book'"):
        load_bench(d)


def test_duplicate_example_id(tmp_path: Path):
    bench = _write_rows(tmp_path / "session.jsonl", [_row(0, _session_ok()), _row(0, _session_ok())])
    with pytest.raises(DataError, match="example_id 0 used twice"):
        load_bench(bench)
