"""Private GLM fits: the authors' DP-SGD and the strict noisy projected GD.

docs/glm.md, "DP-SGD and the RDP accountant" (paper mode) and "Strict fits" (strict mode).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits.links import Link, compiled_mean, compiled_mean_ufunc
from dpbandits.privacy import _sgd
from dpbandits.privacy.accountant import dpsgd_epsilon, noise_multiplier
from dpbandits.privacy.exact_noise import Noise
from dpbandits.privacy.vector_sum import compiled_rows

CLIP = 0.2
LAMBDA_FIT = 1e-5
LR0 = 10.0
BATCH_MAX = 2048
BURN_IN = 10
STRICT_STEPS = 12
STRICT_BURN_IN = 5


@dataclass
class FitResult:
    """A private fit and the numbers its privacy rests on."""

    theta: np.ndarray
    n: int
    batch: int
    epochs: int
    burn_in: int
    steps: int
    sigma: float  # noise multiplier (std / sensitivity of the clipped sum, as calibrated)
    noise_std: float  # std of the Gaussian noise actually added (mean gradient or sum, see kind)
    kind: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None


def clipped_gradients(theta: np.ndarray, X: np.ndarray, y: np.ndarray, link: Link,
                      clip: float) -> np.ndarray:
    """Per-sample canonical gradients (μ(xᵀθ) − y)x, each scaled down to norm ≤ clip."""
    g = (link.mean(X @ theta) - y)[:, None] * X
    norms = np.sqrt(np.einsum("ij,ij->i", g, g))
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    return g * scale[:, None]


def starting_epochs(eps0: float) -> int:
    """E₀ from the per-fit ε₀, as in the authors' code."""
    for bound, epochs in ((0.1, 15), (0.3, 25), (1.0, 50), (2.0, 75)):
        if eps0 <= bound:
            return epochs
    return 100


def select_epochs(eps0: float, delta0: float, n: int, batch: int, d: int, clip: float = CLIP,
                  *, engine: str = "fast") -> tuple[int, int, float]:
    """The authors' epoch search: (epochs E, burn-in B, noise multiplier σ).

    Among the candidate epoch counts, maximise steps/(σ_E C/b)²; scores within 1e-6
    (relative) of the best count as ties, resolved towards the smallest E.
    """
    spe = max(1, n // batch)
    e0 = starting_epochs(eps0)
    sigma0 = noise_multiplier(eps0, delta0, e0 * spe, n, batch, engine=engine)
    ns0 = sigma0 * clip / batch
    floor = max(2, math.ceil(math.log(d + 1)))
    if ns0 > 8:
        factors: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 1.5)
    elif ns0 > 5:
        factors = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
    else:
        factors = (0.5, 0.75, 1.0, 1.25, 1.5)
        floor = max(5, floor)
    candidates = sorted({max(floor, round(e0 * f)) for f in factors} | {e0})
    sigmas: dict[int, float] = {}
    scores: dict[int, float] = {}
    for e in candidates:
        sigma = sigma0 if e == e0 else noise_multiplier(eps0, delta0, e * spe, n, batch,
                                                        engine=engine)
        sigmas[e] = sigma
        scores[e] = e * spe / (sigma * clip / batch) ** 2
    best = max(scores.values())
    epochs = min(e for e in candidates if scores[e] >= best * (1.0 - 1e-6))
    burn_in = BURN_IN if epochs == e0 else max(1, round(BURN_IN * epochs / e0))
    return epochs, burn_in, sigmas[epochs]


def dpsgd_fit(theta0: np.ndarray, X: np.ndarray, y: np.ndarray, eps0: float, delta0: float,
              link: Link, rng: np.random.Generator, *, clip: float = CLIP,
              lam: float = LAMBDA_FIT, lr0: float = LR0, batch_max: int = BATCH_MAX,
              noiseless: bool = False, engine: str = "fast") -> FitResult:
    """DP-SGD as the authors ran it: shuffled fixed-size minibatches, drop-last.

    Each step adds N(0, (σC/b)²) to the mean clipped gradient; returns the average of the
    epoch-end iterates after burn-in. `noiseless` keeps every random draw but scales the
    noise to zero (a sanity switch, no privacy).
    """
    theta = np.array(theta0, dtype=float)
    n, d = X.shape
    if n == 0:
        return FitResult(theta, 0, 0, 0, 0, 0, 0.0, 0.0, "dpsgd", eps0, delta0)
    batch = min(batch_max, n)
    spe = max(1, n // batch)
    epochs, burn_in, sigma = select_epochs(eps0, delta0, n, batch, d, clip, engine=engine)
    noise_std = 0.0 if noiseless else sigma * clip / batch
    out = sgd_passes(theta, X, y, link, rng, range(0, spe * batch, batch), batch, epochs,
                     burn_in, clip=clip, lam=lam, lr0=lr0, noise_std=noise_std)
    return FitResult(out, n, batch, epochs, burn_in, epochs * spe, sigma, noise_std, "dpsgd",
                     eps0, delta0)


def sgd_passes(theta: np.ndarray, X: np.ndarray, y: np.ndarray, link: Link,
               rng: np.random.Generator, starts: range, batch: int, epochs: int, burn_in: int,
               *, clip: float, lam: float, lr0: float, noise_std: float) -> np.ndarray:
    """`epochs` shuffled passes of minibatch steps θ ← θ − (lr0/√k)(ḡ + 2λθ + N(0, noise_std²)),
    one minibatch per start in `starts`; the average of the epoch-end iterates after burn-in.

    Each epoch shuffles, then draws its steps' noise in one call (the values one call per step
    draws); `_sgd.sgd_steps` makes the steps where it computes them as numpy does (float64 θ,
    forward starts), numpy the rest."""
    d = X.shape[1]
    order = np.arange(X.shape[0])
    compiled = compiled_steps(X, y, link, starts, batch)
    mean = compiled_mean_ufunc(link)
    total = np.zeros(d)
    kept = 0
    k = 0
    for e in range(epochs):
        rng.shuffle(order)
        noise = rng.normal(0.0, noise_std, size=(len(starts), d))
        done = 0
        if compiled and theta.dtype == np.float64:
            theta, done = _sgd.sgd_steps(X, y, order, np.ascontiguousarray(theta),
                                         starts.start, starts.step, len(starts), batch, noise,
                                         k, clip, 2.0 * lam, lr0, mean)
        for s in range(done, len(starts)):
            idx = order[starts[s]:starts[s] + batch]
            g = clipped_gradients(theta, X[idx], y[idx], link, clip).mean(axis=0)
            g += 2.0 * lam * theta
            theta = theta - (lr0 / math.sqrt(k + s + 1)) * (g + noise[s])
        k += len(starts)
        if e >= burn_in:
            total += theta
            kept += 1
    return total / kept if kept else theta


def compiled_steps(X: np.ndarray, y: np.ndarray, link: Link, starts: range,
                   batch: int) -> bool:
    """Whether `_sgd.sgd_steps` takes these rows, link and minibatches: C-ordered aligned
    native float64 X (n, d ≥ 2; numpy sums one column pairwise) and y (n,), a link whose mean
    is a ufunc or the identity, forward starts from 0 or later and batches of one row or more
    (others take numpy's calls)."""
    return (compiled_mean(link) and compiled_rows(X) and X.shape[1] >= 2 and y.ndim == 1
            and y.shape[0] == X.shape[0] and y.dtype == np.float64 and y.flags.c_contiguous
            and y.flags.aligned and starts.start >= 0 and starts.step >= 1 and batch >= 1)


def replace_one_epsilon(fit: FitResult, *, engine: str = "fast") -> float:
    """Actual ε of a paper-mode fit: the mean's replace-one sensitivity is 2C/b, not C/b.

    Re-runs the accountant with the effective noise multiplier σ/2 at the fit's δ₀.
    """
    if fit.n == 0 or fit.epsilon is None or fit.delta is None:
        return 0.0
    return dpsgd_epsilon(fit.sigma / 2.0, fit.delta, fit.steps, fit.n, fit.batch,
                         target_epsilon=fit.epsilon, engine=engine)


def project_ball(theta: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection onto {‖θ‖ ≤ radius}."""
    norm = float(np.sqrt(theta @ theta))
    return theta if norm <= radius else theta * (radius / norm)


def strict_sigma(rho: float, steps: int = STRICT_STEPS) -> float:
    """σ = √((K + 1)/(2ρ)): K gradient releases plus one noisy count at ρ-zCDP.

    docs/glm.md, "Strict fits".
    """
    return math.sqrt((steps + 1) / (2.0 * rho))


def noisy_gd_fit(theta0: np.ndarray, X: np.ndarray, y: np.ndarray, rho: float, link: Link,
                 rng: np.random.Generator, *, radius: float, steps: int = STRICT_STEPS,
                 burn_in: int = STRICT_BURN_IN, clip: float = CLIP, lam: float = LAMBDA_FIT,
                 lr0: float = LR0, noise: Noise | None = None) -> FitResult:
    """Full-batch noisy projected GD at ρ-zCDP (docs/glm.md, "Strict fits").

    One noisy count ñ = n + N(0, σ²), then K steps θ ← Π(θ − lr_k(g̃/max(ñ, 1) + 2λθ)) with
    g̃ = Σ clip_C(∇ℓ_i) + N(0, (2Cσ)² I); returns the mean of the iterates after `burn_in`.
    With an exact `noise` source each of the K + 1 releases is snapped and calibrated to
    ρ/(K + 1) for its own sensitivity (1 for the count, 2C for a gradient sum).
    """
    theta = project_ball(np.array(theta0, dtype=float), radius)
    n, d = X.shape
    sigma = strict_sigma(rho, steps)
    exact = noise is not None and noise.exact
    if not exact:
        grad_sd = 2.0 * clip * sigma
        noisy_n = n + rng.normal(0.0, sigma)
    else:
        count_sd = noise.calibrate_gaussian(1.0, rho / (steps + 1), 1)[0]
        grad_sd = noise.calibrate_gaussian(2.0 * clip, rho / (steps + 1), d)[0]
        sigma = grad_sd / (2.0 * clip)
        noisy_n = float(noise.snap(float(n), count_sd)) + float(noise.gaussian(count_sd))
    denom = max(noisy_n, 1.0)
    total = np.zeros(d)
    kept = 0
    for k in range(1, steps + 1):
        g = clipped_gradients(theta, X, y, link, clip).sum(axis=0) if n else np.zeros(d)
        if not exact:
            g = g + rng.normal(0.0, grad_sd, size=d)
        else:
            g = noise.snap(g, grad_sd) + noise.gaussian(grad_sd, d)
        theta = project_ball(theta - (lr0 / math.sqrt(k)) * (g / denom + 2.0 * lam * theta),
                             radius)
        if k > burn_in:
            total += theta
            kept += 1
    out = total / kept if kept else theta
    return FitResult(out, n, n, steps, burn_in, steps, sigma, grad_sd, "noisy_gd", rho=rho)
