"""linear_sphere instances: sphere draws, per-trial redraw, common random numbers, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance

BASE = {"generator": "linear_sphere", "K": 10, "d": 2, "horizon": 1000, "seed": 42}


def test_actions_and_theta_on_the_unit_sphere() -> None:
    inst = build_instance(dict(BASE))
    np.testing.assert_allclose(np.linalg.norm(inst.actions, axis=1), 1.0, atol=1e-12)
    assert abs(np.linalg.norm(inst.theta) - 1.0) < 1e-12
    env = inst.environment(0)
    np.testing.assert_allclose(env.means, inst.actions @ inst.theta)
    assert env.gaps.min() == 0.0 and env.horizon == 1000
    assert inst.info.family == "linear" and inst.info.R == 1.0 and inst.info.K == 10
    again = build_instance(dict(BASE))
    np.testing.assert_array_equal(again.actions, inst.actions)


def test_sphere_draws_are_uniform() -> None:
    """Angles of many d = 2 draws are uniform on (−π, π] (KS p > 0.01)."""
    from scipy import stats

    inst = build_instance({**BASE, "K": 20000, "seed": 3})
    angles = np.arctan2(inst.actions[:, 1], inst.actions[:, 0])
    assert stats.kstest(angles, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 0.01


def test_common_random_numbers() -> None:
    inst = build_instance(dict(BASE))
    a, b = inst.environment(3), inst.environment(3)
    np.testing.assert_array_equal(
        a.noise_rng().standard_normal(5), b.noise_rng().standard_normal(5)
    )
    np.testing.assert_array_equal(
        a.noise_rng().standard_normal(5), a.noise_rng().standard_normal(5)
    )
    other = inst.environment(4).noise_rng().standard_normal(5)
    assert not np.array_equal(other, a.noise_rng().standard_normal(5))
    r, reg = a.pull(7, 2)
    assert r == b.pull(7, 2)[0] and reg == pytest.approx(a.gaps[2])


def test_redraw_gives_each_trial_its_own_problem() -> None:
    inst = build_instance({**BASE, "redraw": True})
    e0, e1 = inst.environment(0), inst.environment(1)
    assert not np.allclose(e0.actions, e1.actions)
    np.testing.assert_array_equal(e0.actions, inst.environment(0).actions)
    np.testing.assert_allclose(np.linalg.norm(e1.actions, axis=1), 1.0)
    fresh = build_instance({**BASE, "redraw": True})
    np.testing.assert_array_equal(fresh.environment(1).theta, e1.theta)


def test_describe_is_scalars() -> None:
    info = build_instance(dict(BASE)).describe()
    assert set(info) >= {"min_gap", "max_gap", "best_mean", "noise_sd"}
    assert all(isinstance(v, float) for v in info.values())
    assert 0 < info["min_gap"] <= info["max_gap"] <= 2


def test_explicit_actions() -> None:
    inst = build_instance({**BASE, "K": 2, "actions": [[1, 0], [0, 0.5]], "theta": [0.6, 0.8]})
    np.testing.assert_allclose(inst.environment(0).means, [0.6, 0.4])


@pytest.mark.parametrize(
    "change",
    [
        {"K": 0},
        {"d": 0},
        {"horizon": 0},
        {"horizon": 2.5},
        {"noise_sd": 0.0},
        {"colour": 1},
        {"K": 2, "actions": [[1.2, 0.0], [0.0, 1.0]], "theta": [1.0, 0.0]},
        {"K": 2, "actions": [[1.0, 0.0], [0.0, 1.0]], "theta": [1.0, 1.0]},
        {"K": 2, "actions": [[1.0, 0.0], [0.0, 1.0]]},
    ],
)
def test_bad_input_is_one_line_config_error(change: dict) -> None:
    with pytest.raises(ConfigError) as err:
        build_instance({**BASE, **change})
    assert "\n" not in str(err.value)
