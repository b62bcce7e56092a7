"""scipy_kernels hands out scipy's own function objects without running scipy's package imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpbandits import scipy_kernels

# Every scipy function the project takes from the kernels, by public module.
USED = {
    "scipy.linalg.lapack": ("lapack", ("dpotrf", "dpotrs", "dtrtrs", "dsyevx")),
    "scipy.linalg.blas": ("blas", ("dsyr", "dtrsm", "dtrsv", "daxpy")),
    "scipy.special": ("special", ("expit", "ndtr", "log_ndtr", "gammaln")),
}


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
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


@pytest.mark.parametrize("order", ["kernels first", "scipy first"])
def test_every_function_is_scipys_own_object(order: str) -> None:
    """Whichever is imported first, the public namespaces and the kernels share one module."""
    imports = ["import dpbandits.scipy_kernels as k",
               "import scipy.linalg.lapack, scipy.linalg.blas, scipy.special"]
    if order == "scipy first":
        imports.reverse()
    checks = [f"{public}.{name} is k.{attr}.{name}"
              for public, (attr, names) in USED.items() for name in names]
    assert run("\n".join(imports) + f"\nprint(all([{', '.join(checks)}]))") == "True"


def test_a_missing_file_falls_back_to_the_public_module() -> None:
    import scipy.linalg.lapack

    found = scipy_kernels.load_extension("linalg", "_no_such_module", "scipy.linalg.lapack")
    assert found is scipy.linalg.lapack
