"""The LLM-only generation baseline the StateGen paper compares with: a model is asked directly for
a task text and its reference program (``prompts/llm_only.md``), with no state model, no trace
sampler and no writer agents. The program then goes through the same oracle check as StateGen's
references: it runs in the program sandbox on the scenario's starting state, twice; an answer
without a parseable program, with a syntax error, without an API call, failing, not setting the
result or giving two different outcomes is discarded and counted by reason. Kept tasks use the
benchmark's task format (one ``base`` case; ``text_source: "llm-only"``), so ``run stateful
--bench`` and ``analyze complexity`` read them as they read StateGen's.

Coverage: transition pairs need the state model's view of each call, which a free-form program
does not have, so the manifest reports the scenario APIs the kept programs call (matched by each
API's call head, e.g. ``api.text_to_speech(``; the session scenario's REST calls are told apart by
method only) next to the validity rate.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from importlib import resources
from pathlib import Path
from random import Random
from typing import Any

from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput
from callbench.tracks.stateful.complexity import analyse
from callbench.tracks.stateful.coverage import apis_called
from callbench.tracks.stateful.execution import Case, execute, judge
from callbench.tracks.stateful.generator import (
    _SEED_STRIDE,
    TASK_SCHEMA_VERSION,
    GenerateOptions,
    _oracle,
    _write_json,
    read_tasks,
)
from callbench.tracks.stateful.scenario import Scenario

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.S | re.I)


def prompt_template() -> str:
    return resources.files("callbench.tracks.stateful").joinpath("prompts", "llm_only.md").read_text("utf-8")


def build_prompt(scenario: Scenario, preload_words: dict[str, str], service_seed: Any, target_calls: float) -> str:
    preloaded = "\n".join(f"- `{v}`: {w}" for v, w in preload_words.items()) or "- (none besides what the documentation names)"
    state = ""
    if service_seed is not None:
        seed_json = json.dumps(service_seed, sort_keys=True)
        state = "Starting state of the service (JSON):\n" + (seed_json[:3000] + (" ..." if len(seed_json) > 3000 else ""))
    return prompt_template().format(
        scenario_description=scenario.description,
        doc=scenario.runtime.doc,
        preloaded=preloaded,
        state=state,
        target_calls=f"{target_calls:g}",
        result_var=scenario.result_var,
    )


def parse_answer(text: str) -> tuple[str, str] | None:
    """(task text, program) from an answer in the prompt's form; None when either is missing."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return None
    code = max(blocks, key=len).strip() + "\n"
    before = text.split("```", 1)[0]
    task = before.split("TASK:", 1)[1] if "TASK:" in before else before
    task = " ".join(task.split())
    return (task, code) if task else None


def _check(scenario: Scenario, code: str, case: Case):
    """(outcome, None) for a valid reference, else (None, reason)."""
    try:
        metrics = analyse(code, scenario.runtime.call_roots)
    except SyntaxError:
        return None, "syntax error"
    if metrics["n_calls"] == 0:
        return None, "no API call"
    first = execute(scenario, code, case)
    if first.status != "ok":
        return None, f"fails: {first.status}"
    if not first.result_set:
        return None, f"does not set {scenario.result_var}"
    verdict, _ = judge(scenario, first, execute(scenario, code, case))
    if verdict != "pass":
        return None, "not deterministic"
    return first, None


def generate_llm(scenario: Scenario, out: Path, opts: GenerateOptions, writer: ModelBackend, *, on_task=None) -> dict[str, Any]:
    """Ask ``writer`` for tasks until ``opts.n`` are valid (at most ``n * max_attempts_factor``
    answers); returns the manifest (validity, invalid answers by reason, APIs called)."""
    out.mkdir(parents=True, exist_ok=True)
    tasks_path = out / "tasks.jsonl"
    done = read_tasks(tasks_path)
    if any(t.get("text_source") != "llm-only" or t.get("scenario") != scenario.name for t in done):
        raise ConfigError(f"{tasks_path}: holds tasks not made by --method llm for '{scenario.name}'; use another --out")
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text("utf-8")) if manifest_path.exists() and done else {}
    invalid: Counter = Counter(manifest.get("invalid", {}))
    attempt = max([int(manifest.get("attempts", 0))] + [t["seed"] - opts.seed * _SEED_STRIDE + 1 for t in done])
    kept = len(done)
    codes = [t["reference"] for t in done]

    def write_manifest() -> dict[str, Any]:
        called = apis_called(scenario, codes)
        m = {
            "scenario": scenario.name,
            "method": "llm",
            "n_requested": opts.n,
            "n_kept": kept,
            "attempts": attempt,
            "validity": round(kept / attempt, 4) if attempt else None,
            "invalid": dict(invalid),
            "seed": opts.seed,
            "writer": writer.identity,
            "apis_called": called,
            "api_coverage": round(len(called) / len(scenario.apis), 4),
        }
        _write_json(manifest_path, m)
        return m

    while kept < opts.n and attempt < opts.n * opts.max_attempts_factor:
        attempt_seed = opts.seed * _SEED_STRIDE + attempt
        attempt += 1
        init = scenario.initial(Random(attempt_seed))
        words = {v: init.inputs.get(v, v) for v in init.preload}
        prompt = build_prompt(scenario, words, init.service_seed, opts.target_calls)
        inp = ModelInput(sample_id=f"{scenario.name}/llm/{attempt_seed}", prompt=prompt, messages=[{"role": "user", "content": prompt}])
        config = GenerationConfig(max_tokens=1500, temperature=0.8, seed=attempt_seed)
        answer = asyncio.run(writer.generate(inp, config)).text
        parsed = parse_answer(answer)
        if parsed is None:
            invalid["no task text and program"] += 1
            continue
        text, code = parsed
        case = Case("base", dict(init.preload), init.service_seed)
        outcome, why = _check(scenario, code, case)
        if outcome is None:
            invalid[why] += 1
            continue
        metrics = analyse(code, scenario.runtime.call_roots)
        metrics["instruction_words"] = len(text.split())
        metrics["instruction_chars"] = len(text)
        task = {
            "schema": TASK_SCHEMA_VERSION,
            "id": f"{scenario.name}_llm_{kept + 1:03d}",
            "scenario": scenario.name,
            "text": text,
            "text_source": "llm-only",
            "inputs": words,
            "result_var": scenario.result_var,
            "reference": code,
            "cases": [{"name": "base", "preload": case.preload, "service_seed": case.service_seed, "expected": _oracle(outcome)}],
            "complexity": metrics,
            "pairs": [],
            "answer": answer,
            "seed": attempt_seed,
        }
        with tasks_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(task, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        kept += 1
        codes.append(code)
        write_manifest()
        if on_task:
            on_task(kept, opts.n)
    return write_manifest()
