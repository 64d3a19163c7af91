"""Task text: a deterministic template writer, and two LLM agents (writer + evaluator).

The text describes *what* the program does without code or API identifiers (``text_to_speech``,
``split(``; plain words such as "split" are fine); input variables are named (in backticks) but
never valued, and the text says what ``result`` holds.

Two-agent loop: the writer agent drafts the text from the reference program; the evaluator agent
scores fidelity, ambiguity, naturalness and redundancy (1-5) and approves or asks for a revision
with feedback; at most ``rounds`` drafts. Mechanical checks run before the evaluator (every input
named, no API or library names): a draft failing them goes back with that feedback. Any backend
can play either role. When the evaluator never approves, the template text is used and the task
records ``text_source = "template (agents not approved)"``; both transcripts are kept either way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from callbench.models.base import GenerationConfig, ModelBackend, ModelInput
from callbench.tracks.stateful.program import Call, Loop, Program, Step
from callbench.tracks.stateful.scenario import Scenario

CRITERIA = ("fidelity", "ambiguity", "naturalness", "redundancy")


def _phrase(call: Call, scenario: Scenario, program: Program) -> str:
    api = scenario.api(call.api)
    words: dict[str, str] = {}
    for p in api.params:
        text = call.described.get(p.name, call.args.get(p.name, p.name))
        if p.is_object:
            words[p.name] = f"`{text}`"
        elif p.literal:
            # a literal None means "no filter": prose says "any", never "None"
            words[p.name] = "any" if text in ("None", "null", "") else text
        else:
            words[p.name] = f"`{text}` ({program.input_words.get(text, p.describe or p.name)})"
    return api.phrase.format(**words)


def _referenced(name: str, later: str) -> bool:
    """Does code or text after this step use the variable ``name`` (``name`` or ``name[i]``)?"""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", later) is not None


def _step_code(step: Step) -> str:
    """Every name a step reads (its arguments, loop collection, branch probe), as text."""
    if isinstance(step, Call):
        return " ".join(step.args.values())
    if isinstance(step, Loop):
        return f"{step.collection} {_step_code(step.call)}"
    return " ".join([step.probe_code, *(_step_code(x) for x in (*step.then, *step.orelse))])


def _result_words(step: Call | Loop, scenario: Scenario) -> str:
    """What the result holds when it is not the API's object (e.g. a DELETE's status code)."""
    if isinstance(step, Loop):
        return ""
    api = scenario.api(step.api)
    if api.returns != "value":
        return ""
    if api.template.rstrip().endswith(".status_code"):
        return " (the HTTP status code of that request)"
    return " (the value that call returns)"


def _steps_text(steps: list[Step], scenario: Scenario, program: Program, result: str) -> list[str]:
    """One sentence per step. A step's result gets a name only when a later step (or the final
    assignment) uses it, so the text reads as instructions rather than dictated code."""
    out: list[str] = []
    last: Call | Loop | None = None
    for i, s in enumerate(steps):
        later = " ".join(_step_code(x) for x in steps[i + 1 :])
        if isinstance(s, Call):
            phrase = _phrase(s, scenario, program)
            if _referenced(s.out, later):
                out.append(_cap(f"{phrase} and keep the result as `{s.out}`."))
                last = s
            elif i == len(steps) - 1:  # the result itself: say so in the same sentence
                out.append(_cap(f"{phrase}, and set `{result}` to what it returns{_result_words(s, scenario)}."))
                last = None
            else:
                out.append(_cap(f"{phrase}."))
                last = s
        elif isinstance(s, Loop):
            out.append(
                f"For each item `{s.item}` of `{s.collection}`, {_phrase(s.call, scenario, program)}; "
                f"collect the results, in order, in a list `{s.out}`."
            )
            last = s
        else:
            then = " ".join(_steps_text(s.then, scenario, program, result))
            orelse = " ".join(_steps_text(s.orelse, scenario, program, result))
            out.append(f"If {s.probe_words} is greater than `{s.threshold}`: {then} Otherwise: {orelse}")
            last = None
    if last is not None:
        out.append(f"Finally set `{result}` to `{last.out}`{_result_words(last, scenario)}.")
    return out


def template_text(program: Program, scenario: Scenario) -> str:
    """The offline fallback: one sentence per step, in program order."""
    lines = _steps_text(program.steps, scenario, program, program.result_var)
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


@dataclass
class AgentResult:
    text: str
    source: str  # "template", "agents", "template (agents not approved)"
    rounds: int = 0
    scores: dict[str, Any] = field(default_factory=dict)
    writer_transcript: list[dict[str, str]] = field(default_factory=list)
    evaluator_transcript: list[dict[str, str]] = field(default_factory=list)


_WRITER_SYSTEM = (
    "You write programming tasks for a benchmark. Given a reference Python program that calls an API, "
    "write the task a developer would be given: describe what to do, step by step if needed, in plain English. "
    "Rules: no code, no function, method, endpoint or library names; refer to every input variable by its "
    "name in backticks (e.g. `text_1`) but never state its value; say exactly what the variable `{result}` must "
    "hold at the end. Answer with the task text only."
)
_EVALUATOR_SYSTEM = (
    "You review a programming task written from a reference program. Score 1-5 each: fidelity (a correct "
    "solution of the text behaves like the program), ambiguity (5 = only one reasonable reading), naturalness "
    "(5 = reads like a human request), redundancy (5 = nothing repeated or superfluous). Approve only if every "
    'score is at least 4. Answer with JSON only: {"fidelity": n, "ambiguity": n, "naturalness": n, '
    '"redundancy": n, "approve": true|false, "feedback": "what to change"}'
)


def mechanical_problems(text: str, program: Program, scenario: Scenario) -> list[str]:
    """Rule violations a reviewer would reject at once."""
    problems = []
    for var in program.inputs:
        if f"`{var}`" not in text and not re.search(rf"\b{re.escape(var)}\b", text):
            problems.append(f"the input variable `{var}` is not mentioned")
    for root in scenario.runtime.call_roots:
        if re.search(rf"\b{re.escape(root)}\s*\.", text):
            problems.append(f"the text contains code ('{root}.')")
    for api in scenario.apis:  # code-like mentions: `split(`, or identifiers such as text_to_speech
        if re.search(rf"\b{re.escape(api.name)}\s*\(", text) or ("_" in api.name and re.search(rf"\b{re.escape(api.name)}\b", text)):
            problems.append(f"the text names the API '{api.name}'")
    if not re.search(rf"\b{re.escape(program.result_var)}\b", text):
        problems.append(f"the text does not say what `{program.result_var}` holds")
    return problems


def parse_verdict(text: str) -> dict[str, Any] | None:
    """The evaluator's JSON: the first object in the answer that parses, or None."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            data, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    return None


def _score(value: Any) -> float | None:
    """1-5 scores as the reviewer wrote them (4, 4.5, "4"); None when unreadable."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


async def agents_text(
    program: Program,
    code: str,
    scenario: Scenario,
    writer: ModelBackend,
    evaluator: ModelBackend,
    *,
    rounds: int = 3,
    config: GenerationConfig | None = None,
    task_id: str = "task",
) -> AgentResult:
    config = config or GenerationConfig(max_tokens=400)
    fallback = template_text(program, scenario)
    inputs = ", ".join(f"`{v}` ({w})" for v, w in program.input_words.items()) or "none"
    wmsgs: list[dict[str, str]] = [
        {"role": "system", "content": _WRITER_SYSTEM.format(result=program.result_var)},
        {
            "role": "user",
            "content": f"API documentation:\n{scenario.runtime.doc}\n\nInput variables: {inputs}\n\n"
            f"Reference program:\n```python\n{code}```\n\nWrite the task.",
        },
    ]
    etranscript: list[dict[str, str]] = []
    scores: dict[str, Any] = {}
    for r in range(1, rounds + 1):
        draft = (await writer.generate(_inp(f"{task_id}/writer/{r}", wmsgs), config)).text.strip()
        wmsgs.append({"role": "assistant", "content": draft})
        problems = mechanical_problems(draft, program, scenario)
        if problems:
            feedback = "Fix: " + "; ".join(problems) + "."
        else:
            emsgs = [
                {"role": "system", "content": _EVALUATOR_SYSTEM},
                {
                    "role": "user",
                    "content": f"Reference program:\n```python\n{code}```\n\nTask text:\n{draft}\n\nYour JSON verdict:",
                },
            ]
            answer = (await evaluator.generate(_inp(f"{task_id}/evaluator/{r}", emsgs), config)).text
            etranscript.extend([*emsgs[1:], {"role": "assistant", "content": answer}])
            verdict = parse_verdict(answer)
            if verdict is None:
                feedback = "The reviewer's answer could not be read; make the text precise and natural."
            else:
                scores = {k: verdict.get(k) for k in CRITERIA}
                ok = verdict.get("approve") is True and all((_score(v) or 0) >= 4 for v in scores.values())
                if ok:
                    return AgentResult(draft, "agents", r, scores, wmsgs, etranscript)
                feedback = str(verdict.get("feedback") or "Improve the scores below 4.")
        wmsgs.append({"role": "user", "content": f"Revise the task. Reviewer feedback: {feedback}"})
    return AgentResult(fallback, "template (agents not approved)", rounds, scores, wmsgs, etranscript)


def _inp(sample_id: str, messages: list[dict[str, str]]) -> ModelInput:
    prompt = "\n\n".join(m["content"] for m in messages)
    return ModelInput(sample_id=sample_id, prompt=prompt, messages=messages)
