"""Feasibility: a replay's horizon against the events it can offer, refused before any run."""

import numpy as np
import pytest
from rating_fixtures import jester_frame
from scipy import stats

from dpbandits.config import experiment_shards, read_yaml
from dpbandits.data.fitting import parse_fit
from dpbandits.data.ratings import RawRatings, build_log, write_log
from dpbandits.data.supply import (
    Supply,
    check_supply,
    events_needed,
    rounds_supported,
    supply_from_keys,
)
from dpbandits.data.svd import featurize, write_factors
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance

from conftest import REPO


@pytest.mark.parametrize("horizon,K", [(300, 3), (30_000, 3), (60_000, 3), (1000, 10)])
def test_the_events_needed_let_uniform_choice_count_the_horizon(horizon, K):
    events = events_needed(horizon, K)
    assert rounds_supported(events, K) >= horizon > rounds_supported(events - 1, K)
    # uniform choice falls short with E = events_needed(T) about 3 sd below the mean: rarely
    assert stats.binom.cdf(horizon - 1, events, 1 / K) < 0.003
    # negative control: E = T·K, the bare expectation, falls short about half the time
    assert stats.binom.cdf(horizon - 1, horizon * K, 1 / K) > 0.4


def test_an_infeasible_horizon_is_one_line_saying_what_to_lower():
    supply = Supply(7644, "results/data/jester-2/ratings.h5 (the held-out 20 % of 38220 ratings)")
    with pytest.raises(ConfigError) as err:
        check_supply("jester_replay", {"horizon": 30_000, "K": 3}, supply)
    message = str(err.value)
    assert message.startswith("horizon = 30000 is not allowed for jester_replay: ")
    assert f"needs {events_needed(30_000, 3)} replay events" in message
    assert "offers 7644" in message and "38220 ratings" in message
    assert f"allowed: horizon <= {rounds_supported(7644, 3)}" in message and "\n" not in message
    check_supply("jester_replay", {"horizon": rounds_supported(7644, 3), "K": 3}, supply)
    check_supply("jester_replay", {"horizon": 30_000, "K": 3}, None)  # nothing known yet


@pytest.fixture
def jester_files(tmp_path):
    """A small Jester-2 log and its split80 features, as the data rules write them."""
    frame = jester_frame(n_users=200, n_items=100, density=0.3, seed=2)
    log = build_log("jester-2", RawRatings(user=frame["user"].to_numpy(),
                                           item=frame["item"].to_numpy(),
                                           rating=frame["rating"].to_numpy(np.float32)))
    root = tmp_path / "results" / "data" / "jester-2"
    root.mkdir(parents=True)
    write_log(root / "ratings.h5", log)
    write_factors(root / "svd_k47_split80.h5",
                  featurize(log, k=47, center="biases", fit=parse_fit("split80")))
    return log, root


def keys(root, horizon, **extra):
    return {"generator": "jester_replay", "ratings": str(root / "ratings.h5"),
            "features": str(root / "svd_k47_split80.h5"),
            "requires": [str(root / "ratings.h5"), str(root / "svd_k47_split80.h5")],
            "horizon": horizon, "K": 3, "feature_map": "biased", "normalize": "clip",
            "scale": 9.0, **extra}


def test_supply_before_the_build_is_the_built_replays(jester_files):
    log, root = jester_files
    supply = supply_from_keys({**keys(root, 100), "warm_start": 0.0, "max_steps": None})
    inst = build_instance(keys(root, 100))
    assert supply.events == inst.n_steps == len(log.user) - len(log.user) * 80 // 100
    assert not supply.about
    missing = {**keys(root, 100), "ratings": str(root / "none.h5"), "warm_start": 0.0,
               "max_steps": None}
    assert supply_from_keys(missing) is None


def test_the_build_refuses_an_infeasible_horizon_before_any_trial(jester_files):
    _, root = jester_files
    with pytest.raises(ConfigError, match="horizon = 30000 is not allowed for jester_replay"):
        build_instance(keys(root, 30_000))


def test_validation_refuses_an_infeasible_experiment_by_name(jester_files, monkeypatch):
    """The config check behind `snakemake -n` (experiment_shards, as all_shards calls it):
    ts_jester at the paper's T = 30,000 on a log of 6000 ratings is refused in one line naming
    the experiment; T = 300 passes."""
    _, root = jester_files
    monkeypatch.chdir(root.parents[2])
    exp = read_yaml(REPO / "config" / "config.yaml")["experiments"]["ts_jester"]
    exp["algorithms"] = [{"label": "LinUCB", "policy": "LinUCB", "params": {"theta0": None}}]
    with pytest.raises(ConfigError) as err:
        experiment_shards("ts_jester", exp)
    message = str(err.value)
    assert message.startswith("config error at experiments/ts_jester/instance (grid point 0): "
                              "horizon = 30000 is not allowed for jester_replay")
    assert "results/data/jester-2/ratings.h5 (the held-out 20 % of 6" in message
    assert "\n" not in message
    exp["instance"]["horizon"] = 300
    assert len(experiment_shards("ts_jester", exp)) == exp["trials"]
