"""The LLM task writer and its reviewer (``--writer``/``--reviewer``): any backend for either role.

The loop follows the stateful track's two-agent writer (:mod:`callbench.tracks.stateful.writer`):
the writer drafts a task text from the operation's documentation and the gold request; every
draft first goes through the deterministic checks (:func:`~.text.text_problems`: not empty, no
code; :func:`~.text.missing_values`: every value the request carries stated, or named where a
starter argument holds it); a draft that fails goes back to the writer with what is missing. A
draft that passes goes to the reviewer, who answers JSON (``complete``, ``unambiguous``,
``natural`` 1-5, ``approve``, ``feedback``); approval needs ``approve``, ``complete`` and
``unambiguous`` true and ``natural`` >= 3. At most ``rounds`` drafts; both transcripts are kept.
Paraphrase k > 0 of a request also shows the writer the texts already written for it and rejects
a repeat.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from callbench.models.base import GenerationConfig, ModelBackend, ModelInput
from callbench.tracks.stateful.writer import parse_verdict
from callbench.tracks.webapi.synthesis.gold import GoldRequest
from callbench.tracks.webapi.synthesis.text import missing_values, render_value, text_problems

_WRITER_SYSTEM = (
    "You write tasks for a benchmark of code that calls web APIs. Given an API operation and the exact HTTP "
    "request a correct solution sends, write the task a developer would be given, as one short paragraph of "
    "plain English. Rules: state every value listed under 'Values' exactly as written there (strings verbatim, "
    "numbers as digits); where a value is held by a named argument, name the argument in backticks instead; "
    "say what the request does in the API's own terms; no code, no URLs, no HTTP method names, no JSON, and "
    "nothing about authentication (the credential is handled elsewhere). Answer with the task text only."
)
_REVIEWER_SYSTEM = (
    "You review a task text written for an HTTP request. Judge: complete (every value of the request is stated "
    "or clearly derivable from the text), unambiguous (only this request fulfils the text), natural (1-5: 5 = "
    "reads like a developer's request). Answer with JSON only: {\"complete\": true|false, \"unambiguous\": "
    "true|false, \"natural\": n, \"approve\": true|false, \"feedback\": \"what to change\"}"
)


@dataclass
class TextResult:
    text: str | None  # None: no draft was approved
    source: str  # "agents" or "not approved"
    rounds: int = 0
    verdict: dict[str, Any] = field(default_factory=dict)
    writer_transcript: list[dict[str, str]] = field(default_factory=list)
    reviewer_transcript: list[dict[str, str]] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)  # why each rejected draft was rejected


def _values_block(gold: GoldRequest, arguments: dict[str, str]) -> str:
    lines = []
    for f in gold.facts:
        if f.location == "path" and f.name in arguments:
            lines.append(f"- path parameter {f.name}: held by the argument `{arguments[f.name]}`")
        else:
            lines.append(f"- {f.location} {f.name}: {render_value(f.value)}")
    return "\n".join(lines) or "- (none: the request carries no values)"


def _request_block(gold: GoldRequest) -> str:
    cfg = {k: v for k, v in gold.config.items() if k != "headers"}
    return json.dumps(cfg, ensure_ascii=False, indent=1)[:3000]


def clean_draft(text: str) -> str:
    """A writer's answer as a one-line task: quotes, a 'Task:' label and blank lines dropped."""
    t = text.strip()
    t = re.sub(r"^(?:task(?: text)?|here is the task(?: text)?)\s*:\s*", "", t, flags=re.IGNORECASE)
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1]
    return " ".join(t.split())


def _inp(sample_id: str, messages: list[dict[str, str]]) -> ModelInput:
    messages = [dict(m) for m in messages]  # a snapshot: the conversation goes on after this turn
    return ModelInput(sample_id=sample_id, prompt="\n\n".join(m["content"] for m in messages), messages=messages)


async def write_text(
    gold: GoldRequest,
    writer: ModelBackend,
    reviewer: ModelBackend,
    *,
    api_title: str,
    arguments: dict[str, str] | None = None,
    previous: list[str] | None = None,
    rounds: int = 3,
    task_id: str = "task",
    config: GenerationConfig | None = None,
) -> TextResult:
    arguments = arguments or {}
    previous = previous or []
    config = config or GenerationConfig(max_tokens=300)
    op = gold.operation
    doc = " ".join(f"{op.summary or ''} {op.description or ''}".split())[:1200] or "(no description)"
    user = (
        f"API: {api_title}\nOperation: {op.operation_id or ''} -- {doc}\n\n"
        f"Request (for reference):\n{_request_block(gold)}\n\nValues:\n{_values_block(gold, arguments)}\n"
    )
    if previous:
        user += "\nAlready written for this request (write a differently worded text):\n" + "\n".join(f"- {p}" for p in previous) + "\n"
    user += "\nWrite the task."
    wmsgs: list[dict[str, str]] = [{"role": "system", "content": _WRITER_SYSTEM}, {"role": "user", "content": user}]
    rtranscript: list[dict[str, str]] = []
    rejections: list[str] = []
    verdict: dict[str, Any] = {}
    for r in range(1, rounds + 1):
        answer = (await writer.generate(_inp(f"{task_id}/writer/{r}", wmsgs), config)).text
        wmsgs.append({"role": "assistant", "content": answer})
        draft = clean_draft(answer)
        problems = text_problems(draft)
        if not problems:
            problems = missing_values(draft, gold.facts, arguments)
        if not problems and draft in previous:
            problems = ["the text repeats one already written for this request"]
        if problems:
            feedback = "Fix: " + "; ".join(problems[:8]) + "."
        else:
            rmsgs = [
                {"role": "system", "content": _REVIEWER_SYSTEM},
                {"role": "user", "content": f"Request:\n{_request_block(gold)}\n\nValues:\n{_values_block(gold, arguments)}\n\n"
                                            f"Task text:\n{draft}\n\nYour JSON verdict:"},
            ]
            said = (await reviewer.generate(_inp(f"{task_id}/reviewer/{r}", rmsgs), config)).text
            rtranscript.extend([*rmsgs[1:], {"role": "assistant", "content": said}])
            parsed = parse_verdict(said)
            if parsed is None:
                problems = ["the reviewer's answer could not be read"]
                feedback = "The reviewer could not judge the text; make it precise and complete."
            else:
                verdict = {k: parsed.get(k) for k in ("complete", "unambiguous", "natural", "approve")}
                natural = parsed.get("natural")
                try:
                    nat_ok = float(natural) >= 3 if not isinstance(natural, bool) else False
                except (TypeError, ValueError):
                    nat_ok = False
                if parsed.get("approve") is True and parsed.get("complete") is True and parsed.get("unambiguous") is True and nat_ok:
                    return TextResult(draft, "agents", r, verdict, wmsgs, rtranscript, rejections)
                problems = [f"reviewer: {parsed.get('feedback') or 'not approved'}"]
                feedback = str(parsed.get("feedback") or "The reviewer did not approve; make the text complete and unambiguous.")
        rejections.append(f"round {r}: " + "; ".join(problems[:4]))
        wmsgs.append({"role": "user", "content": f"Revise the task. {feedback}"})
    return TextResult(None, "not approved", rounds, verdict, wmsgs, rtranscript, rejections)
