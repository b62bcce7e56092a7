"""What decides floating-point results besides this project's code: the numerical libraries'
versions, the SIMD targets numpy dispatches to, the CPU numba compiles the kernels for and the
BLAS kernels OpenBLAS chose for the CPU.

The same shard spec gives bitwise the same numbers on machines with the same fingerprint. Two
CPUs with the same instruction set may still round differently: OpenBLAS picks its kernels by
CPU model at load time (SkylakeX's or Haswell's kernels on CPUs with AVX-512, whose sums round
differently; `OPENBLAS_CORETYPE` overrides the choice). Values computed once and shared between
processes (`disk_memo`) are therefore kept per fingerprint (`tag`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import platform
from functools import lru_cache
from pathlib import Path

import numpy as np

CORENAME_SYMBOLS = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                    "openblas_get_corename64_", "openblas_get_corename")
"""The OpenBLAS function naming the kernels in use, under the names its builds export."""


def numpy_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries in numpy's own folders (a wheel's `numpy.libs`) or, for
    a numpy linked to a system OpenBLAS, of the loaded libraries whose file name says openblas;
    scipy's own copy (`scipy.libs`) is left out: only some processes load it, and the
    fingerprint must be the same in every process of a machine. Empty without /proc."""
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    loaded = set()
    for line in maps:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            loaded.add(fields[5].removesuffix(" (deleted)"))
    numpy_dir = str(Path(np.__file__).parent)
    own = {path for path in loaded if path.startswith(numpy_dir) and "openblas" in path.lower()}
    if own:
        return sorted(own)
    return sorted(path for path in loaded if "openblas" in Path(path).name.lower()
                  and not Path(path).parent.name.startswith("scipy"))


def blas_kernels() -> list[str]:
    """The kernel families of numpy's OpenBLAS, e.g. ["Haswell"] ("unknown (file)" for a
    library that cannot be asked; ["none found"] where no OpenBLAS is found)."""
    kernels = set()
    for library in numpy_openblas():
        try:
            handle = ctypes.CDLL(library)
        except OSError:
            kernels.add(f"unknown ({Path(library).name})")
            continue
        for name in CORENAME_SYMBOLS:
            corename = getattr(handle, name, None)
            if corename is not None:
                corename.restype = ctypes.c_char_p
                kernels.add(corename().decode())
                break
        else:
            kernels.add(f"unknown ({Path(library).name})")
    return sorted(kernels) or ["none found"]


@lru_cache(maxsize=1)
def fingerprint() -> dict[str, object]:
    """numpy's, scipy's and numba's versions, Python's, the machine, the SIMD targets numpy
    dispatches to, the CPU numba compiles for and the BLAS kernels (computed once per process:
    the library state it reads does not change)."""
    import llvmlite.binding
    import numba
    import scipy  # the package alone: its version

    simd = np.show_config(mode="dicts")["SIMD Extensions"]
    return {"numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
            "python": platform.python_version(), "machine": platform.machine(),
            "simd": {"baseline": simd.get("baseline", []), "found": simd.get("found", [])},
            "compile_cpu": llvmlite.binding.get_host_cpu_name(),
            "blas_kernels": blas_kernels()}


@lru_cache(maxsize=1)
def tag() -> str:
    """A short name for `fingerprint()`: 12 hex digits of its sha256."""
    text = json.dumps(fingerprint(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
