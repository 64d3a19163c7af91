"""The Ray executor (``callbench sweep GRID --executor ray [--address ADDR]``): each cell a Ray task.

**Where results go.** A cell's task writes its run directory (and its log) straight into the sweep
directory, ``DIR/runs/<cell>/`` and ``DIR/logs/<cell>.log``, exactly as the local executor's worker
does; the driver reads each cell's state from there and writes ``DIR/sweep.json`` with the same
bookkeeping (:class:`~callbench.sweep.local.SweepBook`), so the manifest ends the same as the local
executor's for the same grid. The sweep directory must therefore be on storage that every node of
the cluster mounts at the same path (NFS or a cluster file system; on one machine any directory).
This was chosen over streaming rows back to the driver's store because the run store already makes
a run safe to lose and resume: rows are keyed by sample id and written as each sample is scored, a
run directory is locked by one process at a time (``flock``, dropped by the kernel when the process
or its node dies), and a run resumed in its directory asks only for the samples it lacks. Relative
paths in the grid (``replay:FILE``, ``data``) are resolved against the driver's working directory,
which a task enters when that directory exists on its node (use absolute paths on shared storage
otherwise). The driver's ``CALLBENCH_*`` environment variables (the data directory, sandbox
settings) travel with each task.

**Losing a worker or a node.** A task whose worker process dies (killed, out of memory) or whose
node is lost is re-run by Ray, up to ``max_retries`` times (default :data:`DEFAULT_MAX_RETRIES`),
on any node with its resources; the re-run is the same ``callbench.run`` into the same run
directory, so it resumes: the samples stored before are kept and not asked or scored again, and
none is stored twice. A cell still unfinished after its retries is recorded as failed with one
line, and the next sweep resumes it. Exceptions inside a cell are not retried (``callbench.run``'s
errors are recorded as the cell's error, as with the local executor).

**Resources each cell's task declares.**

* ``num_cpus``: :data:`CELL_CPUS` (1; the cell's sandboxed scoring runs beside its requests);
* local-model backends (``llamacpp:``, ``hf:``): one ``GPU`` when the cluster has GPUs, else one
  unit of the custom resource :data:`LOCAL_MODEL_RESOURCE` (``callbench_local_model``): declare it
  on the nodes that may load a model in-process, as many units as models fit at once
  (``ray start --resources '{"callbench_local_model": 1}'``). A cluster with neither fails such a
  cell with one line instead of leaving it pending forever;
* ``openai:`` cells: for each server URL of the model (``openai:M@URL`` or its replicas
  ``@URL1,URL2``), as many units of ``model_server:<URL>`` (:data:`SERVER_RESOURCE_PREFIX` and the
  URL as the grid writes it) as the requests it keeps in flight (its ``concurrency``) when the
  cluster declares that resource. Ray's custom resources are per node: ``{"model_server:URL": 32}``
  declared on each of N nodes bounds the requests in flight to that server at 32 per node, N x 32
  in all (declare it on one node, or divide the bound, for a bound over the cluster); a cell asking
  for more than the largest node has takes that node's amount. The local cluster (one node)
  declares the grid's ``servers:`` bounds (:mod:`callbench.sweep.servers`), and a cell's
  concurrency above its server's bound is lowered to it, as with the local executor. On a cluster
  of your own (``--address``) the grid's ``servers:`` only lowers each cell's concurrency: declare
  the resources on its nodes. A server the cluster does not declare is not bounded.

A cell that no alive node could ever run (its resources exceed every node's) fails at once with
one line naming what is missing.

**The cluster.** With ``address`` the driver connects to that cluster (``ray.init(address=...)``)
and disconnects at the end; in a process already connected to Ray (``ray.init`` called), the cells
run there and the connection is left as it was. Otherwise a local cluster is started on this machine
and stopped at the end (:func:`local_cluster`): loopback only, no dashboard, ``num_cpus`` bounded
(``--workers``, default min(cores, cells to run)) and one :data:`LOCAL_MODEL_RESOURCE`. At most
``workers`` cells are in flight (default: the cluster's CPUs), so "start" is when a cell is handed to
Ray; Ray then places it where its resources are.

Ray is imported only here, when this executor is asked for; without it the error says to
``pip install 'callbench[ray]'``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError
from callbench.models.registry import parse_model_spec
from callbench.sweep.grid import Cell, Grid
from callbench.sweep.local import CellResult, SweepBook, SweepOutcome, _one_line, default_workers, run_cell
from callbench.sweep.servers import DEFAULT_CONCURRENCY, ServerBounds, server_urls

#: Ray task retries of a cell whose worker or node died (each resumes the cell's run directory).
DEFAULT_MAX_RETRIES = 3
#: CPUs each cell's task declares.
CELL_CPUS = 1
#: The custom resource a local-model cell (llamacpp:, hf:) takes on a cluster without GPUs.
LOCAL_MODEL_RESOURCE = "callbench_local_model"
#: ``model_server:<URL>``: the custom resource bounding the cells that talk to one model server.
SERVER_RESOURCE_PREFIX = "model_server:"
#: Backends whose model is loaded in the cell's process.
LOCAL_BACKENDS = frozenset({"llamacpp", "hf"})
#: The object store of a local cluster: cells return one small result each.
_OBJECT_STORE_BYTES = 100 * 1024 * 1024
# Ray binds its local cluster to a reachable interface, never to loopback, unless this variable
# turns "clusters" off (as on macOS/Windows); read by ray._private.ray_constants when imported.
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def import_ray() -> Any:
    """The ``ray`` module, or a one-line ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray, which is not installed: pip install 'callbench[ray]'") from None
    return ray


@contextlib.contextmanager
def local_cluster(num_cpus: int, resources: dict[str, float] | None = None) -> Iterator[Any]:
    """Start a Ray cluster on this machine for the ``with`` block and stop it after: every port on
    loopback (127.0.0.1) only, no dashboard, ``num_cpus`` CPUs, one :data:`LOCAL_MODEL_RESOURCE`
    (one in-process model at a time) plus ``resources``, worker output kept out of the terminal.
    Yields the ``ray`` module (connected)."""
    before_env = os.environ.get(_LOOPBACK_ENV)
    os.environ[_LOOPBACK_ENV] = "0"  # before ray is imported, and for the processes it starts
    ray = import_ray()
    # ray may have been imported before (its constant is then already read): set it too. Ray has
    # no public switch for loopback-only; a changed internal name leaves Ray's default binding.
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    before_const = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if constants is not None and before_const is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(
            address="local",  # a new cluster even when one already runs here
            num_cpus=num_cpus,
            resources={LOCAL_MODEL_RESOURCE: 1, **(resources or {})},
            include_dashboard=False,
            object_store_memory=_OBJECT_STORE_BYTES,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if constants is not None and before_const is not None:
            constants.ENABLE_RAY_CLUSTER = before_const
        if before_env is None:
            os.environ.pop(_LOOPBACK_ENV, None)
        else:
            os.environ[_LOOPBACK_ENV] = before_env


@contextlib.contextmanager
def _connected(address: str | None, num_cpus: int, resources: dict[str, float] | None = None) -> Iterator[Any]:
    ray = import_ray()
    if ray.is_initialized():  # this process is connected already: use that cluster, leave it so
        yield ray
    elif address is None:
        with local_cluster(num_cpus, resources) as ray:
            yield ray
    else:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"--address {address}: cannot connect to the Ray cluster ({_one_line(exc)})") from None
        try:
            yield ray
        finally:
            ray.shutdown()


def cell_resources(cell: Cell, cluster: dict[str, float]) -> dict[str, Any]:
    """The resource options of ``cell``'s task on a cluster whose totals are ``cluster``
    (``ray.cluster_resources()``): ``num_cpus``, and ``num_gpus`` or ``resources`` (see the module)."""
    backend, _ = parse_model_spec(cell.model)
    options: dict[str, Any] = {"num_cpus": CELL_CPUS}
    custom: dict[str, float] = {}
    if backend in LOCAL_BACKENDS:
        if cluster.get("GPU", 0) >= 1:
            options["num_gpus"] = 1
        else:
            custom[LOCAL_MODEL_RESOURCE] = 1
    concurrency = int(cell.settings.get("concurrency") or DEFAULT_CONCURRENCY)
    for url in server_urls(cell.model, cell.settings):
        name = SERVER_RESOURCE_PREFIX + url
        if cluster.get(name, 0) >= 1:
            custom[name] = min(concurrency, int(cluster[name]))
    if custom:
        options["resources"] = custom
    return options


def unplaceable(options: dict[str, Any], nodes: list[dict[str, float]]) -> str | None:
    """Why no node in ``nodes`` (each alive node's total resources) can run a task with these
    resource ``options``, or None when one can."""
    wanted = {"CPU": float(options.get("num_cpus", 0)), "GPU": float(options.get("num_gpus", 0)), **options.get("resources", {})}
    wanted = {k: v for k, v in wanted.items() if v > 0}
    if any(all(node.get(k, 0) >= v for k, v in wanted.items()) for node in nodes):
        return None
    missing = sorted(k for k, v in wanted.items() if not any(node.get(k, 0) >= v for node in nodes))
    need = ", ".join(f"{k}={wanted[k]:g}" for k in sorted(wanted))
    if missing == [LOCAL_MODEL_RESOURCE]:
        hint = f" (start nodes with --resources '{{\"{LOCAL_MODEL_RESOURCE}\": 1}}', or GPUs)"
    else:
        hint = ""
    return f"no node of the Ray cluster has the resources this cell needs ({need}; missing: {', '.join(missing) or 'all on one node'}){hint}"


def _forwarded_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("CALLBENCH_")}


def _cell_task(runner: Callable[[str, dict[str, Any]], CellResult], out: str, cell: dict[str, Any], cwd: str) -> CellResult:
    """A cell in a Ray worker: in the driver's working directory when this node has it."""
    if os.path.isdir(cwd):
        os.chdir(cwd)
    return runner(out, cell)


def _lost(exc: BaseException, retries: int) -> str:
    return (
        f"the cell's Ray task did not finish after {retries} retr{'y' if retries == 1 else 'ies'} "
        f"(its worker or node died: {_one_line(exc)[:200]}); run the sweep again to resume it"
    )


def run_ray(
    grid: Grid,
    out: Path,
    *,
    address: str | None = None,
    workers: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    report: Callable[[str, Cell, Any], None] | None = None,
    runner: Callable[[str, dict[str, Any]], CellResult] = run_cell,
) -> SweepOutcome:
    """Run ``grid``'s unfinished cells under ``out`` as Ray tasks (see the module): on the cluster at
    ``address``, on the one this process is connected to, or on a local cluster started for the
    sweep with ``workers`` CPUs. ``report`` and ``runner`` as for
    :func:`~callbench.sweep.local.run_local` (``runner`` is pickled to the workers)."""
    if max_retries < 0:
        raise ConfigError(f"max_retries {max_retries}: must be >= 0")
    out = out.absolute()  # the workers' working directory is not the driver's
    book = SweepBook(grid, out, report)
    if not book.todo:
        return book.outcome()  # nothing to run: no cluster is started
    ray = import_ray()
    bounds = ServerBounds(grid.servers)  # declared to a local cluster; each cell takes its load
    servers = {SERVER_RESOURCE_PREFIX + url: float(n) for url, n in grid.servers.items()}
    with _connected(address, workers or default_workers(len(book.todo)), servers):
        cluster = {k: float(v) for k, v in ray.cluster_resources().items()}
        nodes = [{k: float(v) for k, v in n.get("Resources", {}).items()} for n in ray.nodes() if n.get("Alive")]
        # a server's units are per node: a cell takes at most what one node has
        cluster.update(
            {k: max((n.get(k, 0.0) for n in nodes), default=0.0) for k in cluster if k.startswith(SERVER_RESOURCE_PREFIX)}
        )
        limit = workers or max(1, int(cluster.get("CPU", 1)))
        task = ray.remote(_cell_task)
        env = _forwarded_env()
        cwd = os.getcwd()
        queue = list(book.todo)
        running: dict[Any, Cell] = {}
        try:
            while queue or running:
                while queue and len(running) < limit:
                    c = queue.pop(0)
                    options = cell_resources(bounds.effective(c), cluster)
                    why = unplaceable(options, nodes)
                    if why is not None:
                        book.report("start", c, None)
                        book.finish(c, CellResult(c.name, False, why))
                        continue
                    ref = task.options(
                        **options,
                        max_retries=max_retries,
                        retry_exceptions=False,
                        name=f"callbench-cell:{c.name}",
                        runtime_env={"env_vars": env} if env else None,
                    ).remote(runner, str(out), bounds.effective(c).as_dict(), cwd)
                    running[ref] = c
                    book.report("start", c, None)
                if not running:
                    continue
                finished, _ = ray.wait(list(running), num_returns=1)
                for ref in finished:
                    c = running.pop(ref)
                    try:
                        res = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # the runner raised (run_cell does not)
                        res = CellResult(c.name, False, f"worker failed: {_one_line(exc.cause if exc.cause else exc)}")
                    except ray.exceptions.RayError as exc:  # worker or node lost, retries spent
                        res = CellResult(c.name, False, _lost(exc, max_retries))
                    book.finish(c, res)
        finally:
            if running:  # stopped (Ctrl-C): each cell keeps what it stored, the next sweep resumes it
                for ref in running:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref)
                book.stopped(list(running.values()))
    return book.outcome()


__all__ = [
    "CELL_CPUS",
    "DEFAULT_MAX_RETRIES",
    "LOCAL_MODEL_RESOURCE",
    "SERVER_RESOURCE_PREFIX",
    "cell_resources",
    "import_ray",
    "local_cluster",
    "run_ray",
    "server_urls",
    "unplaceable",
]
