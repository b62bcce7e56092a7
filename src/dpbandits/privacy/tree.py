"""Binary-tree (continual counting) mechanism over symmetric matrices (docs/glm.md, "Trees")."""

from __future__ import annotations

import functools
import math

import numpy as np

from dpbandits import _stacked, small_linalg
from dpbandits.disk_memo import DiskMemo
from dpbandits.errors import ConfigError
from dpbandits.privacy.exact_noise import ExactNoise, Noise
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
    counts = np.arange(horizon + 1, dtype=np.intp)
    index = np.zeros((horizon + 1, 2 * height + 1), dtype=np.intp)
    filled = np.zeros(horizon + 1, dtype=np.intp)

    def append(rows: np.ndarray, nodes: np.ndarray) -> None:
        index[rows, filled[rows]] = nodes[rows]
        filled[rows] += 1

    leaf = (1 << (height - 1)) + counts - 1
    if cover == "dyadic":  # `cover_nodes`: the left end moves right, the right end left
        left, right = np.full(horizon + 1, 1 << (height - 1), dtype=np.intp), leaf
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


def transpose(matrices: np.ndarray) -> np.ndarray:
    """Each matrix of a stack (or the one matrix) transposed, a view: `.T` of a 2-d array."""
    return np.swapaxes(matrices, -1, -2)


def symmetrised_shifted(raw: np.ndarray, shift: float) -> np.ndarray:
    """0.5·(M + Mᵀ) + shift·I for each matrix of a stack (or the one matrix), in a new array:
    the same operations as `0.5 * (m + m.T)` and `m[diag] += shift`, with one temporary."""
    out = raw + transpose(raw)
    out *= 0.5
    dim = out.shape[-1]
    out.reshape(*out.shape[:-2], dim * dim)[..., :: dim + 1] += shift  # a view: out is new
    return out


def gershgorin_short(raw: np.ndarray, floor: float) -> np.ndarray:
    """Per matrix of a stack (or for one matrix): whether Gershgorin's discs fail to put every
    eigenvalue at or above `floor`, so that `MatrixTree.query` must repair it."""
    diag = raw.diagonal(axis1=-2, axis2=-1)
    radius = np.abs(raw).sum(axis=-1) - np.abs(diag)
    return ~(diag - radius >= floor).all(axis=-1)


def repaired(raw: np.ndarray, floor: float) -> np.ndarray:
    """V·diag(max(λ, floor))·Vᵀ from the eigen-decomposition of each (symmetric) matrix."""
    vals, vecs = clipped_eigh(raw, floor)
    return (vecs * vals[..., None, :]) @ transpose(vecs)


def psd_repair(matrix: np.ndarray, floor: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrise and clip eigenvalues below at `floor`: (eigenvalues, eigenvectors)."""
    return clipped_eigh(0.5 * (matrix + matrix.T), floor)


def clipped_eigh(symmetric: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """`psd_repair` of a matrix that is already exactly symmetric (its symmetrisation is the
    identity there: m + mᵀ = 2m exactly, for entries below 2^1023 in magnitude)."""
    vals, vecs = small_linalg.eigh(symmetric)
    return np.maximum(vals, floor), vecs


class MatrixTree:
    """Continual release of prefix sums of symmetric `dim`×`dim` matrices (Private-GLM App. J.3).

    Every node j = 1..2^h−1 carries a fixed symmetric noise Z_j = (G_j + G_jᵀ)/2, G_j with
    i.i.d. N(0, σ²) entries (diagonal variance σ², off-diagonal σ²/2): Gaussian with density
    ∝ exp(−‖Z‖_F²/(2σ²)), so a node whose sum moves by Δ in Frobenius norm costs Δ²/(2σ²) zCDP.
    A query at count s returns shift·I + Σ_{cover(s)} (node sum + Z_j), symmetrised, with
    eigenvalues clipped at `psd_floor`. Noise is drawn for all nodes in heap order at
    construction when the table is small, otherwise on first use of a node (same distribution,
    bounded memory).

    With an exact `noise` source (strict accounting) every leaf is snapped to the grid of σ and
    Z_j has discrete Gaussian entries: σ on the diagonal and σ/√2 above it (mirrored below);
    coordinate-wise composition gives the same (‖Δ'‖_F)²/(2σ²) with Δ' = Δ + γ·dim
    (`exact_noise`; calibrate σ with `calibrate_gaussian(Δ, ρ_node, dim²)`).

    `cover="ab8fd16"` sums the node set of the authors' initial commit instead of the dyadic
    cover (`ab8fd16_nodes`); node sums are then kept per node, partial sums included.
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
        self.count = 0
        self._prefix = np.zeros((dim, dim))
        self._upper = (*np.triu_indices(self.dim, 1), np.arange(self.dim))  # rows, cols, diagonal
        if self.exact and self.sigma_node > 0:  # diagonal σ, above the diagonal σ/√2
            assert isinstance(noise, ExactNoise)
            sigma_above = self.sigma_node / math.sqrt(2.0)
            self._samplers = (noise.gaussian_sampler(self.sigma_node),
                              noise.gaussian_sampler(sigma_above))
            self._draw_node = noise.symmetric_sampler(self.sigma_node, sigma_above, self.dim)
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
        self._cover_sums: np.ndarray | None = None
        self.cover_kind = cover
        self._node_sums = np.zeros((n_nodes + 1, dim, dim)) if cover != "dyadic" else None
        self._nodes: tuple[int, list[int]] = (0, [])

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
        if not self.exact or self.sigma_node == 0:
            return matrix
        return self.noise.snap(matrix, self.sigma_node)

    def update(self, matrix: np.ndarray | None = None) -> None:
        """Append the next leaf (None or a zero matrix for an empty round)."""
        if self.count >= self.horizon:
            raise ValueError(f"MatrixTree: update {self.count + 1} exceeds horizon {self.horizon}")
        self.count += 1
        if matrix is not None:
            leaf = self.snap(matrix)
            self._prefix += leaf
            if self._node_sums is not None:
                node = (1 << (self.height - 1)) + self.count - 1
                while node > 0:
                    self._node_sums[node] += leaf
                    node //= 2

    def update_rank_one(self, x: np.ndarray, weight: float) -> None:
        """Append the leaf weight·x xᵀ."""
        self.update(weight * np.outer(x, x))

    def cover(self) -> list[int]:
        """Nodes whose sums and noises make up the current release."""
        if self._node_sums is None:
            return cover_nodes(self.count, self.height)
        if self._nodes[0] != self.count:
            self._nodes = (self.count, query_nodes(self.count, self.height, self.cover_kind))
        return self._nodes[1]

    def _data_sum(self) -> np.ndarray:
        """The data part of the release: the prefix sum, or ab8fd16's sum of node sums."""
        if self._node_sums is None:
            return self._prefix
        return self._node_sums[self.cover()].sum(axis=0)

    def _cover_noise_table(self, out: np.ndarray | None = None) -> np.ndarray:
        """Z_cover(s) for every count s of an eager tree (into `out`, a (T + 1, dim, dim)
        array, if given), each summed node by node in cover order from zero, exactly as
        `_cover_noise` sums one count (compiled: `_stacked.cover_sums`)."""
        table = self._noise_table
        assert table is not None
        sums = np.empty((self.horizon + 1, self.dim, self.dim)) if out is None else out
        _stacked.cover_sums(cover_index(self.horizon, self.height, self.cover_kind), table,
                            sums)
        return sums

    def _cover_noise(self) -> np.ndarray:
        if self._noise_table is not None:
            if self._cover_sums is None:
                self._cover_sums = self._cover_noise_table()
            return self._cover_sums[self.count]
        if self._noise_sum_count != self.count:
            total = np.zeros((self.dim, self.dim))
            if self.sigma_node > 0:
                for node in self.cover():
                    total += self.node_noise(node)
            if not self.eager:
                live = set(self.cover())
                self._noise_lazy = {j: z for j, z in self._noise_lazy.items() if j in live}
            self._noise_sum = total
            self._noise_sum_count = self.count
        return self._noise_sum

    def query_raw(self) -> np.ndarray:
        """shift·I + noisy prefix sum, symmetrised, without PSD repair (unbiased)."""
        return symmetrised_shifted(self._data_sum() + self._cover_noise(), self.shift)

    def query_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigen-decomposition (clipped eigenvalues, eigenvectors) of the PSD-repaired release."""
        return clipped_eigh(self.query_raw(), self.psd_floor)  # query_raw is symmetric

    def query(self) -> np.ndarray:
        """The released matrix: noisy prefix sum + shift·I, PSD-repaired.

        When Gershgorin's discs already put every eigenvalue above the floor the repair is
        the identity and the eigen-decomposition is skipped.
        """
        raw = self.query_raw()
        if not gershgorin_short(raw, self.psd_floor):
            return raw
        return repaired(raw, self.psd_floor)


class StackedTrees:
    """The `MatrixTree`s of several trials as one, for trials played in lockstep: each round's
    update and release of every tree is one numpy call on the stack, and each tree's release
    is bit for bit its own (`MatrixTree.update`, `query_raw`, `query_eigh`, `query`).

    The trees must have noise drawn eagerly at construction and the same cover, horizon, shape,
    σ, noise kind, shift, floor and count (`accepts`). ab8fd16's cover sums the node sums over the
    node axis, which numpy adds from zero in cover order for matrices of dim ≥ 2, as one tree's
    `sum(axis=0)` does (for dim = 1 numpy sums that axis pairwise, so those trees are not
    stacked).
    """

    def __init__(self, trees: list[MatrixTree]) -> None:
        self.trees = trees
        first = trees[0]
        self.horizon, self.height, self.cover_kind = first.horizon, first.height, first.cover_kind
        self.shift, self.floor = first.shift, first.psd_floor
        self.count = first.count
        self.prefix = np.stack([tree._prefix for tree in trees])
        self.cover = np.empty((len(trees), self.horizon + 1, first.dim, first.dim))
        for tree, table in zip(trees, self.cover, strict=True):
            tree._cover_sums = tree._cover_noise_table(table)  # the tree's own, in the stack
        self.node_sums = (None if first._node_sums is None
                          else np.stack([tree._node_sums for tree in trees]))

    @staticmethod
    def accepts(trees: list[MatrixTree]) -> bool:
        """Whether these trees can be stacked (see the class docstring)."""
        first = trees[0]
        if first.cover_kind != "dyadic" and first.dim < 2:
            return False

        def key(tree: MatrixTree) -> tuple:
            return (tree.cover_kind, tree.count, tree.horizon, tree.dim, tree.sigma_node,
                    tree.exact, type(tree.noise), tree.shift, tree.psd_floor)

        return all(tree._noise_table is not None and key(tree) == key(first) for tree in trees)

    def advance(self, rows: np.ndarray | None, leaves: np.ndarray) -> None:
        """Every tree's next leaf: leaves[j] for the j-th trial of the mask `rows` (None: of
        every trial), none for the others. Leaves are snapped as each tree snaps them (`snap`
        is elementwise and draws nothing, so one tree's does it for all)."""
        if self.count >= self.horizon:
            raise ValueError(f"MatrixTree: update {self.count + 1} exceeds horizon "
                             f"{self.horizon}")
        self.count += 1
        if not len(leaves):
            return
        leaves = self.trees[0].snap(leaves)
        self.prefix[slice(None) if rows is None else rows] += leaves
        if self.node_sums is not None:  # the leaf's node and its ancestors, each added once
            leaf = (1 << (self.height - 1)) + self.count - 1
            path = [leaf >> k for k in range(leaf.bit_length())]
            cells = (slice(None), path) if rows is None else np.ix_(np.flatnonzero(rows), path)
            self.node_sums[cells] += leaves[:, None]

    def _data_sum(self) -> np.ndarray:
        if self.node_sums is None:
            return self.prefix
        return self.node_sums[:, query_nodes(self.count, self.height, self.cover_kind)].sum(axis=1)

    def query_raw(self) -> np.ndarray:
        """Every tree's `query_raw`."""
        return symmetrised_shifted(self._data_sum() + self.cover[:, self.count], self.shift)

    def query_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Every tree's `query_eigh` (compiled; numpy's calls where an eigenvalue is not
        finite, to raise or return what they give)."""
        released = _stacked.release_eigh(self._data_sum(), self.cover[:, self.count],
                                         self.shift, self.floor)
        return clipped_eigh(self.query_raw(), self.floor) if released is None else released

    def query(self) -> np.ndarray:
        """Every tree's `query` (the release and its Gershgorin test compiled; numpy's test
        where a disc is too close to the floor for the compiled one to say)."""
        raw, short = _stacked.release(self._data_sum(), self.cover[:, self.count], self.shift,
                                      self.floor)
        if short is None:
            short = gershgorin_short(raw, self.floor)
        if short.any():
            raw[short] = repaired(raw[short], self.floor)
        return raw

    def kernel_state(self) -> tuple:
        """(prefix, node sums, index, cover, count, shift, floor) for compiled rounds that
        advance the stack (`_stacked.private_glm_rounds`); ab8fd16's node sums come with the
        nodes each count sums (`cover_index`), a dyadic tree has None for both."""
        index = (None if self.node_sums is None
                 else cover_index(self.horizon, self.height, self.cover_kind))
        return (self.prefix, self.node_sums, index, self.cover, self.count, self.shift,
                self.floor)

    def close(self) -> None:
        """Hand every tree its count, prefix sum and node sums back."""
        for i, tree in enumerate(self.trees):
            tree.count = self.count
            tree._prefix = self.prefix[i].copy()
            if self.node_sums is not None:
                tree._node_sums = self.node_sums[i].copy()
                tree.cover()  # its memo of the last release's nodes
