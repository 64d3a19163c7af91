"""What a comparison of runs needs besides statistics: readable labels, the shared sample set, and
warnings when the runs were not made alike (setup, scoring, data, prompts, generation)."""

from __future__ import annotations

import re
from typing import Any

from callbench.errors import ConfigError

_BACKEND_PREFIXES = ("openai", "llamacpp", "hf")


def short_model_name(spec: Any) -> str:
    """``openai:Qwen/Qwen2.5-7B-Instruct@http://h:8765/v1`` -> ``Qwen2.5-7B-Instruct``;
    ``llamacpp:/models/x.gguf`` -> ``x``; ``gold`` and ``replay:preds.jsonl`` stay as they are."""
    text = str(spec or "?")
    text = re.sub(r"\[[a-z_]+\]$", "", text)
    backend, sep, rest = text.partition(":")
    if not sep or backend not in _BACKEND_PREFIXES:
        return text
    rest = re.sub(r"@https?://.*$", "", rest)  # openai: the server
    rest = rest.rstrip("/").rsplit("/", 1)[-1]
    rest = re.sub(r"\.gguf$", "", rest, flags=re.I)
    return rest or text


def _server(spec: Any) -> str | None:
    m = re.search(r"@https?://([^/]+)", str(spec or ""))
    return m.group(1) if m else None


def short_labels(summaries: list[dict[str, Any]]) -> list[str]:
    """One label per run: the short model name, plus what else tells the runs apart (setup,
    UD/CD, the server), plus the run id when nothing does."""
    names = [short_model_name(s.get("model")) for s in summaries]
    if len(summaries) == 1:
        s = summaries[0]
        return [" ".join(p for p in (names[0], s.get("setup") or "", "CD" if s.get("constrained") else "") if p)]
    labels = list(names)
    if len(set(labels)) < len(labels):
        for key in ("setup", "constrained"):
            if len({str(s.get(key)) for s in summaries}) > 1:
                for i, s in enumerate(summaries):
                    bit = ("CD" if s.get("constrained") else "UD") if key == "constrained" else str(s.get(key))
                    labels[i] = f"{labels[i]} {bit}"
    if len(set(labels)) < len(labels):
        servers = [_server(s.get("model")) for s in summaries]
        if len(set(servers)) == len(servers) and None not in servers:
            labels = [f"{lab}@{srv}" for lab, srv in zip(labels, servers, strict=True)]
    if len(set(labels)) < len(labels):
        ids = [str(s.get("run_id")) for s in summaries]
        if len(set(ids)) == len(ids):
            labels = [f"{lab} ({rid})" for lab, rid in zip(labels, ids, strict=True)]
    if len(set(labels)) < len(labels):  # the same run twice
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    return labels


def check_labels(given: list[str] | None, n_runs: int) -> list[str] | None:
    if not given:
        return None
    if len(given) != n_runs:
        raise ConfigError(f"--label given {len(given)} time(s) for {n_runs} run(s): give one --label per run, in order")
    if any(not g.strip() for g in given):
        raise ConfigError("--label: a label must not be empty")
    if len(set(given)) < len(given):
        raise ConfigError(f"--label: labels must differ ({', '.join(given)})")
    return [g.strip() for g in given]


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:60] or "run"


# -- warnings -----------------------------------------------------------------------------------

_PROMPT_KEYS = ("prompt_version", "prompt_hash", "prompts_sha256", "mcp_prompt_hash", "react_prompt_hash", "tools_prompt_hash")
_DATA_KEYS = ("data_file", "data_sha256", "bench", "bench_sha256", "tasks_file", "scenarios", "icl_sha256")
_IGNORED = ("model", "track", "model_options")  # the model is what a comparison compares


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _normalized(identity: dict[str, Any]) -> dict[str, Any]:
    """Identity leaves by path, with the ``scoring.`` part's keys where older runs kept them (at
    the top level), and unset values (None, {}, []) left out: a key a run did not record is not
    a difference (identities written before a key existed)."""
    out: dict[str, Any] = {}
    for key, value in _flat(identity).items():
        if value is None or value == {} or value == []:
            continue
        key = key.removeprefix("scoring.")
        if key.split(".", 1)[0] in _IGNORED:
            continue
        out[key] = value
    return out


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else "…" + text[-39:]


# Options a track records only when they are not at their default (so that runs made before the
# option existed keep their identity): a run without the key used the default.
_UNRECORDED_DEFAULTS = {"context": "none", "base_url_hint": "auto"}


def setup_warnings(identities: list[dict[str, Any]], labels: list[str]) -> list[str]:
    """One line per kind of difference between the runs' recorded identities (the model aside),
    on the keys every run recorded (or, for options recorded only when set, whose default it is)."""
    flats = [_normalized(i) for i in identities]
    for key, default in _UNRECORDED_DEFAULTS.items():
        if any(key in f for f in flats):
            for f in flats:
                f.setdefault(key, default)
    keys = sorted(set.intersection(*(set(f) for f in flats))) if flats else []
    kinds: dict[str, list[str]] = {}
    for key in keys:
        values = [f[key] for f in flats]
        if len({repr(v) for v in values}) <= 1:
            continue
        leaf = key.rsplit(".", 1)[-1]
        if leaf in _PROMPT_KEYS:
            kind = "prompt version"
        elif leaf in _DATA_KEYS:
            kind = "data (sample set)"
        elif key.startswith("generation."):
            kind = "generation settings"
        elif leaf in ("callbench_version", "sandbox", "timeout_s") or leaf.endswith("_sha256"):
            kind = "scoring"
        else:
            kind = "setup"
        shown = " vs ".join(f"{_short(v)} ({lab})" for v, lab in zip(values, labels, strict=True))
        kinds.setdefault(kind, []).append(f"{key} {shown}")
    order = ("setup", "prompt version", "data (sample set)", "scoring", "generation settings")
    return [f"runs differ in {kind}: " + "; ".join(kinds[kind]) for kind in order if kind in kinds]


def scoring_warning(modes: list[str], labels: list[str], used: str) -> str | None:
    if len(set(modes)) <= 1:
        return None
    shown = ", ".join(f"{lab}: {m}" for lab, m in zip(labels, modes, strict=True))
    return f"runs differ in scoring ({shown}); every run is re-scored in {used} for the comparison"


def sample_warning(n_shared: int, only_in: list[int], labels: list[str]) -> str | None:
    if not any(only_in):
        return None
    parts = ", ".join(f"{n} only in {lab}" for n, lab in zip(only_in, labels, strict=True) if n)
    return f"runs differ in sample set: {n_shared} shared, {parts}; the comparison uses the {n_shared} shared samples only"
