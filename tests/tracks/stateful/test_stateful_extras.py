"""A scenario whose packages are missing (tensor without torch) is a one-line MissingExtraError
with the exact install command, never a scored runtime error or a dropped reference.

torch is hidden by putting ``None`` in ``sys.modules`` (how Python blocks an import), so these
tests run the same with or without the ``hf`` extra installed.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import MissingExtraError
from callbench.tracks.stateful.execution import Case, execute
from callbench.tracks.stateful.generator import GenerateOptions, generate
from callbench.tracks.stateful.scenario import check_extras, missing_extra
from callbench.tracks.stateful.scenarios import check_extras as check_scenarios
from callbench.tracks.stateful.scenarios import get_scenario

HINT = "the 'tensor' scenario needs the 'torch' package: pip install 'callbench[hf]'"


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)


def test_the_scenarios_declare_their_packages():
    assert get_scenario("tensor").runtime.requires == (("torch", "hf"),)
    assert get_scenario("session").runtime.requires == (("requests", "stateful"),)
    assert get_scenario("voice").runtime.requires == ()


def test_message_names_the_exact_install_command(no_torch):
    with pytest.raises(MissingExtraError) as err:
        check_extras(get_scenario("tensor"))
    assert str(err.value) == HINT
    assert err.value.install == "pip install 'callbench[hf]'"
    check_extras(get_scenario("voice"))  # nothing missing
    # a whole benchmark: the others can run alone
    with pytest.raises(MissingExtraError) as err:
        check_scenarios(["voice", "tensor", "session", "tensor"])
    assert str(err.value) == HINT + "; or run the others alone: --scenario session,voice"
    with pytest.raises(MissingExtraError) as err:
        check_scenarios(["tensor"])
    assert str(err.value) == HINT
    check_scenarios(["session", "voice"])
    # the error survives a process pool
    again = pickle.loads(pickle.dumps(err.value))
    assert str(again) == HINT and again.extra == "hf"


def test_installed_packages_pass():
    pytest.importorskip("torch")
    assert missing_extra(get_scenario("tensor")) is None


def test_execute_refuses_instead_of_scoring_a_runtime_error(no_torch):
    with pytest.raises(MissingExtraError, match=r"pip install 'callbench\[hf\]'"):
        execute(get_scenario("tensor"), "result = 1\n", Case("base", {}, None))


def test_generate_writes_no_task_and_drops_no_reference(no_torch, tmp_path: Path):
    out = tmp_path / "tensor"
    with pytest.raises(MissingExtraError, match=r"pip install 'callbench\[hf\]'"):
        generate(get_scenario("tensor"), out, GenerateOptions(n=2, seed=0))
    assert not (out / "tasks.jsonl").exists() and not (out / "manifest.json").exists()


def test_cli_prints_the_install_command_unmangled(no_torch, tmp_path: Path):
    # rich would read "[hf]" as a style tag and print "pip install 'callbench'"
    res = CliRunner().invoke(app, ["generate", "stateful", "--scenario", "tensor", "--n", "1", "--out", str(tmp_path / "t")])
    assert res.exit_code == 2
    assert f"error: {HINT}" in " ".join(res.output.split())


def test_run_stops_before_scoring_a_tensor_task(no_torch, tmp_path: Path):
    from callbench.api import run

    with pytest.raises(MissingExtraError) as err:
        run("stateful", "gold", out_dir=tmp_path, scenarios=("tensor",), concurrency=1)
    assert str(err.value) == HINT
