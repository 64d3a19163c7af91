from __future__ import annotations

import asyncio
import http.server
import importlib.util
import json
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from callbench.sandbox import boundary, program
from callbench.sandbox.program import ProgramLimits, run_program, run_program_async

REPO = Path(__file__).resolve().parents[2]


def test_ok_with_result_vars_and_finalize_state():
    res = run_program(
        "x = 1 + 2\nitems = [x, 'a', None]\nprint('hello')\n",
        result_vars=["x", "items", "nope"],
        finalize="{'sum': x + 1}",
    )
    assert res.status == "ok" and res.ok and res.error is None
    assert res.variables == {"x": 3, "items": [3, "a", None]}
    assert res.missing == ["nope"]
    assert res.state == {"sum": 4}
    assert res.stdout == "hello\n" and res.duration_s > 0


def test_preload_and_setup_objects():
    setup = (
        "class Voice:\n"
        "    def __init__(self, volume):\n"
        "        self.volume = volume\n"
        "    def louder(self):\n"
        "        self.volume += 1\n"
        "    def snapshot(self):\n"
        "        return {'volume': self.volume}\n"
        "voice = Voice(config['volume'])\n"
    )
    code = "voice.louder()\nvoice.louder()\nseen = config['name'].upper()\nif __name__ == '__main__':\n    main_ran = True\n"
    res = run_program(
        code,
        setup=setup,
        preload={"config": {"volume": 3, "name": "abc"}},
        result_vars=["seen", "main_ran"],
        finalize="voice.snapshot()",
    )
    assert res.status == "ok", res.error
    assert res.variables == {"seen": "ABC", "main_ran": True} and res.state == {"volume": 5}


def test_no_code_still_runs_setup_and_finalize():
    for code in ("", "   \n\t", "# just a comment\n# another\n"):
        res = run_program(code, setup="state = {'n': 0}", finalize="state", result_vars=["state"])
        assert res.status == "no_code" and res.state == {"n": 0} and res.variables == {"state": {"n": 0}}


def test_syntax_error_has_line():
    res = run_program("x = 1\ny = (2 +\ndef f(:\n    pass\n")
    assert res.status == "syntax_error" and res.line is not None and res.line >= 2
    assert res.error.startswith("SyntaxError: ") and f"(line {res.line})" in res.error


def test_runtime_error_type_message_line():
    res = run_program(
        "def f(d):\n    return d['missing']\n\nvalue = 7\nf({})\n", result_vars=["value"], finalize="value"
    )
    assert res.status == "runtime_error"
    assert res.error == "KeyError: 'missing' (line 2)" and res.line == 2
    assert res.variables == {"value": 7} and res.state == 7  # collected after the failure too
    exit_ = run_program("import sys\nsys.exit(0)\nnot_reached = 1", result_vars=["not_reached"])
    assert exit_.status == "ok" and exit_.missing == ["not_reached"]
    assert run_program("raise SystemExit(3)").status == "runtime_error"


def test_timeout_reports_state_and_is_bounded():
    res = run_program(
        "counter = 0\nwhile True:\n    counter += 1\n",
        result_vars=["counter"],
        finalize="counter > 0",
        limits=ProgramLimits(timeout_s=1.5),
    )
    assert res.status == "timeout" and res.error == "TimeoutError: program exceeded 1.5s of CPU time"
    assert res.variables["counter"] > 0 and res.state is True
    # bounded in CPU time, the budget's unit (the wall clock depends on how busy the machine is)
    assert 1.0 <= res.cpu_s < 1.5 + 2.0 + 1.5, res  # rusage is sampled at the kernel's tick


def test_timeout_caught_by_program_still_killed():
    """SIGPROF swallowed in a loop: the kernel's RLIMIT_CPU (budget + grace + 1 s) ends it."""
    code = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n"
    res = run_program(code, limits=ProgramLimits(timeout_s=1.0, grace_s=1.0))
    assert res.status == "timeout" and "1s of CPU time" in res.error
    assert 0.9 <= res.cpu_s <= 1.0 + 1.0 + 3


def test_cpu_budget_ignores_sleep_start_up_and_imports():
    """The budget is the program's CPU time: sleeping costs none, and neither do the interpreter's
    start-up, the setup's imports (json, decimal here) nor the setup itself."""
    setup = "import json, decimal\nwarm = sum(range(3_000_000))\n"  # setup burns CPU, not charged
    res = run_program(
        "import time\ntime.sleep(1.0)\nx = 1\n",
        setup=setup,
        result_vars=["x"],
        limits=ProgramLimits(timeout_s=0.2),
    )
    assert res.status == "ok" and res.variables == {"x": 1}, res.error


def test_wall_clock_backstop_is_an_infrastructure_timeout():
    res = run_program("import time\ntime.sleep(60)\n", limits=ProgramLimits(timeout_s=1, wall_s=2))
    assert res.status == "infra_timeout" and res.error.startswith(
        "InfraTimeout: the run passed the wall-clock backstop of 2s"
    )
    # the server that ran it is gone; the next program is served normally
    assert run_program("x = 2", result_vars=["x"]).variables == {"x": 2}


@pytest.mark.parametrize(
    "code, needle",
    [
        ("import socket\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW)", "socket("),
        ("import subprocess\nsubprocess.run(['true'])", "subprocess.Popen"),
        ("import os\nos.system('true')", "os.system"),
        ("import _posixsubprocess\n_posixsubprocess.fork_exec()", "fork_exec"),
        ("import sys\ndel sys.modules['_posixsubprocess']\nimport _posixsubprocess", "_posixsubprocess"),
        ("import os\nos.execv('/bin/true', ['true'])", "os.exec"),
        (
            "import multiprocessing as mp\nmp.get_context('spawn').Process(target=print).start()",
            "not allowed",
        ),
        ("open('/var/tmp/callbench-sandbox-escape.txt', 'w').write('x')", "writing"),
        ("import os\nos.remove('/etc/hostname')", "os.remove"),
        ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))", "resource.setrlimit"),
        # found in review: paths relative to a directory fd, fd metadata, device nodes, sqlite routes
        (
            "import os\nd = os.open('/tmp', os.O_RDONLY)\nos.open('callbench-sandbox-escape.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d)",
            "dir_fd",
        ),
        (
            "import os\nd = os.open('/tmp', os.O_RDONLY)\nos.mkdir('callbench-sandbox-escape.txt', dir_fd=d)",
            "directory fd",
        ),
        (
            "import os, posix\nd = os.open('/tmp', os.O_RDONLY)\nposix.open('callbench-sandbox-escape.txt', 65, dir_fd=d)",
            "dir_fd",
        ),
        ("import os\nfd = os.open('/etc/hosts', os.O_RDONLY)\nos.chmod(fd, 0o777)", "file descriptor"),
        ("import os\nos.mkfifo('fifo')", "mknod"),
    ],
)
def test_violations(code, needle):
    res = run_program(code)
    assert res.status == "violation", (code, res.status, res.error)
    assert needle in res.error and res.violations
    assert not Path("/tmp/callbench-sandbox-escape.txt").exists() and not (REPO / "escape.txt").exists()


@pytest.mark.parametrize(
    "code, needle",
    [
        ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)", "not allowed"),
        ("import socket\ns = socket.socket()\ns.connect(('10.1.2.3', 80))", "socket.connect"),
        ("import socket\nsocket.getaddrinfo('api.example.com', 443)", "name lookup of 'api.example.com'"),
    ],
)
def test_reaching_another_host_is_refused_and_called_wrong_host(code, needle):
    """A connection to (or a name lookup of) a host the program was not given is refused all the
    same, and reported as the model's mistake (a hard-coded base URL), not as a violation."""
    res = run_program(code)
    assert res.status == "wrong_host", (code, res.status, res.error)
    assert needle in res.error and res.violations


def test_another_refusal_beside_a_wrong_host_keeps_the_violation():
    code = "import socket, os\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\nexcept OSError:\n    pass\nos.system('true')"
    res = run_program(code)
    assert res.status == "violation" and "os.system" in " ".join(res.violations), (res.status, res.violations)


def test_the_checkout_cannot_be_written():
    """Wherever the checkout lives: outside /tmp its path is refused; under /tmp (a clone there) the
    same path inside the sandbox is the private tmpfs, so the write lands there and never on the host."""
    target = REPO / "escape.txt"
    code = f"import os\nos.makedirs({str(REPO)!r}, exist_ok=True)\nopen({str(target)!r}, 'w').write('x')\n"
    res = run_program(code)
    under_workdir = str(REPO).startswith(boundary.WORKDIR + "/")
    if under_workdir:
        assert res.status == "ok", (res.status, res.error)
    else:
        assert res.status == "violation" and "os.mkdir" in res.error, (res.status, res.error)
    assert not target.exists()


def test_caught_violation_is_still_reported():
    code = (
        "import socket, os\n"
        "try:\n"
        "    socket.socket().connect(('127.0.0.1', 9))\n"
        "except Exception:\n"
        "    pass\n"
        "try:\n"
        "    os.system('true')\n"
        "except Exception:\n"
        "    pass\n"
        "done = True\n"
    )
    res = run_program(code, result_vars=["done"])
    assert res.status == "violation" and res.variables == {"done": True}
    assert len(res.violations) == 2 and "os.system" in res.violations[1]


def test_fork_bomb_is_contained():
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except Exception:\n        pass\n"
    res = run_program(code, limits=ProgramLimits(timeout_s=1.0, grace_s=1.0))
    assert res.status == "violation" and "os.fork" in res.error
    assert res.cpu_s <= 1.0 + 1.0 + 3


def test_writes_inside_the_temp_dir_are_fine():
    code = (
        "import os, tempfile\n"
        "open('data.txt', 'w').write('ok')\n"
        "os.mkdir('sub')\n"
        "with tempfile.NamedTemporaryFile('w', delete=False) as f:\n"
        "    f.write('t')\n"
        "os.rename('sub', 'sub2'); os.rmdir('sub2')\n"
        "print('quiet', file=open(os.devnull, 'w'))\n"
        "back = open('data.txt').read()\n"
        "cwd = os.getcwd()\n"
    )
    res = run_program(code, result_vars=["back", "cwd"])
    assert res.status == "ok", res.error
    assert res.variables["back"] == "ok" and res.variables["cwd"] == boundary.WORKDIR  # the private tmpfs


@pytest.mark.parametrize(
    "code",
    [
        "import sqlite3\nsqlite3.connect('/tmp/callbench-escape.db')",
        "import ctypes\nctypes.CDLL(None).system(b'true')",
        "import readline\nreadline.write_history_file('/tmp/x.pth')",
    ],
)
def test_stdlib_c_extensions_that_pass_the_hook_are_absent(code):
    res = run_program(code)
    assert res.status == "runtime_error" and "ModuleNotFoundError" in res.error, (res.status, res.error)


@pytest.mark.parametrize("memory_limit", ["as", "data"])
def test_memory_hog_is_a_memory_error(memory_limit):
    lim = ProgramLimits(memory_mb=512, memory_limit=memory_limit)
    big = run_program("x = bytearray(4 * 1024**3)", limits=lim)
    assert big.status == "runtime_error" and big.error.startswith("MemoryError") and big.line == 1
    grow = run_program(
        "keep = []\nwhile True:\n    keep.append(' ' * 10**6)\n", result_vars=["keep"], limits=lim
    )
    assert grow.status in ("runtime_error", "crash")
    if grow.status == "runtime_error":
        assert grow.error.startswith("MemoryError") and grow.line == 3


def test_crash_is_reported():
    res = run_program("import os\nos.abort()")
    assert res.status == "crash" and "SandboxCrash" in res.error


def test_huge_output_is_truncated():
    code = "import sys\nprint('x' * 50_000_000)\nsys.stderr.write('e' * 3_000_000 + 'END')\n"
    res = run_program(code, limits=ProgramLimits(max_output_bytes=1000))
    assert res.status == "ok"
    assert res.stdout.startswith("[... ") and res.stdout.endswith("x" * 100 + "\n")
    assert len(res.stdout) < 1100 and res.stderr.endswith("eeeEND") and len(res.stderr) < 1100


def test_json_conversion():
    setup = (
        "class Point:\n"
        "    def __init__(self, x):\n"
        "        self.x = x\n"
        "def __to_json__(v):\n"
        "    if isinstance(v, Point):\n"
        "        return {'x': v.x}\n"
        "    if isinstance(v, set):\n"
        "        return sorted(v)\n"
        "    if v == 'boom':\n"
        "        raise ValueError('no')\n"
        "    return v\n"
    )
    code = "p = Point(3)\ns = {3, 1}\nb = 'boom'\no = object()\n"
    res = run_program(code, setup=setup, result_vars=["p", "s", "b", "o"], finalize="[p, s]")
    assert res.status == "ok"
    assert res.variables["p"] == {"x": 3} and res.variables["s"] == [1, 3]
    assert res.variables["b"] == {"__unserializable__": "str"}
    assert res.variables["o"]["__repr__"].startswith("<object object")
    assert res.state == [{"x": 3}, [1, 3]]  # the hook applies to nested values too
    plain = run_program(
        "s = {1}\nclass Bad:\n    def __repr__(self):\n        raise RuntimeError\nb = Bad()",
        result_vars=["s", "b"],
    )
    assert plain.variables == {"s": {"__repr__": "{1}"}, "b": {"__unserializable__": "Bad"}}
    broken = run_program("voice = None", setup="voice = 1", finalize="voice.snapshot()")
    assert broken.status == "ok" and broken.state is None and "AttributeError" in broken.finalize_error


def test_setup_failure_is_reported():
    res = run_program("x = 1", setup="raise RuntimeError('harness bug')")
    assert res.status == "crash" and res.error == "setup failed: RuntimeError: harness bug (line 1)"


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"hello": "world"}')

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def loopback_service():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen()
    yield srv.server_address[1], other.getsockname()[1]
    srv.shutdown()
    other.close()


class _UnixHTTPServer(http.server.ThreadingHTTPServer):
    address_family = socket.AF_UNIX

    def server_bind(self):
        self.socket.bind(self.server_address)
        self.server_name, self.server_port = "localhost", 0


@pytest.fixture(scope="module")
def unix_service(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("svc") / "hello.sock")
    srv = _UnixHTTPServer(path, _Hello)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield path
    srv.shutdown()


@pytest.mark.skipif(importlib.util.find_spec("requests") is None, reason="requests not installed")
def test_services_are_the_only_network(unix_service, loopback_service):
    port, other = loopback_service
    get = "r = requests.get({}, timeout=5).json()\n"
    res = run_program(
        get.format("URL"), setup="import requests", result_vars=["r"], services=[("URL", unix_service)]
    )
    assert res.status == "ok" and res.variables == {"r": {"hello": "world"}}, res.error
    # refused, each; reaching a host the program was not given is the model's mistake (wrong_host)
    denied = [
        (get.format(f"'http://127.0.0.1:{port}/'"), "wrong_host"),  # the host's loopback is another namespace
        (get.format("'http://example.com/'"), "wrong_host"),  # an external address
        ("import socket\nsocket.socket().connect(('8.8.8.8', 53))", "wrong_host"),
        ("import socket\nsocket.socket().bind(('0.0.0.0', 0))", "violation"),
        ("import socket\nsocket.socket().listen()", "violation"),
        ("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))", "wrong_host"),
        ("import socket\nsocket.socket(socket.AF_UNIX).connect('/tmp/.X11-unix/X0')", "violation"),
    ]
    for code, status in denied:
        res = run_program(code, setup="import requests", services=[("URL", unix_service)])
        assert res.status == status and res.violations, (code, res.status, res.error)
    # past the hook (the raw _socket type is not audited for connect targets it cannot see), the
    # network namespace still holds nothing of the host's
    raw = (
        "import _socket\ns = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)\ns.settimeout(2)\n"
        f"try:\n    s.connect(('127.0.0.1', {port}))\n    reached = True\nexcept OSError:\n    reached = False\n"
    )
    res = run_program(raw, result_vars=["reached"])
    assert res.variables.get("reached") is False or res.status == "violation", (res.status, res.variables)


@pytest.mark.skipif(importlib.util.find_spec("requests") is None, reason="requests not installed")
def test_a_socket_that_cannot_be_linked_is_bound_instead(unix_service, monkeypatch):
    """A warm server reaches a service through a hard link in its socket directory; a socket on
    another filesystem (EXDEV) is served by a sandbox started with that socket bound."""
    import errno
    import os

    def cross_device(src, dst, *a, **k):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    get = "r = requests.get(URL, timeout=5).json()\n"
    res = run_program(get, setup="import requests", result_vars=["r"], services=[("URL", unix_service)])
    assert res.status == "ok" and res.variables == {"r": {"hello": "world"}}, res.error


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_torch_under_data_limit():
    lim = ProgramLimits(memory_limit="data", memory_mb=2048, timeout_s=30)
    res = run_program(
        "t = (torch.zeros(3) + 1).tolist()\n", setup="import torch", result_vars=["t"], limits=lim
    )
    assert res.status == "ok" and res.variables == {"t": [1.0, 1.0, 1.0]}, res.error
    hog = run_program("x = bytearray(4 * 1024**3)\n", setup="import torch", limits=lim)
    assert hog.status == "runtime_error" and hog.error.startswith("MemoryError")
    # importing torch takes seconds of CPU; the fork server pays it, the program is not charged
    quick = ProgramLimits(memory_limit="data", memory_mb=2048, timeout_s=0.5)
    for mode in ("fresh", "forkserver"):
        program.set_mode(mode)
        try:
            res = run_program(
                "t = torch.ones(2).sum().item()\n", setup="import torch", result_vars=["t"], limits=quick
            )
        finally:
            program.set_mode("forkserver")
        assert res.status == "ok" and res.variables == {"t": 2.0}, (mode, res.error)


def test_async_wrapper_runs_concurrently():
    async def main():
        return await asyncio.gather(*(run_program_async(f"v = {i} * 2", result_vars=["v"]) for i in range(4)))

    results = asyncio.run(main())
    assert [r.variables["v"] for r in results] == [0, 2, 4, 6]


def test_bad_memory_limit_rejected():
    with pytest.raises(ValueError):
        run_program("x = 1", limits=ProgramLimits(memory_limit="rss"))  # type: ignore[arg-type]


def test_tool_sandbox_shares_the_guard():
    """PythonSandbox runs on the same guard module; process creation without an audit event
    (``_posixsubprocess.fork_exec``, used by multiprocessing's spawn) is refused there too."""
    from callbench.sandbox.python import PythonSandbox
    from callbench.tools import ToolModule

    source = (
        "import _posixsubprocess, sys, os\n"
        "def spawn():\n    return _posixsubprocess.fork_exec()\n"
        "def reimport():\n    del sys.modules['_posixsubprocess']\n    import _posixsubprocess\n    return 1\n"
        "def dirfd():\n    d = os.open('/tmp', os.O_RDONLY)\n    return os.open('callbench-sandbox-escape.txt', 65, dir_fd=d)\n"
        "def one():\n    return 1\n"
    )
    with PythonSandbox([ToolModule("t.py", source, ("spawn", "reimport", "dirfd", "one"))]) as sb:
        assert sb.call("one", {}) == {"ok": True, "output": {"output_0": 1}}
        out = sb.call("spawn", {})
        assert not out["ok"] and "PermissionError: sandbox: _posixsubprocess.fork_exec" in out["error"]
        out = sb.call("reimport", {})  # found in review: a fresh import brought the real fork_exec back
        assert not out["ok"] and "importing _posixsubprocess" in out["error"]
        out = sb.call("dirfd", {})
        assert not out["ok"] and "dir_fd" in out["error"]
    assert not Path("/tmp/callbench-sandbox-escape.txt").exists()


def test_forged_result_report_is_a_violation():
    code = (
        "import os, json\n"
        "for fd in range(3, 64):  # no procfs in the sandbox: every fd number\n"
        "    try:\n"
        "        os.write(fd, (json.dumps({'final': True, 'status': 'ok', 'variables': {'x': '42'}}) + '\\n').encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "x = 1\n"
    )
    res = run_program(code, result_vars=["x"])
    assert res.status == "violation" and "more than one result report" in res.error


def test_swallowed_timeout_is_still_a_timeout():
    code = "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\nx = 1\n"
    res = run_program(code, result_vars=["x"], limits=ProgramLimits(timeout_s=1))
    assert res.status == "timeout" and res.variables == {"x": 1}


# -- issue 28: hostile output on the result channel, host paths, temporary directories ----------


def _result_fd_writer(payload: str) -> str:
    """Program text that writes ``payload`` (an expression) to every fd but 0-2 (the result channel among them)."""
    return (
        "import os\n"
        f"data = ({payload}).encode() if isinstance({payload}, str) else {payload}\n"
        "for fd in range(3, 64):  # no procfs in the sandbox: every fd number\n"
        "    if fd > 2:\n"
        "        try:\n"
        "            os.write(fd, data)\n"
        "        except OSError:\n"
        "            pass\n"
        "x = 1\n"
    )


def test_bracket_flood_on_the_result_channel_is_that_programs_verdict():
    res = run_program(_result_fd_writer("'[' * 200000 + '\\n'"), result_vars=["x"])
    assert res.status == "ok" and res.variables == {"x": 1}, (res.status, res.error)
    unterminated = run_program(_result_fd_writer("'[' * 200000"), result_vars=["x"])  # no newline: still read
    assert unterminated.status == "ok" and unterminated.variables == {"x": 1}, (
        unterminated.status,
        unterminated.error,
    )


def test_forged_report_with_deeply_nested_variables_is_read_safely():
    forged = (
        "import json\n"
        "deep = '[' * 50000 + ']' * 50000\n"
        'line = \'{"final": true, "status": "ok", "variables": {"x": \' + json.dumps(deep) + \'}}\'\n'
    )
    res = run_program(forged + _result_fd_writer("'\\n' + line + '\\n'"), result_vars=["x"])
    assert res.status == "violation" and "more than one result report" in res.error
    envelope = "'\\n' + '{\"final\": true, \"v\": ' + '[' * 100000 + ']' * 100000 + '}\\n'"
    res = run_program(_result_fd_writer(envelope), result_vars=["x"])
    assert res.status == "ok" and res.variables == {"x": 1}, (res.status, res.error)


def test_deep_variable_reported_by_the_runner_is_a_value_not_a_crash():
    res = run_program(
        "x = []\ny = x\nfor _ in range(500):\n    y.append([])\n    y = y[0]\nz = 1\n", result_vars=["x", "z"]
    )
    assert res.status == "ok" and res.variables["z"] == 1
    assert "nested deeper than" in res.variables["x"]["__unreadable__"]


def test_violations_survive_any_amount_of_output():
    code = (
        "import os\n"
        "try:\n"
        "    os.system('true')\n"
        "except PermissionError:\n"
        "    pass\n"
        "block = b'x' * (1 << 20)\n"
        "for fd in range(3, 64):  # no procfs in the sandbox: every fd number\n"
        "    if fd > 2:\n"
        "        try:\n"
        "            for _ in range(40):\n"
        "                os.write(fd, block)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    res = run_program(code, limits=ProgramLimits(timeout_s=30))
    assert res.status == "violation" and "os.system" in res.error, (res.status, res.error)


def test_violation_after_an_unterminated_write_is_still_read():
    code = (
        _result_fd_writer("'garbage without newline'")
        + "import os\ntry:\n    os.system('true')\nexcept PermissionError:\n    pass\n"
    )
    res = run_program(code)
    assert res.status == "violation" and "os.system" in res.error, (res.status, res.error)


_HOST_PATH_PROBE = """
import json, os, sys
seen = {"sys": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable, *sys.path, *sys.argv],
        "env": dict(os.environ), "proc": sorted(os.listdir("/proc")), "cwd": os.getcwd(),
        "modules": sorted(str(getattr(m, "__file__", "")) for m in list(sys.modules.values())),
        "links": {}, "files": {}}
for top in ("/", "/opt", "/opt/python", "/opt/python/bin", "/run/callbench", "/etc", "/tmp"):
    try:
        for name in os.listdir(top):
            path = os.path.join(top, name)
            if os.path.islink(path):
                seen["links"][path] = os.readlink(path)
    except OSError:
        pass
for path in ("/proc/self/mountinfo", "/proc/1/cmdline", "/proc/self/environ", "/proc/self/maps", "/proc/cpuinfo"):
    try:
        with open(path, "rb") as f:
            seen["files"][path] = f.read().decode("utf-8", "replace")
    except OSError as exc:
        seen["files"][path] = type(exc).__name__
x = json.dumps(seen)
"""


@pytest.mark.parametrize("setup", ["import json", "import json\nimport torch"])
def test_the_sandbox_shows_no_host_path(setup, tmp_path):
    """Issue 28: nothing a program can read names a host path: not the interpreter's prefix, the
    venv, the checkout, the temporary directory of the service sockets, nor a bind's source (a
    procfs mountinfo would name each; the sandbox has no procfs)."""
    if "torch" in setup:
        pytest.importorskip("torch")
    res = run_program(_HOST_PATH_PROBE, setup=setup, result_vars=["x"])
    assert res.status == "ok", res.error
    seen = json.loads(res.variables["x"])
    assert seen["files"]["/proc/self/mountinfo"] == "FileNotFoundError"
    assert seen["files"]["/proc/1/cmdline"] == "FileNotFoundError"
    assert seen["proc"] == ["cpuinfo", "meminfo"] and "processor" in seen["files"]["/proc/cpuinfo"]
    assert seen["sys"][0] in (boundary.PREFIX, "/usr") and seen["sys"][3].startswith(seen["sys"][0] + "/bin/")
    text = json.dumps(seen)
    hosts = {str(REPO), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), sys.prefix,
             os.path.realpath(tempfile.gettempdir()) + "/callbench", str(Path.home())}
    for host in sorted(hosts - {"/", "/usr", "/tmp", ""}):
        assert host not in text, (host, [k for k, v in seen.items() if host in json.dumps(v)])
    if "torch" in setup:
        assert any(m.startswith(f"{boundary.SITE}/torch/") for m in seen["modules"])


def test_no_temporary_directory_is_left_behind(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    program.close_servers()
    try:
        for mode in program.MODES:
            program.set_mode(mode)
            assert run_program("x = 1", result_vars=["x"]).variables == {"x": 1}
            assert (
                run_program("import time\ntime.sleep(30)", limits=ProgramLimits(wall_s=1)).status
                == "infra_timeout"
            )
        program.close_servers()
    finally:
        program.set_mode("forkserver")
    assert list(tmp_path.iterdir()) == []


def test_each_program_of_a_warm_server_is_a_fresh_process():
    """Programs forked by one warm server share nothing: not files in /tmp or /dev/shm, not module
    state of the server's imports, not the process, not the random state."""
    program.close_servers()
    setup = "import json, random\n"
    first = run_program(
        "import os\nopen('left.txt', 'w').write('x')\njson.leak = 1\npid = os.getpid()\nr = random.random()\n",
        setup=setup,
        result_vars=["pid", "r"],
    )
    second = run_program(
        "import os\nfiles = sorted(os.listdir('.'))\nleak = hasattr(json, 'leak')\npid = os.getpid()\n"
        "r = random.random()\n",
        setup=setup,
        result_vars=["files", "leak", "pid", "r"],
    )
    assert first.status == second.status == "ok", (first.error, second.error)
    assert second.variables["files"] == [] and second.variables["leak"] is False
    assert second.variables["pid"] != first.variables["pid"] and second.variables["r"] != first.variables["r"]


def test_idle_servers_are_capped_least_recently_used_first():
    class Fake:
        def __init__(self, key):
            self.key, self.closed = key, False

        def alive(self):
            return not self.closed

        def close(self):
            self.closed = True

    pool = program._Pool()
    pool.max_idle = 2
    a, b, c = Fake("a"), Fake("b"), Fake("a")
    for s in (a, b, c):
        pool.release(s)
    assert a.closed and not b.closed and not c.closed
    assert pool.acquire("a") is c and pool.acquire("b") is b
    pool.close()


def test_result_channel_reader_keeps_violations_whatever_the_chunks_and_the_flood():
    """The reader itself (no sandbox): lines over the limit are skipped whole, never the violations
    before or after them; forged reports count once; chunk boundaries change nothing."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    stream = (
        b'\n{"violation": "first"}\n'
        + b"x" * 5000  # longer than the limit below, split across chunks
        + b"\n"
        + b'{"final": true, "status": "ok"}\n' * 50
        + b"[" * 200_000
        + b'\n{"violation": "last"}'  # no trailing newline: read at close
    )

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=len(stream)), max_size=30))
    def check(cuts):
        reader = program._Reports(max_line=1000)
        bounds = [0, *sorted(cuts), len(stream)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            reader.add(stream[a:b])
        reader.close()
        forged = "sandbox: more than one result report (forged by the program)"
        assert reader.violations == ["first", forged, "last"]
        assert reader.final == {"final": True, "status": "ok"}

    check()


def test_directories_of_a_killed_harness_are_removed_by_the_next(tmp_path, monkeypatch):
    """A harness stopped by a signal runs no clean-up; the next process removes what it left."""
    import os
    import subprocess
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"callbench-sock-{gone.pid}-abc"
    dead.mkdir()
    (dead / "s0.sock").write_text("")
    alive = tmp_path / f"callbench-prog-{os.getppid()}-abc"
    alive.mkdir()
    program._sweep_once.cache_clear()
    mine = program.private_dir("sock")
    assert not dead.exists() and alive.exists() and os.path.isdir(mine)
    os.rmdir(mine)
    os.rmdir(alive)
