"""Many replicas of one model: ``openai:MODEL@URL1,URL2,...`` (a vLLM fleet, no load balancer needed).

Design:

* Each replica is a single-URL :class:`~callbench.models.openai_compat.OpenAICompatBackend` of its
  own, with its own connection pool and its own in-flight semaphore of ``concurrency``: that is the
  per-replica concurrency, and everything a single URL does per request (retries, backoff,
  Retry-After, malformed replies, token healing) holds on each replica unchanged.
* A request goes to the healthy replica with the fewest requests assigned (in flight or waiting
  for one of its slots), ties broken round-robin: requests spread evenly, a slow replica gets fewer.
* Health. A replica is *taken out* when a request on it ends in a replica failure: a connection
  refused, reset or dropped (at once: with other replicas there, reconnecting to a dead one only
  delays the request), or 5xx answers and timeouts still failing after the backend's own retries.
  It stays out for a cool-down (``replica_cooldown`` seconds, doubled after each failed probe up to
  ``replica_cooldown_max``); then one probe (``GET /models``, as the preflight asks; any HTTP answer
  below 500 means the server is back) returns it to service. Probes are started by requests looking
  for a replica, not by timers: tests and the CLI run several event loops one after another.
* The request that met the failure is asked again on a replica it has not failed on yet (its
  attempts on every replica add up in ``ModelOutput.extra["attempts"]``; ``extra["replica"]`` names
  the one that answered). A refused request (4xx) is not asked elsewhere: every replica of one
  model refuses it alike; nor is one still rate-limited (429) after its retries on a replica that
  is in service (the fleet is busy, not broken).
* A replica stops retrying a request and hands it over only while another replica it has not
  failed on is in service (:data:`TRIED`). When every replica is out, a request goes to the one
  whose cool-down ends first, with its full retries, as a single URL would; when that fails too,
  or every replica has failed it, its last error is the sample's backend error, and the run's
  existing handling (``--max-backend-error-rate``, ``--retry-errors``, resume) applies.
* Which replica answered does not change the answer: the run's identity holds the replica list
  (``openai:M@URL1,URL2``) as it holds a single URL, and a single URL's identity is unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from callbench.errors import ConfigError

log = logging.getLogger(__name__)

#: The replicas the current request (its asyncio task) has failed on: a replica stops retrying
#: and hands the request over only while another replica outside this set is in service.
TRIED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("callbench_replicas_tried", default=frozenset())


def split_urls(model: str, urls: str) -> list[str]:
    """The replica URLs of ``URL1,URL2,...`` (trailing ``/`` removed), or a one-line ConfigError for
    an empty entry, a URL that is not http(s) or a URL named twice."""
    spec = f"openai:{model}@{urls}"
    out: list[str] = []
    for i, raw in enumerate(urls.split(",")):
        url = raw.strip().rstrip("/")
        if not url:
            raise ConfigError(f"model '{spec}': replica URL {i + 1} is empty (expected openai:MODEL@URL1,URL2,...)")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"model '{spec}': replica URL {i + 1} must start with http:// or https:// (got {url!r})")
        if url in out:
            raise ConfigError(f"model '{spec}': replica URL {url!r} is listed twice")
        out.append(url)
    return out


@dataclass(eq=False)
class Replica:
    """One replica and its health (times are ``time.monotonic()`` seconds)."""

    url: str
    backend: Any  # its single-URL OpenAICompatBackend
    index: int
    assigned: int = 0  # requests on it now (in flight or waiting for a slot)
    down_until: float | None = None  # None: in service
    strikes: int = 0  # times taken out since it last answered (the cool-down doubles)
    probe: asyncio.Task[Any] | None = field(default=None, repr=False)
    answered: int = 0
    taken_out: int = 0

    @property
    def up(self) -> bool:
        return self.down_until is None


class ReplicaPool:
    """Chooses a replica for each request and keeps the replicas' health (see the module doc)."""

    def __init__(
        self,
        replicas: list[Any],
        *,
        cooldown: float,
        cooldown_max: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replicas = [Replica(b.base_url, b, i) for i, b in enumerate(replicas)]
        self.cooldown = cooldown
        self.cooldown_max = max(cooldown, cooldown_max)
        self.clock = clock
        self._cursor = 0

    def choose(self, tried: set[str]) -> Replica | None:
        """The replica for the next try of a request that has failed on ``tried`` (None: it has
        failed on every one). Starts the probes whose cool-down is over."""
        now, loop = self.clock(), asyncio.get_running_loop()
        for r in self.replicas:
            # a probe left unfinished on an earlier event loop (closed since) never finishes: start anew
            idle = r.probe is None or r.probe.done() or r.probe.get_loop() is not loop
            if not r.up and r.down_until is not None and now >= r.down_until and idle:
                r.probe = loop.create_task(self._probe(r))
        fresh = [r for r in self.replicas if r.url not in tried]
        if not fresh:
            return None
        up = [r for r in fresh if r.up]
        if up:
            n = len(self.replicas)
            # fewest assigned; among equals the first at or after the cursor (round-robin)
            pick = min(up, key=lambda r: (r.assigned, (r.index - self._cursor) % n))
            self._cursor = (pick.index + 1) % n
        else:  # all out: the one back soonest, with its full retries (as a single URL)
            pick = min(fresh, key=lambda r: r.down_until or 0.0)
        pick.assigned += 1
        return pick

    def release(self, r: Replica, *, answered: bool) -> None:
        r.assigned -= 1
        if answered:
            r.answered += 1
            r.strikes = 0
            if not r.up:
                log.warning("replica %s answers again: back in service", r.url)
                r.down_until = None

    def take_out(self, r: Replica, reason: str) -> None:
        if not r.up:
            return  # another request took it out already
        r.strikes += 1
        r.taken_out += 1
        wait = self._cooldown(r)
        r.down_until = self.clock() + wait
        log.warning("replica %s taken out for %.3g s: %s", r.url, wait, reason)

    def _cooldown(self, r: Replica) -> float:
        return min(self.cooldown * 2 ** max(0, r.strikes - 1), self.cooldown_max)

    async def _probe(self, r: Replica) -> None:
        ok = await r.backend.is_up()
        if r.up:
            return  # a request answered by it meanwhile brought it back
        if ok:
            log.warning("replica %s answered a probe: back in service", r.url)
            r.down_until = None
        else:
            r.strikes += 1
            r.down_until = self.clock() + self._cooldown(r)

    async def aclose(self) -> None:
        for r in self.replicas:
            task, r.probe = r.probe, None
            if task is not None and not task.done():
                try:
                    task.cancel()
                except RuntimeError:  # its event loop is closed: nothing left to cancel
                    pass
            await r.backend.aclose()
