"""Download datasets from their upstream repositories and verify them by SHA-256.

Files are pinned to an upstream commit and a checksum each, so a fetched dataset is byte-identical
to the one the project's numbers were measured on. ``--from DIR`` copies from a local mirror
(e.g. a checkout of the upstream repository) with the same verification.

A file whose checksum is not known in advance (``sha256=None``, NESTFUL) is trusted on first use:
it is downloaded, parsed and validated, and its digest recorded in
``<data dir>/<dataset>/callbench.lock.json`` (see :mod:`callbench.data.lock`); later fetches
verify against that record. ``pins`` (``--sha256 PATH=HEX``) fix a digest from outside.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from callbench.data.lock import lock_entry, lock_path, read_lock, sha256_file, write_lock
from callbench.data.paths import data_dir
from callbench.data.validators import get_validator
from callbench.errors import DataError


@dataclass(frozen=True)
class RemoteFile:
    path: str  # relative to the dataset root, same as upstream
    sha256: str | None  # None: trust on first use, recorded in the dataset's lock file
    validate: str | None = None  # a registered validator (callbench.data.validators), run before it is kept
    required: bool = True  # False: a mirror (or the upstream) may lack it; skipped with a note


@dataclass(frozen=True)
class DatasetSource:
    name: str
    base_url: str  # upstream raw-file URL prefix at a pinned commit
    files: tuple[RemoteFile, ...]
    license: str
    upstream: str = "github"  # which --source this is

    def url(self, f: RemoteFile) -> str:
        return f"{self.base_url}/{f.path}"

    @property
    def trust_on_first_use(self) -> bool:
        return any(f.sha256 is None for f in self.files)


_WAPIIBENCH_COMMIT = "5234c50c1e6474bcd06ac5d1e18970a6852aec52"

# NESTFUL (IBM, Apache-2.0). Upstream layout of github.com/IBM/NESTFUL: data_v2/nestful_data.jsonl
# (1,861 rows), src/icl_examples.json (the published in-context examples), src/PROMPTS.json (the
# published per-model prompt templates), LICENSE. The commit is
# the one another public project pins for these files (found in a code index; it could not be
# opened from here, so it is not verified by this project). Its LICENSE digest is the Apache-2.0
# text that the NESTFUL copy under ../shared/data/nestful also has. The data file's digest could
# not be computed offline, so it is trusted on first use and recorded in the lock file; that other
# project reports e7c9999e2eaaa2bea87776bc55e2b0913a0cf089f4b6817c7644554547df22c1 for it.
_NESTFUL_COMMIT = "fc2c4123e73500a56185a5fb354f05d1c8b4890c"
_NESTFUL_FUNCTIONS = "data_v2/executable_functions"
# The Hugging Face copy (ibm-research/nestful) at its main branch: no commit of it was found, so
# it is not pinned; the lock file records what was fetched. Same rows, JSON text in string columns.
_NESTFUL_HF_REVISION = "main"

UPSTREAMS: dict[str, dict[str, DatasetSource]] = {
    "wapiibench": {
        "github": DatasetSource(
            name="wapiibench",
            base_url=f"https://raw.githubusercontent.com/stg-tud/WAPIIBench/{_WAPIIBENCH_COMMIT}",
            license="Apache-2.0 (specs keep their vendors' terms)",
            files=(
                RemoteFile("LICENSE", "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
                RemoteFile(
                    "data/synthetic/all/test_data_final.json",
                    "09c778d61f2bf791b1f9bb1572e2a35c5784abcac7fc4382b1d6e30b0e6ef507",
                ),
                RemoteFile(
                    "data/synthetic/asana/test_data_corrected.json",
                    "0f4d1e8edf7a135f2b8ca8d453fd8c95c67070a56d6c18a16c00ebcfbf449c2a",
                ),
                RemoteFile(
                    "data/synthetic/google_calendar_v3/test_data_corrected.json",
                    "d60342345a1f1330c4086e5e89a39f4364c457f1ec471ac97509e3ad59681733",
                ),
                RemoteFile(
                    "data/synthetic/google_sheet_v4/test_data_corrected.json",
                    "b5f0b1e2108c5e4d88b24fc2156aa7c85c85792ae6036c449828f8ed30f6aa7a",
                ),
                RemoteFile(
                    "data/synthetic/slack/test_data_corrected.json",
                    "f83ce91507a6197d23644fc084493fcc34bc47afaf481a71a7afde58b1a633ce",
                ),
                RemoteFile(
                    "openapi/real_world_specs/asana.yaml",
                    "e2c89bf47fab78478a28e71f58bd4b6c24648779f062a33c624dc80874de4e5c",
                ),
                RemoteFile(
                    "openapi/real_world_specs/google_calendar_v3.yaml",
                    "a9cf387984922208a1e3f8631c802234cfbdec2e64d9b540bc721cd498ee02fd",
                ),
                RemoteFile(
                    "openapi/real_world_specs/google_sheet_v4.yaml",
                    "f546383df3d67a9669a46b2009d5a26a7713a48b91da3f5aaef0a56be74e1ac4",
                ),
                RemoteFile(
                    "openapi/real_world_specs/slack.yaml",
                    "6aa49f2b5869e2b0da57973e814460f0642eda09039671c693ea9c613929448f",
                ),
                RemoteFile(
                    "openapi/test/petstore-expanded-modified.yaml",
                    "e89cf6c1863cce8155f1e435ed5d2af04a1f3c6944f8d28271501b95769004b6",
                ),
                # The published code-generation prompt (`run webapi --prompt published`), the file
                # upstream's wapiibench/evaluation.py reads. Digest of the copy at this commit in a
                # code index (that index's copies of slack.yaml and petstore-expanded-modified.yaml
                # at this commit match the digests above in length and ending); not downloaded from
                # here. Optional: a mirror without it is skipped; --sha256 pins another copy.
                RemoteFile(
                    "resources/code_generation_prompt.md",
                    "46ab71ce42c3abe47a187323f7aff6c78190d89c27cdede118ace1fb10b0e2a1",
                    required=False,
                ),
            ),
        ),
    },
    "nestful": {
        "github": DatasetSource(
            name="nestful",
            base_url=f"https://raw.githubusercontent.com/IBM/NESTFUL/{_NESTFUL_COMMIT}",
            license="Apache-2.0",
            files=(
                RemoteFile("LICENSE", "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
                RemoteFile("data_v2/nestful_data.jsonl", None, validate="nestful-v2"),
                RemoteFile("src/icl_examples.json", None, validate="nestful-v2", required=False),
                # The per-model prompt templates (`run nested --prompt published`). Path as upstream's
                # own evaluation code reads it (src/PROMPTS.json, next to icl_examples.json), and as
                # the project that pins this commit reads it from its checkout (both seen in a code
                # index; not opened here at this commit, so not verified by this project). Optional;
                # parsed when a run reads it (prompting_published.load_prompts), not at fetch.
                RemoteFile("src/PROMPTS.json", None, required=False),
                # The code-domain tool implementations (the win rate's executable portion beyond
                # math): a map function -> file, then every file it names (_library_files), each
                # trusted on first use like the rest. Upstream path as its README and scorer
                # (--executable_func_dir data_v2/executable_functions) name it, seen in a public
                # fork; not opened at this commit from here. Optional.
                RemoteFile(f"{_NESTFUL_FUNCTIONS}/func_file_map.json", None, required=False),
            ),
        ),
        "hf": DatasetSource(
            name="nestful",
            base_url=f"https://huggingface.co/datasets/ibm-research/nestful/resolve/{_NESTFUL_HF_REVISION}",
            license="Apache-2.0",
            upstream="hf",
            files=(RemoteFile("data/train-00000-of-00001.parquet", None, validate="nestful-v2"),),
        ),
    },
}

# The default upstream of each dataset.
DATASETS: dict[str, DatasetSource] = {name: ups["github"] for name, ups in UPSTREAMS.items()}


def _library_files(name: str, dest_root: Path) -> tuple[RemoteFile, ...]:
    """The tool files that a fetched ``func_file_map.json`` names (NESTFUL), each optional and
    trusted on first use; () when the dataset has no map or it is not fetched."""
    if name != "nestful":
        return ()
    path = dest_root / _NESTFUL_FUNCTIONS / "func_file_map.json"
    if not path.is_file():
        return ()
    from callbench.data.func_map import read_func_file_map

    files = sorted(set(read_func_file_map(path).values()), key=lambda f: (len(f), f))
    return tuple(RemoteFile(f"{_NESTFUL_FUNCTIONS}/{f}", None, required=False) for f in files)


def _sha256(path: Path) -> str:
    return sha256_file(path)


def is_complete(
    name: str, root: Path | None = None, *, source: str = "github", pins: Mapping[str, str] | None = None
) -> bool:
    """True when every required file of the dataset is present with the pinned (or, for files
    trusted on first use, the recorded) checksum."""
    src = _source(name, source)
    base = (root or data_dir()) / name
    lock = read_lock(base) if src.trust_on_first_use else {}
    for f in src.files:
        expected = (pins or {}).get(f.path) or f.sha256 or (lock.get(f.path) or {}).get("sha256")
        if not f.required and f.path not in lock and not (base / f.path).exists():
            continue
        if expected is None or not (base / f.path).is_file() or _sha256(base / f.path) != expected:
            return False
    return True


def _source(name: str, source: str | None = None) -> DatasetSource:
    if name not in UPSTREAMS:
        raise DataError(f"unknown dataset '{name}' (available: {', '.join(sorted(UPSTREAMS))})")
    ups = UPSTREAMS[name]
    key = source or "github"
    if key not in ups:
        raise DataError(f"--source {key}: dataset '{name}' can be fetched from {', '.join(sorted(ups))}")
    return ups[key]


def parse_pins(items: list[str] | None) -> dict[str, str]:
    """``["PATH=HEX", ...]`` (``--sha256``) -> ``{PATH: hex}``."""
    pins: dict[str, str] = {}
    for item in items or []:
        rel, sep, digest = item.partition("=")
        digest = digest.strip().lower()
        if not sep or not rel.strip():
            raise DataError(f"--sha256 '{item}': expected PATH=HEX")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise DataError(f"--sha256 '{item}': {digest!r} is not a SHA-256 (64 hex digits)")
        pins[rel.strip()] = digest
    return pins


def _validate(kind: str, path: Path, origin: str) -> str:
    """Parse a fetched file before it is kept; returns a short description (``1861 rows``).

    Errors name ``origin`` (the URL or mirror file), not the temporary file that was parsed.
    """
    check = get_validator(kind)
    try:
        return check(path)
    except DataError as exc:
        raise DataError(str(exc).replace(str(path), origin)) from None


def _mirror_file(mirror: Path, f: RemoteFile) -> Path | None:
    """The mirror's copy: at the upstream path, or (a directory holding the files) by its name."""
    for candidate in (mirror / f.path, mirror / Path(f.path).name):
        if candidate.is_file():
            return candidate
    return None


def _mirror_missing(mirror: Path, f: RemoteFile) -> DataError:
    found = sorted(
        str(p.relative_to(mirror))
        for p in mirror.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".parquet") and not p.name.startswith(".")
    )
    have = f"; it holds only {', '.join(found[:4])}{' ...' if len(found) > 4 else ''}" if found else ""
    return DataError(
        f"{mirror / f.path}: missing in mirror {mirror} (also looked for {Path(f.path).name} there){have}"
    )


def _n_positional(fn: Callable[..., None]) -> int:
    """How many of ``(path, state, detail)`` a progress callback takes (older ones take two)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return min(3, sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params))


@retry(
    retry=retry_if_exception_type((httpx.TransportError, httpx.HTTPStatusError)),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.5, max=8),
    reraise=True,
)
def _download(client: httpx.Client, url: str, dest: Path) -> None:
    with client.stream("GET", url) as resp:
        if resp.status_code in (429,) or resp.status_code >= 500:
            resp.raise_for_status()
        if resp.status_code != 200:
            raise DataError(f"{url}: HTTP {resp.status_code}")
        with dest.open("wb") as fh:
            for chunk in resp.iter_bytes():
                fh.write(chunk)


def fetch_data(
    name: str,
    *,
    root: str | os.PathLike[str] | None = None,
    mirror: str | os.PathLike[str] | None = None,
    force: bool = False,
    client: httpx.Client | None = None,
    on_file: Callable[..., None] | None = None,
    source: str | None = None,
    pins: Mapping[str, str] | None = None,
) -> Path:
    """Download (or copy from ``mirror``) dataset ``name`` into the data dir; returns its directory.

    Files already present with the right checksum are kept unless ``force``. Every file is written
    to a temporary name and renamed only after its checksum matched (and, where the file has a
    validator, after it parsed), so an interrupted fetch never leaves a corrupt file behind.

    ``source`` picks the upstream (``github``, the default, or ``hf`` where the dataset has one).
    Files without a pinned checksum are trusted on first use and recorded in the dataset's lock
    file; later fetches must match the record unless ``force`` re-records. ``pins`` maps a file's
    path to a SHA-256 that it must have, whatever the code or the lock say.

    ``on_file(path, state, detail)`` reports each file: ``present``, ``fetched``, ``recorded``
    (trusted on first use; ``detail`` holds the digest and what validation found) or ``skipped``
    (an optional file the mirror lacks). A two-argument callback gets ``(path, state)``.
    """
    src = _source(name, source)
    pins = dict(pins or {})
    unknown = sorted(set(pins) - {f.path for f in src.files})
    if unknown:
        raise DataError(
            f"--sha256 {unknown[0]}: not a file of {name} ({src.upstream}); its files: {', '.join(f.path for f in src.files)}"
        )
    dest_root = data_dir(root) / name
    tofu = src.trust_on_first_use
    lock = read_lock(dest_root) if tofu else {}
    mirror_dir = Path(mirror).expanduser().resolve() if mirror is not None else None
    if mirror_dir is not None:
        if not mirror_dir.is_dir():
            raise DataError(f"{mirror_dir}: --from needs a directory (a copy laid out as upstream)")
        for f in src.files:  # fail before anything is copied
            if f.required and _mirror_file(mirror_dir, f) is None:
                raise _mirror_missing(mirror_dir, f)

    n_args = _n_positional(on_file) if on_file is not None else 0

    def report(path: str, state: str, detail: str = "") -> None:
        if on_file is not None:
            on_file(*(path, state, detail)[:n_args])

    own_client = client is None
    if own_client and mirror is None:
        client = httpx.Client(timeout=60.0, follow_redirects=True)

    def one(f: RemoteFile, report: Callable[..., None], save_lock: bool = True) -> None:
        """Fetch (or keep) one file; ``save_lock`` False defers writing new lock entries (the
        library's thousands of files): a file without its entry is fetched again next time."""
        dest = dest_root / f.path
        pinned = pins.get(f.path) or f.sha256
        recorded = (lock.get(f.path) or {}).get("sha256")
        expected = pinned or (None if force else recorded)
        if not force and expected is not None and dest.is_file() and _sha256(dest) == expected:
            if tofu and recorded != expected:  # pinned with --sha256: the lock follows the pin
                lock[f.path] = lock_entry(expected, (lock.get(f.path) or {}).get("url") or src.url(f))
                write_lock(dest_root, name, lock)
            report(f.path, "present")
            return
        if mirror_dir is not None:
            src_file = _mirror_file(mirror_dir, f)
            if src_file is None:
                report(f.path, "skipped", f"not in {mirror_dir}")
                return
            origin = str(src_file)
        else:
            origin = src.url(f)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=".part-", suffix=Path(f.path).suffix)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            if mirror_dir is not None:
                shutil.copyfile(src_file, tmp)
            else:
                try:
                    _download(client, origin, tmp)
                except DataError:
                    if not f.required:
                        report(f.path, "skipped", f"not available at {origin}")
                        return
                    raise
                except httpx.HTTPError as exc:
                    if not f.required:  # offline: the data set is complete without it
                        report(f.path, "skipped", f"not reachable at {origin} ({type(exc).__name__})")
                        return
                    raise DataError(
                        f"{origin}: download failed ({type(exc).__name__}: {exc}); "
                        f"offline? use 'callbench data fetch {name} --from DIR' with a local copy"
                    ) from exc
            digest = _sha256(tmp)
            if expected is not None and digest != expected:
                if pinned is not None and not f.required and f.path not in pins:
                    # an optional file pinned from a copy nobody downloaded here (e.g. a prompt
                    # file): a different upstream byte must not break the dataset's fetch
                    report(f.path, "skipped", f"checksum mismatch (sha256 {digest}, expected {expected}); not kept")
                    return
                if pinned is not None:
                    raise DataError(f"{origin}: checksum mismatch (sha256 {digest}, expected {expected})")
                changed = (
                    f"the copy in mirror {mirror_dir} is not the file recorded"
                    if mirror_dir is not None
                    else "the upstream file changed"
                )
                raise DataError(
                    f"{origin}: checksum mismatch with {lock_path(dest_root)} (sha256 {digest}, recorded "
                    f"{expected} on {lock[f.path].get('fetched_at', '?')}); {changed} - "
                    f"re-run with --force to re-record it"
                )
            found = _validate(f.validate, tmp, origin) if f.validate else ""
            # File and lock are two renames, so an interruption may fall between them. Order them
            # so that a file on disk never disagrees with its lock entry: when the lock records a
            # different digest (--force re-recording, a --sha256 pin), drop that entry first; the
            # file then has no entry until the new one is written after the rename, and
            # default_task_file refuses a file without one (telling to re-fetch) rather than
            # trusting it. When the lock already records this digest, the file can go first.
            if tofu and f.path in lock and lock[f.path].get("sha256") != digest:
                del lock[f.path]
                write_lock(dest_root, name, lock)
            tmp.replace(dest)
        finally:
            tmp.unlink(missing_ok=True)
        if tofu:
            lock[f.path] = lock_entry(digest, origin)
            if save_lock:
                write_lock(dest_root, name, lock)
        if expected is None:
            report(f.path, "recorded", f"sha256 {digest}" + (f", {found}" if found else ""))
        else:
            report(f.path, "fetched", found)

    try:
        for f in src.files:
            one(f, report)
        library = _library_files(name, dest_root)
        if library:
            counts: dict[str, int] = {}

            def tally(path: str, state: str, detail: str = "") -> None:
                counts[state] = counts.get(state, 0) + 1

            try:
                for i, f in enumerate(library, 1):
                    one(f, tally, save_lock=False)
                    if tofu and i % 500 == 0:
                        write_lock(dest_root, name, lock)
            finally:
                if tofu:
                    write_lock(dest_root, name, lock)
            state = next((s for s in ("recorded", "fetched", "present") if counts.get(s)), "skipped")
            detail = ", ".join(
                f"{counts[s]} {s}" for s in ("recorded", "fetched", "present", "skipped") if counts.get(s)
            )
            report(
                f"{_NESTFUL_FUNCTIONS}/*.py",
                state,
                f"{len(library)} tool files named by func_file_map.json: {detail}",
            )
    finally:
        if own_client and client is not None:
            client.close()
    return dest_root
