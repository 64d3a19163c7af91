"""The web API track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callbench.tracks.definition import TaskSource, TrackDefinition, register

_ARGUMENT_VERDICTS = ("correct", "incorrect_value", "missing", "unnecessary", "illegal")


def derived_columns(mode: str, verdict: dict[str, Any], out: dict[str, Any]) -> None:
    """Booleans and counts that make each WAPIIBench rate the mean of a column."""
    from callbench.tracks.webapi.scoring import SampleVerdict, correct_except_credentials

    out[f"{mode}.correct"] = verdict.get("sample") == "correct"
    out[f"{mode}.executable"] = verdict.get("error") is None
    for part in ("url", "method", "endpoint"):
        value = verdict.get(part)
        out[f"{mode}.{part}_correct"] = None if value is None else value == "correct"
    try:
        out[f"{mode}.correct_except_credentials"] = correct_except_credentials(SampleVerdict.from_dict(verdict))
    except (TypeError, ValueError, AttributeError):  # a verdict of an older shape: unknown
        out[f"{mode}.correct_except_credentials"] = None
    args = verdict.get("arguments")
    args = args if isinstance(args, list) else []
    for kind in _ARGUMENT_VERDICTS:
        out[f"{mode}.arguments_{kind}"] = sum(1 for a in args if isinstance(a, dict) and a.get("verdict") == kind)


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.webapi.dataset import load_tasks

    return {t.id: t for t in load_tasks(path)}


def _defaults(root: Path | None) -> list[Path]:
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

    return [] if root is None else [root / DEFAULT_DATA_FILE]


def _given(path: Path) -> Path:
    """``--data`` may name the data dir: the task file is then the fetched WAPIIBench's."""
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

    return path / DEFAULT_DATA_FILE if path.is_dir() else path


DEFINITION = register(
    TrackDefinition(
        name="webapi",
        track="callbench.tracks.webapi.track:WebApiTrack",
        options="callbench.tracks.webapi.track:WebApiOptions",
        description="JavaScript/Axios code for one HTTP request, scored against the request and the OpenAPI spec (WAPIIBench)",
        view="callbench.report.webapi:WebApiView",
        summary="callbench.report.table:print_summary",
        columns=derived_columns,
        tasks=TaskSource(load=_load, defaults=_defaults, given=_given),
        show="callbench.cli.results:WebApiShow",
    )
)
