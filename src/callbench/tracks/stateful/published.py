"""Loading the published StateEval (StateGen's benchmark) into callbench's task form.

No StateEval data is committed here: a user who has it points ``--bench`` at it. Two layouts of
the upstream project (github.com/YuhengHuang42/stateful_bench) are recognised:

* **Hugging Face rows as JSON Lines**: the dataset ``yuhenghuang/StateEval`` has one split per
  scenario (``session``, ``tensor``, ``voice``) whose rows are ``example_id`` (int),
  ``evaluator_json`` (a JSON string), ``prompt`` (the task text) and ``metadata_json`` (a JSON
  string: ``evaluation_config``, ``doc``). A split exported with ``datasets``'
  ``Dataset.to_json`` is a file ``<split>.jsonl`` (or ``<split>-*.jsonl``) with those keys; that
  key set is the marker.
* **The upstream local trace directory** (what its ``scripts/hf_dataset.py pack`` reads):
  ``evaluator_<idx>.json`` files next to one ``<split>_metadata.json`` whose ``prompt_book``
  maps ``str(idx)`` to the task text.

An evaluator holds ``test_cases``: each a ``program`` (the reference), ``program_info``
(``init_local_str``: Python assigning the preloaded constants; ``init_load_info``: preloaded
objects such as tensors; ``init_implicit_dict``: the session service's initial rows), the
recorded ``result`` (of the program's ``RESULT`` variable) and a ``state_oracle``.

Conversion. Each test case becomes a callbench case: the constants of ``init_local_str`` (plain
literal assignments only) and the objects of ``init_load_info`` (as ``{"__load__": <published
JSON>}``, rebuilt inside the sandbox by the scenario's setup: speeches for voice, tensors from
their base64 bytes for tensor) are the preload, ``init_implicit_dict`` the session service's
seed. The reference is the published program plus ``result = RESULT`` (for tensor, a
one-element tensor is then read as its number, as upstream records it). The oracle is recorded
the way callbench's generator records it, by running the reference in callbench's sandbox, and
cross-checked against the published oracle: the run must succeed, its ``result`` must agree with
the published one (backend-assigned ``id``/``checksum`` keys that the published value lacks are
ignored, numbers within 1e-2 as upstream compares, tensors by shape and values), for session
every ``source||type`` group of the ``state_oracle`` must match the final rows, and for voice
the published outbound calls must match those of StateGen's voice API
(:mod:`callbench.tracks.stateful.services.speech_lab`) as a multiset. A task callbench cannot
provide (objects a scenario does not take, unreadable tensors, non-literal constants, a program
callbench's service refuses, a disagreeing oracle) is skipped with its reason; every skip is
returned, counted and printed, never dropped silently.
"""

from __future__ import annotations

import ast
import base64
import binascii
import hashlib
import json
import math
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError, DataError
from callbench.files import read_text
from callbench.tracks.stateful.services.speech_lab import API_DOC as SPEECH_LAB_DOC
from callbench.tracks.stateful.services.speech_lab import STATE_SECTION as OUTBOUND_CALLS
from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value, loads_json

SPLITS = ("session", "tensor", "voice")
ROW_KEYS = ("example_id", "evaluator_json", "prompt", "metadata_json")
RESULT_LINE = 'result = globals().get("RESULT")\n'
# upstream's tensor evaluator records a one-element tensor as its number and reads a program's the
# same way; run after the reference and after a model's program of a published tensor task
TENSOR_EPILOGUE = "if isinstance(globals().get('result'), torch.Tensor) and result.numel() == 1:\n    result = result.item()\n"
_TOL = 1e-2  # upstream's FLOAT_THRESHOLD
_SPEECH_EQ = 1e-6  # how close upstream's Speech.__eq__ takes two settings or durations to be
_LOAD_SPLITS = ("tensor", "voice")  # scenarios that take init_load_info objects
_ITEMSIZE = {"f2": 2, "f4": 4, "f8": 8, "i1": 1, "i2": 2, "i4": 4, "i8": 8, "u1": 1, "b1": 1}
_STRUCT = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "b1": "?"}
_DTYPE = re.compile(r"[<|=]?(f2|f4|f8|i1|i2|i4|i8|u1|b1)\Z")  # numpy dtype strings of little-endian data
_SPEECH_KEYS = ("text", "voice_name", "stability", "similarity_boost", "style", "duration", "transitions")
_EVALUATOR = re.compile(r"evaluator_(\d+)\.json$")
_BACKEND_KEYS = frozenset({"id", "checksum"})


@dataclass
class Row:
    """One published task, whichever layout it came from."""

    where: str  # "file:line" or the evaluator file: how errors name it
    split: str
    example_id: int
    evaluator: dict[str, Any]
    prompt: str


@dataclass
class Skipped:
    task: str
    reason: str


def parse_json(text: str, where: str, *, what: str = "") -> Any:
    """JSON of a published file within :mod:`callbench.untrusted`'s limits; otherwise a one-line
    DataError naming ``where`` (and ``what`` in it): not JSON, or nested too deep for the walks
    after it (a RecursionError in the parser included)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise DataError(f"{where}: {what}nested deeper than {DOCUMENT_MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: {what + 'is ' if what else ''}not JSON ({exc.msg})") from None
    try:
        return check_value(value, what=f"{where}: {what}".rstrip(": "), max_depth=DOCUMENT_MAX_DEPTH)
    except UntrustedInputError as exc:
        raise DataError(str(exc)) from None


# -- detection -------------------------------------------------------------------------------
def _split_of(name: str) -> str | None:
    for s in SPLITS:
        if name == s or name.startswith(f"{s}-") or name.startswith(f"{s}_"):
            return s
    return None


def _first_row(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return loads_json(line, what=str(path), max_depth=DOCUMENT_MAX_DEPTH)
    except (OSError, UnicodeDecodeError, UntrustedInputError):
        return None
    return None


def _is_row_file(path: Path) -> bool:
    row = _first_row(path)  # a row with any of the published columns (callbench's tasks have none)
    return isinstance(row, dict) and bool(set(row) & {"example_id", "evaluator_json", "metadata_json"})


def detect(path: Path) -> list[Path] | None:
    """The published files at ``path`` (JSON Lines rows, or evaluator + metadata files), or None
    when ``path`` is not in a published StateEval layout."""
    if path.is_file():
        return (
            [path] if path.suffix == ".jsonl" and path.name != "tasks.jsonl" and _is_row_file(path) else None
        )
    if not path.is_dir():
        return None
    rows = sorted(p for p in path.rglob("*.jsonl") if p.name != "tasks.jsonl" and _is_row_file(p))
    evaluators = sorted(p for p in path.rglob("evaluator_*.json") if _EVALUATOR.search(p.name))
    if not rows and not evaluators:
        return None
    metas = sorted({m for e in evaluators for m in e.parent.glob("*metadata.json")})
    return rows + evaluators + metas


# -- reading ---------------------------------------------------------------------------------
def _json_field(where: str, row: dict, key: str) -> dict[str, Any]:
    value = row[key]
    if isinstance(value, str):
        value = parse_json(value, where, what=f"field '{key}' ")
    if not isinstance(value, dict):
        raise DataError(f"{where}: field '{key}' must be a JSON object")
    return value


def _check_evaluator(where: str, ev: dict[str, Any]) -> None:
    cases = ev.get("test_cases")
    if not isinstance(cases, list) or not cases:
        raise DataError(f"{where}: field 'test_cases' must be a non-empty list")
    for i, tc in enumerate(cases):
        if not isinstance(tc, dict):
            raise DataError(f"{where}: test_cases[{i}] must be an object")
        if not isinstance(tc.get("program"), str):
            raise DataError(f"{where}: test_cases[{i}].program must be a string")
        info = tc.get("program_info")
        if not isinstance(info, dict) or not isinstance(info.get("init_local_str"), str):
            raise DataError(f"{where}: test_cases[{i}].program_info.init_local_str must be a string")
        if "result" not in tc:
            raise DataError(f"{where}: test_cases[{i}]: missing field 'result'")


def _rows_from_jsonl(path: Path) -> list[Row]:
    split = _split_of(path.stem)
    if split is None:
        raise DataError(
            f"{path}: cannot tell the scenario: name the file after its split ({', '.join(s + '.jsonl' for s in SPLITS)})"
        )
    rows = []
    for n, line in enumerate(read_text(path).split("\n"), 1):  # one-line error for unreadable or non-UTF-8 files
        if not line.strip():
            continue
        where = f"{path}:{n}"
        row = parse_json(line, where)
        if not isinstance(row, dict):
            raise DataError(f"{where}: a row must be a JSON object")
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise DataError(f"{where}: missing field '{missing[0]}'")
        if not isinstance(row["example_id"], int) or isinstance(row["example_id"], bool):
            raise DataError(f"{where}: field 'example_id' must be an integer")
        if not isinstance(row["prompt"], str) or not row["prompt"].strip():
            raise DataError(f"{where}: field 'prompt' must be a non-empty string")
        ev = _json_field(where, row, "evaluator_json")
        _json_field(where, row, "metadata_json")
        _check_evaluator(f"{where}: evaluator_json", ev)
        rows.append(Row(where, split, row["example_id"], ev, row["prompt"]))
    return rows


def _rows_from_trace_dir(directory: Path, evaluators: list[Path]) -> list[Row]:
    metas = sorted(directory.glob("*metadata.json"))
    if len(metas) != 1:
        found = ", ".join(m.name for m in metas) or "none"
        raise DataError(
            f"{directory}: expected one <split>_metadata.json next to the evaluator files, found {found}"
        )
    meta_path = metas[0]
    split = _split_of(meta_path.name) or _split_of(directory.name)
    if split is None:
        raise DataError(
            f"{meta_path}: cannot tell the scenario: name it <split>_metadata.json ({', '.join(SPLITS)})"
        )
    meta = parse_json(read_text(meta_path), str(meta_path))
    book = meta.get("prompt_book") if isinstance(meta, dict) else None
    if not isinstance(book, dict):
        raise DataError(
            f"{meta_path}: field 'prompt_book' (index -> task text) missing; a materialized Hugging Face copy has no prompts, export the rows with Dataset.to_json instead"
        )
    rows = []
    for ev_path in evaluators:
        idx = int(_EVALUATOR.search(ev_path.name).group(1))
        prompt = book.get(str(idx))
        if not isinstance(prompt, str) or not prompt.strip():
            raise DataError(f"{meta_path}: prompt_book has no task text for '{idx}' ({ev_path.name})")
        ev = parse_json(read_text(ev_path), str(ev_path))
        if not isinstance(ev, dict):
            raise DataError(f"{ev_path}: an evaluator must be a JSON object")
        _check_evaluator(str(ev_path), ev)
        rows.append(Row(str(ev_path), split, idx, ev, prompt))
    return rows


def read_rows(files: list[Path]) -> list[Row]:
    rows: list[Row] = []
    by_dir: dict[Path, list[Path]] = {}
    for f in files:
        if f.suffix == ".jsonl":
            rows.extend(_rows_from_jsonl(f))
        elif _EVALUATOR.search(f.name):
            by_dir.setdefault(f.parent, []).append(f)
    for d, evs in sorted(by_dir.items()):
        rows.extend(
            _rows_from_trace_dir(d, sorted(evs, key=lambda p: int(_EVALUATOR.search(p.name).group(1))))
        )
    return rows


# -- conversion ------------------------------------------------------------------------------
class _Unsupported(Exception):
    pass


def _constants(init_local_str: str) -> dict[str, Any]:
    try:
        tree = ast.parse(init_local_str)
    except SyntaxError as exc:
        raise _Unsupported(f"init_local_str is not Python ({exc.msg})") from None
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            raise _Unsupported(f"init_local_str line {stmt.lineno} is not a plain 'name = value' assignment")
        try:
            value = ast.literal_eval(stmt.value)
        except (ValueError, SyntaxError):
            raise _Unsupported(
                f"init_local_str line {stmt.lineno}: the value of '{stmt.targets[0].id}' is not a literal"
            ) from None
        try:
            if json.loads(json.dumps(value)) != value:
                raise ValueError
        except (TypeError, ValueError):
            raise _Unsupported(
                f"init_local_str: '{stmt.targets[0].id}' does not survive JSON (tuples, non-string keys)"
            ) from None
        out[stmt.targets[0].id] = value
    out.pop("BASE_URL", None)  # callbench binds the service's address itself
    return out


def _seed(split: str, info: dict[str, Any]) -> list[dict[str, Any]] | None:
    implicit = info.get("init_implicit_dict")
    if split != "session":
        return None
    if implicit in (None, {}):
        return []
    if not isinstance(implicit, dict):
        raise _Unsupported("init_implicit_dict is not an object of sessions")
    seed = []
    for key, row in implicit.items():
        if not isinstance(row, dict) or not {"source", "type"} <= set(row):
            raise _Unsupported(f"init_implicit_dict['{key}'] is not a session with source and type")
        data = row.get("data") or {}
        if not isinstance(data, dict):
            raise _Unsupported(f"init_implicit_dict['{key}'].data is not an object")
        seed.append({"source": str(row["source"]), "type": str(row["type"]), "data": data})
    return seed


def _tensor_values(payload: dict[str, Any]) -> tuple[list[int], list[float]] | None:
    """(shape, flat values) of an upstream tensor payload, None when it is not a readable one."""
    shape, dtype, data = payload.get("shape"), payload.get("dtype"), payload.get("data_b64")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        return None
    if not (isinstance(dtype, str) and _DTYPE.match(dtype) and isinstance(data, str)):
        return None
    code = dtype.lstrip("<|=")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != math.prod(shape) * _ITEMSIZE[code]:
        return None
    return shape, [v[0] for v in struct.iter_unpack("<" + _STRUCT[code], raw)]


def _tensor_agrees(published: dict[str, Any], actual: Any) -> bool:
    """A published tensor against callbench's JSON form of one (``{"__tensor__": {"shape",
    "data"}}``): same shape, values within upstream's ``allclose(rtol=atol=1e-2)``."""
    want = _tensor_values(published)
    have = actual.get("__tensor__") if isinstance(actual, dict) and set(actual) == {"__tensor__"} else None
    if want is None or not isinstance(have, dict) or have.get("shape") != want[0]:
        return False
    data = have.get("data")
    if not isinstance(data, list) or len(data) != len(want[1]):
        return False
    return all(
        isinstance(a, (int, float)) and abs(a - b) <= _TOL + _TOL * abs(b) for a, b in zip(data, want[1], strict=True)
    )


def agrees(published: Any, actual: Any) -> bool:
    """Does callbench's value match the published one? Keys the server assigns (``id``,
    ``checksum``) may be absent from the published value; numbers compare within 1e-2 (absolute,
    upstream's threshold), published tensors (``{"__tensor__": true, ...}``) by shape and values."""
    if isinstance(published, bool) or isinstance(actual, bool):
        return type(published) is type(actual) and published == actual
    if isinstance(published, (int, float)) and isinstance(actual, (int, float)):
        return abs(published - actual) <= _TOL
    if isinstance(published, dict) and published.get("__tensor__") is True:
        return _tensor_agrees(published, actual)
    if isinstance(published, dict) and isinstance(actual, dict):
        if not set(published) <= set(actual) or set(actual) - set(published) - _BACKEND_KEYS:
            return False
        return all(agrees(published[k], actual[k]) for k in published)
    if isinstance(published, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(published) == len(actual) and all(
            agrees(p, a) for p, a in zip(published, actual, strict=True)
        )
    return published == actual


def _state_agrees(oracle: Any, state: Any) -> str | None:
    """None when every ``source||type`` group of a session ``state_oracle`` matches the final rows
    (as multisets), else why not."""
    if oracle in (None, {}):
        return None
    if not isinstance(oracle, dict) or not isinstance(state, list):
        return "state_oracle is not a source||type -> sessions object"
    for key, want in oracle.items():
        source, _, type_ = str(key).partition("||")
        have = [
            r for r in state if isinstance(r, dict) and r.get("source") == source and r.get("type") == type_
        ]
        if not isinstance(want, list) or len(want) != len(have):
            return f"state_oracle['{key}']: {len(want) if isinstance(want, list) else '?'} sessions published, {len(have)} under callbench"
        left = list(have)
        for w in want:
            hit = next((i for i, h in enumerate(left) if agrees(w, h)), None)
            if hit is None:
                return f"state_oracle['{key}']: a published session has no match in callbench's final state"
            left.pop(hit)
    return None


def _calls_agree(oracle: Any, state: Any) -> str | None:
    """None when the published voice ``state_oracle`` (``[speech, voice name]`` per outbound call)
    matches SpeechLab's outbound calls in callbench's final state as a multiset (as upstream
    compares them), else why not."""
    want = oracle if oracle is not None else []
    have = state.get(OUTBOUND_CALLS, []) if isinstance(state, dict) else []
    if not isinstance(want, list):
        return "state_oracle is not a list of outbound calls"
    if len(want) != len(have):
        return f"state_oracle: {len(want)} outbound calls published, {len(have)} under callbench"
    left = list(have)
    for w in want:
        hit = next((i for i, h in enumerate(left) if agrees(w, h)), None)
        if hit is None:
            return "state_oracle: a published outbound call has no match in callbench's final state"
        left.pop(hit)
    return None


def _tensor_problem(value: Any) -> str | None:
    """Why a tensor task's init_load_info value cannot be rebuilt as upstream rebuilds it (None: it can)."""
    if isinstance(value, list):
        return None  # upstream makes it a tensor (torch.tensor)
    if not isinstance(value, dict) or value.get("__tensor__") is not True:
        return f"a {type(value).__name__}, not a tensor (upstream clones every preloaded object as a tensor)"
    if _tensor_values(value) is None:
        return "not a readable tensor: 'shape' (sizes), 'dtype' (little-endian numpy type such as '<f4') and 'data_b64' (exactly that many bytes, base64) are needed"
    return None


def _loads(split: str, info: dict[str, Any]) -> dict[str, Any]:
    """The objects ``init_load_info`` preloads, as callbench preloads (``{"__load__": <published
    JSON>}``, rebuilt by the scenario's setup inside the sandbox)."""
    load = info.get("init_load_info")
    if not load:
        return {}
    if not isinstance(load, list) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) and p[0].isidentifier() for p in load
    ):
        raise _Unsupported("init_load_info is not a list of [name, value] pairs")
    if split not in _LOAD_SPLITS:
        names = ", ".join(str(p[0]) for p in load)
        raise _Unsupported(
            f"it preloads objects from init_load_info ({names}), which callbench's {split} scenario does not take"
        )
    out: dict[str, Any] = {}
    for name, value in load:
        if split == "tensor":
            why = _tensor_problem(value)
            if why:
                raise _Unsupported(f"init_load_info '{name}': {why}")
        elif isinstance(value, dict) and value.get("is_speech") and not set(_SPEECH_KEYS) <= set(value):
            missing = [k for k in _SPEECH_KEYS if k not in value]
            raise _Unsupported(f"init_load_info '{name}': a speech object without '{missing[0]}'")
        out[name] = {"__load__": value}
    return out


def _describe_load(split: str, value: Any) -> str:
    if split == "tensor":
        return "a preloaded tensor"
    inner = value.get("__load__") if isinstance(value, dict) else None
    return "a preloaded Speech object" if isinstance(inner, dict) and inner.get("is_speech") else "a preloaded object"


def epilogue(split: str) -> str:
    """Trusted code run after a published task's program (the reference's and a model's)."""
    return TENSOR_EPILOGUE if split == "tensor" else ""


def convert(row: Row, *, timeout_s: float = 20.0) -> dict[str, Any]:
    """callbench's task for one published row (``_Unsupported``: why callbench cannot provide it)."""
    from callbench.tracks.stateful.complexity import analyse, free_function_roots
    from callbench.tracks.stateful.execution import Case, default_limits, execute
    from callbench.tracks.stateful.generator import _oracle
    from callbench.tracks.stateful.scenarios import get_scenario

    scenario = get_scenario(row.split)
    tcs = row.evaluator["test_cases"]
    program = tcs[0]["program"]
    if any(tc["program"] != program for tc in tcs):
        raise _Unsupported("its test cases run different programs")
    reference = program.rstrip("\n") + "\n" + RESULT_LINE
    limits = default_limits(scenario, timeout_s=timeout_s)
    cases = []
    inputs: dict[str, str] = {}
    finish = epilogue(row.split)
    for i, tc in enumerate(tcs):
        info = tc["program_info"]
        loads = _loads(row.split, info)
        constants = _constants(info["init_local_str"])
        preload = {**loads, **constants}  # upstream binds the loaded objects first, then runs init_local_str
        for name in preload:
            if name != "RESULT":
                inputs.setdefault(name, _describe_load(row.split, preload[name]) if name in loads and name not in constants else "a preloaded value")
        case = Case("base" if i == 0 else f"case_{i}", preload, _seed(row.split, info))
        try:
            out = execute(scenario, reference + finish, case, limits)
        except CallbenchError:
            raise  # a missing extra or bad data is the user's to fix, not the task's to skip
        except Exception as exc:  # noqa: BLE001 - a setup the scenario rejects is a reason to skip
            raise _Unsupported(
                f"callbench's {row.split} scenario cannot run it: {type(exc).__name__}: {exc}"
            ) from None
        if out.status != "ok":
            first = (out.error or "").strip().splitlines()[-1:] or [""]
            raise _Unsupported(
                f"test case {i}: the reference fails under callbench's {row.split} service ({out.status}: {first[0][:160]})"
            )
        if isinstance(out.result, dict) and "__too_large__" in out.result:
            raise _Unsupported(
                f"test case {i}: the result ({out.result.get('bytes')} bytes as JSON) is larger than the sandbox returns"
            )
        if not agrees(tc["result"], out.result):
            raise _Unsupported(
                f"test case {i}: the reference's result under callbench differs from the published oracle"
            )
        why = None
        if row.split == "session":
            why = _state_agrees(tc.get("state_oracle"), out.state)
        elif row.split == "voice":
            why = _calls_agree(tc.get("state_oracle"), out.state)
        if why:
            raise _Unsupported(f"test case {i}: {why}")
        cases.append(
            {
                "name": case.name,
                "preload": preload,
                "service_seed": case.service_seed,
                "expected": _oracle(out),
            }
        )
    try:
        complexity = analyse(reference, set(scenario.runtime.call_roots) | free_function_roots(reference))
    except SyntaxError as exc:
        raise _Unsupported(f"the reference is not Python ({exc.msg})") from None
    extra: dict[str, Any] = {}
    if finish:
        extra["result_epilogue"] = finish
    if row.split == "tensor":  # upstream's threshold: numbers within 1e-2, absolute
        extra["tolerance"] = [0.0, _TOL]
    if row.split == "voice":  # its programs call StateGen's SpeechLab functions, not callbench's `api`
        extra["doc"] = SPEECH_LAB_DOC
        # upstream's voice evaluator: a list result in any order, speeches' numbers within 1e-6
        extra["unordered_result"] = True
        extra["tolerance"] = [0.0, _SPEECH_EQ]
    return {
        **extra,
        "id": task_id(row),
        "scenario": row.split,
        "text": row.prompt.strip(),
        "inputs": inputs,
        "result_var": scenario.result_var,
        "reference": reference,
        "cases": cases,
        "complexity": {
            **complexity,
            "instruction_chars": len(row.prompt.strip()),
            "instruction_words": len(row.prompt.split()),
        },
        "source": {
            "benchmark": "StateEval (published)",
            "split": row.split,
            "example_id": row.example_id,
            "row": row.where,
        },
    }


def references(files: list[Path]) -> list[dict[str, Any]]:
    """Every published row as a task that only ``analyze complexity`` needs (``id``, ``scenario``,
    ``reference``, ``call_roots``), with no conversion or execution: the complexity of the whole
    published set, the tasks callbench cannot run included. The call roots are the scenario's
    plus the bare functions the program calls (upstream's voice API is module-level functions);
    ``published_program`` is the program as published (without callbench's result line), which
    ``--definition upstream`` measures."""
    from callbench.tracks.stateful.complexity import free_function_roots
    from callbench.tracks.stateful.scenarios import get_scenario

    out = []
    for row in read_rows(files):
        reference = row.evaluator["test_cases"][0]["program"].rstrip("\n") + "\n" + RESULT_LINE
        try:
            extra = free_function_roots(reference)
        except SyntaxError as exc:
            raise DataError(f"{row.where}: the program is not Python ({exc.msg}, line {exc.lineno})") from None
        roots = sorted(set(get_scenario(row.split).runtime.call_roots) | extra)
        out.append(
            {
                "id": task_id(row),
                "scenario": row.split,
                "reference": reference,
                "call_roots": roots,
                "published_program": row.evaluator["test_cases"][0]["program"],  # as upstream's analyzer reads it
            }
        )
    return out


def task_id(row: Row) -> str:
    return f"stateeval_{row.split}_{row.example_id:03d}"


_CACHE: dict[str, tuple[list[dict[str, Any]], list[Skipped]]] = {}


def load(
    path: Path, files: list[Path] | None = None, *, timeout_s: float = 20.0, report: bool = True
) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """(tasks, skipped) of the published StateEval at ``path``; skips are printed (count, then
    one line each) to stderr when ``report``."""
    files = files if files is not None else detect(path)
    if not files:
        raise DataError(
            f"{path}: not a published StateEval layout (no <split>.jsonl rows with 'evaluator_json', no evaluator_<idx>.json)"
        )
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    key = f"{h.hexdigest()}:{timeout_s}"
    if key not in _CACHE:
        rows = read_rows(files)
        tasks: list[dict[str, Any]] = []
        skipped: list[Skipped] = []
        seen: set[str] = set()
        for row in rows:
            tid = task_id(row)
            if tid in seen:
                raise DataError(f"{row.where}: example_id {row.example_id} used twice in split '{row.split}'")
            seen.add(tid)
            try:
                tasks.append(convert(row, timeout_s=timeout_s))
            except _Unsupported as exc:
                skipped.append(Skipped(tid, str(exc)))
        _CACHE[key] = (tasks, skipped)
    tasks, skipped = _CACHE[key]
    if report and skipped:
        print(
            f"published StateEval at {path}: {len(tasks)} tasks loaded, {len(skipped)} skipped:",
            file=sys.stderr,
        )
        for s in skipped:
            print(f"  skipped {s.task}: {s.reason}", file=sys.stderr)
    return [json.loads(json.dumps(t)) for t in tasks], list(skipped)
