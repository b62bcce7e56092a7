"""Binary-tree (continual counting) mechanism over symmetric matrices (docs/glm.md, "Trees")."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from dpbandits.disk_memo import DiskMemo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.privacy.exact_noise import ExactNoise, Noise
from dpbandits.privacy.grid import snap, snap_all
from dpbandits.privacy.ledger import LedgerEntry
from dpbandits.privacy.release import Drawn, drawn_for, release, replaying
from dpbandits.privacy.zcdp import gaussian_sigma, rho_from_epsilon

# Eager noise tables larger than this many doubles are drawn lazily (first use) instead.
EAGER_MAX_ENTRIES = 1 << 22
# Which nodes a query sums: the dyadic cover of [1, s], or the node set of the authors' initial
# commit ab8fd16 (docs/glm.md, "Code state ab8fd16").
COVERS = ("dyadic", "ab8fd16")


def tree_height(horizon: int) -> int:
    """h = ⌈log2 T⌉ + 1: the number of nodes on a leaf-to-root path (docs/glm.md, "Trees")."""
    if horizon < 1:
        raise ValueError(f"horizon = {horizon!r} must be >= 1")
    return (int(horizon) - 1).bit_length() + 1


def tree_sigma_from_rho(rho_tree: float, horizon: int, sensitivity: float) -> float:
    """Per-node σ = Δ/√(2ρ_tree/h): ρ_tree split evenly over the h nodes of a path."""
    return gaussian_sigma(sensitivity, rho_tree / tree_height(horizon))


def tree_sigma(epsilon: float, delta: float, horizon: int, sensitivity: float) -> float:
    """Per-node σ for an (ε, δ) tree via the classic zCDP conversion (Bun & Steinke, Prop. 1.3)."""
    return tree_sigma_from_rho(rho_from_epsilon(epsilon, delta), horizon, sensitivity)


def tree_calibration(noise: Noise, rho_tree: float, horizon: int, sensitivity: float,
                     dim: int) -> tuple[float, float]:
    """(σ_node, effective sensitivity) for a tree of dim×dim leaves at ρ_tree in all: ρ_tree/h
    per node, with the grid rounding of exact noise included (Δ' = Δ + γ·dim)."""
    if not noise.exact:
        return tree_sigma_from_rho(rho_tree, horizon, sensitivity), float(sensitivity)
    return noise.calibrate_gaussian(sensitivity, rho_tree / tree_height(horizon), dim * dim)


def tree_rho(sigma_node: float, sensitivity: float, horizon: int) -> float:
    """zCDP of a tree: h nodes on a leaf's path, each Δ²/(2σ²) (Frobenius-isotropic noise)."""
    return tree_height(horizon) * sensitivity**2 / (2.0 * sigma_node**2)


def cover_nodes(count: int, height: int) -> list[int]:
    """Canonical dyadic cover of leaves [1, count] in heap order: popcount(count) nodes."""
    if count <= 0:
        return []
    left = 1 << (height - 1)
    right = left + count - 1
    nodes: list[int] = []
    while left <= right:
        if left & 1:
            nodes.append(left)
            left += 1
        if not right & 1:
            nodes.append(right)
            right -= 1
        left >>= 1
        right >>= 1
    return nodes


def ab8fd16_nodes(count: int, height: int) -> list[int]:
    """The nodes ab8fd16's query sums at count s: node c − 1 for every even (left-child) node c
    on the path from leaf s to the root, then leaf s itself (docs/glm.md, "Code state ab8fd16").

    Not a cover of [1, s]: for s ≤ 2^(h−2) it contains the root (a partial sum), at a level whose
    path node is leftmost it contains the last node of the level above (no data before the end
    of the tree), and a leaf of [1, s] is summed from 0 up to several times (12 at T = 5000).
    """
    if count <= 0:
        return []
    leaf = (1 << (height - 1)) + count - 1
    nodes: list[int] = []
    node = leaf
    while node > 0:
        if node % 2 == 0:
            nodes.append(node - 1)
        node //= 2
    nodes.append(leaf)
    return nodes


def check_cover(cover: str) -> None:
    """One ConfigError line for a cover name that is not one of `COVERS`."""
    if cover not in COVERS:
        raise ConfigError(f"cover = {cover!r} is not allowed; allowed: {', '.join(COVERS)}")


def query_nodes(count: int, height: int, cover: str = "dyadic") -> list[int]:
    """The nodes a query at count s sums under the named cover."""
    check_cover(cover)
    return cover_nodes(count, height) if cover == "dyadic" else ab8fd16_nodes(count, height)


@functools.lru_cache(maxsize=8)
def cover_index(horizon: int, height: int, cover: str = "dyadic") -> np.ndarray:
    """Row s: the nodes of `query_nodes(s)` in summation order, padded with 0 (no node):
    `cover_nodes` and `ab8fd16_nodes` run for every count at once, one level per step."""
    check_cover(cover)
    counts = np.arange(horizon + 1, dtype=np.int64)
    index = np.zeros((horizon + 1, 2 * height + 1), dtype=np.int64)
    filled = np.zeros(horizon + 1, dtype=np.int64)

    def append(rows: np.ndarray, nodes: np.ndarray) -> None:
        index[rows, filled[rows]] = nodes[rows]
        filled[rows] += 1

    leaf = (1 << (height - 1)) + counts - 1
    if cover == "dyadic":  # `cover_nodes`: the left end moves right, the right end left
        left, right = np.full(horizon + 1, 1 << (height - 1), dtype=np.int64), leaf
        live = left <= right
        while live.any():
            take = live & (left & 1 == 1)
            append(take, left)
            left = left + take
            take = live & (right & 1 == 0)
            append(take, right)
            right = right - take
            left, right = left >> 1, right >> 1
            live &= left <= right
    else:  # `ab8fd16_nodes`: the left sibling of every right child on the path, then the leaf
        node = np.where(counts > 0, leaf, 0)
        while (node > 0).any():
            append((node > 0) & (node % 2 == 0), node - 1)
            node = node // 2
        append(counts > 0, leaf)
    index = np.ascontiguousarray(index[:, : filled.max(initial=0)])
    index.flags.writeable = False
    return index


def closing_node(count: int, height: int) -> int:
    """The node the count's leaf completes and its release first sums: the largest dyadic
    block of leaves ending at `count` (the leaf, and its ancestors while it is a right child)."""
    node = (1 << (height - 1)) + count - 1
    while node > 1 and node % 2 == 1:
        node //= 2
    return node


def node_leaves(node: int, height: int) -> tuple[int, int]:
    """First and last leaf (1-based) under a heap-order node."""
    depth = node.bit_length() - 1
    size = 1 << (height - 1 - depth)
    first = (node - (1 << depth)) * size + 1
    return first, first + size - 1


def leaf_weights(count: int, height: int, cover: str = "dyadic") -> np.ndarray:
    """How many times the query at count s sums each leaf 1..s (all ones for the dyadic cover).

    A node's sum at count s holds the leaves of its range that have arrived (≤ s).
    """
    diff = np.zeros(count + 1)
    for node in query_nodes(count, height, cover):
        first, last = node_leaves(node, height)
        if first <= count:
            diff[first - 1] += 1.0
            diff[min(last, count)] -= 1.0
    return np.cumsum(diff[:count])


def release_matrices(horizon: int, cover: str = "dyadic") -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the T releases R = A x + B z per matrix coordinate: A[s, ℓ] the weight of leaf
    ℓ in release s, B[s, j] = 1 when release s sums node j's noise (columns: the nodes used,
    in increasing heap order). Dense: for small T (tests and audits)."""
    height = tree_height(horizon)
    covers = [query_nodes(s, height, cover) for s in range(1, horizon + 1)]
    used = sorted({j for nodes in covers for j in nodes})
    column = {j: i for i, j in enumerate(used)}
    a = np.zeros((horizon, horizon))
    b = np.zeros((horizon, len(used)))
    for s, nodes in enumerate(covers, start=1):
        a[s - 1, :s] = leaf_weights(s, height, cover)
        for j in nodes:
            b[s - 1, column[j]] += 1.0
    return a, b


_release_costs = DiskMemo("release-cost-v1.json")


def release_cost(horizon: int, cover: str = "dyadic") -> tuple[float, int, int]:
    """`exact_release_cost`, memoised across the processes of a run (it takes seconds at
    T = 15000 and depends only on T and the cover)."""
    key = f"{int(horizon)}|{cover}"
    cached = _release_costs.get(key)
    if _valid_cost(cached, int(horizon)):
        return float(cached[0]), int(cached[1]), int(cached[2])
    value = exact_release_cost(int(horizon), cover)
    _release_costs.put(key, list(value))
    return value


def _valid_cost(value: object, horizon: int) -> bool:
    """A cached (c, ℓ*, w_max) of the right types and range (anything else is recomputed)."""
    if not (isinstance(value, list) and len(value) == 3):
        return False
    cost, leaf, heaviest = value
    return (isinstance(cost, float) and math.isfinite(cost) and cost > 0
            and all(isinstance(v, int) and not isinstance(v, bool) for v in (leaf, heaviest))
            and 1 <= leaf <= horizon and heaviest >= 1)


def exact_release_cost(horizon: int, cover: str = "dyadic") -> tuple[float, int, int]:
    """(c, ℓ*, w_max): c = max over leaves ℓ of a_ℓᵀ(BBᵀ)⁻¹a_ℓ for the T releases of
    `release_matrices`, the exact replace-one cost of the whole release sequence in units of
    Δ²/(2σ²) per node (ρ = c·Δ²/(2σ²)); the leaf that attains it; the largest weight of a leaf
    in any release (docs/glm.md, "Code state ab8fd16").

    The releases are one linear Gaussian mechanism; BBᵀ is their noise covariance over σ².
    Computed by a Kalman filter over the nodes in use, which is exact because every node is
    used by a contiguous run of releases (checked), so at most h nodes are open at a time.
    """
    height = tree_height(horizon)
    covers = [query_nodes(s, height, cover) for s in range(1, horizon + 1)]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    uses: dict[int, int] = {}
    for s, nodes in enumerate(covers, start=1):
        for j in nodes:
            first.setdefault(j, s)
            last[j] = s
            uses[j] = uses.get(j, 0) + 1
    if any(uses[j] != last[j] - first[j] + 1 for j in uses):
        raise ValueError(f"release_cost: a node of the {cover} cover is used by a "
                         "non-contiguous run of releases")
    state: list[int] = []
    cov = np.zeros((0, 0))
    mean = np.zeros((0, horizon))  # E[open node noises | releases so far], per leaf's shift
    total = np.zeros(horizon)
    heaviest = 0.0
    for s, nodes in enumerate(covers, start=1):
        new = [j for j in nodes if j not in state]
        if new:
            k, n = len(state), len(new)
            grown = np.zeros((k + n, k + n))
            grown[:k, :k] = cov
            grown[k:, k:] = np.eye(n)
            cov = grown
            mean = np.vstack([mean, np.zeros((n, horizon))])
            state = state + new
        obs = np.zeros(len(state))
        for j in nodes:
            obs[state.index(j)] = 1.0
        cov_obs = cov @ obs
        variance = float(obs @ cov_obs)
        weights = leaf_weights(s, height, cover)
        heaviest = max(heaviest, float(weights.max()))
        innovation = weights - obs @ mean[:, :s]
        total[:s] += innovation * innovation / variance
        gain = cov_obs / variance
        mean[:, :s] += np.outer(gain, innovation)
        cov = cov - variance * np.outer(gain, gain)
        keep = [i for i, j in enumerate(state) if last[j] > s]
        if len(keep) < len(state):
            state = [state[i] for i in keep]
            cov = cov[np.ix_(keep, keep)]
            mean = mean[keep]
    best = int(np.argmax(total))
    return float(total[best]), best + 1, int(heaviest)


# ---------------------------------------------------------------------- compiled kernels


class TreeState(NamedTuple):
    """What a tree's kernels read and write: the prefix sum of the leaves (dim × dim); the sum
    of every node (heap index 1…2^h − 1, row 0 unused) for a cover other than the dyadic one,
    else no rows; the nodes each count's query sums (`cover_index`, read-only) for such a
    cover, else no rows; Z_cover(s) for every count s = 0…T of an eager tree, else no rows; the
    count (one int64); the shift λ of the release, the PSD floor, and the grid γ leaves are
    snapped to (0: no grid)."""

    prefix: np.ndarray
    node_sums: np.ndarray
    index: np.ndarray
    noise: np.ndarray
    count: np.ndarray
    shift: float
    floor: float
    grid: float


def unused_state(dim: int = 1) -> TreeState:
    """A tree state without leaves or noise, for kernels that take a tree a mode does not use."""
    none = np.zeros((0, 0), dtype=np.int64)
    none.flags.writeable = False
    return TreeState(np.zeros((dim, dim)), np.zeros((0, dim, dim)), none,
                     np.zeros((0, dim, dim)), np.zeros(1, dtype=np.int64), 0.0, 0.0, 0.0)


@jit
def cover_sums(index: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """out[s] = Σ of table[j − 1] over the nodes j of row s of `index` (0: no node), added
    from zero in the row's order: Z_cover(s) for every count s at once."""
    for s in range(index.shape[0]):
        total = out[s]
        for i in range(total.shape[0]):
            for j in range(total.shape[1]):
                total[i, j] = 0.0
        for k in range(index.shape[1]):
            node = index[s, k]
            if node == 0:
                continue
            if node < 0 or node > table.shape[0]:
                raise ValueError("cover_sums: a node outside the noise table")
            z = table[node - 1]
            for i in range(z.shape[0]):
                for j in range(z.shape[1]):
                    total[i, j] = total[i, j] + z[i, j]


@jit
def advance(count: np.ndarray) -> None:
    """An empty leaf: the count moves on."""
    count[0] += 1


@jit
def add_leaf(tree: TreeState, leaf: np.ndarray) -> None:
    """The next leaf, snapped to the tree's grid in place, added to the prefix sum and, where
    node sums are kept, to the sums of its node and every ancestor."""
    dim = leaf.shape[0]
    tree.count[0] += 1
    for i in range(dim):
        for j in range(dim):
            value = snap(leaf[i, j], tree.grid) if tree.grid > 0.0 else leaf[i, j]
            leaf[i, j] = value
            tree.prefix[i, j] += value
    if tree.node_sums.shape[0]:
        node = tree.node_sums.shape[0] // 2 + tree.count[0] - 1  # leaf s: 2^(h−1) + s − 1
        while node > 0:
            total = tree.node_sums[node]
            for i in range(dim):
                for j in range(dim):
                    total[i, j] += leaf[i, j]
            node //= 2


@jit
def release_into(tree: TreeState, noise: np.ndarray, out: np.ndarray) -> None:
    """shift·I + 0.5·(S + Sᵀ), S = the cover's noise `noise` plus the data: the prefix sum, or
    (node sums kept) the sum of the node sums the query at the current count sums, from zero
    in its order: the unrepaired release (App. J.3)."""
    dim = out.shape[0]
    keep = not tree.node_sums.shape[0]
    for i in range(dim):
        for j in range(dim):
            out[i, j] = tree.prefix[i, j] if keep else 0.0
    if not keep:
        row = tree.index[tree.count[0]]
        for k in range(row.shape[0]):
            if row[k] == 0:
                continue
            total = tree.node_sums[row[k]]
            for i in range(dim):
                for j in range(dim):
                    out[i, j] = out[i, j] + total[i, j]
    for i in range(dim):
        for j in range(i, dim):
            value = ((out[i, j] + noise[i, j]) + (out[j, i] + noise[j, i])) * 0.5
            out[i, j] = value
            out[j, i] = value
        out[i, i] += tree.shift


@jit
def clipped_eigh(symmetric: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues clipped below at `floor`, eigenvectors) of a symmetric matrix."""
    vals, vecs = np.linalg.eigh(symmetric)
    for i in range(vals.shape[0]):
        if vals[i] < floor:
            vals[i] = floor
    return vals, vecs


@jit
def psd_repair(matrix: np.ndarray, floor: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrise and clip eigenvalues below at `floor`: (eigenvalues, eigenvectors)."""
    dim = matrix.shape[0]
    symmetric = np.empty((dim, dim))
    for i in range(dim):
        for j in range(dim):
            symmetric[i, j] = 0.5 * (matrix[i, j] + matrix[j, i])
    return clipped_eigh(symmetric, floor)


@jit
def query_into(tree: TreeState, noise: np.ndarray, out: np.ndarray) -> None:
    """The released matrix into `out`: the release, PSD-repaired unless Gershgorin's discs
    already put every eigenvalue at or above the floor."""
    release_into(tree, noise, out)
    dim = out.shape[0]
    short = False  # Gershgorin's discs fail to put every eigenvalue at or above the floor
    for i in range(dim):
        radius = 0.0
        for j in range(dim):
            radius += abs(out[i, j])
        short = short or not out[i, i] - (radius - abs(out[i, i])) >= tree.floor
    if not short:
        return
    vals, vecs = clipped_eigh(out, tree.floor)  # out ← V·diag(max(λ, floor))·Vᵀ
    for i in range(dim):
        for j in range(i, dim):
            total = 0.0
            for k in range(dim):
                total += vecs[i, k] * vals[k] * vecs[j, k]
            out[i, j] = total
            out[j, i] = total


@jit
def query_eigh(tree: TreeState, noise: np.ndarray,
               work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition (clipped eigenvalues, eigenvectors) of the PSD-repaired release
    (`work` holds the release afterwards)."""
    release_into(tree, noise, work)
    return clipped_eigh(work, tree.floor)


# ---------------------------------------------------------------------- the tree


@functools.lru_cache(maxsize=64)
def _upper(dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, columns) of the entries above the diagonal, and the diagonal's indices."""
    return (*np.triu_indices(dim, 1), np.arange(dim))


_NO_INDEX = np.zeros((0, 0), dtype=np.int64)
_NO_INDEX.flags.writeable = False


class MatrixTree:
    """Continual release of prefix sums of symmetric `dim`×`dim` matrices (Private-GLM App. J.3).

    Every node j = 1..2^h−1 carries a fixed symmetric noise Z_j = (G_j + G_jᵀ)/2, G_j with
    i.i.d. N(0, σ²) entries (diagonal variance σ², off-diagonal σ²/2): Gaussian with density
    ∝ exp(−‖Z‖_F²/(2σ²)), so a node whose sum moves by Δ in Frobenius norm costs Δ²/(2σ²) zCDP.
    A query at count s returns shift·I + Σ_{cover(s)} (node sum + Z_j), symmetrised, with
    eigenvalues clipped at `psd_floor`. Noise is drawn for all nodes in heap order at
    construction when the table is small (and Z_cover(s) summed for every count s then),
    otherwise on first use of a node (same distribution, bounded memory).

    With an exact `noise` source (strict accounting) every leaf is snapped to the grid of σ and
    Z_j has discrete Gaussian entries: σ on the diagonal and σ/√2 above it (mirrored below);
    coordinate-wise composition gives the same (‖Δ'‖_F)²/(2σ²) with Δ' = Δ + γ·dim
    (`exact_noise`; calibrate σ with `calibrate_gaussian(Δ, ρ_node, dim²)`).

    `cover="ab8fd16"` sums the node set of the authors' initial commit instead of the dyadic
    cover (`ab8fd16_nodes`); node sums are then kept per node, partial sums included.

    The tree's arrays are `state` (`TreeState`); the methods below and compiled round loops
    change and read them with the same kernels (`add_leaf`, `release_into`, `query_into`,
    `query_eigh`), an eager tree's noise coming from `state.noise`.
    """

    def __init__(
        self,
        horizon: int,
        dim: int,
        sigma_node: float,
        rng: np.random.Generator,
        shift: float = 0.0,
        *,
        psd_floor: float = 1e-12,
        eager: bool | None = None,
        noise: Noise | None = None,
        cover: str = "dyadic",
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim = {dim!r} must be >= 1")
        check_cover(cover)
        if not np.isfinite(sigma_node) or sigma_node < 0:
            raise ValueError(f"sigma_node = {sigma_node!r} must be a finite number >= 0")
        self.horizon = int(horizon)
        self.height = tree_height(self.horizon)
        self.dim = int(dim)
        self.sigma_node = float(sigma_node)
        self.shift = float(shift)
        self.psd_floor = float(psd_floor)
        self.rng = rng
        self.exact = noise is not None and noise.exact
        self.noise = noise
        self.cover_kind = cover
        self._upper = _upper(self.dim)  # rows, cols, diagonal
        grid = 0.0
        if self.exact and self.sigma_node > 0:  # diagonal σ, above the diagonal σ/√2
            assert isinstance(noise, ExactNoise)
            sigma_above = self.sigma_node / math.sqrt(2.0)
            self._samplers = (noise.gaussian_sampler(self.sigma_node),
                              noise.gaussian_sampler(sigma_above))
            self._draw_node = noise.symmetric_sampler(self.sigma_node, sigma_above, self.dim)
            grid = noise.grid(self.sigma_node)
        n_nodes = (1 << self.height) - 1
        if eager is None:
            eager = n_nodes * dim * dim <= EAGER_MAX_ENTRIES
        self.eager = bool(eager)
        self._noise_table: np.ndarray | None = None
        self._noise_lazy: dict[int, np.ndarray] = {}
        if self.eager and self.sigma_node > 0:
            self._noise_table = self._draw(n_nodes)
        self._noise_sum = np.zeros((dim, dim))
        self._noise_sum_count = 0
        self._nodes: tuple[int, list[int]] = (0, [])
        dyadic = cover == "dyadic"
        self.state = TreeState(
            prefix=np.zeros((dim, dim)),
            node_sums=np.zeros((0 if dyadic else n_nodes + 1, dim, dim)),
            index=_NO_INDEX if dyadic else cover_index(self.horizon, self.height, cover),
            noise=self._cover_noise_table() if self.eager else np.zeros((0, dim, dim)),
            count=np.zeros(1, dtype=np.int64), shift=self.shift, floor=self.psd_floor,
            grid=grid)

    @property
    def count(self) -> int:
        """Leaves added so far."""
        return int(self.state.count[0])

    @property
    def _prefix(self) -> np.ndarray:
        return self.state.prefix

    def node_noise(self, node: int) -> np.ndarray:
        """The fixed symmetric noise matrix Z_node (heap index, 1-based)."""
        if self.sigma_node == 0:
            return np.zeros((self.dim, self.dim))
        if self._noise_table is not None:
            return self._noise_table[node - 1]
        z = self._noise_lazy.get(node)
        if z is None:
            z = self._noise_lazy[node] = self._draw(None)
        return z

    def draw_ahead(self, nodes: list[int]) -> None:
        """Draw the noises of those of `nodes` a lazy exact tree has not drawn yet, in their
        order and in one call: the draws `node_noise` would make for them one by one."""
        if self._noise_table is not None or not self.exact or self.sigma_node == 0:
            return
        missing = [node for node in dict.fromkeys(nodes) if node not in self._noise_lazy]
        if missing:
            self._noise_lazy.update(zip(missing, self._draw_node(len(missing)), strict=True))

    def node_noises(self, nodes: list[int]) -> np.ndarray:
        """The noises of the distinct `nodes` stacked in their order, the draws `node_noise`
        makes for them one by one: a lazy exact tree that has drawn none of them draws them
        in one call and returns that array itself."""
        if (self._noise_table is None and self.exact and self.sigma_node > 0 and nodes
                and len(set(nodes)) == len(nodes)
                and not any(node in self._noise_lazy for node in nodes)):
            drawn = self._draw_node(len(nodes))
            self._noise_lazy.update(zip(nodes, drawn, strict=True))
            return drawn
        self.draw_ahead(nodes)
        return np.array([self.node_noise(node) for node in nodes]).reshape(-1, self.dim,
                                                                           self.dim)

    def _draw(self, count: int | None) -> np.ndarray:
        """Symmetric node noise for `count` nodes (or one node when None)."""
        shape = (self.dim, self.dim) if count is None else (count, self.dim, self.dim)
        if not self.exact:
            g = self.rng.normal(0.0, self.sigma_node, size=shape)
            symmetric = g + np.swapaxes(g, -1, -2)
            symmetric *= 0.5  # 0.5·(G + Gᵀ), without a second temporary
            return symmetric
        if count is None:  # one node: the draws below, in one call
            return self._draw_node()
        rows, cols, diag = self._upper
        diagonal, above = self._samplers
        out = np.zeros(shape)
        out[..., diag, diag] = diagonal((count, self.dim))
        if rows.size:
            upper = above((count, rows.size))
            out[..., rows, cols] = upper
            out[..., cols, rows] = upper
        return out

    def snap(self, matrix: np.ndarray) -> np.ndarray:
        """A leaf as the tree adds it: on the grid of σ with exact noise, else unchanged."""
        if not self.state.grid:
            return matrix
        out = np.array(matrix, dtype=float)
        snap_all(out.reshape(-1), self.state.grid)
        return out

    def update(self, matrix: np.ndarray | None = None) -> None:
        """Append the next leaf (None or a zero matrix for an empty round)."""
        if self.count >= self.horizon:
            raise ValueError(f"MatrixTree: update {self.count + 1} exceeds horizon {self.horizon}")
        if matrix is None:
            advance(self.state.count)
        else:
            add_leaf(self.state, np.array(matrix, dtype=float))  # a copy: snapped in place

    def update_rank_one(self, x: np.ndarray, weight: float) -> None:
        """Append the leaf weight·x xᵀ."""
        self.update(weight * np.outer(x, x))

    def cover(self) -> list[int]:
        """Nodes whose sums and noises make up the current release."""
        if self.cover_kind == "dyadic":
            return cover_nodes(self.count, self.height)
        if self._nodes[0] != self.count:
            self._nodes = (self.count, query_nodes(self.count, self.height, self.cover_kind))
        return self._nodes[1]

    def _cover_noise_table(self) -> np.ndarray:
        """Z_cover(s) for every count s = 0…T of an eager tree, each summed node by node in
        cover order from zero, exactly as `_cover_noise` sums one count (zeros without noise)."""
        sums = np.zeros((self.horizon + 1, self.dim, self.dim))
        if self._noise_table is not None:
            cover_sums(cover_index(self.horizon, self.height, self.cover_kind),
                       self._noise_table, sums)
        return sums

    def _cover_noise(self) -> np.ndarray:
        if self.eager:
            return self.state.noise[self.state.count[0]]
        if self._noise_sum_count != self.count:
            total = np.zeros((self.dim, self.dim))
            if self.sigma_node > 0:
                for node in self.cover():
                    total += self.node_noise(node)
            live = set(self.cover())
            self._noise_lazy = {j: z for j, z in self._noise_lazy.items() if j in live}
            self._noise_sum = total
            self._noise_sum_count = self.count
        return self._noise_sum

    def query_raw(self) -> np.ndarray:
        """shift·I + noisy prefix sum, symmetrised, without PSD repair (unbiased)."""
        out = np.empty((self.dim, self.dim))
        release_into(self.state, self._cover_noise(), out)
        return out

    def query_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigen-decomposition (clipped eigenvalues, eigenvectors) of the PSD-repaired release."""
        return query_eigh(self.state, self._cover_noise(), np.empty((self.dim, self.dim)))

    def query(self) -> np.ndarray:
        """The released matrix: noisy prefix sum + shift·I, PSD-repaired.

        When Gershgorin's discs already put every eigenvalue above the floor the repair is
        the identity and the eigen-decomposition is skipped.
        """
        out = np.empty((self.dim, self.dim))
        query_into(self.state, self._cover_noise(), out)
        return out

    # ------------------------------------------------------------------ node releases

    def freedom(self) -> int:
        """Independent noise coordinates of a node: d(d + 1)/2 (Z_j is symmetric)."""
        return self.dim * (self.dim + 1) // 2

    def drawn(self, noise: Noise, sensitivity: float) -> Drawn:
        """The scale the node noise is drawn at (the sampler's σ on its grid in strict mode)
        and the sensitivity of a snapped node, for the tree's ledger entry."""
        return drawn_for(noise, "gaussian", self.sigma_node, float(sensitivity), self.freedom())

    def release_node(self, noise: Noise, prefix: np.ndarray, *, name: str, sensitivity: float,
                     entry: LedgerEntry | None) -> bool:
        """The node the last leaf completed (`closing_node`) released through
        `privacy.release.release`: its sum of leaves prefix(s) − prefix(first − 1), plus its
        noise Z_j, drawn when the tree was built (audit mode; `prefix` is the tree's prefix sum
        of leaves at the current count). Replaying, Z_j becomes the replayed value less this
        run's node sum, so that every later query sums the replayed release; True when it
        changed."""
        history = self.__dict__.setdefault("_history", {0: np.zeros((self.dim, self.dim))})
        count = self.count
        history[count] = np.array(prefix, dtype=float)
        node = closing_node(count, self.height)
        first, _ = node_leaves(node, self.height)
        statistic = history[count] - history[first - 1]
        z = self.node_noise(node)
        released = release(noise, None, statistic, name=name, mechanism="gaussian",
                           sensitivity=sensitivity, scale=self.sigma_node,
                           partition=f"node {node}, leaves {first}-{count}",
                           noise_drawn=z, freedom=self.freedom(), entry=entry)
        if not replaying() or self.sigma_node == 0:
            return False
        replacement = released.reshape(self.dim, self.dim) - statistic
        if np.array_equal(replacement, z):
            return False
        self._set_node_noise(node, replacement)
        return True

    def _set_node_noise(self, node: int, value: np.ndarray) -> None:
        """Z_node ← value, and the covers' noise sums that include it."""
        if self._noise_table is not None:
            self._noise_table[node - 1] = value
            if self.eager:
                cover_sums(cover_index(self.horizon, self.height, self.cover_kind),
                           self._noise_table, self.state.noise)
        else:
            self._noise_lazy[node] = np.array(value, dtype=float)
        self._noise_sum_count = -1
