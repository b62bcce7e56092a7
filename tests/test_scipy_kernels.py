"""scipy_kernels hands out scipy's own function objects without running scipy's package imports."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dpbandits import scipy_kernels
from dpbandits.scipy_kernels import NEEDS

PUBLIC = {"lapack": "scipy.linalg.lapack", "blas": "scipy.linalg.blas",
          "special": "scipy.special"}


def run(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"} | env
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=environ)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_kernels_load_without_the_package_initialisers() -> None:
    packages = ("scipy.linalg", "scipy.special")
    code = ("import sys\nimport dpbandits.scipy_kernels\n"
            f"print(','.join(m for m in {packages!r} if m in sys.modules))")
    assert run(code) == ""
    # The control: the public import runs scipy.linalg's initialiser, which the check sees.
    code = ("import sys\nfrom scipy.linalg import lapack\n"
            f"print(','.join(m for m in {packages!r} if m in sys.modules))")
    assert run(code) == "scipy.linalg"


def identity_checks(same: bool = True) -> str:
    """`public.f is kernel.f` for every function the project calls (or, as a control, for
    each function against the kernel's next one, which must all be False)."""
    checks = []
    for attr, names in NEEDS.items():
        for i, name in enumerate(names):
            other = name if same else names[(i + 1) % len(names)]
            checks.append(f"{PUBLIC[attr]}.{name} is k.{attr}.{other}")
    return f"[{', '.join(checks)}]"


@pytest.mark.parametrize("order", ["kernels first", "scipy first"])
def test_every_function_is_scipys_own_object(order: str) -> None:
    """Whichever is imported first, the public namespaces and the kernels share one module."""
    imports = ["import dpbandits.scipy_kernels as k",
               "import scipy.linalg.lapack, scipy.linalg.blas, scipy.special"]
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
