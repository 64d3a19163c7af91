"""The LLM-only generation baseline (issue 13, part 9): a model writes task + program directly;
the same oracle check keeps the valid answers and counts the others by reason."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from callbench.cli import app
from callbench.testing.scripted import ScriptedModel as Scripted
from callbench.tracks.stateful.coverage import apis_called
from callbench.tracks.stateful.generator import GenerateOptions, read_tasks
from callbench.tracks.stateful.llm_only import generate_llm, parse_answer
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.track import load_bench

GOOD = """TASK:
Search the catalog for calm voices, speak "hello there" with the first one, transcribe that audio
and set `result` to the transcript record.

```python
voices = api.search_voices("calm", gender=None)
speech = api.text_to_speech("hello there", voices[0]['id'])
result = api.speech_to_text(speech['id'])
```
"""
FAILS = "TASK:\nFetch an audio that does not exist.\n\n```python\nresult = api.get_audio('nope')\n```\n"
NO_RESULT = "TASK:\nList the audio.\n\n```python\nx = api.list_audio()\n```\n"
NO_CALL = "TASK:\nSet result to 3.\n\n```python\nresult = 3\n```\n"
PROSE = "I would search for voices and then synthesize something."


def test_parse_answer():
    text, code = parse_answer(GOOD)
    assert text.startswith("Search the catalog") and "TASK" not in text and code.startswith("voices = ")
    assert parse_answer(PROSE) is None


def test_valid_answers_are_kept_and_invalid_ones_counted(tmp_path: Path):
    scen = get_scenario("voice")
    writer = Scripted([PROSE, FAILS, GOOD, NO_RESULT, NO_CALL, GOOD])
    m = generate_llm(scen, tmp_path / "v", GenerateOptions(n=2, seed=0), writer)
    assert m["n_kept"] == 2 and m["attempts"] == 6 and m["validity"] == round(2 / 6, 4)
    assert m["invalid"] == {
        "no task text and program": 1,
        "fails: runtime_error": 1,
        "does not set result": 1,
        "no API call": 1,
    }, m["invalid"]
    assert m["apis_called"] == ["search_voices", "speech_to_text", "text_to_speech"]
    assert m["api_coverage"] == round(3 / len(scen.apis), 4)
    # the prompt carries the API documentation and the result variable
    assert "text_to_speech" in writer.seen[0].messages[0]["content"] and "`result`" in writer.seen[0].prompt
    tasks = load_bench(tmp_path / "v")  # the benchmark's task format
    assert [t["id"] for t in tasks] == ["voice_llm_001", "voice_llm_002"]
    t = tasks[0]
    assert t["text_source"] == "llm-only" and t["cases"][0]["expected"]["status"] == "ok"
    assert t["complexity"]["n_calls"] == 3 and t["complexity"]["binding_count"] == 2
    assert json.loads((tmp_path / "v" / "manifest.json").read_text())["method"] == "llm"
    # resumable: the kept tasks stay, the attempts go on
    m = generate_llm(scen, tmp_path / "v", GenerateOptions(n=3, seed=0), Scripted([GOOD]))
    assert m["n_kept"] == 3 and m["attempts"] == 7 and len(read_tasks(tmp_path / "v" / "tasks.jsonl")) == 3


def test_apis_called_matches_call_heads():
    scen = get_scenario("tensor")
    assert apis_called(scen, ["y = torch.permute(x_1, (1, 0))\nresult = torch.nn.functional.linear(y, w)\n"]) == ["linear", "permute"]


def test_cli_method_llm_needs_a_writer(tmp_path: Path):
    r = CliRunner().invoke(app, ["generate", "stateful", "--scenario", "voice", "--out", str(tmp_path), "--method", "llm"])
    assert r.exit_code != 0 and "--method llm needs --writer" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["generate", "stateful", "--scenario", "voice", "--out", str(tmp_path), "--method", "x"])
    assert r.exit_code != 0 and "--method x" in r.output


def test_apis_called_tells_url_apis_apart():
    """In a scenario inferred from a spec every call is ``requests.<method>(f"{BASE_URL}...")``:
    the URL, not the head, says which operation was called (a head alone counted every GET)."""
    from pathlib import Path

    from callbench.specs import load_spec
    from callbench.statemodel import infer_model
    from callbench.tracks.stateful.spec_scenario import build_scenario

    spec = load_spec(Path(__file__).resolve().parents[2] / "fixtures" / "one_spec" / "petstore.yaml")
    scen = build_scenario(spec, infer_model(spec))
    code = (
        "pet_1 = requests.post(f\"{BASE_URL}/pets\", json=body_1).json()\n"
        "read_pet_1 = requests.get(f\"{BASE_URL}/pets/{pet_1['id']}\").json()\n"
        "found = requests.get(f\"{BASE_URL}/pets/findByStatus\", params={\"status\": status_1}).json()\n"
        "result = requests.get(f\"{BASE_URL}/users/{user_1['username']}\").json()\n"
    )
    assert apis_called(scen, [code]) == ["createPet", "findPetsByStatus", "getPet", "getUser"]
    assert apis_called(scen, ["x = requests.get(f'nothing')"]) == []
