"""README as a user follows it, in copies of the repository: every command block it shows runs
(offline ones for real or as a dry run, the rest accounted for), the "Add an algorithm" example
joins Table 2 next to the paper's baselines, and the "Change an algorithm" edit reaches every
LinUCB shard. Nothing here registers README's example in this process, so a repository where a
user has already added it runs these tests too."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpbandits.policies import POLICIES
from dpbandits.simulate import run_shard

from checkout import cli_run, copy_checkout, replace_function
from conftest import BIN, REPO

README = REPO / "README.md"
SMOKE_GLM = {"experiment": "readme", "params": {}, "epsilon": None, "delta": 0.02,
             "accounting": "strict", "instance": {"generator": "glm_ball", "family": "logistic",
                                                  "d": 3, "K": 5, "horizon": 200, "S": 2.0,
                                                  "seed": 4},
             "instance_index": 0, "trials": [0, 1], "seed": 4}

# How the test treats each command README shows: "run" as written, "dry" with -n added (a
# paper-scale run of minutes), or the reason it does not run here. A new command fails
# test_every_command_is_accounted_for until it is given one.
RUN, DRY = "run", "dry"
COMMANDS = {
    "make smoke": RUN,
    ".venv/bin/snakemake --cores 2 results/smoke/glm_table2/summary.csv --configfile "
    "config/smoke.yaml": RUN,
    ".venv/bin/snakemake -n": RUN,
    ".venv/bin/snakemake --report report.html --configfile config/smoke.yaml": RUN,
    ".venv/bin/snakemake --cores 2 outputs_glm_table2": DRY,
    ".venv/bin/snakemake --cores 2 results/examples/more_trials/glm_table2/summary.csv "
    "--configfile config/examples/more_trials_and_epsilons.yaml": DRY,
    ".venv/bin/snakemake --cores 2 paper": DRY,
    ".venv/bin/snakemake --cores 2 audit": DRY,
    ".venv/bin/snakemake --cores 2 realdata": DRY,
    ".venv/bin/snakemake --cores 2 outputs_glm_table2 --configfile my_table2.yaml":
        "run by test_the_readme_algorithm_joins_table2_next_to_the_baselines",
    "make reproduce": "the paper-scale run (minutes); its plan is `.venv/bin/snakemake -n`",
    "make test": "the test suite itself",
    ".venv/bin/snakemake --report report.html": "needs the paper-scale results",
    ".venv/bin/jupyter lab notebooks/explore.ipynb": "interactive; tests/test_notebook.py "
                                                     "executes the notebook",
    "DPB_SLURM_ACCOUNT=myproject DPB_SLURM_PARTITION=short .venv/bin/snakemake --profile "
    "workflow/profiles/slurm": "needs a SLURM cluster (tests/test_slurm_e2e.py)",
}


def section(title: str) -> str:
    """The README text of one `## ` section."""
    return README.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def commands(text: str) -> list[str]:
    """The commands of every bash block, continuation lines joined, comments dropped."""
    found = []
    for block in blocks(text, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(line.split("#", 1)[0].split())
            if command:
                found.append(command)
    return found


def user_checkout(root: Path) -> Path:
    """A copy of the repository whose `.venv` is this test's virtual environment."""
    checkout = copy_checkout(root)
    (checkout / ".venv").symlink_to(BIN.parent)
    return checkout


def shell(checkout: Path, command: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=checkout, capture_output=True, text=True,
                          timeout=1800, env=env)


def test_every_command_is_accounted_for():
    shown = commands(README.read_text())
    assert set(shown) == set(COMMANDS), set(shown) ^ set(COMMANDS)


@pytest.mark.slow
def test_the_commands_readme_shows_run(tmp_path: Path):
    checkout = user_checkout(tmp_path / "repo")
    for command in commands(README.read_text()):
        how = COMMANDS[command]
        if how not in (RUN, DRY):
            continue
        if command == "make smoke":  # the environment exists: make must not reinstall it
            command = "make -o .venv/.installed smoke"
        proc = shell(checkout, command + (" -n" if how == DRY else ""))
        assert proc.returncode == 0, f"{command}:\n{proc.stderr[-3000:]}"
    assert (checkout / "report.html").stat().st_size > 0
    assert (checkout / "results/smoke/glm_table2/summary.csv").is_file()


def add_readme_algorithm(checkout: Path) -> str:
    """README's "Add an algorithm" steps in the checkout: the module and its POLICIES line."""
    text = section("Add an algorithm")
    code = blocks(text, "python")[0]
    module = re.match(r"# (src/dpbandits/policies/\w+\.py)", code).group(1)
    line = re.search(r'"(\w+)": "dpbandits\.policies\.\w+:\w+",', text)
    (checkout / module).write_text(code)
    registry = checkout / "src/dpbandits/policies/__init__.py"
    source = registry.read_text()
    if line.group(0) not in source:
        opening = 'Registry("algorithm", {\n'
        registry.write_text(source.replace(opening, f"{opening}    {line.group(0)}\n", 1))
    return line.group(1)


def checkout_env(checkout: Path) -> dict[str, str]:
    """The checkout's package first on the path (the user's edited sources)."""
    return {**os.environ, "PYTHONPATH": str(checkout / "src")}


@pytest.fixture(scope="module")
def example_checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    checkout = user_checkout(tmp_path_factory.mktemp("example") / "repo")
    return checkout, add_readme_algorithm(checkout)


def test_following_the_readme_leaves_this_process_registry_alone(example_checkout):
    _, name = example_checkout
    assert name not in POLICIES  # the checkout has it; this process does not


@pytest.mark.slow
def test_the_readme_algorithm_joins_table2_next_to_the_baselines(example_checkout):
    """README's overlay at smoke scale (its `base` swapped for config/smoke.yaml): the table
    and the summary hold the new algorithm and every baseline of the experiment."""
    checkout, name = example_checkout
    text = section("Add an algorithm")
    overlay = yaml.safe_load(blocks(text, "yaml")[0])
    assert overlay["base"] == "config/config.yaml"
    overlay["base"] = "config/smoke.yaml"
    (checkout / "my_table2.yaml").write_text(yaml.safe_dump(overlay))
    command = next(c for c in commands(text) if "my_table2.yaml" in c)
    proc = shell(checkout, command, checkout_env(checkout))
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = pd.read_csv(checkout / overlay["results"] / "glm_table2" / "summary.csv")
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    shipped = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    algorithms = (smoke["experiments"]["glm_table2"].get("algorithms")
                  or shipped["experiments"]["glm_table2"]["algorithms"])
    baselines = {a.get("label", a["policy"]) for a in algorithms}
    assert set(summary["algorithm"]) == baselines | {name}
    tables = "".join(p.read_text() for p in (checkout / overlay["paper"]).rglob("glm_table2*.md"))
    assert name in tables and all(b in tables for b in baselines)


@pytest.mark.slow
def test_the_readme_algorithm_learns(example_checkout, tmp_path: Path):
    checkout, name = example_checkout
    entry = yaml.safe_load(blocks(section("Add an algorithm"), "yaml")[0])
    params = entry["experiments"]["glm_table2"]["algorithms+"][0]["params"]
    spec = {**SMOKE_GLM, "algorithm": name, "policy": name, "params": params}
    ours = cli_run(checkout, tmp_path / "cache", spec, tmp_path / "ours.h5")
    uniform = run_shard({**SMOKE_GLM, "algorithm": "Uniform", "policy": "Uniform"}).cum_regret
    assert ours.shape == uniform.shape
    assert np.all(ours[:, -1] < uniform[:, -1])  # it learns; uniform does not


def test_the_readme_algorithm_rejects_undeclared_parameters(example_checkout):
    checkout, name = example_checkout
    (checkout / "typo.yaml").write_text(
        "base: config/smoke.yaml\nresults: results/typo\npaper: paper/typo\nexperiments:\n"
        f"  glm_table2:\n    algorithms+:\n      - {{policy: {name}, params: {{explre: 0.1}}}}\n")
    proc = shell(checkout, ".venv/bin/snakemake -n --configfile typo.yaml",
                 checkout_env(checkout))
    assert proc.returncode == 2 and "explre" in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if "explre" in line]) == 1


def test_the_readme_change_reaches_every_linucb_shard(tmp_path: Path) -> None:
    """The README's edit of LinUCB's decision rule, made in a copy of the repository: LinUCB
    with α = 1 then gives exactly what the unedited LinUCB gives with α = 0."""
    text = section("Change an algorithm")
    checkout = copy_checkout(tmp_path / "checkout")
    replace_function(checkout, POLICIES.get("LinUCB").decision_rule, blocks(text, "python")[0])
    spec = {"experiment": "readme", "algorithm": "LinUCB", "policy": "LinUCB",
            "params": {"alpha": 1.0}, "epsilon": None, "delta": 0.02, "accounting": "strict",
            "instance": {"generator": "logistic_pool", "d": 5, "n_arms": 20, "K": 5,
                         "horizon": 400, "seed": 3}, "instance_index": 0, "trials": [0, 1],
            "seed": 3}
    edited = cli_run(checkout, tmp_path / "cache", spec, tmp_path / "edited.h5")
    greedy = run_shard({**spec, "params": {"alpha": 0.0}}).cum_regret
    np.testing.assert_array_equal(edited, greedy)
    assert not np.array_equal(edited, run_shard(spec).cum_regret)


def test_readme_is_for_users():
    text = README.read_text()
    assert len(text.encode()) <= 15_000
    assert "| what | wall | CPU |" in section("Speed")  # the current figures; history elsewhere
