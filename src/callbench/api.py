"""Python API mirroring the CLI: ``callbench.run("webapi", model="gold")``, ``callbench.report(...)``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from callbench.models.base import GenerationConfig
from callbench.models.registry import load_model
from callbench.runs.runner import RunOptions, RunOutcome
from callbench.runs.runner import run as _run
from callbench.tracks.base import get_track


def make_track(track: str, **track_options: Any):
    cls = get_track(track)
    if track == "webapi":
        from callbench.tracks.webapi.track import WebApiOptions

        return cls(WebApiOptions(**track_options))
    if track == "nested":
        from callbench.tracks.nested.track import NestedOptions

        return cls(NestedOptions(**track_options))
    return cls(**track_options)


def run(
    track: str,
    model: str,
    *,
    out_dir: str | Path = "runs",
    run_id: str | None = None,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    concurrency: int = 8,
    scoring: str = "strict",
    generation: GenerationConfig | None = None,
    model_options: dict[str, Any] | None = None,
    progress: bool = False,
    console: Console | None = None,
    **track_options: Any,
) -> RunOutcome:
    """Run ``track`` with ``model`` and return the run directory and its summary."""
    tr = make_track(track, **track_options)
    model_options = dict(model_options or {})
    if model.startswith("openai:"):
        model_options.setdefault("concurrency", concurrency)
    backend = load_model(model, **model_options)
    if generation is None:
        generation = tr.default_generation(backend.mode) if hasattr(tr, "default_generation") else GenerationConfig()
    opts = RunOptions(
        out_dir=Path(out_dir),
        run_id=run_id,
        limit=limit,
        ids=ids,
        groups=groups,
        concurrency=concurrency,
        scoring=scoring,
        generation=generation,
        progress=progress,
    )
    return _run(tr, backend, opts, console)


def report(run_dirs: Sequence[str | Path], *, html: str | Path | None = None, scoring: str | None = None):
    """Load runs, (re)aggregate them and write the HTML report; returns the report data."""
    from callbench.report.build import build_report

    return build_report([Path(p) for p in run_dirs], html=Path(html) if html else None, scoring=scoring)
