"""Built-in MathQA operations for the math domain of NESTFUL.

Every function takes positional ``arg_0, arg_1, ...`` (bound by position) and returns
``{"result": value}`` as the v2 ``output_parameters`` say. This file is stdlib-only and is executed
inside the sandbox process from its source text, never imported for execution in the harness.

The first group is every name that appears in the v2 sample catalogs (toy_data_jan2025_schema.jsonl,
icl_examples.json); the second group are further MathQA operations we expect in the full data.
Where the published implementation is not available to us, semantics follow the catalog
descriptions; possible differences are noted per function (division is true division, ``log`` is
natural log unless a base is given, angles are not used by any tool here).
"""

from __future__ import annotations

import math


def _r(value):
    return {"result": value}


# --- names that appear in the v2 sample catalogs ------------------------------------------------


def add(arg_0, arg_1):
    """arg_0 + arg_1."""
    return _r(arg_0 + arg_1)


def subtract(arg_0, arg_1):
    """arg_0 - arg_1."""
    return _r(arg_0 - arg_1)


def multiply(arg_0, arg_1):
    """arg_0 * arg_1."""
    return _r(arg_0 * arg_1)


def divide(arg_0, arg_1):
    """arg_0 / arg_1, true (float) division; division by zero raises (an explicit call error)."""
    return _r(arg_0 / arg_1)


def inverse(arg_0):
    """1 / arg_0 (float)."""
    return _r(1 / arg_0)


def negate(arg_0):
    """-arg_0."""
    return _r(-arg_0)


def negate_prob(arg_0):
    """1 - arg_0: probability of the event not occurring (arg_0 taken as a fraction, not a percent)."""
    return _r(1 - arg_0)


def power(arg_0, arg_1):
    """arg_0 ** arg_1."""
    return _r(arg_0**arg_1)


def sqrt(arg_0):
    """Square root as a float (the catalog says ``int``; we do not truncate). Negative input raises."""
    return _r(math.sqrt(arg_0))


def log(arg_0, arg_1=math.e):
    """Logarithm of arg_0 in base arg_1, natural log when no base is given (catalog: "default is
    natural log"; its output type says ``int`` but we return the float)."""
    return _r(math.log(arg_0, arg_1))


def floor(arg_0):
    """Largest integer <= arg_0, as an int."""
    return _r(math.floor(arg_0))


def remainder(arg_0, arg_1):
    """arg_0 % arg_1 (Python semantics: the sign follows the divisor; may differ from C ``fmod``)."""
    return _r(arg_0 % arg_1)


def lcm(arg_0, arg_1):
    """Least common multiple; floats with integral values are accepted and converted to int."""
    return _r(math.lcm(_int(arg_0), _int(arg_1)))


def max_number(arg_0):
    """Maximum of a list of numbers (a bare number is returned as is)."""
    return _r(max(arg_0) if isinstance(arg_0, (list, tuple)) else arg_0)


def min_number(arg_0):
    """Minimum of a list of numbers (a bare number is returned as is)."""
    return _r(min(arg_0) if isinstance(arg_0, (list, tuple)) else arg_0)


def speed(arg_0, arg_1):
    """distance / time."""
    return _r(arg_0 / arg_1)


def diagonal(arg_0, arg_1):
    """Diagonal of a rectangle with sides arg_0, arg_1: sqrt(a^2 + b^2)."""
    return _r(math.sqrt(arg_0**2 + arg_1**2))


def triangle_area(arg_0, arg_1):
    """base * height / 2."""
    return _r(arg_0 * arg_1 / 2)


def rhombus_area(arg_0, arg_1):
    """d1 * d2 / 2."""
    return _r(arg_0 * arg_1 / 2)


def rectangle_perimeter(arg_0, arg_1):
    """2 * (length + width)."""
    return _r(2 * (arg_0 + arg_1))


def square_perimeter(arg_0):
    """4 * side."""
    return _r(4 * arg_0)


def square_edge_by_perimeter(arg_0):
    """perimeter / 4."""
    return _r(arg_0 / 4)


def square_edge_by_area(arg_0):
    """sqrt(area)."""
    return _r(math.sqrt(arg_0))


def surface_cube(arg_0):
    """6 * side^2."""
    return _r(6 * arg_0**2)


def surface_sphere(arg_0):
    """4 * pi * r^2 (math.pi; MathQA sometimes used 3.1416, which differs in the 5th digit)."""
    return _r(4 * math.pi * arg_0**2)


def volume_cone(arg_0, arg_1):
    """pi * r^2 * h / 3 (math.pi)."""
    return _r(math.pi * arg_0**2 * arg_1 / 3)


def volume_cylinder(arg_0, arg_1):
    """pi * r^2 * h (math.pi)."""
    return _r(math.pi * arg_0**2 * arg_1)


# --- further MathQA operations, not in the sample catalogs ----------------------------------------


def gcd(arg_0, arg_1):
    """Greatest common divisor (integral floats accepted)."""
    return _r(math.gcd(_int(arg_0), _int(arg_1)))


def factorial(arg_0):
    """n! for a non-negative integral n."""
    return _r(math.factorial(_int(arg_0)))


def choose(arg_0, arg_1):
    """Binomial coefficient C(n, k)."""
    return _r(math.comb(_int(arg_0), _int(arg_1)))


def permutation(arg_0, arg_1):
    """Number of ordered selections P(n, k)."""
    return _r(math.perm(_int(arg_0), _int(arg_1)))


def circle_area(arg_0):
    """pi * r^2."""
    return _r(math.pi * arg_0**2)


def circumference(arg_0):
    """2 * pi * r."""
    return _r(2 * math.pi * arg_0)


def rectangle_area(arg_0, arg_1):
    """length * width."""
    return _r(arg_0 * arg_1)


def square_area(arg_0):
    """side^2."""
    return _r(arg_0**2)


def volume_cube(arg_0):
    """side^3."""
    return _r(arg_0**3)


def volume_sphere(arg_0):
    """4/3 * pi * r^3."""
    return _r(4 / 3 * math.pi * arg_0**3)


def volume_rectangular_prism(arg_0, arg_1, arg_2):
    """length * width * height."""
    return _r(arg_0 * arg_1 * arg_2)


def surface_cylinder(arg_0, arg_1):
    """2 * pi * r * (r + h)."""
    return _r(2 * math.pi * arg_0 * (arg_0 + arg_1))


def triangle_perimeter(arg_0, arg_1, arg_2):
    """a + b + c."""
    return _r(arg_0 + arg_1 + arg_2)


def percent(arg_0, arg_1):
    """arg_0 percent of arg_1: arg_0 * arg_1 / 100 (MathQA naming varies; check against the data)."""
    return _r(arg_0 * arg_1 / 100)


def _int(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, int):
        return x
    raise ValueError(f"expected an integer, got {x!r}")


CATALOG_TOOLS = (
    "add subtract multiply divide inverse negate negate_prob power sqrt log floor remainder lcm "
    "max_number min_number speed diagonal triangle_area rhombus_area rectangle_perimeter square_perimeter "
    "square_edge_by_perimeter square_edge_by_area surface_cube surface_sphere volume_cone volume_cylinder"
).split()
EXTRA_TOOLS = (
    "gcd factorial choose permutation circle_area circumference rectangle_area square_area volume_cube "
    "volume_sphere volume_rectangular_prism surface_cylinder triangle_perimeter percent"
).split()
