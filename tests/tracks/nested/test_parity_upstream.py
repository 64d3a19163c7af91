"""``--scoring compat`` equals NESTFUL's published scorer on the shared parity fixture, sample by sample.

The fixture (``../shared/parity/nestful``, see its README.md) holds 349 mutated predictions over
NESTFUL v1 rows and the published scorer's figures for each of four parsers, produced by running
upstream's ``scorer.py`` unmodified. Every per-sample verdict (partial accuracy within 1e-9, full
accuracy, parse error) and every overall metric (within 1e-9) must be equal, for each parser:
in-process (the scoring path alone) and once through ``callbench run nested`` (the CLI path).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.tracks.nested.compat_parsers import parse
from callbench.tracks.nested.dataset import load_nested
from callbench.tracks.nested.metrics import aggregate, score_sample

_DEFAULT = Path(__file__).resolve().parents[4] / "shared" / "parity"
OVERALL_KEYS = (
    "n",
    "precision_function",
    "recall_function",
    "f1_function",
    "precision_parameter",
    "recall_parameter",
    "f1_parameter",
    "partial_sequence_accuracy",
    "full_sequence_accuracy",
    "parse_error_rate",
)


@pytest.fixture(scope="module")
def fixture_dir() -> Path:
    root = Path(os.environ.get("CALLBENCH_PARITY_DIR") or _DEFAULT) / "nestful"
    if not (root / "upstream.json").is_file():
        pytest.skip(f"NESTFUL parity fixture not found under {root} (set CALLBENCH_PARITY_DIR)")
    return root


@pytest.fixture(scope="module")
def fixture(fixture_dir: Path):
    upstream = json.loads((fixture_dir / "upstream.json").read_text())
    preds = {}
    for line in (fixture_dir / "preds.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            preds[row["id"]] = row["output"]
    tasks = load_nested(fixture_dir / "mut-data.json")
    assert [t.id for t in tasks] == list(preds), "fixture rows and predictions are not in the same order"
    return upstream, tasks, preds


def _check(upstream: dict, parser: str, per_sample: dict[str, dict], overall: dict) -> None:
    expected = upstream["per_sample"][parser]
    assert set(per_sample) == set(expected)
    differing = []
    for sid, want in expected.items():
        got = per_sample[sid]
        if (
            abs(got["partial_sequence_accuracy"] - want["partial_sequence_accuracy"]) > 1e-9
            or got["full_sequence_accuracy"] != want["full_sequence_accuracy"]
            or bool(got["parse_error"]) is not want["parse_error"]
        ):
            differing.append((sid, want, {k: got[k] for k in want}))
    assert not differing, f"{len(differing)} samples differ, e.g. {differing[:3]}"
    for key in OVERALL_KEYS:
        assert overall[key] == pytest.approx(upstream["overall"][parser][key], abs=1e-9), key


def test_fixture_names_the_four_parsers(fixture):
    upstream, _, _ = fixture
    assert upstream["parsers"] == [
        "Hammer2.0-7b",
        "granite-3.0-8b-instruct",
        "Llama-3.1-8B-Instruct",
        "xLAM-7b-fc-r",
    ]


@pytest.mark.parametrize(
    "parser", ["Hammer2.0-7b", "granite-3.0-8b-instruct", "Llama-3.1-8B-Instruct", "xLAM-7b-fc-r"]
)
def test_compat_equals_published_scorer_in_process(fixture, parser):
    upstream, tasks, preds = fixture
    verdicts = []
    for task in tasks:
        gold = [
            {"name": c.name, "label": c.raw_label or c.label, "arguments": c.arguments} for c in task.output
        ]
        reading = parse(preds[task.id], parser)
        verdicts.append(score_sample(None, gold, mode="compat", compat_parse=reading, sample_id=task.id))
    per_sample = {v["sample_id"]: v for v in verdicts}
    _check(upstream, parser, per_sample, aggregate(verdicts, "compat"))


def test_compat_equals_published_scorer_through_the_cli(fixture_dir, fixture, tmp_path):
    upstream, _, _ = fixture
    # The rows without their sibling catalog (mut-spec.json): scoring does not read it, and every
    # prompt would hold all of its tools (building them is most of a 60 s run)
    data = tmp_path / "mut-data.json"
    data.write_bytes((fixture_dir / "mut-data.json").read_bytes())
    res = CliRunner().invoke(
        app,
        [
            "run", "nested", "--model", f"replay:{fixture_dir / 'preds.jsonl'}",
            "--data", str(data), "--scoring", "compat", "--parser", "granite-3.0-8b-instruct",
            "--out", str(tmp_path), "--run-id", "parity-nestful", "--no-progress",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "parity-nestful"
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        rows = db.execute("SELECT id, verdicts FROM samples").fetchall()
    per_sample = {sid: json.loads(v)["compat"] for sid, v in rows}
    assert {v["parser"] for v in per_sample.values()} == {"granite-3.0-8b-instruct"}
    summary = json.loads((run_dir / "summary.json").read_text())
    _check(upstream, "granite-3.0-8b-instruct", per_sample, summary["metrics"])
    config = json.loads((run_dir / "config.json").read_text())
    assert config["identity"]["scoring"]["compat_parser"] == "granite-3.0-8b-instruct"
