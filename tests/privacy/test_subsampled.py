"""RDP of the Poisson-subsampled Gaussian, σ_amp calibration and group privacy (docs/ts.md)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy import integrate, stats

from dpbandits.errors import ConfigError
from dpbandits.privacy.subsampled import (
    DENSE_ORDERS,
    EXTENDED_ORDERS,
    PAPER_ORDERS,
    amp_epsilon,
    amp_sigma,
    group_privacy_rho,
    group_rho,
    orders_capture,
    rdp_replace_one,
    rdp_subsampled_gaussian,
    rdp_subsampled_gaussian_dpa,
)
from dpbandits.privacy.zcdp import gaussian_sigma, rho_from_epsilon

DELTA = 1e-5


@pytest.mark.parametrize("q, sigma", [(0.3, 2.5931), (0.5, 3.5064), (0.3, 0.8313), (0.05, 1.2),
                                      (0.9, 0.6)])
def test_formula_matches_dp_accounting_at_every_order(q: float, sigma: float) -> None:
    ours = rdp_subsampled_gaussian(q, sigma, PAPER_ORDERS)
    theirs = rdp_subsampled_gaussian_dpa(q, sigma, PAPER_ORDERS)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_q_one_is_the_plain_gaussian() -> None:
    alphas = np.asarray(PAPER_ORDERS, dtype=float)
    np.testing.assert_allclose(rdp_subsampled_gaussian(1.0, 2.0), alphas / 8.0, rtol=1e-12)
    # The general log-space sum at q → 1 approaches the same values.
    np.testing.assert_allclose(rdp_subsampled_gaussian(1 - 1e-12, 2.0), alphas / 8.0, rtol=1e-6)


def _mixture_logpdf(q: float, mean: float, sigma: float):
    def logpdf(x: float) -> float:
        return float(np.logaddexp(math.log1p(-q) + stats.norm.logpdf(x, 0, sigma),
                                  math.log(q) + stats.norm.logpdf(x, mean, sigma)))

    return logpdf


def _renyi(logp, logq, alpha: float) -> float:
    """D_α(P‖Q) = ln ∫ p^α q^{1−α} / (α − 1) by quadrature."""
    value, _ = integrate.quad(lambda x: math.exp(alpha * logp(x) + (1 - alpha) * logq(x)),
                              -20, 25, limit=200)
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize("alpha", [2, 3])
def test_formula_matches_numerical_renyi_divergence(alpha: int) -> None:
    """Independent check by quadrature: D_α((1−q)N(0,σ²) + qN(1,σ²) ‖ N(0,σ²))."""
    q, sigma = 0.3, 1.5
    mix = _mixture_logpdf(q, 1.0, sigma)
    base = _mixture_logpdf(q, 0.0, sigma)
    expected = rdp_subsampled_gaussian(q, sigma, (alpha,))[0]
    assert _renyi(mix, base, alpha) == pytest.approx(expected, rel=1e-7)


def test_replace_one_bound_covers_a_changed_reward() -> None:
    """A reward changed from a to b moves the sampled term along one segment of length ≤ 1."""
    q, sigma = 0.3, 1.0
    bound = rdp_replace_one(q, sigma, (2, 3))
    for a, b, alpha in [(1.0, 0.0, 2), (0.0, 1.0, 2), (1.0, 0.4, 3), (0.3, 1.0, 3)]:
        p, r = _mixture_logpdf(q, a, sigma), _mixture_logpdf(q, b, sigma)
        assert _renyi(p, r, alpha) <= bound[alpha - 2]
    assert np.all(rdp_replace_one(q, sigma) >= rdp_subsampled_gaussian(q, sigma))


# (ε, q) → (σ_amp, α*), classic conversion, paper orders; the table of docs/ts.md,
# "AdaPrivate-TS-Amp and the subsampled Gaussian", and more cells.
TABLE = [
    (0.5, 0.1, 2.594, 32), (0.5, 0.3, 4.298, 32), (0.5, 0.7, 7.808, 64), (0.5, 1.0, 10.04, 64),
    (1, 0.1, 1.759, 16), (1, 0.3, 2.593, 16), (1, 0.5, 3.506, 16), (1, 0.7, 4.170, 32),
    (2, 0.1, 1.178, 8), (2, 0.5, 2.029, 16), (5, 0.1, 0.6903, 4), (5, 0.3, 0.8313, 5),
    (5, 0.7, 0.9802, 6), (10, 0.1, 0.4415, 3), (10, 0.5, 0.5312, 4), (10, 1.0, 0.5697, 4),
]


@pytest.mark.parametrize("eps, q, sigma, alpha", TABLE)
def test_sigma_amp_matches_reference_table(eps: float, q: float, sigma: float, alpha: int) -> None:
    got, got_alpha = amp_sigma(q, eps, DELTA)
    tol = 1e-3 if sigma < 10 else 1e-2  # the table gives 4 significant digits
    assert got == pytest.approx(sigma, abs=tol)
    assert got_alpha == alpha
    # σ_amp is the smallest feasible σ: ε at σ_amp is ε, slightly less noise breaks it.
    assert amp_epsilon(q, got, DELTA)[0] <= eps
    assert amp_epsilon(q, got * (1 - 1e-6), DELTA)[0] > eps


@pytest.mark.parametrize("eps", [0.5, 1, 2, 5, 10])
def test_amplified_sigma_is_smaller_than_unamplified(eps: float) -> None:
    base = gaussian_sigma(1.0, rho_from_epsilon(eps, DELTA))
    sigmas = [amp_sigma(q, eps, DELTA)[0] for q in (0.1, 0.3, 0.5, 0.7)]
    assert all(s < base for s in sigmas)
    assert sigmas == sorted(sigmas)  # more subsampling, less noise
    # The replace-one bound (strict accounting) pays for the change of a reward: σ is larger.
    for q, sigma in zip((0.1, 0.3, 0.5, 0.7), sigmas, strict=True):
        assert amp_sigma(q, eps, DELTA, relation="replace_one")[0] > sigma


def test_amplified_sigma_meets_epsilon_under_dp_accounting() -> None:
    """dp-accounting's RDP vector at σ_amp, converted classically, gives back ε."""
    for eps, q in [(1, 0.3), (2, 0.5), (5, 0.3)]:
        sigma, _ = amp_sigma(q, eps, DELTA)
        acc = dp_accounting.rdp.RdpAccountant(orders=list(PAPER_ORDERS))
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)))
        classic = np.min(np.asarray(acc.rdp) + math.log(1 / DELTA) / (np.asarray(acc.orders) - 1))
        assert classic == pytest.approx(eps, rel=1e-9)


def test_classic_conversion_differs_from_get_epsilon() -> None:
    assert amp_epsilon(0.3, 2.5931, DELTA)[0] == pytest.approx(1.000, abs=5e-4)
    assert amp_epsilon(0.3, 2.5931, DELTA, conversion="tight")[0] == pytest.approx(0.7506,
                                                                                  abs=5e-4)


def test_paper_mode_never_calls_get_epsilon(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("get_epsilon called in classic mode")

    monkeypatch.setattr(dp_accounting.rdp.RdpAccountant, "get_epsilon", boom)
    monkeypatch.setattr(dp_accounting.rdp.RdpAccountant, "get_epsilon_and_optimal_order", boom)
    sigma, _ = amp_sigma(0.37, 1.3, 2e-5)  # arguments not cached by any other test
    assert sigma > 0


def test_epsilon_below_order_floor_is_infeasible() -> None:
    with pytest.raises(ConfigError, match="infeasible.*orders <= 64") as info:
        amp_sigma(0.3, 0.1, DELTA)
    assert "\n" not in str(info.value)
    assert math.log(1 / DELTA) / 63 == pytest.approx(0.1827, abs=1e-4)
    sigma, alpha = amp_sigma(0.3, 0.1, DELTA, orders=EXTENDED_ORDERS)
    assert alpha in (128, 256) and sigma > 0


def test_group_privacy_rho_values() -> None:
    rhos = [group_privacy_rho(5.0, DELTA, k) for k in (1, 5, 10)]
    assert [float(f"{r:.4g}") for r in rhos] == [0.4496, 0.01798, 0.004496]
    assert round(rhos[0], 3) == 0.450 and round(rhos[1], 3) == 0.018
    assert round(rhos[2], 4) == 0.0045
    assert group_rho(0.8, 4) == pytest.approx(0.05)


@pytest.mark.parametrize("call, match", [
    (lambda: amp_sigma(0.0, 1.0, DELTA), "q = 0.0"),
    (lambda: amp_sigma(1.5, 1.0, DELTA), "q = 1.5"),
    (lambda: amp_sigma(0.3, 0.0, DELTA), "epsilon = 0.0"),
    (lambda: amp_sigma(0.3, -2.0, DELTA), "epsilon = -2.0"),
    (lambda: amp_sigma(0.3, 1.0, 1.0), "delta = 1.0"),
    (lambda: amp_sigma(0.3, 1.0, 0.0), "delta = 0.0"),
    (lambda: rdp_subsampled_gaussian(0.3, -1.0), "sigma = -1.0"),
    (lambda: group_rho(0.5, 0), "k = 0"),
    (lambda: amp_sigma(0.3, 1.0, DELTA, relation="x"), "relation"),
])
def test_bad_input_is_one_line(call, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_orders_capture_is_the_dense_optimum_over_the_paper_orders() -> None:
    """At ε = 1, q = 0.3 the dense optimum order is 18, not a paper order: the paper's orders
    keep 98.2 % of the optimal bound; at ε = 5 the optimum α = 5 is a paper order: 100 %."""
    sigma, _ = amp_sigma(0.3, 1.0, DELTA)
    capture, alpha = orders_capture(0.3, sigma, DELTA)
    dense = amp_epsilon(0.3, sigma, DELTA, orders=DENSE_ORDERS)[0]
    paper = amp_epsilon(0.3, sigma, DELTA)[0]
    assert capture == pytest.approx(dense / paper) and alpha == 18
    assert capture == pytest.approx(0.9815, abs=1e-4) and paper == pytest.approx(1.0, abs=1e-9)
    # the dense grid's minimum is no larger than any of its orders' ε, checked by brute force
    rdp = rdp_subsampled_gaussian(0.3, sigma, DENSE_ORDERS)
    brute = rdp + math.log(1 / DELTA) / (np.asarray(DENSE_ORDERS) - 1.0)
    assert dense == pytest.approx(brute.min()) and DENSE_ORDERS[int(brute.argmin())] == 18
    sigma5, _ = amp_sigma(0.3, 5.0, DELTA)
    assert orders_capture(0.3, sigma5, DELTA) == (1.0, 5)
    strict, _ = amp_sigma(0.3, 1.0, DELTA, relation="replace_one")
    assert orders_capture(0.3, strict, DELTA, relation="replace_one")[0] < 1.0
