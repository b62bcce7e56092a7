import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.simulate import checkpoints_for, run_shard

from helpers import small_spec


def test_same_spec_gives_bitwise_identical_arrays():
    a, b = run_shard(small_spec()), run_shard(small_spec())
    assert np.array_equal(a.cum_regret, b.cum_regret)
    assert np.array_equal(a.cum_reward, b.cum_reward)


def test_trial_results_do_not_depend_on_block_or_order():
    whole = run_shard(small_spec(trials=[0, 1, 2]))
    parts = [run_shard(small_spec(trials=[t])) for t in (2, 0, 1)]
    by_trial = {int(p.trials[0]): p.cum_regret[0] for p in parts}
    for i, trial in enumerate(whole.trials):
        assert np.array_equal(whole.cum_regret[i], by_trial[int(trial)])


def test_cumulative_regret_is_monotone_and_nonnegative():
    data = run_shard(small_spec())
    assert np.all(np.diff(data.cum_regret, axis=1) >= 0)
    assert np.all(data.cum_regret >= 0)


def test_checkpoints():
    assert np.array_equal(checkpoints_for(5), [1, 2, 3, 4, 5])
    long = checkpoints_for(1_000_000)
    assert long[-1] == 1_000_000 and 1000 <= len(long) <= 1001
    assert np.all(np.diff(long) > 0)


@pytest.mark.parametrize(
    "override,match",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"accounting": "loose"}, "accounting"),
        ({"trials": []}, "trials"),
        ({"policy": "Nope"}, "unknown algorithm"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_spec(override, match):
    with pytest.raises(ConfigError, match=match):
        run_shard(small_spec(**override))
