"""Episode-based zCDP baselines after Azize & Basu (SaTML 2024); the episode rules are ours.

zCDP-Episodic releases a noisy θ̂ of the last episode only (forgetting); RarelySwitching-zCDP and
AdaC-OFUL-zCDP release noisy increments of b at log-det switches and freeze the policy between
switches. Every reward enters one release, so the total is ρ by parallel composition.
Rules and ledgers: docs/ts.md, "zCDP-Episodic", "RarelySwitching-zCDP and AdaC-OFUL-zCDP".

Between switches the frozen policies skip the log-det test while a rigorous upper bound on
ln det A_t − ln det A_τ (matrix determinant lemma, Σ ln(1 + ‖x_s‖²_{A_τ⁻¹}), less a margin far
above the rounding of either side) is below ln(1 + C); the switch times are those of testing
every round. On pre-drawn tables the rounds between switches are compiled; zCDP-Episodic's
compiled rounds also make the switches whose noise scale is known and whose noise row is drawn
(`NoiseRows`); the policy then makes each of those releases through `privacy.release.release`
with the row the loop used (the same value, checked), which writes its ledger entry.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpbandits.audit.spec import PolicyAudit, reward_audit
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import (
    add_outer,
    add_scaled,
    cho_solve,
    cho_solve_into,
    cholesky_into,
    dot,
    lambda_min,
    log_det,
    smallest_eigenvalue,
    solve_lower_into,
)
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import (
    ALPHA,
    CONVERSION,
    LinearPolicy,
    NoiseRows,
    ZCDPMixin,
    ucb_index,
)
from dpbandits.policies.tables import pull
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.exact_noise import Noise
from dpbandits.privacy.grid import noisy_into
from dpbandits.privacy.release import recording_active, release
from dpbandits.privacy.zcdp import gaussian_sigma

MEMO_SLOTS = 512  # episode estimates remembered (emptied when half full)
DELTA, SIGMA, SCALE, GRID, ROWS = range(5)  # an estimate's values; ROWS: its noise rows' scale


class EpisodeMemo(NamedTuple):
    """zCDP-Episodic's episode estimates by the episode's statistics (A^(ℓ), b^(ℓ)): open
    addressing on a hash of their bits. Per slot: the key, θ̂ = (A^(ℓ))⁻¹b^(ℓ), and Δ, σ (NaN
    until the policy calibrates it), the noise's scale and grid, and the rows' scale s."""

    keys: np.ndarray  # (slots, d·d + d)
    hashes: np.ndarray  # (slots,) int64
    filled: np.ndarray  # (slots,) int64, 1 where a slot holds an entry
    theta: np.ndarray  # (slots, d)
    values: np.ndarray  # (slots, 5): Δ, σ, scale, grid, rows' scale
    count: np.ndarray  # (1,) int64: entries held
    last: np.ndarray  # (5,): the values of the last calibration (σ depends on Δ alone)


def episode_memo(d: int) -> EpisodeMemo:
    """An empty memo for d-dimensional episodes."""
    return EpisodeMemo(np.zeros((MEMO_SLOTS, d * d + d)), np.zeros(MEMO_SLOTS, dtype=np.int64),
                       np.zeros(MEMO_SLOTS, dtype=np.int64), np.zeros((MEMO_SLOTS, d)),
                       np.zeros((MEMO_SLOTS, 5)), np.zeros(1, dtype=np.int64),
                       np.full(5, np.nan))


class RowsNoise:
    """The policy's `Noise` drawing its Gaussian rows from `NoiseRows` (for `release`): a
    release at σ takes the next row of the rows' integer scale σ_Z of σ (exact: snap(v, γ) + γ·z,
    CKS 2020, Thm 4) or of standard normals (continuous: v + σ·z), the draws the rows hold."""

    def __init__(self, noise: Noise, rows: NoiseRows) -> None:
        self.noise, self.rows = noise, rows
        self.exact = noise.exact
        self.last: tuple[float, float, float, int] = (math.nan, 0.0, 0.0, 0)  # σ, γ, σ', σ_Z

    def scales(self, sigma: float) -> tuple[float, float, float, int]:
        """(σ, γ, σ' = γ·σ_Z, σ_Z) of σ, the last one remembered (one σ repeats in a run)."""
        if sigma != self.last[0]:
            if self.exact:
                s, gamma = self.noise.integer_sigma(sigma)  # type: ignore[attr-defined]
                self.last = (sigma, gamma, self.noise.effective_sigma(sigma), s)
            else:
                self.last = (sigma, 0.0, float(sigma), 0)
        return self.last

    def grid(self, sigma: float) -> float:
        """The grid γ of σ (`Noise.grid`)."""
        return self.scales(sigma)[1]

    def effective_sigma(self, sigma: float) -> float:
        """The σ' the rows are drawn at (`Noise.effective_sigma`)."""
        return self.scales(sigma)[2]

    def release(self, value: np.ndarray, sigma: float) -> np.ndarray:
        """snap(value, γ) + γ·z, z the next row of integer scale σ_Z = ⌈σ/γ⌉ (`noisy_into`)."""
        _, gamma, _, s = self.scales(sigma)
        out = np.array(value, dtype=float)
        noisy_into(out, gamma, gamma, self.rows.take(s), out)
        return out

    def gaussian(self, sigma: float, size: tuple[int, ...]) -> np.ndarray:
        """σ·z, z the next row of standard normals."""
        if tuple(size) != (self.rows.d,):
            raise ConfigError(f"size = {size!r} is not allowed; must be ({self.rows.d},)")
        return sigma * self.rows.take(0)


@jit
def episode_hash(A: np.ndarray, b: np.ndarray) -> int:
    """FNV-1a of the bits of A (row by row) and b."""
    n = A.shape[0]
    h = np.int64(1469598103934665603)
    prime = np.int64(1099511628211)
    bits = A.reshape(n * n).view(np.int64)
    for k in range(bits.shape[0]):
        h = (h ^ bits[k]) * prime
    bits = b.view(np.int64)
    for k in range(bits.shape[0]):
        h = (h ^ bits[k]) * prime
    return h


@jit
def same_key(key: np.ndarray, A: np.ndarray, b: np.ndarray) -> bool:
    """Whether a slot's key holds the bits of (A, b)."""
    n = A.shape[0]
    stored = key.view(np.int64)
    bits = A.reshape(n * n).view(np.int64)
    for k in range(n * n):
        if stored[k] != bits[k]:
            return False
    bits = b.view(np.int64)
    for k in range(n):
        if stored[n * n + k] != bits[k]:
            return False
    return True


@jit
def episode_entry(memo: EpisodeMemo, A: np.ndarray, b: np.ndarray, work: np.ndarray,
                  diag: np.ndarray, off: np.ndarray) -> int:
    """The slot of the episode (A^(ℓ), b^(ℓ)): found, or made with θ̂ = (A^(ℓ))⁻¹b^(ℓ) and
    Δ_θ = 1/λ_min(A^(ℓ)) after emptying the memo when it is half full; its σ is the last
    calibration's where that was of the same Δ_θ, else unknown (NaN)."""
    slots = memo.hashes.shape[0]
    h = episode_hash(A, b)
    i = h & (slots - 1)
    while memo.filled[i]:
        if memo.hashes[i] == h and same_key(memo.keys[i], A, b):
            return i
        i = (i + 1) & (slots - 1)
    if memo.count[0] >= slots // 2:
        for k in range(slots):
            memo.filled[k] = 0
        memo.count[0] = 0
        i = h & (slots - 1)
    n = A.shape[0]
    key = memo.keys[i]
    for j in range(n):
        for k in range(n):
            key[j * n + k] = A[j, k]
        key[n * n + j] = b[j]
    memo.hashes[i] = h
    memo.filled[i] = 1
    memo.count[0] += 1
    if not cholesky_into(A, work):
        raise np.linalg.LinAlgError("Cholesky failed: the matrix is not positive definite")
    cho_solve_into(work, b, diag, memo.theta[i])
    values = memo.values[i]
    values[DELTA] = 1.0 / smallest_eigenvalue(A, work, diag, off)
    for k in range(SIGMA, ROWS + 1):
        values[k] = memo.last[k] if values[DELTA] == memo.last[DELTA] else np.nan
    return i


@jit
def episodic_arm(factor: np.ndarray, theta: np.ndarray, alpha: float, arms: np.ndarray) -> int:
    """zCDP-Episodic's action: argmax_x xᵀθ̃ + α‖x‖_{A_t⁻¹} (θ̃ the last episode's release)."""
    return ucb_index(arms, theta, factor, alpha)


@jit
def episodic_update(A: np.ndarray, A_ep: np.ndarray, b_ep: np.ndarray, x: np.ndarray,
                    r: float) -> None:
    """A ← A + x xᵀ; the episode's A^(ℓ) ← A^(ℓ) + x xᵀ, b^(ℓ) ← b^(ℓ) + r·x."""
    add_outer(A, x, 1.0)
    add_outer(A_ep, x, 1.0)
    add_scaled(b_ep, x, r)


@jit
def start_episode(A_ep: np.ndarray, b_ep: np.ndarray, A_start: np.ndarray,
                  b_start: np.ndarray) -> None:
    """A new episode: A^(ℓ) = λI, b^(ℓ) = λθ₀ (its data forgotten)."""
    for i in range(b_ep.shape[0]):
        for j in range(b_ep.shape[0]):
            A_ep[i, j] = A_start[i, j]
        b_ep[i] = b_start[i]


@jit
def episode_release(memo: EpisodeMemo, slot: int, z: np.ndarray, theta: np.ndarray) -> None:
    """θ̃ = θ̂^(ℓ) + noise of the slot's scale from the noise row z (`noisy_into`)."""
    values = memo.values[slot]
    noisy_into(memo.theta[slot], values[SCALE], values[GRID], z, theta)


@jit
def episodic_rounds(A: np.ndarray, factor: np.ndarray, A_ep: np.ndarray, b_ep: np.ndarray,
                    A_start: np.ndarray, b_start: np.ndarray, theta: np.ndarray, alpha: float,
                    log_c: float, in_episode: int, log_det_tau: float, memo: EpisodeMemo,
                    work: np.ndarray, diag: np.ndarray, off: np.ndarray, rows: np.ndarray,
                    cursor: np.ndarray, rows_scale: float, records: np.ndarray,
                    tables: OutcomeTables, t: int) -> tuple[int, int, float, int, bool]:
    """Rounds t, t + 1, … of zCDP-Episodic on pre-drawn tables. A switch is due before a round
    when the episode has data and ln det A_t − ln det A_τ > ln c; it is made here when the
    episode's σ is known and the noise rows have its scale and one left, each filling a row
    (round, rewards, 1/λ_min, σ, θ̂^(ℓ)) of `records`; otherwise the call returns before the
    round, for the policy's `switch`. (next round, in_episode, ln det A_τ, switches made,
    switch due)."""
    made = 0
    for u in range(t, tables.arms.shape[0]):
        if not cholesky_into(A, factor):
            raise np.linalg.LinAlgError("Cholesky failed: the matrix is not positive definite")
        if in_episode > 0:
            current = log_det(factor)
            if current - log_det_tau > log_c:
                slot = episode_entry(memo, A_ep, b_ep, work, diag, off)
                values = memo.values[slot]
                if (np.isnan(values[SIGMA]) or values[ROWS] != rows_scale
                        or cursor[0] >= rows.shape[0]):
                    return u, in_episode, log_det_tau, made, True
                episode_release(memo, slot, rows[cursor[0]], theta)
                cursor[0] += 1
                records[made, 0] = u
                records[made, 1] = in_episode
                records[made, 2] = values[DELTA]
                records[made, 3] = values[SIGMA]
                records[made, 4:] = memo.theta[slot]
                made += 1
                log_det_tau = current
                in_episode = 0
                start_episode(A_ep, b_ep, A_start, b_start)
        arms = tables.arms[u]
        i = episodic_arm(factor, theta, alpha, arms)
        episodic_update(A, A_ep, b_ep, arms[i], clip_reward(pull(tables, u, i)))
        in_episode += 1
    return tables.arms.shape[0], in_episode, log_det_tau, made, False


@jit
def frozen_arm(factor_tau: np.ndarray, theta: np.ndarray, width: float,
               arms: np.ndarray) -> int:
    """RarelySwitching-zCDP / AdaC-OFUL-zCDP's action: argmax_x xᵀθ̃ + w‖x‖_{A_τ⁻¹}, frozen
    since the last switch τ."""
    return ucb_index(arms, theta, factor_tau, width)


@jit
def growth_margin(d: int, lam: float, mass: float, rounds: int) -> float:
    """Bound on the rounding of the growth bound and of ln det A_t − ln det A_τ as computed: a
    few thousand times d²(d + n)·u·κ, κ ≤ tr A/λ = (dλ + Σ‖x‖²)/λ, n updates since τ."""
    kappa = (d * lam + mass) / lam
    return 1e-6 + 2.0**-40 * (d * d) * (d + rounds) * kappa


@jit
def switching_update(A: np.ndarray, s: np.ndarray, factor_tau: np.ndarray, work: np.ndarray,
                     x: np.ndarray, r: float, stats: np.ndarray) -> None:
    """A ← A + x xᵀ, s ← s + r·x; the growth bound stats[0] += ln(1 + ‖L_τ⁻¹x‖²) ≥ the growth
    of ln det A (matrix determinant lemma) and the mass stats[1] += ‖x‖²."""
    add_outer(A, x, 1.0)
    add_scaled(s, x, r)
    solve_lower_into(factor_tau, x, work)
    stats[0] += math.log1p(dot(work, work))
    stats[1] += dot(x, x)


@jit
def switch_test(A: np.ndarray, factor: np.ndarray, growth: float, margin: float,
                in_episode: int, log_det_tau: float, log_c: float) -> float:
    """ln det A_t when a switch is due before round t (ln det A_t − ln det A_τ > ln(1 + C),
    tested once the growth bound is within the margin of ln(1 + C); the factor of A_t is then
    in `factor`), NaN otherwise."""
    if in_episode > 0 and growth > log_c - margin:
        if not cholesky_into(A, factor):
            raise np.linalg.LinAlgError("Cholesky failed: the matrix is not positive definite")
        current = log_det(factor)
        if current - log_det_tau > log_c:
            return current
    return np.nan


@jit
def switching_rounds(A: np.ndarray, s: np.ndarray, factor_tau: np.ndarray, theta: np.ndarray,
                     width: float, work: np.ndarray, factor: np.ndarray, stats: np.ndarray,
                     in_episode: int, log_det_tau: float, log_c: float, lam: float,
                     tables: OutcomeTables, t: int) -> tuple[int, int]:
    """Rounds t, t + 1, … of a frozen switching policy on pre-drawn tables up to the horizon
    or a round before which a switch is due: (that round, in_episode)."""
    d = A.shape[0]
    for u in range(t, tables.arms.shape[0]):
        margin = growth_margin(d, lam, stats[1], in_episode)
        if not np.isnan(switch_test(A, factor, stats[0], margin, in_episode, log_det_tau,
                                    log_c)):
            return u, in_episode
        arms = tables.arms[u]
        i = frozen_arm(factor_tau, theta, width, arms)
        switching_update(A, s, factor_tau, work, arms[i], clip_reward(pull(tables, u, i)),
                         stats)
        in_episode += 1
    return tables.arms.shape[0], in_episode


class _EpisodeBase(ZCDPMixin, LinearPolicy):
    private = True
    # |r − r'| ≤ 1 for clipped rewards: the reward's share of every sensitivity (docs/ts.md)
    REWARD_SENSITIVITY: ClassVar[float] = 1.0
    release_name: ClassVar[str] = ""

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.alpha = float(self.params["alpha"])
        self.rho = self.zcdp_setup()
        self.ready = True
        self.reset()

    def setup(self) -> None:
        if not getattr(self, "ready", False):
            return
        self.log_det_tau = self.d * math.log(self.lam)
        self.tau = 0
        self.switches: list[int] = []
        self.release_rewards: list[int] = []
        self.in_episode = 0
        self.factor_work = np.empty((self.d, self.d))  # L_t, when a test computed it
        self.episode_setup()

    def episode_setup(self) -> None:
        """Subclass state at the start of a run."""

    def switch_if_due(self, t: int) -> bool:
        """Round t's switch test of `choose`, and the switch if it passes."""
        raise NotImplementedError

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        """Rounds t, t + 1, … in compiled code up to the horizon or the round before which a
        switch is due that the policy makes: that round."""
        raise NotImplementedError

    def play_table(self, tables: OutcomeTables) -> None:
        """The rounds between switches by `compiled_rounds`, each switch left to the policy
        made here as in `choose`."""
        t, horizon = 0, len(tables.chosen)
        while t < horizon:
            t = self.compiled_rounds(tables, t)
            if t < horizon and not self.switch_if_due(t):
                raise RuntimeError(f"round {t + 1}: the compiled and the Python switch tests "
                                   "disagree")

    def events(self) -> dict[str, np.ndarray]:
        return {"switch": np.asarray(self.switches, dtype=np.int64),
                "release_rewards": np.asarray(self.release_rewards, dtype=np.int64)}

    def diagnostics(self) -> dict[str, float]:
        return {"rho": self.rho, "n_switches": float(len(self.switches))}


class ZCDPEpisodic(_EpisodeBase):
    """θ̂-perturbation with forgetting; new episode when ln det A_t − ln det A_τ > ln c.

    At a switch θ̃ = (A^(ℓ))⁻¹b^(ℓ) + N(0, σ_θ²I) from the ended episode's data only, with
    Δ_θ = 1/λ_min(A^(ℓ)) and σ_θ = Δ_θ/√(2ρ); act with xᵀθ̃ + α‖x‖_{A_t⁻¹}.
    """

    release_name = "theta-hat of one episode"

    name = "zCDP-Episodic"
    plays_tables = True
    decision_rule = staticmethod(episodic_arm)
    update_rule = staticmethod(episodic_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("c_trigger", 2.0, "new episode when ln det A_t − ln det A_τ > ln c", ge=1),
        CONVERSION,
    )

    def episode_setup(self) -> None:
        d = self.d
        self.log_c = math.log(float(self.params["c_trigger"]))
        self.theta_tilde = self.theta0.copy()
        self.A_start = self.lam * np.eye(d)
        self.b_start = self.lam * self.theta0
        self.A_ep = self.A_start.copy()
        self.b_ep = self.b_start.copy()
        self.sigmas: list[float] = []
        self.sensitivities: list[float] = []
        self.memo = episode_memo(d)
        self.eigen_work = (np.empty((d, d)), np.empty(d), np.empty(d))
        self.noise_rows = NoiseRows(self.noise, d)
        self.rows_noise = RowsNoise(self.noise, self.noise_rows)

    def choose(self, t: int, arms: np.ndarray) -> int:
        self.switch_if_due(t)
        return episodic_arm(self.factor(), self.theta_tilde, self.alpha, arms)

    def switch_if_due(self, t: int) -> bool:
        """A new episode when ln det A_t − ln det A_τ > ln c (and the episode has data)."""
        if self.in_episode > 0:
            current = log_det(self.factor())
            if current - self.log_det_tau > self.log_c:
                self.switch(t)
                self.log_det_tau = current
                return True
        return False

    def episode_estimate(self) -> int:
        """The memo slot of the ended episode: θ̂^(ℓ), Δ_θ, and σ_θ calibrated here the first
        time (with its noise's scale and grid and the scale of its noise rows)."""
        slot = episode_entry(self.memo, self.A_ep, self.b_ep, *self.eigen_work)
        values = self.memo.values[slot]
        if np.isnan(values[SIGMA]):
            sensitivity = self.REWARD_SENSITIVITY * float(values[DELTA])
            sigma = self.calibrate_release(gaussian_sigma(sensitivity, self.rho), sensitivity)
            if not self.noise.exact:
                scale, grid, rows = sigma, 0.0, 0
            elif sigma == 0:  # no noise at all (limit checks)
                scale, grid, rows = 0.0, 0.0, 0
            else:
                rows, grid = self.noise.integer_sigma(sigma)
                scale = grid
            values[SIGMA], values[SCALE], values[GRID], values[ROWS] = sigma, scale, grid, rows
            self.memo.last[:] = values
        return slot

    def switch(self, t: int) -> None:
        """Release the ended episode's noisy estimate and forget its data."""
        slot = self.episode_estimate()
        values = self.memo.values[slot]
        sensitivity = self.REWARD_SENSITIVITY * float(values[DELTA])
        self.theta_tilde = self.release_episode(t, self.memo.theta[slot], sensitivity,
                                                float(values[SIGMA]))
        self.record_switch(t, self.in_episode, sensitivity, float(values[SIGMA]))
        self.in_episode = 0
        start_episode(self.A_ep, self.b_ep, self.A_start, self.b_start)

    def release_episode(self, t: int, theta_hat: np.ndarray, sensitivity: float,
                        sigma: float) -> np.ndarray:
        """θ̃ = θ̂^(ℓ) + N(0, σ_θ²I) at round t, Δ_θ = 1/λ_min(A^(ℓ)) (docs/ts.md,
        "zCDP-Episodic"), its noise the next row of `noise_rows`; the ledger prices it."""
        return release(self.rows_noise, self.ledger, theta_hat, name=self.release_name,
                       mechanism="gaussian", sensitivity=sensitivity, scale=sigma,
                       partition=f"episode {len(self.switches) + 1}",
                       note=f"released at round {t + 1}; sensitivity 1/lambda_min(A_episode), "
                            "sigma = sensitivity/sqrt(2 rho); the episode's data are then "
                            "forgotten")

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        """The compiled rounds; each switch they made is then released by `release_episode`
        with the noise row the loop used (the same θ̃, checked). Under `recording()` every
        switch is left to `switch`, so that a replayed value is the one acted on."""
        rows = self.noise_rows
        start = int(rows.cursor[0])
        scale = math.nan if recording_active() else rows.scale
        records = np.empty((len(tables.chosen) - t, 4 + self.d))
        t, self.in_episode, self.log_det_tau, made, _ = episodic_rounds(
            self.A, self.factor_work, self.A_ep, self.b_ep, self.A_start, self.b_start,
            self.theta_tilde, self.alpha, self.log_c, self.in_episode, self.log_det_tau,
            self.memo, *self.eigen_work, rows.rows, rows.cursor, scale, records, tables, t)
        rows.cursor[0] = start  # the rows the loop used, taken again by the releases
        released = self.theta_tilde
        for row in records[:made]:
            sensitivity, sigma = self.REWARD_SENSITIVITY * float(row[2]), float(row[3])
            released = self.release_episode(int(row[0]), row[4:], sensitivity, sigma)
            self.record_switch(int(row[0]), int(row[1]), sensitivity, sigma)
        if not np.array_equal(released, self.theta_tilde):
            raise RuntimeError(f"round {t}: the compiled rounds acted on another estimate "
                               "than the one released")
        return t

    def record_switch(self, t: int, rewards: int, sensitivity: float, sigma: float) -> None:
        """The records of the release at round t (`switch`, or the compiled rounds' own) of an
        episode of `rewards` rewards."""
        self.sensitivities.append(sensitivity)
        self.switches.append(t)
        self.release_rewards.append(rewards)
        self.sigmas.append(sigma)
        self.tau = t

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        episodic_update(self.A, self.A_ep, self.b_ep, x, r)
        self.in_episode += 1

    def events(self) -> dict[str, np.ndarray]:
        out = super().events()
        out["sensitivity"] = np.asarray(self.sensitivities, dtype=float)
        return out

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        if self.sigmas:
            out.update(sigma_first=self.sigmas[0], sigma_last=self.sigmas[-1])
        return out


class _SwitchingIncrement(_EpisodeBase):
    """Noisy b increments at switches ln det A_t − ln det A_τ > ln(1 + C); frozen policy."""

    release_name = "b episode increment"

    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("C", 1.0, "switch when ln det A_t − ln det A_τ > ln(1 + C)", gt=0),
        CONVERSION,
    )

    def episode_setup(self) -> None:
        self.log_c = math.log1p(float(self.params["C"]))
        self.sigma = self.calibrate_release(gaussian_sigma(self.REWARD_SENSITIVITY, self.rho),
                                            self.REWARD_SENSITIVITY)
        self.s = np.zeros(self.d)
        self.factor_tau = self.factor()
        self.theta_tilde = cho_solve(self.factor_tau, self.b)
        self.width_scale = self.alpha * self.confidence(0)
        # [growth bound ≥ ln det A_t − ln det A_τ (matrix determinant lemma), Σ‖x‖²]
        self.stats = np.zeros(2)
        self.work = np.empty(self.d)

    @property
    def growth_bound(self) -> float:
        return float(self.stats[0])

    @property
    def mass(self) -> float:
        """Σ ‖x‖² since the start, so tr A = dλ + mass."""
        return float(self.stats[1])

    def confidence(self, n_tau: int) -> float:
        """Multiplier of ‖x‖_{A_τ⁻¹} (before α)."""
        return 1.0

    def margin(self) -> float:
        """The rounding bound `growth_margin` of the current statistics."""
        return growth_margin(self.d, self.lam, self.mass, self.in_episode)

    def choose(self, t: int, arms: np.ndarray) -> int:
        self.switch_if_due(t)
        return frozen_arm(self.factor_tau, self.theta_tilde, self.width_scale, arms)

    def switch_if_due(self, t: int) -> bool:
        """Switch when ln det A_t − ln det A_τ > ln(1 + C) (`switch_test`)."""
        current = switch_test(self.A, self.factor_work, self.growth_bound, self.margin(),
                              self.in_episode, self.log_det_tau, self.log_c)
        if np.isnan(current):
            return False
        self.switch(t, self.factor_work.copy())
        self.log_det_tau = current
        return True

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        t, self.in_episode = switching_rounds(
            self.A, self.s, self.factor_tau, self.theta_tilde, self.width_scale, self.work,
            self.factor_work, self.stats, self.in_episode, self.log_det_tau, self.log_c,
            self.lam, tables, t)
        return t

    def switch(self, t: int, factor: np.ndarray) -> None:
        """b ← b + Σ_{episode} r x + N(0, σ²I), Δ = 1 (‖r·x‖ ≤ 1, docs/ts.md); A_τ ← A_t;
        θ̃ = A_τ⁻¹b."""
        self.b = self.b + release(
            self.noise, self.ledger, self.s, name=self.release_name, mechanism="gaussian",
            sensitivity=self.REWARD_SENSITIVITY, scale=self.sigma,
            partition=f"episode {len(self.switches) + 1}",
            note=f"rounds {self.tau + 1}-{t}; each reward is in one increment")
        self.switches.append(t)
        self.release_rewards.append(self.in_episode)
        self.tau = t
        self.in_episode = 0
        self.s = np.zeros(self.d)
        self.factor_tau = factor
        self.theta_tilde = cho_solve(factor, self.b)
        self.width_scale = self.alpha * self.confidence(t)
        self.stats[0] = 0.0

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        switching_update(self.A, self.s, self.factor_tau, self.work, x, r, self.stats)
        self.in_episode += 1

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        out["sigma"] = self.sigma
        return out


class RarelySwitchingZCDP(_SwitchingIncrement):
    """RarelySwitching-zCDP: frozen score xᵀθ̃ + α‖x‖_{A_τ⁻¹}."""

    name = "RarelySwitching-zCDP"
    plays_tables = True
    decision_rule = staticmethod(frozen_arm)
    update_rule = staticmethod(switching_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)


class AdaCOFULZCDP(_SwitchingIncrement):
    """AdaC-OFUL-zCDP: width α(β_OFUL + β_priv) at the last switch."""

    name = "AdaC-OFUL-zCDP"
    plays_tables = True
    decision_rule = staticmethod(frozen_arm)
    update_rule = staticmethod(switching_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *_SwitchingIncrement.parameters,
        number("R_sigma", 0.5, "sub-Gaussian scale R of the rewards in β_OFUL", ge=0),
        number("delta_r", 0.05, "failure probability δ_r of the confidence widths", gt=0, le=1),
        number("S_bound", 1.0, "bound S on ‖θ*‖ in β_OFUL", ge=0),
    )

    def confidence(self, n_tau: int) -> float:
        """β_OFUL = R√(2 ln(1/δ_r) + d ln(1 + n/(dλ))) + √λ S; β_priv = σ√ℓ(√d + √(2 ln(1/δ_r)))
        /√λ_min(A_τ)."""
        log_term = 2.0 * math.log(1.0 / float(self.params["delta_r"]))
        beta_oful = (float(self.params["R_sigma"])
                     * math.sqrt(log_term + self.d * math.log1p(n_tau / (self.d * self.lam)))
                     + math.sqrt(self.lam) * float(self.params["S_bound"]))
        releases = len(self.switches)
        beta_priv = 0.0
        if releases:
            beta_priv = (self.sigma * math.sqrt(releases)
                         * (math.sqrt(self.d) + math.sqrt(log_term))
                         / math.sqrt(lambda_min(self.A)))
        return beta_oful + beta_priv
