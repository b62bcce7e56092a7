"""notebooks/explore.ipynb runs headlessly on the smoke results; the slicing helpers work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from dpbandits.explore import (
    RESULTS_ENV,
    experiments,
    final_table,
    load_curve_table,
    load_summaries,
    results_dir,
    slice_results,
)

from conftest import BIN, REPO, SMOKE_RESULTS

NOTEBOOK = REPO / "notebooks" / "explore.ipynb"


def repository_with(tmp_path: Path, smoke_run: Path) -> Path:
    """A repository root (its Snakefile) holding the smoke run's results, as `make smoke`
    leaves them."""
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "Snakefile").touch()
    (root / "results").mkdir()
    (root / SMOKE_RESULTS).symlink_to(smoke_run / SMOKE_RESULTS)
    return root


@pytest.mark.slow
def test_notebook_runs_on_smoke_results(smoke_run: Path, monkeypatch, tmp_path):
    """As after `make smoke` and `jupyter lab notebooks/explore.ipynb`: the kernel starts in
    notebooks/ and the notebook finds results/smoke from the repository root by itself."""
    root = repository_with(tmp_path, smoke_run)
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    monkeypatch.setenv("DPBANDITS_EXPERIMENT", "glm_table2")  # instance grid (κ) and ε grid
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(root / "notebooks")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4  # per algorithm and ε, against ε, against κ, curves
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"results folder: {(root / SMOKE_RESULTS).resolve()}" in printed
    assert "plotting: glm_table2" in printed
    for name in experiments(smoke_run / SMOKE_RESULTS):
        assert name in printed


def test_results_are_found_from_the_repository_root_paper_scale_first(smoke_run: Path,
                                                                       monkeypatch, tmp_path):
    root = repository_with(tmp_path, smoke_run)
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    monkeypatch.chdir(root / "notebooks")
    assert results_dir() == root.resolve() / SMOKE_RESULTS
    monkeypatch.setenv(RESULTS_ENV, SMOKE_RESULTS)  # relative: from the root, not notebooks/
    assert results_dir() == root.resolve() / SMOKE_RESULTS
    monkeypatch.delenv(RESULTS_ENV)
    paper_scale = root / "results" / "glm_table2"
    paper_scale.mkdir()
    (paper_scale / "summary.csv").write_text((smoke_run / SMOKE_RESULTS / "glm_table2" /
                                              "summary.csv").read_text())
    assert results_dir() == root.resolve() / "results"


def test_no_results_is_one_clear_message(tmp_path, monkeypatch):
    (tmp_path / "Snakefile").touch()
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no results under .*; run `make smoke` \(or "
                                                r"`make reproduce`\) in"):
        results_dir()


def test_jupyter_lab_is_installed():
    proc = subprocess.run([str(BIN / "jupyter"), "lab", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_helpers_on_smoke_results(smoke_run: Path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(smoke_run / SMOKE_RESULTS))
    folder = results_dir()
    assert folder == smoke_run / SMOKE_RESULTS  # an absolute path is taken as it is
    names = experiments(folder)
    summary = load_summaries(folder)
    assert set(summary["experiment"]) == set(names)
    one = slice_results(summary, experiment=names[0], epsilon=None)
    assert len(one) and one["epsilon"].isna().all() and set(one["experiment"]) == {names[0]}
    table = final_table(one, by=("algorithm",))
    first = one[one["algorithm"] == table["algorithm"].iloc[0]]["regret"]
    assert table["mean"].iloc[0] == pytest.approx(first.mean())
    assert table["se"].iloc[0] == pytest.approx(first.std(ddof=1) / np.sqrt(len(first)))
    curves = load_curve_table(folder, names[0], max_points=50)
    per_curve = curves.groupby(["algorithm", "epsilon", "instance_index"], dropna=False).size()
    assert (per_curve <= 50).all()
    horizon = int(summary[summary["experiment"] == names[0]]["T"].max())
    assert curves["t"].max() == horizon
    final = curves[curves["t"] == horizon]
    by_alg = summary[summary["experiment"] == names[0]].groupby(
        ["algorithm", "epsilon", "instance_index"], dropna=False)["regret"].mean()
    for _, row in final.iterrows():
        eps = row["epsilon"]
        key = (row["algorithm"], eps if not pd.isna(eps) else np.nan, row["instance_index"])
        match = by_alg[[k for k in by_alg.index if k[0] == key[0] and k[2] == key[2]
                        and ((pd.isna(k[1]) and pd.isna(key[1])) or k[1] == key[1])]]
        assert row["regret_mean"] == pytest.approx(float(match.iloc[0]))


def test_missing_results_folder_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="run snakemake first"):
        load_summaries(tmp_path)
