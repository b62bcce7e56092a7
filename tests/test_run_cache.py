"""The run's cache of shared draws: drawn once, read back bit for bit, redrawn when unreadable."""

from pathlib import Path

import numpy as np
import pytest

from dpbandits import run_cache
from dpbandits.instances.pool import PoolInstance

LAYOUT = {"x": ((5,), np.float64), "i": ((3, 2), np.int64)}


class Counting:
    """A draw that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, np.ndarray]:
        self.calls += 1
        rng = np.random.default_rng(7)
        return {"x": rng.random(5), "i": rng.integers(0, 9, (3, 2))}


def stored(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.npz"))


def test_without_the_variable_every_call_draws(monkeypatch):
    monkeypatch.delenv(run_cache.ENV, raising=False)
    draw = Counting()
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 2


def test_a_second_call_reads_what_the_first_drew(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path / "run_cache"))
    draw = Counting()
    first = run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    second = run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 1 and len(stored(tmp_path)) == 1
    for name, values in first.items():
        assert second[name].dtype == values.dtype and second[name].tobytes() == values.tobytes()
    run_cache.cached_arrays("kind", {"a": 2}, LAYOUT, draw)  # another key: drawn and stored
    run_cache.cached_arrays("other", {"a": 1}, LAYOUT, draw)  # another kind, the same key
    assert draw.calls == 3 and len(stored(tmp_path)) == 3


@pytest.mark.parametrize("content", [b"", b"not a zip file", b"PK\x03\x04 truncated"])
def test_an_unreadable_file_is_drawn_again_and_replaced(monkeypatch, tmp_path, content):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    draw = Counting()
    expected = run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    (path,) = stored(tmp_path)
    path.write_bytes(content)
    again = run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 2
    assert again["x"].tobytes() == expected["x"].tobytes()
    third = run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert third["x"].tobytes() == expected["x"].tobytes()
    assert draw.calls == 2  # the redrawn file replaced the bad one


@pytest.mark.parametrize("stored", [
    {"x": np.zeros(5)},  # an array missing
    {"x": np.zeros(5), "i": np.zeros((3, 2), np.int64), "extra": np.zeros(1)},
    {"x": np.zeros(6), "i": np.zeros((3, 2), np.int64)},  # another shape
    {"x": np.zeros(5), "i": np.zeros((3, 2))},  # another type
])
def test_a_file_with_other_arrays_is_drawn_again(monkeypatch, tmp_path, stored):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    draw = Counting()
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    (path,) = stored_files = list(tmp_path.rglob("*.npz"))
    with open(path, "wb") as handle:
        np.savez(handle, **stored)
    assert run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)["x"].shape == (5,)
    assert draw.calls == 2 and stored_files == list(tmp_path.rglob("*.npz"))


def test_a_plain_array_file_is_drawn_again(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    draw = Counting()
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    (path,) = list(tmp_path.rglob("*.npz"))
    with open(path, "wb") as handle:
        np.save(handle, np.zeros(5))
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 2


def test_numpy_scalars_in_a_key_are_their_numbers(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    draw = Counting()
    run_cache.cached_arrays("kind", {"a": np.int64(1), "b": np.float64(0.5)}, LAYOUT, draw)
    run_cache.cached_arrays("kind", {"a": 1, "b": 0.5}, LAYOUT, draw)
    assert draw.calls == 1
    with pytest.raises(TypeError, match="holds object"):
        run_cache.cached_arrays("kind", {"a": object()}, LAYOUT, draw)


def test_a_folder_that_cannot_be_written_only_costs_drawing(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(run_cache.ENV, str(blocker / "cache"))
    draw = Counting()
    assert run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)["x"].shape == (5,)
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 2


def test_nothing_is_kept_once_the_runs_folder_is_gone(monkeypatch, tmp_path):
    """The server's folder removed (the run ended, or the server died): jobs that still run
    draw for themselves and leave nothing behind."""
    monkeypatch.setenv(run_cache.ENV, str(tmp_path / "server" / "run_cache"))
    draw = Counting()
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    run_cache.cached_arrays("kind", {"a": 1}, LAYOUT, draw)
    assert draw.calls == 2 and not (tmp_path / "server").exists()


@pytest.mark.parametrize("per_trial", [True, False])
def test_a_pool_trial_from_the_cache_is_the_trial_drawn(monkeypatch, tmp_path, per_trial):
    instance = PoolInstance(d=4, n_arms=12, K=3, horizon=50, seed=3, per_trial=per_trial)
    monkeypatch.delenv(run_cache.ENV, raising=False)
    drawn = [instance.environment(trial) for trial in (0, 1)]
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    for trial in (0, 1):
        instance.environment(trial)
    monkeypatch.setattr(PoolInstance, "draw", lambda self, trial: pytest.fail("drawn again"))
    other_job = PoolInstance(d=4, n_arms=12, K=3, horizon=50, seed=3, per_trial=per_trial)
    for trial, expected in zip((0, 1), drawn, strict=True):
        env = other_job.environment(trial)
        for name in ("theta", "pool", "candidates", "uniforms", "contexts", "means", "regrets"):
            ours, theirs = getattr(env, name), getattr(expected, name)
            assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes(), name


def test_pool_instances_that_differ_in_any_key_do_not_share_a_trial(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    base = {"d": 4, "n_arms": 12, "K": 3, "horizon": 50, "seed": 3}
    PoolInstance(**base).environment(0)
    for change in ({"seed": 4}, {"K": 2}, {"S": 1.5}, {"horizon": 51}, {"link": "linear"}):
        PoolInstance(**{**base, **change}).environment(0)
    PoolInstance(**base).environment(1)
    assert len(stored(tmp_path)) == 7
