"""Prompts for the nested track: direct prompting with k in-context examples.

Templates are files under ``prompts/<version>/``; their hash is part of a run's fingerprint.
"""

from __future__ import annotations

import json
from functools import lru_cache

from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.templates import load_templates, templates_digest

PROMPT_VERSION = "v1"
_FILES = ("system.md", "user.md", "example.md")


@lru_cache(maxsize=4)
def templates(version: str = PROMPT_VERSION) -> dict[str, str]:
    return load_templates("callbench.tracks.nested.prompts", version, _FILES)


def templates_hash(version: str = PROMPT_VERSION) -> str:
    return templates_digest(templates(version))


def tools_json(task: NestedTask) -> str:
    return json.dumps([t.model_dump(exclude_none=True, exclude={"required"}) for t in task.tools], ensure_ascii=False)


def gold_json(task: NestedTask) -> str:
    """The gold answer as the model should write it (labels in their original style)."""
    return json.dumps(
        [{"name": c.name, "label": c.raw_label or c.label, "arguments": c.arguments} for c in task.output],
        ensure_ascii=False,
    )


def build_prompt(task: NestedTask, examples: list[NestedTask]) -> tuple[str, list[dict[str, str]]]:
    """(completion prompt, chat messages). The completion prompt ends where the JSON list starts."""
    t = templates()
    ex = "".join(t["example.md"].format(question=e.input, answer=gold_json(e)) for e in examples)
    user = t["user.md"].strip().format(tools=tools_json(task), examples=ex, question=task.input)
    system = t["system.md"].strip()
    completion = f"{system}\n\n{user}\nAnswer: "
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return completion, messages
