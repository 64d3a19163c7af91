"""What a track provides to the shared runner.

Data flows one way: samples -> model inputs -> model output -> ``evaluate`` (parse, execute in a
sandbox, score) -> stored result -> ``aggregate`` into ``summary.json``. A track never touches
concurrency, storage or resume: that keeps three tracks on one harness.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callbench.errors import DataError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput


def file_sha256(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a file's bytes (its content, not its path or
    mtime): how run identities name the data, specs and tools a run read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None


@dataclass(frozen=True)
class Sample:
    """One benchmark item. ``group`` is the breakdown key (API for webapi, domain for nested).
    ``task`` is the task the sample belongs to when a task has several samples (stateful pass@k
    draws); ``--limit`` counts tasks, so all samples of a task are selected together."""

    id: str
    group: str
    payload: object  # the track's own item (its task), read only by that track
    task: str | None = None


@dataclass
class SampleResult:
    """What evaluating one model output produced; everything here is stored per sample."""

    status: str  # "ok" or an error class of the track
    parsed: str | None = None  # extracted code / calls that were executed
    execution: object = None  # a JSON value, e.g. the captured HTTP request
    verdicts: dict[str, Any] = field(default_factory=dict)  # per scoring mode
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)  # e.g. what constrained decoding did


class Track(abc.ABC):
    name: str = "base"
    scoring_modes: tuple[str, ...] = ("strict",)
    # Can this track's constraint be enforced by a server (vLLM structured outputs) instead of
    # in-process logits? Only when the grammar alone carries the guarantee that matters.
    server_constraints: bool = False
    # May ``evaluate`` run in a worker thread, concurrently with other samples' evaluation? Only
    # for tracks whose scoring holds no shared in-process state (each thread has its own sandbox).
    # The runner then scores on a pool of threads (``--eval-workers``) while the event loop keeps
    # requests going.
    evaluate_in_thread: bool = False
    # How many evaluation threads by default: "cpu" (one per core: the sandbox work is CPU-bound)
    # or "concurrency" (one per request in flight: each evaluation mostly waits on a process).
    evaluation_pool: str = "cpu"
    # Does the track prompt instruct models through their chat template rendered in-process? Then
    # an in-process backend left in "auto" mode uses the model's chat template when it has one, and
    # constrained decoding works in chat mode (the constraint shapes the answer from its first token).
    chat_template: bool = False
    # ... with a prefilled answer start (``ModelInput.assistant_prefix``)? Then the answer
    # continues the prompt like a completion (and is generated and parsed as one).
    chat_prefill: bool = False
    # Rows of the data that ``load_samples`` skipped or kept despite a finding (each a dict with
    # file, row, task, reason, action): recorded in config.json and listed by summary and report,
    # so no row leaves a run silently.
    data_findings: Sequence[dict[str, Any]] = ()

    @abc.abstractmethod
    def load_samples(self) -> list[Sample]:
        """All samples of the configured data, validated."""

    @abc.abstractmethod
    def build_input(self, sample: Sample) -> ModelInput:
        """Prompt + chat messages + gold reference for one sample."""

    async def interact(self, sample: Sample, inp: ModelInput, model: ModelBackend, config: GenerationConfig) -> ModelOutput:
        """Get the model's answer for one sample: one call by default; multi-turn tracks
        (ReAct: call, observe, call again) override this and return the whole transcript."""
        return await model.generate(inp, config)

    @abc.abstractmethod
    def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        """Parse, execute (sandboxed) and score one output, in every scoring mode."""

    @classmethod
    @abc.abstractmethod
    def aggregate(cls, samples: list[Sample], results: list[SampleResult], scoring: str) -> dict[str, Any]:
        """``{"metrics": {...}, "by_<group>": {...}}`` for ``summary.json``.

        A classmethod: reports re-aggregate stored results without loading the data again."""

    def evaluator_factory(self) -> Callable[[], Track] | None:
        """A picklable zero-argument callable that builds an equivalent track in another process,
        so the runner can score samples in a process pool (see :mod:`callbench.runs.eval_worker`);
        None (the default) scores in this process."""
        return None

    def fingerprint(self) -> dict[str, Any]:
        """What changes the model's answers (setup, prompt version and a digest of the prompts, and
        any data the model sees or its episode runs against): the *generation* part of a run's
        identity, and of its default directory name. Stored answers are kept only while it matches
        (``--rescore`` included). Called once per run, after :meth:`load_samples`."""
        return {}

    def scoring_fingerprint(self) -> dict[str, Any]:
        """What changes the verdicts of the same answers (content hashes of the data the scorer
        reads, of API specs, of user tools; sandbox limits): the *scoring* part of a run's identity.
        A change refuses a resume unless ``--rescore`` re-scores the stored answers with it. Called
        once per run, after :meth:`load_samples`."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release sandboxes and the like."""


def available_tracks() -> list[str]:
    """The registered tracks (see :mod:`callbench.tracks.definition`), by name."""
    from callbench.tracks.definition import track_names

    return track_names()


def get_track(name: str) -> type[Track]:
    """The ``Track`` class of track ``name``; an unknown name is a one-line ConfigError."""
    from callbench.tracks.definition import get_definition

    cls: type[Track] = get_definition(name).track_class()
    return cls
