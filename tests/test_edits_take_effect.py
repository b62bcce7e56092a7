"""An edit to a policy's decision rule changes what runs, on every path.

One copy of the package gets `return 0` as the first statement of every decision rule that
`dpbandits list algorithms` names; for every registered policy, a shard with one trial and a
shard with ten, through `dpbandits run` and through `snakemake`, must then give other results
than the unedited package. A path that ran another implementation than the named rule would
reach no edited code and keep its results. A copy without the edits must give the same
results (the control)."""

from __future__ import annotations

import inspect
import json
import subprocess
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import yaml

from dpbandits.policies import POLICIES, rule_name, rule_source
from dpbandits.simulate import run_shard

from checkout import (
    PACKAGE,
    cli_run,
    copy_checkout,
    environment,
    insert_return_zero,
    regret_of,
)
from conftest import BIN

pytestmark = pytest.mark.slow

INSTANCES = {
    "glm": {"generator": "glm_ball", "family": "logistic", "d": 3, "K": 5, "S": 2.0,
            "horizon": 300, "seed": 7},
    "linear": {"generator": "linear_sphere", "K": 10, "d": 2, "horizon": 20000, "seed": 7,
               "redraw": True},
    "pool": {"generator": "logistic_pool", "d": 5, "n_arms": 20, "K": 5, "horizon": 300,
             "seed": 7},
}


def instance_for(cls: type) -> dict[str, Any]:
    """A small instance of a family the policy plays."""
    families = cls.families
    if "linear" in families and "logistic" not in families:
        return INSTANCES["linear"]
    if isinstance(families, tuple) and "logistic" in families:
        return INSTANCES["glm"]
    return INSTANCES["pool"]


def spec_for(name: str, trials: int) -> dict[str, Any]:
    cls = POLICIES.get(name)
    return {"experiment": "edit", "algorithm": name, "policy": name, "params": {},
            "epsilon": 1.0 if cls.private else None, "delta": 0.02, "accounting": "strict",
            "instance": instance_for(cls), "instance_index": 0,
            "trials": list(range(trials)), "seed": 7}


def experiment_name(name: str) -> str:
    """A config key for the policy's experiments."""
    return "".join(c if c.isalnum() else "_" for c in name)


def snakemake_shards(checkout: Path, cache: Path, names: list[str],
                     workdir: Path) -> dict[str, list[Path]]:
    """One `snakemake` run of the checkout's workflow on two experiments of each policy (one
    trial a shard, and ten trials in one shard): their shard files, by policy."""
    experiments = {}
    for name in names:
        spec = spec_for(name, 1)
        algorithm = {"label": name, "policy": name, "accounting": "strict"}
        experiment = {"group": "synthetic", "paper": "glm", "instance": spec["instance"],
                      "algorithms": [algorithm], "epsilons": [1.0] if spec["epsilon"] else [],
                      "delta": 0.02, "seed": 7, "outputs": []}
        key = experiment_name(name)
        experiments[f"one_{key}"] = {**experiment, "trials": 1, "trials_per_shard": 1}
        experiments[f"ten_{key}"] = {**experiment, "trials": 10, "trials_per_shard": 10}
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(
        {"results": "results", "paper": "paper", "experiments": experiments}))
    proc = subprocess.run(
        [str(BIN / "snakemake"), "-s", str(checkout / "Snakefile"),
         *(f"results/{e}/summary.csv" for e in experiments), "--directory", str(workdir),
         "--cores", "2", "--configfile", str(workdir / "config.yaml")],
        env=environment(checkout, cache), capture_output=True, text=True, timeout=1800,
        cwd=checkout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name: [shard for kind in ("one", "ten") for shard in sorted(
        (workdir / "results" / f"{kind}_{experiment_name(name)}").glob("shards/**/*.h5"))]
        for name in names}


def unedited(shard: Path) -> np.ndarray:
    """The regret curves of a shard's spec, run by the unedited package in this process."""
    with h5py.File(shard, "r") as handle:
        spec = json.loads(handle.attrs["spec"])
    return run_shard(spec).cum_regret


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jit-cache")


def test_every_policy_names_its_rules() -> None:
    for name, cls in POLICIES.items():
        for rule in (cls.decision_rule, cls.update_rule):
            assert rule is not None, f"{name} names no decision or update rule"
            function = rule_source(rule)
            assert Path(inspect.getfile(function)).is_relative_to(PACKAGE), rule_name(rule)
            assert function.__doc__, f"{rule_name(rule)} has no docstring"


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory,
           cache: Path) -> tuple[Path, dict[str, list[Path]]]:
    """The copy with `return 0` in every named decision rule, and its snakemake shards."""
    root = tmp_path_factory.mktemp("edited")
    checkout = copy_checkout(root / "checkout")
    rules = {rule_name(cls.decision_rule): cls.decision_rule for _, cls in POLICIES.items()}
    # last first within a file, so that the line numbers of those still to edit hold
    for rule in sorted(rules.values(), key=lambda r: -rule_source(r).__code__.co_firstlineno):
        insert_return_zero(checkout, rule)
    return checkout, snakemake_shards(checkout, cache, POLICIES.names(), root / "workflow")


@pytest.mark.parametrize("name", POLICIES.names())
def test_return_zero_in_the_decision_rule_changes_every_path(name: str, tmp_path: Path,
                                                             cache: Path, edited) -> None:
    checkout, shards = edited
    for trials in (1, 10):
        spec = spec_for(name, trials)
        before = run_shard(spec).cum_regret
        after = cli_run(checkout, cache, spec, tmp_path / f"cli-{trials}.h5")
        assert not np.array_equal(before, after), f"{name}, {trials} trial(s): dpbandits run"
    assert len(shards[name]) == 2
    for shard in shards[name]:
        assert not np.array_equal(unedited(shard), regret_of(shard)), f"{name}: {shard}"


def test_an_unedited_copy_gives_the_same_results(tmp_path: Path, cache: Path) -> None:
    """Control: copying the package changes nothing, so a difference above is the edit's."""
    checkout = copy_checkout(tmp_path / "copy")
    name = "LinTS"
    for trials in (1, 10):
        spec = spec_for(name, trials)
        np.testing.assert_array_equal(run_shard(spec).cum_regret,
                                      cli_run(checkout, cache, spec, tmp_path / f"cli-{trials}.h5"))
    for shard in snakemake_shards(checkout, cache, [name], tmp_path / "workflow")[name]:
        np.testing.assert_array_equal(unedited(shard), regret_of(shard))
