"""scipy's compiled LAPACK, BLAS and special-function modules, loaded without scipy's packages.

`import scipy.linalg` and `import scipy.special` run package initialisers that import most of
scipy and, through scipy's array-API layer, numpy's lazy submodules (f2py, testing, ma): about
0.3 s of a simulation job's start-up, for a handful of functions. Those functions live in three
extension modules that need numpy alone: `scipy.linalg._flapack`, `scipy.linalg._fblas` and
`scipy.special._special_ufuncs`. Each is loaded here from scipy's installed file under its own
name and registered in `sys.modules`, as the import system would register it; a later
`import scipy.linalg` or `import scipy.special` then uses these same module objects, so every
function is the very object scipy's public namespaces export. Where scipy's layout differs, the
public modules are imported instead.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["blas", "lapack", "special"]


def _scipy_dir() -> Path | None:
    spec = importlib.util.find_spec("scipy")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def load_extension(package: str, name: str, public: str) -> ModuleType:
    """`scipy.<package>.<name>` loaded from its file (registered under that name), else the
    public module `public`."""
    full = f"scipy.{package}.{name}"
    if full in sys.modules:
        return sys.modules[full]
    root = _scipy_dir()
    if root is not None:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = root / package / f"{name}{suffix}"
            if path.is_file():
                spec = importlib.util.spec_from_file_location(full, path)
                if spec is None or spec.loader is None:
                    break
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[full] = module
                return module
    return importlib.import_module(public)


lapack = load_extension("linalg", "_flapack", "scipy.linalg.lapack")
blas = load_extension("linalg", "_fblas", "scipy.linalg.blas")
special = load_extension("special", "_special_ufuncs", "scipy.special")
