"""The web API invocation track wired to the shared runner."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.data.paths import data_dir
from callbench.errors import ConfigError, DataError
from callbench.models.base import GenerationConfig, ModelInput, ModelOutput
from callbench.sandbox.js_extract import answer_offset
from callbench.specs import ApiSpec, load_spec
from callbench.tracks.base import Sample, SampleResult, Track, file_sha256
from callbench.tracks.webapi import upstream_scorer
from callbench.tracks.webapi.constraints import summarize_constraint_stats
from callbench.tracks.webapi.dataset import (
    DEFAULT_DATA_FILE,
    KNOWN_APIS,
    WebApiTask,
    load_tasks,
    spec_path_for,
)
from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.parsing import assemble_program
from callbench.tracks.webapi.prompting import (
    CONTEXTS,
    PROMPT_CHOICES,
    PROMPT_VERSION,
    PUBLISHED,
    SETUPS,
    build_prompt,
    context_templates_hash,
    reference_completion,
    templates_hash,
)
from callbench.tracks.webapi.scoring import SCORING_MODES, SampleVerdict, compare_requests, error_verdict
from callbench.tracks.webapi.upstream_call import (
    published_call,
    published_chat_program,
    published_program,
)
from callbench.tracks.webapi.upstream_compare import published_error

BASE_URL_HINTS: tuple[str, ...] = ("auto", "on", "off")

# Sandbox statuses -> WAPIIBench error verdicts.
_STATUS_TO_ERROR = {
    "no_request": "no_request",
    "incomplete": "incomplete_request",
    # the call is complete but the code around it cannot be completed into a runnable program
    "incomplete_program": "incomplete_request",
    "runtime_error": "runtime_error",
    "memory": "runtime_error",
    "timeout": "timeout",
    # over the code budget, first request not from the extracted call, or tampering
    "rejected": "runtime_error",
}


@dataclass
class WebApiOptions:
    setup: str = "full"
    data: str | None = None  # data dir override
    tasks_file: str | None = None  # a task file instead of the default dataset
    sandbox_timeout_s: float = 1.0
    sandbox_memory_mb: int = 64
    constrained: bool = False  # constrained decoding from the spec (steerable backends, vLLM)
    grammar_options: Any = None  # callbench.constrain.webapi_grammar.GrammarOptions
    prompt_version: str = PROMPT_VERSION  # prompts/<version>/ (v1: the paper-style text; v2: + credentials)
    context: str = "none"  # spec context before the task: none | rag | spec-excerpt (retrieval.py)
    context_k: int = 5  # rag: endpoints retrieved
    context_chars: int = 30_000  # rag: the context's cut, at an endpoint boundary
    base_url_hint: str = "auto"  # name the spec's base URL: auto (APIs other than the 4 known) | on | off
    strict_data: bool = False  # a row that contradicts its spec fails the run instead of being skipped
    # How an in-process instruct model gets the prompt (CHAT_HANDLINGS): "prefill" (callbench's:
    # the starter opens the answer), "published" (WAPIIBench's: a free answer searched for the
    # starter); "auto" = published with the published prompt, else prefill.
    chat_handling: str = "auto"


CHAT_HANDLINGS = ("auto", "prefill", "published")


class WebApiTrack(Track):
    name = "webapi"
    scoring_modes = SCORING_MODES
    # Each evaluation thread drives its own V8 worker process, so samples score in parallel.
    evaluate_in_thread = True
    server_constraints = True
    # Instruct models get their chat template, with the starter prefilled as the answer's start
    # unless the published chat handling is asked for (then set per instance, in __init__).
    chat_template = True
    chat_prefill = True

    def __init__(self, options: WebApiOptions | None = None):
        self.options = options or WebApiOptions()
        if self.options.setup not in SETUPS:
            raise ConfigError(f"--setup '{self.options.setup}': choose from {', '.join(SETUPS)}")
        if self.options.prompt_version not in PROMPT_CHOICES:
            raise ConfigError(
                f"--prompt-version '{self.options.prompt_version}': choose from {', '.join(PROMPT_CHOICES)}"
            )
        self._check_context_options()
        self.root = data_dir(self.options.data)
        self.published = None  # WAPIIBench's published prompt (--prompt published)
        self.chat_handling = self._resolve_chat_handling()
        self.chat_prefill = self.chat_handling == "prefill"
        if self.options.prompt_version == PUBLISHED:
            if self.options.base_url_hint == "on":
                raise ConfigError("--base-url-hint on: the published prompt has no base-URL hint (use callbench's v1/v2)")
            from callbench.tracks.webapi.published import load_template

            self.published = load_template(self.root)
        self.tasks_file = Path(self.options.tasks_file) if self.options.tasks_file else self.root / DEFAULT_DATA_FILE
        if not self.tasks_file.is_file():
            hint = (
                "run 'callbench data fetch wapiibench' (or set CALLBENCH_DATA_DIR / --data)"
                if not self.options.tasks_file
                else "check the path"
            )
            raise DataError(f"{self.tasks_file}: dataset not found; {hint}")
        self._tasks: dict[str, WebApiTask] = {}
        self._specs: dict[str, ApiSpec] = {}
        self._sandboxes = None  # one JsSandbox per evaluation thread
        self._prompts: dict[str, Any] = {}
        self._spec_lock = threading.Lock()
        self._constraints = None
        self._active: dict[str, Any] = {}
        self._digests: dict[str, str] = {}
        self.data_findings: list[dict[str, Any]] = []  # rows that contradict their spec (load_samples)
        if self.options.constrained:
            from callbench.tracks.webapi.constraints import ConstraintFactory

            self._constraints = ConstraintFactory(self.options.setup, self.options.grammar_options)

    def _resolve_chat_handling(self) -> str:
        handling = self.options.chat_handling
        if handling not in CHAT_HANDLINGS:
            raise ConfigError(f"--chat-handling '{handling}': choose from {', '.join(CHAT_HANDLINGS)}")
        published_prompt = self.options.prompt_version == PUBLISHED
        if handling == "auto":
            return "published" if published_prompt else "prefill"
        if handling == "published" and not published_prompt:
            raise ConfigError("--chat-handling published searches answers for the published starter: it needs --prompt published")
        return handling

    def _check_context_options(self) -> None:
        o = self.options
        if o.context not in CONTEXTS:
            raise ConfigError(f"--context '{o.context}': choose from {', '.join(CONTEXTS)}")
        if o.base_url_hint not in BASE_URL_HINTS:
            raise ConfigError(f"--base-url-hint '{o.base_url_hint}': choose from {', '.join(BASE_URL_HINTS)}")
        if o.context_k < 1:
            raise ConfigError(f"--context-k {o.context_k}: must be at least 1")
        if o.context_chars < 1:
            raise ConfigError(f"--context-chars {o.context_chars}: must be at least 1")
        if o.context == "rag":
            from callbench.tracks.webapi.retrieval import require_rank_bm25

            require_rank_bm25()

    # -- data
    def load_samples(self) -> list[Sample]:
        """The task file's rows, each checked against its spec. A row whose gold request
        contradicts the spec (a URL that matches no path, a method the path lacks, an argument the
        spec does not define, a required one missing) is skipped and recorded in
        ``data_findings`` (file, row, task, reason), which the summary and the report list; a row
        the dataset marks ``vetted`` (checked by hand and kept, as WAPIIBench's are) runs all the
        same, its finding listed as kept. ``strict_data`` fails on the first skipped row instead.
        A spec that cannot be parsed always fails (one line naming the file and the place)."""
        tasks = load_tasks(self.tasks_file)
        marker = self._validated_marker(tasks)
        known = self._read_marker(marker)
        findings: list[dict[str, Any]] = []
        found: dict[str, list[str]] = {}  # task id -> reasons, what the marker records
        samples = []
        for t in tasks:
            self._tasks[t.id] = t
            reasons = known.get(t.id, []) if known is not None else self._gold_findings(t)
            if reasons:
                found[t.id] = reasons
                kept = t.vetted is True
                finding = {"file": str(self.tasks_file), "row": t.index, "task": t.id, "reason": "; ".join(reasons)}
                findings.append({**finding, "action": "kept (vetted)" if kept else "skipped"})
                if not kept:
                    if self.options.strict_data:
                        raise DataError(f"{self.tasks_file}: [{t.index}]: {finding['reason']} (--strict-data)")
                    continue
            samples.append(Sample(id=t.id, group=t.api, payload=t))
        self.data_findings = findings
        if marker is not None and known is None:
            try:
                from callbench.files import write_json_atomic

                marker.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(marker, found)
            except OSError:  # a read-only cache only means validating again next time
                pass
        return samples

    def _gold_findings(self, task: WebApiTask) -> list[str]:
        """Why ``task``'s gold request contradicts its spec (empty: it does not)."""
        from callbench.tracks.webapi.audit import audit_gold

        spec = self._spec_for(task)  # a missing or malformed spec fails here, in one line
        url, method = task.config.url, task.config.method
        cfg = task.config.as_dict()
        # the request's query and headers take part: they select query- and header-dispatched
        # operations (``/#Action=X``, ``/#X-Amz-Target=Svc.Op``)
        params = cfg.get("params") if isinstance(cfg.get("params"), dict) else None
        headers = cfg.get("headers") if isinstance(cfg.get("headers"), dict) else {}
        # the real-world readings of hosts and trailing slashes (as the strict scorer reads a
        # task's expected URL)
        found = spec.match_paths(url, params, headers=headers, real_world=True, either_slash=True)
        if not found:
            return [f"config.url '{url}' matches no path of {Path(spec.source).name}"]
        if spec.match(method, url, params, headers=headers, real_world=True, either_slash=True) is None:
            allowed = ", ".join(sorted({m.upper() for pm in found for m in pm.operations}))
            return [f"config.method {method.upper()} is not defined for '{url}' (it allows {allowed})"]
        out = []
        for issue in audit_gold(task, spec):
            if issue.kind == "illegal_argument":
                out.append(f"config.{issue.location}.{issue.name}: not an argument of {method.upper()} {url} in the spec")
            elif issue.kind == "missing_required":
                out.append(f"config.{issue.location}: required argument '{issue.name}' missing")
        return out

    @staticmethod
    def _read_marker(marker: Path | None) -> dict[str, list[str]] | None:
        """The findings a previous load recorded for these exact files; None: check again."""
        if marker is None or not marker.is_file():
            return None
        try:
            data = json.loads(marker.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values())
        return data if ok else None

    def _validated_marker(self, tasks: list[WebApiTask]) -> Path | None:
        """A cache entry saying these exact task and spec files passed the checks above (keyed by
        their bytes), so a later run skips building every spec before its first request (the
        specs are then built where answers are scored). None when a spec file is missing."""
        from callbench.data.paths import cache_dir
        from callbench.specs import openapi

        # the checking code is part of the key: a changed matcher validates again
        from callbench.tracks.webapi import audit

        h = hashlib.sha256(
            Path(openapi.__file__).read_bytes() + Path(audit.__file__).read_bytes() + Path(__file__).read_bytes() + self._digest(self.tasks_file).encode()
        )
        for path in sorted({spec_path_for(t, self.tasks_file, self.root) for t in tasks}):
            if not path.is_file():
                return None
            h.update(str(path).encode() + b"\0" + self._digest(path).encode())
        return cache_dir() / "validated" / f"webapi-{h.hexdigest()[:32]}"

    def _digest(self, path: Path) -> str:
        """A file's content hash, read once per track (one track serves one run)."""
        key = str(path)
        if key not in self._digests:
            self._digests[key] = file_sha256(path)
        return self._digests[key]

    def _spec_for(self, task: WebApiTask) -> ApiSpec:
        path = spec_path_for(task, self.tasks_file, self.root)
        key = str(path)
        spec = self._specs.get(key)
        if spec is None:
            with self._spec_lock:  # evaluation threads may ask for a spec at the same time
                if key not in self._specs:
                    if not path.is_file():
                        raise DataError(f"{self.tasks_file}: [{task.index}].spec: spec file {path} not found")
                    self._specs[key] = load_spec(path)
                spec = self._specs[key]
        return spec

    def warm_up(self) -> None:
        """In an evaluation worker: load the specs and start the V8 worker before the first answer."""
        for task in load_tasks(self.tasks_file):
            self._spec_for(task)
        self.sandbox.start()

    def evaluator_factory(self) -> Any:
        """Unconstrained runs score in worker processes (a constrained sample's statistics live
        in this process's constraint objects, so constrained runs score here)."""
        if self.options.constrained:
            return None
        return functools.partial(_rebuild, dataclasses.replace(self.options), str(self.tasks_file), str(self.root))

    def fingerprint(self) -> dict[str, Any]:
        """Generation: the prompts (every one, as sent) and, for constrained runs, the task file and
        specs the grammars are built from. The task file's expected requests and the specs are
        otherwise scoring inputs (:meth:`scoring_fingerprint`): an edited spec is re-scored with
        ``--rescore``, the answers kept."""
        return {
            "setup": self.options.setup,
            "prompt_version": self.options.prompt_version,
            **(
                {"prompt_hash": templates_hash(self.options.prompt_version)}
                if self.published is None
                else {"prompt_hash": self.published.sha256[:16], "prompt_file_sha256": self.published.sha256}
            ),
            "prompts_sha256": self._prompts_digest(),
            # how answers become programs (the prompts digest covers what is sent)
            **({"chat_handling": "published"} if self.chat_handling == "published" else {}),
            "constrained": self.options.constrained,
            **self._context_fingerprint(),
            **({"grammar_options": repr(self._grammar_options())} if self.options.constrained else {}),
            **(self._inputs_digest() if self.options.constrained else {}),
        }

    def _context_fingerprint(self) -> dict[str, Any]:
        """The context options, spelt out when not the defaults (default runs keep their identity;
        the prompts digest covers the text either way)."""
        o = self.options
        out: dict[str, Any] = {}
        if o.context != "none":
            out.update(context=o.context, context_chars=o.context_chars)
            if o.context == "rag":
                from callbench.tracks.webapi.retrieval import RETRIEVER

                out.update(context_k=o.context_k, retriever=RETRIEVER)
        if o.base_url_hint != "auto":
            out["base_url_hint"] = o.base_url_hint
        if self.published is None and (out or any(self._base_url(t) for t in self._all_tasks())):
            out["context_prompt_hash"] = context_templates_hash(o.prompt_version)
        return out

    def scoring_fingerprint(self) -> dict[str, Any]:
        return {} if self.options.constrained else self._inputs_digest()

    def _inputs_digest(self) -> dict[str, Any]:
        """Content hashes of the task file and of every spec its tasks use (all of them, not only
        the selected tasks': the run directory may hold samples of any)."""
        specs = sorted({spec_path_for(t, self.tasks_file, self.root) for t in self._all_tasks()})
        return {
            "data_sha256": self._digest(self.tasks_file),
            "specs_sha256": {self._shown(p): self._digest(p) for p in specs},
        }

    def _shown(self, path: Path) -> str:
        """A spec's name in the identity: relative to the data dir or the task file (the same
        files moved elsewhere are the same run)."""
        for base in (self.root, self.tasks_file.parent):
            try:
                return str(path.relative_to(base))
            except ValueError:
                continue
        return path.name

    def _all_tasks(self) -> list[WebApiTask]:
        return list(self._tasks.values()) if self._tasks else load_tasks(self.tasks_file)

    def _prompts_digest(self) -> str:
        """Digest of every prompt the run sends, in every format: a change in how prompts are
        built (not only in the template files) starts a new run instead of resuming old answers."""
        h = hashlib.sha256()
        for task in self._all_tasks():
            p = self._prompt(task)
            parts = (p.completion_prompt, p.messages, p.assistant_prefix, p.template_messages)
            h.update(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode())
        return h.hexdigest()[:16]

    def _grammar_options(self) -> Any:
        """The grammar options in force (the defaults spelt out, so a change of a default changes
        the fingerprint of constrained runs and they are not resumed with stale verdicts)."""
        from callbench.constrain.webapi_grammar import GrammarOptions

        return self.options.grammar_options or GrammarOptions()

    def default_generation(self, mode: str) -> GenerationConfig:
        """250 new tokens as in the paper; completions stop at the closing code fence. Chat answers
        get no stop string, since many open with prose and a fence. The published chat handling
        generates as upstream does, chat or not: the answer ends with the token that completes
        ``\n```\n``, which stays in it (the program text is then cut as upstream cuts it)."""
        if self.chat_handling == "published":
            return GenerationConfig(max_tokens=250, stop_kept=("\n```\n",))
        stop = ("\n```",) if mode == "completion" else ()
        return GenerationConfig(max_tokens=250, stop=stop)

    # -- prompting
    def build_input(self, sample: Sample) -> ModelInput:
        task: WebApiTask = sample.payload
        prompt = self._prompt(task)
        constraint = None
        if self._constraints is not None:
            constraint = self._constraints.for_task(task, self._spec_for(task), prompt.starter)
            self._active[sample.id] = constraint
        return ModelInput(
            sample_id=sample.id,
            prompt=prompt.completion_prompt,
            messages=prompt.messages,
            reference=reference_completion(task, self.options.setup),  # type: ignore[arg-type]
            constraint=constraint,
            metadata={"starter": prompt.starter, "api": task.api},
            assistant_prefix=prompt.assistant_prefix,
            template_messages=prompt.template_messages,
            # The starter ends mid-expression ('axios.'): let tokenizing backends heal the boundary.
            heal_boundary=True,
        )

    def _prompt(self, task: WebApiTask):
        """The task's prompt (built once: build_input and evaluate both need it)."""
        prompt = self._prompts.get(task.id)  # ids are unique within the track's one task file
        if prompt is None and self.published is not None:
            from callbench.tracks.webapi.published import build_published_prompt

            prompt = build_published_prompt(
                task,
                self.options.setup,  # type: ignore[arg-type]
                self.published,
                context=self._context(task),
                prefill=self.chat_handling == "prefill",
            )
            self._prompts[task.id] = prompt
        if prompt is None:
            prompt = build_prompt(
                task,
                self.options.setup,  # type: ignore[arg-type]
                version=self.options.prompt_version,
                context=self._context(task),
                base_url=self._base_url(task),
            )
            self._prompts[task.id] = prompt
        return prompt

    def _context(self, task: WebApiTask) -> str:
        """The spec text placed before the task: the retrieved endpoints (``rag``) or, as an oracle
        upper bound, the documentation of the endpoint the expected request hits (``spec-excerpt``)."""
        o = self.options
        if o.context == "none":
            return ""
        from callbench.tracks.webapi import retrieval

        spec = self._spec_for(task)
        if o.context == "rag":
            return retrieval.rag_context(spec, " ".join(task.task.split()), o.context_k, o.context_chars)
        op = retrieval.gold_operation(spec, task.config.method, task.config.url)
        if op is None:
            raise DataError(f"{self.tasks_file}: [{task.index}].config.url: no operation of the spec matches it")
        return retrieval.join_excerpts([retrieval.operation_excerpt(op)], o.context_chars)

    def _base_url(self, task: WebApiTask) -> str | None:
        """The spec's base URL when the prompt should name it: ``on``, or ``auto`` for an API the
        model cannot know (not one of WAPIIBench's four); None when the spec has no absolute server."""
        hint = self.options.base_url_hint
        if self.published is not None:
            return None  # the published prompt names no base URL
        if hint == "off" or (hint == "auto" and task.api in KNOWN_APIS and not task.spec):
            return None
        from callbench.tracks.webapi.retrieval import base_url

        return base_url(self._spec_for(task))

    # -- evaluation
    @property
    def sandbox(self):
        """The calling thread's sandbox (V8 worker process), started on first use."""
        if self._sandboxes is None:
            from callbench.sandbox.js import JsSandbox
            from callbench.sandbox.per_thread import PerThread

            opts = self.options
            self._sandboxes = PerThread(lambda: JsSandbox(timeout_s=opts.sandbox_timeout_s, memory_mb=opts.sandbox_memory_mb))
        return self._sandboxes.get()

    def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        return self.evaluate_many([(sample, output)])[0]

    def evaluate_many(self, items: list[tuple[Sample, ModelOutput]]) -> list[SampleResult]:
        """Score several answers; their programs go to the V8 worker together
        (:meth:`JsSandbox.run_many`), each still run and checked on its own. Where compat scoring
        follows the published scorer (:mod:`.upstream_scorer`), the text that scorer would run
        goes to the worker too, as a batch of its own."""
        results: list[SampleResult | None] = [None] * len(items)
        to_run: list[int] = []
        programs: list[tuple[str, dict | None]] = []
        stats: list[dict[str, Any]] = []
        calls: dict[int, Any] = {}  # sample -> the published scorer's call (compat)
        for k, (sample, output) in enumerate(items):
            early, cd_stats, program = self._before_run(sample, output)
            stats.append(cd_stats)
            if early is not None:
                results[k] = early
                continue
            to_run.append(k)
            task: WebApiTask = sample.payload
            # the answer's call is scored, not a request the starter's own code sends before it
            call_from = None if self._upstream_chat(output) else answer_offset(self._prompt(task).starter, program)
            # real-world starter code: when its surroundings cannot run, the call runs alone
            programs.append((program, task.definitions, call_from, bool(task.starter_code)))
            if upstream_scorer.applies(task, self._spec_for(task)):
                calls[k] = published_call(self._published_text(task, output))
        compat_runs = upstream_scorer.run_calls(self.sandbox, calls) if calls else {}
        if programs:
            for j, run in self.sandbox.run_many(programs):
                k = to_run[j]
                compat = (calls[k], compat_runs.get(k)) if k in calls else None
                results[k] = self._scored_run(items[k][0], run, stats[k], compat)
        return results  # type: ignore[return-value]

    def _before_run(self, sample: Sample, output: ModelOutput) -> tuple[SampleResult | None, dict[str, Any], str]:
        """The verdict when the answer needs no run (unsatisfiable, timed out), the
        constraint statistics, and the program to run."""
        task: WebApiTask = sample.payload
        cd_stats: dict[str, Any] = {}
        constraint = self._active.pop(sample.id, None)
        if constraint is not None:
            cd_stats = {"constraint": constraint.stats()}
            if cd_stats["constraint"].get("unsatisfiable"):
                output.extra["unsatisfiable"] = True
        for flag, status, why in (("unsatisfiable", "unsatisfiable", "constraint unsatisfiable"),
                                  ("timeout", "timeout", "generation timed out")):
            if output.extra.get(flag):
                spec, expected = self._spec_for(task), task.config.as_dict()
                verdicts = {m: error_verdict(status, expected, spec, m).as_dict() for m in SCORING_MODES}
                if upstream_scorer.applies(task, spec):  # the published scorer's error, its counts
                    verdicts["compat"] = published_error(status, expected, spec).as_dict()
                parsed = output.text if status == "unsatisfiable" else None
                return SampleResult(status=status, parsed=parsed, verdicts=verdicts, error=why, stats=cd_stats), cd_stats, ""
        if self._upstream_chat(output):  # WAPIIBench's own handling of chat answers
            return None, cd_stats, self._published_text(task, output)
        return None, cd_stats, assemble_program(self._prompt(task).starter, output.text, output.mode)

    def _upstream_chat(self, output: ModelOutput) -> bool:
        return self.chat_handling == "published" and output.mode == "chat"

    def _published_text(self, task: WebApiTask, output: ModelOutput) -> str:
        """The program text WAPIIBench's ``generate()`` builds from this answer: for a chat answer
        in the published handling, from the whole decoded sequence where the backend rendered the
        template in-process (as upstream's Hugging Face models), else as for its API models; a
        completion continues the starter. Empty where upstream's search finds no starter."""
        starter = self._prompt(task).starter
        decoded = output.extra.get("prompt_decoded")
        if self._upstream_chat(output) and isinstance(decoded, str):
            return published_chat_program(starter, decoded, output.text) or ""
        return published_program(starter, output.text, output.mode)

    def _scored_run(
        self, sample: Sample, result: Any, cd_stats: dict[str, Any], compat: tuple[Any, Any] | None = None
    ) -> SampleResult:
        """Verdicts for what the sandbox captured, in every scoring mode. ``compat``: the
        published scorer's call and its run, when compat follows the published scorer (else
        compat compares the request callbench's own run recorded)."""
        task: WebApiTask = sample.payload
        spec = self._spec_for(task)
        expected = task.config.as_dict()
        if getattr(result, "stubbed_modules", None):  # modules that ran as inert stand-ins
            cd_stats = {**cd_stats, "stubbed_modules": list(result.stubbed_modules)}
        published = None
        if compat is not None:
            verdict, note = upstream_scorer.compat_verdict(expected, spec, compat[0], compat[1])
            published = verdict.as_dict()
            cd_stats = {**cd_stats, "compat": {"run": note, "call": compat[0].code}}
        if result.status != "ok" or result.request is None:
            err = _STATUS_TO_ERROR.get(result.status, "runtime_error") if result.status != "ok" else "no_request"
            verdicts = {m: error_verdict(err, expected, spec, m).as_dict() for m in SCORING_MODES}
            if published is not None:
                verdicts["compat"] = published
            return SampleResult(
                status=err, parsed=result.code, execution=None, verdicts=verdicts, error=result.error, stats=cd_stats
            )
        request = result.request
        verdicts = {m: compare_requests(expected, request, spec, m).as_dict() for m in SCORING_MODES}
        if published is not None:
            verdicts["compat"] = published
        # stored with what axios would put on the wire for it (method, url, headers, body), and
        # how the sandbox reached the call: the whole program, or the completed call alone
        scored = getattr(result, "scored", 0)
        execution = {**request, "sent": result.sent[scored]} if getattr(result, "sent", None) else dict(request)
        if getattr(result, "reached_by", None):
            execution["reached_by"] = result.reached_by
            cd_stats = {**cd_stats, "reached_by": result.reached_by}
        return SampleResult(status="ok", parsed=result.code, execution=execution, verdicts=verdicts, stats=cd_stats)

    @classmethod
    def aggregate(cls, samples: list[Sample], results: list[SampleResult], scoring: str) -> dict[str, Any]:
        if scoring not in SCORING_MODES:
            raise ConfigError(f"--scoring '{scoring}': choose from {', '.join(SCORING_MODES)}")
        by_api: dict[str, list[SampleVerdict]] = {}
        all_v = []
        for s, r in zip(samples, results, strict=True):
            v = SampleVerdict.from_dict(r.verdicts[scoring])
            all_v.append(v)
            by_api.setdefault(s.group, []).append(v)
        out: dict[str, Any] = {
            "metrics": aggregate(all_v, scoring),
            "by_api": {api: aggregate(vs, scoring) for api, vs in sorted(by_api.items())},
        }
        cd = summarize_constraint_stats([(r.stats or {}).get("constraint", {}) for r in results])
        if cd is not None:
            out["constrained_decoding"] = cd
        return out

    def close(self) -> None:
        if self._sandboxes is not None:
            self._sandboxes.close()


def _rebuild(options: WebApiOptions, tasks_file: str, root: str) -> WebApiTrack:
    """The track of an evaluation worker: same options and data, specs loaded on first use."""
    return WebApiTrack(dataclasses.replace(options, tasks_file=tasks_file, data=root))


def api_display_name(api: str) -> str:
    return KNOWN_APIS.get(api, api)
