"""The shared runner: bounded-concurrency generation, sandboxed evaluation, storage, resume.

Tracks only say what a sample is and how to score it; everything about running lives here, so
the three tracks share the same resume, progress and failure behaviour.

The pipeline per sample: ask the model (at most ``--concurrency`` requests in flight), persist the
answer (SQLite, before the request's slot frees), score it beside the event loop (worker
processes or threads, see :class:`_Evaluation`), store the scored row (the persisted answer is
dropped in the same transaction). A kill therefore loses at most the requests in flight, and a
resume scores persisted answers without asking again.

Resuming. A run directory is resumed only when the run's identity matches the one it was created
with: the model and every backend option that changes answers, the decoding settings, the prompts,
and the content hashes of the data, API specs, replay files and user tools it reads (split into a
generation and a scoring part, see :mod:`callbench.runs.identity`). A changed identity is refused
with one line naming what changed; ``--force`` starts over, ``--rescore`` keeps every stored answer
and scores it again with the current data, specs and code (only when the generation part matches:
answers to other prompts are never re-scored as if they answered these).

Selection. ``--limit``/``--ids``/``--api`` are not part of the identity: one directory may hold
more samples than the current command selects (``--limit 80`` then ``--limit 10`` keeps the 80).
Each session records its selection (the options and the selected ids) in ``config.json`` and
removes ``summary.json`` while it runs; at its end ``summary.json`` describes exactly the stored
samples of that selection (``n``, ``n_selected``, ``selection``, ``complete``; ``n_stored`` counts
the whole store), and ``callbench report`` re-aggregates exactly the samples of the selection
``config.json`` records. The three agree whatever was run into the directory before.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import logging
import math
import os
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from callbench.errors import CallbenchError, ConfigError, DataError, RunStoreError
from callbench.models.base import BackendError, GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.runs.identity import build_identity, generation_digest
from callbench.runs.run_log import RunLog
from callbench.runs.store import RUN_IDS, START_OVER, RunStore, selected_ids, write_json_atomic
from callbench.runs.text import encodable
from callbench.tracks.base import Sample, SampleResult, Track
from callbench.version import __version__

if TYPE_CHECKING:  # imported where a run needs worker processes (see _Evaluation)
    from callbench.runs.eval_worker import ProcessEvaluator

_P = ParamSpec("_P")
_T = TypeVar("_T")

log = logging.getLogger("callbench.runs")


@dataclass
class RunOptions:
    out_dir: Path = Path("runs")
    run_id: str | None = None
    limit: int | None = None
    ids: Sequence[str] | None = None
    groups: Sequence[str] | None = None
    per_group: int | None = None  # the first N tasks of each group (API, domain, scenario)
    # seconds between progress lines in run.log (and on a console that is no terminal);
    # CALLBENCH_PROGRESS_INTERVAL changes the default (tests, very long runs)
    progress_interval: float = field(default_factory=lambda: _interval_from_env())
    concurrency: int = 8
    scoring: str = "strict"
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    progress: bool = True
    retry_errors: bool = False  # ask again for samples stored as backend_error
    max_backend_error_rate: float = 0.2  # stop early when more of this session's samples fail
    count_backend_errors: bool = False  # score backend errors as failed samples (off: left out)
    eval_workers: int | None = None  # scoring processes or threads (None: the track's default, Track.evaluation_pool)
    force: bool = False  # delete what the run directory holds and start over
    rescore: bool = False  # re-score every stored answer (a changed scoring identity is then accepted)
    recorded: dict[str, Any] = field(default_factory=dict)  # more facts for config.json (e.g. the --config file)


def _bar_label(track: str, identity: str, width: int = 36) -> str:
    """The progress bar's label: the model's identity cut to ``width`` characters (a long one
    pushed the bar's time columns off an 80-column terminal; issue 31)."""
    text = identity if len(identity) <= width else identity[: width - 1] + "…"
    return encodable(f"{track} · {text}")


def _data_path(track: Track) -> Path | None:
    """The file or folder a track read its tasks from (its ``tasks_file``, ``task_file`` or ``path``)."""
    for name in ("tasks_file", "task_file", "path"):
        value = getattr(track, name, None)
        if value:
            return Path(value)
    return None


def _interval_from_env() -> float:
    raw = os.environ.get("CALLBENCH_PROGRESS_INTERVAL", "")
    try:
        value = float(raw) if raw else 10.0
    except ValueError:
        raise ConfigError(f"CALLBENCH_PROGRESS_INTERVAL={raw!r}: a number of seconds") from None
    if not value > 0:
        raise ConfigError(f"CALLBENCH_PROGRESS_INTERVAL={raw!r}: must be > 0")
    return value


BACKEND_ERROR = "backend_error"
_MIN_FOR_RATE = 10  # backend errors before the rate can stop a run (a few flukes never do)
_PROCESS_POOL_FROM = 200  # samples to score before worker processes pay for their start


class BackendErrorRate(CallbenchError):
    """Too many samples of this session got no usable answer from the backend: the run stops."""


class EvaluationFailed(CallbenchError):
    """Scoring one sample failed in a way no verdict covers (a harness fault, not the model's)."""


@dataclass
class RunOutcome:
    run_dir: Path
    summary: dict[str, Any]
    resumed: bool
    generated: int  # samples asked of the model in this session
    reused: int = 0  # answers persisted by an earlier session and scored in this one
    rescored: int = 0  # stored samples scored again (--rescore)


def _slug(text: str) -> str:
    text = re.sub(r"\.gguf\b|\[[a-z]+\]|https?://", "", text)
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    if len(text) > 60:  # cut at a word boundary (- . _), not mid-word (issue 31)
        cut = max(text.rfind(c, 0, 61) for c in "-._")
        text = text[: cut if cut >= 30 else 60]
    return text.strip("-.") or "model"


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
    if opts.per_group is not None:
        if opts.per_group < 1:
            raise ConfigError("--per-group must be >= 1")
        # the first N tasks of each group, every sample of each, in the data's order
        firsts: dict[str, list[str]] = {}
        for s in out:
            tasks = firsts.setdefault(s.group, [])
            if (s.task or s.id) not in tasks and len(tasks) < opts.per_group:
                tasks.append(s.task or s.id)
        keep_group = {t for tasks in firsts.values() for t in tasks}
        out = [s for s in out if (s.task or s.id) in keep_group]
    if opts.limit is not None:
        if opts.limit < 1:
            raise ConfigError("--limit must be >= 1")
        # the first N tasks, with every sample of each (a task may have several: pass@k draws)
        tasks = list(dict.fromkeys(s.task or s.id for s in out))[: opts.limit]
        keep = set(tasks)
        out = [s for s in out if (s.task or s.id) in keep]
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
    """The run's default directory name and its identity (:mod:`callbench.runs.identity`). The
    name hashes the generation part only: a run whose scoring inputs changed is found again, and
    the refusal says what changed."""
    ident = build_identity(track, model, gen)
    setup = ident.get("setup") if isinstance(ident.get("setup"), str) else ""
    name = "-".join(p for p in (track.name, _slug(model.identity), setup, generation_digest(ident)) if p)
    return name, ident


def summarize(
    track: Track,
    store: RunStore,
    samples: list[Sample],
    scoring: str,
    count_backend_errors: bool = False,
    *,
    write: bool = True,
    selection: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Metrics over the samples the model answered; backend errors are counted apart (they are
    not the model's mistakes, and ``--retry-errors`` asks again for them). With
    ``count_backend_errors`` they are scored as failed samples instead (as an empty answer).
    ``write``: also as the run's ``summary.json`` (not for a narrower session, see
    :class:`_Prepared`); ``selection``: the session's, where it is not the run's recorded one."""
    results = store.results()
    failed = [s.id for s in samples if s.id in results and results[s.id].status == BACKEND_ERROR]
    done = [s for s in samples if s.id in results and results[s.id].status != BACKEND_ERROR]
    scored = [s for s in samples if s.id in results] if count_backend_errors else done
    agg = aggregate_stored(track, store, scored, results, scoring)
    cfg = store.config()
    ident = cfg.get("identity", {})
    stored_selection = selection if selection is not None else cfg.get("selection")
    selection = stored_selection if isinstance(stored_selection, dict) else {}
    summary = {
        "track": track.name,
        "model": ident.get("model"),
        "setup": ident.get("setup"),
        "constrained": bool(ident.get("constrained", False)),
        "scoring": scoring,
        "n": len(scored),
        "n_selected": len(samples),
        "n_backend_errors": len(failed),
        "backend_errors_counted": count_backend_errors,
        "complete": len(done) == len(samples),
        "selection": {k: v for k, v in selection.items() if k != "sample_ids"},
        "n_stored": len(results),  # the whole store: earlier sessions may have selected more
        **agg,
        **({"data_findings": cfg["data_findings"]} if cfg.get("data_findings") else {}),
        "run_id": store.dir.name,
        "prompt_version": ident.get("prompt_version"),
        "generation": ident.get("generation"),
        "callbench_version": __version__,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if write:
        write_json_atomic(store.dir / "summary.json", summary)
    return summary


@dataclass
class _Prepared:
    samples: list[Sample]  # the selection
    data: list[Sample]  # every sample of the data
    run_dir: Path
    store: RunStore
    resumed: bool
    config: dict[str, Any]
    # a resumed session that selected a strict subset of the run's recorded selection (limit=20 on
    # a 395-sample run): the run keeps its selection and summary.json; the session's own summary
    # is returned only, so a later report or comparison still describes the whole run (issue 31)
    narrower: bool = False


def _prepare(track: Track, model: ModelBackend, opts: RunOptions) -> _Prepared:
    """Check the options, load and select the samples, open (or resume) the run directory."""
    if opts.scoring not in track.scoring_modes:
        raise ConfigError(f"--scoring '{opts.scoring}': choose from {', '.join(track.scoring_modes)}")
    if opts.concurrency < 1:
        raise ConfigError("--concurrency must be >= 1")
    if opts.eval_workers is not None and opts.eval_workers < 1:
        raise ConfigError(f"--eval-workers {opts.eval_workers}: must be >= 1")
    if not 0 <= opts.max_backend_error_rate <= 1:
        raise ConfigError(f"--max-backend-error-rate {opts.max_backend_error_rate:g}: must be a share between 0 and 1")
    if opts.force and opts.rescore:
        raise ConfigError("--force and --rescore: choose one (--force starts over, --rescore keeps the answers)")
    check_generation(opts.generation)
    if opts.run_id is not None and (opts.run_id in ("", ".", "..") or "/" in opts.run_id or os.sep in opts.run_id):
        raise ConfigError(f"--run-id {opts.run_id!r}: must be a plain directory name (it is created under --out)")
    data = track.load_samples()
    source = _data_path(track)
    if not data:
        where = str(source) if source is not None else "the data"
        if track.data_findings:
            first = track.data_findings[0]
            raise DataError(f"{where}: every row was skipped: its data contradicts its spec (first: row {first['row']}: {first['reason']})")
        raise DataError(f"{where}: no samples in the data; give a file with at least one task")
    samples = select_samples(data, opts)
    answered = getattr(model, "answered_ids", None)  # a backend that answers some samples only (replay)
    if answered is not None and opts.ids is None:
        kept = [s for s in samples if s.id in answered]
        if not kept:
            raise ConfigError(f"{model.identity}: answers none of the {len(samples)} selected samples (its ids are not the data's)")
        if len(kept) < len(samples):
            log.warning("%s answers %d of the %d selected samples: the run scores those %d", model.identity, len(kept), len(samples), len(kept))
        samples = kept
    name, ident = run_identity(track, model, opts.generation)
    run_dir = opts.out_dir / (opts.run_id or name)
    config = {
        "identity": ident,
        "selection": {
            "limit": opts.limit,
            "ids": list(opts.ids or []),
            "groups": list(opts.groups or []),
            "per_group": opts.per_group,
            "sample_ids": [s.id for s in samples],  # what summary.json and report describe
        },
        # where the data came from (not in the identity: the data's digest is): show and report
        # find a run's tasks again there (a nested run made with --data FILE)
        "data_file": str(source.resolve()) if source is not None else None,
        "callbench_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **opts.recorded,
    }
    if track.data_findings:  # rows skipped (or kept) because they contradict their spec
        config["data_findings"] = list(track.data_findings)
    store, resumed = RunStore.create_or_resume(run_dir, config, force=opts.force, rescore=opts.rescore)
    try:
        if resumed and not opts.rescore:  # stored rows the track cannot read fail now, before any new sample runs
            results = store.results()
            answered = [s for s in samples if s.id in results and results[s.id].status != BACKEND_ERROR]
            aggregate_stored(track, store, answered, results, opts.scoring)
        narrower = False
        if resumed and not opts.rescore:
            old_ids = selected_ids(store.config())
            narrower = old_ids is not None and {s.id for s in samples} < set(old_ids)
        if resumed and not narrower:
            store.drop_summary()  # written again when this session ends, for its selection
            if not opts.rescore:  # a re-score records the new identity once every answer is re-scored
                store.update_config(config)
        elif narrower and RUN_IDS not in store.config():
            store.update_config(store.config())  # a run from before the list: it adopts the ids it holds
    except BaseException:
        store.close()
        raise
    return _Prepared(samples, data, run_dir, store, resumed, config, narrower)


def _stored_output(row: dict[str, Any]) -> tuple[ModelOutput, dict[str, Any]]:
    """A stored sample's answer as the model gave it, and the statistics stored with its result."""
    extra = dict(row.get("extra") or {})
    stats = extra.pop("stats", None)
    out = ModelOutput(
        text=row.get("raw_output") or "",
        mode=row.get("mode") or "completion",
        prompt_tokens=row.get("prompt_tokens"),
        completion_tokens=row.get("completion_tokens"),
        latency_s=row.get("latency_s"),
        extra=extra,
    )
    return out, stats if isinstance(stats, dict) else {}


async def _rescore(
    track: Track, store: RunStore, data: list[Sample], evaluate: _Evaluation, width: int, console: Console
) -> int:
    """``--rescore``: score every stored answer again with the current data, specs and code and
    rewrite its verdicts (one transaction, so a stop keeps the old rows and the old identity).
    Stored answers of samples no longer in the data cannot be scored: they are dropped."""
    by_id = {s.id: s for s in data}
    rows = list(store.rows())
    gone = [r["id"] for r in rows if r["id"] not in by_id]
    if gone:
        store.delete_ids(gone)
        console.print(f"[dim]--rescore: dropped {len(gone)} stored answer(s) of samples no longer in the data[/dim]")
    rows = [r for r in rows if r["id"] in by_id]
    if rows:
        console.print(f"[dim]--rescore: scoring {len(rows)} stored answer(s) again (the model is not asked)[/dim]")
    slots = asyncio.Semaphore(max(1, width))

    async def one(row: dict[str, Any]) -> tuple[str, SampleResult, dict[str, Any]]:
        sample = by_id[row["id"]]
        out, old_stats = _stored_output(row)
        async with slots:
            res = await _scored(evaluate, sample, out, "the stored verdicts are unchanged")
        if row["status"] == BACKEND_ERROR:  # still no answer: re-scored as the empty answer it stands for
            res = SampleResult(status=BACKEND_ERROR, error=row.get("error"), verdicts=res.verdicts)
        # statistics of the generation (e.g. constrained decoding) exist only from when it ran
        stats = {**old_stats, **(res.stats or {})}
        return row["id"], res, {**out.extra, **({"stats": stats} if stats else {})}

    jobs = [asyncio.create_task(one(r)) for r in rows]
    try:
        updates = await asyncio.gather(*jobs)
    except BaseException:
        for j in jobs:
            j.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise
    if updates:
        await asyncio.get_running_loop().run_in_executor(None, store.rescored, list(updates))
    return len(updates)


async def run_async(
    track: Track,
    model: ModelBackend,
    opts: RunOptions,
    console: Console | None = None,
    *,
    _prepared: Callable[[], None] | None = None,
) -> RunOutcome:
    console = console or Console(stderr=True)
    try:
        prep = _prepare(track, model, opts)
    except BaseException:
        track.close()
        await model.aclose()
        raise
    if _prepared is not None:  # the run directory is open: from here a stop cancels the run (see run())
        _prepared()
    samples, run_dir, store, resumed = prep.samples, prep.run_dir, prep.store, prep.resumed
    try:
        if opts.retry_errors:
            retried = store.delete_status(BACKEND_ERROR)
            if retried:
                console.print(f"[dim]--retry-errors: asking again for {retried} sample(s) stored as backend errors[/dim]")
        if store.changes:  # only a --rescore gets here with a changed (scoring) identity
            what = ", ".join(str(c) for c in store.changes[:4])
            more = f" and {len(store.changes) - 4} more" if len(store.changes) > 4 else ""
            console.print(f"[dim]--rescore: changed since the answers were scored: {escape(encodable(what))}{more}[/dim]")
        to_rescore = store.count() if opts.rescore and resumed else 0
        done = store.done_ids()
        pending = [s for s in samples if s.id not in done]
        tally = {"answered": 0, "failed": 0}  # samples asked in this session, and how many failed
        if resumed:
            console.print(
                f"[dim]resuming {encodable(str(run_dir))}: {len(samples) - len(pending)} of {len(samples)} samples already done[/dim]"
            )
        in_flight = max(1, min(opts.concurrency, model.max_concurrency))
        stored = store.generations()
        unscored = [s for s in pending if s.id in stored]  # answered before a stop, never scored
        to_ask = [s for s in pending if s.id not in stored]
        evaluate = _Evaluation(track, opts, in_flight, len(pending) + to_rescore)
        writer = _Writer(store)
        if unscored:
            console.print(
                f"[dim]scoring {len(unscored)} answer(s) received before the run stopped (not asked again), "
                f"beside {len(to_ask)} new request(s)[/dim]"
            )
        rescored = 0
        if to_rescore:
            try:
                await evaluate.start()
                rescored = await _rescore(track, store, prep.data, evaluate, evaluate.width, console)
            except BaseException:
                await evaluate.close(abandon=True)
                await writer.close()
                raise
        if resumed and opts.rescore:
            store.update_config(prep.config)  # every stored verdict now follows this identity

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
        # Answers waiting to be scored: those of this session (bounded: a full backlog holds up new
        # requests) and those a stopped session stored unscored; the scorers take from both in turn.
        backlog = _Backlog(unscored, capacity=2 * in_flight + 32)
        asking = iter(to_ask)

        async def ask(task_id: TaskID) -> None:
            """One of ``in_flight`` request slots: ask, persist the answer, hand it to the scorers."""
            while (sample := next(asking, None)) is not None:
                inp = track.build_input(sample)
                t0 = time.perf_counter()
                # A track may drive several model turns for one sample (e.g. a ReAct loop).
                try:
                    out = await track.interact(sample, inp, model, opts.generation)
                except BackendError as exc:
                    await backend_error(sample, inp, exc, time.perf_counter() - t0, task_id)
                    continue
                if out.latency_s is None:
                    out.latency_s = time.perf_counter() - t0
                tally["answered"] += 1
                # The answer is persisted before it waits to be scored: a stop loses at most the
                # requests in flight; the backlog is bounded (backpressure when scoring falls behind).
                await writer.put_generation(sample.id, out)
                await backlog.put((sample, inp, out))

        async def score(task_id: TaskID) -> None:
            """One of ``evaluate.width`` scoring slots: score answers as they arrive."""
            while (item := await backlog.take()) is not None:
                if isinstance(item, tuple):
                    sample, inp, out = item
                else:  # a stored answer: its input is built again (as it was when it was asked)
                    sample, out = item, stored.pop(item.id)
                    inp = track.build_input(sample)
                res = await _scored(evaluate, sample, out, "finished samples are saved: run the same command to resume")
                await writer.put(sample.group, inp, out, res)
                progress.advance(task_id)
                run_log.advance()

        async def backend_error(sample: Sample, inp: ModelInput, exc: BackendError, latency: float, task_id: TaskID) -> None:
            # scored as an empty answer too, for --count-backend-errors (kept apart by default)
            empty = ModelOutput(text="", mode=model.mode, latency_s=latency, extra={BACKEND_ERROR: exc.to_json()})
            as_empty = await evaluate(sample, empty)
            result = SampleResult(status=BACKEND_ERROR, error=str(exc), verdicts=as_empty.verdicts)
            await writer.put(sample.group, inp, empty, result)
            tally["answered"] += 1
            tally["failed"] += 1
            progress.advance(task_id)
            run_log.advance(error=True)
            if tally["failed"] >= _MIN_FOR_RATE and tally["failed"] > opts.max_backend_error_rate * tally["answered"]:
                raise BackendErrorRate(str(exc))  # the message is made once the stored rows are final

        run_log = RunLog(
            run_dir, track.name, len(samples), len(samples) - len(pending), interval=opts.progress_interval,
            console=console, plain=opts.progress and not console.is_terminal,
        )
        run_log.write(
            f"session: {track.name} · {encodable(model.identity)}: {len(samples)} samples selected, "
            f"{len(samples) - len(pending)} done before, {len(to_ask)} to ask, {len(unscored)} stored unscored"
            + (" (resumed)" if resumed else "")
        )

        async def ticker() -> None:
            while True:  # a line at the interval even while no sample finishes (a slow first answer)
                await asyncio.sleep(min(1.0, opts.progress_interval))
                run_log.tick()

        ticking = asyncio.create_task(ticker())
        outcome_text = "stopped"
        try:
            with progress:
                task_id = progress.add_task(escape(_bar_label(track.name, model.identity)), total=len(samples), completed=len(samples) - len(pending))
                preflight = getattr(model, "preflight", None)
                if to_ask and preflight is not None:
                    # a dead endpoint, or a server that ignores grammars, is one line now, not a run of errors
                    constrained = bool(getattr(getattr(track, "options", None), "constrained", False))
                    await preflight(True if constrained else None)
                if pending:
                    await evaluate.start()  # worker processes load while the first requests are in flight

                async def asking_done() -> None:
                    try:
                        await asyncio.gather(*(ask(task_id) for _ in range(min(in_flight, len(to_ask)))))
                    finally:
                        backlog.close()  # no more answers of this session: scorers end when the backlog is empty

                scorers = min(max(1, evaluate.width), len(pending)) if pending else 0
                jobs = [asyncio.create_task(asking_done()), *(asyncio.create_task(score(task_id)) for _ in range(scorers))]
                try:
                    await asyncio.gather(*jobs)
                except BaseException as exc:
                    for j in jobs:
                        j.cancel()
                    await asyncio.gather(*jobs, return_exceptions=True)
                    # a stop abandons scoring in progress (its answers stay stored for the next resume)
                    await evaluate.close(abandon=True)
                    await writer.close()  # rows already handed over are written before the store closes
                    if isinstance(exc, BackendErrorRate):
                        raise _rate_stop(store, to_ask, opts.max_backend_error_rate, str(exc)) from None
                    raise
                await evaluate.close()
                await writer.close()
            outcome_text = "finished"
        finally:
            ticking.cancel()
            run_log.close(outcome_text)
        session_selection = {k: v for k, v in prep.config["selection"].items() if k != "sample_ids"}
        summary = summarize(
            track, store, samples, opts.scoring, opts.count_backend_errors,
            write=not prep.narrower, selection=session_selection if prep.narrower else None,
        )
        if prep.narrower:
            console.print(
                f"[dim]{len(samples)} of the run's selected samples scored; {escape(str(run_dir))} keeps describing "
                "its whole selection (summary.json, report)[/dim]"
            )
        return RunOutcome(
            run_dir=run_dir,
            summary=summary,
            resumed=resumed,
            generated=len(to_ask),
            reused=len(unscored),
            rescored=rescored,
        )
    finally:
        store.close()
        track.close()
        await model.aclose()


def _rate_stop(store: RunStore, asked: list[Sample], rate: float, last: str) -> BackendErrorRate:
    """The backend-error-rate stop, counted from the rows stored once the session's writes are
    done (requests that failed at the same moment are stored too, and counted)."""
    statuses = store.statuses()
    mine = [statuses[s.id] for s in asked if s.id in statuses]
    failed = sum(1 for st in mine if st == BACKEND_ERROR)
    stored = sum(1 for st in statuses.values() if st == BACKEND_ERROR)
    earlier = f", {stored} stored in the run directory with earlier sessions'" if stored != failed else ""
    return BackendErrorRate(
        f"{failed} of the {len(mine)} samples this session stored got no usable answer from the backend "
        f"(over --max-backend-error-rate {rate:g}{earlier}); last: {last}; "
        "finished samples are saved: fix the backend and run the same command with --retry-errors"
    )


class _Backlog:
    """Answers waiting to be scored: this session's (at most ``capacity``: :meth:`put` waits for
    room, which holds up the request slot it came from) and stored answers a stopped session never
    scored (already in memory). :meth:`take` alternates between the two while both hold answers, so
    a large stored backlog neither starves new requests nor is starved by them."""

    def __init__(self, stored: list[Sample], capacity: int):
        self.fresh: collections.deque[tuple[Sample, ModelInput, ModelOutput]] = collections.deque()
        self.stored: collections.deque[Sample] = collections.deque(stored)
        self.capacity = max(1, capacity)
        self.open = True
        self.fresh_turn = True
        self.changed = asyncio.Event()

    def _notify(self) -> None:
        self.changed.set()

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            self.changed.clear()
            await self.changed.wait()

    async def put(self, item: tuple[Sample, ModelInput, ModelOutput]) -> None:
        await self._until(lambda: len(self.fresh) < self.capacity)
        self.fresh.append(item)
        self._notify()

    def close(self) -> None:
        self.open = False
        self._notify()

    async def take(self) -> tuple[Sample, ModelInput, ModelOutput] | Sample | None:
        """The next answer to score (a stored one as its sample), or None once none is left."""
        await self._until(lambda: bool(self.fresh or self.stored) or not self.open)
        if not self.fresh and not self.stored:
            self._notify()  # wake the other scorers: they end too
            return None
        take_fresh = bool(self.fresh) and (self.fresh_turn or not self.stored)
        self.fresh_turn = not take_fresh
        item = self.fresh.popleft() if take_fresh else self.stored.popleft()
        self._notify()  # room for a waiting put
        return item


async def _scored(evaluate: _Evaluation, sample: Sample, out: ModelOutput, after: str) -> SampleResult:
    """``evaluate(sample, out)``; a harness fault (not a CallbenchError) becomes one line naming
    the sample, ending with ``after`` (what is kept and how to go on)."""
    try:
        return await evaluate(sample, out)
    except CallbenchError:
        raise
    except Exception as exc:
        raise EvaluationFailed(
            f"sample {encodable(sample.id)!r}: evaluation failed ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}); {after}"
        ) from exc


_Generation = tuple[str, ModelOutput]  # (sample id, answer): persisted before it is scored
_Row = tuple[str, ModelInput, ModelOutput, SampleResult]  # (group, input, answer, result): a scored sample


class _Writer:
    """Writes go to SQLite on a thread of their own (the event loop never waits on the disk), in
    batches: everything queued while the previous batch was written goes in one transaction.
    ``put_generation`` (an answer, before scoring) and ``put`` (a scored sample) return once
    committed."""

    def __init__(self, store: RunStore):
        self.store = store
        self.thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        self.pending: list[tuple[_Generation | _Row, asyncio.Future[None]]] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def put_generation(self, sample_id: str, out: ModelOutput) -> None:
        await self._queue((sample_id, out))

    async def put(self, group: str, inp: ModelInput, out: ModelOutput, res: SampleResult) -> None:
        await self._queue((group, inp, out, res))

    async def _queue(self, item: _Generation | _Row) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if self.task is None:
            self.task = asyncio.create_task(self._drive())
        self.wake.set()
        await future

    async def _drive(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            self.wake.clear()
            batch, self.pending = self.pending, []
            if not batch:
                continue
            generations = [item for item, _ in batch if len(item) == 2]
            rows = [item for item, _ in batch if len(item) == 4]
            try:
                await loop.run_in_executor(self.thread, self.store.write, generations, rows)
            except Exception as exc:  # e.g. a full disk: every write of the batch fails with it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
            else:
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        self.thread.shutdown(wait=True)


class _Evaluation:
    """Where answers are scored while requests go on: worker processes for a track that can be
    rebuilt there (the CPU work then runs on every core, beside the event loop), threads for one
    whose sandboxes are processes anyway, else on the event loop itself."""

    def __init__(self, track: Track, opts: RunOptions, in_flight: int, pending: int):
        self.track = track
        self.threads: _DaemonThreads | None = None
        self.processes: ProcessEvaluator | None = None
        self.width = 1  # samples scored at once
        if not track.evaluate_in_thread:
            return
        cores = os.cpu_count() or 1
        workers = min(opts.eval_workers or (in_flight if track.evaluation_pool == "concurrency" else cores), in_flight)
        self.width = 2 * workers  # a queued sample each, so no worker waits for the next
        # Worker processes cost ~1 s of CPU each to start (imports, specs, V8): worth it for a
        # long run, not for a few samples, which threads score as well.
        factory = track.evaluator_factory() if pending >= _PROCESS_POOL_FROM else None
        if factory is not None:
            from callbench.runs.eval_worker import ProcessEvaluator

            self.processes = ProcessEvaluator(factory, workers)
        else:
            self.threads = _DaemonThreads(workers, "evaluate")

    async def start(self) -> None:
        if self.processes is not None:
            await self.processes.start()

    async def __call__(self, sample: Sample, out: ModelOutput) -> SampleResult:
        if self.processes is not None:
            return await self.processes.evaluate(sample, out)
        if self.threads is not None:
            return await asyncio.get_running_loop().run_in_executor(self.threads, self.track.evaluate, sample, out)
        return self.track.evaluate(sample, out)

    async def close(self, *, abandon: bool = False) -> None:
        """Wait for the scoring in progress and release the workers; ``abandon`` (a stop): do not
        wait -- worker processes are killed (their sandboxes with them), threads are left to
        finish or die with the process, and the track's ``close`` kills the sandboxes they run."""
        if self.threads is not None:
            self.threads.shutdown(wait=not abandon, cancel_futures=True)
        if self.processes is not None:
            await self.processes.close(abandon=abandon)


class _DaemonThreads(concurrent.futures.Executor):
    """A fixed pool of daemon threads. Unlike ``ThreadPoolExecutor``, whose threads the interpreter
    joins at exit, a run stopped by a signal can exit while a thread still waits on a sandbox:
    its result is not wanted, and the sandbox dies with the process (``--die-with-parent``)."""

    def __init__(self, workers: int, name: str):
        # (future, function, its positional arguments): any function (see submit), hence Any
        self._work: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, name=f"{name}_{i}", daemon=True) for i in range(max(1, workers))]
        self._closed = False
        for t in self._threads:
            t.start()

    def _serve(self) -> None:
        while (job := self._work.get()) is not None:
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                future.set_exception(exc)

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> concurrent.futures.Future[_T]:
        if self._closed:
            raise RuntimeError("cannot schedule new work after shutdown")
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._work.put((future, functools.partial(fn, **kwargs) if kwargs else fn, args))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        if cancel_futures:
            while True:
                try:
                    job = self._work.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in self._threads:
            self._work.put(None)
        if wait:
            for t in self._threads:
                t.join()


class RunStopped(KeyboardInterrupt):
    """A stop signal (SIGTERM, SIGINT or SIGHUP) ended the run: finished samples are stored, and
    so is every answer received but not yet scored (the next resume scores it without asking
    again). A ``KeyboardInterrupt``, so code that handles Ctrl-C handles every stop signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


#: Signals that stop a run. SIGTERM always; SIGINT and SIGHUP unless the process was started with
#: them ignored (``nohup`` ignores SIGHUP, a shell ignores SIGINT for ``cmd &``: whoever started
#: the run asked for that, and SIGTERM still stops it).
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


def run(
    track: Track, model: ModelBackend, opts: RunOptions, console: Console | None = None, *, handle_signals: bool = False
) -> RunOutcome:
    """Run to the end. ``handle_signals`` (the CLI's, on the main thread only): a stop signal cancels
    the run at once -- requests in flight are dropped, scoring in progress is abandoned (its
    sandboxes killed), what is stored stays -- and :class:`RunStopped` is raised; a second stop
    signal while the first one's clean-up runs ends the process immediately."""
    if not handle_signals or threading.current_thread() is not threading.main_thread():
        return asyncio.run(run_async(track, model, opts, console))
    return asyncio.run(_run_stoppable(track, model, opts, console))


async def _run_stoppable(track: Track, model: ModelBackend, opts: RunOptions, console: Console | None) -> RunOutcome:
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    caught: list[int] = []

    def on_signal(signum: int) -> None:
        if caught:  # the clean-up of the first stop is stuck: stop now (every stored row is committed)
            os.write(2, f"{signal.Signals(signum).name} again: stopping at once\n".encode())
            os._exit(128 + caught[0])
        caught.append(signum)
        main.cancel()

    def while_preparing(signum: int, frame: FrameType | None) -> None:
        # Loading the data and opening the run directory is synchronous (seconds for large spec
        # sets), so the loop would see the signal only after it: nothing ran yet, so unwind at
        # once, as Ctrl-C does (every step of the preparation closes what it opened).
        raise RunStopped(signum)

    installed: dict[int, Callable[[int, FrameType | None], Any] | int | signal.Handlers | None] = {}
    for name in STOP_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN and signum != signal.SIGTERM:
            continue
        installed[signum] = previous
        signal.signal(signum, while_preparing)
    looped: list[int] = []

    def prepared() -> None:  # the run starts: a stop now cancels it where it waits
        for signum in installed:
            loop.add_signal_handler(signum, on_signal, signum)
            looped.append(signum)

    try:
        return await run_async(track, model, opts, console, _prepared=prepared)
    except asyncio.CancelledError:
        if caught:
            raise RunStopped(caught[0]) from None
        raise
    finally:
        for signum in looped:
            loop.remove_signal_handler(signum)
        for signum, previous in installed.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
