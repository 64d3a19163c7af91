"""The stateful track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callbench.tracks.definition import TaskSource, TrackDefinition, register


def derived_columns(mode: str, verdict: dict[str, Any], out: dict[str, Any]) -> None:
    """How many test cases the program was run on and how many it passed."""
    cases = verdict.get("cases")
    if isinstance(cases, list):
        out[f"{mode}.n_cases"] = len(cases)
        out[f"{mode}.cases_passed"] = sum(1 for c in cases if isinstance(c, dict) and c.get("verdict") == "pass")


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.stateful.track import load_bench

    return {t["id"]: t for t in load_bench(path)}


def _files(path: Path) -> list[Path]:
    from callbench.tracks.stateful.track import bench_files

    return bench_files(path)


def _defaults(root: Path | None) -> list[Path]:
    from callbench.tracks.stateful.track import builtin_bench

    return [builtin_bench()]


def _task_id(sample_id: str) -> str:
    """``task#2`` (the third sample of a pass@k task) -> ``task``."""
    return sample_id.split("#", 1)[0]


DEFINITION = register(
    TrackDefinition(
        name="stateful",
        track="callbench.tracks.stateful.track:StatefulTrack",
        options="callbench.tracks.stateful.track:StatefulOptions",
        description="Python programs against stateful APIs, run on fresh services per test case (StateEval)",
        view="callbench.report.stateful:StatefulView",
        summary="callbench.report.table:print_stateful_summary",
        columns=derived_columns,
        tasks=TaskSource(
            load=_load, defaults=_defaults, digest_key="bench_sha256", path_key="bench", files=_files, task_id=_task_id
        ),
        show="callbench.cli.results:StatefulShow",
    )
)
