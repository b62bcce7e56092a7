"""Per-fit budget split (docs/glm.md, "DP-SGD and the RDP accountant")."""

from __future__ import annotations

import pytest

from dpbandits.errors import ConfigError
from dpbandits.privacy.split import compose, split


@pytest.mark.parametrize("eps, k, eps0, delta0", [
    (4, 8, 0.1666667, 8.333e-4), (6, 9, 0.2222222, 7.407e-4), (8, 9, 0.2962963, 7.407e-4),
])
def test_table2_naive(eps: float, k: int, eps0: float, delta0: float) -> None:
    got = split(eps / 3, 0.02 / 3, k)
    assert got[0] == pytest.approx(eps0, rel=1e-6)
    assert got[1] == pytest.approx(delta0, rel=1e-3)


@pytest.mark.parametrize("k, expected, delta0", [
    (67, (0.0117222, 0.0228360, 0.0435341, 0.0802192), 4.975e-5),
    (230, (0.0063272, 0.0123284, 0.0235174, 0.0434119), 1.449e-5),
])
def test_fig1_advanced(k: int, expected: tuple, delta0: float) -> None:
    for eps, eps0 in zip((1, 2, 4, 8), expected, strict=True):
        got = split(eps / 3, 0.02 / 3, k)
        assert got[0] == pytest.approx(eps0, rel=1e-5)
        assert got[1] == pytest.approx(delta0, rel=1e-3)


@pytest.mark.parametrize("k", [1, 5, 10, 11, 67, 230, 2000])
@pytest.mark.parametrize("eps", [0.01, 1.0, 4.0, 50.0, 1e6])
def test_split_composes_within_budget(k: int, eps: float) -> None:
    eps0, delta0 = split(eps, 0.01, k)
    total_eps, total_delta = compose(eps0, delta0, k, 0.01)
    assert total_eps <= eps * (1 + 1e-12)
    assert total_delta <= 0.01 * (1 + 1e-12)
    if k <= 10 or eps < 100:
        assert total_eps == pytest.approx(eps, rel=1e-6)  # the split uses the budget


@pytest.mark.parametrize("args", [(0.0, 0.1, 3), (1.0, 0.0, 3), (1.0, 1.0, 3), (1.0, 0.1, 0),
                                  (1.0, 0.1, 2.5)])
def test_bad_input(args: tuple) -> None:
    with pytest.raises(ConfigError):
        split(*args)
