"""StateGen: sample programs, record oracles by execution, write task text, save a benchmark.

Output directory layout (one scenario per directory; ``run stateful --bench`` reads every
``tasks.jsonl`` below the path it is given)::

    OUT/tasks.jsonl      one task per line (see :func:`make_task`), appended as tasks are kept
    OUT/manifest.json    settings, kept/dropped counts with reasons, pairs covered, unreachable APIs

Resumable: attempt *i* uses its own seed (``seed * 100003 + i``), the energy sampler's pair counts
are rebuilt from the tasks already written, and kept tasks are never rewritten; a resume with
another seed, sampler, call range or text mode is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.models.base import ModelBackend
from callbench.tracks.stateful.complexity import analyse
from callbench.tracks.stateful.oracles import record
from callbench.tracks.stateful.program import render
from callbench.tracks.stateful.sampling import explore_pairs, sample_program, unreachable_apis
from callbench.tracks.stateful.scenario import Scenario
from callbench.tracks.stateful.writer import AgentResult, agents_text, template_text

TASK_SCHEMA_VERSION = 1


@dataclass
class GenerateOptions:
    n: int = 40
    seed: int = 0
    sampler: str = "energy"
    min_calls: int = 3
    max_calls: int = 6
    rounds: int = 3  # two-agent revision rounds
    max_attempts_factor: int = 5  # give up after n * factor attempts


def make_task(
    scenario: Scenario, task_id: str, program, code: str, cases, text: AgentResult, attempt_seed: int
) -> dict[str, Any]:
    metrics = analyse(code, scenario.runtime.call_roots)
    metrics["instruction_words"] = len(text.text.split())
    metrics["instruction_chars"] = len(text.text)
    return {
        "schema": TASK_SCHEMA_VERSION,
        "id": task_id,
        "scenario": scenario.name,
        "text": text.text,
        "text_source": text.source,
        "inputs": {v: program.input_words.get(v, v) for v in program.inputs},
        "result_var": program.result_var,
        "reference": code,
        "cases": [
            {"name": c.name, "preload": c.preload, "service_seed": c.service_seed, "expected": _oracle(o)}
            for c, o in cases
        ],
        "complexity": metrics,
        "pairs": [list(p) for p in program.pairs],
        "program": program.to_json(),
        "agents": {
            "rounds": text.rounds,
            "scores": text.scores,
            "writer": text.writer_transcript,
            "evaluator": text.evaluator_transcript,
        },
        "seed": attempt_seed,
    }


_SEED_STRIDE = 100003  # attempt seeds of --seed s are s * stride + attempt (attempt < stride)


def _check_resume(tasks_path: Path, done: list[dict[str, Any]], manifest: dict[str, Any], opts: GenerateOptions, writer) -> None:
    """A resumed generation must use the settings the existing tasks were made with."""
    for t in done:
        if not isinstance(t.get("seed"), int) or t["seed"] // _SEED_STRIDE != opts.seed:
            raise ConfigError(f"{tasks_path}: task {t.get('id')} was not generated with --seed {opts.seed}; use another --out")
    want = {"sampler": opts.sampler, "calls": [opts.min_calls, opts.max_calls], "text": "agents" if writer else "template"}
    for key, value in want.items():
        if key in manifest and manifest[key] != value:
            raise ConfigError(f"{tasks_path.parent / 'manifest.json'}: {key} was {manifest[key]!r}, now {value!r}; resume with the same settings or use another --out")


def _prune_dead_reads(program, scenario, counts: Counter) -> str | None:
    """Remove reads whose result nothing uses (a task would ask for a call no check can see).

    A read with no target object changes nothing later pairs depend on, so it is removed (and
    its pair uncounted); a read applied to an object whose result is unused would change the
    recorded transition pairs if removed, so such a program is rejected instead. Returns the
    reason to drop the program, or None."""
    from callbench.tracks.stateful.program import Branch, Call, Loop, iter_calls
    from callbench.tracks.stateful.writer import _referenced, _step_code

    def prune(steps: list) -> str | None:
        i = 0
        while i < len(steps):
            step = steps[i]
            if isinstance(step, Branch):
                for arm in (step.then, step.orelse):
                    reason = prune(arm)
                    if reason:
                        return reason
                i += 1
                continue
            is_last = i == len(steps) - 1
            later = " ".join(_step_code(x) for x in steps[i + 1 :])
            call = step.call if isinstance(step, Loop) else step
            api = scenario.api(call.api)
            if is_last or api.writes or _referenced(step.out, later):
                i += 1
                continue
            if isinstance(step, Loop) or api.target is not None:
                return "dead call"
            for pair in call.pairs:
                counts[tuple(pair)] -= 1
            del steps[i]
        return None

    reason = prune(program.steps)
    if reason is None:
        program.pairs = [p for c in iter_calls(program.steps) for p in c.pairs]
        if not program.steps or not isinstance(program.steps[-1], (Call, Loop, Branch)):
            return "dead call"
    return reason


def _drop_unused_inputs(program, code: str) -> None:
    """Inputs the program never reads (e.g. a second input tensor) are not part of the task."""
    unused = [v for v in program.inputs if not re.search(rf"\b{re.escape(v)}\b", code)]
    for v in unused:
        program.inputs.pop(v)
        program.alternatives.pop(v, None)
        program.input_words.pop(v, None)


def _oracle(o) -> dict[str, Any]:
    """The recorded outcome without its timing (so the same seed writes the same bytes)."""
    return {k: v for k, v in o.to_json().items() if k != "duration_s"}


def read_tasks(path: Path) -> list[dict[str, Any]]:
    tasks = []
    if not path.exists():
        return tasks
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                tasks.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{n}: not JSON ({exc.msg})") from None
    return tasks


def generate(
    scenario: Scenario,
    out: Path,
    opts: GenerateOptions,
    *,
    writer: ModelBackend | None = None,
    evaluator: ModelBackend | None = None,
    on_task: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Generate until ``opts.n`` tasks are kept; returns the manifest."""
    if (writer is None) != (evaluator is None):
        raise ConfigError("task text by agents needs both --writer and --evaluator (or neither: templates)")
    if opts.min_calls < 1 or opts.max_calls < opts.min_calls:
        raise ConfigError(f"--min-calls {opts.min_calls} --max-calls {opts.max_calls}: need 1 <= min-calls <= max-calls")
    out.mkdir(parents=True, exist_ok=True)
    tasks_path = out / "tasks.jsonl"
    done = read_tasks(tasks_path)
    for t in done:
        if t.get("scenario") != scenario.name:
            raise ConfigError(f"{tasks_path}: holds '{t.get('scenario')}' tasks; use another --out for '{scenario.name}'")
    counts: Counter = Counter(tuple(p) for t in done for p in t["pairs"])
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text("utf-8")) if manifest_path.exists() and done else {}
    _check_resume(tasks_path, done, manifest, opts, writer)
    dropped: Counter = Counter(manifest.get("dropped", {}))
    # attempts are numbered within the seed; the tasks themselves say how far a crashed run got
    attempt = max([int(manifest.get("attempts", 0))] + [t["seed"] - opts.seed * _SEED_STRIDE + 1 for t in done])
    kept = len(done)
    max_attempts = opts.n * opts.max_attempts_factor
    while kept < opts.n and attempt < max_attempts:
        attempt_seed = opts.seed * _SEED_STRIDE + attempt
        attempt += 1
        rng = Random(attempt_seed)
        trial = Counter(counts)  # only kept programs count as covered
        program = sample_program(
            scenario, rng, n_calls=rng.randint(opts.min_calls, opts.max_calls), sampler=opts.sampler, counts=trial
        )
        if program is None:
            dropped["no valid first call"] += 1
            continue
        dead = _prune_dead_reads(program, scenario, trial)
        if dead is not None:
            dropped[dead] += 1
            continue
        code = render(program, scenario)
        _drop_unused_inputs(program, code)
        rec = record(scenario, program, code, rng)
        if rec.dropped:
            dropped[rec.dropped.split(":")[0]] += 1
            continue
        task_id = f"{scenario.name}_{kept + 1:03d}"
        if writer is not None and evaluator is not None:
            text = asyncio.run(agents_text(program, code, scenario, writer, evaluator, rounds=opts.rounds, task_id=task_id))
        else:
            text = AgentResult(template_text(program, scenario), "template")
        task = make_task(scenario, task_id, program, code, rec.cases, text, attempt_seed)
        with tasks_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(task, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        counts = trial
        kept += 1
        manifest = _manifest(scenario, opts, kept, attempt, dropped, counts, writer, evaluator)
        _write_json(manifest_path, manifest)
        if on_task:
            on_task(kept, opts.n)
    reachable = explore_pairs(scenario)
    manifest = _manifest(scenario, opts, kept, attempt, dropped, counts, writer, evaluator)
    manifest["reachable_pairs_estimate"] = len(reachable | set(counts))
    manifest["unreachable_apis"] = unreachable_apis(scenario, reachable | set(counts))
    _write_json(manifest_path, manifest)
    return manifest


def _manifest(scenario, opts, kept, attempts, dropped, counts, writer, evaluator) -> dict[str, Any]:
    return {
        "scenario": scenario.name,
        "n_requested": opts.n,
        "n_kept": kept,
        "attempts": attempts,
        "dropped": dict(dropped),
        "seed": opts.seed,
        "sampler": opts.sampler,
        "calls": [opts.min_calls, opts.max_calls],
        "text": "agents" if writer else "template",
        "writer": writer.identity if writer else None,
        "evaluator": evaluator.identity if evaluator else None,
        "pairs_covered": len(counts),
    }


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", "utf-8")
    tmp.replace(path)
