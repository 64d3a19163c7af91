"""NESTFUL's published per-model prompt templates (``PROMPTS.json``), selected by model family.

The NESTFUL authors evaluate each model with its own template: ``PROMPTS.json`` maps a model name
(``Granite-20B-FunctionCalling``, ``LLaMa-3.1``, ``xLAM-7b-fc-r``, ...) to a completion prompt,
chat markup included, with three placeholders: ``{FUNCTION_STR}`` (the tool catalog),
``{ICL_EXAMPLES}`` (the in-context examples) and ``{QUERY}`` (the question).
``callbench data fetch nestful`` fetches the file with the data (``nestful/src/PROMPTS.json``); the
v2 samples carry a copy (``nestful/v2-samples/PROMPTS.json``).

How the placeholders are filled follows the upstream evaluation code (``src/eval.py`` and
``src/instruct_data_prep.py`` of the NESTFUL repository, as read in a public copy of it, not at the
pinned commit; docs/nested-published-prompts.md says what was and was not verified):

* ``{FUNCTION_STR}``: the row's ``tools`` list as the data file has it, JSON-encoded *twice*
  (``json.dumps`` of the ``json.dumps`` text: a quoted JSON string). Upstream encodes the tools once
  when it loads the rows and once more when it fills the template; the model sees that string.
* ``{ICL_EXAMPLES}``: for each of the first ``--shots`` examples of ``icl_examples.json``,
  ``"\\n#Example-{i}\\nInput: {input}\\nOutput: {output}\\n"`` with ``output`` the example's call
  list as ``json.dumps`` writes it; the xLAM function-calling templates (``xLAM-7b-fc-r``,
  ``xLAM-1b-fc-r``) wrap it as ``{"tool_calls": [...] }``, ``Hermes-2-Pro-Mistral-7B`` writes
  each call as ``<tool_call> {...} </tool_call>`` (space-separated). No examples: empty.
* ``{QUERY}``: the row's ``input``.

The template is first filled with ``str.format`` (so ``{{`` reads as ``{``); a template that
``str.format`` refuses (literal single braces: ``xLAM-8x7b-r``, ``xLAM-8x22b-r``, ``Hammer2.0-7b``)
gets plain text replacement of the three placeholders instead, as upstream does.

Family rule (:func:`detect_family`): the model's name (the file or directory name of a
``llamacpp:``/``hf:`` path, the model of ``openai:MODEL@URL``) is lowercased with everything but
letters and digits removed, and the first family in :data:`FAMILIES` whose pattern it contains is
the family; within the family, the template whose (equally normalised) name the model name
contains wins (the longest), else the family's default template.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.files import read_text

PLACEHOLDERS = ("{FUNCTION_STR}", "{ICL_EXAMPLES}", "{QUERY}")

# Where the file is looked for under the data dir: where `data fetch nestful` puts it (upstream
# src/), then the v2 samples' copy.
PROMPTS_FILES = ("nestful/src/PROMPTS.json", "nestful/v2-samples/PROMPTS.json")

# (family, patterns matched in the normalised model name, default template), in matching order:
# more specific first (Hermes-2-Pro-Mistral is Hermes, ToolACE-...-Llama is ToolACE, Mixtral
# before Mistral, "mistralai/Mixtral-..." is Mixtral).
FAMILIES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("hermes", ("hermes",), "Hermes-2-Pro-Mistral-7B"),
    ("toolace", ("toolace",), "ToolAce-8b"),
    ("hammer", ("hammer",), "Hammer2.0-7b"),
    ("xlam", ("xlam",), "xLAM-7b-fc-r"),
    ("gorilla", ("gorilla",), "gorilla-openfunctions-v2"),
    ("command-r", ("commandr", "c4ai"), "c4ai-command-r-v01"),
    ("granite", ("granite",), "Granite-20B-FunctionCalling"),
    ("mixtral", ("mixtral",), "mixtral_8x7b_instruct_v01"),
    ("mistral", ("mistral",), "Mistral-7B-Instruct-v0.3"),
    ("llama", ("llama",), "LLaMa-3.1"),
)

# The answer format each template asks for (what parsing.read_calls must read): "json" (a JSON list
# or object of calls, possibly in tags or fences) or "python" (``[f(a=1), g(b=2)]``).
PYTHONIC_TEMPLATES = frozenset({"ToolAce-8b", "gorilla-openfunctions-v2"})

_XLAM_FC = frozenset({"xLAM-7b-fc-r", "xLAM-1b-fc-r"})
_HERMES = frozenset({"Hermes-2-Pro-Mistral-7B"})


def normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def family_of(key: str) -> str | None:
    """The family a template of PROMPTS.json belongs to (None: it matches no family's pattern)."""
    norm = normalise(key)
    return next((fam for fam, pats, _ in FAMILIES if any(p in norm for p in pats)), None)


def model_name(spec: str) -> str | None:
    """The name the family is read from: ``llamacpp:/m/Llama-3.1-8B.gguf`` -> ``Llama-3.1-8B.gguf``,
    ``hf:/m/granite-3b/`` -> ``granite-3b``, ``openai:meta-llama/Llama-3.1-8B@http://h/v1`` ->
    ``meta-llama/Llama-3.1-8B``. None for backends that name no model (``gold``, ``replay:``)."""
    scheme, sep, rest = spec.partition(":")
    if not sep:
        return None
    if scheme in ("gold", "replay"):
        return None
    if scheme == "openai":
        return rest.rsplit("@", 1)[0] if "@" in rest else rest
    rest = rest.rstrip("/\\")
    return Path(rest).name or rest


@dataclass(frozen=True)
class PublishedTemplate:
    key: str  # the name in PROMPTS.json
    text: str
    family: str | None
    source: Path  # the PROMPTS.json it came from
    how: str  # how it was chosen (one line)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def pythonic(self) -> bool:
        return self.key in PYTHONIC_TEMPLATES


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int) -> dict[str, str]:
    p = Path(path)
    text = read_text(p)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: invalid JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(doc, dict) or not doc:
        raise DataError(f"{p}: expected a JSON object mapping model names to prompt templates")
    for key, value in doc.items():
        if not isinstance(value, str):
            raise DataError(f"{p}: template '{key}' is {type(value).__name__}, not a string")
        if "{QUERY}" not in value:
            raise DataError(f"{p}: template '{key}' has no {{QUERY}} placeholder")
    return dict(doc)


def load_prompts(path: str | Path) -> dict[str, str]:
    """The templates of a PROMPTS.json file (validated: a JSON object of strings, each with ``{QUERY}``)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    st = p.stat()
    return _load_cached(str(p.resolve()), st.st_mtime_ns, st.st_size)


def find_prompts_file(given: str | Path | None = None) -> Path:
    """``given``, else the fetched file under the data dir, else the v2 samples' copy."""
    if given:
        return Path(given)
    from callbench.data.paths import data_dir

    root = data_dir()
    for rel in PROMPTS_FILES:
        if (root / rel).is_file():
            return root / rel
    raise DataError(
        f"NESTFUL's PROMPTS.json not found under {root} (looked for {', '.join(PROMPTS_FILES)}): "
        "run 'callbench data fetch nestful' or give --prompts-file FILE"
    )


def _known(prompts: dict[str, str]) -> str:
    fams = sorted({f for f in (family_of(k) for k in prompts) if f})
    return f"families: {', '.join(fams)}; templates: {', '.join(prompts)}"


def _in_family(prompts: dict[str, str], family: str, name_norm: str | None) -> tuple[str, str]:
    """(template key, how) for ``family``: the template the model name names, else the default."""
    keys = [k for k in prompts if family_of(k) == family]
    if name_norm:
        named = sorted((k for k in keys if normalise(k) in name_norm), key=lambda k: -len(normalise(k)))
        if named:
            return named[0], "the model name contains it"
    default = next(d for f, _, d in FAMILIES if f == family)
    if default in prompts:
        return default, f"the {family} family's default"
    if keys:
        return keys[0], f"the first {family} template in the file"
    raise ConfigError(f"no {family} template in PROMPTS.json ({_known(prompts)})")


def detect_family(name: str) -> str | None:
    norm = normalise(name)
    return next((fam for fam, pats, _ in FAMILIES if any(p in norm for p in pats)), None)


def select_template(choice: str, model_spec: str | None, prompts_file: str | Path | None = None) -> PublishedTemplate:
    """The template for ``choice``: ``auto`` (by the model's family), a family (``llama``) or a
    template's name in PROMPTS.json (``llama-3-1-405b-instruct``), case-insensitive.

    Raises :class:`ConfigError` (one line, listing what is known) when nothing fits."""
    path = find_prompts_file(prompts_file)
    prompts = load_prompts(path)
    wanted = normalise(choice)
    if wanted == "auto":
        if not model_spec:
            raise ConfigError(
                "--prompt published: no model spec to read a family from (Python API: pass model_spec= or "
                f"prompt_template=FAMILY; {_known(prompts)})"
            )
        name = model_name(model_spec)
        if name is None:
            raise ConfigError(
                f"--prompt published: model '{model_spec}' names no model family to pick a NESTFUL template by; "
                f"give --prompt-template FAMILY ({_known(prompts)})"
            )
        family = detect_family(name)
        if family is None:
            raise ConfigError(
                f"--prompt published: no NESTFUL template for model '{name}' (no known family in its name); "
                f"give --prompt-template FAMILY or use callbench's prompt ({_known(prompts)})"
            )
        key, why = _in_family(prompts, family, normalise(name))
        return PublishedTemplate(key, prompts[key], family, path, f"family {family} from '{name}', {why}")
    exact = [k for k in prompts if normalise(k) == wanted]
    if exact:
        return PublishedTemplate(exact[0], prompts[exact[0]], family_of(exact[0]), path, "named")
    family = next((f for f, _, _ in FAMILIES if normalise(f) == wanted), None)
    if family is None:
        raise ConfigError(f"--prompt-template {choice}: not a NESTFUL family or template ({_known(prompts)}, or auto)")
    key, why = _in_family(prompts, family, None)
    return PublishedTemplate(key, prompts[key], family, path, f"family {family} named, {why}")


# -- filling


def icl_examples_text(key: str, examples: list[dict[str, Any]]) -> str:
    """``{ICL_EXAMPLES}`` for template ``key`` from raw example rows (``input``, ``output``)."""
    parts = []
    for i, ex in enumerate(examples, 1):
        calls = ex.get("output")
        if key in _XLAM_FC:
            out = '{"tool_calls": ' + json.dumps(calls) + " }"
        elif key in _HERMES:
            out = " ".join(f"<tool_call> {json.dumps(c)} </tool_call>" for c in calls or [])
        else:
            out = json.dumps(calls)
        parts.append(f"\n#Example-{i}\nInput: {ex.get('input')}\nOutput: {out}\n")
    return "".join(parts)


def function_str(tools: Any) -> str:
    """``{FUNCTION_STR}``: the tools list JSON-encoded twice, as upstream fills it."""
    return json.dumps(json.dumps(tools))


def fill(template: str, *, functions: str, examples: str, query: str) -> str:
    """The template with its placeholders filled: ``str.format``, else plain replacement."""
    try:
        return template.format(FUNCTION_STR=functions, ICL_EXAMPLES=examples, QUERY=query)
    except (KeyError, IndexError, ValueError, AttributeError):
        return template.replace("{FUNCTION_STR}", functions).replace("{ICL_EXAMPLES}", examples).replace("{QUERY}", query)


# -- raw rows (the tools as the data file has them, not as callbench normalises them)


def raw_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a task or example file as written (JSON, JSONL or HF parquet with JSON text columns)."""
    from callbench.tracks.nested.dataset import _decode_columns, _read_json, _read_jsonl, _read_parquet

    p = Path(path)
    if p.suffix == ".parquet":
        return [_decode_columns(r, p, i) for i, r in enumerate(_read_parquet(p))]
    if p.suffix == ".jsonl":
        return _read_jsonl(p)[0]
    doc = _read_json(p)
    return doc if isinstance(doc, list) else []


def build_published_prompt(
    template: PublishedTemplate, row: dict[str, Any] | None, task: Any, examples: list[dict[str, Any]]
) -> str:
    """The filled template for ``task``. ``row`` is its row as the data file has it (its ``tools``
    fill ``{FUNCTION_STR}``); a row without tools (v1 data, whose catalog is a separate spec file)
    uses the task's catalog as callbench reads it."""
    tools = (row or {}).get("tools")
    if tools is None:
        tools = [t.model_dump(exclude_none=True, exclude={"required"}) for t in task.tools]
    query = (row or {}).get("input", task.input)
    return fill(
        template.text,
        functions=function_str(tools),
        examples=icl_examples_text(template.key, examples),
        query=query,
    )
