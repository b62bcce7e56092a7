"""A copy of the repository as a researcher edits it, and runs of its package."""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dpbandits.policies import rule_source

from conftest import BIN, REPO

PACKAGE = REPO / "src" / "dpbandits"


def function_node(path: Path, function: Any) -> ast.FunctionDef:
    """The definition of `function` in the source file `path` (a copy of its own file)."""
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                and n.name == function.__name__
                and function.__code__.co_firstlineno in
                (n.lineno, *(d.lineno for d in n.decorator_list)))


def copied_file(checkout: Path, function: Any) -> Path:
    """The file of the checkout that holds the copy of `function`'s source."""
    return checkout / "src" / "dpbandits" / Path(inspect.getfile(function)).relative_to(PACKAGE)


def replace_function(checkout: Path, rule: Any, source: str) -> None:
    """The rule's definition (decorators included) replaced by `source` in the checkout."""
    function = rule_source(rule)
    path = copied_file(checkout, function)
    node = function_node(path, function)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = path.read_text().splitlines(keepends=True)
    lines[first - 1:node.end_lineno] = [source if source.endswith("\n") else source + "\n"]
    path.write_text("".join(lines))


def insert_return_zero(checkout: Path, rule: Any) -> None:
    """`return 0` as the first statement of the rule's body (after its docstring), in the
    checkout's copy of its source."""
    function = rule_source(rule)
    path = copied_file(checkout, function)
    lines = path.read_text().splitlines(keepends=True)
    node = function_node(path, function)
    body = node.body
    docstring = (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                 and isinstance(body[0].value.value, str))
    first = body[1] if docstring and len(body) > 1 else body[0]
    if docstring and len(body) == 1:
        line, indent = body[0].end_lineno, body[0].col_offset
    else:
        line, indent = first.lineno - 1, first.col_offset
    lines.insert(line, " " * indent + "return 0\n")
    path.write_text("".join(lines))


def copy_checkout(root: Path) -> Path:
    """The repository as a researcher edits it (sources, workflow, configs) copied to root."""
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(
        ".venv", ".git", "results", "tests", "benchmarks", "__pycache__", ".snakemake"))
    return root


def environment(checkout: Path, cache: Path) -> dict[str, str]:
    """The checkout's sources first on the path, the test's own kernel cache."""
    return {**os.environ, "DPBANDITS_CACHE": str(cache), "PYTHONPATH": str(checkout / "src"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def cli_run(checkout: Path, cache: Path, spec: dict[str, Any], out: Path) -> np.ndarray:
    """`dpbandits run --spec` with the checkout's package: the shard's regret curves."""
    spec_file = out.with_suffix(".json")
    spec_file.write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "dpbandits.cli", "run", "--spec",
                           str(spec_file), "--out", str(out)], env=environment(checkout, cache),
                          capture_output=True, text=True, timeout=900, cwd=out.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return regret_of(out)


def regret_of(shard: Path) -> np.ndarray:
    with h5py.File(shard, "r") as handle:
        return handle["cum_regret"][()]
