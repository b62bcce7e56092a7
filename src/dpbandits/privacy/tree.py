"""Binary-tree (continual counting) mechanism over symmetric matrices (docs/glm.md, "Trees")."""

from __future__ import annotations

import math

import numpy as np

from dpbandits.privacy.exact_noise import Noise
from dpbandits.privacy.zcdp import gaussian_sigma, rho_from_epsilon

# Eager noise tables larger than this many doubles are drawn lazily (first use) instead.
EAGER_MAX_ENTRIES = 1 << 22


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


def psd_repair(matrix: np.ndarray, floor: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrise and clip eigenvalues below at `floor`: (eigenvalues, eigenvectors)."""
    vals, vecs = np.linalg.eigh(0.5 * (matrix + matrix.T))
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
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim = {dim!r} must be >= 1")
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

    def _draw(self, count: int | None) -> np.ndarray:
        """Symmetric node noise for `count` nodes (or one node when None)."""
        shape = (self.dim, self.dim) if count is None else (count, self.dim, self.dim)
        if not self.exact:
            g = self.rng.normal(0.0, self.sigma_node, size=shape)
            return 0.5 * (g + np.swapaxes(g, -1, -2))
        lead = () if count is None else (count,)
        rows, cols = np.triu_indices(self.dim, 1)
        out = np.zeros(shape)
        diag = np.arange(self.dim)
        out[..., diag, diag] = self.noise.gaussian(self.sigma_node, (*lead, self.dim))
        if rows.size:
            upper = self.noise.gaussian(self.sigma_node / math.sqrt(2.0), (*lead, rows.size))
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
            self._prefix += self.snap(matrix)

    def update_rank_one(self, x: np.ndarray, weight: float) -> None:
        """Append the leaf weight·x xᵀ."""
        self.update(weight * np.outer(x, x))

    def cover(self) -> list[int]:
        """Nodes whose sums and noises make up the current release."""
        return cover_nodes(self.count, self.height)

    def _cover_noise(self) -> np.ndarray:
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
        out = self._prefix + self._cover_noise()
        out = 0.5 * (out + out.T)
        out[np.diag_indices(self.dim)] += self.shift
        return out

    def query_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigen-decomposition (clipped eigenvalues, eigenvectors) of the PSD-repaired release."""
        return psd_repair(self.query_raw(), self.psd_floor)

    def query(self) -> np.ndarray:
        """The released matrix: noisy prefix sum + shift·I, PSD-repaired.

        When Gershgorin's discs already put every eigenvalue above the floor the repair is
        the identity and the eigen-decomposition is skipped.
        """
        raw = self.query_raw()
        diag = np.diag(raw)
        radius = np.abs(raw).sum(axis=1) - np.abs(diag)
        if np.all(diag - radius >= self.psd_floor):
            return raw
        vals, vecs = psd_repair(raw, self.psd_floor)
        return (vecs * vals) @ vecs.T
