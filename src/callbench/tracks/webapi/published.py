"""WAPIIBench's published code-generation prompt (``--prompt published``, the same as
``--prompt-version published``).

The prompt text is upstream data, not part of callbench: ``callbench data fetch wapiibench`` gets
``resources/code_generation_prompt.md`` at the pinned commit into
``<data dir>/wapiibench/resources/``, and a run reads it from there. Its three placeholders are
filled with ``str.format`` the way the upstream evaluation code (``wapiibench/evaluation.py``,
``generate``) fills them:

* ``{syntax}``: ``axios.method(url[, config])``;
* ``{api}``: the API's display name (``Asana``, ``Google Calendar``, ``Google Sheets``,
  ``Slack Web``; another API: its name as the task gives it);
* ``{extra_instructions}``: ``without any explanations`` for instruct models, else empty.
  Upstream inserts it without a leading space (``... code snippetwithout any explanations:``);
  so does callbench.

The model's input is then the filled text followed directly by the starter code (the file ends
with an open ```` ```javascript ```` fence), and with ``--context`` the spec text and three
newlines before everything, as upstream's RAG setting joins them. The starter code is
upstream's: the task in a ``//`` comment exactly as the dataset writes it (a task with a line
break has its whitespace collapsed, as callbench's own prompts do, since the break would turn
the rest of the task into code), ``const axios = require('axios');``, a blank line and
``axios.`` (``full``) or ``axios.<method>('<url>',`` (``args``).

The three prompt formats (docs/webapi-prompts.md) map onto upstream's three kinds of models:

* completion (base models): the input as is, ``{extra_instructions}`` empty;
* chat (API models; upstream's OpenAI/Gemini models): the same input split at its first
  ``". "`` into a system message (up to and with that ``.``) and a user message (the rest);
* in-process instruct models (upstream's Hugging Face models with ``-instruct`` in their name):
  the input with ``{extra_instructions}`` filled as one user message and no system message, as
  upstream, through the model's chat template. With ``--chat-handling published`` (the default
  with this prompt) the model answers freely and the program is built as upstream's
  ``generate()`` builds it, from the decoded sequence searched for the starter
  (:func:`~callbench.tracks.webapi.upstream_call.published_chat_program`); with
  ``--chat-handling prefill`` the assistant's turn starts with the code fence and the starter
  (callbench's handling: the model cannot fail to continue the starter).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from callbench.errors import DataError
from callbench.tracks.webapi.dataset import KNOWN_APIS, WebApiTask
from callbench.tracks.webapi.prompting import PUBLISHED, Prompt, Setup, starter_code

__all__ = ["PUBLISHED", "PublishedTemplate", "build_published_prompt", "load_template", "prompt_path"]
DATASET = "wapiibench"
# Relative to <data dir>/wapiibench, as in the upstream repository (data/fetch.py fetches it).
PROMPT_FILE = "resources/code_generation_prompt.md"
SYNTAX = "axios.method(url[, config])"
INSTRUCT_EXTRA = "without any explanations"
_LINE_BREAKS = ("\n", "\r", "\u2028", "\u2029")


@dataclass(frozen=True)
class PublishedTemplate:
    text: str  # the file's text, byte for byte (decoded as UTF-8, line ends untouched)
    sha256: str  # of the file's bytes
    path: Path

    def fill(self, api: str, extra_instructions: str = "") -> str:
        return self.text.format(syntax=SYNTAX, api=api, extra_instructions=extra_instructions)


def prompt_path(root: Path) -> Path:
    """Where ``callbench data fetch wapiibench`` puts the published prompt under data dir ``root``."""
    return Path(root) / DATASET / PROMPT_FILE


def load_template(root: Path) -> PublishedTemplate:
    path = prompt_path(root)
    if not path.is_file():
        raise DataError(
            f"{path}: WAPIIBench's published prompt not found; run 'callbench data fetch wapiibench' "
            "(or set CALLBENCH_DATA_DIR / --data)"
        )
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc})") from None
    template = PublishedTemplate(text=text, sha256=hashlib.sha256(data).hexdigest(), path=path)
    try:
        template.fill("API")
    except (KeyError, IndexError, ValueError) as exc:
        raise DataError(
            f"{path}: not a prompt template that str.format fills with syntax, api and extra_instructions "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return template


def published_starter(task: WebApiTask, setup: Setup) -> str:
    text = task.task
    if any(c in text for c in _LINE_BREAKS):
        text = " ".join(text.split())
    return starter_code(task, setup, "v1", task_text=text)


def split_system_user(text: str, source: Path | str = PROMPT_FILE) -> list[dict[str, str]]:
    """Upstream's chat split for API models: system = up to the first ``". "`` (with its ``.``),
    user = everything after it."""
    head, sep, rest = text.partition(". ")
    if not sep:
        raise DataError(f"{source}: the prompt has no '. ' to split into a system and a user message")
    return [{"role": "system", "content": head + "."}, {"role": "user", "content": rest}]


def build_published_prompt(
    task: WebApiTask, setup: Setup, template: PublishedTemplate, *, context: str = "", prefill: bool = True
) -> Prompt:
    """The published prompt in every format. ``prefill``: an in-process instruct model's answer
    starts with the fence and the starter (callbench's handling); without it the model answers
    freely and the answer is searched for the starter (upstream's)."""
    api = KNOWN_APIS.get(task.api, task.api)
    starter = published_starter(task, setup)
    head = f"{context}\n\n\n" if context else ""
    model_input = head + template.fill(api) + starter
    instruct_input = head + template.fill(api, INSTRUCT_EXTRA) + starter
    return Prompt(
        starter=starter,
        completion_prompt=model_input,
        messages=split_system_user(model_input, template.path),
        assistant_prefix=f"```javascript\n{starter}" if prefill else None,
        template_messages=[{"role": "user", "content": instruct_input}],
    )
