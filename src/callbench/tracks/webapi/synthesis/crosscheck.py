"""The execution half of a row's cross-check (the spec half is
:func:`callbench.tracks.webapi.audit.cross_check_config`): the gold answer -- exactly what
``--model gold`` sends, the row's starter continued by
:func:`~callbench.tracks.webapi.prompting.reference_completion` -- runs in the sandbox and must be
scored ``correct`` in both scoring modes (strict and compat, the latter by WAPIIBench's published
scorer where the track scores it so), in both setups (``full``: after
``axios.``; ``args``: after ``axios.<method>('<url>',``), and the constrained-decoding grammar
must accept it in both setups (``check_invocation``, with the definitions and the starter's
variables in scope).

Finding classes (:data:`EXEC_CLASSES`): ``sandbox_error`` (the gold code sends no request: a
runtime error, a timeout, a starter the sandbox cannot complete), ``not_correct`` (a request that
is not scored correct against the row's own config, with the verdict), ``grammar_rejects`` (with
the grammar's reason).
"""

from __future__ import annotations

from typing import Any

from callbench.errors import MissingExtraError
from callbench.specs import ApiSpec
from callbench.tracks.webapi.audit import CrossFinding
from callbench.tracks.webapi.dataset import WebApiTask

EXEC_CLASSES = ("sandbox_error", "not_correct", "grammar_rejects")
SETUPS = ("full", "args")


def _short_verdict(v: Any) -> str:
    bad = [f"{a.location}.{a.name}={a.verdict}" for a in v.arguments if a.verdict != "correct"]
    return f"sample={v.sample} url={v.url} method={v.method}" + (f"; {', '.join(bad[:4])}" if bad else "")


class ExecutionChecker:
    """Runs and scores gold answers; one sandbox worker, started on first use."""

    def __init__(self, *, grammar: bool = True, timeout_s: float = 2.0):
        self.grammar = grammar
        self.timeout_s = timeout_s
        self._sandbox: Any = None

    def _box(self) -> Any:
        if self._sandbox is None:
            from callbench.sandbox.js import JsSandbox

            self._sandbox = JsSandbox(timeout_s=self.timeout_s)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __enter__(self) -> ExecutionChecker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def check(self, items: list[tuple[WebApiTask, ApiSpec]]) -> list[list[CrossFinding]]:
        """One list of findings per (task, spec); empty: the row passes."""
        from callbench.tracks.webapi.prompting import reference_completion, starter_code
        from callbench.tracks.webapi.scoring import SCORING_MODES, compare_requests

        findings: list[list[CrossFinding]] = [[] for _ in items]
        programs: list[tuple[str, dict | None]] = []
        where: list[tuple[int, str]] = []
        parts: list[tuple[str, str]] = []  # (starter, gold completion) of each program
        for i, (task, _spec) in enumerate(items):
            for setup in SETUPS:
                parts.append((starter_code(task, setup), reference_completion(task, setup)))  # type: ignore[arg-type]
                programs.append((parts[-1][0] + parts[-1][1], task.definitions))
                where.append((i, setup))
        results = dict(self._box().run_many(programs)) if programs else {}
        published = self._published_verdicts(items, where, parts)
        for j, (i, setup) in enumerate(where):
            task, spec = items[i]
            res = results[j]
            if res.status != "ok" or res.request is None:
                findings[i].append(CrossFinding("sandbox_error", f"gold ({setup})", f"{res.status}: {res.error or 'no request'}"[:300]))
                continue
            expected = task.config.as_dict()
            if j in published:  # compat follows WAPIIBench's published scorer here, as in the track
                v, note = published[j]
                if v.sample != "correct":
                    findings[i].append(CrossFinding(
                        "not_correct", f"gold ({setup}, compat: published scorer)", f"{note}; {_short_verdict(v)}"[:300]))
            for mode in SCORING_MODES:
                if mode == "compat" and j in published:
                    continue
                try:
                    v = compare_requests(expected, res.request, spec, mode)
                except Exception as exc:  # noqa: BLE001 - a scorer crash is a finding about the row
                    findings[i].append(CrossFinding("not_correct", f"gold ({setup}, {mode})", f"scorer failed: {type(exc).__name__}: {exc}"[:300]))
                    continue
                if v.sample != "correct":
                    findings[i].append(CrossFinding("not_correct", f"gold ({setup}, {mode})", _short_verdict(v)[:300]))
        if self.grammar:
            for i, (task, spec) in enumerate(items):
                findings[i] += self.grammar_findings(task, spec)
        return findings

    def _published_verdicts(
        self, items: list[tuple[WebApiTask, ApiSpec]], where: list[tuple[int, str]], parts: list[tuple[str, str]]
    ) -> dict[int, tuple[Any, str]]:
        """The published scorer's verdict on each gold program whose task it can read
        (:func:`~callbench.tracks.webapi.upstream_scorer.applies`), by program index: the track
        scores compat that way there, so a row it would misjudge is a finding (its mock logs the
        URL through ``decodeURIComponent``: a percent-encoded path value compares decoded)."""
        from callbench.tracks.webapi import upstream_scorer
        from callbench.tracks.webapi.upstream_call import published_call, published_program

        calls = {
            j: published_call(published_program(*parts[j], "completion"))
            for j, (i, _setup) in enumerate(where)
            if upstream_scorer.applies(*items[i])
        }
        runs = upstream_scorer.run_calls(self._box(), calls) if calls else {}
        out: dict[int, tuple[Any, str]] = {}
        for j, call in calls.items():
            task, spec = items[where[j][0]]
            out[j] = upstream_scorer.compat_verdict(task.config.as_dict(), spec, call, runs.get(j))
        return out

    @staticmethod
    def grammar_findings(task: WebApiTask, spec: ApiSpec) -> list[CrossFinding]:
        from callbench.constrain.check import check_invocation
        from callbench.constrain.webapi_grammar import GrammarOptions
        from callbench.tracks.webapi.constraints import in_scope, task_grammar_options
        from callbench.tracks.webapi.prompting import reference_completion, starter_code

        out: list[CrossFinding] = []
        for setup in SETUPS:
            starter = starter_code(task, setup)  # type: ignore[arg-type]
            idents = tuple(sorted(set(task.definitions or {}) | in_scope(starter)))
            program = starter + reference_completion(task, setup)  # type: ignore[arg-type]
            try:
                res = check_invocation(spec, program, setup=setup, method=task.config.method if setup == "args" else None,
                                       url=task.config.url if setup == "args" else None, identifiers=idents,
                                       options=task_grammar_options(task, GrammarOptions()))
            except (ImportError, MissingExtraError):
                raise  # no llguidance: not a finding about the row
            except Exception as exc:  # noqa: BLE001 - a grammar that cannot be built is a finding
                out.append(CrossFinding("grammar_rejects", f"grammar ({setup})", f"{type(exc).__name__}: {exc}"[:300]))
                continue
            if not res.allowed:
                out.append(CrossFinding("grammar_rejects", f"grammar ({setup})", f"{res.reason} (at offset {res.offset})"[:300]))
        return out


def audit_file(
    tasks_file: Any,
    *,
    data: Any = None,
    execute: bool = False,
    grammar: bool = False,
    on_progress: Any = None,
) -> tuple[int, list[dict[str, Any]]]:
    """The cross-check of every row of a task file (any file ``run webapi --tasks`` reads, the
    WAPIIBench data included): ``(rows checked, findings)``, each finding a dict with ``row``,
    ``task``, ``kind``, ``where``, ``detail``. ``execute`` adds the sandbox and scorer checks,
    ``grammar`` the grammar checks."""
    from pathlib import Path

    from callbench.data.paths import data_dir
    from callbench.errors import DataError
    from callbench.specs import load_spec
    from callbench.tracks.webapi.audit import cross_check_config
    from callbench.tracks.webapi.dataset import load_tasks, spec_path_for

    path = Path(tasks_file)
    root = data_dir(data)
    tasks = load_tasks(path)
    specs: dict[str, ApiSpec] = {}
    items: list[tuple[WebApiTask, ApiSpec]] = []
    out: list[dict[str, Any]] = []
    for task in tasks:
        sp = spec_path_for(task, path, root)
        key = str(sp)
        if key not in specs:
            if not sp.is_file():
                raise DataError(f"{path}: [{task.index}].spec: spec file {sp} not found")
            specs[key] = load_spec(sp)
        items.append((task, specs[key]))
    done = 0
    for task, spec in items:
        for f in cross_check_config(task.config.as_dict(), spec):
            out.append({"row": task.index, "task": task.id, **f.as_dict()})
        done += 1
        if on_progress is not None:
            on_progress(done, len(items))
    if execute or grammar:
        with ExecutionChecker(grammar=grammar) as checker:
            for start in range(0, len(items), 64):
                chunk = items[start:start + 64]
                if execute:
                    found = checker.check(chunk)
                else:
                    found = [checker.grammar_findings(t, s) for t, s in chunk]
                for (task, _), fs in zip(chunk, found, strict=True):
                    out += [{"row": task.index, "task": task.id, **f.as_dict()} for f in fs]
                if on_progress is not None:
                    on_progress(min(start + 64, len(items)), len(items))
    order = {t.id: i for i, (t, _) in enumerate(items)}
    out.sort(key=lambda f: order[f["task"]])
    return len(items), out
