"""Issue 28 at the track's level: a verdict depends on the program, not on how busy the machine is,
and a hostile output is that sample's verdict (the case is judged, nothing escapes ``execute``)."""

from __future__ import annotations

import importlib.util

import pytest

from callbench.sandbox.program import ProgramLimits, ProgramResult
from callbench.tracks.stateful import execution
from callbench.tracks.stateful.execution import Case, execute, judge
from callbench.tracks.stateful.scenarios import get_scenario

pytestmark = pytest.mark.skipif(importlib.util.find_spec("requests") is None, reason="requests not installed")

SESSION_REF = (
    "session_1 = requests.post(f\"{BASE_URL}/api/sessions/{source_1}/chat\", json={'data': data_1}).json()\n"
    "result = session_1['id']\n"
)
CASE = Case("base", {"source_1": "web", "data_1": {"user": "ana"}}, [])


def test_an_infrastructure_timeout_is_retried_once_from_a_fresh_service_state(monkeypatch):
    """The first run hits the wall-clock backstop after its write; the retry starts from the
    case's initial state, so the verdict is the same as on an idle machine."""
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    real = execution.run_program
    calls = []

    def stalled_once(code, **kwargs):
        out = real(code, **kwargs)  # the program runs (and writes to this attempt's service)
        calls.append(out.status)
        if len(calls) == 1:
            return ProgramResult(
                status="infra_timeout", error="InfraTimeout: the run passed the wall-clock backstop"
            )
        return out

    monkeypatch.setattr(execution, "run_program", stalled_once)
    actual = execute(scen, SESSION_REF, CASE)
    assert calls == ["ok", "ok"]
    assert judge(scen, expected, actual) == ("pass", None)  # one write, as the reference: a fresh service
    assert actual.writes == 1


def test_a_second_infrastructure_timeout_is_its_own_error_class():
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    waits = SESSION_REF + "import time\ntime.sleep(120)\n"
    actual = execute(scen, waits, CASE, ProgramLimits(timeout_s=1, wall_s=2))
    verdict, why = judge(scen, expected, actual)
    assert verdict == "infra_timeout" and verdict in execution.ERROR_CLASSES
    assert (
        why.startswith("InfraTimeout: the run passed the wall-clock backstop of 2s") and "retried once" in why
    )


def test_cpu_budget_is_the_programs_own():
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    spins = SESSION_REF + "while True:\n    pass\n"
    verdict, why = judge(scen, expected, execute(scen, spins, CASE, ProgramLimits(timeout_s=1)))
    assert verdict == "timeout" and why == "TimeoutError: program exceeded 1s of CPU time"


def _flood(payload: str) -> str:
    return (
        SESSION_REF + "import os\n"
        f"data = {payload}\n"
        "for fd in range(3, 64):  # no procfs in the sandbox: every fd number\n"
        "    if fd > 2:\n"
        "        try:\n"
        "            os.write(fd, data)\n"
        "        except OSError:\n"
        "            pass\n"
    )


@pytest.mark.parametrize(
    "payload",
    [
        "b'[' * 200000 + b'\\n'",  # a bracket flood on the result channel
        'b\'\\n{"final": true, "status": "ok", "variables": {"result": "\' + b\'[\' * 100000 + b\'"}}\\n\'',
    ],
)
def test_hostile_result_channel_output_is_the_samples_verdict(payload):
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    verdict, why = judge(scen, expected, execute(scen, _flood(payload), CASE))
    if "final" in payload:  # a forged second report
        assert verdict == "sandbox_violation" and "more than one result report" in why
    else:
        assert (verdict, why) == ("pass", None)


def test_a_violation_survives_40_mb_on_the_result_channel():
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    code = (
        SESSION_REF + "import os\n"
        "try:\n    os.system('true')\nexcept PermissionError:\n    pass\n"
        "block = b'x' * (1 << 20)\n"
        "for fd in range(3, 64):  # no procfs in the sandbox: every fd number\n"
        "    if fd > 2:\n"
        "        try:\n"
        "            for _ in range(40):\n"
        "                os.write(fd, block)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    verdict, why = judge(scen, expected, execute(scen, code, CASE, ProgramLimits(timeout_s=30)))
    assert verdict == "sandbox_violation" and "os.system" in why


def test_a_program_that_only_reaches_another_host_is_wrong_host_not_a_violation():
    """Issue 31: a model that hard-codes a base URL made a mistake; the connection is refused all
    the same, and any other refusal keeps the sample a sandbox violation."""
    scen = get_scenario("session")
    expected = execute(scen, SESSION_REF, CASE)
    hard_coded = SESSION_REF.replace("{BASE_URL}", "http://api.example.com")
    verdict, why = judge(scen, expected, execute(scen, hard_coded, CASE))
    assert verdict == "wrong_host" and verdict in execution.ERROR_CLASSES
    assert "api.example.com" in why
    to_ip = "import socket\ns = socket.socket()\ntry:\n    s.connect(('10.1.2.3', 80))\nexcept OSError:\n    pass\n" + SESSION_REF
    assert judge(scen, expected, execute(scen, to_ip, CASE))[0] == "wrong_host"
    both = hard_coded.replace("session_1 = ", "import os\ntry:\n    os.system('true')\nexcept PermissionError:\n    pass\nsession_1 = ", 1)
    verdict, why = judge(scen, expected, execute(scen, both, CASE))
    assert verdict == "sandbox_violation" and "os.system" in why
