"""The shared runner: bounded-concurrency generation, sandboxed evaluation, storage, resume.

Tracks only say what a sample is and how to score it; everything about running lives here, so
the three tracks share the same resume, progress and failure behaviour.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from callbench import __version__
from callbench.errors import CallbenchError, ConfigError, DataError, RunStoreError
from callbench.models.base import BackendError, GenerationConfig, ModelBackend, ModelOutput
from callbench.runs.store import START_OVER, RunStore, encodable, write_json_atomic
from callbench.tracks.base import Sample, SampleResult, Track


@dataclass
class RunOptions:
    out_dir: Path = Path("runs")
    run_id: str | None = None
    limit: int | None = None
    ids: Sequence[str] | None = None
    groups: Sequence[str] | None = None
    concurrency: int = 8
    scoring: str = "strict"
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    progress: bool = True
    retry_errors: bool = False  # ask again for samples stored as backend_error
    max_backend_error_rate: float = 0.2  # stop early when more of this session's samples fail


BACKEND_ERROR = "backend_error"
_MIN_FOR_RATE = 10  # backend errors before the rate can stop a run (a few flukes never do)


class BackendErrorRate(CallbenchError):
    """Too many samples of this session got no usable answer from the backend: the run stops."""


@dataclass
class RunOutcome:
    run_dir: Path
    summary: dict[str, Any]
    resumed: bool
    generated: int


def _slug(text: str) -> str:
    text = re.sub(r"\.gguf\b|\[[a-z]+\]|https?://", "", text)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40].strip("-.") or "model"


def select_samples(samples: list[Sample], opts: RunOptions) -> list[Sample]:
    """The samples ``--api``/``--ids``/``--limit`` pick. A selection that is given but names
    nothing, names what is not in the data, or leaves no sample is an error: it would otherwise
    run everything, or score an empty run as complete."""
    out = samples
    if opts.groups is not None:
        if not opts.groups:
            raise ConfigError("--api: no API names given (a comma-separated list such as slack,asana)")
        known = {s.group for s in samples}
        unknown = [g for g in opts.groups if g not in known]
        if unknown:
            raise ConfigError(f"--api {','.join(unknown)}: not in the data (have: {', '.join(sorted(known))})")
        out = [s for s in out if s.group in set(opts.groups)]
    if opts.ids is not None:
        if not opts.ids:
            raise ConfigError("--ids: no ids given (a comma-separated list such as asana_0,slack_12)")
        by_id = {s.id: s for s in samples}
        missing = list(dict.fromkeys(i for i in opts.ids if i not in by_id))
        if missing:
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise ConfigError(f"--ids: {len(missing)} unknown sample id(s): {', '.join(missing[:5])}{more}")
        wanted = set(opts.ids)
        out = [s for s in out if s.id in wanted]
    if opts.limit is not None:
        if opts.limit < 1:
            raise ConfigError("--limit must be >= 1")
        out = out[: opts.limit]
    if not out:
        raise ConfigError("--api/--ids select no samples (none of the ids belongs to the chosen APIs)")
    return out


def check_generation(gen: GenerationConfig) -> None:
    """Decoding settings no backend can honour are an error, not a run of empty answers."""
    if gen.max_tokens < 1:
        raise ConfigError(f"--max-tokens {gen.max_tokens}: must be >= 1")
    if not (math.isfinite(gen.temperature) and gen.temperature >= 0):
        raise ConfigError(f"--temperature {gen.temperature}: must be a number >= 0")
    if not (math.isfinite(gen.top_p) and 0 < gen.top_p <= 1):
        raise ConfigError(f"top_p {gen.top_p}: must be in (0, 1]")


def aggregate_stored(
    track: Track | type[Track], store: RunStore, samples: list[Sample], results: dict[str, SampleResult], scoring: str
) -> dict[str, Any]:
    """``track.aggregate`` over stored results; results of a shape the track cannot read (a damaged
    or foreign row) raise one line naming the first such row instead of a traceback."""
    try:
        return track.aggregate(samples, [results[s.id] for s in samples], scoring)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        why = f"cannot be read as a {track.name} result ({type(exc).__name__}: {' '.join(str(exc).split())})"
        bad = next((s.id for s in samples if not _aggregates(track, s, results[s.id], scoring)), None)
        if bad is None:
            raise RunStoreError(f"{store.db_path}: the stored rows {why}; {START_OVER}") from None
        raise store.row_error(bad, why) from None


def _aggregates(track: Track | type[Track], sample: Sample, result: SampleResult, scoring: str) -> bool:
    try:
        track.aggregate([sample], [result], scoring)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False
    return True


def run_identity(track: Track, model: ModelBackend, gen: GenerationConfig) -> tuple[str, dict[str, Any]]:
    ident = {"track": track.name, "model": model.identity, "mode": model.mode, **track.fingerprint(), "generation": asdict(gen)}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:8]
    setup = track.fingerprint().get("setup", "")
    name = "-".join(p for p in (track.name, _slug(model.identity), setup, digest) if p)
    return name, ident


def summarize(track: Track, store: RunStore, samples: list[Sample], scoring: str) -> dict[str, Any]:
    """Metrics over the samples the model answered; backend errors are counted apart (they are
    not the model's mistakes, and ``--retry-errors`` asks again for them)."""
    results = store.results()
    failed = [s.id for s in samples if s.id in results and results[s.id].status == BACKEND_ERROR]
    done = [s for s in samples if s.id in results and results[s.id].status != BACKEND_ERROR]
    agg = track.aggregate(done, [results[s.id] for s in done], scoring)  # stored rows were checked on resume
    cfg = store.config()
    ident = cfg.get("identity", {})
    summary = {
        "track": track.name,
        "model": ident.get("model"),
        "setup": ident.get("setup"),
        "constrained": bool(ident.get("constrained", False)),
        "scoring": scoring,
        "n": len(done),
        "n_selected": len(samples),
        "n_backend_errors": len(failed),
        "complete": len(done) == len(samples),
        **agg,
        "run_id": store.dir.name,
        "prompt_version": ident.get("prompt_version"),
        "generation": ident.get("generation"),
        "callbench_version": __version__,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json_atomic(store.dir / "summary.json", summary)
    return summary


def _prepare(track: Track, model: ModelBackend, opts: RunOptions) -> tuple[list[Sample], Path, RunStore, bool]:
    """Check the options, load and select the samples, open (or resume) the run directory."""
    if opts.scoring not in track.scoring_modes:
        raise ConfigError(f"--scoring '{opts.scoring}': choose from {', '.join(track.scoring_modes)}")
    if opts.concurrency < 1:
        raise ConfigError("--concurrency must be >= 1")
    if not 0 <= opts.max_backend_error_rate <= 1:
        raise ConfigError(f"--max-backend-error-rate {opts.max_backend_error_rate:g}: must be a share between 0 and 1")
    check_generation(opts.generation)
    if opts.run_id is not None and (opts.run_id in ("", ".", "..") or "/" in opts.run_id or os.sep in opts.run_id):
        raise ConfigError(f"--run-id {opts.run_id!r}: must be a plain directory name (it is created under --out)")
    data = track.load_samples()
    if not data:
        where = next((str(getattr(track, a)) for a in ("tasks_file", "task_file", "path") if getattr(track, a, None)), "the data")
        raise DataError(f"{where}: no samples in the data; give a file with at least one task")
    samples = select_samples(data, opts)
    name, ident = run_identity(track, model, opts.generation)
    run_dir = opts.out_dir / (opts.run_id or name)
    config = {
        "identity": ident,
        "selection": {"limit": opts.limit, "ids": list(opts.ids or []), "groups": list(opts.groups or [])},
        "callbench_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    store, resumed = RunStore.create_or_resume(run_dir, config)
    if resumed:  # stored rows the track cannot read fail now, before any new sample runs
        try:
            results = store.results()
            answered = [s for s in samples if s.id in results and results[s.id].status != BACKEND_ERROR]
            aggregate_stored(track, store, answered, results, opts.scoring)
        except BaseException:
            store.close()
            raise
    return samples, run_dir, store, resumed


async def run_async(track: Track, model: ModelBackend, opts: RunOptions, console: Console | None = None) -> RunOutcome:
    console = console or Console(stderr=True)
    try:
        samples, run_dir, store, resumed = _prepare(track, model, opts)
    except BaseException:
        track.close()
        await model.aclose()
        raise
    try:
        if opts.retry_errors:
            retried = store.delete_status(BACKEND_ERROR)
            if retried:
                console.print(f"[dim]--retry-errors: asking again for {retried} sample(s) stored as backend errors[/dim]")
        done = store.done_ids()
        pending = [s for s in samples if s.id not in done]
        tally = {"finished": 0, "failed": 0}
        if resumed:
            console.print(
                f"[dim]resuming {encodable(str(run_dir))}: {len(samples) - len(pending)} of {len(samples)} samples already done[/dim]"
            )
        sem = asyncio.Semaphore(max(1, min(opts.concurrency, model.max_concurrency)))

        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not opts.progress,
            transient=False,
        )

        async def one(sample: Sample, task_id: Any) -> None:
            async with sem:
                inp = track.build_input(sample)
                t0 = time.perf_counter()
                # A track may drive several model turns for one sample (e.g. a ReAct loop).
                try:
                    out = await track.interact(sample, inp, model, opts.generation)
                except BackendError as exc:
                    _store_backend_error(store, sample, inp, model, exc, time.perf_counter() - t0)
                    tally["finished"] += 1
                    tally["failed"] += 1
                    progress.advance(task_id)
                    if tally["failed"] >= _MIN_FOR_RATE and tally["failed"] > opts.max_backend_error_rate * tally["finished"]:
                        raise BackendErrorRate(
                            f"{tally['failed']} of {tally['finished']} samples got no usable answer from the backend "
                            f"(over --max-backend-error-rate {opts.max_backend_error_rate:g}); last: {exc}; "
                            "finished samples are saved: fix the backend and run the same command with --retry-errors"
                        ) from None
                    return
                if out.latency_s is None:
                    out.latency_s = time.perf_counter() - t0
                # Evaluated and stored inside the concurrency bound: answers never pile up unscored
                # in memory, so a kill loses at most ``concurrency`` samples' work.
                if track.evaluate_in_thread:  # slow, process-isolated scoring must not stall the loop
                    res = await asyncio.to_thread(track.evaluate, sample, out)
                else:
                    res = track.evaluate(sample, out)
                store.put(sample.group, inp, out, res)
            tally["finished"] += 1
            progress.advance(task_id)

        with progress:
            task_id = progress.add_task(f"{track.name} · {encodable(model.identity)}", total=len(samples), completed=len(samples) - len(pending))
            jobs = [asyncio.create_task(one(s, task_id)) for s in pending]
            try:
                await asyncio.gather(*jobs)
            except BaseException:
                for j in jobs:
                    j.cancel()
                await asyncio.gather(*jobs, return_exceptions=True)
                raise
        summary = summarize(track, store, samples, opts.scoring)
        return RunOutcome(run_dir=run_dir, summary=summary, resumed=resumed, generated=len(pending))
    finally:
        store.close()
        track.close()
        await model.aclose()


def _store_backend_error(
    store: RunStore, sample: Sample, inp: Any, model: ModelBackend, exc: BackendError, latency: float
) -> None:
    out = ModelOutput(text="", mode=model.mode, latency_s=latency, extra={BACKEND_ERROR: exc.to_json()})
    store.put(sample.group, inp, out, SampleResult(status=BACKEND_ERROR, error=str(exc)))


def run(track: Track, model: ModelBackend, opts: RunOptions, console: Console | None = None) -> RunOutcome:
    return asyncio.run(run_async(track, model, opts, console))
