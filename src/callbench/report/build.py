"""Load run directories, re-aggregate if asked, print tables and write the HTML report."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from callbench.errors import ConfigError, RunStoreError
from callbench.report.html import render_html
from callbench.report.table import by_api_table, constraint_line, summary_table
from callbench.runs.runner import BACKEND_ERROR, aggregate_stored
from callbench.runs.store import CONFIG_FIX, RunStore
from callbench.tracks.base import Sample, get_track


@dataclass
class LoadedRun:
    directory: Path
    label: str
    summary: dict[str, Any]
    rows: list[dict[str, Any]]


@dataclass
class Report:
    runs: list[LoadedRun]
    html_path: Path


def short_labels(summaries: list[dict[str, Any]]) -> list[str]:
    """Column labels that name only what differs between runs (model, setup, UD/CD)."""
    if len(summaries) == 1:
        s = summaries[0]
        return [f"{s.get('model')} {s.get('setup') or ''}{' CD' if s.get('constrained') else ''}".strip()]
    parts = []
    for key in ("model", "setup", "constrained"):
        if len({str(s.get(key)) for s in summaries}) > 1:
            parts.append(key)
    labels = []
    for s in summaries:
        bits = []
        for key in parts:
            if key == "constrained":
                bits.append("CD" if s.get("constrained") else "UD")
            else:
                bits.append(str(s.get(key)).split(":")[-1][:24])
        labels.append(" ".join(bits) or str(s.get("run_id")))
    if len(set(labels)) < len(labels):  # same settings twice: fall back to run ids
        labels = [str(s.get("run_id")) for s in summaries]
    return labels


def load_run(run_dir: Path, scoring: str | None, count_backend_errors: bool = False) -> LoadedRun:
    """One run directory, re-aggregated in ``scoring`` (default: the mode it was run in);
    ``count_backend_errors`` scores backend errors as failed samples instead of leaving them out.

    Every file is checked as it is read: a damaged one raises one line naming it (see
    :mod:`callbench.runs.store`)."""
    store = RunStore.open(run_dir)
    try:
        cfg = store.config()
        ident = cfg["identity"]
        track_name = ident["track"]
        try:
            track_cls = get_track(track_name)
        except ConfigError as exc:
            raise RunStoreError(f"{run_dir / 'config.json'}: identity.track: {exc}; {CONFIG_FIX}") from None
        rows = list(store.rows())
        mode = scoring or _stored_scoring(run_dir, track_cls.scoring_modes) or track_cls.scoring_modes[0]
        if mode not in track_cls.scoring_modes:
            raise ConfigError(f"--scoring '{mode}': choose from {', '.join(track_cls.scoring_modes)}")
        results = store.results()
        failed = [r for r in rows if r["status"] == BACKEND_ERROR]
        counted = [r for r in rows if count_backend_errors or r["status"] != BACKEND_ERROR]
        samples = [Sample(id=r["id"], group=r["grp"], payload=None) for r in counted]
        agg = aggregate_stored(track_cls, store, samples, results, mode)
        stored = _stored_summary(run_dir)
        summary = {
            "track": track_name,
            "model": ident.get("model"),
            "setup": ident.get("setup"),
            "constrained": bool(ident.get("constrained", False)),
            "scoring": mode,
            "n": len(samples),
            "n_backend_errors": len(failed),
            "backend_errors_counted": count_backend_errors,
            # no summary.json: the run never finished; an older one may predate rows added since
            "complete": bool(stored.get("complete")) and stored.get("n_selected") == len(rows) and not failed,
            "n_selected": stored.get("n_selected"),
            **agg,
            "run_id": run_dir.name,
        }
    finally:
        store.close()
    return LoadedRun(directory=run_dir, label=run_dir.name, summary=summary, rows=rows)


def _stored_summary(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` as written at the end of the run ({} when absent or unreadable: the
    scoring check below reports a damaged one)."""
    try:
        doc = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _stored_scoring(run_dir: Path, modes: tuple[str, ...]) -> str | None:
    """The scoring mode ``summary.json`` records; None when there is no summary yet (a run that
    has not finished). A summary that cannot say is an error, not a silent switch of mode."""
    p = run_dir / "summary.json"
    fix = f"delete it (re-running the run's command rewrites it) or pass --scoring ({' or '.join(modes)})"
    if not os.path.lexists(p):
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except IsADirectoryError:
        raise RunStoreError(f"{p}: a directory, not a file; {fix}") from None
    except OSError as exc:
        raise RunStoreError(f"{p}: cannot read ({exc.strerror}); {fix}") from None
    except (ValueError, RecursionError):  # invalid JSON or not UTF-8
        raise RunStoreError(f"{p}: not valid JSON; {fix}") from None
    mode = doc.get("scoring") if isinstance(doc, dict) else None
    if mode not in modes:
        raise RunStoreError(f"{p}: no valid 'scoring' ({', '.join(modes)}) in it; {fix}")
    return mode


def build_report(
    run_dirs: list[Path],
    *,
    html: Path | None = None,
    scoring: str | None = None,
    console: Console | None = None,
    count_backend_errors: bool = False,
) -> Report:
    if not run_dirs:
        raise ConfigError("report: give at least one run directory")
    runs = [load_run(Path(d), scoring, count_backend_errors) for d in run_dirs]
    tracks = {r.summary["track"] for r in runs}
    if len(tracks) > 1:
        raise ConfigError(f"report: runs of different tracks cannot be compared ({', '.join(sorted(tracks))})")
    modes = {r.summary["scoring"] for r in runs}
    if len(modes) > 1:
        # Compare like with like: re-score every run in the first run's mode.
        runs = [load_run(Path(d), runs[0].summary["scoring"], count_backend_errors) for d in run_dirs]
    for r, label in zip(runs, short_labels([r.summary for r in runs]), strict=True):
        r.label = label
    html_path = html or (runs[0].directory / "report.html")
    nested = runs[0].summary["track"] == "nested"
    if nested:
        from callbench.report.html import render_nested_html

        _write_html(html_path, render_nested_html(runs))
    else:
        _write_html(html_path, render_html(runs))
    if console is None:
        return Report(runs=runs, html_path=html_path)
    for r in runs:
        _incomplete_note(r, console)
    if nested:
        from callbench.report.table import print_nested_summary

        for r in runs:
            print_nested_summary(r.summary, console)
        return Report(runs=runs, html_path=html_path)
    console.print(summary_table([r.summary for r in runs], [r.label for r in runs]))
    for r in runs:
        if r.summary.get("by_api"):
            console.print(by_api_table(r.summary))
        line = constraint_line(r.summary)
        if line:
            console.print(f"{r.label}: {line}", highlight=False)
    return Report(runs=runs, html_path=html_path)


def _incomplete_note(run: LoadedRun, console: Console) -> None:
    """Say when a run's numbers are not the whole benchmark (unfinished, or backend errors)."""
    s = run.summary
    if s.get("complete"):
        return
    parts = []
    failed = s.get("n_backend_errors", 0)
    answered = s["n"] - (failed if s.get("backend_errors_counted") else 0)
    if s.get("n_selected") and answered + failed < s["n_selected"]:
        parts.append(f"{answered} of {s['n_selected']} samples answered")
    elif not s.get("n_selected"):
        parts.append(f"unfinished ({s['n']} samples stored)")
    if s.get("n_backend_errors"):
        how = "counted as failed samples" if s.get("backend_errors_counted") else "not counted"
        parts.append(f"{s['n_backend_errors']} backend error(s) {how}")
    if parts:
        console.print(
            f"[yellow]{run.label}: INCOMPLETE: {'; '.join(parts)} -- re-run its command to finish "
            "(--retry-errors to ask again for backend errors)[/yellow]",
            highlight=False,
            soft_wrap=True,
        )


def _write_html(path: Path, text: str) -> None:
    """Write the report before printing anything, so a path that cannot be written is the only
    output; text UTF-8 cannot encode (lone surrogates) is written as ``\\udXXX`` escapes."""
    try:
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise RunStoreError(f"{path}: cannot write the HTML report ({exc.strerror}); pass another --html") from None
