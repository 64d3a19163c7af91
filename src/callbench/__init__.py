"""callbench: measure and improve how well LLMs write API calls.

The public Python API mirrors the CLI: ``callbench.run(...)``, ``callbench.report(...)``,
``callbench.fetch_data(...)``; ``callbench.load_run(dir)`` reads a run's samples as rows (a pandas
DataFrame when pandas is installed, else a list of dicts; ``as_frame=False``: always the list);
``callbench.load_runs(dir)`` one row per run below a directory, as ``callbench runs`` lists them;
``callbench.leaderboard(sweep_dir)`` a sweep's leaderboard (cells, intervals and gains), as
``callbench leaderboard`` shows it.
"""

from callbench.errors import CallbenchError
from callbench.version import __version__

__all__ = ["CallbenchError", "__version__", "run", "report", "fetch_data", "load_run", "load_runs", "leaderboard"]


def __getattr__(name: str):
    # Lazy so that ``import callbench`` stays light (no V8, no model SDKs).
    if name == "run":
        from callbench.api import run

        return run
    if name == "report":
        from callbench.api import report

        return report
    if name == "fetch_data":
        from callbench.data.fetch import fetch_data

        return fetch_data
    if name == "load_run":
        from callbench.results import load_run

        return load_run
    if name == "load_runs":
        from callbench.results import load_runs

        return load_runs
    if name == "leaderboard":
        from callbench.sweep.leaderboard import build_leaderboard

        return build_leaderboard
    raise AttributeError(name)
