import copy
from pathlib import Path

import pytest
import yaml

from dpbandits.config import (
    all_shards,
    expand_algorithms,
    experiment_shards,
    load_config,
    validate_config,
)
from dpbandits.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def base_config():
    return {
        "experiments": {
            "exp": {
                "instance": {
                    "generator": "glm_ball",
                    "family": "probit",
                    "d": 3,
                    "K": 4,
                    "horizon": 50,
                    "seed": 1,
                },
                "instance_grid": {"S": [1.0, 2.0]},
                "algorithms": [{"policy": "Uniform"}],
                "trials": 5,
                "trials_per_shard": 2,
            }
        }
    }


def test_defaults_filled_and_shards_expanded():
    config = validate_config(base_config())
    exp = config["experiments"]["exp"]
    assert exp["group"] == "synthetic" and exp["delta"] == 0.02 and exp["epsilons"] == []
    shards = experiment_shards("exp", exp)
    assert len(shards) == 2 * 3  # two instances, trial blocks [0,1], [2,3], [4]
    assert shards[0].path == "exp/shards/Uniform/eps~none/inst~0/seeds~0-1.h5"
    assert shards[-1].spec["trials"] == [4]
    assert shards[-1].spec["instance"]["S"] == 2.0


@pytest.mark.parametrize("path", ["config/config.yaml", "config/smoke.yaml", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "config" / "examples").glob("*.yaml"))])
def test_shipped_configs_validate_and_expand(path):
    config = load_config(REPO / path)
    shards = all_shards(config)
    for name in ("glm_table2", "glm_fig1_logistic", "glm_fig1_probit"):
        assert shards[name]
    paths = [s.path for v in shards.values() for s in v]
    assert len(paths) == len(set(paths))


def test_grid_expansion_labels_and_params():
    algs = expand_algorithms(
        [{"policy": "X", "label": "A", "params": {"c": 1}, "grid": {"v": [0.5, 1], "B": [10]}}]
    )
    assert [a["label"] for a in algs] == ["A [v=0.5, B=10]", "A [v=1, B=10]"]
    assert algs[0]["params"] == {"c": 1, "v": 0.5, "B": 10}
    assert algs[1]["grid_of"] == "A"


BAD = [
    (("epsilons",), [0], "epsilons/0"),
    (("epsilons",), [-1], "epsilons/0"),
    (("delta",), 1.5, "delta"),
    (("delta",), 0, "delta"),
    (("instance", "horizon"), 0, "instance/horizon"),
    (("instance", "K"), 0, "instance/K"),
    (("instance", "d"), 0, "instance/d"),
    (("instance", "d"), "three", "instance/d"),
    (("instance_grid",), {"S": [0.0]}, "grid point 0"),
    (("instance_grid",), {"S": [-2]}, "grid point 0"),
    (("trials",), 0, "trials"),
    (("typo_key",), 1, "typo_key"),
]


@pytest.mark.parametrize("keys,value,where", BAD)
def test_bad_values_give_one_line_naming_the_key(keys, value, where):
    config = copy.deepcopy(base_config())
    target = config["experiments"]["exp"]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    with pytest.raises(ConfigError) as info:
        validate_config(config)
        all_shards(config)
    message = str(info.value)
    assert "\n" not in message and where in message


def test_unknown_algorithm_and_private_without_epsilons():
    config = base_config()
    config["experiments"]["exp"]["algorithms"] = [{"policy": "NoSuchBandit"}]
    with pytest.raises(ConfigError, match="'NoSuchBandit' is not one of .*'GLOC'"):
        validate_config(config)


def test_an_algorithm_can_run_a_subset_of_the_epsilon_grid():
    """`epsilons` of an algorithm entry keeps the experiment's ε it lists (an overlay that
    shrinks the grid shrinks it for that algorithm too); errors are one line."""
    config = base_config()
    exp = config["experiments"]["exp"]
    exp["epsilons"] = [1, 2, 8]
    exp["algorithms"] = [{"policy": "Private-GLM", "label": "all", "accounting": "paper"},
                         {"policy": "Private-GLM", "label": "some", "accounting": "paper",
                          "epsilons": [2, 4, 8]}]
    shards = experiment_shards("exp", validate_config(config)["experiments"]["exp"])
    eps = {label: sorted({s.spec["epsilon"] for s in shards if s.spec["algorithm"] == label})
           for label in ("all", "some")}
    assert eps == {"all": [1.0, 2.0, 8.0], "some": [2.0, 8.0]}
    for entry, match in (({"policy": "Uniform", "epsilons": [1]}, "Uniform is not private"),
                         ({"policy": "Private-GLM", "accounting": "paper", "epsilons": [3]},
                          r"epsilons = \[3\] is not allowed; must share a value")):
        bad = base_config()
        bad["experiments"]["exp"]["epsilons"] = [1, 2]
        bad["experiments"]["exp"]["algorithms"] = [entry]
        with pytest.raises(ConfigError, match=match) as info:
            all_shards(validate_config(bad))
        assert "\n" not in str(info.value)


def test_malformed_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad.write_text(yaml.safe_dump({"experiments": {}}))
    with pytest.raises(ConfigError, match="experiments"):
        load_config(bad)


def test_a_partial_config_without_base_says_how_to_write_an_overlay():
    with pytest.raises(ConfigError, match="starts with `base: config/config.yaml`"):
        validate_config({"experiments": {"glm_table2": {"trials": 20}}})
    # A complete config without `base` is accepted as it is (no hint needed).
    validate_config(base_config())

