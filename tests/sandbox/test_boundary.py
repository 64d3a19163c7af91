"""The OS boundary's own logic: views, closures, refusal without bwrap, the unsafe fallback."""

from __future__ import annotations

import importlib.util
from unittest import mock

import pytest

from callbench.sandbox import boundary
from callbench.sandbox.program import run_program


def test_view_of_sources_names_packages_and_single_harness_modules():
    setup = (
        "import json, os.path\nimport requests\nfrom torch import nn\n"
        "from callbench.tracks.stateful.services.voice import VoiceService\nfrom . import x\n"
    )
    view = boundary.View.of_sources(setup, "import math\nimport yaml.constructor")
    assert view.packages == ("requests", "torch", "yaml")
    assert view.modules == ("callbench.tracks.stateful.services.voice",)


def test_harness_module_is_bound_alone():
    clo = boundary.closure(boundary.View(modules=("callbench.tracks.stateful.services.voice",)))
    assert [inside for _, inside in clo.binds] == [f"{boundary.SITE}/callbench/tracks/stateful/services/voice.py"]


@pytest.mark.skipif(importlib.util.find_spec("cffi") is None, reason="cffi not installed")
def test_closure_takes_the_whole_distribution_and_its_requirements():
    clo = boundary.closure(boundary.View(packages=("cffi",)))
    names = {inside.rsplit("/", 1)[1].split(".")[0].split("-")[0] for _, inside in clo.binds}
    # _cffi_backend is imported on first use, pycparser is a requirement used by cdef()
    assert {"cffi", "_cffi_backend", "pycparser"} <= names
    assert "requests" not in names and "torch" not in names


def test_unimportable_package_is_a_one_line_error():
    with pytest.raises(boundary.SandboxUnavailable) as e:
        boundary.closure(boundary.View(packages=("no_such_package_callbench",)))
    assert "no_such_package_callbench" in str(e.value) and "\n" not in str(e.value)


def test_without_bwrap_code_is_refused_unless_allowed(monkeypatch):
    monkeypatch.delenv("CALLBENCH_UNSAFE_NO_SANDBOX", raising=False)
    with mock.patch.object(boundary, "_probe", return_value=(None, False, "no bwrap found")):
        with pytest.raises(boundary.SandboxUnavailable) as e:
            run_program("x = 1", result_vars=["x"])
        message = str(e.value)
        assert "\n" not in message and "--unsafe-no-sandbox" in message and "bubblewrap" in message
        assert boundary.describe() == "unavailable"
        boundary.allow_unsandboxed(True)
        try:
            res = run_program("import os\nx = os.getcwd()", result_vars=["x"])
            assert res.status == "ok" and res.variables["x"] != boundary.WORKDIR  # a host temp dir
            assert boundary.isolation() == "none"
        finally:
            boundary.allow_unsandboxed(False)


def test_sandboxed_run_records_bwrap():
    if boundary._probe()[0] is None:
        pytest.skip(f"bubblewrap cannot start here: {boundary._probe()[2]}")
    assert boundary.isolation() == "bwrap" and boundary.describe().startswith("bwrap (")


def test_cli_refuses_without_bwrap_and_records_the_unsafe_run(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from callbench.cli import app

    pytest.importorskip("requests")
    monkeypatch.delenv("CALLBENCH_UNSAFE_NO_SANDBOX", raising=False)
    args = ["run", "stateful", "--model", "gold", "--scenario", "voice", "--limit", "1", "--out", str(tmp_path), "--no-progress"]
    with mock.patch.object(boundary, "_probe", return_value=(None, False, "no bwrap found")):
        try:
            refused = CliRunner().invoke(app, args)
            assert refused.exit_code == 2 and "--unsafe-no-sandbox" in refused.output
            assert len(refused.output.strip().splitlines()) == 1 and not list(tmp_path.iterdir())
            done = CliRunner().invoke(app, [*args, "--unsafe-no-sandbox"])
        finally:
            boundary.allow_unsandboxed(False)
    assert done.exit_code == 0, done.output
    assert "WITHOUT the OS sandbox" in done.output
    config = json.loads(next(tmp_path.rglob("config.json")).read_text())
    assert '"sandbox": "none"' in json.dumps(config)
