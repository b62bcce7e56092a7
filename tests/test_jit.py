"""Compiled kernels (dpbandits.jit): cached on disk by their sources, never stale after an edit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpbandits import jit

BONUS = "def bonus(x):\n    return {factor} * x\n"
DECIDE = """
from bonus_module import bonus

{decorator}
def decide(x):
    return bonus(x) + 1.0

print(decide(1.0))
"""
NUMBA_PLAIN = "import numba\n\n\n"
DPBANDITS = "from dpbandits.jit import jit\n\n\n"


def run_two_modules(folder: Path, cache: Path, decorator: str, header: str) -> float:
    """decide(1.0) = bonus(1.0) + 1 in a fresh process, `decide` and `bonus` compiled by
    `decorator` in two modules, the compiled code cached in `cache`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path]),
           "NUMBA_CACHE_DIR": str(cache), "DPBANDITS_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, str(folder / "decide_module.py")], env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return float(proc.stdout.split()[-1])


def write_modules(folder: Path, factor: float, decorator: str, header: str) -> None:
    (folder / "bonus_module.py").write_text(header + f"{decorator}\n"
                                            + BONUS.format(factor=factor))
    (folder / "decide_module.py").write_text(header + DECIDE.format(decorator=decorator))


@pytest.mark.parametrize("decorator, header, stale", [
    ("@numba.njit(cache=True)", NUMBA_PLAIN, True),   # negative control: numba's own cache
    ("@jit", DPBANDITS, False),
])
def test_an_edit_in_another_module_reaches_the_cached_caller(tmp_path: Path, decorator: str,
                                                             header: str, stale: bool) -> None:
    """`decide` calls `bonus` of another module; `bonus` changes from 2x to 100x between two
    runs that share a cache. numba alone keys `decide` by its own file and keeps 3.0; the
    project's kernels are keyed by the sources declared before them and give 101.0."""
    cache = tmp_path / "cache"
    write_modules(tmp_path, 2.0, decorator, header)
    assert run_two_modules(tmp_path, cache, decorator, header) == 3.0
    write_modules(tmp_path, 100.0, decorator, header)
    assert run_two_modules(tmp_path, cache, decorator, header) == (3.0 if stale else 101.0)


def test_kernels_are_cached_in_the_folder_named_by_the_sources(tmp_path: Path) -> None:
    """A first process compiles and writes the cache folder; a second loads from it."""
    script = textwrap.dedent("""
        import numpy as np
        from dpbandits import jit, linalg
        linalg.cholesky(np.eye(3))
        print(jit.cache_folder())
        print(sum(linalg.cholesky.stats.cache_hits.values()))
    """)
    env = {**os.environ, "DPBANDITS_CACHE": str(tmp_path)}
    outputs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, check=True, timeout=300).stdout.split()
               for _ in range(2)]
    folder = Path(outputs[0][0])
    assert folder.parent == tmp_path / "jit" and outputs[1][0] == outputs[0][0]
    assert any(folder.rglob("*.nbi")) and any(folder.rglob("*.nbc"))
    assert (outputs[0][1], outputs[1][1]) == ("0", "1")  # compiled, then loaded


def test_the_folder_changes_with_any_package_source(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "dpbandits"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(jit, "PACKAGE", package)
    monkeypatch.setattr(jit, "_package", None)
    first = jit.cache_folder()
    assert jit.cache_folder() == first
    (package / "a.py").write_text("x = 2\n")
    monkeypatch.setattr(jit, "_package", None)
    assert jit.cache_folder() != first


def test_switched_off_a_kernel_is_the_python_function(monkeypatch) -> None:
    monkeypatch.setenv("DPBANDITS_JIT", "0")

    def double(x: float) -> float:
        return 2.0 * x

    assert jit.jit(double) is double
    assert jit.python_function(double) is double


def test_switched_off_the_package_runs_as_python_with_the_same_numbers(tmp_path: Path) -> None:
    """DPBANDITS_JIT=0 runs the same source as plain Python: a LinTS run gives the same trace."""
    script = textwrap.dedent("""
        import numpy as np
        from dpbandits.instances.registry import build_instance
        from dpbandits.policies import make_policy
        inst = build_instance({"generator": "logistic_pool", "d": 4, "n_arms": 20, "K": 5,
                               "horizon": 200, "seed": 3})
        result = make_policy("LinTS", inst.info, np.random.default_rng(1)).run(
            inst.environment(0))
        print(type(make_policy.__globals__["POLICIES"].get("LinTS").decision_rule).__name__)
        print(" ".join(repr(float(v)) for v in result.regret.cumsum()[::20]))
    """)
    out = {}
    for flag in ("1", "0"):
        env = {**os.environ, "DPBANDITS_CACHE": str(tmp_path), "DPBANDITS_JIT": flag}
        out[flag] = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                                   capture_output=True, check=True, timeout=300).stdout.split("\n")
    assert out["1"][0] == "CPUDispatcher" and out["0"][0] == "function"
    np.testing.assert_allclose(np.array(out["0"][1].split(), float),
                               np.array(out["1"][1].split(), float), rtol=1e-12)


def test_prune_removes_only_old_unused_folders(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path))
    current = jit.cache_folder()
    old, recent = tmp_path / "jit" / "old", tmp_path / "jit" / "recent"
    for folder in (current, old, recent):
        folder.mkdir(parents=True, exist_ok=True)
    os.utime(old, (0, 0))
    os.utime(current, (0, 0))
    assert jit.prune() == [old]
    assert current.is_dir() and recent.is_dir() and not old.exists()
