"""StateGen's complexity definition (``analyze complexity --definition upstream``).

Expected figures are hand-computed where the comment says so; the ``UPSTREAM`` table holds what
StateGen's own analyzer (``Sgenerator/utils.py`` at f85b507, run unmodified under Python 3.11 with
``stdlib-list`` 0.12 and networkx, outside this repository) printed for each program: calls
(``total_api_calls_invoked``), bindings (``binding_count``) and ``compute_path_depth`` of its edges.
The same comparison over the built-in 120 references, the 8 shared published programs and 374
random programs agreed on every program.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callbench.tracks.stateful.complexity_upstream import (
    analyse_upstream,
    call_name,
    is_api_call,
    longest_path,
)


def _figures(code: str) -> tuple[int, int, int]:
    m = analyse_upstream(code)
    return m["n_calls"], m["binding_count"], m["path_depth"]


def test_hand_computed_chain():
    # calls f, g, h; bindings (x, y), (y, z), (x, z); longest path x -> y -> z: 2 edges
    assert _figures("x = f(a)\ny = g(x)\nz = h(y, x)\n") == (3, 3, 2)


def test_calls_in_conditions_are_not_seen_method_calls_are():
    # torch.sum in the if test is not counted; t.sum() in an assignment is (a method call counts)
    code = "if torch.sum(t) > 0:\n    y = torch.cat(t)\nr = y.sum()\n"
    # calls: torch.cat, y.sum; binding (y, r): y derives from torch.cat; path 1
    assert _figures(code) == (2, 1, 1)


def test_builtins_math_and_standard_library_are_not_api_calls():
    assert not is_api_call("len") and not is_api_call("sqrt") and not is_api_call("json.dumps")
    assert not is_api_call("copy.deepcopy") and not is_api_call("os.path.join")
    assert is_api_call("heapq.heappush")  # defined in _heapq, which Python 3.9's list lacks
    assert is_api_call("deepcopy") and is_api_call("torch.cat") and is_api_call("out.append")
    assert is_api_call("this.f") and is_api_call("antigravity.geohash")  # never imported here


def test_call_names():
    import ast

    def name(expr: str) -> str:
        return call_name(ast.parse(expr).body[0].value.func)

    assert name("torch.nn.functional.conv2d(x, w)") == "torch.nn.functional.conv2d"
    assert name("requests.get(u).json()") == "json"  # the chain does not start at a variable
    assert name("''.join(x)") == "join" and name("f()()") == "<unknown>" and name("x[0].sum()") == "sum"


def test_binding_judged_on_the_last_assignment():
    # a is reassigned to a literal before h reads it: only (b, c) is a binding
    assert _figures("a = f(1)\nb = g(a)\na = 3\nc = h(a, b)\n") == (3, 1, 1)


def test_tuple_targets_bind_each_name():
    # split's result binds a and b; cat reads both: (a, c), (b, c)
    assert _figures("(a, b) = torch.split(t, 2)\nc = torch.cat((a, b), 0)\n") == (2, 2, 1)


def test_a_cycle_counts_simple_paths_only():
    # x = f(y) reads y, whose last assignment derives from g and f: (y, x); g reads x: (x, y)
    assert _figures("x = f(y)\ny = g(x)\n") == (2, 2, 1)


UPSTREAM = [
    ("x = f(a)\ny = g(x)\nz = h(y, x)\n", (3, 3, 2)),
    (
        "import json\nr = requests.get(u).json()\nd = json.loads(r)\nout = []\nfor i in r:\n    out.append(api.get(i['id']))\nresult = out\n",
        (2, 0, 0),
    ),
    ("a = heapq.heappush(h, 1)\nb = struct.pack('i', a)\nc = copy.deepcopy(b)\nd = deepcopy(c)\n", (3, 2, 1)),
    ("x = os.path.join(a, b)\ny = os.getcwd()\nz = math.sqrt(y)\nw = sqrt(z)\nv = log(w)\n", (0, 0, 0)),
    ("x = ''.join(a)\ny = x[0].sum()\nz = x[0].mean()\nq = f()()\nr = (lambda: 1)()\n", (5, 1, 1)),
    ("if torch.sum(x) > 0:\n    y = torch.cat(x)\nelse:\n    y = 3\nz = torch.sum(y)\n", (2, 0, 0)),
    ("while f(x):\n    x = g(x)\n    x += h(x)\n", (1, 1, 0)),
    (
        "with open(p) as fh:\n    data = fh.read()\nwith api.session(a) as s:\n    r = s.get(data)\n",
        (3, 2, 1),
    ),
    ("a, b = f(x)\n(c, d) = g(a)\n[e, f2] = h(b)\nk = e = m(c)\n", (4, 2, 2)),
    ("for a, b in zip(f(x), g(y)):\n    c = h(a, b)\nelse:\n    c = k(c)\n", (2, 1, 0)),
    ("for i in f(x):\n    y = g(i)\nfor i in range(3):\n    z = h(i, y)\n", (3, 3, 2)),
    ("x = [f(i) for i in g(y)]\nz = h(x)\n", (3, 1, 1)),
    ("x = f(a) if cond(b) else g(c)\ny = h(x)\nw = k(x and y)\n", (5, 1, 1)),
    (
        "def helper(q):\n    return api.do(q)\nx = helper(1)\ny = api.other(x)\nclass K:\n    z = api.z(y)\n",
        (3, 2, 2),
    ),
    ("try:\n    x = f(1)\nexcept E:\n    x = 2\nfinally:\n    y = g(x)\n", (2, 0, 0)),
    ("x = f(1); x = g(x); x = h(x)\n", (3, 1, 0)),
    ("d = {}\nd['k'] = f(1)\ny = g(d)\nz = h(d['k'])\n", (3, 0, 0)),
    ("a = f(1)\nb = g(a)\na = 3\nc = h(a, b)\n", (3, 1, 1)),
    ("x = api.a(1)\nprint(api.b(x))\napi.c(x)\nlen(api.d(x))\n", (2, 0, 0)),
    ("s = f'{api.a(1)}'\nt = api.b(s)\n", (2, 1, 1)),
    ("x = json.dumps(api.a(1))\ny = api.b(x)\nz = asyncio.timeout(1)\nw = tomllib.loads(y)\n", (3, 2, 2)),
    (
        "x = re.compile(p).match(s)\ny = datetime.datetime.now()\nz = collections.OrderedDict()\nq = sys.maxsize.bit_length()\n",
        (1, 0, 0),
    ),
    ("a = f(x=g(y), *h(z), **k(w))\nb = a.m(a)\n", (5, 1, 1)),
    ("a = x[1:f(2)]\nb = g(a)\n", (2, 1, 1)),
    ("a = f(1)\nb = a\nc = g(b)\nd = c\ne = h(d)\n", (3, 2, 1)),
    ("r = torch.split(t, 2)\n(a, b) = r\nc = torch.cat((a, b), 0)\n", (2, 2, 1)),
    ("x = api.a()\ny = api.b(x)\nx = api.c(y)\n", (3, 2, 1)),
    (
        "async def m():\n    async with api.s() as s:\n        x = await s.get(1)\n    async for i in api.it(x):\n        y = f(i)\n",
        (2, 0, 0),
    ),
    ("match cmd:\n    case 1:\n        x = f(1)\n    case _:\n        x = g(2)\ny = h(x)\n", (3, 1, 1)),
]


@pytest.mark.parametrize(("code", "expected"), UPSTREAM)
def test_agrees_with_upstreams_analyzer(code: str, expected: tuple[int, int, int]):
    assert _figures(code) == expected


def test_lines_are_counted_as_callbench_counts_them():
    assert analyse_upstream("# note\nx = f(1)\n\ny = g(x)  # done\n")["code_lines"] == 2


def _brute_force(edges: set[tuple[int, int]]) -> int:
    nodes = sorted({n for e in edges for n in e})
    best = 0
    for k in range(2, len(nodes) + 1):
        for path in itertools.permutations(nodes, k):
            if all((a, b) in edges for a, b in itertools.pairwise(path)):
                best = max(best, k - 1)
    return best


@settings(max_examples=150, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12))
def test_longest_path_is_the_longest_simple_path(edges):
    """Property: the DAG shortcut and the cyclic search both give the longest simple path."""
    assert longest_path({(str(a), str(b)) for a, b in edges}) == _brute_force(edges)


def test_builtin_set_under_both_definitions():
    """The figures docs/stateful.md reports; upstream's analyzer gave the same for each of the 120
    references (session programs have no binding by its rules: every API call there is followed by
    ``.json()`` or ``.status_code``, so no call is a whole assigned value)."""
    from callbench.tracks.stateful.complexity import summarize
    from callbench.tracks.stateful.generator import read_tasks
    from callbench.tracks.stateful.track import bench_files, builtin_bench

    tasks = [t for f in bench_files(builtin_bench()) for t in read_tasks(f)]
    up = summarize(tasks, "upstream")
    assert (up["n_tasks"], up["mean_calls"], up["mean_bindings"], up["mean_path_depth"]) == (
        120,
        7.1583,
        2.825,
        1.7833,
    )
    own = summarize(tasks)
    assert (own["mean_calls"], own["mean_bindings"], own["mean_path_depth"]) == (7.1583, 5.575, 4.7917)
    session = summarize([t for t in tasks if t["scenario"] == "session"], "upstream")
    assert session["mean_bindings"] == 0.0
