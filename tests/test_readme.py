"""The README's "Add an algorithm" example runs as written: module, registry line, config entry."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dpbandits.config import experiment_shards, validate_config
from dpbandits.errors import ConfigError
from dpbandits.policies import POLICIES
from dpbandits.simulate import run_shard

from checkout import cli_run, copy_checkout, replace_function
from conftest import REPO


def section(title: str) -> str:
    """The README text of one `## ` section."""
    text = (REPO / "README.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.fixture
def example_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The README's module written to a file, imported and registered as the README says."""
    text = section("Add an algorithm")
    code = blocks(text, "python")[0]
    target = re.match(r"# src/dpbandits/policies/(\w+)\.py", code).group(1)
    line = re.search(r'"(\w+)": "dpbandits\.policies\.(\w+):(\w+)"', text)
    assert line and line.group(2) == target
    (tmp_path / f"readme_{target}.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    POLICIES.add(line.group(1), f"readme_{target}:{line.group(3)}")
    yield line.group(1), yaml.safe_load(blocks(text, "yaml")[0])[0]
    POLICIES.remove(line.group(1))
    sys.modules.pop(f"readme_{target}", None)


def experiment(entry: dict) -> dict:
    return {"experiments": {"readme": {
        "instance": {"generator": "glm_ball", "family": "logistic", "d": 3, "K": 5,
                     "horizon": 200, "S": 2.0, "seed": 4},
        "algorithms": [entry, {"policy": "Uniform"}], "trials": 2, "trials_per_shard": 2}}}


def test_the_readme_algorithm_runs_in_a_shard_and_learns(example_policy):
    name, entry = example_policy
    assert entry["policy"] == name
    config = validate_config(experiment(entry))
    shards = {s.spec["algorithm"]: s.spec for s in
              experiment_shards("readme", config["experiments"]["readme"])}
    ours, uniform = run_shard(shards[name]), run_shard(shards["Uniform"])
    assert ours.cum_regret.shape == (2, len(ours.checkpoints))
    assert np.all(ours.cum_regret[:, -1] < uniform.cum_regret[:, -1])  # it learns; uniform not


def test_the_readme_algorithm_rejects_undeclared_parameters(example_policy):
    name, entry = example_policy
    with pytest.raises(ConfigError, match="explre"):
        validate_config(experiment({"policy": name, "params": {"explre": 0.1}}))


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
