"""A sweep's grid file: its expansion into cells (by hand), stable cell names, one-line errors
naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.errors import ConfigError
from callbench.sweep.grid import cell_name, load_grid

ISSUE_GRID = """\
models: [gold, "replay:preds.jsonl"]
tracks:
  webapi: {setup: [full, args], constrained: [false, true], limit: 20}
  nested: {limit: 20}
"""


def _grid(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_issue_grid_expands_to_ten_cells(tmp_path):
    grid = load_grid(_grid(tmp_path, ISSUE_GRID))
    got = [(c.track, c.model, c.settings) for c in grid.cells]
    expected = []
    for setup in ("full", "args"):
        for constrained in (False, True):
            for model in ("gold", "replay:preds.jsonl"):
                expected.append(("webapi", model, {"setup": setup, "constrained": constrained, "limit": 20}))
    expected += [("nested", "gold", {"limit": 20}), ("nested", "replay:preds.jsonl", {"limit": 20})]
    assert len(got) == 10 == 2 * (4 + 1)
    assert sorted(map(repr, got)) == sorted(map(repr, expected))
    assert len({c.name for c in grid.cells}) == 10
    assert grid.models == ["gold", "replay:preds.jsonl"]


def test_cell_names_are_stable(tmp_path):
    """The same track, model and settings give the same directory name whatever the grid's order,
    its other cells or its layout (a re-run finds its cells again); the name is pinned so a later
    version finds the run directories of an earlier one."""
    grid = load_grid(_grid(tmp_path, ISSUE_GRID))
    reordered = load_grid(
        _grid(
            tmp_path,
            "# the same grid, another order\ntracks:\n  nested: {limit: 20}\n"
            "  webapi: {limit: 20, constrained: [true, false], setup: [args, full]}\nmodels: [replay:preds.jsonl, gold]\n",
            "other.yaml",
        )
    )
    by_settings = {(c.track, c.model, tuple(sorted(c.settings.items()))): c.name for c in grid.cells}
    again = {(c.track, c.model, tuple(sorted(c.settings.items()))): c.name for c in reordered.cells}
    assert by_settings == again
    gold_nested = next(c for c in grid.cells if c.track == "nested" and c.model == "gold")
    assert gold_nested.name == "nested-gold-8bb61e264c"
    assert cell_name("webapi", "gold", {"setup": "full", "constrained": False, "limit": 20}) == "webapi-gold-fdcdcb9972"
    # runtime settings (concurrency, eval workers) do not rename a cell; what it measures does
    assert cell_name("nested", "gold", {"limit": 20, "concurrency": 2}) == gold_nested.name
    assert cell_name("nested", "gold", {"limit": 21}) != gold_nested.name


def test_list_valued_settings_expand_only_as_lists_of_lists(tmp_path):
    grid = load_grid(
        _grid(tmp_path, "models: gold\ntracks:\n  nested: {ids: [a, b]}\n  stateful: {samples: 2, k: [[1], [1, 2]]}\n")
    )
    assert [(c.track, c.settings) for c in grid.cells] == [
        ("nested", {"ids": ["a", "b"]}),
        ("stateful", {"samples": 2, "k": [1]}),
        ("stateful", {"samples": 2, "k": [1, 2]}),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("models: [gold]\ntracks: {webapi: {setpu: full}}\n", "grid.yaml: tracks.webapi.setpu: Extra inputs are not permitted"),
        ("models: [gold]\ntracks: {nested: {limit: ten}}\n", "grid.yaml: tracks.nested.limit: Input should be a valid integer"),
        ("models: [gold]\ntracks: {nested: {limit: [1, x]}}\n", "grid.yaml: tracks.nested.limit: Input should be a valid integer"),
        ("models: [gold]\ntracks: {nested: {mode: [direct, sideways]}}\n", "grid.yaml: tracks.nested.mode: --mode sideways"),
        ("models: [gold]\ntracks: {nested: {scoring: bogus}}\n", "grid.yaml: tracks.nested.scoring: 'bogus' is not one of strict, compat"),
        ("models: [gold]\ntracks: {nope: {}}\n", "grid.yaml: tracks.nope: unknown track 'nope'"),
        ("models: [gold]\ntracks: {}\n", "grid.yaml: tracks: Dictionary should have at least 1 item"),
        ("models: [gold]\ntracks: {nested: {}}\nseeds: [1]\n", "grid.yaml: seeds: Extra inputs are not permitted"),
        ("models: [gold, gold]\ntracks: {nested: {}}\n", "grid.yaml: models: 'gold' is listed twice"),
        ("models: [gold]\ntracks: {nested: {concurrency: [1, 2]}}\n", "grid.yaml: tracks.nested: two cells differ only in run settings"),
        ("- just a list\n", "grid.yaml: a grid is a mapping"),
        ("models: [gold, 'foo:bar']\ntracks: {nested: {}}\n", "grid.yaml: models.1: 'foo:bar': unknown backend 'foo'"),
        ("models: [gold, 7]\ntracks: {nested: {}}\n", "grid.yaml: models.1: Input should be a valid string"),
        ("models: [gold]\ntracks: {nested: {limit: []}}\n", "grid.yaml: tracks.nested.limit: an empty list expands to no cells"),
        ("models: [gold]\ntracks: {nested: {model_options: {bogus: 1}}}\n", "grid.yaml: tracks.nested.model_options: model 'gold': unknown option(s) bogus"),
        ("models: [gold\n", "grid.yaml: not valid YAML at line"),
        ("models: [gold]\ntracks: {webapi: {max_tokens: 0}}\n", "grid.yaml: tracks.webapi.max_tokens: Input should be greater than or equal to 1"),
        ("models: [gold]\ntracks: {webapi: {temperature: [0, -0.5]}}\n", "grid.yaml: tracks.webapi.temperature: Input should be greater than or equal to 0"),
        ("models: [gold]\ntracks: {webapi: {temperature: .inf}}\n", "grid.yaml: tracks.webapi.temperature: Input should be a finite number"),
        ("models: [gold]\ntracks: {nested: {seed: -1}}\n", "grid.yaml: tracks.nested.seed: Input should be greater than or equal to 0"),
        ("models: [gold]\ntracks: {nested: {seed: 2147483648}}\n", "grid.yaml: tracks.nested.seed: Input should be less than or equal to 2147483647"),
        ("models: [gold]\ntracks: {nested: {seed: [[1, 2]]}}\n", "grid.yaml: tracks.nested.seed: Input should be a valid integer"),
        ("models: [gold]\ntracks: {nested: {per_group: 0}}\n", "grid.yaml: tracks.nested.per_group: Input should be greater than or equal to 1"),
    ],
)
def test_a_bad_grid_is_one_line_naming_file_and_field(tmp_path, text, message):
    path = _grid(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_grid(path)
    text_of = str(err.value)
    assert "\n" not in text_of
    assert text_of.startswith(str(path.parent) + "/"), text_of
    assert message in text_of, text_of


def test_webapi_setup_is_checked_by_the_track(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("CALLBENCH_DATA_DIR", str(data_root))
    path = _grid(tmp_path, "models: [gold]\ntracks: {webapi: {setup: [full, fulll]}}\n")
    with pytest.raises(ConfigError, match=r"grid\.yaml: tracks\.webapi\.setup: --setup 'fulll': choose from full, args"):
        load_grid(path)


def test_a_track_without_settings_runs_with_its_defaults(tmp_path):
    grid = load_grid(_grid(tmp_path, "models: [gold]\ntracks:\n  nested:\n"))
    assert [(c.track, c.settings) for c in grid.cells] == [("nested", {})]


def test_an_api_key_stays_out_of_the_manifest_and_the_name(tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app
    from callbench.sweep.manifest import write_manifest

    text = "models: ['openai:m@http://127.0.0.1:9/v1']\ntracks:\n  nested: {model_options: {api_key: %s, mode: chat}}\n"
    one = load_grid(_grid(tmp_path, text % "sk-secret-1", "a.yaml"))
    two = load_grid(_grid(tmp_path, text % "sk-secret-2", "b.yaml"))
    assert one.cells[0].settings["model_options"]["api_key"] == "sk-secret-1"  # the worker gets it
    assert one.cells[0].name == two.cells[0].name  # another key is the same cell
    write_manifest(tmp_path / "s", one, {})
    written = (tmp_path / "s" / "sweep.json").read_text()
    assert "sk-secret" not in written and '"api_key": "<redacted>"' in written and '"mode": "chat"' in written
    dry = CliRunner().invoke(app, ["sweep", str(tmp_path / "a.yaml"), "--out", str(tmp_path / "s"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "sk-secret" not in dry.output and "<redacted>" in dry.output


def test_decoding_settings_expand_and_change_only_their_field(tmp_path):
    """``seed``, ``temperature`` and ``max_tokens`` are grid settings (lists expand to cells, each
    its own run directory); a cell passes them to callbench.run as changes to the track's decoding
    defaults, except a field the track's options have itself (stateful's ``temperature``)."""
    from callbench.sweep.grid import run_arguments

    grid = load_grid(
        _grid(
            tmp_path,
            "models: [gold]\ntracks:\n  webapi: {seed: [0, 1, 2], temperature: 0.7, max_tokens: 64}\n"
            "  stateful: {temperature: 0.8, seed: 3, per_group: 1}\n",
        )
    )
    webapi = [c for c in grid.cells if c.track == "webapi"]
    assert [c.settings["seed"] for c in webapi] == [0, 1, 2]
    assert len({c.name for c in webapi}) == 3  # a seed is part of what a cell measures
    assert run_arguments("webapi", webapi[1].settings) == {"generation": {"seed": 1, "temperature": 0.7, "max_tokens": 64}}
    (stateful,) = [c for c in grid.cells if c.track == "stateful"]
    assert run_arguments("stateful", stateful.settings) == {"temperature": 0.8, "per_group": 1, "generation": {"seed": 3}}
    assert run_arguments("nested", {"limit": 2}) == {"limit": 2}


def test_decoding_settings_reach_the_cells_run(tmp_path):
    """The cell's run records the changed fields and keeps the track's other decoding defaults."""
    from callbench.sweep.local import run_local

    grid = load_grid(_grid(tmp_path, "models: [gold]\ntracks:\n  nested: {limit: 2, seed: [5, 6], max_tokens: 77}\n"))
    outcome = run_local(grid, tmp_path / "sweep", workers=1)
    assert [r.ok for r in outcome.results] == [True, True]
    import json

    from callbench.models.base import GenerationConfig

    for cell, seed in zip(grid.cells, (5, 6), strict=True):
        summary = json.loads((tmp_path / "sweep" / "runs" / cell.name / "summary.json").read_text())
        gen = summary["generation"]
        assert (gen["seed"], gen["max_tokens"]) == (seed, 77)
        assert gen["temperature"] == GenerationConfig().temperature == 0.0
