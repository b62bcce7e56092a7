"""Vectorised audits of single privacy mechanisms on their worst-case neighbouring inputs.

Each sampler runs the mechanism `runs` times on D0 and on D1 (a pair at the sensitivity bound of
the mechanism's privacy argument) and returns a scalar statistic per run; the statistic is the
likelihood-ratio direction where the mechanism's noise makes one available.
"""

from __future__ import annotations

import numpy as np

from dpbandits.audit.registry import AuditSamples, register_audit
from dpbandits.errors import ConfigError
from dpbandits.privacy.laplace import laplace_noise, laplace_scale, laplace_sum
from dpbandits.privacy.zcdp import gaussian_sigma, rho_from_epsilon

CHUNK = 250_000


def _require_positive_delta(delta: float, mechanism: str) -> None:
    """One error line when an (ε, δ) mechanism is audited at δ ≤ 0."""
    if delta <= 0:
        raise ConfigError(f"delta = {delta!r} is not allowed for {mechanism}; must be > 0")


def _chunks(runs: int) -> list[int]:
    """Split `runs` into chunks so that peak memory stays bounded for matrix-valued outputs."""
    full, rest = divmod(runs, CHUNK)
    return [CHUNK] * full + ([rest] if rest else [])


@register_audit(
    "gaussian",
    "mechanism",
    default_runs=2_000_000,
    description="Gaussian mechanism, σ = Δ/√(2ρ) with ρ from the classic zCDP conversion",
    options=("noise_scale",),
)
def gaussian(
    epsilon: float, delta: float, runs: int, rng: np.random.Generator, *, noise_scale: float = 1.0
) -> AuditSamples:
    """f(D0) = 0, f(D1) = Δ = 1 (ℓ2 sensitivity); output f(D) + N(0, σ²) (Bun–Steinke Prop 1.6)."""
    _require_positive_delta(delta, "the Gaussian mechanism")
    sigma = gaussian_sigma(1.0, rho_from_epsilon(epsilon, delta)) * noise_scale
    return AuditSamples(
        scores0=rng.normal(0.0, sigma, runs),
        scores1=1.0 + rng.normal(0.0, sigma, runs),
        claimed_epsilon=epsilon,
        delta=delta,
        pair="f(D0) = 0, f(D1) = Δ = 1",
        statistic="released value",
        info={"sigma": sigma},
    )


@register_audit(
    "laplace",
    "mechanism",
    default_runs=1_000_000,
    description="Laplace mechanism, b = Δ/ε (central elimination sums, local reports)",
    options=("noise_scale",),
)
def laplace(
    epsilon: float, delta: float, runs: int, rng: np.random.Generator, *, noise_scale: float = 1.0
) -> AuditSamples:
    """f(D0) = 0, f(D1) = Δ = 1; output f(D) + Lap(Δ/ε): pure ε-DP, so δ = 0 is audited."""
    scale = laplace_scale(1.0, epsilon) * noise_scale
    return AuditSamples(
        scores0=laplace_noise(rng, scale, runs),
        scores1=1.0 + laplace_noise(rng, scale, runs),
        claimed_epsilon=epsilon,
        delta=0.0,
        pair="f(D0) = 0, f(D1) = Δ = 1",
        statistic="released value",
        info={"scale": scale},
    )


@register_audit(
    "shuffle-laplace",
    "mechanism",
    default_runs=1_000_000,
    description="n shuffled Laplace(Δ/ε0) reports with ε0 = f⁻¹_{n,δ}(ε) (FMT21 Thm 3.1)",
    options=("noise_scale", "n"),
)
def shuffle_laplace(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    noise_scale: float = 1.0,
    n: int = 1000,
) -> AuditSamples:
    """n clients, one reward differs by Δ = 1; the analyzer sees the shuffled reports' multiset.

    The sum of the reports is a symmetric function of the multiset, hence a valid statistic;
    it is drawn exactly as Δ·1[D1] + Σ of n Laplace(Δ/ε0) (linear spec §6, §8).
    """
    from dpbandits.privacy.amplification import local_epsilon

    _require_positive_delta(delta, "shuffling")
    eps0 = local_epsilon(epsilon, int(n), delta)
    scale = laplace_scale(1.0, eps0) * noise_scale
    counts = np.full(runs, int(n))
    return AuditSamples(
        scores0=laplace_sum(rng, counts, scale),
        scores1=1.0 + laplace_sum(rng, counts, scale),
        claimed_epsilon=epsilon,
        delta=delta,
        pair=f"{n} reports, one reward 0 → Δ = 1",
        statistic="sum of the shuffled reports",
        info={"eps0": eps0, "n": float(n)},
    )


@register_audit(
    "tree",
    "mechanism",
    default_runs=20_000,
    description="binary-tree continual release of symmetric matrices (MatrixTree), T = 4, d = 2",
    needs=("dpbandits.privacy.tree",),
)
def tree(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    accounting: str = "strict",
    noise_scale: float = 1.0,
) -> AuditSamples:
    """Leaf 1 is e1e1ᵀ (D0) or e2e2ᵀ (D1): replace-one Frobenius distance √2 (glm spec §4.8 S3).

    With T a power of two the releases at s = 1, 2, 4 are exactly the noisy sums of leaf 1's
    ancestors, so Σ_s (Q₂₂ − Q₁₁)(s) is the likelihood-ratio statistic. Strict calibrates the
    nodes for Δ = √2; paper for C = 1 as the authors' code (§4.7 item 3).
    """
    from dpbandits.privacy.tree import MatrixTree, tree_sigma

    _require_positive_delta(delta, "the tree")
    horizon, dim = 4, 2
    sensitivity = np.sqrt(2.0) if accounting == "strict" else 1.0
    sigma = tree_sigma(epsilon, delta, horizon, sensitivity) * noise_scale
    leaves = (np.diag([1.0, 0.0]), np.diag([0.0, 1.0]))
    scores = []
    for leaf in leaves:
        out = np.empty(runs)
        for run in range(runs):
            mech = MatrixTree(horizon, dim, sigma, rng, shift=0.0)
            total = 0.0
            for s in range(1, horizon + 1):
                mech.update(leaf if s == 1 else None)
                if s & (s - 1) == 0:
                    q = mech.query_raw()
                    total += q[1, 1] - q[0, 0]
            out[run] = total
        scores.append(out)
    return AuditSamples(
        scores0=scores[0],
        scores1=scores[1],
        claimed_epsilon=epsilon,
        delta=delta,
        pair="leaf 1 = e1e1ᵀ vs e2e2ᵀ (‖Δ‖_F = √2), other leaves 0",
        statistic="Σ over releases s = 1, 2, 4 of Q22 − Q11",
        info={"sigma_node": sigma, "sensitivity_calibrated": float(sensitivity)},
    )


@register_audit(
    "ts-release",
    "mechanism",
    default_runs=10_000,
    description="AdaPrivate-TS batch release s̃ = Σ r x + N(0, σ²I), σ = 1/√(2ρ) (policy code)",
    needs=("dpbandits.policies.adaprivate",),
)
def ts_release(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    accounting: str = "strict",
    noise_scale: float = 1.0,
) -> AuditSamples:
    """AdaPrivate-TS's own observe/release path; one batch, the first reward is 0 (D0) or 1 (D1)."""
    return _batch_release(
        "AdaPrivate-TS", {}, epsilon, delta, runs, rng, accounting, noise_scale
    )


@register_audit(
    "ts-release-amp",
    "mechanism",
    default_runs=10_000,
    description="AdaPrivate-TS-Amp release: Poisson-subsampled (q = 0.3) increment + N(0, σ_amp²I)",
    needs=("dpbandits.policies.adaprivate",),
)
def ts_release_amp(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    accounting: str = "strict",
    noise_scale: float = 1.0,
) -> AuditSamples:
    """As `ts-release` for the Amp variant: the changed reward is kept with probability q."""
    return _batch_release(
        "AdaPrivate-TS-Amp", {"q": 0.3}, epsilon, delta, runs, rng, accounting, noise_scale
    )


def _batch_release(
    name: str,
    params: dict,
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    accounting: str,
    noise_scale: float,
) -> AuditSamples:
    """Drive the policy's `observe` for one batch of B = 4 rounds and read the released b.

    One policy object per input, reset between runs: its noise and subsampling streams carry
    on, so successive runs use fresh, independent draws of the policy's own randomness.
    """
    from dpbandits.instances.base import ProblemInfo
    from dpbandits.policies.base import get_policy_class

    _require_positive_delta(delta, name)
    cls = get_policy_class(name)
    batch, dim = 4, 2
    problem = ProblemInfo(family="linear", d=dim, K=2, horizon=batch, S=1.0)
    x = np.array([1.0, 0.0])
    claimed = (epsilon, delta)
    scores = []
    for first_reward in (0.0, 1.0):
        policy = cls(problem, np.random.default_rng(rng.integers(0, 2**63 - 1)),
                     epsilon=epsilon, delta=delta, accounting=accounting, B=batch, **params)
        policy.sigma *= noise_scale
        out = np.empty(runs)
        for run in range(runs):
            policy.reset()
            for t in range(batch):
                policy.observe(t, x, first_reward if t == 0 else 0.0)
            out[run] = policy.b[0]
            if run == 0:
                policy.finish()
                claimed = policy.ledger.spent()
            policy.ledger.entries.clear()
        scores.append(out)
    return AuditSamples(
        scores0=scores[0],
        scores1=scores[1],
        claimed_epsilon=float(claimed[0]),
        delta=float(claimed[1]),
        pair="one batch of B = 4 rounds, x = e1, first reward 0 vs 1, others 0",
        statistic="first coordinate of the released b",
        info={"sigma": float(policy.sigma)},
    )


@register_audit(
    "vector-sum",
    "mechanism",
    default_runs=20_000,
    description="shuffle vector summation P_vec (vector_sum), n = 4 users, D = 1",
    needs=("dpbandits.privacy.vector_sum",),
)
def vector_sum_audit(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    accounting: str = "strict",
    noise_scale: float = 1.0,
) -> AuditSamples:
    """One user's value +L (D0) or −L (D1), the others 0: replace-one at the norm bound L.

    Strict uses CJMP's constants (c_b = 24·10⁴, log argument 4(D² + 1)/δ); paper the practical
    c_b = 1 with log argument D/δ, which carries no formal guarantee (glm spec §5.5). A
    `noise_scale` < 1 shrinks the blanket: b is multiplied by noise_scale².
    """
    from dpbandits.privacy.vector_sum import CB_PRACTICAL, CB_THEORY, vector_sum, vector_sum_params

    _require_positive_delta(delta, "vector summation")
    n, bound = 4, 1.0
    if accounting == "strict":
        params = vector_sum_params(n, 1, bound, epsilon, delta, c_b=CB_THEORY, log_arg="theory")
    else:
        params = vector_sum_params(n, 1, bound, epsilon, delta, c_b=CB_PRACTICAL,
                                   log_arg="practical")
    if noise_scale != 1.0:
        from dataclasses import replace

        params = replace(params, b=max(1, round(params.b * noise_scale**2)))
    scores = []
    for value in (bound, -bound):
        users = np.zeros((n, 1))
        users[0, 0] = value
        scores.append(np.array([vector_sum(users, params, rng)[0] for _ in range(runs)]))
    return AuditSamples(
        scores0=scores[0],
        scores1=scores[1],
        claimed_epsilon=epsilon,
        delta=delta,
        pair=f"{n} users, one value +L vs −L (L = 1), others 0",
        statistic="analyzer's estimate of the sum",
        info={"g": float(params.g), "b": float(params.b), "noise_sd": params.noise_sd},
    )


@register_audit(
    "dpsgd",
    "mechanism",
    default_runs=5_000,
    description="private GLM fit: one strict noisy GD step at ρ-zCDP; paper = the authors' DP-SGD",
    needs=("dpbandits.privacy.dpsgd",),
)
def dpsgd_audit(
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    *,
    accounting: str = "strict",
    noise_scale: float = 1.0,
) -> AuditSamples:
    """One record (x = e1, y = +Y) vs (x = e1, y = −Y), |Y| huge: the clipped gradient is ±C e1
    at every θ, the replace-one worst case of the gradient sum (glm spec §4.5, §4.8 S4).

    Strict: one step of `noisy_gd_fit` (noisy count + one noisy gradient sum) at ρ = ρ(ε, δ)
    (noise_scale < 1 divides ρ by its square). Paper: the authors' `dpsgd_fit` at
    (ε₀, δ₀) = (ε, δ), calibrated for sensitivity C while a replacement moves the clipped mean
    by 2C/b (§4.7 item 2). The statistic is the released θ̄.
    """
    from dpbandits.links import get_link
    from dpbandits.privacy.dpsgd import dpsgd_fit, noisy_gd_fit

    _require_positive_delta(delta, "DP-SGD")
    if accounting == "paper" and noise_scale != 1.0:
        raise ConfigError("noise_scale is not supported for the paper-mode DP-SGD audit; must be 1")
    link = get_link("linear")
    x = np.ones((1, 1))
    theta0 = np.zeros(1)
    rho = rho_from_epsilon(epsilon, delta) / noise_scale**2
    scores = []
    for label in (1e12, -1e12):
        y = np.array([label])
        out = np.empty(runs)
        for run in range(runs):
            if accounting == "strict":
                fit = noisy_gd_fit(theta0, x, y, rho, link, rng, radius=1e9, steps=1,
                                   burn_in=0)
            else:
                fit = dpsgd_fit(theta0, x, y, epsilon, delta, link, rng)
            out[run] = fit.theta[0]
        scores.append(out)
    return AuditSamples(
        scores0=scores[0],
        scores1=scores[1],
        claimed_epsilon=epsilon,
        delta=delta,
        pair="one record, clipped gradient +C e1 vs −C e1 (linear link, |y| = 1e12)",
        statistic="released θ̄",
        info={"noise_multiplier": float(fit.sigma), "steps": float(fit.steps)},
    )
