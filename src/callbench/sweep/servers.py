"""Model servers a sweep's cells share, and the bound on each (issue 32): a grid's ``servers:``
maps a server URL to the most requests in flight at once to it over the whole sweep::

    models: ["openai:M@http://10.0.0.5:8000/v1"]
    servers: {"http://10.0.0.5:8000/v1": 32}

A cell's load on a server is its run concurrency (``concurrency``, the requests one run keeps in
flight; with replicas ``@URL1,URL2`` a run's requests may all go to one of them). A cell whose
concurrency alone is above a server's bound runs with the bound as its concurrency (a runtime
setting: the cell's name and identity do not change). The local executor starts a cell only when
its load fits beside the cells already talking to the same servers; the Ray executor declares the
bound as the resource ``model_server:<URL>`` of the cluster it starts and has each cell take its
load in units of it (on a cluster of your own, declare the resource on the nodes: see
:mod:`callbench.sweep.ray_executor`). A server the grid does not list is not bounded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from callbench.runs.settings import RunSettings
from callbench.sweep.grid import Cell, server_urls

#: A run's concurrency when its settings do not say (``callbench.run``'s default).
DEFAULT_CONCURRENCY: int = RunSettings.model_fields["concurrency"].default


class ServerBounds:
    """The grid's server bounds, and the load of the cells in flight on each server."""

    def __init__(self, bounds: dict[str, int]) -> None:
        self.bounds = dict(bounds)
        self.in_flight: Counter[str] = Counter()

    def servers(self, cell: Cell) -> list[str]:
        """The bounded servers ``cell`` talks to."""
        return [u for u in server_urls(cell.model, cell.settings) if u in self.bounds]

    def effective(self, cell: Cell) -> Cell:
        """``cell`` with its concurrency lowered to the smallest bound of its servers, if above it."""
        limits = [self.bounds[u] for u in self.servers(cell)]
        concurrency = int(cell.settings.get("concurrency") or DEFAULT_CONCURRENCY)
        if not limits or concurrency <= min(limits):
            return cell
        return replace(cell, settings={**cell.settings, "concurrency": min(limits)})

    def load(self, cell: Cell) -> dict[str, int]:
        """Requests ``cell`` may keep in flight on each bounded server it talks to."""
        concurrency = int(self.effective(cell).settings.get("concurrency") or DEFAULT_CONCURRENCY)
        return {u: concurrency for u in self.servers(cell)}

    def fits(self, cell: Cell) -> bool:
        """May ``cell`` start now (its load fits beside the cells in flight on its servers)?"""
        return all(self.in_flight[u] + n <= self.bounds[u] for u, n in self.load(cell).items())

    def take(self, cell: Cell) -> None:
        self.in_flight.update(self.load(cell))

    def release(self, cell: Cell) -> None:
        self.in_flight.subtract(self.load(cell))


__all__ = ["DEFAULT_CONCURRENCY", "ServerBounds", "server_urls"]
