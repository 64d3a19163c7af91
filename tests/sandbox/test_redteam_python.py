"""Red-team regressions for generated Python (issue 10, findings 1-4 and 11): each hostile program
below broke the sandbox before the bubblewrap boundary; each must now be contained.

Host-side effects are checked on the host (files, the run store, other samples' results), not
only through what the program reports.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import socket
import sqlite3
import sysconfig
import time
from pathlib import Path

import pytest

from callbench.sandbox import boundary
from callbench.sandbox.program import ProgramLimits, run_program

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    boundary._probe()[0] is None and os.environ.get("CALLBENCH_REQUIRE_SANDBOX") != "1",
    reason=f"bubblewrap cannot start here: {boundary._probe()[2]}",
)


@pytest.fixture()
def live_store(tmp_path):
    """A stand-in for a live run store next to the run: the program must not reach it."""
    db = tmp_path / "run.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE results (id TEXT, verdict TEXT)")
    con.execute("INSERT INTO results VALUES ('t1', 'wrong')")
    con.commit()
    con.close()
    return db


def _verdicts(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, verdict FROM results").fetchall()
    finally:
        con.close()


# -- finding 1: C-level escape through cffi / pyarrow -------------------------------------------


def test_packages_outside_the_view_are_not_importable():
    for name in ("cffi", "_cffi_backend", "pyarrow", "callbench", "numpy"):
        res = run_program(f"import {name}")
        assert res.status == "runtime_error" and "ModuleNotFoundError" in res.error, (name, res.status, res.error)


@pytest.mark.skipif(importlib.util.find_spec("cffi") is None, reason="cffi not installed")
def test_cffi_on_the_view_still_cannot_touch_the_host(live_store, tmp_path):
    """Even with cffi allowed, C code runs as nobody in a read-only root with no network."""
    marker = tmp_path / "pwned.txt"
    mine = f"/tmp/callbench-redteam-{os.getpid()}-{time.monotonic_ns()}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    code = f"""
import cffi
ffi = cffi.FFI()
ffi.cdef("int system(const char *); int getuid(void); int socket(int, int, int);"
         "int connect(int, const void *, unsigned int);")
C = ffi.dlopen(None)
uid = C.getuid()
rc_file = C.system(b"echo pwned > {marker} 2>/dev/null")
rc_store = C.system(b"echo x >> {live_store} 2>/dev/null")
rc_tmp = C.system(b"echo private > {mine}")
# a raw connect() to the host's loopback listener, past the audit hook
import struct
addr = struct.pack("=H", 2) + struct.pack("!H", {port}) + bytes([127, 0, 0, 1]) + bytes(8)
rc_net = C.connect(C.socket(2, 1, 0), addr, 16)
"""
    res = run_program(code, setup="import cffi", result_vars=["uid", "rc_file", "rc_store", "rc_net", "rc_tmp"])
    listener.settimeout(0.5)
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached the host's loopback
    listener.close()
    assert res.status == "ok", res.error
    v = res.variables
    assert v["uid"] == boundary.UID  # not root
    assert v["rc_file"] != 0 and v["rc_store"] != 0 and v["rc_net"] != 0 and v["rc_tmp"] == 0
    assert not marker.exists() and _verdicts(live_store) == [("t1", "wrong")]
    assert not Path(mine).exists()  # the sandbox's /tmp is its own


def test_the_run_store_and_the_project_are_out_of_sight(live_store):
    paths = [str(live_store), str(live_store.parent), str(REPO), str(REPO / "src" / "callbench"), sysconfig.get_paths()["purelib"]]
    res = run_program("import os\nseen = [p for p in PATHS if os.path.exists(p)]\n", preload={"PATHS": paths}, result_vars=["seen"])
    assert res.status == "ok" and res.variables["seen"] == [], res.variables


# -- finding 2: readline.write_history_file plants a .pth ----------------------------------------


def test_readline_cannot_plant_a_pth_file():
    purelib = sysconfig.get_paths()["purelib"]
    target = os.path.join(purelib, "zz_callbench_redteam.pth")
    code = f"import readline\nreadline.add_history('import os')\nreadline.write_history_file({target!r})\n"
    res = run_program(code)
    assert res.status in ("runtime_error", "violation") and not os.path.exists(target), (res.status, res.error)
    # nor with the file written by hand: the host's site-packages is not in the sandbox
    res = run_program(f"open({target!r}, 'w').write('import os')\n")
    assert res.status in ("runtime_error", "violation") and not os.path.exists(target)


def test_no_site_packages_and_no_pth_processing_inside():
    res = run_program(
        "import sys, os\nsite_dirs = [p for p in sys.path if 'packages' in p]\n"
        "import importlib.util\nhas_site = importlib.util.find_spec('site') is not None and 'site' in sys.modules\n",
        result_vars=["site_dirs", "has_site"],
    )
    assert res.status == "ok" and res.variables == {"site_dirs": [], "has_site": False}, res.variables


# -- finding 3: answers in reach ------------------------------------------------------------------


def test_the_builtin_bench_and_its_references_are_not_in_reach():
    """The voice scenario's setup imports its two harness modules (the service and StateGen's
    SpeechLab functions); nothing else of callbench comes along."""
    from callbench.tracks.stateful.scenarios import get_scenario

    scen = get_scenario("voice")
    code = """
import os, importlib.util
try:
    import callbench.tracks.stateful.data
    bench = True
except ImportError:
    bench = False
found = []
for root, dirs, files in os.walk('/'):
    if root.startswith(('/proc', '/sys', '/dev', '/usr/share')):
        dirs[:] = []
        continue
    for f in files:
        if 'callbench' in os.path.join(root, f) or f.endswith(('.jsonl', '.sqlite')):
            found.append(os.path.join(root, f))
"""
    res = run_program(code, setup=scen.runtime.setup, preload={"__initial__": None}, result_vars=["bench", "found"],
                      limits=ProgramLimits(timeout_s=60))
    assert res.status == "ok", res.error
    assert res.variables["bench"] is False
    assert sorted(res.variables["found"]) == [
        f"{boundary.SITE}/callbench/tracks/stateful/services/speech_lab.py",
        f"{boundary.SITE}/callbench/tracks/stateful/services/voice.py",
    ]


def test_forging_the_report_cannot_hide_a_violation_or_a_missing_variable():
    code = """
import os, sys, json
frame = sys._getframe()
while frame.f_back is not None:
    frame = frame.f_back
    runner = frame.f_locals.get('self')
    if runner is not None and hasattr(runner, 'cfg'):
        runner.cfg['result_vars'] = []
        break
try:
    open('/usr/lib/pwned', 'w')
except PermissionError:
    pass
for fd in range(3, 20):
    try:
        os.write(fd, (json.dumps({"final": True, "status": "ok", "variables": {}}) + "\\n").encode())
    except OSError:
        pass
os._exit(0)
"""
    res = run_program(code, result_vars=["result"])
    assert res.status == "violation" and "writing" in res.error
    assert res.missing == ["result"] and "result" not in res.variables


# -- finding 4: other samples' processes ----------------------------------------------------------


def test_other_samples_are_invisible_and_unharmed():
    """A saboteur reading every /proc/<pid>/fd it can see runs next to gold samples."""
    saboteur = """
import os, threading
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
me = os.getpid()
opened = 0
def drain(path):
    try:
        with open(path, 'rb') as f:
            f.read()
    except OSError:
        pass
for pid in pids:
    if pid == os.getpid():
        continue
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        continue
    for fd in fds:
        threading.Thread(target=drain, args=(f'/proc/{pid}/fd/{fd}',), daemon=True).start()
        opened += 1
"""
    gold = "import time\ntime.sleep(0.3)\nvalue = sum(range(10))\n"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        bad = [pool.submit(run_program, saboteur, result_vars=["pids", "me", "opened"]) for _ in range(3)]
        good = [pool.submit(run_program, gold, result_vars=["value"]) for _ in range(12)]
        results = [f.result() for f in good]
        sab = [f.result() for f in bad]
    assert all(r.status == "ok" and r.variables == {"value": 45} for r in results), [r.error for r in results]
    for r in sab:
        # no procfs in the sandbox (issue 28: its mountinfo names host paths): no process to see
        assert r.status == "ok" and r.variables["pids"] == [] and r.variables["opened"] == 0, r.variables


# -- finding 11: symlink flips, disk quota, /dev/shm, service threads ------------------------------


def test_symlink_flip_race_writes_nothing_outside(tmp_path):
    target = Path("/usr/lib") / f"callbench-redteam-{os.getpid()}"
    code = f"""
import os, threading, time
stop = time.monotonic() + 1.5
def flip():
    while time.monotonic() < stop:
        for dest in ('/tmp/ok', {str(target)!r}):
            try:
                os.remove('/tmp/link')
            except OSError:
                pass
            try:
                os.symlink(dest, '/tmp/link')
            except OSError:
                pass
threading.Thread(target=flip, daemon=True).start()
writes = 0
while time.monotonic() < stop:
    try:
        with open('/tmp/link', 'w') as f:
            f.write('x')
        writes += 1
    except OSError:
        pass
"""
    res = run_program(code, result_vars=["writes"], limits=ProgramLimits(timeout_s=10))
    assert res.status in ("ok", "violation"), res.error
    assert not target.exists()


def test_private_tmp_has_a_size_quota():
    code = """
written, error = 0, None
try:
    for i in range(40):
        with open(f'/tmp/f{i}', 'wb') as f:
            f.write(b'x' * (32 << 20))
        written += 32
except OSError as e:
    error = e.strerror
"""
    res = run_program(code, result_vars=["written", "error"], limits=ProgramLimits(timeout_s=30, tmp_mb=128))
    assert res.status == "ok", res.error
    assert res.variables["written"] <= 128 and res.variables["error"] == "No space left on device", res.variables


def test_dev_shm_is_refused_and_bounded():
    res = run_program("open('/dev/shm/x', 'wb').write(b'x' * (64 << 20))")
    assert res.status == "violation" and "/dev/shm" in res.error


def test_extension_written_to_tmp_cannot_be_loaded():
    origin = importlib.util.find_spec("_json").origin
    assert origin and origin.endswith(".so")
    data = Path(origin).read_bytes()
    code = (
        "open('/tmp/evil.cpython-311-x86_64-linux-gnu.so', 'wb').write(DATA)\n"
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('_json', '/tmp/evil.cpython-311-x86_64-linux-gnu.so')\n"
        "m = importlib.util.module_from_spec(spec)\n"
    )
    res = run_program(code, setup="import base64\nDATA = base64.b64decode(B64)", preload={"B64": __import__("base64").b64encode(data).decode()})
    assert res.status == "violation" and "C extension" in res.error, (res.status, res.error)


def test_session_service_caps_its_threads(tmp_path):
    from callbench.tracks.stateful.services.session_server import SessionService

    with SessionService(unix_path=str(tmp_path / "s.sock"), max_connections=8, socket_timeout=2) as svc:
        before = svc.stats()["threads"]  # the service's own process (the serve and control loops)
        socks = []
        for _ in range(100):
            s = socket.socket(socket.AF_UNIX)
            s.connect(svc.socket_path)
            socks.append(s)
        time.sleep(0.5)
        peak = svc.stats()["threads"] - before
        for s in socks:
            s.close()
        assert peak <= 8, peak
        # and it still serves once the flood is gone
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(5)
        c.connect(svc.socket_path)
        c.sendall(b"GET /api/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := c.recv(65536):
            reply += chunk
        c.close()
        assert reply.startswith(b"HTTP/1.1 200")
