"""scipy's compiled LAPACK, BLAS and special-function modules, loaded without scipy's packages.

`import scipy.linalg` and `import scipy.special` run package initialisers that import most of
scipy and, through scipy's array-API layer, numpy's lazy submodules (f2py, testing, ma): about
0.3 s of a simulation job's start-up, for a handful of functions; `import scipy.optimize`, for
Brent's root finder, another 0.4 s. Those functions live in four extension modules that need
numpy alone: `scipy.linalg._flapack`, `scipy.linalg._fblas`, `scipy.special._special_ufuncs`
and `scipy.optimize._zeros`. Each is loaded here from scipy's installed file under its own
name and registered in `sys.modules`, as the import system would register it; a later
`import scipy.linalg`, `scipy.special` or `scipy.optimize` then uses these same module objects,
so every function is the very object scipy's namespaces use (with `SCIPY_ARRAY_API=1` scipy
wraps these same ufuncs in Python functions). Where a module does not load or lacks a function
the project calls (another scipy layout), the public module is imported instead.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import operator
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

__all__ = ["NEEDS", "blas", "brentq", "lapack", "load_extension", "special"]


NEEDS = {  # what the project calls, by kernel module
    "lapack": ("dpotrf", "dpotrs", "dtrtrs", "dsyevx"),
    "blas": ("dsyr", "dtrsm", "dtrsv", "daxpy"),
    "special": ("expit", "ndtr", "log_ndtr", "gammaln"),
    "roots": ("_brentq",),
}


def _scipy_dir() -> Path | None:
    """scipy's installed package folder, found without importing scipy."""
    spec = importlib.util.find_spec("scipy")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def _from_file(package: str, name: str) -> ModuleType | None:
    """`scipy.<package>.<name>` loaded from its file and registered; None if that fails."""
    root = _scipy_dir()
    if root is None:
        return None
    full = f"scipy.{package}.{name}"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = root / package / f"{name}{suffix}"
        spec = importlib.util.spec_from_file_location(full, path) if path.is_file() else None
        if spec is None or spec.loader is None:
            continue
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError):
            return None
        sys.modules[full] = module
        return module
    return None


def load_extension(package: str, name: str, public: str, needs: tuple[str, ...]) -> ModuleType:
    """`scipy.<package>.<name>` if it loads and has every name in `needs`, else `public`."""
    module = sys.modules.get(f"scipy.{package}.{name}") or _from_file(package, name)
    if module is not None and all(hasattr(module, n) for n in needs):
        return module
    return importlib.import_module(public)


lapack = load_extension("linalg", "_flapack", "scipy.linalg.lapack", NEEDS["lapack"])
blas = load_extension("linalg", "_fblas", "scipy.linalg.blas", NEEDS["blas"])
special = load_extension("special", "_special_ufuncs", "scipy.special", NEEDS["special"])
roots = load_extension("optimize", "_zeros", "scipy.optimize._zeros", NEEDS["roots"])

BRENTQ_XTOL, BRENTQ_RTOL, BRENTQ_MAXITER = 2e-12, 4 * np.finfo(float).eps, 100  # scipy's


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float = BRENTQ_XTOL,
           rtol: float = BRENTQ_RTOL, maxiter: int = BRENTQ_MAXITER) -> float:
    """`scipy.optimize.brentq(f, a, b, xtol=, rtol=, maxiter=)`: its argument checks, its
    NaN check of every value, then the same compiled solver with the same arguments."""
    maxiter = operator.index(maxiter)
    if xtol <= 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < BRENTQ_RTOL:
        raise ValueError(f"rtol too small ({rtol:g} < {BRENTQ_RTOL:g})")

    calls = 0

    def checked(x: float) -> float:
        nonlocal calls
        fx = f(x)
        calls += 1
        if np.isnan(fx):
            error = ValueError(f"The function value at x={x} is NaN; solver cannot continue.")
            error._x, error._function_calls = x, calls  # type: ignore[attr-defined]
            raise error
        return fx

    return roots._brentq(checked, a, b, xtol, rtol, maxiter, (), False, True)
