import dataclasses

import h5py
import numpy as np
import pytest

from dpbandits.errors import ShardError
from dpbandits.simulate import run_shard
from dpbandits.storage import SCHEMA_VERSION, read_shard, write_shard

from helpers import small_spec


@pytest.fixture(scope="module")
def shard_data():
    return run_shard(small_spec())


def test_round_trip(tmp_path, shard_data):
    path = tmp_path / "a" / "s.h5"
    write_shard(path, shard_data)
    back = read_shard(path)
    assert back.spec == shard_data.spec
    np.testing.assert_array_equal(back.cum_regret, shard_data.cum_regret)
    np.testing.assert_array_equal(back.checkpoints, np.arange(1, 61))
    assert back.attrs["package_version"]
    assert list(tmp_path.joinpath("a").iterdir()) == [path]


def test_truncated_file_is_refused_with_its_name(tmp_path, shard_data):
    path = tmp_path / "s.h5"
    write_shard(path, shard_data)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ShardError, match=str(path)):
        read_shard(path)


def test_schema_mismatch_and_incomplete_are_refused(tmp_path, shard_data):
    path = tmp_path / "s.h5"
    write_shard(path, shard_data)
    with h5py.File(path, "a") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ShardError, match="schema_version"):
        read_shard(path)
    write_shard(path, shard_data)
    with h5py.File(path, "a") as f:
        del f["cum_reward"]
    with pytest.raises(ShardError, match="missing dataset"):
        read_shard(path)
    with pytest.raises(ShardError, match="does not exist"):
        read_shard(tmp_path / "nope.h5")


def test_failed_write_leaves_nothing(tmp_path, shard_data, monkeypatch):
    path = tmp_path / "s.h5"

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("dpbandits.storage.os.fsync", boom)
    with pytest.raises(RuntimeError):
        write_shard(path, shard_data)
    assert list(tmp_path.iterdir()) == []


PROVENANCE = {"dataset": "ml-latest-small",
              "archives": [{"file": "ml-latest-small.zip", "dataset": "ml-latest-small",
                            "sha256": "ab" * 32, "bytes": 10, "pinned": False}],
              "features": {"fit": "prefix10", "leak_free": True}}


def test_provenance_only_on_real_data_shards(tmp_path, shard_data):
    """Synthetic shards carry no provenance attribute (their digests stay as recorded); a
    real-data shard's provenance survives the round trip."""
    write_shard(tmp_path / "synthetic.h5", shard_data)
    with h5py.File(tmp_path / "synthetic.h5", "r") as f:
        assert "provenance" not in f.attrs
    assert read_shard(tmp_path / "synthetic.h5").provenance == {}
    real = dataclasses.replace(shard_data, provenance=PROVENANCE)
    write_shard(tmp_path / "real.h5", real)
    back = read_shard(tmp_path / "real.h5")
    assert back.provenance == PROVENANCE and back.spec == shard_data.spec


def test_without_events_a_shard_reads_the_same_but_its_events(tmp_path, shard_data):
    path = tmp_path / "s.h5"
    write_shard(path, dataclasses.replace(shard_data, events={0: {"switch": np.arange(3)}}))
    full, lean = read_shard(path), read_shard(path, events=False)
    assert list(full.events) == [0] and lean.events == {}
    assert dataclasses.replace(full, events={}).ledger == lean.ledger
    for name in ("trials", "checkpoints", "cum_regret", "cum_reward", "wall_time"):
        assert getattr(full, name).tobytes() == getattr(lean, name).tobytes()


def _no_events_group(f: h5py.File) -> None:
    del f["events"]


def _a_dataset_for_a_trial(f: h5py.File) -> None:
    f["events"].create_dataset("1", data=np.arange(2))


def _a_ledger_that_is_not_utf8(f: h5py.File) -> None:
    del f["ledger"]
    f.create_dataset("ledger", data=np.array([b"\xff\xfe"] * len(f["trials"]),
                                             dtype=h5py.string_dtype("ascii")))


@pytest.mark.parametrize("corrupt", [_no_events_group, _a_dataset_for_a_trial,
                                     _a_ledger_that_is_not_utf8])
@pytest.mark.parametrize("events", [True, False])
def test_corrupt_events_or_ledger_are_refused_either_way(tmp_path, shard_data, corrupt, events):
    path = tmp_path / "s.h5"
    write_shard(path, dataclasses.replace(shard_data, events={0: {"switch": np.arange(3)}}))
    read_shard(path, events=events)
    with h5py.File(path, "a") as f:
        corrupt(f)
    with pytest.raises(ShardError, match=str(path)):
        read_shard(path, events=events)
