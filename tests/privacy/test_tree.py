"""Binary-tree mechanism over symmetric matrices (docs/glm.md, "Trees")."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dpbandits.privacy.tree import (
    MatrixTree,
    cover_nodes,
    tree_height,
    tree_sigma,
    tree_sigma_from_rho,
)
from dpbandits.privacy.zcdp import epsilon_from_rho, rho_from_epsilon


def test_height() -> None:
    assert [tree_height(t) for t in (1, 2, 3, 4, 5, 5000, 15000)] == [1, 2, 3, 3, 4, 14, 15]


@pytest.mark.parametrize("eps, rho, sigma_v, sigma_h", [
    (4, 0.0785562, 9.43971, 3.76590),
    (6, 0.167539, 6.46384, 2.57870),
    (8, 0.283396, 4.96995, 1.98272),
])
def test_reference_sigmas_table2(eps: float, rho: float, sigma_v: float, sigma_h: float) -> None:
    """Paper-mode V-tree (C = 1) and H-tree (C = 1/κ* = 0.3989423) at (ε/3, δ/3).

    The calibrations of docs/glm.md, "Trees".
    """
    assert rho_from_epsilon(eps / 3, 0.02 / 3) == pytest.approx(rho, rel=1e-5)
    assert tree_sigma(eps / 3, 0.02 / 3, 5000, 1.0) == pytest.approx(sigma_v, rel=1e-5)
    assert tree_sigma(eps / 3, 0.02 / 3, 5000, 0.3989423) == pytest.approx(sigma_h, rel=1e-5)


@pytest.mark.parametrize("eps, sigma", [(1, 37.3833), (2, 18.9833), (4, 9.77103), (8, 5.14439)])
def test_reference_sigmas_fig1a(eps: float, sigma: float) -> None:
    assert tree_sigma(eps / 3, 0.02 / 3, 15000, 1.0) == pytest.approx(sigma, rel=1e-5)


def test_node_sigma_is_a_gaussian_at_rho_per_node_in_dp_accounting() -> None:
    """h Gaussian releases at σ_node/Δ compose in dp-accounting's RDP to ρ_tree·α."""
    rho_tree, horizon, sens = 0.3, 5000, math.sqrt(2.0)
    sigma = tree_sigma_from_rho(rho_tree, horizon, sens)
    orders = [2.0, 8.0, 32.0]
    acc = dp_accounting.rdp.RdpAccountant(orders)
    acc.compose(dp_accounting.GaussianDpEvent(sigma / sens), tree_height(horizon))
    assert np.allclose(acc._rdp, rho_tree * np.array(orders), rtol=1e-12)


def test_zcdp_round_trip() -> None:
    """ρ + 2√(ρ ln(1/δ)) = ε to 1e-12 (Bun & Steinke 2016, Prop. 1.3)."""
    for eps in (0.01, 0.5, 4 / 3, 8.0, 100.0):
        for delta in (1e-8, 0.02 / 3, 0.3):
            assert epsilon_from_rho(rho_from_epsilon(eps, delta), delta) == pytest.approx(
                eps, rel=1e-12)


def _leaves(node: int, height: int) -> range:
    level = node.bit_length() - 1  # depth from the root
    span = 1 << (height - 1 - level)
    first = (node - (1 << level)) * span + 1
    return range(first, first + span)


def test_cover_is_the_dyadic_decomposition() -> None:
    height = tree_height(100)
    for s in range(0, 101):
        nodes = cover_nodes(s, height)
        assert len(nodes) == bin(s).count("1")
        covered = sorted(i for j in nodes for i in _leaves(j, height))
        assert covered == list(range(1, s + 1))


def _sym(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return a + a.T


def test_noiseless_query_is_shift_plus_prefix_sum() -> None:
    rng = np.random.default_rng(0)
    tree = MatrixTree(37, 3, 0.0, rng, shift=5.0)
    total = np.zeros((3, 3))
    for _ in range(37):
        m = _sym(rng, 3) * 0.1
        m = m @ m  # PSD increments keep the repair inactive
        tree.update(m)
        total += m
        assert np.allclose(tree.query(), total + 5.0 * np.eye(3), atol=1e-10)
    with pytest.raises(ValueError):
        tree.update(np.zeros((3, 3)))


@pytest.mark.parametrize("eager", [True, False])
def test_noise_is_fixed_per_node_and_shared(eager: bool) -> None:
    rng = np.random.default_rng(1)
    tree = MatrixTree(64, 2, 1.5, rng, shift=0.0, eager=eager)
    seen: dict[int, np.ndarray] = {}
    total = np.zeros((2, 2))
    for _ in range(64):
        m = _sym(rng, 2)
        tree.update(m)
        total += m
        first = tree.query_raw()
        assert np.array_equal(first, tree.query_raw())  # repeated queries identical
        noise = sum((tree.node_noise(j) for j in tree.cover()), np.zeros((2, 2)))
        assert np.allclose(first - total, noise, atol=1e-10)
        for j in tree.cover():
            z = tree.node_noise(j)
            assert np.array_equal(z, z.T)
            if j in seen:  # a node keeps its noise across releases
                assert np.array_equal(seen[j], z)
            seen[j] = z.copy()


def test_eager_draw_order_is_heap_order() -> None:
    """Node j's G_j is the j-th (d, d) normal draw of the algorithm rng."""
    tree = MatrixTree(5, 2, 2.0, np.random.default_rng(7))
    ref = np.random.default_rng(7)
    for j in range(1, (1 << tree.height)):
        g = ref.normal(0.0, 2.0, (2, 2))
        assert np.allclose(tree.node_noise(j), 0.5 * (g + g.T), rtol=0, atol=1e-15)


@pytest.mark.parametrize("eager", [True, False])
def test_prefix_noise_variance_matches_calibration(eager: bool) -> None:
    """Var of (query − truth − λI): popcount(s)σ² diagonal, popcount(s)σ²/2 off-diagonal."""
    sigma, n_trees, d = 2.0, 3000, 3
    rng = np.random.default_rng(2024)
    checkpoints = {7: [], 12: []}
    for _ in range(n_trees):
        tree = MatrixTree(16, d, sigma, rng, shift=3.0, eager=eager)
        for s in range(1, 13):
            tree.update(None)
            if s in checkpoints:
                checkpoints[s].append(tree.query_raw() - 3.0 * np.eye(d))
    for s, draws in checkpoints.items():
        e = np.array(draws)
        pop = bin(s).count("1")
        var = e.var(axis=0, ddof=1)
        se = math.sqrt(2.0 / (n_trees - 1))  # relative s.e. of a Gaussian variance estimate
        iu = np.triu_indices(d, 1)
        assert np.all(np.abs(np.diag(var) / (pop * sigma**2) - 1) < 5 * se)
        assert np.all(np.abs(var[iu] / (pop * sigma**2 / 2) - 1) < 5 * se)
        assert np.all(np.abs(e.mean(axis=0)) < 5 * math.sqrt(pop) * sigma / math.sqrt(n_trees))


def test_query_is_psd_repaired_and_consistent() -> None:
    rng = np.random.default_rng(3)
    tree = MatrixTree(20, 4, 10.0, rng, shift=0.1)
    for _ in range(20):
        tree.update(None)
        q = tree.query()
        assert np.allclose(q, q.T)
        vals, vecs = tree.query_eigh()
        assert vals.min() >= 1e-12
        # the reconstructed matrix is PSD up to round-off relative to its norm
        assert np.linalg.eigvalsh(q).min() >= 1e-12 - 1e-14 * np.abs(q).max()
        assert np.allclose(q, (vecs * vals) @ vecs.T, atol=1e-9)
    big = MatrixTree(20, 3, 0.5, rng, shift=100.0)  # Gershgorin shortcut path
    big.update(np.eye(3))
    vals, vecs = big.query_eigh()
    assert np.allclose(big.query(), (vecs * vals) @ vecs.T, atol=1e-9)
