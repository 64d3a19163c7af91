"""A run's identity covers everything that changes a verdict (issue 12).

A changed input is refused with one line naming what changed; ``--force`` starts over and
``--rescore`` keeps the stored answers and scores them again (only when the answers would be the
same: same model, options, prompts and settings). ``summary.json``, ``config.json`` and ``report``
describe the same samples whatever was run into the directory before.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app
from callbench.errors import ConfigError
from callbench.models import registry
from callbench.models.gold import GoldModel
from callbench.models.replay import ReplayModel
from callbench.report.build import load_run

TASKS = [
    {"index": 0, "api": "petstore", "task": "Fetch pet 7.", "spec": "spec.yaml",
     "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets/7"}},
    {"index": 1, "api": "petstore", "task": "List 5 pets.", "spec": "spec.yaml",
     "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets", "params": {"limit": 5}}},
    {"index": 2, "api": "petstore", "task": "List 3 pets.", "spec": "spec.yaml",
     "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets", "params": {"limit": 3}}},
]
# one correct answer and two requests the spec does not allow (DELETE and PUT /pets)
PREDS = [
    {"id": "petstore_0", "output": "get('https://petstore.swagger.io/v2/pets/7');"},
    {"id": "petstore_1", "output": "delete('https://petstore.swagger.io/v2/pets');"},
    {"id": "petstore_2", "output": "put('https://petstore.swagger.io/v2/pets');"},
]
POST = "    post:\n      description: Creates a new pet"


@pytest.fixture
def bench(tmp_path, data_root):
    """Own tasks on a private copy of the petstore spec, and replayed answers for them."""
    spec = tmp_path / "spec.yaml"
    spec.write_bytes((data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml").read_bytes())
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(t) for t in TASKS))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(p) for p in PREDS))
    return SimpleNamespace(spec=spec, tasks=tasks, preds=preds, out=tmp_path / "runs")


@pytest.fixture
def calls(monkeypatch):
    """Backends that count the model calls: ``countreplay:FILE``, ``optgold`` (whose
    ``extra_body`` option is an identity option, like the openai backend's), ``flakygold``."""
    counter = {"n": 0, "fail_after": None}

    class CountingReplay(ReplayModel):
        async def generate(self, inp, config):
            counter["n"] += 1
            return await super().generate(inp, config)

    class OptionGold(GoldModel):
        name = "optgold"

        def __init__(self, options):
            super().__init__()
            self.options = dict(options)

        @property
        def identity_options(self):
            return {"extra_body": self.options.get("extra_body")}

    class FlakyGold(GoldModel):
        name = "flakygold"

        async def generate(self, inp, config):
            if counter["fail_after"] is not None and counter["n"] >= counter["fail_after"]:
                raise RuntimeError("the model process died")
            counter["n"] += 1
            return await super().generate(inp, config)

    monkeypatch.setitem(registry._FACTORIES, "countreplay", lambda target, options: CountingReplay(Path(target)))
    monkeypatch.setitem(registry._FACTORIES, "optgold", lambda target, options: OptionGold(options))
    monkeypatch.setitem(registry._FACTORIES, "flakygold", lambda target, options: FlakyGold())
    return counter


def _illegal(outcome) -> float:
    return outcome.summary["metrics"]["illegal_implementations_t"]


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_edited_replay_predictions_refuse_resume(bench):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks)}
    run("webapi", f"replay:{bench.preds}", run_id="x", **kw)
    bench.preds.write_text("\n".join(json.dumps({**p, "output": PREDS[0]["output"].replace("7", p["id"][-1])})
                                     for p in PREDS))
    with pytest.raises(ConfigError) as exc:
        run("webapi", f"replay:{bench.preds}", run_id="x", **kw)
    line = _one_line(exc)
    assert "different run" in line and "model_options.predictions_sha256" in line and "->" in line
    assert "--force" in line and "--rescore" not in line  # other answers: re-scoring the old ones is wrong
    # without --run-id the edited predictions get a directory of their own, scored afresh
    first = run("webapi", f"replay:{bench.preds}", **kw)
    assert first.run_dir.name != "x" and not first.resumed and first.generated == 3


def test_edited_spec_refuses_resume_naming_the_spec(bench):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x"}
    assert _illegal(run("webapi", f"replay:{bench.preds}", **kw)) == pytest.approx(2 / 3)
    bench.spec.write_text(bench.spec.read_text().replace(POST, POST.replace("post", "put")))  # PUT /pets is legal now
    with pytest.raises(ConfigError) as exc:
        run("webapi", f"replay:{bench.preds}", **kw)
    line = _one_line(exc)
    assert "scoring.specs_sha256.spec.yaml" in line and "--rescore" in line and "--force" in line
    # the same refusal on the command line: one line, exit 2, the stored verdicts untouched
    res = CliRunner().invoke(app, ["run", "webapi", "--model", f"replay:{bench.preds}", "--tasks", str(bench.tasks),
                                   "--out", str(bench.out), "--run-id", "x", "--no-progress"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "specs_sha256" in res.output and "Traceback" not in res.output
    summary = json.loads((bench.out / "x" / "summary.json").read_text())
    assert summary["metrics"]["illegal_implementations_t"] == pytest.approx(2 / 3)


def test_changed_backend_option_refuses_resume_and_rescore(bench, calls):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x"}
    run("webapi", "optgold", model_options={"extra_body": {"top_k": 1}}, **kw)
    with pytest.raises(ConfigError) as exc:
        run("webapi", "optgold", model_options={"extra_body": {"top_k": 40}}, **kw)
    line = _one_line(exc)
    assert "model_options.extra_body.top_k 1 -> 40" in line
    with pytest.raises(ConfigError) as exc:
        run("webapi", "optgold", model_options={"extra_body": {"top_k": 40}}, rescore=True, **kw)
    assert "--rescore keeps the stored answers" in _one_line(exc)
    again = run("webapi", "optgold", model_options={"extra_body": {"top_k": 1}}, **kw)
    assert again.resumed and again.generated == 0


def test_force_starts_over(bench):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x"}
    run("webapi", "gold", **kw)
    bench.spec.write_text(bench.spec.read_text() + "\n# edited\n")
    with pytest.raises(ConfigError):
        run("webapi", f"replay:{bench.preds}", **kw)
    out = run("webapi", f"replay:{bench.preds}", force=True, limit=2, **kw)
    assert not out.resumed and out.generated == 2
    assert out.summary["n"] == 2 and out.summary["n_stored"] == 2  # the gold rows are gone
    assert out.summary["model"].startswith("replay:")
    cfg = json.loads((bench.out / "x" / "config.json").read_text())
    assert cfg["identity"]["model"].startswith("replay:") and cfg["selection"]["limit"] == 2
    with pytest.raises(ConfigError, match="--force and --rescore"):
        run("webapi", f"replay:{bench.preds}", force=True, rescore=True, **kw)


def test_rescore_keeps_the_answers_and_scores_them_with_the_edited_spec(bench, calls):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x", "progress": False}
    stale = run("webapi", f"countreplay:{bench.preds}", **kw)
    assert calls["n"] == 3 and _illegal(stale) == pytest.approx(2 / 3)
    bench.spec.write_text(bench.spec.read_text().replace(POST, POST.replace("post", "put")))
    out = run("webapi", f"countreplay:{bench.preds}", rescore=True, **kw)
    assert calls["n"] == 3 and out.generated == 0 and out.rescored == 3  # the model was not asked
    fresh = run("webapi", f"countreplay:{bench.preds}", out_dir=bench.out, tasks_file=str(bench.tasks), run_id="y")
    assert _illegal(out) == _illegal(fresh) == pytest.approx(1 / 3)
    assert out.summary["metrics"] == fresh.summary["metrics"]
    # the stored rows carry the new verdicts, and the directory now resumes under the new identity
    assert load_run(out.run_dir, None).summary["metrics"] == fresh.summary["metrics"]
    again = run("webapi", f"countreplay:{bench.preds}", **kw)
    assert again.resumed and again.generated == 0 and _illegal(again) == pytest.approx(1 / 3)


def test_rescore_refuses_answers_to_other_prompts_or_from_another_model(bench):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x"}
    run("webapi", "gold", **kw)
    with pytest.raises(ConfigError) as exc:
        run("webapi", "gold", prompt_version="v1", rescore=True, **kw)
    line = _one_line(exc)
    assert "--rescore keeps the stored answers" in line and "prompt_version v2 -> v1" in line
    with pytest.raises(ConfigError) as exc:
        run("webapi", f"replay:{bench.preds}", rescore=True, **kw)
    assert "model gold -> replay:preds.jsonl" in _one_line(exc)


def test_limit_80_then_10_summary_config_and_report_agree(tmp_path, data_root):
    """A narrower session (limit 10 on an 80-sample run) returns its own summary and leaves the
    run describing its 80 samples (issue 31: a later comparison said "samples per run: 20" after
    callbench.run(..., limit=20) on a 395-sample run); a wider one extends the run."""
    run("webapi", "gold", out_dir=tmp_path, run_id="x", limit=80)
    out = run("webapi", "gold", out_dir=tmp_path, run_id="x", limit=10)
    assert out.resumed and out.generated == 0
    assert out.summary["n"] == out.summary["n_selected"] == 10 and out.summary["selection"]["limit"] == 10
    run_dir = tmp_path / "x"
    summary = json.loads((run_dir / "summary.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    loaded = load_run(run_dir, None)  # what 'callbench report' shows
    assert summary["n"] == summary["n_selected"] == loaded.summary["n"] == loaded.summary["n_selected"] == 80
    assert summary["selection"]["limit"] == config["selection"]["limit"] == loaded.summary["selection"]["limit"] == 80
    assert len(config["selection"]["sample_ids"]) == 80 and len(loaded.rows) == 80
    assert {r["id"] for r in loaded.rows} == set(config["selection"]["sample_ids"])
    assert summary["n_stored"] == loaded.summary["n_stored"] == 80
    assert summary["complete"] is loaded.summary["complete"] is True
    assert summary["metrics"] == loaded.summary["metrics"] and summary["by_api"] == loaded.summary["by_api"]
    wider = run("webapi", "gold", out_dir=tmp_path, run_id="x", limit=90)  # extends the run: it now describes 90
    assert wider.generated == 10 and wider.summary["n"] == 90
    assert json.loads((run_dir / "summary.json").read_text())["n"] == load_run(run_dir, None).summary["n"] == 90


def test_a_stopped_session_leaves_no_summary_of_another_selection(bench, calls):
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x", "concurrency": 1}
    run("webapi", "flakygold", limit=1, **kw)
    calls["fail_after"] = calls["n"] + 1
    with pytest.raises(RuntimeError, match="died"):
        run("webapi", "flakygold", **kw)
    run_dir = bench.out / "x"
    assert not (run_dir / "summary.json").exists()  # it described the one-sample selection
    config = json.loads((run_dir / "config.json").read_text())
    assert config["selection"]["sample_ids"] == ["petstore_0", "petstore_1", "petstore_2"]
    con = sqlite3.connect(run_dir / "run.sqlite")
    stored = {r[0] for r in con.execute("SELECT id FROM samples")}
    con.close()
    loaded = load_run(run_dir, None)  # what 'callbench report' shows
    assert loaded.summary["n"] == len(stored) < 3 and loaded.summary["n_selected"] == 3
    assert loaded.summary["complete"] is False


def test_run_directory_of_an_older_version_still_resumes(bench):
    """A config.json from before the identity split: what it recorded is compared, nothing else."""
    kw = {"out_dir": bench.out, "tasks_file": str(bench.tasks), "run_id": "x"}
    run("webapi", "gold", **kw)
    path = bench.out / "x" / "config.json"
    cfg = json.loads(path.read_text())
    ident = cfg["identity"]
    scoring = ident.pop("scoring")
    del ident["model_options"]
    ident.update(data_file=str(bench.tasks), data_sha256=scoring["data_sha256"])  # the old flat layout
    cfg["selection"] = {"limit": None, "ids": [], "groups": []}
    path.write_text(json.dumps(cfg))
    out = run("webapi", "gold", **kw)
    assert out.resumed and out.generated == 0 and out.summary["n"] == 3
    assert "scoring" in json.loads(path.read_text())["identity"]  # recorded in full from now on
    ident["model"] = "other"
    cfg["identity"] = ident
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="model other -> gold"):
        run("webapi", "gold", **kw)


def test_kept_stop_strings_enter_the_identity_only_when_set():
    """``stop_kept`` came after runs were made: left empty it is not recorded, so those runs keep
    their identity (and directory name); set, it is part of the generation."""
    from callbench.models.base import GenerationConfig
    from callbench.runs.identity import build_identity, generation_digest

    track = SimpleNamespace(name="webapi", fingerprint=dict, scoring_fingerprint=dict)
    model = SimpleNamespace(identity="gold", mode="completion", identity_options={})
    plain = build_identity(track, model, GenerationConfig(max_tokens=250, stop=("\n```",)))
    kept = build_identity(track, model, GenerationConfig(max_tokens=250, stop_kept=("\n```\n",)))
    assert "stop_kept" not in plain["generation"] and plain["generation"]["stop"] == ["\n```"]
    assert kept["generation"]["stop_kept"] == ["\n```\n"]
    assert generation_digest(plain) != generation_digest(kept)


def test_run_directory_names_keep_model_names_whole():
    """Issue 31: run directory names cut the model name mid-word (at 40 characters)."""
    from callbench.runs.runner import _slug

    assert _slug("llamacpp:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf[chat,heal]") == "llamacpp-qwen2.5-coder-0.5b-instruct-q4_k_m-chat-heal"
    assert _slug("openai:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:8000/v1") == "openai-meta-llama-Llama-3.1-8B-Instruct-127.0.0.1-8000-v1"
    long = _slug("replay:/data/predictions/of-a-model-with-a-really-rather-long-name-indeed-v2.jsonl")
    assert long == "replay-data-predictions-of-a-model-with-a-really-rather-long"  # 60, at a boundary
    assert _slug("x" * 80) == "x" * 60 and _slug("///") == "model"
