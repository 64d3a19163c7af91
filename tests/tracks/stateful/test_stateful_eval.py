"""Execution, oracles and the error taxonomy of StateEval, on hand-made tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.models.base import ModelOutput
from callbench.tracks.base import Sample
from callbench.tracks.stateful.execution import Case, Outcome, execute, judge, same
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.track import StatefulOptions, StatefulTrack, extract_code

pytest.importorskip("requests")

VOICE_REF = (
    "voices_1 = api.search_voices(query_1, gender=None)\n"
    "speech_1 = api.text_to_speech(text_1, voices_1[0]['id'])\n"
    "result = speech_1\n"
)
SESSION_REF = (
    "session_1 = requests.post(f\"{BASE_URL}/api/sessions/{source_1}/chat\", json={'data': data_1}).json()\n"
    "result = session_1['id']\n"
)
CX = {"instruction_words": 5, "code_lines": 3, "n_calls": 2, "path_depth": 2, "binding_count": 1}


def _task(scenario: str, reference: str, cases: list[Case], tid: str = "t1") -> dict:
    scen = get_scenario(scenario)
    out = []
    for c in cases:
        expected = execute(scen, reference, c)
        assert expected.status == "ok", expected.error
        out.append({"name": c.name, "preload": c.preload, "service_seed": c.service_seed, "expected": expected.to_json()})
    return {
        "id": tid,
        "scenario": scenario,
        "text": "task",
        "inputs": {k: k for k in cases[0].preload},
        "result_var": "result",
        "reference": reference,
        "cases": out,
        "complexity": CX,
    }


@pytest.fixture(scope="module")
def voice_track(tmp_path_factory) -> tuple[StatefulTrack, dict]:
    task = _task(
        "voice",
        VOICE_REF,
        [
            Case("base", {"query_1": "calm", "text_1": "Hello there friend"}),
            Case("resampled_1", {"query_1": "warm", "text_1": "Good morning"}),
        ],
    )
    path = tmp_path_factory.mktemp("bench") / "voice" / "tasks.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(task) + "\n")
    return StatefulTrack(StatefulOptions(bench=str(path.parent.parent), timeout_s=5.0)), task


def _verdict(track: StatefulTrack, task: dict, text: str) -> tuple[str, str | None]:
    res = track.evaluate(Sample(task["id"], task["scenario"], (task, 0)), ModelOutput(text=text, mode="chat"))
    return res.status, res.error


WRONG = {
    "no_code": "```python\n```",
    "syntax": "```python\nresult = api.text_to_speech(text_1,\n```",
    "runtime": "result = api.get_audio('audio_99')",
    "wrong_result": VOICE_REF + "result = speech_1['id']\n",
    "wrong_state": VOICE_REF + "api.isolate_audio(speech_1['id'])\n",
    "timeout": "while True:\n    pass\n",
    "sandbox_violation": "import os\ntry:\n    os.system('true')\nexcept Exception:\n    pass\n" + VOICE_REF,
    "wrong_host": (
        "import socket\ntry:\n    socket.create_connection(('8.8.8.8', 53), timeout=1)\nexcept Exception:\n    pass\n" + VOICE_REF
    ),
}


@pytest.mark.parametrize("expected", list(WRONG))
def test_each_error_class_is_classified(voice_track, expected):
    track, task = voice_track
    status, error = _verdict(track, task, WRONG[expected])
    assert status == expected, error


def test_gold_and_equivalent_programs_pass(voice_track):
    track, task = voice_track
    assert _verdict(track, task, f"Here you go:\n```python\n{VOICE_REF}```\nDone.") == ("ok", None)
    other = (  # another way to the same calls; extra reads are allowed (histories ignore reads)
        "found = api.search_voices(query_1)\n"
        "api.get_voice(found[0]['id'])\n"
        "result = api.text_to_speech(text_1, found[0]['id'], speed=1.0)\n"
    )
    assert _verdict(track, task, other)[0] == "ok"


def test_samples_and_pass_at_k_through_the_track(voice_track):
    _, task = voice_track
    track = StatefulTrack(StatefulOptions(bench=voice_track[0].options.bench, samples=3, k=(2,), timeout_s=5.0))
    samples = track.load_samples()
    assert [s.id for s in samples] == ["t1#0", "t1#1", "t1#2"]
    results = [
        track.evaluate(s, ModelOutput(text=t, mode="chat"))
        for s, t in zip(samples, [VOICE_REF, WRONG["runtime"], WRONG["runtime"]], strict=True)
    ]
    summary = StatefulTrack.aggregate(samples, results, "strict")
    assert summary["metrics"]["pass@1"] == pytest.approx(1 / 3)
    assert summary["metrics"]["pass@2"] == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2)
    assert summary["metrics"]["error_runtime"] == pytest.approx(2 / 3)
    assert summary["by_scenario"]["voice"]["n_tasks"] == 1


def test_session_extra_write_with_same_final_state_fails():
    scen = get_scenario("session")
    case = Case("base", {"source_1": "web", "data_1": {"user": "ana", "count": 1}}, [{"source": "web", "type": "chat", "data": {"a": 1}}])
    expected = execute(scen, SESSION_REF, case)
    assert expected.status == "ok" and expected.result == 2 and expected.writes == 1
    assert judge(scen, expected, execute(scen, SESSION_REF, case)) == ("pass", None)
    same_state = SESSION_REF + (
        "requests.patch(f\"{BASE_URL}/api/sessions/web/chat/{result}\", json={'data': {}})\n"
    )
    verdict, why = judge(scen, expected, execute(scen, same_state, case))
    assert verdict == "wrong_state" and "2 successful writes" in why


def test_hostile_programs_do_not_leak_into_other_cases():
    scen = get_scenario("session")
    case = Case("base", {"source_1": "web", "data_1": {"user": "ana"}}, [])
    expected = execute(scen, SESSION_REF, case)
    hostile = (
        "import threading\n"
        "url = f'{BASE_URL}/api/sessions/web/chat'\n"
        "requests.post(url, data='{not json', headers={'Content-Type': 'application/json'})\n"
        "requests.post(url, data='x' * (3 << 20), headers={'Content-Type': 'application/json'})\n"
        "def spam():\n"
        "    for i in range(20):\n"
        "        requests.post(url, json={'data': {'i': i}})\n"
        "ts = [threading.Thread(target=spam) for _ in range(8)]\n"
        "[t.start() for t in ts]\n"
        "[t.join() for t in ts]\n"
        "result = len(requests.get(url).json())\n"
    )
    out = execute(scen, hostile, case)
    assert out.status == "ok", out.error
    assert out.result == 160 and len(out.state) == 160  # every concurrent write landed, none lost
    assert judge(scen, expected, execute(scen, SESSION_REF, case)) == ("pass", None)  # fresh server per case


def test_tensor_results_compare_with_tolerance():
    pytest.importorskip("torch")
    scen = get_scenario("tensor")
    ref = "result = torch.nn.functional.linear(x_1, w_1)\n"
    case = Case("base", {"x_1": {"__tensor__": {"shape": [2, 3], "seed": 1}}, "w_1": {"__tensor__": {"shape": [4, 3], "seed": 2}}})
    expected = execute(scen, ref, case)
    assert expected.status == "ok" and expected.result["__tensor__"]["shape"] == [2, 4]
    close = "result = (x_1 @ w_1.T) + 1e-7\n"
    far = "result = (x_1 @ w_1.T) + 1e-2\n"
    assert judge(scen, expected, execute(scen, close, case))[0] == "pass"
    assert judge(scen, expected, execute(scen, far, case))[0] == "wrong_result"


def test_same_and_extract_code():
    assert same({"a": [1, 2.0]}, {"a": [1, 2.0]}, None)
    assert not same(True, 1, None) and not same(1.0, 1.0000001, None)
    assert same(1.0, 1.0000001, (1e-4, 1e-5)) and same((1, 2), [1, 2], None)
    assert extract_code("x\n```python\na = 1\n```\n```\nlonger = 2\nb = 3\n```") == "longer = 2\nb = 3\n"
    assert extract_code("result = 1") == "result = 1\n"
    assert extract_code("```python\nresult = 1") == "result = 1\n"  # truncated fence


def test_bad_bench_rows_are_one_line_errors(tmp_path: Path):
    from callbench.errors import DataError

    f = tmp_path / "tasks.jsonl"
    f.write_text('{"id": "x"}\n')
    with pytest.raises(DataError, match=r"tasks.jsonl: task 1: missing field 'scenario'"):
        StatefulTrack(StatefulOptions(bench=str(f))).load_samples()
    f.write_text("{nope\n")
    with pytest.raises(DataError, match=r"tasks.jsonl:1: not JSON"):
        StatefulTrack(StatefulOptions(bench=str(f))).load_samples()


def test_outcome_round_trips():
    o = Outcome("ok", result=[1], result_set=True, state={"a": 1}, writes=2)
    assert Outcome(**json.loads(json.dumps(o.to_json()))) == o


def test_extract_code_from_completions_and_fence_variants():
    assert extract_code("result = 1\n```\n", completion=True) == "result = 1\n"
    assert extract_code("result = api.list_audio()\n```\nThis lists it.", completion=True) == "result = api.list_audio()\n"
    assert extract_code("Sure:\n```Python\nresult = 2\n```") == "result = 2\n"
    assert extract_code("```py3\nx\n```".replace("py3", "python3")) == "x\n"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("5", "task 1: a task must be a JSON object, not int"),
        ('{"id": "t", "scenario": "voice", "text": "", "inputs": [], "result_var": "result", "reference": "", "cases": [{}], "complexity": {}}', "field 'inputs' must be an object"),
        ('{"id": "t", "scenario": "voice", "text": "", "inputs": {}, "result_var": "result", "reference": "", "cases": [1], "complexity": {}}', r"cases\[0\] needs 'name'"),
        ('{"id": "t", "scenario": "voice", "text": "", "inputs": {}, "result_var": "result", "reference": "", "cases": [{"name": "b", "preload": {}}], "complexity": {}}', r"cases\[0\].expected must be an object"),
        ('{"id": "t", "scenario": "voice", "text": "", "inputs": {}, "result_var": "result", "reference": "", "cases": [{"name": "b", "preload": {}, "expected": {"status": "ok", "bogus": 1}}], "complexity": {}}', r"cases\[0\].expected must be an object"),
    ],
)
def test_malformed_case_rows_are_one_line_errors(tmp_path: Path, row, message):
    from callbench.errors import DataError

    f = tmp_path / "tasks.jsonl"
    f.write_text(row + "\n")
    with pytest.raises(DataError, match=message):
        StatefulTrack(StatefulOptions(bench=str(f))).load_samples()


def test_bad_options_are_refused():
    from callbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--timeout 0"):
        StatefulTrack(StatefulOptions(timeout_s=0))
    with pytest.raises(ConfigError, match="--temperature -1"):
        StatefulTrack(StatefulOptions(temperature=-1))
    assert StatefulTrack(StatefulOptions()).default_generation("completion").stop == ("```",)


def test_an_instruct_model_in_process_gets_its_chat_template(monkeypatch):
    """Issue 31: `run stateful` prompted an instruct GGUF in completion mode (it repeated itself to
    the token limit); an in-process backend left in auto mode now renders its chat template."""
    import callbench.api as api
    from callbench.tracks.stateful.track import StatefulTrack

    class Auto:
        name, mode, steerable = "fake", "completion", True

        def prefer_chat_template(self):
            self.mode = "chat"

    backend = Auto()
    monkeypatch.setattr(api, "load_model", lambda model, b=backend, **opts: b)
    api.load_backend("fake:x", {}, concurrency=1, track=StatefulTrack(), constrained=False)
    assert backend.mode == "chat"
