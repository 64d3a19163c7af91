"""StateEval: models write a program from the task text; it runs against a fresh service per case.

A model gets the scenario's API documentation, the names (not values) of the preloaded input
variables and the task text, and answers with Python. The program passes a task when every test
case's run matches the reference's recorded result and state; the first failing case names the
error class (no_code, syntax, runtime, wrong_result, wrong_state, timeout, sandbox_violation).
``--samples n`` draws n programs per task (seed varied per sample) for pass@k.

``--mode mcp`` evaluates tool-calling agents instead: no program, one tool-calling episode per test
case against the scenario's MCP server (:mod:`callbench.tracks.stateful.mcp_mode`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from callbench.errors import ConfigError, DataError
from callbench.models.base import GenerationConfig, ModelInput, ModelOutput
from callbench.sandbox import boundary
from callbench.tracks.base import Sample, SampleResult, Track
from callbench.tracks.stateful.execution import Case, Outcome, default_limits, execute, judge
from callbench.tracks.stateful.metrics import summarize
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.templates import load_templates, templates_digest
from callbench.untrusted import UntrustedInputError, clean_text

PROMPT_VERSION = "v1"
_FILES = ("system.md", "user.md")
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
MODES = ("program", "mcp")
_REQUIRED = ("id", "scenario", "text", "inputs", "result_var", "reference", "cases", "complexity")


def builtin_bench() -> Path:
    """The committed benchmark (40 tasks per scenario, template text)."""
    return Path(str(resources.files("callbench.tracks.stateful").joinpath("data", "stateval_v1")))


def bench_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError(f"{path}: no such benchmark file or directory")
    from callbench.tracks.stateful.published import detect

    published = detect(path)  # the published StateEval's layout (rows / evaluator files)
    if published:
        return published
    files = sorted(path.rglob("tasks.jsonl"))
    if not files:
        raise DataError(f"{path}: no tasks.jsonl below it (make one with 'callbench generate stateful')")
    return files


_OUTCOME_FIELDS = {f.name for f in dataclasses.fields(Outcome)}


# -- the task file's schema: every field a task may have, with its type ---------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


_NonNegative = Annotated[float, Field(ge=0)]


class _Expected(_Strict):
    """The reference's recorded run (:class:`Outcome` without its timing). Only a run that ended
    ``ok`` is an oracle: the judge compares a program's result and state with it, never its status."""

    status: Literal["ok"]
    result: Any = None
    result_set: bool = False
    state: Any = None
    writes: Annotated[int, Field(ge=0)] | None = None
    error: str | None = None
    duration_s: _NonNegative = 0.0


class _Case(_Strict):
    name: Annotated[str, Field(min_length=1)]
    preload: dict[str, Any]
    service_seed: Any = None  # its type depends on the scenario's service: _check_seeds
    expected: _Expected


class _Task(_Strict):
    id: Annotated[str, Field(min_length=1)]
    scenario: Annotated[str, Field(min_length=1)]
    text: str
    inputs: dict[str, str]  # variable -> description
    result_var: str
    reference: str
    cases: Annotated[list[_Case], Field(min_length=1)]
    complexity: dict[str, Any]
    # written by callbench's generators (generator.py, llm_only.py)
    schema_version: int | None = Field(None, alias="schema")
    text_source: str | None = None
    pairs: list[list[str]] | None = None
    program: dict[str, Any] | None = None
    agents: dict[str, Any] | None = None
    seed: int | None = None
    answer: str | None = None
    # written by the published StateEval's conversion (published.py): how its evaluator judges
    source: dict[str, Any] | None = None
    doc: str | None = None
    result_epilogue: str | None = None
    tolerance: Annotated[list[_NonNegative], Field(min_length=2, max_length=2)] | None = None  # [rtol, atol]
    unordered_result: bool = False


_MODELS_AT = {(): _Task, ("cases",): _Case, ("cases", "expected"): _Expected}


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _schema_problem(exc: ValidationError) -> str:
    """The first schema violation as ``field: what is wrong``."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    path = _field_path(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _MODELS_AT.get(tuple(p for p in loc[:-1] if isinstance(p, str)), _Task)
        known = sorted(f.alias or name for name, f in model.model_fields.items())
        return f"{path}: unknown field (known: {', '.join(known)})"
    if kind == "literal_error" and loc[-1] == "status":
        return (
            f"{path}: {_shown(err['input'])} is not 'ok' (the reference's recorded run is the oracle: "
            "a task whose reference fails cannot be judged)"
        )
    msg = err["msg"]
    msg = msg[:1].lower() + msg[1:]
    if kind == "missing":
        return f"{path}: missing"
    return f"{path}: {msg}, got {_shown(err['input'])}"


def _lone_surrogate(task: dict[str, Any], where: str) -> str | None:
    """The first string (or key) of ``task`` that cannot be written as UTF-8, as a one-line
    problem; None when every string can. Iterative: the task was depth-checked when read."""
    stack: list[tuple[str, Any]] = [(k, v) for k, v in reversed(list(task.items()))]
    while stack:
        path, node = stack.pop()
        try:
            if isinstance(node, str):
                clean_text(node, what=f"{where}: {path}")
            elif isinstance(node, dict):
                for k in node:
                    clean_text(str(k), what=f"{where}: {path} (a key)")
                stack.extend((f"{path}.{k}", v) for k, v in reversed(list(node.items())))
            elif isinstance(node, list):
                stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(node))))
        except UntrustedInputError as exc:
            return str(exc)
    return None


def _check_seeds(where: str, t: dict[str, Any]) -> None:
    """Each case's ``service_seed`` as the scenario's service takes it: the session service a
    list of sessions (checked as the service checks them), a spec's mock an integer, a scenario
    without a service (its setup reads the seed as ``__initial__``) a snapshot object."""
    scenario = get_scenario(t["scenario"])
    service = scenario.runtime.service
    for i, c in enumerate(t["cases"]):
        seed = c.get("service_seed")
        if seed is None:
            continue
        field = f"{where}: cases[{i}].service_seed"
        kind = type(seed).__name__
        if service == "session":
            from callbench.tracks.stateful.services.session_server import _seed_rows

            if not isinstance(seed, list):
                raise DataError(f"{field}: the session service is seeded with a list of sessions ({{source, type, data}}), not a {kind}")
            try:
                _seed_rows(seed)
            except ValueError as exc:
                raise DataError(f"{field}: {exc}") from None
        elif service == "mock":
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise DataError(f"{field}: a spec's mock service is seeded with an integer, not a {kind}")
        elif not isinstance(seed, dict):
            raise DataError(f"{field}: scenario '{scenario.name}' starts from a snapshot object (or null), not a {kind}")


def _check_task(f: Path, n: int, t: Any) -> None:
    """One-line DataError naming the file, task and field of a malformed row: a missing or
    unknown field, a value of the wrong type, an expected run that is not ``ok``, a text that
    cannot be written as UTF-8."""
    if not isinstance(t, dict):
        raise DataError(f"{f}: task {n}: a task must be a JSON object, not {type(t).__name__}")
    missing = [k for k in _REQUIRED if k not in t]
    if missing:
        raise DataError(f"{f}: task {n}: missing field '{missing[0]}'")
    where = f"{f}: task {t['id']}"
    if not isinstance(t["inputs"], dict):
        raise DataError(f"{where}: field 'inputs' must be an object (variable -> description)")
    if not isinstance(t["cases"], list) or not t["cases"]:
        raise DataError(f"{where}: field 'cases' must be a non-empty list")
    for i, c in enumerate(t["cases"]):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("preload"), dict):
            raise DataError(f"{where}: cases[{i}] needs 'name' (string) and 'preload' (object)")
        exp = c.get("expected")
        if not isinstance(exp, dict) or "status" not in exp or not set(exp) <= _OUTCOME_FIELDS:
            raise DataError(f"{where}: cases[{i}].expected must be an object with 'status' and only {sorted(_OUTCOME_FIELDS)}")
    if not isinstance(t["complexity"], dict):
        raise DataError(f"{where}: field 'complexity' must be an object")
    if not isinstance(t["id"], str):
        where = f"{f}: task {n}"
    try:
        _Task.model_validate(t)
    except ValidationError as exc:
        raise DataError(f"{where}: {_schema_problem(exc)}") from None
    bad_text = _lone_surrogate(t, where)
    if bad_text:
        raise DataError(bad_text)
    for name in (t["result_var"], *t["inputs"]):
        if not name.isidentifier():
            field = "result_var" if name == t["result_var"] else f"inputs.{name}"
            raise DataError(f"{where}: {field}: {name!r} is not a Python variable name")


def read_bench_file(path: Path) -> list[Any]:
    """The rows of a ``tasks.jsonl``, each parsed within :mod:`callbench.untrusted`'s limits (a
    row nested 100,000 deep is that line's one-line error, not a RecursionError)."""
    from callbench.files import read_text
    from callbench.tracks.stateful.published import parse_json

    if not path.exists():
        return []
    rows = []
    for n, line in enumerate(read_text(path).split("\n"), 1):  # one-line error for non-UTF-8 files
        if line.strip():
            rows.append(parse_json(line, f"{path}:{n}"))
    return rows


def load_bench(path: Path, *, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    from callbench.tracks.stateful import published

    files = published.detect(path)
    if files:  # converted (and its oracles recorded) by running each reference; skips are listed
        tasks, _skipped = published.load(path, files, timeout_s=timeout_s)
        for n, t in enumerate(tasks, 1):
            _check_task(path, n, t)
            _check_seeds(f"{path}: task {t['id']}", t)
        return tasks
    from callbench.tracks.stateful.spec_bench import register_bench

    tasks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for f in bench_files(path):
        register_bench(f)  # a benchmark made from an OpenAPI spec: its scenario (and mock) from openapi/
        for n, t in enumerate(read_bench_file(f), 1):
            _check_task(f, n, t)
            if t["id"] in seen:
                raise DataError(f"{f}: task {t['id']}: id used twice in the benchmark")
            seen.add(t["id"])
            get_scenario(t["scenario"])  # unknown scenario -> one-line ConfigError
            _check_seeds(f"{f}: task {t['id']}", t)
            tasks.append(t)
    return tasks


def extract_code(text: str, *, completion: bool = False) -> str:
    """The program in a model answer: the longest fenced block, else the whole answer.

    A completion continues a prompt that ends inside an open fence, so its code runs up to the
    first closing fence (prose after it is dropped)."""
    if completion:
        return extract_code(f"```python\n{text}")
    blocks = _FENCE.findall(text)
    if blocks:
        return max(blocks, key=len).strip() + "\n"
    return text.strip() + ("\n" if text.strip() else "")


@dataclass
class StatefulOptions:
    bench: str | None = None
    samples: int = 1
    k: tuple[int, ...] = ()
    scenarios: tuple[str, ...] = ()
    timeout_s: float = 20.0
    temperature: float | None = None  # default: 0 for one sample, 0.8 for several
    mode: str = "program"  # "program" (the model writes code) or "mcp" (a tool-calling agent over MCP)
    max_steps: int = 12  # mcp: most model turns per test case


class StatefulTrack(Track):
    name = "stateful"
    scoring_modes = ("strict",)
    evaluate_in_thread = True  # each case starts its own sandbox process (and service)
    evaluation_pool = "concurrency"  # evaluations mostly wait for those processes
    # An instruct model run in-process (llama.cpp, transformers) in auto mode gets its chat
    # template: in completion mode instruct GGUFs repeat themselves to the token limit (issue 31).
    # The chat answer's program is read from its code fence; --mode completion keeps a completion.
    chat_template = True

    def __init__(self, options: StatefulOptions | None = None, **kw: Any):
        self.options = options or StatefulOptions(**kw)
        if self.options.samples < 1:
            raise ConfigError("--samples must be >= 1")
        bad = [k for k in self.options.k if k < 1 or k > self.options.samples]
        if bad:
            raise ConfigError(f"--k {bad[0]}: each k must be between 1 and --samples ({self.options.samples})")
        if self.options.mode not in MODES:
            raise ConfigError(f"--mode {self.options.mode}: choose from {', '.join(MODES)}")
        if self.options.max_steps < 1:
            raise ConfigError("--max-steps must be >= 1")
        if not self.options.timeout_s > 0:
            raise ConfigError(f"--timeout {self.options.timeout_s}: must be > 0 seconds")
        if self.options.temperature is not None and self.options.temperature < 0:
            raise ConfigError(f"--temperature {self.options.temperature}: must be >= 0")
        if self.options.bench and self.options.scenarios:  # spec-made scenarios are named by their benchmark
            from callbench.tracks.stateful.spec_bench import register_bench

            for f in bench_files(Path(self.options.bench)):
                register_bench(f)
        for s in self.options.scenarios:
            get_scenario(s)
            if self.options.mode == "mcp":
                from callbench.tracks.stateful.mcp_mode import check_scenario

                check_scenario(s)
        self.path = Path(self.options.bench) if self.options.bench else builtin_bench()
        self.templates = load_templates("callbench.tracks.stateful.prompts", PROMPT_VERSION, _FILES)
        self._samples: list[Sample] = []

    # -- data
    def load_samples(self) -> list[Sample]:
        tasks = load_bench(self.path, timeout_s=self.options.timeout_s)
        if self.options.scenarios:
            tasks = [t for t in tasks if t["scenario"] in self.options.scenarios]
        from callbench.tracks.stateful.scenarios import check_extras

        # a scenario whose extra is missing fails here, before any sample is scored against the model
        check_extras({t["scenario"] for t in tasks})
        if self.options.mode == "mcp":
            from callbench.tracks.stateful.mcp_mode import check_scenario

            for t in tasks:
                check_scenario(t["scenario"], t["id"])
                if t.get("doc"):  # a published voice task: its API is StateGen's functions, not the server's tools
                    raise ConfigError(
                        f"--mode mcp: task {t['id']} calls StateGen's own voice functions (published StateEval), "
                        "which callbench's MCP server does not offer; run it with --mode program"
                    )
        n = self.options.samples
        out = []
        for t in tasks:
            for i in range(n):
                out.append(Sample(id=t["id"] if n == 1 else f"{t['id']}#{i}", group=t["scenario"], payload=(t, i), task=t["id"]))
        self._samples = out
        return out

    def fingerprint(self) -> dict[str, Any]:
        """Generation. A program depends on its prompt only, so the prompts' digest stands for the
        benchmark (whose cases and references are then scoring inputs); an MCP episode runs against
        the scenario's service, so there the benchmark and its limits are generation inputs."""
        fp: dict[str, Any] = {
            "prompt_version": PROMPT_VERSION,
            "prompt_hash": templates_digest(self.templates),
            "samples": self.options.samples,
            "scenarios": list(self.options.scenarios),
        }
        if self.options.mode == "mcp":
            return {**fp, **self._judging(), **self._mcp_fingerprint()}
        return {**fp, "prompts_sha256": self._prompts_digest()}

    def scoring_fingerprint(self) -> dict[str, Any]:
        return {} if self.options.mode == "mcp" else self._judging()

    def _judging(self) -> dict[str, Any]:
        h = hashlib.sha256()
        for f in bench_files(self.path):  # the content of every tasks.jsonl (cases, references)
            h.update(f.read_bytes())
        return {
            "bench_sha256": h.hexdigest()[:16],
            "timeout_s": self.options.timeout_s,  # a longer limit can turn a timeout into a pass
            # programs judged without the OS sandbox are not comparable with sandboxed ones
            "sandbox": boundary.isolation(),
        }

    def _prompts_digest(self) -> str:
        """Digest of every program prompt (completion and chat form) of the selected scenarios."""
        h = hashlib.sha256()
        for sample in self._samples or self.load_samples():
            if sample.payload[1]:
                continue  # the other draws of a task have its prompt
            inp = self.build_input(sample)
            h.update(json.dumps([inp.prompt, inp.messages], sort_keys=True, ensure_ascii=False).encode())
        return h.hexdigest()[:16]

    def _mcp_fingerprint(self) -> dict[str, Any]:
        from callbench.tracks.stateful.mcp_mode import mcp_prompt_hash

        return {"mode": "mcp", "max_steps": self.options.max_steps, "mcp_prompt_hash": mcp_prompt_hash()}

    def default_generation(self, mode: str) -> GenerationConfig:
        temp = self.options.temperature
        if temp is None:
            temp = 0.0 if self.options.samples == 1 else 0.8
        stop = ("```",) if mode == "completion" else ()  # the prompt opened the code fence
        return GenerationConfig(max_tokens=768, temperature=temp, top_p=0.95 if temp > 0 else 1.0, stop=stop)

    # -- prompting
    def build_input(self, sample: Sample) -> ModelInput:
        task, _ = sample.payload
        scenario = get_scenario(task["scenario"])
        if self.options.mode == "mcp":
            from callbench.tracks.stateful.mcp_mode import case_messages, readable_prompt

            return ModelInput(
                sample_id=sample.id,
                prompt=readable_prompt(scenario, task),
                messages=case_messages(scenario, task, task["cases"][0]),
                metadata={"scenario": task["scenario"], "mode": "mcp"},
            )
        inputs = "\n".join(f"- `{v}`: {w}" for v, w in task["inputs"].items()) or "(none)"
        system = self.templates["system.md"].format(result_var=task["result_var"]).strip()
        doc = task.get("doc") or scenario.runtime.doc  # a published voice task documents StateGen's own API
        user = self.templates["user.md"].format(
            doc=doc.strip(), inputs=inputs, task=task["text"], result_var=task["result_var"]
        )
        prompt = f"{system}\n\n{user}\n```python\n"
        return ModelInput(
            sample_id=sample.id,
            prompt=prompt,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            reference=task["reference"],
            metadata={"scenario": task["scenario"]},
        )

    async def interact(self, sample: Sample, inp: ModelInput, model: Any, config: Any) -> ModelOutput:
        _, i = sample.payload
        if i and isinstance(config, GenerationConfig):
            config = dataclasses.replace(config, seed=config.seed + i)  # distinct draws for pass@k
        if self.options.mode == "mcp":
            from callbench.tracks.stateful.mcp_mode import mcp_interact

            task, _ = sample.payload
            return await mcp_interact(
                get_scenario(task["scenario"]),
                task,
                inp,
                model,
                config,
                max_steps=self.options.max_steps,
                timeout_s=self.options.timeout_s,
            )
        return await model.generate(inp, config)

    # -- scoring
    def evaluate(self, sample: Sample, output: ModelOutput) -> SampleResult:
        task, _ = sample.payload
        scenario = get_scenario(task["scenario"])
        if self.options.mode == "mcp":
            from callbench.tracks.stateful.mcp_mode import judge_episodes

            verdict, reason, cases, parsed = judge_episodes(scenario, task, output)
            return self._result(task, verdict, reason, cases, parsed)
        code = extract_code(output.text, completion=output.mode == "completion")
        # a published task may read the result as upstream does (a one-element tensor as its number)
        run_code = code.rstrip("\n") + "\n" + task["result_epilogue"] if code.strip() and task.get("result_epilogue") else code
        limits = default_limits(scenario, timeout_s=self.options.timeout_s)
        cases = []
        verdict, reason = "pass", None
        for c in task["cases"]:
            expected = Outcome(**c["expected"])
            actual = execute(scenario, run_code, Case(c["name"], c["preload"], c.get("service_seed")), limits)
            v, why = judge(scenario, expected, actual, task.get("tolerance"), bool(task.get("unordered_result")))
            cases.append({"case": c["name"], "verdict": v, "reason": why, "duration_s": round(actual.duration_s, 3)})
            if v != "pass":
                verdict, reason = v, f"case {c['name']}: {why}" if why else f"case {c['name']}"
                break  # later cases cannot turn a failure into a pass
        return self._result(task, verdict, reason, cases, code)

    def _result(self, task: dict[str, Any], verdict: str, reason: str | None, cases: list[dict[str, Any]], parsed: str) -> SampleResult:
        passed = verdict == "pass"
        row = {
            "task": task["id"],
            "passed": passed,
            "error_class": None if passed else verdict,
            "complexity": task["complexity"],
            "cases": cases,
            "k": list(self.options.k) or [self.options.samples],
        }
        return SampleResult(
            status="ok" if passed else verdict,
            parsed=parsed,
            execution=cases,
            verdicts={"strict": row},
            error=reason,
        )

    @classmethod
    def aggregate(cls, samples: list[Sample], results: list[SampleResult], scoring: str) -> dict[str, Any]:
        if scoring != "strict":
            raise ConfigError(f"--scoring '{scoring}': the stateful track has strict scoring only")
        rows = [r.verdicts["strict"] for r in results]
        ks = {k for r in rows for k in r.get("k", [1])}
        groups: dict[str, list[dict[str, Any]]] = {}
        for s, r in zip(samples, rows, strict=True):
            groups.setdefault(s.group, []).append(r)
        return {
            "metrics": summarize(rows, ks),
            "by_scenario": {g: summarize(rs, ks) for g, rs in sorted(groups.items())},
        }
