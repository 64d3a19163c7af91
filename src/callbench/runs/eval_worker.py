"""Evaluation in worker processes: a track rebuilt once per process scores samples there.

Scoring a web API answer is Python work (code extraction, request comparison) around a V8 run;
in the event loop's process it competes with the HTTP client for one interpreter lock, which
capped a run near 250 samples/s on 2 cores. A track that can be rebuilt from its options
(:meth:`Track.evaluator_factory`) is scored by a pool of worker processes instead, one per core
by default; each owns its sandboxes, exactly as the track in the main process would.

Why not ``multiprocessing``: its spawn and forkserver modes re-import the caller's ``__main__``
in every worker (a user's script calling ``callbench.run`` without an ``if __name__`` guard
would start runs recursively), and fork copies a process that runs threads (the store writer, a
test's in-process server) mid-step. A worker here is a plain ``python -I`` child fed pickled
requests over its stdin, like the V8 worker: the parent is the only writer of what it reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:  # types only: a worker learns its track from the pickled factory
    from callbench.models.base import ModelOutput
    from callbench.tracks.base import Sample, SampleResult, Track

_HEADER = struct.Struct("!Q")
_Value = TypeVar("_Value")
#: A worker's answer for one sample: ``(True, its result)`` or ``(False, why it failed)`` -- the
#: error's text, or in the parent the exception that stands for it.
Reply = tuple[bool, "SampleResult | str | Exception"]
_NICENESS = 19  # added to the worker's niceness (see _yield_to_requests)


class EvaluatorError(RuntimeError):
    """A worker process died or failed to start (the sandboxes inside it contain sample code)."""


class ProcessEvaluator:
    """``await evaluate(sample, output)`` on a pool of ``workers`` processes.

    A free worker takes every request queued at that moment (up to ``max_batch``) in one message
    and answers them in one: under load, the cost of waking another process (large on small
    virtual machines) is paid per batch, not per sample; when idle, a batch is one sample."""

    def __init__(self, factory: Callable[[], Track], workers: int, max_batch: int = 32) -> None:
        self._factory = pickle.dumps(factory)
        self._size = max(1, workers)
        self._max_batch = max_batch
        self._queue: asyncio.Queue[tuple[tuple[Sample, ModelOutput], asyncio.Future[SampleResult]]] | None = None
        self._all: list[_Worker] = []
        self._drivers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start every worker now: they load the track and its sandboxes while the first requests
        are in flight, instead of after the first answers arrive."""
        if self._queue is not None:
            return
        self._queue = asyncio.Queue()
        for _ in range(self._size):
            worker = _Worker(self._factory)
            self._all.append(worker)
            await worker.ensure_started()
            self._drivers.append(asyncio.create_task(self._drive(worker)))

    async def _drive(self, worker: _Worker) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            batch = [(req, fut) for req, fut in batch if not fut.done()]  # a cancelled caller
            if not batch:
                continue
            replies: list[Reply]
            try:
                replies = await worker.call([req for req, _ in batch])
            except EvaluatorError as exc:
                replies = [(False, exc)] * len(batch)
            except Exception as exc:  # noqa: BLE001 - e.g. a request pickle cannot write: every waiter learns it
                failure = EvaluatorError(f"cannot hand the samples to a worker process ({type(exc).__name__}: {exc})")
                replies = [(False, failure)] * len(batch)
            for (_, fut), (ok, value) in zip(batch, replies, strict=True):
                if fut.done():
                    continue
                if ok:
                    fut.set_result(cast("SampleResult", value))  # ok: the track's result
                else:
                    fut.set_exception(value if isinstance(value, Exception) else EvaluatorError(f"evaluation failed in a worker process: {value}"))

    async def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        await self.start()
        assert self._queue is not None
        future: asyncio.Future[SampleResult] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(((sample, _sendable(output)), future))
        return await future

    async def close(self, *, abandon: bool = False) -> None:
        """Stop every worker: each finishes its batch and closes its sandboxes; ``abandon`` (a
        stop signal): kill them now, their sandboxes with them (bwrap's ``--die-with-parent``)."""
        drivers, self._drivers = self._drivers, []
        for task in drivers:
            task.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        workers, self._all = self._all, []
        self._queue = None
        await asyncio.gather(*(w.close(abandon=abandon) for w in workers), return_exceptions=True)


class _Worker:
    """One child process; started on its first request, restarted after it dies."""

    def __init__(self, factory: bytes) -> None:
        self._factory = factory
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None

    async def _spawn(self) -> asyncio.subprocess.Process:
        src_root = str(Path(__file__).resolve().parents[2])
        boot = f"import sys; sys.path.insert(0, {src_root!r}); from callbench.runs.eval_worker import serve; serve()"
        self._stderr = tempfile.TemporaryFile()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-c", boot, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self._stderr, limit=1 << 26,
        )
        self._proc = proc
        await self._send(self._factory)
        return proc

    async def _send(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(_HEADER.pack(len(data)) + data)
        await self._proc.stdin.drain()

    async def ensure_started(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            await self._spawn()

    async def call(self, requests: list[tuple[Sample, ModelOutput]]) -> list[Reply]:
        """Send a batch of ``(sample, output)``; ``(ok, result or error text)`` for each."""
        try:
            await self.ensure_started()
            await self._send(pickle.dumps(requests))
            assert self._proc is not None and self._proc.stdout is not None
            (size,) = _HEADER.unpack(await self._proc.stdout.readexactly(_HEADER.size))
            replies: list[Reply] = pickle.loads(await self._proc.stdout.readexactly(size))  # what _reply wrote
            return replies
        except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError) as exc:
            tail = self._stderr_tail()
            await self.close()
            raise EvaluatorError(f"an evaluation worker process died ({type(exc).__name__}){': ' + tail if tail else ''}") from None

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(max(0, self._stderr.seek(0, os.SEEK_END) - 600))
            return " ".join(self._stderr.read().decode("utf-8", "replace").split())[-300:]
        except (OSError, ValueError):
            return ""

    async def close(self, *, abandon: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()  # the worker leaves at end of input and closes its sandboxes
                if abandon:
                    raise TimeoutError
                await asyncio.wait_for(proc.wait(), timeout=10)
            except (TimeoutError, OSError, AssertionError):
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
                await proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _read(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return stream.read(size)


def _yield_to_requests() -> None:
    """Score at a lower CPU priority (the V8 worker this process starts inherits it): where the
    cores are busy, the event loop that turns an answer into the next request runs first, and
    scoring, which a backlog absorbs, takes the time left over."""
    try:
        os.nice(_NICENESS)
    except (OSError, AttributeError):  # not permitted, or not on this platform
        pass


def _evaluate_batch(track: Track, batch: list[tuple[Sample, ModelOutput]]) -> list[Reply]:
    """``(ok, result or error text)`` per ``(sample, output)``. A track with ``evaluate_many``
    scores the batch in one go (the web API track sends its programs to V8 together); if that
    fails, each sample is scored alone so the error is pinned on the sample that caused it."""
    many: Callable[[list[tuple[Sample, ModelOutput]]], list[SampleResult]] | None = getattr(track, "evaluate_many", None)
    if many is not None and len(batch) > 1:
        try:
            return [(True, _sendable(r)) for r in many(batch)]
        except Exception:  # noqa: BLE001 - retried one by one below, which names the sample
            pass
    replies: list[Reply] = []
    for sample, output in batch:
        try:
            replies.append((True, _sendable(track.evaluate(sample, output))))
        except Exception as exc:  # noqa: BLE001 - reported to the parent with the sample's context
            replies.append((False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"))
    return replies


def _sendable(result: _Value) -> _Value:
    """``result`` with the values a sample produced cut as the store cuts them
    (:func:`callbench.runs.store.storable`): pickle recurses as deep as a value nests, so a
    result 100,000 deep would otherwise kill the worker and, with it, the run."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        from callbench.runs.store import storable

        changes = {f.name: storable(getattr(result, f.name)) for f in dataclasses.fields(result)
                   if isinstance(getattr(result, f.name), (dict, list, tuple))}
        return dataclasses.replace(result, **changes) if changes else result
    return result


def _reply(replies: list[Reply]) -> bytes:
    """The pickled replies; one that cannot be pickled becomes that sample's error, not the batch's."""
    try:
        return pickle.dumps(replies)
    except Exception:  # noqa: BLE001 - found and named one reply at a time below
        pass
    out: list[Reply] = []
    for ok, value in replies:
        try:
            pickle.dumps(value)
            out.append((ok, value))
        except Exception as exc:  # noqa: BLE001 - the sample's error, reported by the parent
            out.append((False, f"its result cannot be sent back ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"))
    return pickle.dumps(out)


def serve() -> None:
    """Worker main: build the track, then answer ``(sample, output)`` requests until EOF."""
    inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    _yield_to_requests()
    track: Track = pickle.loads(_read(inp) or b"")()
    warm_up = getattr(track, "warm_up", None)
    if warm_up is not None:
        warm_up()
    try:
        while (data := _read(inp)) is not None:
            body = _reply(_evaluate_batch(track, pickle.loads(data)))
            out.write(_HEADER.pack(len(body)) + body)
            out.flush()
    finally:
        track.close()
