"""Python API mirroring the CLI: ``callbench.run("webapi", model="gold")``, ``callbench.report(...)``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig
from callbench.models.registry import load_model
from callbench.runs.runner import RunOptions, RunOutcome
from callbench.runs.runner import run as _run
from callbench.tracks.definition import get_definition


def make_track(track: str, **track_options: Any):
    """Track ``track`` (a registered name, see :mod:`callbench.tracks.definition`), configured
    with its options."""
    return get_definition(track).make(**track_options)


def load_backend(model: str, options: dict[str, Any], *, concurrency: int, track: Any, constrained: bool):
    """Build the backend for a run and check it can do what the run asks.

    The openai backend's own in-flight bound follows the run's concurrency; constrained runs need
    logits (or, where the track allows it, a server-side grammar) and a prompt the grammar
    continues: completion mode, or a chat template rendered in-process (the answer prefilled, or
    free and shaped from its first token). A backend left in ``auto`` mode uses the model's chat
    template for tracks that ask for it.
    """
    options = dict(options)
    if model.startswith("openai:"):
        options.setdefault("concurrency", concurrency)
    backend = load_model(model, **options)
    templated = getattr(track, "chat_template", False) or getattr(track, "chat_prefill", False)
    if templated and hasattr(backend, "prefer_chat_template"):
        backend.prefer_chat_template()
    if constrained and backend.name not in ("gold", "replay"):
        server_ok = track.server_constraints and backend.name == "openai"
        if not (backend.steerable or server_ok):
            where = "llamacpp:, hf: or a vLLM server via openai:" if track.server_constraints else "llamacpp: or hf:"
            raise ConfigError(f"--constrained: backend '{backend.name}' exposes no logits (use {where})")
        # A chat template rendered in-process lets the grammar shape the answer from its first
        # token (a prefilled answer continues the prompt like a completion; a free one is constrained
        # as if it continued the track's starter); a chat API's answer cannot be shaped.
        chat_ok = templated and hasattr(backend, "prefer_chat_template")
        if backend.mode == "chat" and not chat_ok:
            raise ConfigError("--constrained needs completion mode (--mode completion): the grammar continues the prompt")
    return backend


def answer_mode(backend: Any, track: Any) -> str:
    """How the backend's answers read for this track: a chat backend that renders the template
    itself and prefills the track's answer start produces continuations, like completion mode."""
    if backend.mode == "chat" and getattr(track, "chat_prefill", False) and hasattr(backend, "prefer_chat_template"):
        return "completion"
    return backend.mode


def run(
    track: str,
    model: str,
    *,
    out_dir: str | Path = "runs",
    run_id: str | None = None,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    per_group: int | None = None,
    concurrency: int = 8,
    scoring: str = "strict",
    generation: GenerationConfig | None = None,
    model_options: dict[str, Any] | None = None,
    progress: bool = False,
    console: Console | None = None,
    retry_errors: bool = False,
    max_backend_error_rate: float = 0.2,
    count_backend_errors: bool = False,
    eval_workers: int | None = None,
    force: bool = False,
    rescore: bool = False,
    **track_options: Any,
) -> RunOutcome:
    """Run ``track`` with ``model`` and return the run directory and its summary (the keyword
    arguments are the ``callbench run`` options of the same names; ``force`` starts the run
    directory over, ``rescore`` re-scores its stored answers)."""
    model_option = get_definition(track).model_option
    if model_option is not None:  # e.g. nested: --prompt-template auto reads the model's family from its spec
        track_options.setdefault(model_option, model)
    tr = make_track(track, **track_options)
    backend = load_backend(
        model, model_options or {}, concurrency=concurrency, track=tr, constrained=bool(track_options.get("constrained"))
    )
    if generation is None:
        generation = (
            tr.default_generation(answer_mode(backend, tr)) if hasattr(tr, "default_generation") else GenerationConfig()
        )
    opts = RunOptions(
        out_dir=Path(out_dir),
        run_id=run_id,
        limit=limit,
        ids=ids,
        groups=groups,
        per_group=per_group,
        concurrency=concurrency,
        scoring=scoring,
        generation=generation,
        progress=progress,
        retry_errors=retry_errors,
        max_backend_error_rate=max_backend_error_rate,
        count_backend_errors=count_backend_errors,
        eval_workers=eval_workers,
        force=force,
        rescore=rescore,
    )
    return _run(tr, backend, opts, console)


def report(
    run_dirs: Sequence[str | Path],
    *,
    html: str | Path | None = None,
    scoring: str | None = None,
    count_backend_errors: bool = False,
):
    """Load runs, (re)aggregate them and write the HTML report; returns the report data."""
    from callbench.report.build import build_report

    return build_report(
        [Path(p) for p in run_dirs],
        html=Path(html) if html else None,
        scoring=scoring,
        count_backend_errors=count_backend_errors,
    )
