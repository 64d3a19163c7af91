"""Build prompts for both setups of the WAPIIBench paper, for completion and chat models.

* ``full``: the starter code ends at ``axios.`` — the model picks method, URL and arguments.
* ``args``: the starter code ends at ``axios.<method>('<url>',`` — only the arguments are left.

Templates are files under ``prompts/<version>/``; their hash is part of a run's fingerprint.
``published`` is not a version of these: it is WAPIIBench's own prompt, fetched with the data
(:mod:`callbench.tracks.webapi.published`).
``v1`` is the instruction text modelled on the paper's prompt (it asks for ``<key>``/``<token>``
placeholders but does not say that a credential is expected); ``v2`` (the default) also states
where the API's credential goes and its placeholder form. A task whose request goes without a
credential (``credentials: "none"``) gets neither sentence.

``--context`` (see :mod:`callbench.tracks.webapi.retrieval`) and the base URL hint add a
preamble from ``context.md``/``base_url.md`` before the instructions; without them the prompts
are byte-identical to those of earlier releases.

Three prompt formats, chosen by the backend's mode (see docs/webapi-prompts.md):

* completion (base models): ``completion_prompt`` = instructions + code fence + starter; the
  model continues the starter.
* chat with a prefilled answer (instruct models run in-process): ``template_messages`` through the
  model's chat template, and the assistant's turn starts with ``assistant_prefix`` (the code fence
  and the starter), so the answer continues the starter exactly as a completion does. The user
  turn holds the instructions but not the starter: shown there too, inside a closed code block,
  it invites the model to close its own block at once (SmolLM2-135M answered 351 of 395 full-setup
  tasks with an empty continuation that way; without it, 4 of 10 sampled tasks sent a request).
* chat (API models): ``messages``; the answer is parsed (:mod:`callbench.tracks.webapi.parsing`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from callbench.errors import ConfigError
from callbench.tracks.templates import load_templates, templates_digest
from callbench.tracks.webapi.dataset import KNOWN_APIS, WebApiTask

Setup = Literal["full", "args"]
SETUPS: tuple[str, ...] = ("full", "args")
PROMPT_VERSIONS: tuple[str, ...] = ("v1", "v2")
PROMPT_VERSION = "v2"  # the default
# WAPIIBench's own prompt, read from the fetched data (callbench.tracks.webapi.published).
PUBLISHED = "published"
PROMPT_CHOICES: tuple[str, ...] = (*PROMPT_VERSIONS, PUBLISHED)
_FILES = ("instructions.md", "full.js", "args.js", "chat_system.md", "chat_user.md")
# Loaded and hashed apart from _FILES, so runs without a context or base URL keep their identity.
_CONTEXT_FILES = ("context.md", "base_url.md")
CONTEXTS: tuple[str, ...] = ("none", "rag", "spec-excerpt")
AXIOS_DEFAULT_ACCEPT = "application/json, text/plain, */*"


@lru_cache(maxsize=4)
def templates(version: str = PROMPT_VERSION) -> dict[str, str]:
    if version not in PROMPT_VERSIONS:
        raise ConfigError(f"--prompt-version '{version}': choose from {', '.join(PROMPT_VERSIONS)}")
    return load_templates("callbench.tracks.webapi.prompts", version, _FILES)


def templates_hash(version: str = PROMPT_VERSION) -> str:
    return templates_digest(templates(version))


@lru_cache(maxsize=4)
def context_templates(version: str = PROMPT_VERSION) -> dict[str, str]:
    templates(version)  # the version check
    return load_templates("callbench.tracks.webapi.prompts", version, _CONTEXT_FILES)


def context_templates_hash(version: str = PROMPT_VERSION) -> str:
    return templates_digest(context_templates(version))


@dataclass(frozen=True)
class Prompt:
    starter: str  # code the model continues (no trailing newline after 'axios.' / ',')
    completion_prompt: str  # instructions + fence + starter (for completion models)
    messages: list[dict[str, str]]  # same request for chat models
    assistant_prefix: str  # fence + starter: how a prefilled chat answer begins
    template_messages: list[dict[str, str]]  # the conversation before the prefilled answer


def starter_code(task: WebApiTask, setup: Setup, version: str = PROMPT_VERSION, *, task_text: str | None = None) -> str:
    """``task_text`` replaces the task as written in the comment (the published prompt keeps it
    as the dataset has it)."""
    t = templates(version)
    base = task.starter_code if task.starter_code else t["full.js"].rstrip("\n")
    # The task sits in a `//` comment: a newline in it would turn the rest of the task into code.
    base = base.replace("{task}", " ".join(task.task.split()) if task_text is None else task_text)
    if setup == "full":
        return base
    if setup == "args":
        # The row's own starter ends at 'axios.'; the args setup fixes the method and URL after it.
        return f"{base}{task.config.method}('{task.config.url}',"
    raise ConfigError(f"--setup '{setup}': choose from {', '.join(SETUPS)}")


def preamble(api: str, *, context: str = "", base_url: str | None = None, version: str = PROMPT_VERSION) -> str:
    """What comes before the instructions: the spec context (``--context``), then the base URL.
    Empty without either, so the default prompts are unchanged."""
    if not context and not base_url:
        return ""
    t = context_templates(version)
    parts = []
    if context:
        parts.append(t["context.md"].strip().format(api=api, excerpt=context))
    if base_url:
        parts.append(t["base_url.md"].strip().format(api=api, base_url=base_url))
    return "\n\n".join(parts) + "\n\n"


def build_prompt(
    task: WebApiTask,
    setup: Setup,
    *,
    version: str = PROMPT_VERSION,
    context: str = "",
    base_url: str | None = None,
) -> Prompt:
    """``context`` (spec excerpts) and ``base_url`` are placed before the instructions, and so
    before the task, in every format."""
    t = templates(version)
    api = KNOWN_APIS.get(task.api, task.api)
    pre = preamble(api, context=context, base_url=base_url, version=version)
    text = t["instructions.md"].strip()
    if task.credentials == "none":
        text = without_credential_sentence(text)
    instructions = pre + text.format(syntax="axios.method(url[, data][, config])", api=api, extra="")
    starter = starter_code(task, setup, version)
    completion_prompt = f"{instructions}\n\n```javascript\n{starter}"
    assistant_prefix = f"```javascript\n{starter}"
    user = t["chat_user.md"].strip().format(instructions=instructions, starter=starter)
    messages = [
        {"role": "system", "content": t["chat_system.md"].strip()},
        {"role": "user", "content": user},
    ]
    prefill_user = pre + text.format(syntax="axios.method(url[, data][, config])", api=api, extra=_PREFILL_EXTRA)
    template_messages = [messages[0], {"role": "user", "content": prefill_user}]
    return Prompt(
        starter=starter,
        completion_prompt=completion_prompt,
        messages=messages,
        assistant_prefix=assistant_prefix,
        template_messages=template_messages,
    )


# The instructions' bullets about credentials (v2, v1): left out for a task whose request goes
# without one (``WebApiTask.credentials == "none"``). Cut from the rendered text rather than kept in
# a template of their own, so the template files, and with them the identity of every run, stay as
# they were.
CREDENTIAL_BULLETS = ("- The API requires authentication:", "- For authentication use")


def without_credential_sentence(instructions: str) -> str:
    """``instructions`` without its bullet about credentials (see :data:`CREDENTIAL_BULLETS`)."""
    return "\n".join(line for line in instructions.split("\n") if not line.startswith(CREDENTIAL_BULLETS))


# Ends the instructions' last sentence ("Complete this code{extra}:") when the code is the
# beginning of the answer rather than part of the question.
_PREFILL_EXTRA = ", which your answer starts with; continue it from where it stops"


def _js(value: Any) -> str:
    """JSON is valid JavaScript for every value the dataset holds."""
    return json.dumps(value, ensure_ascii=False)


def reference_completion(task: WebApiTask, setup: Setup) -> str:
    """The gold answer as the continuation of the starter code (what the ``gold`` model emits).

    Headers axios adds by itself (its default ``Accept``, ``Content-Type: application/json`` for
    object bodies) are left out, as a person would write the call.
    """
    cfg = task.config
    headers = dict(cfg.headers or {})
    if headers.get("Accept") == AXIOS_DEFAULT_ACCEPT:
        del headers["Accept"]
    if headers.get("Content-Type") == "application/json":
        del headers["Content-Type"]
    options: dict[str, Any] = {}
    if cfg.params:
        options["params"] = cfg.params
    if headers:
        options["headers"] = headers
    args: list[str] = []
    has_body = cfg.method in ("post", "put", "patch")
    if has_body:
        args.append(_js(cfg.data) if cfg.data is not None else "undefined")
    elif cfg.data is not None:
        options["data"] = cfg.data
    if options:
        args.append(_js(options))
    if setup == "full":
        inner = ", ".join([_js(cfg.url), *args])
        return f"{cfg.method}({inner});\n"
    return (" " + ", ".join(args) if args else "") + ");\n"
