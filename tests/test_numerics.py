"""The machine fingerprint: libraries, CPU features and the BLAS kernels OpenBLAS chose."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from dpbandits import numerics

PROBE = ("import json, numpy, scipy.linalg\n"  # scipy's own OpenBLAS loaded, or not
         "from dpbandits import numerics\n"
         "print(json.dumps([numerics.fingerprint(), numerics.tag()]))\n")


def probe(coretype: str | None, load_scipy: bool = True) -> tuple[dict, str]:
    """The fingerprint and tag of a fresh process (with OPENBLAS_CORETYPE = `coretype`)."""
    env = {**os.environ, **({"OPENBLAS_CORETYPE": coretype} if coretype else {})}
    code = PROBE if load_scipy else PROBE.replace(", scipy.linalg", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    fingerprint, tag = json.loads(out)
    return fingerprint, tag


def test_the_fingerprint_names_numpys_blas_kernels_and_is_the_same_in_every_process() -> None:
    fingerprint, tag = probe(None)
    assert fingerprint == json.loads(json.dumps(numerics.fingerprint()))
    assert tag == numerics.tag() and len(tag) == 12
    assert probe(None, load_scipy=False) == (fingerprint, tag)  # import state does not matter
    if platform.system() == "Linux" and "scipy_openblas" in np.show_config(mode="dicts")[
            "Build Dependencies"]["blas"]["name"]:  # a wheel's OpenBLAS: found and asked
        assert numerics.numpy_openblas()
        assert "unknown" not in str(fingerprint["blas_kernels"])
        assert fingerprint["blas_kernels"] != ["none found"]


@pytest.mark.skipif(platform.machine() != "x86_64" or not numerics.numpy_openblas(),
                    reason="OpenBLAS x86-64 kernel names")
def test_other_blas_kernels_give_another_fingerprint() -> None:
    """Two kernel families every x86-64 CPU runs: same libraries and CPU, other tags."""
    (nehalem, tag_n), (sandybridge, tag_s) = probe("Nehalem"), probe("Sandybridge")
    assert nehalem["blas_kernels"] == ["Nehalem"]
    assert sandybridge["blas_kernels"] == ["Sandybridge"]
    assert {k: v for k, v in nehalem.items() if k != "blas_kernels"} == \
        {k: v for k, v in sandybridge.items() if k != "blas_kernels"}
    assert tag_n != tag_s
