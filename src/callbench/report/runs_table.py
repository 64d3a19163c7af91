"""The runs below a directory, one row each: ``callbench runs``, ``callbench.load_runs`` and the
index page of ``callbench view``.

A run directory is one holding ``config.json`` or ``run.sqlite``; each is read as ``callbench
report`` reads it (:func:`callbench.report.build.load_run`), so a row's numbers are the report's.
The headline metrics are the first higher-is-better metrics the track's report view puts an
interval on (what the report's statistics table shows first), as the ratio of the view's per-unit
sums: no track is named here. A run that cannot be read is a row with status ``broken`` and its
one-line reason; nothing below the directory stops the listing.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError
from callbench.report.run_dirs import find_run_dirs

#: A run whose ``run.log`` was written this recently (seconds) is shown as running.
RUNNING_WINDOW_S = 60.0
#: Headline metrics per run.
N_HEADLINE = 3
#: Identity keys that are not settings (said in their own column, or fingerprints).
_NOT_SETTINGS = {"track", "model", "setup", "callbench_version", "data_file"}
_RUN_LOG = "run.log"  # written by every session (callbench.runs.run_log.LOG_NAME)

#: The columns of a row, in order (``metrics`` is a mapping label -> value).
COLUMNS = ("track", "model", "setup", "settings", "n", "n_selected", "status", "metrics", "directory")


@dataclass
class RunRow:
    track: str | None
    model: str | None
    setup: str | None
    settings: str  # "constrained=true mode=chat ..." (the identity's other scalar settings)
    n: int | None  # samples scored
    n_selected: int | None
    status: str  # complete, partial k/n, running, broken: <reason>
    metrics: dict[str, float | None] = field(default_factory=dict)  # label -> share (0..1)
    directory: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _scalar_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _settings(identity: dict[str, Any]) -> str:
    """The identity's scalar settings but the model, track and setup, and fingerprints."""
    parts = []
    for key, value in identity.items():
        if key in _NOT_SETTINGS or key.endswith(("_sha256", "_hash")) or isinstance(value, (dict, list)):
            continue
        parts.append(f"{key}={_scalar_text(value)}")
    return " ".join(parts)


def _headline(run: Any) -> dict[str, float | None]:
    from callbench.report.model import get_view

    summary = run.summary
    view = get_view(str(summary["track"]))
    scoring = str(summary["scoring"])
    defs = [m for m in view.interval_metrics(scoring, [summary]) if m.higher_is_better][:N_HEADLINE]
    units = view.units(run.counted, scoring, defs)
    out: dict[str, float | None] = {}
    for m in defs:
        u = units.get(m.key) or {}
        den = sum(d for _, d in u.values())
        out[m.label] = (sum(n for n, _ in u.values()) / den) if den else None
    return out


def _recent_log(directory: Path, now: float) -> bool:
    try:
        return now - (directory / _RUN_LOG).stat().st_mtime <= RUNNING_WINDOW_S
    except OSError:
        return False


def _identity(directory: Path) -> dict[str, Any]:
    """What config.json says of a run that cannot be loaded (empty when it cannot be read)."""
    try:
        doc = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    ident = doc.get("identity") if isinstance(doc, dict) else None
    return ident if isinstance(ident, dict) else {}


def run_row(directory: Path, now: float | None = None) -> RunRow:
    """The row of one run directory (status ``broken: <reason>`` when it cannot be read)."""
    from callbench.report.build import load_run

    now = time.time() if now is None else now
    try:
        run = load_run(directory, None)
        metrics = _headline(run)
    except CallbenchError as exc:
        return _broken(directory, " ".join(str(exc).split()))
    except Exception as exc:  # noqa: BLE001 - one odd run must not stop the listing
        return _broken(directory, " ".join(f"{type(exc).__name__}: {exc}".split())[:300])
    s = run.summary
    ident = run.config.get("identity") or {}
    if s.get("complete"):
        status = "complete"
    elif _recent_log(directory, now):
        status = "running"
    else:
        status = f"partial {s['n']}/{s['n_selected'] if s.get('n_selected') is not None else '?'}"
    return RunRow(
        track=s.get("track"),
        model=s.get("model"),
        setup=s.get("setup"),
        settings=_settings(ident),
        n=s.get("n"),
        n_selected=s.get("n_selected"),
        status=status,
        metrics=metrics,
        directory=str(directory),
    )


def _broken(directory: Path, reason: str) -> RunRow:
    ident = _identity(directory)
    return RunRow(
        track=ident.get("track") if isinstance(ident.get("track"), str) else None,
        model=ident.get("model") if isinstance(ident.get("model"), str) else None,
        setup=ident.get("setup") if isinstance(ident.get("setup"), str) else None,
        settings=_settings(ident),
        n=None,
        n_selected=None,
        status=f"broken: {reason}",
        directory=str(directory),
    )


def runs_table(root: Path) -> list[RunRow]:
    """Every run below ``root``, sorted by track, then model, then directory."""
    now = time.time()
    rows = [run_row(d, now) for d in find_run_dirs(Path(root))]
    rows.sort(key=lambda r: (r.track or "~", r.model or "~", r.directory))
    return rows


def metric_columns(rows: list[RunRow]) -> list[str]:
    """Every headline metric's label, in the order first seen."""
    return list(dict.fromkeys(label for r in rows for label in r.metrics))


def flat_rows(rows: list[RunRow]) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows with one column per headline metric (CSV, DataFrame)."""
    metrics = metric_columns(rows)
    columns = [c for c in COLUMNS if c != "metrics"]
    columns = columns[:-1] + metrics + columns[-1:]
    out = []
    for r in rows:
        d = r.as_dict()
        m = d.pop("metrics")
        out.append({c: (m.get(c) if c in metrics else d.get(c)) for c in columns})
    return columns, out


def to_csv(rows: list[RunRow]) -> str:
    columns, flat = flat_rows(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in flat:
        w.writerow(["" if row[c] is None else row[c] for c in columns])
    return buf.getvalue()


def to_json(rows: list[RunRow]) -> str:
    return json.dumps([r.as_dict() for r in rows], indent=1, ensure_ascii=False) + "\n"


def fmt_share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def headline_text(row: RunRow) -> str:
    return ", ".join(f"{label} {fmt_share(v)}" for label, v in row.metrics.items())


__all__ = [
    "COLUMNS",
    "RunRow",
    "find_run_dirs",
    "flat_rows",
    "headline_text",
    "run_row",
    "runs_table",
    "to_csv",
    "to_json",
]
