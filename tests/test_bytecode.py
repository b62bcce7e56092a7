"""`precompile`: jobs read the project's bytecode even where PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from dpbandits.bytecode import precompile

PROBE = """
import importlib._bootstrap_external as external, sys
compiled = []
original = external.SourceLoader.source_to_code
def traced(self, data, path, *, _optimize=-1):
    compiled.append(path)
    return original(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = traced
sys.path.insert(0, sys.argv[1])
import probe_module
print(len(compiled))
"""


def compiled_on_import(folder: Path) -> int:
    """How many modules a fresh interpreter with PYTHONDONTWRITEBYTECODE=1 compiles."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(folder)], capture_output=True,
                          text=True, env=env, timeout=60, check=True)
    return int(proc.stdout)


def test_without_precompile_every_job_compiles_and_with_it_none_does(tmp_path: Path) -> None:
    module = tmp_path / "probe_module.py"
    module.write_text("VALUE = 1\n")
    assert compiled_on_import(tmp_path) == 1
    assert compiled_on_import(tmp_path) == 1  # nothing was cached: the next job compiles again
    assert precompile(tmp_path)
    assert Path(importlib.util.cache_from_source(str(module))).is_file()
    assert compiled_on_import(tmp_path) == 0


def test_an_unwritable_folder_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "probe_module.py").write_text("VALUE = 1\n")
    (tmp_path / "__pycache__").write_text("a file where the cache folder would go")
    assert precompile(tmp_path) is False
