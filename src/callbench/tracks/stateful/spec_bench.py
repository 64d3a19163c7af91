"""Stateful benchmarks generated from an OpenAPI spec: where the spec travels with the tasks.

``generate stateful --spec FILE [--model overlay.yaml]`` writes, beside ``tasks.jsonl`` and
``manifest.json``, a folder ``openapi/`` holding a copy of the spec, the whole state model the
tasks were generated with (inferred, with the overlay applied) and ``source.json``::

    {"scenario": "petstore", "spec": "spec.yaml", "model": "model.yaml",
     "sha256": {"spec": "...", "model": "..."}}

so the benchmark is self-contained: ``run stateful --bench DIR`` rebuilds the scenario (and with
it the mock each test case runs against) from these files, after checking their digests, and
registers it under its name (:func:`callbench.tracks.stateful.scenarios.register_scenario`).
A resumed generation must use the same spec and model (else a one-line error).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.tracks.stateful.spec_scenario import SpecScenario, build_scenario

FOLDER = "openapi"
_GENERIC = {"openapi", "swagger", "spec", "api"}  # file names that say nothing: the spec's title names the scenario
SOURCE = "source.json"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def spec_scenario(spec_path: str | Path, model_path: str | Path | None = None, *, name: str | None = None) -> SpecScenario:
    """Load ``spec_path`` (and the model file, else the inferred model) and build its scenario."""
    from callbench.specs import load_spec
    from callbench.statemodel import load_model

    spec_path = Path(spec_path)
    if not spec_path.is_file():
        raise ConfigError(f"--spec {spec_path}: no such file")
    spec = load_spec(spec_path)
    model = load_model(spec, model_path)
    stem = spec_path.stem.split(".")[0]
    sc = build_scenario(spec, model, name=name or (None if stem.lower() in _GENERIC else stem))
    from callbench.tracks.stateful.scenarios import available_scenarios

    if sc.name in available_scenarios():
        raise ConfigError(f"{spec_path}: scenario name '{sc.name}' is a built-in scenario's; pass another --name")
    if not sc.apis:
        raise ConfigError(f"{spec_path}: no operation of the spec is usable for stateful tasks (see 'callbench model infer --report')")
    return sc


def prepare(out: Path, spec_path: str | Path, model_path: str | Path | None = None, *, name: str | None = None) -> SpecScenario:
    """Copy the spec and the model into ``out/openapi/`` (or check that a resumed benchmark's are
    the same) and return the scenario built from the copies."""
    return prepare_folder(out / FOLDER, spec_path, model_path, name=name)


def prepare_folder(folder: Path, spec_path: str | Path, model_path: str | Path | None = None, *, name: str | None = None) -> SpecScenario:
    """:func:`prepare` into ``folder`` itself (the nested tasks' ``X.openapi/`` beside ``X.jsonl``)."""
    from callbench.statemodel import to_yaml

    sc = spec_scenario(spec_path, model_path, name=name)
    spec_path = Path(spec_path)
    spec_name = "spec" + "".join(spec_path.suffixes[-1:] or [".yaml"])
    model_text = to_yaml(sc.model)
    spec_sha = _sha(spec_path)
    model_sha = hashlib.sha256(model_text.encode("utf-8")).hexdigest()
    source = folder / SOURCE
    if source.exists():
        old = _read_source(source)
        if old.get("sha256") != {"spec": spec_sha, "model": model_sha} or old.get("scenario") != sc.name:
            raise ConfigError(
                f"{source}: this benchmark was generated from another spec or model (or scenario name); "
                "resume with the same --spec and --model, or use another --out"
            )
        return load_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(spec_path, folder / spec_name)
    (folder / "model.yaml").write_text(model_text, encoding="utf-8")
    source.write_text(
        json.dumps({"scenario": sc.name, "spec": spec_name, "model": "model.yaml", "sha256": {"spec": spec_sha, "model": model_sha}}, indent=1)
        + "\n",
        encoding="utf-8",
    )
    _LOADED.pop(folder.resolve(), None)
    return load_folder(folder)


def _read_source(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("scenario", "spec", "model")):
        raise DataError(f"{path}: needs 'scenario', 'spec' and 'model' (strings) and 'sha256'")
    return data


_LOADED: dict[Path, SpecScenario] = {}


def has_spec(bench_dir: Path) -> bool:
    return (bench_dir / FOLDER / SOURCE).is_file()


def load_bench_scenario(bench_dir: Path) -> SpecScenario:
    """The scenario of a benchmark folder made from a spec (digests checked, built once per folder)."""
    return load_folder(bench_dir / FOLDER)


def load_folder(folder: Path) -> SpecScenario:
    """The scenario whose spec, model and ``source.json`` are in ``folder``."""
    if not (folder / SOURCE).is_file():
        raise DataError(f"{folder}: no {SOURCE} (the spec and model of a benchmark made with --spec)")
    key = folder.resolve()
    if key in _LOADED:
        return _LOADED[key]
    source = _read_source(folder / SOURCE)
    files = {k: folder / source[k] for k in ("spec", "model")}
    for k, f in files.items():
        if f.parent != folder or not f.is_file():
            raise DataError(f"{folder / SOURCE}: {k}: no file {source[k]!r} in {folder}")
        want = (source.get("sha256") or {}).get(k)
        if want != _sha(f):
            raise DataError(f"{f}: its sha256 differs from the one in {SOURCE} (the file was changed after generation)")
    sc = spec_scenario(files["spec"], files["model"], name=source["scenario"])
    _LOADED[key] = sc
    return sc


def register_bench(tasks_file: Path) -> SpecScenario | None:
    """Register the scenario of the spec-made benchmark ``tasks_file`` belongs to (None: a
    benchmark of the built-in scenarios)."""
    from callbench.tracks.stateful.scenarios import register_scenario

    if not has_spec(tasks_file.parent):
        return None
    sc = load_bench_scenario(tasks_file.parent)
    register_scenario(sc, where=str(tasks_file.parent / FOLDER))
    return sc
