"""Load run directories, re-aggregate if asked, build the report model, print its tables and write
the HTML report.

One run: ``<run>/report.html`` (or ``--html``/``--out``). Two or more runs: a comparison on the
samples every run holds, written to its own directory (``--out DIR``, default
``comparisons/<labelA>-vs-<labelB>/``: ``report.html`` and ``comparison.json``), never into a run
directory.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from callbench.errors import ConfigError, RunStoreError
from callbench.report import charts as charts_mod
from callbench.report.compare import (
    check_labels,
    sample_warning,
    scoring_warning,
    setup_warnings,
    short_labels,
    slug,
)
from callbench.report.model import (
    Comparison,
    MetricStat,
    ReportModel,
    RunInfo,
    SampleEntry,
    SampleOutcome,
    TrackView,
    get_view,
)
from callbench.report.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED, mcnemar, paired_diff_ci, ratio_ci
from callbench.runs.runner import BACKEND_ERROR, aggregate_stored
from callbench.runs.store import RunStore, check_track
from callbench.tracks.base import Sample, SampleResult, get_track

__all__ = ["LoadedRun", "Report", "build_report", "load_run", "short_labels"]

COMPARISONS_DIR = Path("comparisons")


@dataclass
class LoadedRun:
    directory: Path
    label: str
    summary: dict[str, Any]
    rows: list[dict[str, Any]]  # every stored row
    config: dict[str, Any] = field(default_factory=dict)
    counted: list[dict[str, Any]] = field(default_factory=list)  # the rows the metrics count
    results: dict[str, SampleResult] = field(default_factory=dict)
    stored_scoring: str | None = None  # the mode summary.json records


@dataclass
class Report:
    runs: list[LoadedRun]
    html_path: Path
    model: ReportModel | None = None
    json_path: Path | None = None


def load_run(run_dir: Path, scoring: str | None, count_backend_errors: bool = False) -> LoadedRun:
    """One run directory, re-aggregated in ``scoring`` (default: the mode it was run in);
    ``count_backend_errors`` scores backend errors as failed samples instead of leaving them out.

    Every file is checked as it is read: a damaged one raises one line naming it (see
    :mod:`callbench.runs.store`)."""
    store = RunStore.open(run_dir)
    try:
        cfg = store.config()
        ident = cfg["identity"]
        track_name = check_track(run_dir / "config.json", cfg)
        track_cls = get_track(track_name)
        rows = list(store.rows())
        if scoring is None:
            stored_mode = _stored_scoring(run_dir, track_cls.scoring_modes)
        else:  # only for the comparison's note: a damaged summary.json does not matter here
            stored_mode = _stored_summary(run_dir).get("scoring")
            stored_mode = stored_mode if stored_mode in track_cls.scoring_modes else None
        mode = scoring or stored_mode or track_cls.scoring_modes[0]
        if mode not in track_cls.scoring_modes:
            raise ConfigError(f"--scoring '{mode}': choose from {', '.join(track_cls.scoring_modes)}")
        results = store.results()
        n_stored = len(rows)
        selection, wanted = _selection(cfg)
        if wanted is not None:  # exactly the samples of the last session's selection (as summary.json)
            rows = [r for r in rows if r["id"] in wanted]
        failed = [r for r in rows if r["status"] == BACKEND_ERROR]
        counted = [r for r in rows if count_backend_errors or r["status"] != BACKEND_ERROR]
        samples = [Sample(id=r["id"], group=r["grp"], payload=None) for r in counted]
        agg = aggregate_stored(track_cls, store, samples, results, mode)
        stored = _stored_summary(run_dir)
        if wanted is not None:
            n_selected = len(wanted)
            # summary.json is removed while a session runs: without it the last session never finished
            complete = stored.get("complete") is True and len(rows) - len(failed) == n_selected
        else:  # a run from before selections were recorded
            n_selected = stored.get("n_selected")
            # no summary.json: the run never finished; an older one may predate rows added since
            complete = bool(stored.get("complete")) and n_selected == len(rows) and not failed
        summary = {
            "track": track_name,
            "model": ident.get("model"),
            "setup": ident.get("setup"),
            "constrained": bool(ident.get("constrained", False)),
            "scoring": mode,
            "n": len(samples),
            "n_backend_errors": len(failed),
            "backend_errors_counted": count_backend_errors,
            "complete": complete,
            "n_selected": n_selected,
            "selection": selection,
            "n_stored": n_stored,  # the whole store: earlier sessions may have selected more
            "finished": bool(stored),  # the last session wrote its summary.json
            **agg,
            **_findings_of(cfg.get("data_findings"), {r["id"] for r in rows}),
            "run_id": run_dir.name,
        }
    finally:
        store.close()
    return LoadedRun(
        directory=run_dir,
        label=run_dir.name,
        summary=summary,
        rows=rows,
        config=cfg,
        counted=counted,
        results=results,
        stored_scoring=stored_mode or mode,
    )


_FINDINGS_SHOWN = 20


def _findings_of(findings: Any, ids: set[str]) -> dict[str, Any]:
    """The data findings a report of these samples shows: the rows kept with findings among its
    samples (issue 31: a 5-sample report listed a finding of a task not in the run), and how many
    rows of the data set were skipped (they are no sample of any run)."""
    if not isinstance(findings, list) or not findings:
        return {}
    out: dict[str, Any] = {}
    mine = [f for f in findings if isinstance(f, dict) and f.get("action") != "skipped" and f.get("task") in ids]
    if mine:
        out["data_findings"] = mine
    skipped = sum(1 for f in findings if isinstance(f, dict) and f.get("action") == "skipped")
    if skipped:
        out["data_rows_skipped"] = skipped
    return out


def data_finding_notes(summary: dict[str, Any]) -> list[str]:
    """One line per row the run skipped (or kept) because its data contradicts its spec; the
    first ``_FINDINGS_SHOWN``, then how many more summary.json lists."""
    findings = summary.get("data_findings") or []
    skipped = summary.get("data_rows_skipped") or sum(1 for f in findings if f.get("action") == "skipped")
    findings = [f for f in findings if f.get("action") != "skipped"]
    if not findings and not skipped:
        return []
    lines = [f"data: {skipped} row(s) of the data set skipped (config.json: data_findings), "
             f"{len(findings)} sample(s) of this run kept with findings (their data contradicts the spec)" + (":" if findings else "")]
    for f in findings[:_FINDINGS_SHOWN]:
        name = Path(str(f.get("file"))).name  # the file's name: its folder is the data dir's
        lines.append(f"  {name} row {f.get('row')} ({f.get('task')}): {f.get('reason')} [{f.get('action')}]")
    if len(findings) > _FINDINGS_SHOWN:
        lines.append(f"  ... and {len(findings) - _FINDINGS_SHOWN} more (summary.json: data_findings)")
    return lines


def _selection(cfg: dict[str, Any]) -> tuple[dict[str, Any], set[str] | None]:
    """The selection ``config.json`` records (its options) and the ids it selected; None for
    the ids when the run predates their recording (every stored row is then reported)."""
    sel = cfg.get("selection")
    if not isinstance(sel, dict):
        return {}, None
    ids = sel.get("sample_ids")
    options = {k: v for k, v in sel.items() if k != "sample_ids"}
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return options, None
    return options, set(ids)


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
    out: Path | None = None,
    labels: list[str] | None = None,
    scoring: str | None = None,
    console: Console | None = None,
    count_backend_errors: bool = False,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOTSTRAP,
) -> Report:
    """Load ``run_dirs``, build the report model, write the HTML (and, for a comparison written
    to a directory, ``comparison.json``) and print the tables on ``console`` when given."""
    if not run_dirs:
        raise ConfigError("report: give at least one run directory")
    if html is not None and out is not None:
        raise ConfigError("report: give --html FILE or --out DIR, not both")
    if n_boot < 100:
        raise ConfigError(f"--bootstrap {n_boot}: use at least 100 resamples")
    given = check_labels(labels, len(run_dirs))
    _refuse_runs_dirs(run_dirs)
    runs = [load_run(Path(d), scoring, count_backend_errors) for d in run_dirs]
    tracks = {r.summary["track"] for r in runs}
    if len(tracks) > 1:
        raise ConfigError(f"report: runs of different tracks cannot be compared ({', '.join(sorted(tracks))})")
    stored_modes = [r.stored_scoring or r.summary["scoring"] for r in runs]
    modes = {r.summary["scoring"] for r in runs}
    if len(modes) > 1:
        # Compare like with like: re-score every run in the first run's mode.
        runs = [
            _keep_stored(load_run(Path(d), runs[0].summary["scoring"], count_backend_errors), m)
            for d, m in zip(run_dirs, stored_modes, strict=True)
        ]
    for r, label in zip(runs, given or short_labels([r.summary for r in runs]), strict=True):
        r.label = label
    view = get_view(runs[0].summary["track"])
    html_path, json_path = _output_paths(runs, html, out)
    model = assemble(view, runs, seed=seed, n_boot=n_boot, stored_modes=stored_modes)
    from callbench.report.html import render_html

    _mkdir(html_path.parent)
    _write(html_path, render_html(model), "the HTML report", "pass another --html or --out")
    if json_path is not None:
        _write(json_path, json.dumps(comparison_json(model), indent=1, default=str) + "\n", "the comparison", "pass another --out")
    report = Report(runs=runs, html_path=html_path, model=model, json_path=json_path)
    if console is not None:
        for r in runs:
            _incomplete_note(r, console)
        from callbench.report.table import print_model

        print_model(model, console)
    return report


def _refuse_runs_dirs(run_dirs: list[Path]) -> None:
    """A directory that holds runs rather than being one (``report runs``) is pointed to
    ``callbench runs``, which lists them."""
    from callbench.report.run_dirs import find_run_dirs

    for d in map(Path, run_dirs):
        if d.is_dir() and not is_run_dir(d):
            found = find_run_dirs(d)
            if found:
                raise ConfigError(
                    f"{d}: not a callbench run directory but holds {len(found)} run(s); list them with "
                    f"'callbench runs {d}' (or 'callbench view {d}') and pass one or more of them to report"
                )


def _keep_stored(run: LoadedRun, mode: str | None) -> LoadedRun:
    run.stored_scoring = mode
    return run


def _output_paths(runs: list[LoadedRun], html: Path | None, out: Path | None) -> tuple[Path, Path | None]:
    """Where the report goes: a run's own directory for one run; a comparison never goes into a
    run directory (its default is ``comparisons/<A>-vs-<B>/``)."""
    if len(runs) == 1:
        if html is not None:
            return html, None
        if out is not None:
            return out / "report.html", None
        return runs[0].directory / "report.html", None
    if html is not None:
        target_dir, json_path = html.parent, None
        _refuse_run_dir(target_dir, runs, "--html")
        return html, json_path
    target = out if out is not None else _free_comparison_dir(COMPARISONS_DIR / "-vs-".join(slug(r.label) for r in runs), runs)
    _refuse_run_dir(target, runs, "--out")
    return target / "report.html", target / "comparison.json"


def _free_comparison_dir(base: Path, runs: list[LoadedRun]) -> Path:
    """``base``, unless it holds a comparison of other runs (the same labels on another track's
    runs): then ``base-2``, ``base-3``, ... -- a default never overwrites another comparison; the
    same runs compared again are written over (the report re-rendered)."""
    mine = [str(r.directory) for r in runs]
    for n in range(1, 1000):
        target = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            held = json.loads((target / "comparison.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            if not (target / "report.html").exists():
                return target  # free
            continue  # a report without its numbers: not ours to overwrite
        except (OSError, ValueError):
            continue
        if isinstance(held, dict) and [r.get("directory") for r in held.get("runs") or [] if isinstance(r, dict)] == mine:
            return target
    raise ConfigError(f"{base}: a thousand comparisons with these labels already; pass --out")


def is_run_dir(path: Path) -> bool:
    return (path / "run.sqlite").exists() or (path / "config.json").exists()


def _refuse_run_dir(target: Path, runs: list[LoadedRun], option: str) -> None:
    t = target.resolve()
    inside = [r for r in runs if t == r.directory.resolve() or r.directory.resolve() in t.parents]
    if inside or is_run_dir(target):
        where = inside[0].directory if inside else target
        raise ConfigError(
            f"{option} {target}: inside the run directory {where}; a comparison writes to its own directory "
            "(pass another --out, or leave it out for comparisons/<A>-vs-<B>/)"
        )


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunStoreError(f"{path}: cannot create the report directory ({exc.strerror}); pass another --out") from None


def assemble(
    view: TrackView,
    runs: list[LoadedRun],
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOTSTRAP,
    stored_modes: list[str] | None = None,
) -> ReportModel:
    """The report model of ``runs`` (one run, or a comparison on the samples all of them hold)."""
    scoring = runs[0].summary["scoring"]
    labels = [r.label for r in runs]
    comparing = len(runs) > 1
    warnings: list[str] = []
    id_sets = [{r["id"] for r in run.counted} for run in runs]
    shared = set.intersection(*id_sets)
    only_in = [len(ids - shared) for ids in id_sets]
    if comparing:
        if not shared:
            raise ConfigError(
                f"report: the runs share no sample ({', '.join(f'{lab}: {len(ids)}' for lab, ids in zip(labels, id_sets, strict=True))}); "
                "nothing to compare"
            )
        warnings += setup_warnings([r.config.get("identity", {}) for r in runs], labels)
        w = scoring_warning(stored_modes or [scoring] * len(runs), labels, scoring)
        if w:
            warnings.append(w)
        w = sample_warning(len(shared), only_in, labels)
        if w:
            warnings.append(w)
        if len(shared) < 30:
            warnings.append(f"only {len(shared)} shared samples: the intervals are wide and the tests weak")
    used_rows = [[r for r in run.counted if r["id"] in shared] if comparing else run.counted for run in runs]
    infos = []
    for run, rows in zip(runs, used_rows, strict=True):
        summary = _summary_on(run, rows) if comparing and len(rows) != len(run.counted) else run.summary
        infos.append(
            RunInfo(
                label=run.label,
                model=str(run.summary.get("model")),
                directory=run.directory,
                summary=summary,
                n_total=len(run.counted),
            )
        )
    # intervals: every run on the samples the report uses; paired differences against the first run
    metric_defs = view.interval_metrics(scoring, [i.summary for i in infos])
    units = [view.units(rows, scoring, metric_defs) for rows in used_rows]
    stats: list[MetricStat] = []
    intervals: dict[str, list[Any]] = {}
    for m in metric_defs:
        per_run = [ratio_ci(u[m.key], n_boot=n_boot, seed=seed) if u.get(m.key) else None for u in units]
        diffs: list[Any] = [None]
        tests: list[Any] = [None]
        for u in units[1:]:
            a, b = units[0].get(m.key), u.get(m.key)
            diffs.append(paired_diff_ci(a, b, n_boot=n_boot, seed=seed) if a and b else None)
            tests.append(mcnemar(a, b) if a and b else None)
        intervals[m.key] = per_run
        stats.append(MetricStat(m, per_run, diffs, tests))
    # samples, as each track shows them
    contexts, notes = [], []
    for run in runs:
        ctx, note = view.load_context(run.config)
        contexts.append(ctx)
        if note and note not in notes:
            notes.append(note)
    by_id: list[dict[str, dict[str, Any]]] = [{r["id"]: r for r in rows} for rows in used_rows]
    order: list[str] = []
    seen: set[str] = set()
    for rows in used_rows:
        for r in rows:
            if r["id"] not in seen:
                seen.add(r["id"])
                order.append(r["id"])
    order.sort(key=_natural)
    entries = []
    for sid in order:
        outcomes = []
        group = ""
        for i, rows in enumerate(by_id):
            row = rows.get(sid)
            if row is None:
                outcomes.append(None)
                continue
            group = group or str(row.get("grp") or "")
            try:
                outcomes.append(view.sample(row, scoring, contexts[i]))
            except Exception as exc:  # noqa: BLE001 - one odd row must not cost the whole report
                why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
                outcomes.append(SampleOutcome(False, "unreadable", f"the stored row cannot be shown ({why})"))
        entries.append(SampleEntry(id=sid, group=group, outcomes=outcomes))
    for i, info in enumerate(infos):
        got = [e.outcomes[i] for e in entries if e.outcomes[i] is not None]
        info.n_passed = sum(1 for o in got if o.passed)
        info.n_failed = sum(1 for o in got if not o.passed)
        info.notes = view.run_notes(info) + data_finding_notes(info.summary)
    chart_specs = view.charts(infos, intervals)
    rendered = [charts_mod.render(spec) for spec in chart_specs]
    charts = [c for c in rendered if c.svg]
    if chart_specs and not charts_mod.available():
        notes.append("charts need matplotlib: pip install 'callbench[plot]'")
    model = ReportModel(
        track=view.track,
        scoring=scoring,
        runs=infos,
        tables=view.tables(infos),
        charts=charts,
        samples=entries,
        groups=sorted({e.group for e in entries}),
        error_classes=sorted({o.error_class for e in entries for o in e.outcomes if o and o.error_class}),
        group_label=view.group_label,
        sample_template=view.sample_template,
        description=view.description,
        warnings=warnings,
        notes=notes,
        comparison=Comparison(n_shared=len(shared), only_in=only_in) if comparing else None,
        stats=stats,
        n_boot=n_boot,
        seed=seed,
    )
    from callbench.report.table import stats_table

    model.stats_table = stats_table(model)
    return model


def _natural(text: str) -> list[Any]:
    """``asana_2`` before ``asana_10``: digit runs compare as numbers."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p]


def _summary_on(run: LoadedRun, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's summary re-aggregated over ``rows`` only (the shared samples of a comparison)."""
    track_cls = get_track(run.summary["track"])
    samples = [Sample(id=r["id"], group=r["grp"], payload=None) for r in rows]
    agg = track_cls.aggregate(samples, [run.results[s.id] for s in samples], run.summary["scoring"])
    return {**run.summary, "n": len(samples), **agg}


def comparison_json(model: ReportModel) -> dict[str, Any]:
    """The comparison's numbers for machines: labels, shared samples, intervals and tests."""
    comp = model.comparison
    assert comp is not None
    return {
        "track": model.track,
        "scoring": model.scoring,
        "runs": [
            {
                "label": r.label,
                "model": r.model,
                "directory": str(r.directory),
                "samples": r.n_total,
                "passed": r.n_passed,
                "failed": r.n_failed,
            }
            for r in model.runs
        ],
        "shared_samples": comp.n_shared,
        "only_in": dict(zip([r.label for r in model.runs], comp.only_in, strict=True)),
        "bootstrap": {"resamples": model.n_boot, "seed": model.seed, "level": 0.95},
        "warnings": model.warnings,
        "metrics": [
            {
                "key": s.metric.key,
                "label": s.metric.label,
                "runs": [None if iv is None else asdict(iv) for iv in s.per_run],
                "diff_vs_first": [None if iv is None else asdict(iv) for iv in s.diffs],
                "mcnemar_vs_first": [None if t is None else asdict(t) for t in s.tests],
            }
            for s in model.stats
        ],
    }


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
    elif not s.get("n_selected") or not s.get("finished", True):
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


def _write(path: Path, text: str, what: str, fix: str) -> None:
    """Write before printing anything, so a path that cannot be written is the only output; text
    UTF-8 cannot encode (lone surrogates) is written as ``\\udXXX`` escapes."""
    try:
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise RunStoreError(f"{path}: cannot write {what} ({exc.strerror}); {fix}") from None
