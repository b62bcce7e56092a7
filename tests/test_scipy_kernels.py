"""scipy_kernels hands out scipy's own function objects without running scipy's package imports."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from dpbandits import scipy_kernels
from dpbandits.scipy_kernels import NEEDS

PUBLIC = {"lapack": "scipy.linalg.lapack", "blas": "scipy.linalg.blas",
          "special": "scipy.special", "roots": "scipy.optimize._zeros_py._zeros"}


def run(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"} | env
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=environ)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_kernels_load_without_the_package_initialisers() -> None:
    packages = ("scipy.linalg", "scipy.special", "scipy.optimize")
    code = ("import sys\nimport dpbandits.scipy_kernels\n"
            f"print(','.join(m for m in {packages!r} if m in sys.modules))")
    assert run(code) == ""
    # The control: the public import runs scipy.linalg's initialiser, which the check sees.
    code = ("import sys\nfrom scipy.linalg import lapack\n"
            f"print(','.join(m for m in {packages!r} if m in sys.modules))")
    assert run(code) == "scipy.linalg"


def identity_checks(same: bool = True) -> str:
    """`public.f is kernel.f` for every function the project calls (or, as a control, for
    each function against the next one the project calls, which must all be False)."""
    pairs = [(attr, name) for attr, names in NEEDS.items() for name in names]
    checks = []
    for i, (attr, name) in enumerate(pairs):
        other_attr, other = pairs[i] if same else pairs[(i + 1) % len(pairs)]
        checks.append(f"{PUBLIC[attr]}.{name} is k.{other_attr}.{other}")
    return f"[{', '.join(checks)}]"


@pytest.mark.parametrize("order", ["kernels first", "scipy first"])
def test_every_function_is_scipys_own_object(order: str) -> None:
    """Whichever is imported first, the public namespaces and the kernels share one module."""
    imports = ["import dpbandits.scipy_kernels as k",
               "import scipy.linalg.lapack, scipy.linalg.blas, scipy.special, "
               "scipy.optimize._zeros_py"]
    if order == "scipy first":
        imports.reverse()
    body = "\n".join(imports)
    assert run(f"{body}\nprint(set({identity_checks()}))") == "{True}"
    assert run(f"{body}\nprint(set({identity_checks(same=False)}))") == "{False}"


def test_with_scipys_array_api_the_numbers_are_the_same() -> None:
    """SCIPY_ARRAY_API=1 wraps the ufuncs in Python functions; the values do not change."""
    code = ("import numpy as np, dpbandits.scipy_kernels as k, scipy.special as s\n"
            "x = np.linspace(-40.0, 40.0, 4001)\n"
            "print(all((getattr(s, f)(x) == getattr(k.special, f)(x)).all()"
            f" for f in {NEEDS['special']!r}))")
    assert run(code, SCIPY_ARRAY_API="1") == "True"


def test_a_missing_file_or_function_falls_back_to_the_public_module() -> None:
    import scipy.linalg.lapack

    missing_file = scipy_kernels.load_extension("linalg", "_no_such_module",
                                                "scipy.linalg.lapack", ("dpotrf",))
    assert missing_file is scipy.linalg.lapack
    missing_name = scipy_kernels.load_extension("linalg", "_fblas", "scipy.linalg.lapack",
                                                ("dpotrf",))  # a LAPACK name: not in BLAS
    assert missing_name is scipy.linalg.lapack
    assert scipy_kernels.load_extension("linalg", "_fblas", "scipy.linalg.lapack",
                                        NEEDS["blas"]) is scipy_kernels.blas


def brent_runs(solver, f, a: float, b: float, **kwargs: float) -> tuple[object, list[float]]:
    """The root (or the exception) and every point the solver evaluated."""
    points: list[float] = []

    def traced(x: float) -> float:
        points.append(x)
        return f(x)

    try:
        return solver(traced, a, b, **kwargs), points
    except (ValueError, RuntimeError) as error:
        extra = (getattr(error, "_x", None), getattr(error, "_function_calls", None))
        return (type(error), str(error), extra), points


BRENT_CASES = [  # f, a, b, keyword arguments
    (lambda x: x**3 - 2.0 * x - 5.0, 2.0, 3.0, {}),
    (lambda x: math.exp(x) - 7.5, -3.0, 4.0, {"xtol": 1e-7, "rtol": 1e-12, "maxiter": 200}),
    (lambda x: math.log1p(x) - 0.3, 0.0, 5.0, {"xtol": 1e-14, "rtol": 1e-12}),
    (lambda x: math.tanh(x - 0.25), -1.0, 1.0, {"xtol": 1e-13, "rtol": 1e-14}),
    (lambda x: x - 0.5, 1.0, 2.0, {}),  # no sign change
    (lambda x: math.nan, 0.0, 1.0, {}),  # NaN
    (lambda x: math.exp(x) - 7.5, -3.0, 4.0, {"maxiter": 2}),  # no convergence
    (lambda x: x, -1.0, 1.0, {"xtol": 0.0}),
    (lambda x: x, -1.0, 1.0, {"rtol": 1e-17}),
]


@pytest.mark.parametrize("case", range(len(BRENT_CASES)))
def test_brentq_is_scipys_solver_point_for_point(case: int) -> None:
    """The same points evaluated, the same root bits, the same errors as scipy.optimize.brentq."""
    from scipy.optimize import brentq as scipys

    f, a, b, kwargs = BRENT_CASES[case]
    assert brent_runs(scipy_kernels.brentq, f, a, b, **kwargs) == brent_runs(
        scipys, f, a, b, **kwargs)


def test_brentq_comparison_sees_a_changed_tolerance() -> None:
    """The control: another xtol gives other points, which the comparison above would see."""
    from scipy.optimize import brentq as scipys

    f, a, b, _ = BRENT_CASES[1]
    assert brent_runs(scipy_kernels.brentq, f, a, b, xtol=1e-7) != brent_runs(
        scipys, f, a, b, xtol=1e-9)
