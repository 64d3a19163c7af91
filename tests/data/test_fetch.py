import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import httpx
import pytest

from callbench.data.fetch import DATASETS, UPSTREAMS, fetch_data, is_complete, parse_pins
from callbench.data.lock import LOCK_NAME, lock_entry, sha256_file, write_lock
from callbench.errors import DataError


def _transport(root, *, corrupt=None, fail_first=0):
    calls = {"n": 0}
    base = DATASETS["wapiibench"].base_url

    def handler(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] <= fail_first:
            return httpx.Response(503)
        rel = str(request.url).removeprefix(base + "/")
        if not (root / "wapiibench" / rel).is_file():  # e.g. the optional published prompt
            return httpx.Response(404)
        body = (root / "wapiibench" / rel).read_bytes()
        if corrupt and rel == corrupt:
            body = body + b" "
        return httpx.Response(200, content=body)

    return httpx.MockTransport(handler), calls


def test_fetch_downloads_and_verifies(tmp_path, data_root):
    transport, calls = _transport(data_root, fail_first=1)
    with httpx.Client(transport=transport) as client:
        dest = fetch_data("wapiibench", root=tmp_path, client=client)
    assert dest == tmp_path / "wapiibench"
    assert is_complete("wapiibench", tmp_path)
    n_files = len(DATASETS["wapiibench"].files)
    assert calls["n"] == n_files + 1  # one 503 retried
    assert not (tmp_path / "wapiibench" / "callbench.lock.json").exists()  # fully pinned: no lock
    # second fetch: everything present, nothing downloaded
    transport2, calls2 = _transport(data_root)
    with httpx.Client(transport=transport2) as client:
        fetch_data("wapiibench", root=tmp_path, client=client)
    # nothing downloaded; only the optional published prompt, absent here, is asked for again
    assert calls2["n"] == (0 if (data_root / "wapiibench/resources/code_generation_prompt.md").is_file() else 1)


def test_offline_with_complete_data_succeeds(tmp_path, data_root):
    """Issue 31: with every required file present, a fetch without network skips the optional
    ones (the published prompt) instead of exiting with an error."""
    transport, _ = _transport(data_root)
    with httpx.Client(transport=transport) as client:
        fetch_data("wapiibench", root=tmp_path, client=client)
    optional = [f.path for f in DATASETS["wapiibench"].files if not f.required]
    for rel in optional:
        (tmp_path / "wapiibench" / rel).unlink(missing_ok=True)

    def offline(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Name or service not known", request=request)

    events = []
    with httpx.Client(transport=httpx.MockTransport(offline)) as client:
        fetch_data("wapiibench", root=tmp_path, client=client, on_file=lambda p, s, d: events.append((p, s, d)))
    assert optional and {(p, s) for p, s, _ in events if p in optional} == {(p, "skipped") for p in optional}
    assert all("not reachable" in d for p, _, d in events if p in optional)
    assert is_complete("wapiibench", tmp_path)
    # a required file missing offline is still an error naming what to do
    required = next(f.path for f in DATASETS["wapiibench"].files if f.required)
    (tmp_path / "wapiibench" / required).unlink()
    with httpx.Client(transport=httpx.MockTransport(offline)) as client, pytest.raises(DataError, match="offline\\?"):
        fetch_data("wapiibench", root=tmp_path, client=client)


def test_checksum_mismatch_leaves_no_file(tmp_path, data_root):
    transport, _ = _transport(data_root, corrupt="openapi/real_world_specs/slack.yaml")
    with httpx.Client(transport=transport) as client, pytest.raises(DataError, match="slack.yaml: checksum mismatch"):
        fetch_data("wapiibench", root=tmp_path, client=client)
    assert not (tmp_path / "wapiibench/openapi/real_world_specs/slack.yaml").exists()
    assert not list((tmp_path / "wapiibench/openapi/real_world_specs").glob(".part-*"))


def test_fetch_from_local_mirror(tmp_path, data_root):
    fetch_data("wapiibench", root=tmp_path, mirror=data_root / "wapiibench")
    f = tmp_path / "wapiibench/data/synthetic/all/test_data_final.json"
    assert hashlib.sha256(f.read_bytes()).hexdigest() == DATASETS["wapiibench"].files[1].sha256


def test_unknown_dataset_and_offline_message(tmp_path):
    with pytest.raises(DataError, match="unknown dataset 'nope'"):
        fetch_data("nope", root=tmp_path)

    def offline(request):
        raise httpx.ConnectError("no network")

    with httpx.Client(transport=httpx.MockTransport(offline)) as client, pytest.raises(DataError, match="--from DIR"):
        fetch_data("wapiibench", root=tmp_path, client=client)


# -- NESTFUL: trust on first use, two upstreams, mirrors, default data resolution

GITHUB = UPSTREAMS["nestful"]["github"]
HF = UPSTREAMS["nestful"]["hf"]
DATA = "data_v2/nestful_data.jsonl"
ICL = "src/icl_examples.json"
PROMPTS = "src/PROMPTS.json"
PROMPTS_TEXT = b'{"LLaMa-3.1": "tools: {FUNCTION_STR} examples: {ICL_EXAMPLES} question: {QUERY}"}'
PARQUET = "data/train-00000-of-00001.parquet"
HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None
LICENSE_TEXT = b"Apache License, Version 2.0 (test stand-in)\n"


def _row(i: int, answer: float = 3.0) -> dict:
    return {
        "sample_id": f"s-{i}",
        "input": f"add 1 and {i}",
        "output": [{"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": i}}],
        "tools": [
            {
                "name": "add",
                "description": "adds two numbers",
                "parameters": {"arg_0": {"type": "int"}, "arg_1": {"type": "int"}},
                "output_parameters": {"result": {"type": "int"}},
            }
        ],
        "gold_answer": answer,
    }


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _upstream(n: int = 3) -> dict[str, bytes]:
    """What the fake GitHub serves, by URL."""
    return {
        GITHUB.url(GITHUB.files[0]): LICENSE_TEXT,
        f"{GITHUB.base_url}/{DATA}": _jsonl(_row(i) for i in range(n)),
        f"{GITHUB.base_url}/{ICL}": json.dumps([_row(100), _row(101)]).encode(),
        f"{GITHUB.base_url}/{PROMPTS}": PROMPTS_TEXT,
        # the code-domain tool implementations: a map and the files it names (see the end of this file)
        f"{GITHUB.base_url}/{FUNCS}/func_file_map.json": json.dumps({"shout": "py_code_file_1.py"}).encode(),
        f"{GITHUB.base_url}/{FUNCS}/py_code_file_1.py": TOOL_FILES["py_code_file_1.py"],
    }


def _serve(files: dict[str, bytes]):
    """A fake upstream (GitHub raw and the Hugging Face resolve endpoint): 404 for anything else."""
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        calls.append(url)
        body = files.get(url)
        if body is None:
            return httpx.Response(404)
        if callable(body):
            return httpx.Response(200, content=body())
        return httpx.Response(200, content=body)

    return httpx.MockTransport(handler), calls


# The test stand-in LICENSE is not the pinned Apache text, so every fetch pins it like a user would.
PIN_LICENSE = {"LICENSE": _sha(LICENSE_TEXT)}


def _fetch(tmp_path, files, **kw):
    transport, calls = _serve(files)
    events: list[tuple[str, str, str]] = []
    kw.setdefault("pins", PIN_LICENSE)
    with httpx.Client(transport=transport) as client:
        fetch_data("nestful", root=tmp_path, client=client, on_file=lambda *e: events.append(e), **kw)
    return calls, events


def _lock(tmp_path) -> dict:
    return json.loads((tmp_path / "nestful" / LOCK_NAME).read_text())["files"]


def test_nestful_trust_on_first_use_records_then_verifies(tmp_path):
    files = _upstream()
    calls, events = _fetch(tmp_path, files)
    assert len(calls) == 6  # LICENSE, data, icl, prompts, the tool map and its one file
    data = tmp_path / "nestful" / DATA
    assert data.read_bytes() == files[f"{GITHUB.base_url}/{DATA}"]
    assert (tmp_path / "nestful" / ICL).is_file()
    states = {path: (state, detail) for path, state, detail in events}
    assert states[DATA] == ("recorded", f"sha256 {_sha(data.read_bytes())}, 3 rows")
    assert states[ICL][0] == "recorded" and states["LICENSE"] == ("fetched", "")
    lock = _lock(tmp_path)
    assert lock[DATA]["sha256"] == _sha(data.read_bytes())
    assert lock[DATA]["url"] == f"https://raw.githubusercontent.com/IBM/NESTFUL/{GITHUB.base_url.rsplit('/', 1)[1]}/{DATA}"
    assert lock[DATA]["fetched_at"].endswith("Z")
    assert is_complete("nestful", tmp_path, pins=PIN_LICENSE)
    assert not is_complete("nestful", tmp_path)  # the stand-in LICENSE is not the pinned text
    # again: everything present and matching the lock, nothing downloaded
    calls, events = _fetch(tmp_path, files)
    assert calls == [] and {state for _, state, _ in events} == {"present"}


def test_nestful_upstream_change_is_a_mismatch_until_force(tmp_path):
    _fetch(tmp_path, _upstream(3))
    recorded = _lock(tmp_path)[DATA]["sha256"]
    changed = _upstream(4)
    data = tmp_path / "nestful" / DATA
    data.write_bytes(b"locally damaged\n")  # forces a re-download, which must match the lock
    with pytest.raises(DataError, match=r"nestful_data\.jsonl: checksum mismatch with .*callbench\.lock\.json.*--force") as exc:
        _fetch(tmp_path, changed)
    assert "\n" not in str(exc.value) and recorded in str(exc.value) and "the upstream file changed" in str(exc.value)
    assert data.read_bytes() == b"locally damaged\n" and _lock(tmp_path)[DATA]["sha256"] == recorded
    assert not list(data.parent.glob(".part-*"))
    _, events = _fetch(tmp_path, changed, force=True)
    assert ("recorded" in {s for p, s, _ in events if p == DATA}) and "4 rows" in dict((p, d) for p, _, d in events)[DATA]
    assert _lock(tmp_path)[DATA]["sha256"] == _sha(changed[f"{GITHUB.base_url}/{DATA}"]) != recorded


def test_nestful_sha256_pins(tmp_path):
    files = _upstream()
    body = files[f"{GITHUB.base_url}/{DATA}"]
    with pytest.raises(DataError, match=f"nestful_data.jsonl: checksum mismatch \\(sha256 {_sha(body)}, expected {'0' * 64}\\)"):
        _fetch(tmp_path, files, pins={**PIN_LICENSE, DATA: "0" * 64})
    assert not (tmp_path / "nestful" / DATA).exists()
    _, events = _fetch(tmp_path, files, pins={**PIN_LICENSE, DATA: _sha(body).upper().lower()})
    assert ("fetched" in {s for p, s, _ in events if p == DATA}) and _lock(tmp_path)[DATA]["sha256"] == _sha(body)
    with pytest.raises(DataError, match="--sha256 data/x.jsonl: not a file of nestful"):
        _fetch(tmp_path, files, pins={"data/x.jsonl": "0" * 64})
    assert parse_pins([f"{DATA}={'A' * 64}"]) == {DATA: "a" * 64}
    for bad in ("nohash", f"{DATA}=123", f"={'a' * 64}"):
        with pytest.raises(DataError, match="--sha256"):
            parse_pins([bad])
    # the pinned LICENSE of the real source is checked as before
    with pytest.raises(DataError, match="LICENSE: checksum mismatch"):
        _fetch(tmp_path / "other", files, pins={})


def test_nestful_rejects_rows_that_are_not_v2(tmp_path):
    files = _upstream()
    bad = dict(_row(0))
    del bad["sample_id"]
    files[f"{GITHUB.base_url}/{DATA}"] = _jsonl([_row(1), bad])
    with pytest.raises(DataError, match=r"nestful_data\.jsonl: \[1\]\.sample_id: missing, not a NESTFUL v2 row"):
        _fetch(tmp_path, files)
    files[f"{GITHUB.base_url}/{DATA}"] = b'{"sample_id": "a"\n'
    with pytest.raises(DataError, match=r"https://raw\.githubusercontent\.com/IBM/NESTFUL/.*/data_v2/nestful_data\.jsonl:1: invalid JSON"):
        _fetch(tmp_path, files)
    assert not (tmp_path / "nestful" / DATA).exists()
    assert DATA not in _lock(tmp_path)


def test_nestful_interrupted_download_leaves_no_partial_file(tmp_path):
    files = _upstream()

    def interrupted():
        yield b'{"sample_id": "s-0", '
        raise KeyboardInterrupt

    files[f"{GITHUB.base_url}/{DATA}"] = interrupted
    with pytest.raises(KeyboardInterrupt):
        _fetch(tmp_path, files)
    folder = tmp_path / "nestful" / "data_v2"
    assert not (folder / "nestful_data.jsonl").exists() and not list(folder.glob(".part-*"))
    assert DATA not in _lock(tmp_path)


def test_nestful_optional_icl_may_be_missing_upstream(tmp_path):
    files = _upstream()
    del files[f"{GITHUB.base_url}/{ICL}"]
    _, events = _fetch(tmp_path, files)
    assert (ICL, "skipped") in {(p, s) for p, s, _ in events} and (tmp_path / "nestful" / DATA).is_file()


def test_nestful_from_hugging_face(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{k: json.dumps(v) if k in ("output", "tools") else v for k, v in _row(i).items()} for i in range(5)]
    for r in rows:
        r["gold_answer"] = str(r["gold_answer"])
    src = tmp_path / "src.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    url = f"https://huggingface.co/datasets/ibm-research/nestful/resolve/main/{PARQUET}"
    assert HF.url(HF.files[0]) == url
    calls, events = _fetch(tmp_path, {url: src.read_bytes()}, source="hf", pins={})
    assert calls == [url] and events[0][:2] == (PARQUET, "recorded") and "5 rows" in events[0][2]
    assert _lock(tmp_path)[PARQUET]["url"] == url
    calls, _ = _fetch(tmp_path, {url: src.read_bytes()}, source="hf", pins={})
    assert calls == []
    with pytest.raises(DataError, match="--source gitlab: dataset 'nestful' can be fetched from github, hf"):
        fetch_data("nestful", root=tmp_path, source="gitlab")
    with pytest.raises(DataError, match="--source hf: dataset 'wapiibench' can be fetched from github"):
        fetch_data("wapiibench", root=tmp_path, source="hf")


def _mirror(tmp_path, n=3) -> Path:
    m = tmp_path / "mirror"
    m.mkdir()
    (m / "nestful_data.jsonl").write_bytes(_jsonl(_row(i) for i in range(n)))  # the file directly
    (m / "LICENSE").write_bytes(LICENSE_TEXT)
    return m


def test_nestful_from_a_directory_holding_the_file(tmp_path):
    m = _mirror(tmp_path)
    fetch_data("nestful", root=tmp_path / "d", mirror=m, pins=PIN_LICENSE)
    assert (tmp_path / "d/nestful" / DATA).read_bytes() == (m / "nestful_data.jsonl").read_bytes()
    assert _lock(tmp_path / "d")[DATA]["url"] == str(m / "nestful_data.jsonl")


def test_nestful_validator_is_found_before_the_nested_track_is_imported(tmp_path):
    """The data layer imports no track; the nested track registers its ``nestful-v2`` check, and
    fetching loads it on first use (a fresh interpreter, as ``callbench data fetch nestful``)."""
    import subprocess
    import sys

    m = _mirror(tmp_path)
    code = (
        "import sys\n"
        "from callbench.data.fetch import fetch_data\n"
        "assert not [n for n in sys.modules if n.startswith('callbench.tracks')], 'data imported a track'\n"
        "events = []\n"
        f"fetch_data('nestful', root={str(tmp_path / 'd')!r}, mirror={str(m)!r}, pins={PIN_LICENSE!r},\n"
        "           on_file=lambda *e: events.append(e))\n"
        "print([d for p, s, d in events if p == 'data_v2/nestful_data.jsonl'][0])\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith(", 3 rows")


def test_unknown_validator_is_a_programming_error():
    from callbench.data.validators import get_validator

    with pytest.raises(ValueError, match="unknown validator 'nope'"):
        get_validator("nope")


def test_nestful_mirror_with_samples_only_says_what_is_missing(tmp_path):
    m = tmp_path / "samples"
    (m / "v2-samples").mkdir(parents=True)
    (m / "v2-samples" / "toy.jsonl").write_bytes(_jsonl([_row(0)]))
    (m / "LICENSE").write_bytes(LICENSE_TEXT)
    with pytest.raises(DataError, match=r"data_v2/nestful_data\.jsonl: missing in mirror .*it holds only v2-samples/toy\.jsonl"):
        fetch_data("nestful", root=tmp_path / "d", mirror=m, pins=PIN_LICENSE)
    assert not (tmp_path / "d" / "nestful").exists()  # nothing copied before the check


def test_default_task_file_prefers_fetched_v2(tmp_path, monkeypatch):
    from callbench.tracks.nested.dataset import builtin_tasks, default_task_file
    from callbench.tracks.nested.track import NestedOptions, NestedTrack

    monkeypatch.setenv("CALLBENCH_DATA_DIR", str(tmp_path / "d"))
    path, note = default_task_file()
    assert path == builtin_tasks() and "built-in generated set" in note and "data fetch nestful" in note
    fetch_data("nestful", mirror=_mirror(tmp_path), pins=PIN_LICENSE)
    fetched = tmp_path / "d" / "nestful" / DATA
    path, note = default_task_file()
    assert path == fetched and "NESTFUL v2" in note and "\n" not in note
    track = NestedTrack(NestedOptions())
    assert track.task_file == fetched and track.data_note == note
    assert [s.id for s in track.load_samples()] == ["s-0", "s-1", "s-2"]
    # an explicit data dir wins over the environment
    other = tmp_path / "other"
    other.mkdir()
    assert NestedTrack(NestedOptions(data=str(other))).task_file == builtin_tasks()
    assert NestedTrack(NestedOptions(data=str(tmp_path / "d"))).task_file == fetched
    # a task file is used as given, with no note
    assert NestedTrack(NestedOptions(data=str(fetched))).data_note is None
    fetched.write_bytes(fetched.read_bytes() + b"\n")
    with pytest.raises(DataError, match=r"nestful_data\.jsonl: sha256 differs from .*callbench\.lock\.json.*--force"):
        default_task_file()


def test_default_task_file_uses_fetched_parquet(tmp_path):
    from callbench.tracks.nested.dataset import builtin_tasks, default_task_file

    parquet = tmp_path / "nestful" / PARQUET
    parquet.parent.mkdir(parents=True)
    parquet.write_bytes(b"PAR1")
    lock = {PARQUET: lock_entry(sha256_file(parquet), "https://example.invalid/p")}
    write_lock(tmp_path / "nestful", "nestful", lock)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        path, note = default_task_file(tmp_path)
        assert path == builtin_tasks() and "needs pyarrow" in note
    else:
        assert default_task_file(tmp_path)[0] == parquet
    jsonl = tmp_path / "nestful" / DATA
    jsonl.parent.mkdir(parents=True)
    jsonl.write_bytes(_jsonl([_row(0)]))
    write_lock(tmp_path / "nestful", "nestful", {**lock, DATA: lock_entry(sha256_file(jsonl), "https://example.invalid/j")})
    assert default_task_file(tmp_path)[0] == jsonl  # the GitHub file first


def test_default_task_file_refuses_a_file_without_lock_record(tmp_path, monkeypatch):
    import dataclasses

    from callbench.tracks.nested.dataset import default_task_file

    jsonl = tmp_path / "nestful" / DATA
    jsonl.parent.mkdir(parents=True)
    jsonl.write_bytes(_jsonl([_row(0)]))
    with pytest.raises(DataError, match=r"nestful_data\.jsonl: no record in .*callbench\.lock\.json.*re-fetch with 'callbench data fetch nestful'") as exc:
        default_task_file(tmp_path)
    assert "\n" not in str(exc.value)
    parquet = tmp_path / "nestful" / PARQUET
    jsonl.unlink()
    parquet.parent.mkdir(parents=True)
    parquet.write_bytes(b"PAR1")
    if HAS_PYARROW:
        with pytest.raises(DataError, match=r"no record in .*'callbench data fetch nestful --source hf'"):
            default_task_file(tmp_path)
    parquet.unlink()
    # a checksum pinned in the code stands in for the lock record
    jsonl.write_bytes(_jsonl([_row(0)]))
    files = tuple(
        dataclasses.replace(f, sha256=sha256_file(jsonl)) if f.path == DATA else f for f in GITHUB.files
    )
    monkeypatch.setitem(UPSTREAMS["nestful"], "github", dataclasses.replace(GITHUB, files=files))
    assert default_task_file(tmp_path)[0] == jsonl
    jsonl.write_bytes(_jsonl([_row(1)]))
    with pytest.raises(DataError, match=r"nestful_data\.jsonl: sha256 differs from the pinned .*--force"):
        default_task_file(tmp_path)


def test_nestful_interrupted_re_record_never_leaves_file_and_lock_disagreeing(tmp_path, monkeypatch):
    """--force re-records a changed upstream file; an interruption before any of its durable steps
    (lock writes, the rename into place) leaves every file on disk either matching its lock entry or
    without one, which default_task_file refuses with 're-fetch'; a plain re-fetch then heals it."""
    import callbench.data.fetch as fetch_mod
    from callbench.tracks.nested.dataset import default_task_file

    real_write_lock, real_replace = fetch_mod.write_lock, Path.replace
    step = {"n": 0, "at": -1}

    def tick():
        if step["n"] == step["at"]:
            step["n"] += 1
            raise KeyboardInterrupt
        step["n"] += 1

    def write_lock_(*a, **kw):
        tick()
        return real_write_lock(*a, **kw)

    def replace_(self, target):
        if Path(target).name != LOCK_NAME:  # the lock's own rename is counted as write_lock
            tick()
        return real_replace(self, target)

    old, new = _upstream(3), _upstream(4)
    at = 0
    while True:
        root = tmp_path / f"run{at}"
        _fetch(root, old)
        monkeypatch.setattr(fetch_mod, "write_lock", write_lock_)
        monkeypatch.setattr(Path, "replace", replace_)
        step.update(n=0, at=at)
        try:
            _fetch(root, new, force=True)
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        finally:
            monkeypatch.undo()
        lock = _lock(root)
        for rel, entry in lock.items():
            assert sha256_file(root / "nestful" / rel) == entry["sha256"], (at, rel)
        data = root / "nestful" / DATA
        if DATA in lock:
            assert default_task_file(root)[0] == data
        else:
            with pytest.raises(DataError, match="no record in .*re-fetch"):
                default_task_file(root)
            _fetch(root, new)
            assert _lock(root)[DATA]["sha256"] == sha256_file(data)
            assert default_task_file(root)[0] == data
        if not interrupted:
            break
        at += 1
    assert at >= 3  # drop the old entry, rename, record the new one (and the ICL file's steps)


def test_cli_fetch_nestful(tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app

    m = _mirror(tmp_path)
    runner = CliRunner()
    args = ["data", "fetch", "nestful", "--from", str(m), "--data", str(tmp_path / "d"), "--sha256", f"LICENSE={_sha(LICENSE_TEXT)}"]
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    digest = _sha((m / "nestful_data.jsonl").read_bytes())
    assert f"{DATA}: sha256 {digest}, 3 rows (trusted on first use)" in res.output
    assert "callbench.lock.json" in res.output and f"without --data now uses {tmp_path / 'd' / 'nestful' / DATA}" in res.output.replace("\n", "")
    (m / "nestful_data.jsonl").write_bytes(_jsonl(_row(i) for i in range(4)))
    (tmp_path / "d" / "nestful" / DATA).unlink()
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 2 and "checksum mismatch with" in res.output and "--force" in res.output
    out = res.output.replace("\n", "")
    assert f"the copy in mirror {m.resolve()} is not the file recorded" in out and "upstream" not in out
    res = runner.invoke(app, [*args, "--force"], catch_exceptions=False)
    assert res.exit_code == 0 and "4 rows (trusted on first use)" in res.output
    res = runner.invoke(app, [*args, "--sha256", f"{DATA}=xyz"], catch_exceptions=False)
    assert res.exit_code == 2 and "is not a SHA-256" in res.output


# -- PROMPTS.json (the published per-model templates) ----------------------------------------------

SHARED_NESTFUL = Path(__file__).resolve().parents[3] / "shared" / "data" / "nestful"


def test_nestful_fetch_records_prompts_json(tmp_path):
    files = _upstream()
    _, events = _fetch(tmp_path, files)
    got = tmp_path / "nestful" / PROMPTS
    assert got.read_bytes() == PROMPTS_TEXT
    states = {path: (state, detail) for path, state, detail in events}
    assert states[PROMPTS] == ("recorded", f"sha256 {_sha(PROMPTS_TEXT)}")
    assert _lock(tmp_path)[PROMPTS]["url"] == f"{GITHUB.base_url}/{PROMPTS}"
    # verified against the record afterwards: a changed upstream file is a mismatch
    files[f"{GITHUB.base_url}/{PROMPTS}"] = b'{"x": "{QUERY}"}'
    (tmp_path / "nestful" / PROMPTS).unlink()
    with pytest.raises(DataError, match=r"PROMPTS\.json: checksum mismatch with .*callbench\.lock\.json"):
        _fetch(tmp_path, files)


def test_nestful_prompts_json_is_optional_upstream(tmp_path):
    files = _upstream()
    del files[f"{GITHUB.base_url}/{PROMPTS}"]
    _, events = _fetch(tmp_path, files)
    assert (PROMPTS, "skipped") in {(p, s) for p, s, _ in events}
    assert is_complete("nestful", tmp_path, pins=PIN_LICENSE)


@pytest.mark.skipif(not (SHARED_NESTFUL / "v2-samples" / "PROMPTS.json").is_file(), reason="needs ../shared/data/nestful")
def test_nestful_prompts_from_a_mirror_built_from_shared(tmp_path, monkeypatch):
    """A mirror laid out as upstream (data_v2/, src/, LICENSE) built from ../shared: PROMPTS.json
    is copied byte for byte to nestful/src/PROMPTS.json, recorded in the lock, and the nested track
    finds it there."""
    m = tmp_path / "mirror"
    (m / "data_v2").mkdir(parents=True)
    (m / "src").mkdir()
    shutil.copyfile(SHARED_NESTFUL / "v2-samples" / "toy_data_jan2025_schema.jsonl", m / DATA)
    shutil.copyfile(SHARED_NESTFUL / "v2-samples" / "icl_examples.json", m / ICL)
    shutil.copyfile(SHARED_NESTFUL / "v2-samples" / "PROMPTS.json", m / PROMPTS)
    shutil.copyfile(SHARED_NESTFUL / "LICENSE", m / "LICENSE")
    dest = fetch_data("nestful", root=tmp_path / "d", mirror=m)
    assert (dest / PROMPTS).read_bytes() == (SHARED_NESTFUL / "v2-samples" / "PROMPTS.json").read_bytes()
    assert _lock(tmp_path / "d")[PROMPTS]["sha256"] == _sha((m / PROMPTS).read_bytes())
    assert is_complete("nestful", tmp_path / "d")
    from callbench.tracks.nested.prompting_published import find_prompts_file, load_prompts

    monkeypatch.setenv("CALLBENCH_DATA_DIR", str(tmp_path / "d"))
    assert find_prompts_file() == dest / PROMPTS
    assert "LLaMa-3.1" in load_prompts(dest / PROMPTS)


# -- NESTFUL code-domain tool implementations (func_file_map.json + the files it names)

FUNCS = "data_v2/executable_functions"
FUNC_MAP_TEXT = json.dumps({"shout": "py_code_file_1.py", "twice": "py_code_file_2.py", "gone": "py_code_file_3.py"}).encode()
TOOL_FILES = {"py_code_file_1.py": b"def shout(text):\n    return text.upper()\n", "py_code_file_2.py": b"def twice(n):\n    return 2 * n\n"}


def _with_functions(files: dict[str, bytes]) -> dict[str, bytes]:
    files = dict(files)
    files[f"{GITHUB.base_url}/{FUNCS}/func_file_map.json"] = FUNC_MAP_TEXT
    for name, body in TOOL_FILES.items():  # py_code_file_3.py is missing upstream
        files[f"{GITHUB.base_url}/{FUNCS}/{name}"] = body
    return files


def test_nestful_fetches_the_tool_files_its_map_names(tmp_path):
    files = _with_functions(_upstream())
    _, events = _fetch(tmp_path, files)
    states = {path: (state, detail) for path, state, detail in events}
    assert states[f"{FUNCS}/func_file_map.json"] == ("recorded", f"sha256 {_sha(FUNC_MAP_TEXT)}")
    assert states[f"{FUNCS}/*.py"] == ("recorded", "3 tool files named by func_file_map.json: 2 recorded, 1 skipped")
    lock = _lock(tmp_path)
    for name, body in TOOL_FILES.items():
        assert (tmp_path / "nestful" / FUNCS / name).read_bytes() == body
        assert lock[f"{FUNCS}/{name}"]["sha256"] == _sha(body)
        assert lock[f"{FUNCS}/{name}"]["url"] == f"{GITHUB.base_url}/{FUNCS}/{name}"
    assert f"{FUNCS}/py_code_file_3.py" not in lock
    assert is_complete("nestful", tmp_path, pins=PIN_LICENSE)
    # the nested track's library finds them (the missing file's tool is not implemented)
    from callbench.tracks.nested.tools.library import fetched_library

    assert fetched_library(tmp_path).names == {"shout", "twice"}
    # again: verified against the lock, nothing downloaded
    calls, events = _fetch(tmp_path, files)
    states = {path: (state, detail) for path, state, detail in events}
    assert states[f"{FUNCS}/*.py"][0] == "present"
    assert not any(c.endswith("py_code_file_1.py") for c in calls)
    # a changed upstream tool file is a mismatch with the record
    (tmp_path / "nestful" / FUNCS / "py_code_file_1.py").unlink()
    files[f"{GITHUB.base_url}/{FUNCS}/py_code_file_1.py"] = b"def shout(text):\n    return text\n"
    with pytest.raises(DataError, match=r"py_code_file_1\.py: checksum mismatch with .*callbench\.lock\.json"):
        _fetch(tmp_path, files)


def test_nestful_tool_files_are_optional_upstream(tmp_path):
    files = {url: body for url, body in _upstream().items() if f"/{FUNCS}/" not in url}
    _, events = _fetch(tmp_path, files)
    assert (f"{FUNCS}/func_file_map.json", "skipped") in {(p, s) for p, s, _ in events}
    assert not any(p == f"{FUNCS}/*.py" for p, _, _ in events)
    from callbench.tracks.nested.tools.library import fetched_library

    assert fetched_library(tmp_path) is None


def test_nestful_map_naming_a_path_is_refused(tmp_path):
    files = _upstream()
    files[f"{GITHUB.base_url}/{FUNCS}/func_file_map.json"] = json.dumps({"f": "../../evil.py"}).encode()
    with pytest.raises(DataError, match="not a file name"):
        _fetch(tmp_path, files)


def test_nestful_tool_files_from_a_mirror(tmp_path):
    m = _mirror(tmp_path)
    (m / FUNCS).mkdir(parents=True)
    (m / FUNCS / "func_file_map.json").write_bytes(FUNC_MAP_TEXT)
    for name, body in TOOL_FILES.items():
        (m / FUNCS / name).write_bytes(body)
    events: list[tuple[str, str, str]] = []
    dest = fetch_data("nestful", root=tmp_path / "d", mirror=m, pins=PIN_LICENSE, on_file=lambda *e: events.append(e))
    assert (dest / FUNCS / "py_code_file_2.py").read_bytes() == TOOL_FILES["py_code_file_2.py"]
    assert _lock(tmp_path / "d")[f"{FUNCS}/py_code_file_2.py"]["url"] == str(m / FUNCS / "py_code_file_2.py")
    assert ("data_v2/executable_functions/*.py", "recorded") in {(p, s) for p, s, _ in events}
