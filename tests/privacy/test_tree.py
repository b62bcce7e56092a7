"""Binary-tree mechanism over symmetric matrices (docs/glm.md, "Trees")."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.privacy.exact_noise import ExactNoise
from dpbandits.privacy.tree import (
    MatrixTree,
    ab8fd16_nodes,
    cover_index,
    cover_nodes,
    cover_sums,
    exact_release_cost,
    leaf_weights,
    query_nodes,
    release_cost,
    release_matrices,
    tree_height,
    tree_sigma,
    tree_sigma_from_rho,
)
from dpbandits.privacy.zcdp import epsilon_from_rho, rho_from_epsilon

from helpers import two_sampler_matrix


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


@pytest.mark.parametrize("cover", ["dyadic", "ab8fd16"])
def test_cover_index_rows_are_the_query_nodes_of_each_count(cover: str) -> None:
    for horizon in (1, 2, 3, 4, 5, 7, 8, 9, 45, 64, 1000, 5000):
        height = tree_height(horizon)
        covers = [query_nodes(s, height, cover) for s in range(horizon + 1)]
        index = cover_index(horizon, height, cover)
        assert index.shape == (horizon + 1, max(map(len, covers)))
        assert [row[row > 0].tolist() for row in index] == covers
        assert all(not row[len(nodes):].any() for row, nodes in zip(index, covers, strict=True))


@pytest.mark.parametrize("cover", ["dyadic", "ab8fd16"])
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("horizon", [45, 64])
def test_eager_release_noise_is_the_node_by_node_sum_bit_for_bit(cover: str, exact: bool,
                                                                 horizon: int) -> None:
    """The precomputed cover sums of an eager tree equal adding the cover's node noises one by
    one from zero, in cover order, exactly (what a lazy tree does)."""
    rng = np.random.default_rng(5)
    tree = MatrixTree(horizon, 3, 1.3, rng, cover=cover, eager=True,
                      noise=ExactNoise(np.random.default_rng(6)) if exact else None)
    for _ in range(horizon):
        tree.update(None)
        total = np.zeros((3, 3))
        for node in tree.cover():
            total += tree.node_noise(node)
        assert np.array_equal(tree.query_raw(), total)  # no data, no shift: the noise
        assert np.array_equal(tree._cover_noise(), total)


def test_eager_draw_order_is_heap_order() -> None:
    """Node j's G_j is the j-th (d, d) normal draw of the algorithm rng."""
    tree = MatrixTree(5, 2, 2.0, np.random.default_rng(7))
    ref = np.random.default_rng(7)
    for j in range(1, (1 << tree.height)):
        g = ref.normal(0.0, 2.0, (2, 2))
        assert np.array_equal(tree.node_noise(j), 0.5 * (g + g.T))


def test_lazy_exact_nodes_are_the_two_sampler_draws_in_drawing_order() -> None:
    """A lazily drawn exact node: σ on the diagonal, σ/√2 above it (mirrored), drawn as the
    diagonal sampler and then the above-diagonal sampler would draw it, node after node."""
    d, sigma = 4, 1.7
    tree = MatrixTree(1 << 12, d, sigma, np.random.default_rng(5), eager=False,
                      noise=ExactNoise(np.random.default_rng(9)))
    reference = ExactNoise(np.random.default_rng(9))
    for node in (3, 1, 17, 2, 4095):
        expected = two_sampler_matrix(reference, sigma, sigma / math.sqrt(2.0), d)
        assert tree.node_noise(node).tobytes() == expected.tobytes()
    assert tree.node_noise(17) is tree.node_noise(17)  # drawn once, then kept


def test_noises_drawn_ahead_are_those_drawn_node_by_node() -> None:
    """`draw_ahead` draws, in one call, what `node_noise` draws for the same nodes in the same
    order; nodes drawn already, and repeats, are not drawn again."""
    d, sigma = 3, 1.3
    ahead = MatrixTree(1 << 10, d, sigma, np.random.default_rng(5), eager=False,
                       noise=ExactNoise(np.random.default_rng(9)))
    one_by_one = MatrixTree(1 << 10, d, sigma, np.random.default_rng(5), eager=False,
                            noise=ExactNoise(np.random.default_rng(9)))
    first = ahead.node_noise(40)
    one_by_one.node_noise(40)
    ahead.draw_ahead([7, 40, 1023, 7, 2])
    for node in (7, 1023, 2, 40, 11):
        assert ahead.node_noise(node).tobytes() == one_by_one.node_noise(node).tobytes()
    assert ahead.node_noise(40) is first
    swapped = MatrixTree(1 << 10, d, sigma, np.random.default_rng(5), eager=False,
                         noise=ExactNoise(np.random.default_rng(9)))
    swapped.draw_ahead([40, 1023, 7])  # the control: another order gives other noises
    assert swapped.node_noise(7).tobytes() != one_by_one.node_noise(7).tobytes()


@pytest.mark.parametrize("eager, exact", [(True, False), (False, False), (True, True),
                                          (False, True)])
@pytest.mark.parametrize("drawn", [[], [40]])
def test_stacked_node_noises_are_those_drawn_node_by_node(eager: bool, exact: bool,
                                                          drawn: list[int]) -> None:
    """`node_noises` stacks what `node_noise` gives node by node, in the nodes' order: a lazy
    exact tree that has drawn none of them draws them in one call, the others as they come."""
    d, sigma, nodes = 3, 1.3, [7, 40, 1023, 2]

    def tree() -> MatrixTree:
        noise = ExactNoise(np.random.default_rng(9)) if exact else None
        return MatrixTree(1 << 10, d, sigma, np.random.default_rng(5), eager=eager, noise=noise)

    stacked, one_by_one = tree(), tree()
    for node in drawn:
        stacked.node_noise(node)
        one_by_one.node_noise(node)
    noises = stacked.node_noises(nodes)
    assert noises.shape == (len(nodes), d, d)
    expected = np.stack([one_by_one.node_noise(node) for node in nodes])
    assert noises.tobytes() == expected.tobytes()
    for node, noise in zip(nodes, noises, strict=True):  # kept: later calls give the same
        assert stacked.node_noise(node).tobytes() == noise.tobytes()
    if not eager:  # the control: another order draws other noises
        assert tree().node_noises(nodes[::-1])[-1].tobytes() != expected[0].tobytes()


@pytest.mark.parametrize("eager, exact", [(True, False), (False, False), (True, True),
                                          (False, True)])
def test_prefix_noise_variance_matches_calibration(eager: bool, exact: bool) -> None:
    """Var of (query − truth − λI): popcount(s)σ² diagonal, popcount(s)σ²/2 off-diagonal,
    with numpy's Gaussian or exact discrete Gaussian noise (σ on its 2^-20 grid)."""
    sigma, n_trees, d = 2.0, 3000, 3
    rng = np.random.default_rng(2024)
    noise = ExactNoise(np.random.default_rng(2025)) if exact else None
    checkpoints = {7: [], 12: []}
    for _ in range(n_trees):
        tree = MatrixTree(16, d, sigma, rng, shift=3.0, eager=eager, noise=noise)
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


# --------------------------------------------------------------------- the ab8fd16 node set

# T = 4 (h = 3, leaves 4..7): the nodes ab8fd16's query sums at s = 1..4, worked by hand from
# its rule (node c − 1 for every even c on the path of leaf s, then the leaf), and the dyadic
# cover of [1, s] that the corrected code sums.
AB8FD16_T4 = {1: ([3, 1, 4], [4]), 2: ([1, 5], [2]), 3: ([5, 6], [2, 6]), 4: ([7], [1])}


@pytest.mark.parametrize("count", sorted(AB8FD16_T4))
def test_ab8fd16_node_set_is_not_the_dyadic_cover(count: int) -> None:
    ab8, dyadic = AB8FD16_T4[count]
    assert ab8fd16_nodes(count, 3) == ab8
    assert sorted(cover_nodes(count, 3)) == dyadic
    assert sorted(ab8) != dyadic


def test_ab8fd16_weights_leaves_between_zero_and_twice() -> None:
    """T = 4: s = 1 counts leaf 1 twice (leaf and root), s = 3 misses leaf 1, s = 4 is leaf 4."""
    expected = {1: [2], 2: [1, 2], 3: [0, 1, 1], 4: [0, 0, 0, 1]}
    for count, weights in expected.items():
        assert leaf_weights(count, 3, "ab8fd16").tolist() == weights
        assert leaf_weights(count, 3).tolist() == [1.0] * count


@pytest.mark.parametrize("eager", [True, False])
def test_ab8fd16_release_sums_its_node_set(eager: bool) -> None:
    """Release = shift + Σ over ab8fd16_nodes of (node sum incl. partial sums + node noise)."""
    rng = np.random.default_rng(3)
    horizon, d = 37, 2
    tree = MatrixTree(horizon, d, 0.7, rng, shift=2.0, eager=eager, cover="ab8fd16")
    leaves = []
    for count in range(1, horizon + 1):
        leaves.append(_sym(rng, d))
        tree.update(leaves[-1])
        nodes = ab8fd16_nodes(count, tree.height)
        assert tree.cover() == nodes
        data = np.einsum("l,lij->ij", leaf_weights(count, tree.height, "ab8fd16"),
                         np.array(leaves))
        noise = sum((tree.node_noise(j) for j in nodes), np.zeros((d, d)))
        assert np.allclose(tree.query_raw(), data + noise + 2.0 * np.eye(d), atol=1e-10)


def test_ab8fd16_nodes_are_used_by_contiguous_runs_of_releases() -> None:
    """Each node of the ab8fd16 set is used by a contiguous run of releases, so the lazy table
    (which forgets nodes that leave the set) never needs a forgotten node again."""
    height = tree_height(300)
    runs: dict[int, list[int]] = {}
    for s in range(1, 301):
        for j in ab8fd16_nodes(s, height):
            runs.setdefault(j, []).append(s)
    assert all(r == list(range(r[0], r[-1] + 1)) for r in runs.values())


@pytest.mark.parametrize("horizon", [4, 16, 37, 100])
def test_release_cost_equals_the_dense_linear_gaussian_cost(horizon: int) -> None:
    """max_ℓ a_ℓᵀ(BBᵀ)⁻¹a_ℓ by the Kalman filter equals the dense solve, for both covers."""
    for cover in ("dyadic", "ab8fd16"):
        a, b = release_matrices(horizon, cover)
        dense = np.einsum("ij,ij->j", a, np.linalg.solve(b @ b.T, a))
        cost, leaf, heaviest = exact_release_cost(horizon, cover)
        assert cost == pytest.approx(dense.max(), rel=1e-10)
        assert dense[leaf - 1] == pytest.approx(dense.max(), rel=1e-10)
        assert heaviest == a.max()


def test_release_cost_dyadic_is_the_path_length_and_ab8fd16_exceeds_it_at_paper_scale() -> None:
    """Dyadic tree, T = 2^k: the first leaf is in h released nodes (exactly h). ab8fd16 at the
    Figure 1 horizons: 16.25 (T = 5000, h = 14) and 17.74 (T = 15 000, h = 15)."""
    for horizon in (8, 64, 256):
        assert exact_release_cost(horizon)[0] == pytest.approx(tree_height(horizon), rel=1e-12)
    cost, leaf, heaviest = exact_release_cost(5000, "ab8fd16")
    assert (round(cost, 6), leaf, heaviest) == (16.250026, 4031, 12)
    assert exact_release_cost(15000, "ab8fd16")[0] == pytest.approx(17.736697, abs=1e-6)


def test_release_cost_is_computed_once_per_cache(tmp_path, monkeypatch) -> None:
    """Jobs of a run share the cost through the disk cache; a corrupt entry is recomputed."""
    from dpbandits.privacy import tree

    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path))
    tree._release_costs.clear()
    expected = exact_release_cost(37, "ab8fd16")
    assert release_cost(37, "ab8fd16") == expected
    tree._release_costs.clear()

    def boom(*_args):
        raise AssertionError("recomputed instead of read from the cache")

    monkeypatch.setattr(tree, "exact_release_cost", boom)
    assert release_cost(37, "ab8fd16") == expected
    for corrupt in ('"corrupt"', '["0.5", 2, 1]', '[1.0, "x", 2]', '[1.0, null, 2]',
                    '[1.0, 2.9, 1]', '[1.0, 99, 1]', '[NaN, 2, 1]', '[1.0, true, 1]'):
        tree._release_costs.path().write_text(f'{{"37|ab8fd16": {corrupt}}}')
        tree._release_costs.clear()
        with pytest.raises(AssertionError, match="recomputed"):
            release_cost(37, "ab8fd16")
    tree._release_costs.clear()


def test_cover_sums_refuse_a_node_outside_the_table() -> None:
    table, out = np.ones((3, 2, 2)), np.empty((2, 2, 2))
    cover_sums(np.array([[0, 0], [3, 1]], dtype=np.int64), table, out)
    assert np.array_equal(out, [np.zeros((2, 2)), 2 * np.ones((2, 2))])
    for node in (4, -1):
        with pytest.raises(ValueError, match="a node outside the noise table"):
            cover_sums(np.array([[0, 0], [node, 1]], dtype=np.int64), table, out)


def test_unknown_cover_is_one_error_line() -> None:
    with pytest.raises(ConfigError, match="cover = 'dyadc' is not allowed; allowed: dyadic, "
                                          "ab8fd16"):
        MatrixTree(4, 2, 1.0, np.random.default_rng(0), cover="dyadc")


def test_query_repairs_only_what_gershgorin_cannot_place_above_the_floor() -> None:
    """A release whose discs reach below the floor is V·diag(max(λ, floor))·Vᵀ of its
    eigen-decomposition (exactly symmetric); one whose discs lie above it is the release."""
    rng = np.random.default_rng(11)
    for dim in (1, 2, 3, 5):
        tree = MatrixTree(8, dim, 1.0, rng, shift=-3.0)
        tree.update(None)
        raw = tree.query_raw()
        vals, vecs = np.linalg.eigh(raw)
        assert vals.min() < 1e-12  # the noise pushes an eigenvalue below the floor
        repaired = tree.query()
        np.testing.assert_allclose(repaired, (vecs * np.maximum(vals, 1e-12)) @ vecs.T,
                                   atol=1e-12 * np.abs(raw).max())
        assert np.array_equal(repaired, repaired.T)
        clipped, eigvecs = tree.query_eigh()
        np.testing.assert_allclose(clipped, np.maximum(vals, 1e-12), atol=1e-12 * abs(vals).max())
        assert np.allclose(np.abs(eigvecs.T @ vecs), np.eye(dim), atol=1e-8)
        far = MatrixTree(8, dim, 0.1, rng, shift=50.0)
        far.update(np.eye(dim))
        assert np.array_equal(far.query(), far.query_raw())


def test_psd_repair_symmetrises_and_clips() -> None:
    from dpbandits.privacy.tree import psd_repair

    m = np.array([[2.0, 1.0, 0.0], [3.0, -4.0, 0.5], [0.0, 0.5, 1.0]])
    vals, vecs = psd_repair(m, 0.25)
    ref_vals, ref_vecs = np.linalg.eigh(0.5 * (m + m.T))
    np.testing.assert_allclose(vals, np.maximum(ref_vals, 0.25), rtol=1e-12)
    np.testing.assert_allclose(np.abs(vecs.T @ ref_vecs), np.eye(3), atol=1e-12)


def test_exact_trees_snap_leaves_as_exact_noise_snaps() -> None:
    """Leaves go into the tree on the grid of σ, as `ExactNoise.snap` rounds them (bit for
    bit); a float tree keeps them as they are."""
    rng = np.random.default_rng(12)
    noise = ExactNoise(np.random.default_rng(13))
    tree = MatrixTree(16, 3, 0.9, rng, noise=noise)
    float_tree = MatrixTree(16, 3, 0.9, rng)
    total = np.zeros((3, 3))
    for _ in range(5):
        leaf = _sym(rng, 3) * 10.0 ** rng.uniform(-9, 3)
        snapped = noise.snap(leaf, 0.9)
        assert tree.snap(leaf).tobytes() == snapped.tobytes()
        assert float_tree.snap(leaf) is leaf
        tree.update(leaf)
        total += snapped
        assert tree._prefix.tobytes() == total.tobytes()
