"""A run's log (``run.log`` in its directory) and its plain progress lines.

On a terminal the progress bar shows a run as it goes; written to a file (``nohup``, a batch
scheduler, ``> log``) it shows nothing until the end. So every session appends to ``run.log``:
its start (selection, what is done already), a progress line at a steady interval (count, rate,
ETA, backend errors so far: ``webapi 12/60 samples, 1.9/s, ETA 0:25, 0 errors``), every warning
callbench logs while it runs, and its end. When the console is not a terminal the same progress
lines also go to it (at most every ``interval`` seconds), so a log file of the command follows the
run too.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from rich.console import Console

LOG_NAME = "run.log"


def _has_handlers(logger: logging.Logger) -> bool:
    """Does a record of ``logger`` reach any handler (its own or an ancestor's)?"""
    current: logging.Logger | None = logger
    while current is not None:
        if current.handlers:
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunLog:
    """Appends to ``run_dir/run.log`` for one session; ``advance()`` per finished sample,
    ``tick()`` now and then (a line once ``interval`` seconds have passed since the last one)."""

    def __init__(
        self,
        run_dir: Path,
        name: str,
        total: int,
        done: int,
        *,
        interval: float = 10.0,
        console: Console | None = None,
        plain: bool = False,
    ):
        self.name = name
        self.total = total
        self.done = done
        self.start_done = done
        self.errors = 0
        self.interval = interval
        self.console = console
        self.plain = plain  # also print progress lines on the console (not a terminal)
        self.started = time.monotonic()
        self.last = self.started
        self._file: TextIO | None
        try:
            self._file = (run_dir / LOG_NAME).open("a", encoding="utf-8")
        except OSError:
            self._file = None  # a log that cannot be written never stops a run
        self._handlers: list[logging.Handler] = []
        self._level: int | None = None
        if self._file is not None:
            logger = logging.getLogger("callbench")
            if not _has_handlers(logger):
                # no one configured logging (callbench.run from Python): warnings keep going to
                # stderr as Python's last-resort handler sent them before this file handler existed
                self._add(logger, logging.StreamHandler(), logging.WARNING, "%(message)s")
            self._add(logger, logging.StreamHandler(self._file), logging.INFO, "%(asctime)s %(levelname)s %(name)s: %(message)s")
            if logger.getEffectiveLevel() > logging.INFO:
                self._level = logger.level
                logger.setLevel(logging.INFO)  # the file takes info; console handlers keep their own level

    def _add(self, logger: logging.Logger, handler: logging.Handler, level: int, fmt: str) -> None:
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter(fmt))
        logger.addHandler(handler)
        self._handlers.append(handler)

    def write(self, text: str) -> None:
        if self._file is not None:
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            self._file.write(f"{stamp} {text}\n")
            self._file.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = (self.done - self.start_done) / elapsed
        left = self.total - self.done
        eta = _clock(left / rate) if rate > 0 else "?"
        return f"{self.name} {self.done}/{self.total} samples, {rate:.1f}/s, ETA {eta}, {self.errors} errors"

    def advance(self, error: bool = False) -> None:
        self.done += 1
        self.errors += int(error)
        self.tick()

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        text = self.line()
        self.write(text)
        if self.plain and self.console is not None:
            self.console.print(text, highlight=False, markup=False)

    def close(self, outcome: str) -> None:
        self.write(f"{self.line()}; {outcome} after {_clock(time.monotonic() - self.started)}")
        logger = logging.getLogger("callbench")
        for handler in self._handlers:
            logger.removeHandler(handler)
        self._handlers = []
        if self._level is not None:
            logger.setLevel(self._level)
            self._level = None
        if self._file is not None:
            self._file.close()
            self._file = None
