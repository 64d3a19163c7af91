from __future__ import annotations

import math
from pathlib import Path

import pytest

from callbench.tracks.nested.tools import builtin_tools, mathqa_names

SRC = Path(builtin_tools()[0].path)


@pytest.fixture(scope="module")
def mq():
    ns: dict = {}
    exec(compile(SRC.read_text(), str(SRC), "exec"), ns)  # trusted built-in code, tested directly
    return ns


def test_catalog_names_all_implemented(mq):
    assert set(mq["CATALOG_TOOLS"]) | set(mq["EXTRA_TOOLS"]) == set(mathqa_names())


@pytest.mark.parametrize(
    "name,args,want",
    [
        ("add", (2, 3), 5),
        ("subtract", (2, 3), -1),
        ("multiply", (4, 2.5), 10),
        ("divide", (7, 2), 3.5),
        ("inverse", (4,), 0.25),
        ("negate", (3,), -3),
        ("negate_prob", (0.25,), 0.75),
        ("power", (2, 10), 1024),
        ("sqrt", (16,), 4.0),
        ("log", (8, 2), 3.0),
        ("log", (math.e,), 1.0),
        ("floor", (2.7,), 2),
        ("remainder", (7, 3), 1),
        ("lcm", (4, 6.0), 12),
        ("gcd", (12, 18), 6),
        ("max_number", ([1, 5, 2],), 5),
        ("min_number", ([1, 5, 2],), 1),
        ("speed", (100, 4), 25),
        ("diagonal", (3, 4), 5.0),
        ("triangle_area", (4, 3), 6),
        ("rhombus_area", (4, 3), 6),
        ("rectangle_perimeter", (2, 3), 10),
        ("square_perimeter", (3,), 12),
        ("square_edge_by_perimeter", (12,), 3),
        ("square_edge_by_area", (9,), 3),
        ("surface_cube", (2,), 24),
        ("surface_sphere", (1,), 4 * math.pi),
        ("volume_cone", (1, 3), math.pi),
        ("volume_cylinder", (1, 2), 2 * math.pi),
        ("factorial", (5,), 120),
        ("choose", (5, 2), 10),
        ("permutation", (5, 2), 20),
        ("circle_area", (2,), 4 * math.pi),
        ("circumference", (1,), 2 * math.pi),
        ("rectangle_area", (2, 3), 6),
        ("square_area", (3,), 9),
        ("volume_cube", (2,), 8),
        ("volume_sphere", (1,), 4 / 3 * math.pi),
        ("volume_rectangular_prism", (1, 2, 3), 6),
        ("surface_cylinder", (1, 1), 4 * math.pi),
        ("triangle_perimeter", (3, 4, 5), 12),
        ("percent", (20, 50), 10),
    ],
)
def test_tool(mq, name, args, want):
    assert math.isclose(mq[name](*args)["result"], want, rel_tol=1e-12)


def test_divide_by_zero_raises(mq):
    with pytest.raises(ZeroDivisionError):
        mq["divide"](1, 0)
