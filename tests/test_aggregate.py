import numpy as np
import pandas as pd
import pytest

from dpbandits.aggregate import aggregate, load_curves
from dpbandits.errors import ShardError
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

from helpers import small_spec


def test_summary_and_curves(tmp_path):
    paths = []
    for index, S in enumerate((1.0, 2.0)):
        spec = small_spec(instance_index=index)
        spec["instance"] = {**spec["instance"], "S": S}
        path = tmp_path / f"s{index}.h5"
        write_shard(path, run_shard(spec))
        paths.append(path)
    summary = aggregate(paths, tmp_path / "summary.csv", tmp_path / "curves.h5")
    on_disk = pd.read_csv(tmp_path / "summary.csv")
    for column in ("experiment", "algorithm", "epsilon", "S", "kappa", "seed", "T", "regret"):
        assert column in on_disk.columns
    assert len(on_disk) == len(summary) == 6
    curves = load_curves(tmp_path / "curves.h5")
    assert len(curves) == 2
    first = next(c for c in curves if c["instance_index"] == 0)
    regrets = on_disk[on_disk.instance_index == 0].sort_values("seed")["regret"].to_numpy()
    assert first["regret_mean"][-1] == pytest.approx(regrets.mean())
    assert first["regret_sd"][-1] == pytest.approx(regrets.std(ddof=1))
    assert np.all(first["regret_q05"] <= first["regret_q95"])


def test_refuses_corrupt_shard_naming_it(tmp_path):
    good = tmp_path / "good.h5"
    write_shard(good, run_shard(small_spec()))
    bad = tmp_path / "bad.h5"
    bad.write_bytes(good.read_bytes()[:1000])
    with pytest.raises(ShardError, match="bad.h5"):
        aggregate([good, bad], tmp_path / "summary.csv", tmp_path / "curves.h5")
    assert not (tmp_path / "summary.csv").exists()
