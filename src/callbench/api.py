"""Python API mirroring the CLI: ``callbench.run("webapi", model="gold")``, ``callbench.report(...)``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from callbench.errors import CallbenchError, ConfigError
from callbench.models.base import GenerationConfig
from callbench.models.registry import check_model_options, load_model
from callbench.runs.runner import RunOptions, RunOutcome, check_generation
from callbench.runs.runner import run as _run
from callbench.runs.settings import LOG_TARGETS, RunSettings, check_seed
from callbench.tracks.definition import Flag, get_definition


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


@dataclass
class Prepared:
    """A run ready to start: the track, the backend, the runner's options and the settings."""

    track: Any
    backend: Any
    options: RunOptions
    settings: RunSettings


def _validated(model: Any, values: dict[str, Any], where: str, name_of: Callable[[str], str] | None) -> Any:
    """``model(**values)``; pydantic's refusal is one line naming the field: ``name_of(field)``
    (the command line's flag), else ``where`` and the option's name."""
    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first.get("loc") or ()
        field = str(loc[0]) if loc else ""
        if first.get("type") == "extra_forbidden":
            raise ConfigError(f"{where}: unknown option '{field}'") from None
        what = name_of(field) if name_of is not None and field else f"{where}: option '{field}'"
        raise ConfigError(f"{what}: {first.get('msg')}") from None


def prepare(
    track: str,
    settings: Mapping[str, Any],
    *,
    name_of: Callable[[str], str] | None = None,
    note: Callable[[str, str], None] | None = None,
) -> Prepared:
    """Everything ``callbench.run`` and ``callbench run <track>`` do before the run starts.

    ``settings``: the keyword arguments of ``callbench.run`` (``model`` among them), validated
    against the shared :class:`~callbench.runs.settings.RunSettings` and the track's settings model
    (a field of the track's own shadows a shared one of the same name: stateful's ``temperature``);
    a refused value is one line naming it (as ``name_of(field)`` does, where given: the command line
    names the flag). Then the track's hooks (see :class:`~callbench.tracks.definition.TrackDefinition`): its
    ``prepare`` checks and turns the settings into the track's options, ``notes`` and
    ``check_backend`` may add lines for ``note(style, text)`` to print.
    """
    definition = get_definition(track)
    where = f"track '{track}'"
    model_cls = definition.settings_model()
    own = set(model_cls.model_fields) if model_cls is not None else set()
    shared = {k for k, f in RunSettings.model_fields.items() if _flag(f).api}
    run_values = {k: v for k, v in settings.items() if k not in own and k in shared}
    track_values = {k: v for k, v in settings.items() if k not in run_values}
    unknown = [k for k in track_values if k not in own and (model_cls is not None or k in RunSettings.model_fields)]
    if unknown:  # (a track without a settings model takes its keyword arguments as they come)
        raise ConfigError(f"{where}: unknown option '{unknown[0]}'")
    run_settings = _validated(RunSettings, run_values, where, name_of)
    if run_settings.seed is not None:
        check_seed(run_settings.seed)
    _check_log_targets(run_settings.log_to)
    given = {k: getattr(run_settings, k) for k in ("max_tokens", "temperature") if getattr(run_settings, k) is not None}
    check_generation(dataclasses.replace(GenerationConfig(), **given))  # before any data loads
    if definition.model_option is not None and track_values.get(definition.model_option) is None:
        track_values[definition.model_option] = run_settings.model  # e.g. nested: --prompt-template auto
    run = {"model": run_settings.model, "model_options": dict(run_settings.model_options or {}), "scoring": run_settings.scoring}
    if model_cls is not None:
        track_settings = _validated(model_cls, track_values, where, name_of)
        options = definition.options_for(track_settings, run)
        constrained = bool(getattr(track_settings, "constrained", False))
    check_model_options(run_settings.model, run["model_options"])  # before the data and the weights load
    if model_cls is not None:
        tr = definition.track_class()(options)
    else:
        tr = definition.make(**track_values)
        constrained = bool(track_values.get("constrained"))
    for line in definition.notes(tr, run) if definition.notes is not None else []:
        note and note(*line)
    backend = load_backend(run_settings.model, run["model_options"], concurrency=run_settings.concurrency, track=tr, constrained=constrained)
    for line in definition.check_backend(tr, backend, run) if definition.check_backend is not None else []:
        note and note(*line)
    default = tr.default_generation(answer_mode(backend, tr)) if hasattr(tr, "default_generation") else GenerationConfig()
    generation = run_settings.generation_config(default)
    scoring = run_settings.scoring or tr.scoring_modes[0]
    return Prepared(tr, backend, run_settings.run_options(scoring, generation), run_settings)


def _flag(field: Any) -> Flag:
    return next((m for m in field.metadata if isinstance(m, Flag)), Flag())


def run(
    track: str, model: str, options: Mapping[str, Any] | None = None, /, *, console: Console | None = None, **settings: Any
) -> RunOutcome:
    """Run ``track`` with ``model`` and return the run directory and its summary.

    The settings (``options`` and the keyword arguments, which win) are the track's options and the
    shared run settings (:class:`~callbench.runs.settings.RunSettings`: ``out_dir``, ``limit``,
    ``ids``, ``groups``, ``scoring``, ``max_tokens``, ``temperature``, ``seed``, ``generation``,
    ``model_options``, ``progress``, ``force``, ``rescore``, ``log_to`` ...), the ``callbench run``
    options of the same names; an unknown one or a wrong value is a one-line ConfigError naming it.
    ``generation`` replaces the track's decoding defaults whole, or as a mapping such as
    ``{"temperature": 0.7, "seed": 1}`` changes only those fields of them. ``log_to``: experiment
    trackers the finished run is logged to (``"mlflow"``, ``"wandb"``; a tracker whose package is
    missing stops the call before the run; one that fails after it raises with the finished run's
    outcome as the error's ``outcome``)."""
    prepared = prepare(track, {**(options or {}), **settings, "model": model})
    outcome = _run(prepared.track, prepared.backend, prepared.options, console)
    try:
        log_run_to(outcome.run_dir, prepared.settings.log_to, console=console)
    except CallbenchError as exc:  # the run itself is finished and stored: say which it was
        exc.outcome = outcome  # type: ignore[attr-defined]
        raise
    return outcome


def log_run_to(run_dir: Path, targets: Sequence[str] | None, *, console: Console | None = None) -> list[str]:
    """Log the run in ``run_dir`` to each experiment tracker of ``targets`` (``--log-to``, see
    :func:`callbench.report.tracking.log_run`, which says on ``console`` where it went); returns
    each tracker's id of it."""
    if not targets:
        return []
    from callbench.report.tracking import log_run

    return [log_run(run_dir, target, console=console) for target in targets]


def _check_log_targets(targets: Sequence[str] | None) -> None:
    """A tracker's name is checked before the run, not after it."""
    bad = [t for t in targets or () if t not in LOG_TARGETS]
    if bad:
        raise ConfigError(f"--log-to {bad[0]}: choose from {', '.join(LOG_TARGETS)}")
    if targets:
        from callbench.report.tracking import check_tracker

        for target in targets:  # an extra that is not installed stops the run before it starts
            check_tracker(target)


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
