"""Child-side resource limits and audit hook shared by the sandbox runners (stdlib only).

The harness never imports this file: :func:`callbench.sandbox.program.python_argv` sends its source
to the child next to a runner's source, and the runner imports it as ``_callbench_guard``.

Two policies:

* ``program=False`` (the tool sandbox, :mod:`callbench.sandbox.python`): refuse sockets (connect,
  bind, sendto, name lookups), fork/exec/subprocess, signals to other processes, ctypes loading, and
  writes/renames/deletes outside the temp dir;
* ``program=True`` (whole programs, :mod:`callbench.sandbox.program`): the same for processes and
  writes, plus ``resource.setrlimit`` (a root child could raise its own hard limits; lowering the
  CPU limit stays allowed, which the runner does when the program starts), gc object
  walking, listening sockets; ctypes may load installed libraries (torch
  does at import) but not look up or call foreign functions or touch raw memory; sockets may be
  created (libraries probe at import) but connect / name lookup only to ``allow_connect``, and bind
  only to a loopback address with port 0; ``/dev/null`` may be opened for writing. Every refusal is reported to ``on_violation`` first, so a
  refusal the program catches is still known.

Both policies also: replace ``_posixsubprocess.fork_exec`` (it starts processes without any audit
event) and refuse re-importing it; refuse sqlite (C code opening files unseen, ATTACH / ``file:``
URIs); refuse write events relative to a directory fd and metadata changes through an fd; replace
``os.open`` (whose event lacks ``dir_fd``), ``os.mknod`` and ``os.mkfifo`` (no events at all).
"""

import os
import resource
import sys

MB = 1024 * 1024


def apply_limits(*, memory_mb, cpu_s, fsize_mb, nproc, memory_limit="as"):
    """``memory_limit``: "as" limits the address space, "data" the data segment + private writable
    mappings (Linux >= 4.7), which leaves big virtual reservations (torch, JIT runtimes) alone."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    which = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA}[memory_limit]
    resource.setrlimit(which, (memory_mb * MB, memory_mb * MB))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb * MB, fsize_mb * MB))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))  # not enforced for root


_PROCESS_EVENTS = {
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.exec",
    "os.system",
    "os.spawn",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
}
_TOOL_DENIED = {
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.cdata",
} | _PROCESS_EVENTS
_PROGRAM_DENIED = _PROCESS_EVENTS | {
    "signal.pthread_kill",
    "resource.setrlimit",
    "resource.prlimit",
    "socket.sethostname",
    "ctypes.dlsym",
    "ctypes.dlsym/handle",
    "ctypes.cdata",
    "ctypes.cdata/buffer",
    "ctypes.call_function",
    "ctypes.string_at",
    "ctypes.wstring_at",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "sqlite3.enable_load_extension",
    "sqlite3.load_extension",
}
_WRITE_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_PROGRAM_WRITE_EVENTS = _WRITE_EVENTS | {"os.chflags", "os.setxattr", "os.removexattr", "shutil.copytree"}
# Where a write event carries dir_fd arguments (-1 = none): a path relative to an open directory fd
# cannot be judged by its text, so such calls are refused.
_DIR_FD_ARGS = {
    "os.remove": (1,),
    "os.rmdir": (1,),
    "os.mkdir": (2,),
    "os.chmod": (2,),
    "os.chown": (3,),
    "os.rename": (2, 3),
    "os.link": (2, 3),
    "os.symlink": (2,),
    "os.utime": (3,),
}
# Events that change an existing file: an fd argument may belong to a file opened read-only anywhere.
_NO_FD_PATH = {"os.chmod", "os.chown", "os.utime", "os.chflags", "os.setxattr", "os.removexattr"}
_LOOPBACK = {"127.0.0.1": ("127.0.0.1", "localhost"), "localhost": ("127.0.0.1", "::1", "localhost")}
_LOOPBACK["::1"] = ("::1", "localhost")


def _host(value):
    if isinstance(value, bytes):
        value = value.decode("idna", "replace")
    return value.lower() if isinstance(value, str) else value


def _port(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def install_guard(
    tmpdir, *, program=False, allow_connect=(), on_violation=None, extension_roots=None, denied_modules=()
):
    """Add the audit hook (it cannot be removed once added). Pure-Python code cannot bypass it.

    ``allow_connect``: (host, port) pairs, or Unix socket paths (str), a program may connect to;
    ``extension_roots``: directories C extension modules may be loaded from (None: anywhere but
    the temp dir); ``denied_modules``: modules that may not be imported at all."""
    root = os.path.realpath(tmpdir)
    denied = _PROGRAM_DENIED if program else _TOOL_DENIED
    write_events = _PROGRAM_WRITE_EVENTS if program else _WRITE_EVENTS
    allowed = set()  # (host, port) pairs a program may resolve / connect to
    allowed_paths = set()  # Unix socket paths it may connect to
    for entry in allow_connect:
        if isinstance(entry, str):
            allowed_paths.add(entry)
            continue
        host, port = entry
        for h in _LOOPBACK.get(_host(host), (_host(host),)):
            allowed.add((h, int(port)))
    ext_roots = None if extension_roots is None else [os.path.realpath(r) + os.sep for r in extension_roots]
    denied_modules = frozenset(denied_modules)
    lib_roots = [
        os.path.realpath(p) + os.sep
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/opt"}
    ] + list(ext_roots or ())  # the view's packages (unsandboxed, they live in the venv)

    def lowers_cpu_limit(args):
        """``setrlimit(RLIMIT_CPU, (soft, hard))`` with both at most the current hard limit (finite):
        it can only bring the CPU backstop nearer, never move it away (even for a root child)."""
        if len(args) < 2 or args[0] != resource.RLIMIT_CPU:
            return False
        try:
            soft, hard = (int(v) for v in args[1])
        except (TypeError, ValueError):
            return False
        current = resource.getrlimit(resource.RLIMIT_CPU)[1]
        return current != resource.RLIM_INFINITY and 0 <= soft <= hard <= current

    def inside(path):
        try:
            p = os.fsdecode(path) if not isinstance(path, int) else None
        except TypeError:
            return False
        if p is None:
            return True  # an already opened fd
        p = os.path.realpath(p)
        return p == root or p.startswith(root + os.sep)

    def refuse(message):
        if on_violation is not None:
            on_violation(message)
        raise PermissionError(message)

    def program_socket(event, args):
        """None when the program policy allows this socket event, else the refusal message."""
        if event == "socket.__new__":
            family, kind = args[1], args[2]
            # AF_UNIX, AF_INET, AF_INET6, or -1 (wrapping an existing fd); not SOCK_RAW
            if family in (-1, 1, 2, 10) and kind & 0xF != 3:
                return None
            return f"sandbox: socket(family={family}, type={kind}) is not allowed"
        if event == "socket.bind":
            addr = args[1]
            if (
                isinstance(addr, tuple)
                and len(addr) >= 2
                and addr[0] in ("127.0.0.1", "::1")
                and addr[1] == 0
            ):
                return None  # urllib3 probes IPv6 support this way at import
            return f"sandbox: socket.bind to {addr!r} is not allowed"
        if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            addr = args[1]
            if event == "socket.sendmsg" and addr is None:
                return None  # on a connected socket
            if isinstance(addr, tuple) and len(addr) >= 2 and (_host(addr[0]), _port(addr[1])) in allowed:
                return None
            if isinstance(addr, (str, bytes)) and os.fsdecode(addr) in allowed_paths:
                return None
            return f"sandbox: {event} to {addr!r} is not allowed"
        if event == "socket.getaddrinfo":
            if (_host(args[0]), _port(args[1])) in allowed:
                return None
            return f"sandbox: name lookup of {args[0]!r} port {args[1]!r} is not allowed"
        if event in ("socket.gethostbyname", "socket.gethostbyname_ex"):
            if any(h == _host(args[0]) for h, _ in allowed):
                return None
            return f"sandbox: name lookup of {args[0]!r} is not allowed"
        if event in ("socket.gethostbyaddr", "socket.getnameinfo"):
            return f"sandbox: {event} is not allowed"
        return None

    def program_check(event, args):
        if event.startswith("socket."):
            return program_socket(event, args)
        if event == "ctypes.dlopen":
            name = args[0] if args else None
            if name is None or (isinstance(name, str) and os.sep not in name):
                return None  # the process itself, or a system library by soname
            path = os.path.realpath(os.fsdecode(name)) if isinstance(name, (str, bytes)) else ""
            if path and not inside(path) and any(path.startswith(r) for r in lib_roots):
                return None  # an installed native library (what importing an extension does too)
            return f"sandbox: ctypes loading {name!r} is not allowed"
        return None

    def extension_check(name, filename):
        """C extensions load only from the allowed roots (never from a file the program wrote)."""
        path = os.path.realpath(os.fsdecode(filename)) if isinstance(filename, (str, bytes)) else ""
        if inside(path) or path.startswith(("/dev/", "/proc/")):
            refuse(f"sandbox: loading the C extension {name!r} from {path!r} is not allowed")
        if ext_roots is not None and not any(path.startswith(r) or path + os.sep == r for r in ext_roots):
            refuse(f"sandbox: the C extension {name!r} ({path}) is not on the sandbox's allow-list")

    def hook(event, args):
        if event == "resource.setrlimit" and program and lowers_cpu_limit(args):
            return  # the runner lowers the CPU backstop when the program starts; never a raise
        if event in denied:
            refuse(f"sandbox: {event} is not allowed")
        if event == "import" and args:
            if args[0] == "_posixsubprocess":
                # a fresh import (after deleting it from sys.modules) would bring back the real fork_exec
                refuse("sandbox: importing _posixsubprocess is not allowed")
            if isinstance(args[0], str) and args[0].partition(".")[0] in denied_modules:
                # not a violation: libraries import some of these optionally (bwrap hides the files)
                raise ModuleNotFoundError(f"sandbox: {args[0]!r} is not available in the sandbox")
            if len(args) >= 3 and args[1] is not None and args[2] is None:
                extension_check(args[0], args[1])  # _imp.create_dynamic: a C extension is loaded
        if event == "sqlite3.connect":
            # SQLite opens files in C (no "open" event), and ATTACH / VACUUM INTO / file: URIs reach
            # any path even from an in-memory database
            refuse("sandbox: sqlite databases are not allowed")
        if program:
            message = program_check(event, args)
            if message:
                refuse(message)
        if event == "open" and args:
            path, mode, flags = (list(args) + [None, None])[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int)
                and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
            )
            if writing and not inside(path) and not (program and path in ("/dev/null", b"/dev/null")):
                refuse(f"sandbox: writing {path!r} outside the sandbox directory is not allowed")
        elif event in write_events:
            for i in _DIR_FD_ARGS.get(event, ()):
                if i < len(args) and args[i] not in (-1, None):
                    refuse(f"sandbox: {event} relative to a directory fd is not allowed")
            if event in _NO_FD_PATH and args and isinstance(args[0], int):
                refuse(f"sandbox: {event} on an open file descriptor is not allowed")
            for a in args[:2]:
                if isinstance(a, (str, bytes, os.PathLike)) and not inside(a):
                    refuse(f"sandbox: {event} on {a!r} outside the sandbox directory is not allowed")

    import _posixsubprocess
    import subprocess

    def no_fork_exec(*a, **k):
        refuse("sandbox: _posixsubprocess.fork_exec is not allowed")

    _posixsubprocess.fork_exec = no_fork_exec  # unaudited process creation
    subprocess._fork_exec = no_fork_exec

    import posix

    real_open = posix.open

    def guarded_open(path, flags, mode=0o777, *, dir_fd=None):
        # the "open" audit event does not carry dir_fd, so a path relative to a directory fd
        # would be judged against the cwd
        if dir_fd is not None:
            refuse("sandbox: os.open with dir_fd is not allowed")
        return real_open(path, flags, mode)

    def no_node(*a, **k):
        refuse("sandbox: os.mknod / os.mkfifo are not allowed")  # no audit event exists for them

    for mod in (os, posix):
        mod.open = guarded_open
        mod.mknod = no_node
        mod.mkfifo = no_node
    sys.addaudithook(hook)
    import socket

    if not program:

        def blocked(*a, **k):
            raise PermissionError("sandbox: network access is not allowed")

        socket.create_connection = blocked
        socket.socket.connect = blocked
        socket.socket.connect_ex = blocked
        return

    def no_listen(*a, **k):
        refuse("sandbox: socket.listen is not allowed")

    socket.socket.listen = no_listen
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        """Only addresses the program may connect to; a name in ``allow_connect`` that resolves to a
        further address allows that address on the same port."""
        named = _host(host) not in _LOOPBACK and (_host(host), _port(port)) in allowed
        out = []
        for info in real_getaddrinfo(host, port, *args, **kwargs):
            addr = info[4]
            key = (_host(addr[0]), _port(addr[1])) if isinstance(addr, tuple) else None
            if key in allowed or (named and key is not None):
                allowed.add(key)
                out.append(info)
        if not out:
            raise socket.gaierror(socket.EAI_NONAME, "sandbox: no allowed address")
        return out

    socket.getaddrinfo = getaddrinfo
