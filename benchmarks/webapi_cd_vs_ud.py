"""Unconstrained (UD) vs constrained decoding (CD) on the web API track, both setups.

    python benchmarks/webapi_cd_vs_ud.py [--model llamacpp:default|llamacpp:PATH] [--mode auto]
        [--model-arg KEY=VALUE ...] [--subset N] [--json PATH]

Runs the same task subset four times (full/args × UD/CD) through the normal runner (so runs are
resumable and land in --out), then prints correct implementations (t), "correct except
credentials", illegal URLs, methods and arguments, the error classes (absent, incomplete, runtime,
unsatisfiable) and two escape-hatch counts read from the stored outputs: ``padding`` (an output
holding a whitespace run of 40 or more characters, longer than the grammar lets a call hold:
4 spaces, a line break and 32 of indentation) and ``restarts`` (an output that starts by
repeating the starter's last token, e.g. ``axios`` after ``axios.``), with the relative gain of CD
over UD. ``--subset N`` takes the first N tasks of every API (a fixed, documented subset); 0 = all 395.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from rich.console import Console
from rich.table import Table

from callbench.api import run
from callbench.data.paths import data_dir
from callbench.report.table import fmt, relative_gain
from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE, load_tasks

KEYS = (
    ("correct impl. (t)", "correct_implementations_t"),
    ("correct except credentials (t)", "correct_except_credentials_t"),
    ("executable (t)", "executable_implementations_t"),
    ("illegal URLs (t)", "illegal_urls_t"),
    ("illegal methods (t)", "illegal_methods_t"),
    ("illegal args (t)", "illegal_arguments_t"),
    ("correct URLs (t)", "correct_urls_t"),
    ("correct arg values (t)", "correct_argument_values_t"),
)
#: Error classes, as counts over the run's samples.
COUNTS = (
    ("absent requests", "absent_requests"),
    ("incomplete", "incomplete_implementations"),
    ("runtime errors", "runtime_errors"),
    ("unsatisfiable", "unsatisfiable_constraints"),
)
PADDING_RUN = re.compile(r"[ \t\r\n]{40,}")


def restarts_starter(starter: str, output: str) -> bool:
    """Does the output begin by repeating the starter's last token (``axios`` after ``axios.``,
    or the args setup's ``axios.<method>(`` line), which a prompt-boundary artefact produces?"""
    last_line = starter[starter.rfind("\n") + 1 :].strip()
    head = output.lstrip()
    return bool(last_line) and (head.startswith(last_line) or head.startswith("axios"))


def escape_counts(run_dir: Path) -> dict[str, int]:
    """Padding and restart counts over the stored raw outputs of one run."""
    from callbench.runs.store import RunStore

    store = RunStore.open(run_dir)
    try:
        padding = restarts = 0
        for row in store.rows():
            text = row.get("raw_output") or ""
            starter = ((row.get("extra") or {}).get("starter")) or _starter_from_prompt(row.get("prompt") or "")
            padding += bool(PADDING_RUN.search(text))
            restarts += restarts_starter(starter, text)
        return {"padding": padding, "restarts": restarts}
    finally:
        store.close()


def _starter_from_prompt(prompt: str) -> str:
    """The starter is what follows the prompt's last code fence."""
    at = prompt.rfind("```javascript\n")
    return prompt[at + len("```javascript\n") :] if at >= 0 else prompt


def subset_ids(n: int) -> list[str] | None:
    if n <= 0:
        return None
    tasks = load_tasks(data_dir() / DEFAULT_DATA_FILE)
    ids, seen = [], {}
    for t in tasks:
        seen[t.api] = seen.get(t.api, 0) + 1
        if seen[t.api] <= n:
            ids.append(t.id)
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llamacpp:default")
    ap.add_argument("--mode", default=None, help="prompt format: auto (default), completion or chat")
    ap.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE", help="backend option (repeatable)")
    ap.add_argument("--subset", type=int, default=10, help="first N tasks per API (0 = all 395)")
    ap.add_argument("--out", type=Path, default=Path("runs"))
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--run-id-prefix",
        help="name the runs PREFIX-<setup>-<ud|cd> (default: derived from the settings); e.g. 'callbench' "
        "re-reads the callbench-harness cells of benchmarks/paper_qwen05b.py under the same --out",
    )
    args = ap.parse_args()
    ids = subset_ids(args.subset)
    console = Console()
    model_options: dict[str, object] = {}
    for item in args.model_arg:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--model-arg {item!r}: expected KEY=VALUE")
        model_options[key] = value
    if args.mode:
        model_options["mode"] = args.mode
    results: dict[str, dict] = {}
    for setup in ("full", "args"):
        for constrained in (False, True):
            name = f"{setup}-{'cd' if constrained else 'ud'}"
            run_id = f"{args.run_id_prefix}-{name}" if args.run_id_prefix else None
            out = run("webapi", args.model, out_dir=args.out, run_id=run_id, ids=ids, concurrency=1, setup=setup,
                      constrained=constrained, progress=True, console=Console(stderr=True),
                      model_options=dict(model_options))
            s = out.summary
            results[name] = {
                "run_dir": str(out.run_dir),
                "model": s["model"],
                "n": s["n"],
                "metrics": {k: s["metrics"].get(k) for _, k in KEYS},
                "counts": {k: s["metrics"].get(k) for _, k in COUNTS} | escape_counts(out.run_dir),
                "constrained_decoding": s.get("constrained_decoding"),
            }
    table = Table(title=f"UD vs CD · {results['full-ud']['model']} · {results['full-ud']['n']} tasks per run")
    table.add_column("metric (%)")
    for setup in ("full", "args"):
        table.add_column(f"{setup} UD", justify="right")
        table.add_column(f"{setup} CD", justify="right")
        table.add_column(f"{setup} gain", justify="right")
    for label, key in KEYS:
        row = [label]
        for setup in ("full", "args"):
            ud = results[f"{setup}-ud"]["metrics"][key]
            cd = results[f"{setup}-cd"]["metrics"][key]
            row += [fmt(ud), fmt(cd), relative_gain(ud, cd)]
        table.add_row(*row)
    for label, key in (*COUNTS, ("padding (ws run >= 40)", "padding"), ("restarts the starter", "restarts")):
        row = [f"{label} (count)"]
        for setup in ("full", "args"):
            ud = results[f"{setup}-ud"]["counts"][key]
            cd = results[f"{setup}-cd"]["counts"][key]
            row += [str(ud if ud is not None else "–"), str(cd if cd is not None else "–"), ""]
        table.add_row(*row)
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps({"subset_per_api": args.subset, "ids": ids, "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
