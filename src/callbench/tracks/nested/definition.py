"""The nested track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callbench.tracks.definition import TaskSource, TrackDefinition, register


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.nested.dataset import load_nested

    return {t.id: t for t in load_nested(path)}


def _defaults(root: Path | None) -> list[Path]:
    """The fetched NESTFUL (v2 first), then the built-in generated set."""
    from callbench.tracks.nested.dataset import FETCHED_V2_FILES, builtin_tasks

    paths = [] if root is None else [root / "nestful" / rel for rel in FETCHED_V2_FILES]
    return [*paths, Path(str(builtin_tasks()))]


DEFINITION = register(
    TrackDefinition(
        name="nested",
        track="callbench.tracks.nested.track:NestedTrack",
        options="callbench.tracks.nested.track:NestedOptions",
        description="a JSON sequence of tool calls whose arguments use earlier outputs, executed (NESTFUL)",
        view="callbench.report.nested:NestedView",
        summary="callbench.report.table:print_nested_summary",
        tasks=TaskSource(load=_load, defaults=_defaults),
        show="callbench.cli.results:NestedShow",
        model_option="model_spec",  # --prompt-template auto reads the model's family from its spec
    )
)
