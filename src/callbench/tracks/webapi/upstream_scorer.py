"""Compat scoring: WAPIIBench's published scorer, end to end, for one answer.

The published pipeline (``evaluation.py`` with ``mock.js``, real axios and axios-mock-adapter
under Node) and what stands for each step here:

1. the program text and the axios call cut out of it by text -> :mod:`.upstream_call`;
2. that call run as a script after mock.js -> the sandbox runs exactly the cut text
   (``extract=False``), each request recording the config axios hands its adapter;
3. mock.js's rewriting of that config into the logged one -> :mod:`.upstream_mock`;
4. the comparison with the expected config and the verdicts -> :mod:`.upstream_compare`.

Outcomes as the published scorer has them: no ``axios.`` or no cut point -> ``no_request`` /
``incomplete_request``; Node exits with an error -> ``runtime_error`` (an exception, a rejected axios
promise -- nothing in the cut text handles one --, mock.js throwing, a module Node cannot find, a
script Node refuses to start); the call runs cleanly but sends no request -> no config file, so
the sample is in no figure (**dropped**: an upstream defect the paper's numbers contain; strict
counts it as an absent request). With several requests every one writes the same file at once:
the published scorer can only read it when the longest log was written last, so a sample it
scores at all holds its longest log (:func:`~.upstream_mock.log_size`; ties: the last request).
A run over the sandbox's time limit is a ``timeout`` (the published scorer would wait forever).

Where it applies: tasks the published scorer can run -- the published starter (no starter code of
the task's own, no definitions) and a spec with exactly one server URL without variables
(evaluation.py asserts one server). Other tasks (own starters, synthesized tasks on other specs)
are scored in compat by :func:`~callbench.tracks.webapi.scoring.compare_requests`: the published
definitions applied to the request callbench's own run recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callbench.specs import ApiSpec
from callbench.tracks.webapi.upstream_call import PublishedCall, sandbox_script, script_error
from callbench.tracks.webapi.upstream_compare import published_error, published_spec, published_verdict
from callbench.tracks.webapi.upstream_mock import MockError, log_size, mock_log

__all__ = ["NODE_MODULES", "applies", "compat_verdict", "run_calls"]

# What `require` finds where the published scorer runs: Node 20's built-in modules and the
# packages npm installs with axios and axios-mock-adapter. Any other module: "Cannot find module".
NODE_MODULES = frozenset(
    "assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel "
    "dns domain events fs http http2 https inspector module net os path perf_hooks process punycode "
    "querystring readline repl stream string_decoder sys timers tls trace_events tty url util v8 vm wasi "
    "worker_threads zlib "
    "axios axios-mock-adapter agent-base async-function async-generator-function asynckit "
    "call-bind-apply-helpers combined-stream debug delayed-stream dunder-proto es-define-property "
    "es-errors es-object-atoms es-set-tostringtag fast-deep-equal follow-redirects form-data "
    "function-bind generator-function get-intrinsic get-proto gopd has-symbols has-tostringtag hasown "
    "https-proxy-agent is-buffer math-intrinsics mime-db mime-types ms proxy-from-env".split()
)


def applies(task: Any, spec: ApiSpec) -> bool:
    """Can the published scorer run this task (see the module docstring)?"""
    if getattr(task, "starter_code", None) or getattr(task, "definitions", None):
        return False
    servers = spec.document.get("servers") or ()
    first = servers[0] if len(servers) == 1 else None
    if not isinstance(first, Mapping) or "{" in str(first.get("url", "{")):
        return False
    # the published scorer asserts that the expected URL names a path by its own rules (a server
    # written with a trailing '/', Google's, leaves no path it can match): where it cannot read
    # the task, compat compares the request callbench's run recorded, as for starter-code rows
    url = getattr(getattr(task, "config", None), "url", None)
    return isinstance(url, str) and bool(published_spec(spec).find_paths(url))


def _found(module: str) -> bool:
    name = module[5:] if module.startswith("node:") else module
    if name.startswith("@"):
        name = "/".join(name.split("/")[:2])
    else:
        name = name.split("/")[0]
    return name in NODE_MODULES


def run_calls(sandbox: Any, calls: Mapping[Any, PublishedCall]) -> dict[Any, Any]:
    """Run each cut call that can run (code found, no script error) as the published scorer
    does: the cut text alone after its mock (``extract=False``), all in one batch. Keyed as
    ``calls``; a call that cannot run has no entry (:func:`compat_verdict` takes None for it)."""
    scripts = [(k, sandbox_script(c.code)) for k, c in calls.items() if c.code is not None and script_error(c.code) is None]
    if not scripts:
        return {}
    return {scripts[j][0]: run for j, run in sandbox.run_many([(code, None) for _, code in scripts], extract=False)}


def compat_verdict(expected: dict[str, Any], spec: ApiSpec, call: PublishedCall, run: Any) -> tuple[Any, str]:
    """The published verdict for an answer whose cut call ``call`` ran as ``run`` (a JsResult,
    None when nothing ran), and a one-line note of how it ended."""
    if call.code is None:
        return published_error(call.error or "no_request", expected, spec), call.error or "no_request"
    problem = script_error(call.code)
    if problem is not None:
        return published_error("runtime_error", expected, spec), problem
    assert run is not None
    if run.status == "timeout":
        return published_error("timeout", expected, spec), "timeout"
    missing = [m for m in run.stubbed_modules if not _found(m)]
    if missing:
        return published_error("runtime_error", expected, spec), f"Error: Cannot find module '{missing[0]}'"
    if run.status not in ("ok", "no_request") or run.error or run.rejected:
        why = run.error or (run.rejected[0] if run.rejected else run.status)
        return published_error("runtime_error", expected, spec), f"runtime_error: {why}"
    if not run.raw:
        verdict = published_error("no_request", expected, spec)
        verdict.dropped, verdict.sample, verdict.error = True, "dropped", None
        return verdict, "dropped: no request, no error (no config file upstream)"
    try:
        logs = [(log_size(raw, log), i, log) for i, raw in enumerate(run.raw) for log in [mock_log(raw)]]
    except MockError as e:
        return published_error("runtime_error", expected, spec), f"mock.js: {e}"
    _, which, logged = max(logs, key=lambda t: (t[0], t[1]))  # the longest log (ties: the last)
    note = "ok" if len(logs) == 1 else f"ok: request {which + 1} of {len(logs)} (the longest log)"
    return published_verdict(expected, logged, spec), note
