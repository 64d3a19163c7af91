"""The nested tool-call track (NESTFUL) on the shared runner.

A sample's model output is parsed into calls, executed in the sandboxed Python executor when the
task is executable (it has a gold answer and its tools are built in, NESTFUL code-domain files of
:mod:`~callbench.tracks.nested.tools.library`, or given with ``--functions``; the summary counts
these rows as ``n_executable`` and lists the others under ``non_executable``) and scored in both
scoring modes; aggregation breaks down by domain, by gold sequence length, by the number of nested
references and by dependency-graph shape (:mod:`~callbench.tracks.nested.analysis`).

Three modes produce the predicted calls: ``direct`` (one JSON answer, parsed), ``react`` (one call
per turn as text, executed and observed: :mod:`~callbench.tracks.nested.react`) and ``tools`` (the
server's native tool-calling API: :mod:`~callbench.tracks.nested.tools_mode`). The multi-turn modes
record the calls they executed, and those are scored exactly like a direct answer.

Every model output ends as a per-sample verdict, never as an exception out of the run: output that
holds no readable calls, or a malformed call, is a ``parse_error`` (reading is bounded, see
:mod:`~callbench.tracks.nested.parsing`); a sample that runs past ``sample_timeout_s`` is a
``timeout``; both are scored as wrong, with a one-line ``error``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.constrain.per_sample import summarize_constraint_stats
from callbench.data.paths import data_dir
from callbench.errors import ConfigError, DataError
from callbench.models.base import GenerationConfig, ModelInput, ModelOutput
from callbench.tracks.base import Sample, SampleResult, Track, file_sha256
from callbench.tracks.nested.dataset import default_task_file, load_nested
from callbench.tracks.nested.metrics import NO_ANSWER, score_sample, summarize
from callbench.tracks.nested.parsing import call_problem, read_calls, scrub, scrub_value
from callbench.tracks.nested.prompting import PROMPT_VERSION, build_prompt, gold_json, templates_hash
from callbench.tracks.nested.schema import NestedTask, ToolCall

SCORING_MODES = ("strict", "compat")
MODES = ("direct", "react", "tools")
# The published in-context examples: where `data fetch nestful` puts them (upstream src/), then the
# layout of a checkout of the v2 samples.
ICL_FILES = ("nestful/src/icl_examples.json", "nestful/v2-samples/icl_examples.json")


@dataclass
class NestedOptions:
    data: str | None = None  # task file (v1/v2 JSON/JSONL/parquet) or data dir; default: built-in set
    shots: int = 0
    icl_file: str | None = None  # in-context examples (v2 schema); default <data dir>/nestful/v2-samples/
    functions: str | None = None  # directory of Python files with executable tools
    # NESTFUL code-domain implementations (func_file_map.json + one file per tool: tools.library);
    # None: the fetched ones under the data dir when present; "" or "none": none.
    code_functions: str | None = None
    mode: str = "direct"  # "direct" (one answer), "react" (call, observe, call again) or "tools" (native tool calls)
    max_steps: int = 12  # react/tools: most model turns per sample (a 9-call task needs 10)
    call_timeout_s: float = 5.0
    # Wall-time budget of one sample (None: none): in direct mode the execution of its calls; in
    # react/tools mode the whole episode (model turns and executions) and then its scoring re-run.
    # Checked before each model turn and each call, so one turn or call in progress may overrun it
    # (each has its own timeout). Not part of the fingerprint: resuming with another budget is allowed.
    sample_timeout_s: float | None = 600.0
    constrained: bool = False  # reference-aware constrained decoding (direct mode)
    # Prompt: "callbench" (callbench's own versioned prompt) or "published" (NESTFUL's per-model
    # template from PROMPTS.json: prompting_published). prompt_template: "auto" (by the family of
    # model_spec), a family ("llama"), a PROMPTS.json name, or "callbench-v1"; None: the default of
    # `prompt`. prompts_file: the PROMPTS.json to read (default: the fetched one under the data dir).
    prompt: str | None = None
    prompt_template: str | None = None
    prompts_file: str | None = None
    model_spec: str | None = None  # the --model spec ("auto" reads the family from it)
    # How --scoring compat reads a direct answer: "lenient" (callbench's reader) or a model name the
    # published scorer knows (compat_parsers.PARSER_NAMES); None: the published template's model's
    # parser with --prompt published, else lenient. Strict always reads with the lenient reader.
    parser: str | None = None


class NestedTrack(Track):
    name = "nested"
    scoring_modes = SCORING_MODES
    evaluate_in_thread = True  # each evaluation thread has its own tool process

    def __init__(self, options: NestedOptions | None = None):
        self.options = options or NestedOptions()
        if self.options.mode not in MODES:
            raise ConfigError(f"--mode {self.options.mode}: choose {', '.join(MODES[:-1])} or {MODES[-1]}")
        if self.options.max_steps < 1:
            raise ConfigError("--max-steps must be >= 1")
        if self.options.sample_timeout_s is not None and not self.options.sample_timeout_s > 0:
            raise ConfigError("--sample-timeout must be > 0 seconds")
        if self.options.shots not in (0, 1, 2, 3):
            raise ConfigError("--shots must be 0, 1, 2 or 3")
        if self.options.constrained and self.options.mode != "direct":
            raise ConfigError("--constrained works with --mode direct only (the strategy direct: one JSON answer per sample)")
        self.published = self._choose_prompt()  # None: callbench's own prompt
        # An instruct model run in-process gets its chat template for callbench's prompt (in
        # completion mode instruct GGUFs repeat themselves to the token limit); a published
        # template already holds its model's chat markup, so it stays a completion prompt.
        self.chat_template = self.published is None
        self.parser = self._choose_parser()
        self._constraints = None
        self._active: dict[str, Any] = {}
        self._deadlines: dict[str, float] = {}  # sample id -> end of its time budget (episodes)
        if self.options.constrained:
            from callbench.tracks.nested.constraints import NestedConstraintFactory

            self._constraints = NestedConstraintFactory()
        given = Path(self.options.data) if self.options.data else None
        self.data_note: str | None = None  # which data a run without a task file uses (CLI prints it)
        if given is not None and given.is_file():
            self.task_file = given
        elif given is not None and not given.exists():
            raise DataError(f"{given}: no such file or directory")
        else:  # fetched NESTFUL v2 under the data dir, else the built-in generated set
            self.task_file, self.data_note = default_task_file(given)
        self._tasks: dict[str, NestedTask] = {}
        self._examples: list[NestedTask] = []
        self._raw_rows: dict[str, dict[str, Any]] = {}  # published prompts: rows as the file has them
        self._raw_examples: list[dict[str, Any]] | None = None
        self._executors = None  # one NestedExecutor (tool process) per thread
        self._modules = None
        self._library: Any = False  # False: not looked up yet; None: no code-domain library

    # -- data
    def load_samples(self) -> list[Sample]:
        tasks = load_nested(self.task_file)
        self._load_examples()
        from callbench.tracks.nested.tools import check_tool_outputs

        # own tools whose outputs the gold calls cannot reference: one clear line, not a low win rate
        check_tool_outputs(tasks, self._tool_modules(), data_file=self.task_file)
        out = []
        for t in tasks:
            self._tasks[t.id] = t
            out.append(Sample(id=t.id, group=t.domain or "unknown", payload=t))
        return out

    def _choose_prompt(self):
        """The published template this run uses (None: callbench's prompt); ConfigError when the
        options contradict each other or name nothing known."""
        from callbench.tracks.nested.prompting_published import select_template

        o = self.options
        prompt = (o.prompt or "").strip().lower() or None
        choice = (o.prompt_template or "").strip() or None
        if prompt not in (None, "callbench", "published"):
            raise ConfigError(f"--prompt {o.prompt}: choose callbench or published")
        own = choice is not None and choice.lower().startswith("callbench")
        if own:
            if choice.lower() not in ("callbench", f"callbench-{PROMPT_VERSION}"):
                raise ConfigError(f"--prompt-template {choice}: callbench's prompt versions: callbench-{PROMPT_VERSION}")
            if prompt == "published":
                raise ConfigError(f"--prompt published contradicts --prompt-template {choice}")
            return None
        if prompt == "callbench" and choice is not None:
            raise ConfigError(f"--prompt callbench contradicts --prompt-template {choice} (a NESTFUL template)")
        if prompt is None and choice is None:
            return None
        if o.mode != "direct":
            raise ConfigError("--prompt published works with --mode direct only (the templates ask for one answer)")
        if o.constrained:
            raise ConfigError("--constrained works with callbench's prompt only (the published templates ask for other answer formats)")
        return select_template(choice or "auto", o.model_spec, o.prompts_file)

    def _choose_parser(self) -> str:
        """The compat parser (compat_parsers): the one asked for, else the published template's."""
        from callbench.tracks.nested.compat_parsers import LENIENT, parser_for_template, resolve_parser

        if self.options.parser is None:
            return parser_for_template(self.published.key if self.published is not None else None)
        parser = resolve_parser(self.options.parser)
        if parser != LENIENT and self.options.mode != "direct":
            raise ConfigError(
                f"--parser {parser} reads a direct answer; --mode {self.options.mode} records its calls, "
                "which compat prepares as upstream prepares parsed calls (--parser lenient)"
            )
        return parser

    def _icl_file(self) -> Path:
        if self.options.icl_file:
            return Path(self.options.icl_file)
        return next((data_dir() / f for f in ICL_FILES if (data_dir() / f).is_file()), data_dir() / ICL_FILES[0])

    def _load_examples(self) -> None:
        if self.options.shots and not self._examples:
            icl = self._icl_file()
            if not icl.is_file():
                raise DataError(f"{icl}: in-context examples not found (give --icl FILE or fetch the NESTFUL data)")
            self._examples = load_nested(icl)[: self.options.shots]
        if self.published is not None and self._raw_examples is None:
            from callbench.tracks.nested.prompting_published import raw_rows

            self._raw_examples = raw_rows(self._icl_file())[: self.options.shots] if self.options.shots else []

    def fingerprint(self) -> dict[str, Any]:
        """Generation. A direct answer depends on its prompt only, so the prompts' digest stands
        for the data (whose gold calls and answers are then scoring inputs). A react or tools
        episode, and a constrained answer, also depend on the task data and the tools it executes:
        those are generation inputs there."""
        mode = self.options.mode
        fp: dict[str, Any] = {
            "setup": f"{mode}-{self.options.shots}shot",
            **(
                {"prompt_version": PROMPT_VERSION, "prompt_hash": templates_hash()}
                if self.published is None
                else {
                    "prompt_version": "nestful-published",
                    "prompt_template": self.published.key,
                    "prompt_hash": self.published.sha256[:16],
                    "prompt_template_sha256": self.published.sha256,
                }
            ),
            "constrained": self.options.constrained,
            **({"max_steps": self.options.max_steps, "react_prompt_hash": _react_hash()} if mode == "react" else {}),
            **({"max_steps": self.options.max_steps, "tools_prompt_hash": _tools_hash()} if mode == "tools" else {}),
        }
        if self._episodes_read_data():
            fp.update(self._inputs_digest())
            if self.options.shots:
                fp["icl_sha256"] = file_sha256(self._icl_file())
        else:
            fp["prompts_sha256"] = self._prompts_digest()
        return fp

    def scoring_fingerprint(self) -> dict[str, Any]:
        """What turns answers into verdicts: the data the scorer reads (direct answers) and the
        parser compat reads them with (its verdicts and its win rate depend on it)."""
        return {**({} if self._episodes_read_data() else self._inputs_digest()), "compat_parser": self.parser}

    def _episodes_read_data(self) -> bool:
        return self.options.mode != "direct" or self.options.constrained

    def _inputs_digest(self) -> dict[str, Any]:
        """Content hashes of the task file and of the user tool files (``--functions``)."""
        out: dict[str, Any] = {"data_sha256": file_sha256(self.task_file)}
        if self.options.functions:
            files = sorted(Path(self.options.functions).glob("*.py"))
            out["functions_sha256"] = {f.name: file_sha256(f) for f in files}
        library = self._code_library()
        if library is not None:
            out["code_functions_sha256"] = library.digest()
        return out

    def _prompts_digest(self) -> str:
        """Digest of every direct prompt (completion and chat form) of the data."""
        self._load_examples()
        tasks = list(self._tasks.values()) or load_nested(self.task_file)
        h = hashlib.sha256()
        for task in tasks:
            h.update(json.dumps(self._prompt(task), sort_keys=True, ensure_ascii=False).encode())
        return h.hexdigest()[:16]

    def _prompt(self, task: NestedTask) -> tuple[str, list[dict[str, str]]]:
        """(completion prompt, chat messages) of a direct answer. A published template is a
        completion prompt with the model's chat markup in it; in chat mode it is sent as the one
        user message."""
        if self.published is None:
            return build_prompt(task, self._examples)
        from callbench.tracks.nested.prompting_published import build_published_prompt, raw_rows

        self._load_examples()
        if not self._raw_rows:
            tasks = list(self._tasks.values()) or load_nested(self.task_file)
            rows = raw_rows(self.task_file)
            if len(rows) == len(tasks):
                self._raw_rows = {t.id: r for t, r in zip(tasks, rows, strict=True) if isinstance(r, dict)}
        text = build_published_prompt(self.published, self._raw_rows.get(task.id), task, self._raw_examples or [])
        return text, [{"role": "user", "content": text}]

    def default_generation(self, mode: str) -> GenerationConfig:
        return GenerationConfig(max_tokens=512)

    # -- prompting
    def build_input(self, sample: Sample) -> ModelInput:
        task: NestedTask = sample.payload
        if self.options.mode == "tools":
            from callbench.tracks.nested.tools_mode import build_tools_input

            return build_tools_input(task, self._examples, sample.id)
        prompt, messages = self._prompt(task)
        constraint = None
        if self._constraints is not None:
            constraint = self._constraints.for_task(task)
            self._active[sample.id] = constraint
        return ModelInput(
            sample_id=sample.id, prompt=prompt, messages=messages, reference=gold_json(task), constraint=constraint
        )

    async def interact(self, sample: Sample, inp: ModelInput, model: Any, config: Any) -> ModelOutput:
        if self.options.mode == "direct":
            return await super().interact(sample, inp, model, config)
        task: NestedTask = sample.payload
        deadline = self._deadline()
        if deadline is not None:
            self._deadlines[sample.id] = deadline  # evaluate's re-run spends what the episode left
        execute = (lambda calls: self._executor_for(task).run(calls, task.tools, deadline=deadline)) if self._executable(task) else None
        if self.options.mode == "tools":
            from callbench.tracks.nested.tools_mode import tools_interact

            return await tools_interact(
                task, inp, model, config, max_steps=self.options.max_steps, execute=execute, deadline=deadline
            )
        from callbench.tracks.nested.react import react_interact

        return await react_interact(
            task,
            self._examples,
            model,
            config,
            max_steps=self.options.max_steps,
            execute=execute,
            sample_id=sample.id,
            deadline=deadline,
        )

    def _deadline(self) -> float | None:
        budget = self.options.sample_timeout_s
        return None if budget is None else time.monotonic() + budget

    # -- execution
    def _tool_modules(self):
        if self._modules is None:
            from callbench.tracks.nested.tools import builtin_tools, load_tools

            self._modules = list(builtin_tools()) + (load_tools(self.options.functions) if self.options.functions else [])
        return self._modules

    def _code_library(self):
        """The NESTFUL code-domain implementations this run executes (tools.library), or None."""
        if self._library is False:
            from callbench.tracks.nested.tools.library import CodeLibrary, fetched_library

            given = self.options.code_functions
            if given is None:
                self._library = fetched_library(data_dir())
            elif given.strip().lower() in ("", "none"):
                self._library = None
            else:
                self._library = CodeLibrary(given)
        return self._library

    def _tool_names(self) -> set[str]:
        names = {f for m in self._tool_modules() for f in m.functions}
        library = self._code_library()
        return names | set(library.names) if library is not None else names

    def _not_executable(self, task: NestedTask) -> str | None:
        """Why the task's win cannot be computed (metrics' reasons), or None when it can."""
        from callbench.tracks.nested.metrics import NO_GOLD_ANSWER, tools_not_implemented

        if task.gold_answer is None:
            return NO_GOLD_ANSWER
        if self._spec_task(task) is not None:  # made from an OpenAPI spec: its mock executes every operation
            return None
        names = self._tool_names()
        missing = [c.name for c in task.output if c.name not in names]
        return tools_not_implemented(missing) if missing else None

    def _executable(self, task: NestedTask) -> bool:
        return self._not_executable(task) is None

    def _spec_task(self, task: NestedTask):
        """(scenario, seed) of a task made from an OpenAPI spec (``generate nested --spec``), else None."""
        if "openapi" not in (task.model_extra or {}):
            return None
        from callbench.tracks.nested.from_spec import task_scenario

        return task_scenario(task, self.task_file)

    def _executor_for(self, task: NestedTask):
        """The executor of ``task``: a fresh mock of its spec per sequence, or the thread's tool process."""
        found = self._spec_task(task)
        if found is None:
            return self.executor
        from callbench.tracks.nested.from_spec import SpecExecutor

        return SpecExecutor(found[0], seed=found[1], call_timeout_s=self.options.call_timeout_s)

    @property
    def executor(self):
        """The calling thread's executor (its own sandboxed tool process), started on first use."""
        if self._executors is None:
            from callbench.sandbox.per_thread import PerThread
            from callbench.sandbox.python import Limits
            from callbench.tracks.nested.executor import NestedExecutor

            modules, limits = self._tool_modules(), Limits(timeout_s=self.options.call_timeout_s)
            library = self._code_library()
            self._executors = PerThread(lambda: NestedExecutor(modules, limits, library=library))
        return self._executors.get()

    def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        task: NestedTask = sample.payload
        deadline = self._deadlines.pop(sample.id, None) or self._deadline()
        gold = [{"name": c.name, "label": c.raw_label or c.label, "arguments": c.arguments} for c in task.output]
        from callbench.tracks.nested.react import episode_record, final_answer, recorded_calls

        # ReAct and tools: the calls the loop executed are the prediction (the transcript is not re-parsed)
        record = episode_record(output)
        if record is not None:
            calls = recorded_calls(output)
            problem = None if calls is None else call_problem(calls)
            if calls is None:
                last = record.get("last_invalid")
                problem = "the model never wrote a parsable action" + (f" (last: {last})" if last else "")
        else:
            read = read_calls(output.text, pythonic=self.published is not None and self.published.pythonic)
            calls, problem = read.calls, read.error
        compat = self._compat_reading(output, record, calls)
        why_not = self._not_executable(task)
        executable = why_not is None
        pred_answer: Any = None
        executed_ok = False
        execution = None
        timed_out = bool(record and record.get("timed_out"))
        done_calls = None
        if calls is not None and problem is None and executable:
            result = self._execute(task, calls, deadline)
            if result is not None:
                pred_answer, executed_ok = final_answer(output, result), result.ok
                timed_out = timed_out or result.timed_out
                if result.timed_out:
                    done_calls = len(result.calls) - 1  # the last outcome is the call it did not start
                execution = {
                    "ok": result.ok,
                    "timed_out": result.timed_out,
                    "final": _stored(result.final),
                    "calls": [{"label": c.label, "name": c.name, "output": _stored(c.output)} for c in result.calls],
                }
        # compat's win executes what its parser decoded (upstream's pred_dict_list), when that is
        # not what was just executed
        compat_answer, compat_ok, compat_execution = pred_answer, executed_ok and not timed_out, None
        if executable and compat.decoded != calls:
            compat_answer, compat_ok, compat_execution = None, False, None
            result = self._execute(task, compat.decoded, deadline) if compat.decoded else None
            if result is not None:
                compat_answer, compat_ok = final_answer(output, result), result.ok and not result.timed_out
                compat_execution = {"ok": result.ok, "timed_out": result.timed_out, "final": _stored(result.final)}
        common = dict(
            domain=task.domain,
            sample_id=task.id,
            not_executable=why_not,
            gold_answer=task.gold_answer if executable else NO_ANSWER,
        )
        verdicts = {
            "strict": score_sample(
                calls, gold, mode="strict", pred_answer=pred_answer, executed_ok=executed_ok and not timed_out, **common
            ),
            "compat": {
                **score_sample(
                    calls,
                    gold,
                    mode="compat",
                    compat_parse=compat,
                    pred_answer=compat_answer,
                    executed_ok=compat_ok,
                    **common,
                ),
                "parser": self.parser,
                **({"parse_error_reason": scrub(compat.reason)} if compat.parse_error and compat.reason else {}),
                **({"execution": compat_execution} if compat_execution is not None else {}),
            },
        }
        status, error = "ok", None
        if calls is None or problem is not None:
            status, error = "parse_error", problem
        elif timed_out:
            status = "timeout"
            error = f"the sample ran past its time budget of {self.options.sample_timeout_s:g} s (sample_timeout_s)"
            if record is not None and record.get("timed_out"):
                error += f" during its episode, after {record.get('steps', 0)} model turns"
            elif done_calls is not None:
                error += f" after {done_calls} of {len(calls)} calls"
        stats: dict[str, Any] = {}
        constraint = self._active.pop(sample.id, None)
        if constraint is not None:
            stats = {"constraint": constraint.stats()}
            if stats["constraint"].get("unsatisfiable"):
                status = "unsatisfiable"
        return SampleResult(
            status=status,
            parsed=None if calls is None else _dumps(calls),
            execution=execution,
            verdicts=verdicts,
            error=None if error is None else scrub(error),
            stats=stats,
        )

    def _compat_reading(self, output: ModelOutput, record: Any, calls: list[dict] | None):
        """The answer as compat reads it: the run's parser on a direct answer; the calls the lenient
        reader (or a ReAct/tools episode) produced, grounded, otherwise."""
        from callbench.tracks.nested.compat_parsers import LENIENT, from_calls, parse

        if record is not None or self.parser == LENIENT:
            return from_calls(calls)
        return parse(output.text, self.parser)

    def _execute(self, task: NestedTask, calls: Any, deadline: float | None):
        """Run ``calls`` (decoded JSON) in the task's executor; None when they are not a non-empty
        list of well-formed calls (nothing is executed then)."""
        if not isinstance(calls, list) or not calls or call_problem(calls) is not None:
            return None
        try:
            parsed = [ToolCall.model_validate(c) for c in calls]
        except Exception:  # noqa: BLE001 - malformed calls are scored as such, not executed
            return None
        return self._executor_for(task).run(parsed, task.tools, deadline=deadline)

    @classmethod
    def aggregate(cls, samples: list[Sample], results: list[SampleResult], scoring: str) -> dict[str, Any]:
        if scoring not in SCORING_MODES:
            raise ConfigError(f"--scoring '{scoring}': choose from {', '.join(SCORING_MODES)}")
        scored = [_with_structure(r.verdicts[scoring], s) for s, r in zip(samples, results, strict=True)]
        summary = summarize(scored, scoring) if scored else {}
        by_domain = summary.pop("by_domain", {})
        by_length = summary.pop("by_length", {})
        # the paper's analyses; absent when verdicts stored without the gold structure are
        # re-aggregated without their tasks (an old run in a comparison)
        by_references = summary.pop("by_references", None)
        by_shape = summary.pop("by_shape", None)
        out: dict[str, Any] = {
            "metrics": summary,
            "by_domain": by_domain,
            "by_length": {str(k): v for k, v in by_length.items()},
        }
        if by_references is not None and by_shape is not None:
            out["by_references"], out["by_shape"] = by_references, by_shape
        if scoring == "compat":  # which published parser read the answers (stored with each verdict)
            parsers = sorted({str(v.get("parser", "not recorded")) for v in scored})
            if parsers:
                out["compat_parser"] = parsers[0] if len(parsers) == 1 else parsers
        cd = summarize_constraint_stats([(r.stats or {}).get("constraint", {}) for r in results])
        if cd is not None:
            out["constrained_decoding"] = cd
        return out

    def close(self) -> None:
        if self._executors is not None:
            self._executors.close()


def _with_structure(verdict: dict[str, Any], sample: Sample) -> dict[str, Any]:
    """``verdict`` with its gold sequence's structure (references, shape): a verdict stored before
    those keys existed gets them from the sample's task when it is loaded."""
    task = sample.payload
    if "gold_shape" in verdict or not isinstance(task, NestedTask):
        return verdict
    from callbench.tracks.nested.analysis import analyse

    structure = analyse(task.output)
    return {
        **verdict,
        "gold_references": structure.references,
        "gold_referencing_calls": structure.referencing_calls,
        "gold_shape": structure.shape,
    }


def _react_hash() -> str:
    from callbench.tracks.nested.react import react_templates_hash

    return react_templates_hash()


def _tools_hash() -> str:
    from callbench.tracks.nested.tools_mode import tools_prompt_hash

    return tools_prompt_hash()


# An executed call's output is stored for audit up to this size (as JSON); a larger one (at most the
# executor's value bound, 1 MB) keeps its beginning, so a long chain does not store megabytes per call.
MAX_STORED_OUTPUT_CHARS = 10_000


def _stored(value: Any) -> Any:
    """``value`` as stored with the sample: JSON-able, no lone surrogates, at most
    :data:`MAX_STORED_OUTPUT_CHARS` (else its JSON's beginning under ``__truncated__``)."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON (a tuple key, a huge int, ...): its repr
        try:
            value = repr(value)
        except ValueError:  # an int past Python's digit limit has no repr either
            value = f"<{type(value).__name__} that cannot be written out>"
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_STORED_OUTPUT_CHARS:
        return {"__truncated__": scrub(text[:1000]), "chars": len(text)}
    return scrub_value(value)


def _dumps(calls: list[dict]) -> str:
    return scrub(json.dumps(calls, ensure_ascii=False, default=repr))
