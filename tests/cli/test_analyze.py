"""``callbench analyze complexity`` against values computed by hand (issue 13, part 9)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from callbench.cli import app

runner = CliRunner()

# 3 calls; bindings: sessions_1 -> 2nd call, fetched_1 -> 3rd call = 2; depth 3 (a chain of 3); 4 lines
SESSION = (
    'sessions_1 = requests.get(f"{BASE_URL}/api/sessions/a/b").json()\n'
    "fetched_1 = requests.get(f\"{BASE_URL}/api/sessions/a/b/{sessions_1[0]['id']}\").json()\n"
    "\n"
    "gone_1 = requests.delete(f\"{BASE_URL}/api/sessions/a/b/{fetched_1['id']}\").status_code\n"
    "result = gone_1\n"
)
# 3 calls; bindings: a -> join, b -> join = 2 (the condition reads a, but it is not an API argument);
# depth 2; 7 lines (the comment and the blank line do not count)
OTHER = (
    "a = api.make(x)\n"
    "b = api.make(y)\n"
    "# join them when a is big\n"
    "\n"
    "if a['n'] > t:\n"
    "    c = api.join(a, b)\n"
    "    result = c\n"
    "else:\n"
    "    result = a\n"
)


def _write(path: Path, tasks: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), "utf-8")
    return path


def _tasks() -> list[dict]:
    return [
        {"id": "s1", "scenario": "session", "reference": SESSION},
        {"id": "o1", "scenario": "elsewhere", "call_roots": ["api"], "reference": OTHER},
    ]


def test_hand_computed_means(tmp_path: Path):
    f = _write(tmp_path / "bench" / "mixed" / "tasks.jsonl", _tasks())
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", str(f), "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert {k: data[k] for k in ("mean_calls", "mean_bindings", "mean_path_depth", "mean_lines", "n_tasks")} == {
        "mean_calls": 3.0,
        "mean_bindings": 2.0,
        "mean_path_depth": 2.5,
        "mean_lines": 5.5,
        "n_tasks": 2,
    }
    assert data["by_scenario"]["session"] == {"n_tasks": 1, "mean_calls": 3.0, "mean_bindings": 2.0, "mean_path_depth": 3.0, "mean_lines": 4.0}
    assert data["by_scenario"]["elsewhere"]["mean_path_depth"] == 2.0
    assert "calls" in r.output and "2.50" in r.output and "5.50" in r.output


def test_directories_and_several_files(tmp_path: Path):
    a = _write(tmp_path / "b" / "x" / "tasks.jsonl", _tasks()[:1])
    _write(tmp_path / "b" / "y" / "tasks.jsonl", _tasks()[1:])
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", str(tmp_path / "b"), str(a), "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["n_tasks"] == 2 and len(data["files"]) == 2  # x/tasks.jsonl named twice counts once
    assert data["mean_calls"] == 3.0 and data["mean_path_depth"] == 2.5
    assert "all" in r.output


def test_default_is_the_builtin_set(tmp_path: Path):
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["n_tasks"] == 120 and set(data["by_scenario"]) == {"session", "tensor", "voice"}
    assert set(data["files"]) == {"stateval_v1/session", "stateval_v1/tensor", "stateval_v1/voice"}


def test_errors_are_one_line(tmp_path: Path):
    bad = _write(tmp_path / "t.jsonl", [{"id": "z", "scenario": "nowhere", "reference": "x = 1\n"}])
    r = runner.invoke(app, ["analyze", "complexity", str(bad)])
    assert r.exit_code != 0 and "unknown scenario 'nowhere'" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["analyze", "complexity", str(tmp_path / "missing")])
    assert r.exit_code != 0 and "no such benchmark file" in r.output


def _published_row(example_id: int, program: str) -> dict:
    info = {"init_local_str": "", "init_load_info": None}
    evaluator = {"test_cases": [{"program": program, "program_info": info, "result": None, "state_oracle": None}], "config": {}}
    return {"example_id": example_id, "evaluator_json": json.dumps(evaluator), "prompt": "p", "metadata_json": "{}"}


def test_published_stateeval_layout_is_measured(tmp_path: Path):
    """Rows of the published StateEval are measured as they are (no conversion, no run): upstream's
    voice API is module-level functions, each a call; builtins are not."""
    pub = tmp_path / "pub"
    # the SESSION program ending in RESULT = ...; with the appended result line: 3 calls, 2 bindings,
    # depth 3, 5 lines
    _write(pub / "session.jsonl", [_published_row(0, SESSION.replace("result = gone_1", "RESULT = gone_1"))])
    # 2 calls (len is a builtin, not an API call), 1 binding, depth 2; 4 lines + the result line = 5
    voice = (
        "n_1 = len(user_text_0)\n"
        "audio_1 = text_to_speech(text=user_text_0, voice_name='Adam')\n"
        "clip_1 = isolate_audio(audio_1['audio_id'])\n"
        "RESULT = clip_1\n"
    )
    _write(pub / "voice.jsonl", [_published_row(0, voice)])
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", str(pub), "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert {k: data[k] for k in ("n_tasks", "mean_calls", "mean_bindings", "mean_path_depth", "mean_lines")} == {
        "n_tasks": 2,
        "mean_calls": 2.5,
        "mean_bindings": 1.5,
        "mean_path_depth": 2.5,
        "mean_lines": 5.0,
    }
    assert data["by_scenario"]["voice"]["mean_calls"] == 2.0
    assert len(data["files"]) == 1 and next(iter(data["files"])).endswith("pub (published StateEval)")


def test_upstream_definition_hand_computed(tmp_path: Path):
    """StateGen's counting on the same two programs. SESSION: 3 calls (requests.get twice, requests.delete;
    ``.json()`` is named ``json``, a standard-library module, and not counted), no binding: no call
    is a whole assigned value (the ``.json()`` call is), depth 0, 4 lines. OTHER: 3 calls, bindings
    (a, c) and (b, c), depth 1 (edges, not calls), 7 lines."""
    f = _write(tmp_path / "bench" / "mixed" / "tasks.jsonl", _tasks())
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", str(f), "--definition", "upstream", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "upstream definition" in r.output
    data = json.loads(out.read_text())
    assert data["definition"] == "upstream"
    assert {k: data[k] for k in ("mean_calls", "mean_bindings", "mean_path_depth", "mean_lines", "n_tasks")} == {
        "mean_calls": 3.0,
        "mean_bindings": 1.0,
        "mean_path_depth": 0.5,
        "mean_lines": 5.5,
        "n_tasks": 2,
    }
    r = runner.invoke(app, ["analyze", "complexity", str(f), "--json", str(out)])
    assert json.loads(out.read_text())["definition"] == "callbench"


def test_upstream_definition_measures_the_published_program(tmp_path: Path):
    """Published rows are measured without callbench's appended result line (``globals().get`` would
    be one more call by upstream's rules): 2 calls, binding (audio_1, clip_1), depth 1."""
    voice = (
        "audio_1 = text_to_speech(text=user_text_0, voice_name='Emma')\n"
        "clip_1 = isolate_audio(input_speech=audio_1)\n"
        "RESULT = clip_1\n"
    )
    _write(tmp_path / "pub" / "voice.jsonl", [_published_row(0, voice)])
    out = tmp_path / "cx.json"
    r = runner.invoke(
        app, ["analyze", "complexity", str(tmp_path / "pub"), "--definition", "upstream", "--json", str(out)]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert (data["mean_calls"], data["mean_bindings"], data["mean_path_depth"]) == (2.0, 1.0, 1.0)


def test_unknown_definition_is_one_line(tmp_path: Path):
    r = runner.invoke(app, ["analyze", "complexity", "--definition", "paper"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--definition paper: choose from callbench, upstream" in lines[0]


PETSTORE = Path(__file__).resolve().parents[1] / "fixtures" / "one_spec" / "petstore.yaml"


def test_nested_call_sequences_by_hand():
    """A nested task's gold sequence: var_2 uses var_1, var_3 uses var_1 and var_2 -> 3 bindings,
    depth 3 (var_1 -> var_2 -> var_3); an independent call adds a call, no binding."""
    from callbench.tracks.stateful.complexity import sequence_metrics

    calls = [
        {"name": "a", "label": "var_1", "arguments": {"x": 1}},
        {"name": "b", "label": "var_2", "arguments": {"y": "$var_1.id$"}},
        {"name": "c", "label": "var_3", "arguments": {"p": "$var_1.id$", "q": ["$var_2.name$", "$var_2.id$"]}},
        {"name": "d", "label": "var_4", "arguments": {"z": "$var_9.id$"}},  # no such call: no binding
    ]
    assert sequence_metrics(calls) == {"n_calls": 4, "path_depth": 3, "binding_count": 3, "code_lines": None}


def test_task_files_made_from_a_spec_are_measured(tmp_path: Path):
    """Issue 31: analyze complexity refused the task files of generate stateful --spec and
    generate nested --spec ("unknown scenario")."""
    stateful, nested = tmp_path / "pet", tmp_path / "nested" / "pet.jsonl"
    assert runner.invoke(app, ["generate", "stateful", "--spec", str(PETSTORE), "--n", "2", "--out", str(stateful)]).exit_code == 0
    assert runner.invoke(app, ["generate", "nested", "--spec", str(PETSTORE), "--n", "3", "--out", str(nested)]).exit_code == 0
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["analyze", "complexity", str(stateful / "tasks.jsonl"), str(nested), "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["n_tasks"] == 5 and len(data["files"]) == 2
    seq = next(v for k, v in data["files"].items() if k.endswith("pet.jsonl"))
    rows = [json.loads(line) for line in nested.read_text().splitlines()]
    assert seq["mean_calls"] == round(sum(len(r["output"]) for r in rows) / 3, 4) and seq["mean_lines"] is None
