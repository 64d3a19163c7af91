"""Issue 30's acceptance: a track defined in one file (this one), with no edit anywhere else, runs
end to end through ``callbench.run``, ``callbench run <track>`` (flags generated from its options
model), ``--config``, ``callbench report``, ``callbench export``/``load_run`` and ``callbench show``.

The toy track asks a model to echo a word (upper-cased with ``--shout``); its task file gives each
task's word and the answer the ``gold`` backend returns, which is deliberately wrong for one task,
so the figures are not all 100 %: of the four tasks, three pass (75 %), group ``a`` two of two,
group ``b`` one of two (50 %).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typer.testing import CliRunner

import callbench
from callbench.cli import app
from callbench.errors import ConfigError, DataError
from callbench.models.base import ModelInput, ModelOutput
from callbench.report.model import Column, RunInfo, SampleOutcome, Table, TrackView, fmt
from callbench.tracks.base import Sample, SampleResult, Track, file_sha256
from callbench.tracks.definition import TaskSource, TrackDefinition, registered

TASKS = [
    {"id": "t1", "group": "a", "word": "hello", "gold": "hello"},
    {"id": "t2", "group": "a", "word": "world", "gold": "world"},
    {"id": "t3", "group": "b", "word": "api", "gold": "api"},
    {"id": "t4", "group": "b", "word": "call", "gold": "cal"},  # the gold answer misses: t4 fails
]


# -- the track ------------------------------------------------------------------------------------


class ToyOptions(BaseModel):
    """The toy's options: the one source of its flags, --config keys and callbench.run keywords."""

    model_config = ConfigDict(extra="forbid")

    data: str = Field(description="Task file: a JSON list of {id, group, word, gold}.")
    shout: bool = Field(False, description="Ask for the word in capitals.")
    repeat: int = Field(1, ge=1, le=3, description="How many times the answer repeats the word.")


def _read_tasks(path: Path) -> dict[str, Any]:
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a toy task file ({exc})") from None
    return {r["id"]: r for r in rows}


class ToyTrack(Track):
    name = "toy"

    def __init__(self, options: ToyOptions):
        self.options = options

    def _answer(self, word: str) -> str:
        word = word.upper() if self.options.shout else word
        return " ".join([word] * self.options.repeat)

    def load_samples(self) -> list[Sample]:
        return [Sample(id=t["id"], group=t["group"], payload=t) for t in _read_tasks(Path(self.options.data)).values()]

    def build_input(self, sample: Sample) -> ModelInput:
        prompt = f"Say '{sample.payload['word']}'" + (" in capitals" if self.options.shout else "")
        return ModelInput(
            sample_id=sample.id,
            prompt=prompt,
            messages=[{"role": "user", "content": prompt}],
            reference=self._answer(sample.payload["gold"]),
        )

    def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        got = output.text.strip()
        expected = self._answer(sample.payload["word"])
        verdict = {"correct": got == expected, "expected": expected, "detail": {"length": len(got)}}
        return SampleResult(status="ok", parsed=got, execution={"echo": got}, verdicts={"strict": verdict})

    @classmethod
    def aggregate(cls, samples: list[Sample], results: list[SampleResult], scoring: str) -> dict[str, Any]:
        def rate(rs: list[SampleResult]) -> float:
            return sum(bool(r.verdicts[scoring]["correct"]) for r in rs) / len(rs) if rs else 0.0

        groups = sorted({s.group for s in samples})
        by_group = {
            g: {"n": sum(s.group == g for s in samples), "accuracy": rate([r for s, r in zip(samples, results, strict=True) if s.group == g])}
            for g in groups
        }
        return {"metrics": {"accuracy": rate(results)}, "by_group": by_group}

    def fingerprint(self) -> dict[str, Any]:
        return {"data_file": str(Path(self.options.data).resolve()), "shout": self.options.shout, "repeat": self.options.repeat}

    def scoring_fingerprint(self) -> dict[str, Any]:
        return {"data_sha256": file_sha256(Path(self.options.data))}


class ToyView(TrackView):
    track = "toy"
    context_what = "expected words"

    def tables(self, runs: list[RunInfo]) -> list[Table]:
        table = Table(title="toy · accuracy", columns=[Column("group", align="left")] + [Column(r.label) for r in runs])
        table.add("all", *[fmt(r.summary["metrics"]["accuracy"]) for r in runs])
        for g in sorted(runs[0].summary.get("by_group", {})):
            table.add(g, *[fmt(r.summary["by_group"].get(g, {}).get("accuracy")) for r in runs])
        return [table]

    def sample(self, row: dict[str, Any], scoring: str, context: Any) -> SampleOutcome:
        v = (row.get("verdicts") or {}).get(scoring) or {}
        task = context.get(row["id"]) if isinstance(context, dict) else None
        passed = bool(v.get("correct"))
        detail = {"word": task["word"] if task else None, "got": row.get("parsed")}
        return SampleOutcome(passed, None if passed else "wrong_word", "" if passed else f"expected {v.get('expected')}", detail)


def _print_summary(summary: dict[str, Any], console: Any) -> None:
    console.print(f"toy accuracy {100 * summary['metrics']['accuracy']:.1f} %", highlight=False)


def _columns(mode: str, verdict: dict[str, Any], out: dict[str, Any]) -> None:
    out[f"{mode}.passed"] = 1 if verdict.get("correct") else 0


TOY = TrackDefinition(
    name="toy",
    track=ToyTrack,
    options=ToyOptions,
    description="echo a word (a test's track)",
    view=ToyView,
    summary=_print_summary,
    columns=_columns,
    tasks=TaskSource(load=_read_tasks, defaults=lambda root: []),
)


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def toy():
    with registered(TOY) as definition:
        yield definition


@pytest.fixture
def tasks_file(tmp_path):
    path = tmp_path / "toy_tasks.json"
    path.write_text(json.dumps(TASKS), encoding="utf-8")
    return path


def _cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def _only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


# -- the tests ------------------------------------------------------------------------------------


def test_callbench_run_scores_the_toy_track(toy, tasks_file, tmp_path):
    outcome = callbench.run("toy", "gold", out_dir=tmp_path / "runs", data=str(tasks_file), shout=True, repeat=2)
    summary = outcome.summary
    assert summary["metrics"]["accuracy"] == 0.75  # t1..t3 pass, t4's gold answer is wrong
    assert summary["by_group"] == {"a": {"n": 2, "accuracy": 1.0}, "b": {"n": 2, "accuracy": 0.5}}
    config = json.loads((outcome.run_dir / "config.json").read_text())
    assert config["identity"]["track"] == "toy"
    assert (config["identity"]["shout"], config["identity"]["repeat"]) == (True, 2)


def test_callbench_run_refuses_a_wrong_option(toy, tasks_file, tmp_path):
    with pytest.raises(ConfigError, match="repeat"):
        callbench.run("toy", "gold", out_dir=tmp_path, data=str(tasks_file), repeat=9)
    with pytest.raises(ConfigError, match="loud"):
        callbench.run("toy", "gold", out_dir=tmp_path, data=str(tasks_file), loud=True)


def test_the_cli_command_is_generated_from_the_options_model(toy):
    result = _cli("run", "toy", "--help")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for flag, help_text in (("--data", "Task file"), ("--shout", "Ask for the word in capitals."), ("--repeat", "How many times")):
        assert flag in text and help_text in text
    assert "--model" in text and "--config" in text
    listed = _cli("run", "--help")
    assert listed.exit_code == 0 and "echo a word (a test's track)" in listed.output


def test_cli_run_has_the_identity_of_callbench_run(toy, tasks_file, tmp_path):
    """The same options through the CLI and the API name the same run: the CLI resumes it."""
    out = tmp_path / "runs"
    first = callbench.run("toy", "gold", out_dir=out, data=str(tasks_file), shout=True)
    result = _cli("run", "toy", "-m", "gold", "--data", str(tasks_file), "--shout", "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    assert "toy accuracy 75.0 %" in result.output
    assert _only_run(out) == first.run_dir
    result = _cli("run", "toy", "-m", "gold", "--data", str(tasks_file), "--repeat", "0", "--out", str(out))
    assert result.exit_code == 2 and "--repeat" in result.output


def test_config_file_sets_the_options(toy, tasks_file, tmp_path):
    out = tmp_path / "runs"
    cfg = tmp_path / "toy.yaml"
    cfg.write_text(f"data: {tasks_file}\nshout: true\nrepeat: 3\nmax-tokens: 16\n", encoding="utf-8")
    result = _cli("run", "toy", "-m", "gold", "--config", str(cfg), "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    config = json.loads((_only_run(out) / "config.json").read_text())
    assert (config["identity"]["shout"], config["identity"]["repeat"]) == (True, 3)
    assert config["config_file"]["path"] == str(cfg.resolve())
    cfg.write_text("data: x\nrepeat: many\n", encoding="utf-8")
    result = _cli("run", "toy", "-m", "gold", "--config", str(cfg), "--out", str(out))
    assert result.exit_code == 2 and "repeat: expected an integer" in result.output
    cfg.write_text("loud: true\n", encoding="utf-8")
    result = _cli("run", "toy", "-m", "gold", "--config", str(cfg), "--out", str(out))
    assert result.exit_code == 2 and "unknown key 'loud'" in result.output


def test_report_export_and_show(toy, tasks_file, tmp_path):
    outcome = callbench.run("toy", "gold", out_dir=tmp_path / "runs", data=str(tasks_file))
    run_dir = outcome.run_dir

    result = _cli("report", str(run_dir))
    assert result.exit_code == 0, result.output
    assert "toy · accuracy" in result.output and "75.0" in result.output
    assert "3 of 4 samples pass, 1 fail (wrong_word 1)" in " ".join(result.output.split())
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "toy · accuracy" in html and "expected call" in html

    result = _cli("export", str(run_dir), "--format", "csv")
    assert result.exit_code == 0, result.output
    with open(run_dir / "export.csv", encoding="utf-8") as fh:
        rows = {r["sample_id"]: r for r in csv.DictReader(fh)}
    assert [rows[i]["strict.passed"] for i in ("t1", "t2", "t3", "t4")] == ["1", "1", "1", "0"]
    assert rows["t4"]["strict.detail.length"] == "3" and rows["t4"]["track"] == "toy"
    frame = callbench.load_run(run_dir, as_frame=False)
    assert next(iter(k for k in frame[0] if k.startswith("strict."))) == "strict.passed"  # derived columns lead

    result = _cli("show", str(run_dir), "t4")
    assert result.exit_code == 0, result.output
    assert f"reference: {tasks_file.resolve()}" in result.output
    assert '"word": "call"' in result.output  # the task, read by the definition's reference loader
    assert "correct: false" in result.output


def test_list_names_the_toy_track_and_unregistering_removes_it(tasks_file, tmp_path):
    with registered(TOY):
        result = _cli("list")
        assert result.exit_code == 0, result.output
        assert "echo a word (a test's track)" in result.output
    result = _cli("run", "toy", "--help")
    assert result.exit_code != 0
    with pytest.raises(ConfigError, match="unknown track 'toy'"):
        callbench.run("toy", "gold", out_dir=tmp_path, data=str(tasks_file))
