"""One instance of a sandbox per evaluation thread.

The runner scores samples on a pool of threads so that generation (the event loop) and
evaluation overlap. A sandbox handle (a V8 worker, a tool process) serves one caller at a time,
so each thread gets its own, created on first use; ``close`` stops them all. Sandboxes are
processes, so their work runs in parallel on all cores while the threads only wait for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class _Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=_Closable)


class PerThread(Generic[T]):
    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._local = threading.local()
        self._made: list[T] = []
        self._lock = threading.Lock()

    def get(self) -> T:
        item = getattr(self._local, "item", None)
        if item is None:
            item = self._factory()
            self._local.item = item
            with self._lock:
                self._made.append(item)
        return item

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, []
            self._local = threading.local()
        for item in made:
            item.close()
