"""StateGen: sample programs, record oracles by execution, write task text, save a benchmark.

Output directory layout (one scenario per directory; ``run stateful --bench`` reads every
``tasks.jsonl`` below the path it is given)::

    OUT/tasks.jsonl      one task per line (see :func:`make_task`), appended as tasks are kept
    OUT/manifest.json    settings, kept/dropped counts with reasons, pairs covered, unreachable APIs

Resumable: attempt *i* uses its own seed (``seed * 100003 + i``), the energy sampler's pair counts
are rebuilt from the tasks already written, and kept tasks are never rewritten; a resume with
another seed, sampler, call range, size targets or text mode is refused.
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
from callbench.files import read_text
from callbench.models.base import ModelBackend
from callbench.tracks.stateful.complexity import analyse
from callbench.tracks.stateful.coverage import apis_called
from callbench.tracks.stateful.oracles import record
from callbench.tracks.stateful.program import render
from callbench.tracks.stateful.sampling import explore_pairs, sample_program, unreachable_apis
from callbench.tracks.stateful.scenario import Scenario
from callbench.tracks.stateful.writer import AgentResult, agents_text, template_text

TASK_SCHEMA_VERSION = 1


# The paper's StateEval: 7.16 API calls and 5.03 bindings per task on average.
PAPER_CALLS = 7.16
PAPER_BINDINGS = 5.03


@dataclass
class GenerateOptions:
    n: int = 40
    seed: int = 0
    sampler: str = "energy"
    min_calls: int = 3  # bounds of a task's length (calls written in the program)
    max_calls: int = 12
    target_calls: float = PAPER_CALLS  # mean calls per task the set should have
    target_bindings: float = PAPER_BINDINGS  # mean bindings per task
    candidates: int = 120  # programs sampled per attempt; the one closest to the task's targets is kept
    rounds: int = 3  # two-agent revision rounds
    max_attempts_factor: int = 5  # give up after n * factor attempts


# candidate j of an attempt is sampled with _VARIANTS[j % len(_VARIANTS)]: (sampler length minus
# the task's length, data-flow boost (see sampling.choose), probability of an if/else). Low boosts
# leave results unused more often (fewer bindings, or reads pruned), high ones chain calls (more
# bindings, no dead computations); an if/else ends two paths, so it saves a binding.
_VARIANTS = tuple((off, reuse, p_branch) for p_branch in (0.6, 1.0) for reuse in (0.3, 1.0, 4.0, 30.0, 200.0) for off in (0, -1, 1))


def task_targets(opts: GenerateOptions, index: int, sums: tuple[float, float]) -> tuple[int, int]:
    """The (calls, bindings) task ``index`` (0-based) aims at.

    Calls: ``min_calls + Binomial(max_calls - min_calls, p)`` with ``p`` chosen so the mean is
    ``target_calls``; bindings: ``calls * target_bindings / target_calls``, rounded up or down at
    random so its mean is ``target_bindings``. Both are then moved (by at most 1) toward what the
    ``index`` tasks already kept lack (``sums``: their total calls and bindings), so the set's means
    stay on target when some targets are harder to reach. Seeded by (seed, index): a resumed
    generation draws the same targets."""
    rng = Random(f"targets:{opts.seed}:{index}")
    span = opts.max_calls - opts.min_calls
    p = (opts.target_calls - opts.min_calls) / span if span else 0.0
    calls = opts.min_calls + sum(rng.random() < p for _ in range(span))
    exact = calls * opts.target_bindings / opts.target_calls
    bindings = int(exact) + (rng.random() < exact - int(exact))

    def nudge(value: int, target: float, total: float) -> int:
        return value + max(-1, min(1, round(target * index - total)))

    calls = max(opts.min_calls, min(opts.max_calls, nudge(calls, opts.target_calls, sums[0])))
    return calls, max(0, nudge(bindings, opts.target_bindings, sums[1]))


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
    want = {
        "sampler": opts.sampler,
        "calls": [opts.min_calls, opts.max_calls],
        "targets": [opts.target_calls, opts.target_bindings],
        "text": "agents" if writer else "template",
    }
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
    for n, line in enumerate(read_text(path).split("\n"), 1):  # one-line error for non-UTF-8 files
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
    if not opts.min_calls <= opts.target_calls <= opts.max_calls:
        raise ConfigError(f"--target-calls {opts.target_calls}: must lie between --min-calls {opts.min_calls} and --max-calls {opts.max_calls}")
    if not 0 <= opts.target_bindings <= opts.target_calls or opts.candidates < 1:
        raise ConfigError(f"--target-bindings {opts.target_bindings}: need 0 <= target-bindings <= target-calls (and --candidates >= 1)")
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
    rejected: Counter = Counter(manifest.get("candidates_rejected", {}))  # candidates no attempt could use
    sums = (sum(t["complexity"]["n_calls"] for t in done), sum(t["complexity"]["binding_count"] for t in done))
    # attempts are numbered within the seed; the tasks themselves say how far a crashed run got
    attempt = max([int(manifest.get("attempts", 0))] + [t["seed"] - opts.seed * _SEED_STRIDE + 1 for t in done])
    kept = len(done)
    max_attempts = opts.n * opts.max_attempts_factor
    while kept < opts.n and attempt < max_attempts:
        attempt_seed = opts.seed * _SEED_STRIDE + attempt
        attempt += 1
        rng = Random(attempt_seed)
        want_calls, want_bindings = task_targets(opts, kept, sums)
        picked = _pick(scenario, opts, rng, counts, want_calls, want_bindings, rejected)
        if picked is None:
            dropped["no usable candidate"] += 1
            continue
        program, trial, code = picked
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
        sums = (sums[0] + task["complexity"]["n_calls"], sums[1] + task["complexity"]["binding_count"])
        manifest = _manifest(scenario, opts, kept, attempt, dropped, counts, writer, evaluator, rejected)
        _write_json(manifest_path, manifest)
        if on_task:
            on_task(kept, opts.n)
    reachable = explore_pairs(scenario)
    manifest = _manifest(scenario, opts, kept, attempt, dropped, counts, writer, evaluator, rejected)
    manifest["reachable_pairs_estimate"] = len(reachable | set(counts))
    manifest["unreachable_apis"] = unreachable_apis(scenario, reachable | set(counts))
    manifest["apis_called"] = apis_called(scenario, [t["reference"] for t in read_tasks(tasks_path)])  # as for --method llm
    manifest["api_coverage"] = round(len(manifest["apis_called"]) / len(scenario.apis), 4)
    _write_json(manifest_path, manifest)
    return manifest


def _pick(scenario: Scenario, opts: GenerateOptions, rng: Random, counts: Counter, calls: int, bindings: int, rejected: Counter):
    """Sample ``opts.candidates`` programs and return the one whose (calls, bindings) is closest to
    the task's targets (a call off counts twice a binding off) (ties: more transition pairs not covered yet, then the first), as
    ``(program, pair counts with it, code)``; None when every candidate was unusable. The
    selection only looks at the code (no execution), so it costs little."""
    best = None
    for j in range(opts.candidates):
        trial = Counter(counts)  # only kept programs count as covered
        off, reuse, p_branch = _VARIANTS[j % len(_VARIANTS)]
        program = sample_program(
            scenario, rng, n_calls=max(1, calls + off), sampler=opts.sampler, counts=trial, reuse=reuse, p_branch=p_branch
        )
        if program is None:
            rejected["no valid first call"] += 1
            continue
        dead = _prune_dead_reads(program, scenario, trial)
        if dead is not None:
            rejected[dead] += 1
            continue
        code = render(program, scenario)
        m = analyse(code, scenario.runtime.call_roots)
        new_pairs = len({tuple(p) for p in program.pairs} - {p for p, c in counts.items() if c > 0})
        score = (2 * abs(m["n_calls"] - calls) + abs(m["binding_count"] - bindings), -new_pairs)  # length first
        if best is None or score < best[0]:
            best = (score, program, trial, code)
    return None if best is None else best[1:]


def _manifest(scenario, opts, kept, attempts, dropped, counts, writer, evaluator, rejected=None) -> dict[str, Any]:
    return {
        "scenario": scenario.name,
        "n_requested": opts.n,
        "n_kept": kept,
        "attempts": attempts,
        "dropped": dict(dropped),
        "seed": opts.seed,
        "sampler": opts.sampler,
        "calls": [opts.min_calls, opts.max_calls],
        "targets": [opts.target_calls, opts.target_bindings],
        "candidates": opts.candidates,
        "candidates_rejected": dict(rejected or {}),
        "text": "agents" if writer else "template",
        "writer": writer.identity if writer else None,
        "evaluator": evaluator.identity if evaluator else None,
        "pairs_covered": len(counts),
    }


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", "utf-8")
    tmp.replace(path)
