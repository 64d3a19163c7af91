"""The run settings every track shares, said once (issue 30): :class:`RunSettings` is the source of
the shared flags of every ``callbench run <track>`` command (each field's :class:`Flag`; a track's
command may change a help text or a default, see :attr:`TrackDefinition.command
<callbench.tracks.definition.TrackDefinition.command>`), of their ``--config`` keys and of the
keyword arguments of ``callbench.run``; :meth:`RunSettings.run_options` is the one place that
builds the runner's :class:`~callbench.runs.runner.RunOptions` from them.

Light to import (``callbench run <track> --help`` reads it): the runner is imported when a run
starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig
from callbench.tracks.definition import Flag

if TYPE_CHECKING:
    from callbench.runs.runner import RunOptions

MODEL = "Model"
DATA = "Data and selection"
SCORING = "Scoring"
RUN_DIR = "Run directory"

SEED_HELP = (
    "Seed of the backend's sampling, sent with every request (llamacpp:, hf:, and openai: servers that "
    "honour 'seed'), so a run that samples (temperature > 0) draws the same answers when re-run. Part of "
    "the run identity: a run directory is not resumed with another seed."
)

MAX_SEED = 2**31 - 1  # every backend takes it (llama.cpp's is 32-bit, and 0xFFFFFFFF means "random")


def check_seed(seed: int) -> int:
    """A seed every backend reproduces (a negative one means "random" to llama.cpp)."""
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed {seed}: must be between 0 and {MAX_SEED}")
    return seed


#: Experiment trackers a finished run can be logged to (``--log-to``; callbench.report.tracking).
LOG_TARGETS = ("mlflow", "wandb")


class RunSettings(BaseModel):
    """What ``callbench.run(track, model, **settings)`` takes besides the track's own options, and
    the shared flags of ``callbench run <track>``. A None generation setting keeps the track's own
    decoding default (``generation``, a :class:`GenerationConfig` or a mapping of its fields,
    replaces or changes those defaults; ``max_tokens``, ``temperature`` and ``seed`` change it
    after that)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, protected_namespaces=())

    model: Annotated[str, Flag(opts=("--model", "-m"), panel=MODEL)] = Field(
        description="Backend spec, as for 'run webapi'."
    )
    scoring: Annotated[str | None, Flag(panel=SCORING)] = Field(None, description="Scoring mode (default: the track's first).")
    limit: Annotated[int | None, Flag(panel=DATA)] = Field(None, description="Only the first N tasks.")
    per_group: Annotated[int | None, Flag(panel=DATA)] = Field(
        None, description="The first N tasks of each group (--limit then caps the total)."
    )
    ids: Annotated[list[str] | None, Flag(panel=DATA, cli_type=str)] = Field(None, description="Comma-separated task ids.")
    groups: Annotated[list[str] | None, Flag(panel=DATA, cli_type=str)] = Field(
        None, description="Comma-separated groups (APIs, domains, scenarios)."
    )
    concurrency: Annotated[int, Flag(panel=MODEL)] = Field(8, description="Requests in flight (bounded by the backend).")
    max_tokens: Annotated[int | None, Flag(panel=MODEL)] = Field(None, description="New tokens per sample (default: the track's).")
    temperature: Annotated[float | None, Flag(panel=MODEL)] = Field(None, description="0 = greedy (default: the track's).")
    seed: Annotated[int | None, Flag(panel=MODEL, default=0)] = Field(None, description=SEED_HELP)
    generation: Annotated[GenerationConfig | dict[str, Any] | None, Flag(api=True)] = Field(
        None, description="The track's decoding defaults replaced (a GenerationConfig) or changed (a mapping of its fields)."
    )
    model_options: Annotated[
        dict[str, object] | None, Flag(name="model_arg", opts=("--model-arg",), panel=MODEL, cli_type=list[str])
    ] = Field(None, description="Backend option KEY=VALUE (repeatable).")
    out_dir: Annotated[Path, Flag(name="out", opts=("--out",), panel=RUN_DIR)] = Field(
        Path("runs"), description="Directory that holds run directories."
    )
    run_id: Annotated[str | None, Flag(panel=RUN_DIR)] = Field(
        None, description="Run directory name (default: derived from the settings)."
    )
    progress: Annotated[bool, Flag(name="no_progress", opts=("--no-progress",), panel=RUN_DIR, invert=True)] = Field(
        False, description="Hide the progress bar."
    )
    retry_errors: Annotated[bool, Flag(panel=RUN_DIR)] = Field(
        False,
        description="On resume, ask the backend again for the samples stored as backend errors (refused or failed "
        "requests, malformed responses).",
    )
    max_backend_error_rate: Annotated[float, Flag(panel=RUN_DIR)] = Field(
        0.2,
        description="Stop the run (finished samples kept) once more than this share of its samples got no usable "
        "answer from the backend (counted from 10 such samples on).",
    )
    count_backend_errors: Annotated[bool, Flag(panel=SCORING)] = Field(
        False,
        description="Score samples the backend never answered (backend_error) as failed, as if the answer were "
        "empty. Default: left out of the metrics and counted apart.",
    )
    eval_workers: Annotated[int | None, Flag(panel=SCORING)] = Field(
        None,
        description="Threads that score answers (each drives its own sandbox process) while requests go on; "
        "default: one per CPU core (stateful: one per request in flight).",
    )
    unsafe_no_sandbox: Annotated[bool, Flag(panel=SCORING, api=False)] = Field(
        False,
        description="Run generated code even where the bubblewrap sandbox cannot start (user namespaces "
        "disabled): only rlimits and an audit hook remain, which do not contain C code. Recorded in the run.",
    )
    force: Annotated[bool, Flag(panel=RUN_DIR)] = Field(
        False, description="Start the run directory over: delete its stored samples, answers, config and summary."
    )
    rescore: Annotated[bool, Flag(panel=RUN_DIR)] = Field(
        False,
        description="Keep every stored answer and score it again with the current data, specs and code (no model "
        "call for them); accepted when only scoring inputs changed, not the model, prompts or settings.",
    )
    log_to: Annotated[list[str] | None, Flag(panel=RUN_DIR, cli_type=list[str])] = Field(
        None,
        description="After the run, log it to an experiment tracker: mlflow or wandb (repeatable, or a comma-"
        "separated list; needs callbench[mlflow] or callbench[wandb]). The run's id or URL is printed.",
    )

    @field_validator("generation")
    @classmethod
    def _generation_fields(cls, value: Any) -> Any:
        """A mapping names only :class:`GenerationConfig` fields (checked before any model loads)."""
        if isinstance(value, Mapping):
            known = {f.name for f in dataclasses.fields(GenerationConfig)}
            unknown = sorted(set(value) - known)
            if unknown:
                raise ValueError(f"'{unknown[0]}' is no decoding setting (known: {', '.join(sorted(known))})")
        return value

    @field_validator("log_to", mode="before")
    @classmethod
    def _log_targets(cls, value: Any) -> Any:
        """``"mlflow"``, ``"mlflow,wandb"`` or a list of those: one list of target names."""
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return [t.strip() for v in value for t in v.split(",") if t.strip()] or None
        return value

    def generation_config(self, default: GenerationConfig) -> GenerationConfig:
        """The run's decoding settings: ``default`` (the track's) replaced or changed by
        ``generation``, then by ``max_tokens``, ``temperature`` and ``seed`` where given."""
        gen = default
        if isinstance(self.generation, GenerationConfig):
            gen = self.generation
        elif isinstance(self.generation, Mapping):
            gen = dataclasses.replace(gen, **dict(self.generation))
        changes = {k: getattr(self, k) for k in ("max_tokens", "temperature", "seed") if getattr(self, k) is not None}
        return dataclasses.replace(gen, **changes) if changes else gen

    def run_options(self, scoring: str, generation: GenerationConfig) -> RunOptions:
        """The runner's options (the one place they are built from the settings)."""
        from callbench.runs.runner import RunOptions

        return RunOptions(
            out_dir=Path(self.out_dir),
            run_id=self.run_id,
            limit=self.limit,
            ids=self.ids,
            groups=self.groups,
            per_group=self.per_group,
            concurrency=self.concurrency,
            scoring=scoring,
            generation=generation,
            progress=self.progress,
            retry_errors=self.retry_errors,
            max_backend_error_rate=self.max_backend_error_rate,
            count_backend_errors=self.count_backend_errors,
            eval_workers=self.eval_workers,
            force=self.force,
            rescore=self.rescore,
        )
