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
    assert first["regret_q50"][-1] == pytest.approx(np.median(regrets))
    assert first["regret_q25"][-1] == pytest.approx(np.quantile(regrets, 0.25))
    assert first["regret_q75"][-1] == pytest.approx(np.quantile(regrets, 0.75))


def test_refuses_corrupt_shard_naming_it(tmp_path):
    good = tmp_path / "good.h5"
    write_shard(good, run_shard(small_spec()))
    bad = tmp_path / "bad.h5"
    bad.write_bytes(good.read_bytes()[:1000])
    with pytest.raises(ShardError, match="bad.h5"):
        aggregate([good, bad], tmp_path / "summary.csv", tmp_path / "curves.h5")
    assert not (tmp_path / "summary.csv").exists()


def test_provenance_columns_of_real_data_shards(tmp_path):
    """summary.csv names the archive, its sha256, whether it is pinned and the feature mode of
    a real-data shard; synthetic rows get no such columns."""
    import dataclasses

    from test_storage import PROVENANCE

    shard = run_shard(small_spec())
    write_shard(tmp_path / "synthetic.h5", shard)
    write_shard(tmp_path / "real.h5", dataclasses.replace(shard, provenance=PROVENANCE))
    plain = aggregate([tmp_path / "synthetic.h5"], tmp_path / "a.csv", tmp_path / "a.h5")
    assert not {"data_archives", "data_pinned", "features_fit"} & set(plain.columns)
    aggregate([tmp_path / "real.h5"], tmp_path / "b.csv", tmp_path / "b.h5")
    row = pd.read_csv(tmp_path / "b.csv").iloc[0]
    assert row["data_archives"] == "ml-latest-small.zip" and row["data_sha256"] == "ab" * 32
    assert not row["data_pinned"] and row["features_fit"] == "prefix10"
    assert row["features_leak_free"]
